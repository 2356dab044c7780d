"""The bad-input catalogue of the HPC / GPU-cluster track (bounded slowdown's tau, ranking metrics, SWF
logs as scenarios, the field's heuristics): each is refused by the CLI with exit code 2 and one line
naming the field or flag and the value, before any simulation, writing nothing."""

from __future__ import annotations

import pytest

from tests.test_bad_inputs import SIM, _empty, _refused

TAU_CASES = [
    (["--tau", "0"], ["--tau", "0.0"]),
    (["--tau", "-10"], ["--tau", "-10.0"]),
    (["--tau", "nan"], ["--tau", "nan"]),
    (["--tau", "inf"], ["--tau", "inf"]),
]


@pytest.mark.parametrize(("flags", "needles"), TAU_CASES, ids=[" ".join(c[0]) for c in TAU_CASES])
def test_bad_tau(flags, needles, capsys):
    _refused([*SIM, *flags], needles, capsys)


def test_tau_on_a_moldable_system_is_refused(capsys):
    _refused(
        ["simulate", "--scenario", "002-linear-mean-field", "--policy", "moldable-greedy", "--tau", "10"],
        ["--tau", "not used by moldable scenario", "10.0"],
        capsys,
    )


def test_bad_leaderboard_metric_leaves_nothing(tmp_path, capsys):
    out = tmp_path / "out"
    argv = ["leaderboard", "--policies", "fcfs", "--seeds", "1", "--out", str(out), "--metric", "p99"]
    _refused(argv, ["--metric", "'p99'", "response_time_p99"], capsys)
    assert _empty(out)


LB_PARAM_CASES = [
    (
        ["--policy-param", "estimates=requested"],
        ["--policy-param", "POLICY:NAME=VALUE", "'estimates=requested'"],
    ),
    (["--policy-param", "sjf:estimates"], ["--policy-param", "'sjf:estimates'"]),
    (["--policy-param", "msf:estimates=exact"], ["--policy-param", "'msf'", "not an entrant"]),
    (["--policy-param", "fcfs:estimates=exact"], ["fcfs", "unknown parameter", "estimates"]),
    (["--policy-param", "fcfs:x=1", "--policies", "easy-backfilling"], ["'fcfs'", "not an entrant"]),
]


@pytest.mark.parametrize(("flags", "needles"), LB_PARAM_CASES, ids=[" ".join(c[0]) for c in LB_PARAM_CASES])
def test_bad_leaderboard_policy_param_leaves_nothing(flags, needles, tmp_path, capsys):
    out = tmp_path / "out"
    argv = ["leaderboard", "--policies", "fcfs", "--seeds", "1", "--out", str(out)]
    _refused([*argv, *flags], needles, capsys)
    assert _empty(out)


def test_a_heuristic_needs_requested_times_it_is_not_given(tmp_path, capsys):
    out = tmp_path / "out"
    argv = ["leaderboard", "--policies", "sjf-easy", "--seeds", "1", "--out", str(out)]
    _refused(argv, ["--policies", "'sjf-easy'", "carries no requested times"], capsys)
    assert _empty(out)
    _refused([*SIM[:3], "--policy", "wfp3"], ["wfp3", "carries no requested times"], capsys)


def _log(tmp_path, rows, header="; MaxProcs: 4\n"):
    path = tmp_path / "log.swf"
    path.write_text(header + "\n".join(rows) + "\n")
    return path


