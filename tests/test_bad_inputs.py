"""A catalogue of bad inputs: each is refused by the CLI (called in-process) with exit code 2 and ONE
line on stderr that names the field or flag and the value, with no traceback, nothing on stdout and
nothing written to the output folder. Almost every case fails before any simulation runs."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from msj_gym.cli import main

GOOD_SERVICE = '{ distribution = "exponential", mean = 1.0 }'


def _toml(
    *,
    num_servers: str = "8",
    load: str | None = "0.5",
    extra: str = "",
    server_need: str = "1",
    probability: str = "1",
    service_time: str = GOOD_SERVICE,
) -> str:
    """A one-class TOML scenario with one field replaced by a (bad) TOML value."""
    head = f"num_servers = {num_servers}\n" + (f"load = {load}\n" if load is not None else "") + extra
    return (
        f"{head}\n[[classes]]\nname = 'only'\nserver_need = {server_need}\nprobability = {probability}\n"
        f"service_time = {service_time}\n"
    )


def _dist(spec: str) -> str:
    return "{ " + spec + " }"


# (id, TOML text, strings the one error line must contain: the field and the value)
SCENARIO_CASES = [
    ("power-tower", _toml(server_need='"9 ** 9 ** 9"'), ["server_need", "9 ** 9 ** 9"]),
    ("need-inf", _toml(server_need="inf"), ["server_need", "inf"]),
    ("need-nan", _toml(server_need="nan"), ["server_need", "nan"]),
    ("need-zero", _toml(server_need="0"), ["server_need", "got 0"]),
    ("need-above-k", _toml(server_need="9"), ["server_need", "9 exceeds num_servers = 8"]),
    ("need-fraction", _toml(server_need="2.5"), ["server_need", "2.5"]),
    ("need-sqrt-negative", _toml(server_need='"sqrt(-1)"'), ["server_need", "sqrt(-1)", ">= 0"]),
    ("servers-1e12", _toml(num_servers='"10**12"'), ["num_servers", "1000000000000"]),
    ("servers-2-25", _toml(num_servers=str(2**25)), ["num_servers", str(2**25)]),
    ("servers-zero", _toml(num_servers="0"), ["num_servers", "got 0"]),
    ("servers-negative", _toml(num_servers="-3"), ["num_servers", "-3"]),
    ("servers-inf", _toml(num_servers="inf"), ["num_servers", "inf"]),
    ("vars-not-table", _toml(extra="vars = 3\n"), [".vars", "got 3"]),
    ("vars-k", _toml(extra="[vars]\nk = 3\n"), [".vars", "'k'"]),
    ("vars-log-zero", _toml(extra='[vars]\na = "log(0)"\n'), ["vars.a", "log(0)", "> 0"]),
    ("vars-exp-huge", _toml(extra='[vars]\na = "exp(1000)"\n'), ["vars.a", "exp(1000)"]),
    ("vars-too-long", _toml(extra=f'[vars]\na = "{"1+" * 600}1"\n'), ["vars.a", "1201 characters"]),
    ("vars-too-deep", _toml(extra=f'[vars]\na = "{"-" * 100}1"\n'), ["vars.a", "nested too deeply"]),
    ("vars-unknown-function", _toml(extra='[vars]\na = "abs(1)"\n'), ["vars.a", "'abs'"]),
    ("vars-complex-power", _toml(extra='[vars]\na = "(-8) ** (1/3)"\n'), ["vars.a", "(-8) ** (1/3)"]),
    ("vars-division-by-zero", _toml(extra='[vars]\na = "1/0"\n'), ["vars.a", "1/0", "division by zero"]),
    ("vars-round-digits", _toml(extra='[vars]\na = "round(5, -10**9)"\n'), ["vars.a", "round(5, -10**9)"]),
    ("vars-huge-literal", _toml(extra=f'[vars]\na = "{"9" * 400}"\n'), ["vars.a", "about 1e399"]),
    ("probability-zero", _toml(probability="0"), ["probability", "got 0"]),
    ("probability-nan", _toml(probability="nan"), ["probability", "nan"]),
    ("probability-above-one", _toml(probability="1.5"), ["probability", "1.5"]),
    ("probability-negative", _toml(probability="-1"), ["probability", "-1"]),
    ("probability-overflow", _toml(probability='"1e400"'), ["probability", "1e400"]),
    ("load-huge", _toml(load="1e308"), [".load", "1e+308"]),
    ("load-subnormal", _toml(load="1e-320"), [".load", "1e-320"]),
    ("load-nan", _toml(load="nan"), [".load", "nan"]),
    ("arrival-rate-huge", _toml(load=None, extra="arrival_rate = 1e300\n"), ["arrival_rate", "1e+300"]),
    (
        "mean-tiny",
        _toml(service_time=_dist('distribution = "exponential", mean = 1e-300')),
        ["mean", "1e-300"],
    ),
    ("mean-inf", _toml(service_time=_dist('distribution = "exponential", mean = inf')), ["mean", "inf"]),
    (
        "mean-huge",
        _toml(service_time=_dist('distribution = "deterministic", value = 1e12')),
        ["value", repr(1e12)],
    ),
    (
        "hyperexp-scv-huge",
        _toml(service_time=_dist('distribution = "hyperexponential", mean = 1, scv = 1e10')),
        ["scv", repr(1e10)],
    ),
    (
        "hyperexp-scv-overflow",
        _toml(service_time=_dist('distribution = "hyperexponential", mean = 1, scv = 1e40')),
        ["scv", "1e+40"],
    ),
    (
        "gamma-scv",
        _toml(service_time=_dist('distribution = "gamma", mean = 1, scv = 100')),
        ["gamma.scv", "100"],
    ),
    (
        "lognormal-std",
        _toml(service_time=_dist('distribution = "lognormal", mean = 1, std = 1e6')),
        ["lognormal.std", repr(1e6)],
    ),
    (
        "erlang-shape",
        _toml(service_time=_dist('distribution = "erlang", shape = 1e9')),
        ["erlang.shape", repr(1e9)],
    ),
    ("erlang-shape-inf", _toml(service_time=_dist('distribution = "erlang", shape = inf')), ["shape", "inf"]),
    (
        "pareto-alpha",
        _toml(service_time=_dist('distribution = "pareto", alpha = 0.01, scale = 1')),
        ["pareto.alpha", "0.01"],
    ),
    ("distribution-unknown", _toml(service_time=_dist('distribution = "nope"')), ["distribution", "'nope'"]),
    ("distribution-list", _toml(service_time=_dist("distribution = [1]")), ["distribution", "[1]"]),
    ("service-time-number", _toml(service_time="3"), ["service_time", "got 3"]),
    (
        "uniform-reversed",
        _toml(service_time=_dist('distribution = "uniform", low = 5, high = 1')),
        ["uniform", "low=5", "high=1"],
    ),
]


def _refused(argv: list[str], needles: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    """Run the CLI; assert exit 2, one error line holding every needle, no traceback, no stdout."""
    code = main(argv)
    captured = capsys.readouterr()
    lines = captured.err.splitlines()
    assert code == 2, captured
    assert len(lines) == 1, captured.err
    assert lines[0].startswith("msj-gym: error: ")
    assert "Traceback" not in captured.err
    assert captured.out == ""
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    return lines[0]


def _empty(folder: Path) -> bool:
    return not folder.exists() or not any(folder.iterdir())


@pytest.mark.parametrize(
    ("text", "needles"), [c[1:] for c in SCENARIO_CASES], ids=[c[0] for c in SCENARIO_CASES]
)
def test_bad_scenario_field(text, needles, tmp_path, capsys):
    path = tmp_path / "bad.toml"
    path.write_text(text)
    line = _refused(["simulate", "--scenario", str(path), "--policy", "fcfs"], needles, capsys)
    assert "bad.toml" in line  # and the message says which file


def test_the_catalogue_template_is_valid(tmp_path):
    # the bad cases differ from a scenario that builds by the one field they name
    from msj_gym.workloads import load_scenario

    path = tmp_path / "good.toml"
    path.write_text(_toml(extra='[vars]\na = "sqrt(k) + log(k, 2)"\n'))
    wl = load_scenario(str(path)).build()
    assert wl.num_servers == 8 and wl.load == pytest.approx(0.5)


@pytest.mark.parametrize(
    ("case", "needles"),
    [
        ("server-need", ["server_need", "9 ** 9 ** 9"]),
        ("syntax", ["bad.toml", "TOML syntax error", "line 1"]),
    ],
)
def test_bad_scenario_in_a_leaderboard_leaves_no_output(case, needles, tmp_path, capsys):
    path = tmp_path / "bad.toml"
    path.write_text(_toml(server_need='"9 ** 9 ** 9"') if case == "server-need" else "num_servers = = 8\n")
    out = tmp_path / "out"
    argv = ["leaderboard", "--scenario", str(path), "--policies", "fcfs", "--seeds", "1", "--out", str(out)]
    _refused(argv, needles, capsys)
    assert _empty(out)


def _billion_laughs(indent: str) -> str:
    """YAML anchors for eight levels of ten aliases: 10**8 numbers named in a few hundred bytes."""
    lines = [f"{indent}l0: &l0 [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]"]
    for i in range(1, 8):
        lines.append(f"{indent}l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * 10) + "]")
    return "\n".join(lines) + "\n"


_YAML_CLASS = "num_servers: 8\nload: 0.5\nclasses:\n  - server_need: 1\n    probability: 1\n"


SYNTAX_CASES = [
    ("toml", "num_servers = = 8\n", ["bad.toml", "TOML syntax error", "line 1, column 15"]),
    ("toml-unclosed", 'num_servers = 8\nname = "x\n', ["bad.toml", "TOML syntax error", "line 2"]),
    ("json", '{"num_servers": 8,}', ["bad.json", "JSON syntax error at line 1, column 19"]),
    ("json-deep", "[" * 100_000 + "]" * 100_000, ["bad.json", "nested too deeply"]),
    (
        "yaml",
        "num_servers: 8\nload: [0.5\nclasses:\n  - 1\n",
        ["bad.yaml", "YAML syntax error at line 3, column 8"],
    ),
    ("yaml-tab", "num_servers: 8\n\tload: 0.5\n", ["bad.yaml", "YAML syntax error at line 2, column 1"]),
    ("yaml-top-list", "- 1\n- 2\n", ["bad.yaml", "expected a table of scenario fields, got list"]),
    (
        "yaml-aliases",
        _YAML_CLASS + "    service_time:\n      distribution: exponential\n" + _billion_laughs(" " * 6),
        ["bad.yaml", "service_time", "more than 1000000 numbers"],
    ),
    (
        "yaml-aliases-in-notes",
        "notes:\n" + _billion_laughs("  ") + _YAML_CLASS + "    service_time: {distribution: exponential}\n",
        ["bad.yaml", ".notes: expected text", "..."],
    ),
    (
        "yaml-aliases-in-vars",
        "vars:\n" + _billion_laughs("  ") + _YAML_CLASS + "    service_time: {distribution: exponential}\n",
        ["bad.yaml", "vars.l0", "expected a number", "..."],
    ),
]


@pytest.mark.parametrize(("kind", "text", "needles"), SYNTAX_CASES, ids=[c[0] for c in SYNTAX_CASES])
def test_syntax_error_is_one_line_with_the_place(kind, text, needles, tmp_path, capsys):
    if kind.startswith("yaml"):
        pytest.importorskip("yaml")
    path = tmp_path / f"bad.{kind.split('-')[0]}"
    path.write_text(text)
    _refused(["simulate", "--scenario", str(path), "--policy", "fcfs"], needles, capsys)


def test_non_utf8_file(tmp_path, capsys):
    path = tmp_path / "bad.toml"
    path.write_bytes(b"num_servers = 8\n\xff\xfe\n")
    _refused(
        ["simulate", "--scenario", str(path), "--policy", "fcfs"], ["bad.toml", "not UTF-8", "0xff"], capsys
    )


SIM = ["simulate", "--scenario", "sf-fig2", "--policy", "fcfs"]

# a policy's parameters that no workload could accept: refused with the policy, naming it and the field
POLICY_PARAM_CASES = [
    (["--policy", "nmsr", "--policy-param", "tau=-3"], ["'nmsr'", "'tau'", "-3.0"]),
    (["--policy", "modified-bs", "--policy-param", "demands=a,b"], ["'modified-bs'", "'demands'", "'a,b'"]),
    (["--policy", "bs", "--policy-param", "demands=1,2,3"], ["'bs'", "'demands'", "expected 2 numbers"]),
    (["--policy", "bs", "--policy-param", "demands=1,0"], ["'bs'", "demands[1]", "got 0.0 "]),
    (["--policy", "msfq", "--policy-param", "ell=99"], ["'msfq'", "'ell'", "[0, 7]", "99"]),
    (
        [
            "--policy",
            "easy-backfilling",
            "--policy-param",
            "estimates=exact",
            "--policy-param",
            "estimate_factor=1",
        ],
        ["'easy-backfilling'", "estimate_factor 1.0", "'exact'"],
    ),
]


@pytest.mark.parametrize(
    ("flags", "needles"), POLICY_PARAM_CASES, ids=[" ".join(c[0]) for c in POLICY_PARAM_CASES]
)
def test_bad_policy_parameter(flags, needles, capsys):
    _refused(["simulate", "--scenario", "sf-fig2", "--arrivals", "500", *flags], needles, capsys)


FLAG_CASES = [
    (["--load", "1e308"], ["--load", "1e+308"]),
    (["--load", "1e-320"], ["--load", "1e-320"]),
    (["--load", "nan"], ["--load", "nan"]),
    (["--load", "inf"], ["--load", "inf"]),
    (["--load", "-1"], ["--load", "-1.0"]),
    (["--arrival-rate", "inf"], ["--arrival-rate", "inf"]),
    (["--arrival-rate", "0"], ["--arrival-rate", "0.0"]),
    (["--arrival-rate", "1e300"], ["--arrival-rate", "1e+300", "load"]),
    (["--k", "0"], ["--k", "got 0"]),
    (["--k", "20000000"], ["--k", "20000000"]),
    (["--horizon", "nan"], ["--horizon", "nan"]),
    (["--horizon", "-1"], ["--horizon", "-1.0"]),
    (["--horizon", "1e308"], ["horizon", "1e+308"]),
    (["--warmup", "nan"], ["--warmup", "nan"]),
    (["--warmup", "inf"], ["--warmup", "inf"]),
    (["--arrivals", "1"], ["num_arrivals", "got 1"]),
    (["--arrivals", str(10**13)], ["num_arrivals", str(10**13)]),
    (["--arrivals", "100", "--warmup", "99"], ["warmup", "got 99"]),
    (["--seed", "-1"], ["seed", "-1"]),
    # refused by the parser itself: one line too, not argparse's usage text
    (["--load", "abc"], ["argument --load", "'abc'"]),
    (["--k", "8.5"], ["argument --k", "'8.5'"]),
    (["--bogus"], ["unrecognized arguments: --bogus"]),
    (["--load", "0.5", "--arrival-rate", "2"], ["--arrival-rate", "not allowed with argument --load"]),
    (["--seed"], ["argument --seed", "expected one argument"]),
]


@pytest.mark.parametrize(("flags", "needles"), FLAG_CASES, ids=[" ".join(c[0]) for c in FLAG_CASES])
def test_bad_simulate_flag(flags, needles, capsys):
    _refused([*SIM, *flags], needles, capsys)


@pytest.mark.parametrize(
    ("argv", "needles"),
    [
        ([], ["required: command"]),
        (["simulte"], ["argument command", "invalid choice: 'simulte'"]),
        (["simulate"], ["required: --scenario, --policy"]),
        (["leaderboard", "--loads"], ["argument --loads", "expected one argument"]),
    ],
)
def test_bad_command_line_is_one_line(argv, needles, capsys):
    _refused(argv, needles, capsys)


def test_no_measured_job_is_an_error_not_nan(capsys):
    # the only case here that runs a simulation (a few arrivals): the window [1e-10, 1e-9) is empty
    _refused([*SIM, "--horizon", "1e-9"], ["no job was measured", "1e-10", "1e-09", "horizon"], capsys)


def test_trace_shorter_than_warmup_is_an_error():
    from msj_gym.baselines import make_policy
    from msj_gym.core.simulator import Simulator
    from msj_gym.workloads.trace import TraceWorkload

    trace = TraceWorkload(4, np.arange(50.0), np.ones(50), np.ones(50))
    sim = Simulator(trace, make_policy("fcfs"), num_arrivals=1000)  # warm-up: the first 100 arrivals
    with pytest.raises(ValueError, match="no job was measured: the arrival stream ended after 50 arrivals"):
        sim.run()


def test_no_measured_job_is_never_stable():
    from msj_gym.metrics import assess_stability

    stable, note = assess_stability(0.5, False, np.zeros(41), 0)
    assert not stable and "no job was measured" in note


LB_CASES = [
    (["--policies", ","], ["--policies", "','"]),
    (["--policies", " , ,"], ["--policies", "' , ,'"]),
    (["--policies", "nope"], ["--policies", "'nope'"]),
    (["--workers", "0"], ["--workers", "got 0"]),
    (["--workers", "-2"], ["--workers", "-2"]),
    (["--loads", "1e308"], ["--loads", "1e+308"]),
    (["--loads", "nan"], ["--loads", "nan"]),
    (["--loads", "0.5,1e-320"], ["--loads", "1e-320"]),
    (["--loads", "0.1:0.9:1e-12"], ["--loads", "0.1:0.9:1e-12", "limit"]),
    (["--loads", "0.1:inf:0.1"], ["--loads", "0.1:inf:0.1"]),
    (["--seeds", "0-1000000000"], ["--seeds", "0-1000000000", "limit"]),
    (["--seeds", "0"], ["--seeds", "'0'"]),
    (["--arrivals", "5"], ["--arrivals", "got 5"]),
    (["--arrivals", "1000", "--warmup", "1000"], ["--warmup", "got 1000"]),
    (["--reference", "nope"], ["--reference", "'nope'"]),
    (["--quick"], ["--quick", "--seeds"]),  # the base command gives --seeds 1
]


@pytest.mark.parametrize("where", ["a file", "under a file", "under /proc"])
def test_an_odd_out_folder_is_one_line(where, tmp_path, capsys):
    afile = tmp_path / "afile"
    afile.write_text("not a folder")
    out = {"a file": afile, "under a file": afile / "out", "under /proc": Path("/proc/msj-gym-out")}[where]
    if where == "under /proc" and not Path("/proc/self").is_dir():
        pytest.skip("needs Linux /proc")
    _refused(
        ["leaderboard", "--policies", "fcfs", "--seeds", "1", "--out", str(out)], ["--out", str(out)], capsys
    )
    assert afile.read_text() == "not a folder"


@pytest.mark.parametrize(("flags", "needles"), LB_CASES, ids=[" ".join(c[0]) for c in LB_CASES])
def test_bad_leaderboard_flag_leaves_nothing(flags, needles, tmp_path, capsys):
    out = tmp_path / "out"
    argv = ["leaderboard", "--policies", "fcfs", "--seeds", "1", "--out", str(out)]
    _refused([*argv, *flags], needles, capsys)  # a later flag overrides the defaults above
    assert _empty(out)


def test_rejected_leaderboard_does_not_block_the_corrected_one(tmp_path, capsys):
    out = tmp_path / "out"
    argv = ["leaderboard", "--policies", "fcfs", "--seeds", "1", "--out", str(out)]
    _refused([*argv, "--workers", "0"], ["--workers"], capsys)
    # what blocked the corrected command before: a leaderboard.json of the rejected configuration
    assert not (out / "leaderboard.json").exists()
    from msj_gym.experiments.leaderboard import LeaderboardConfig
    from msj_gym.experiments.report import check_out

    check_out(out, LeaderboardConfig(policies=("fcfs",), seeds="1"))  # the corrected one is accepted
    assert json.loads((out / "leaderboard.json").read_text())["config"]["policies"] == ["fcfs"]


FIG_CASES = [
    (["--workers", "0"], ["--workers", "got 0"]),
    (["--seeds", "0"], ["--seeds", "got 0"]),
    (["--arrivals", "5"], ["--arrivals", "got 5"]),
]


@pytest.mark.parametrize(("flags", "needles"), FIG_CASES, ids=[" ".join(c[0]) for c in FIG_CASES])
def test_bad_reproduce_flag_leaves_nothing(flags, needles, tmp_path, capsys):
    out = tmp_path / "figs"
    _refused(["reproduce", "all", "--out", str(out), *flags], needles, capsys)
    assert _empty(out)