GOOD_ROW = "2 1 -1 5 1 -1 -1 1 10 -1 1 1 1 -1 1 -1 -1 -1"
SWF_CASES = [
    (
        "negative field",
        ["1 0 -1 -7 1 -1 -1 1 10 -1 1 1 1 -1 1 -1 -1 -1", GOOD_ROW],
        "",
        ["'run_time'", "-7", "line 2"],
    ),
    ("short line", ["1 0 -1 5 1", GOOD_ROW], "", ["line 2", "expected 18 fields, got 5"]),
    (
        "text field",
        ["1 0 -1 five 1 -1 -1 1 10 -1 1 1 1 -1 1 -1 -1 -1", GOOD_ROW],
        "",
        ["'run_time'", "'five'"],
    ),
    (
        "nothing usable",
        ["1 0 -1 -1 1 -1 -1 1 10 -1 1 1 1 -1 1 -1 -1 -1", GOOD_ROW],
        "",
        ["fewer than 2 usable"],
    ),
    ("tau zero", ["1 0 -1 5 1 -1 -1 1 10 -1 1 1 1 -1 1 -1 -1 -1", GOOD_ROW], "?tau=0", ["tau", "'0'"]),
    (
        "start alone",
        ["1 0 -1 5 1 -1 -1 1 10 -1 1 1 1 -1 1 -1 -1 -1", GOOD_ROW],
        "?start=1",
        ["start and length"],
    ),
    (
        "negative start",
        ["1 0 -1 5 1 -1 -1 1 10 -1 1 1 1 -1 1 -1 -1 -1", GOOD_ROW],
        "?start=-1&length=1",
        ["start expects a non-negative integer", "'-1'"],
    ),
    (
        "zero length",
        ["1 0 -1 5 1 -1 -1 1 10 -1 1 1 1 -1 1 -1 -1 -1", GOOD_ROW],
        "?start=0&length=0",
        ["length expects a positive integer", "'0'"],
    ),
    (
        "jobs past the log",
        ["1 0 -1 5 1 -1 -1 1 10 -1 1 1 1 -1 1 -1 -1 -1", GOOD_ROW],
        "?start=1&length=5",
        ["jobs 1..5 run past its 2 jobs"],
    ),
    (
        "unknown option",
        ["1 0 -1 5 1 -1 -1 1 10 -1 1 1 1 -1 1 -1 -1 -1", GOOD_ROW],
        "?k=4",
        ["unknown option 'k'"],
    ),
]


@pytest.mark.parametrize(
    ("rows", "query", "needles"), [c[1:] for c in SWF_CASES], ids=[c[0] for c in SWF_CASES]
)
def test_bad_swf_log(rows, query, needles, tmp_path, capsys):
    spec = f"swf:{_log(tmp_path, rows)}{query}"
    _refused(["simulate", "--scenario", spec, "--policy", "fcfs"], needles, capsys)
    out = tmp_path / "out"
    _refused(
        ["leaderboard", "--scenario", spec, "--policies", "fcfs", "--seeds", "1", "--out", str(out)],
        needles,
        capsys,
    )
    assert _empty(out)


def test_missing_swf_file(tmp_path, capsys):
    _refused(
        ["simulate", "--scenario", f"swf:{tmp_path / 'no.swf'}", "--policy", "fcfs"], ["no such file"], capsys
    )


def test_a_sequence_longer_than_the_trace(tmp_path, capsys):
    rows = [f"{i} {10 * i} -1 5 1 -1 -1 1 10 -1 1 1 1 -1 1 -1 -1 -1" for i in range(1, 30)]
    spec = f"swf:{_log(tmp_path, rows)}"
    _refused(["sequences", "--scenario", spec, "--length", "20"], ["--length", "20 jobs", "29 jobs"], capsys)
    _refused(["sequences", "--scenario", spec, "--count", "0"], ["--count", "got 0"], capsys)
    short = ["sequences", "--scenario", spec, "--length", "5"]
    _refused([*short, "--skip", "25"], ["--skip 25", "5 jobs"], capsys)
    _refused([*short, "--skip", "-3"], ["--skip", "got -3"], capsys)


def test_bad_sequence_starts_and_json(tmp_path, capsys):
    rows = [f"{i} {10 * i} -1 5 1 -1 -1 1 10 -1 1 1 1 -1 1 -1 -1 -1" for i in range(1, 30)]
    short = ["sequences", "--scenario", f"swf:{_log(tmp_path, rows)}", "--length", "5"]
    _refused([*short, "--starts", "gym"], ["--starts", "generator, rlscheduler", "'gym'"], capsys)
    _refused(
        [*short, "--starts", "rlscheduler", "--skip", "12"], ["--skip 12", "RLScheduler's starts"], capsys
    )
    _refused([*short, "--json", "--markdown"], ["--json", "--markdown"], capsys)
    _refused([*short, "--json", "--policies", "self-tuning", "--policy-param", "self-tuning:rules=sjf,edf"],
             ["self-tuning", "'rules'", "'sjf,edf'"], capsys)  # fmt: skip
