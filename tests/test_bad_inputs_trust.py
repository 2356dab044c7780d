"""The catalogue of bad inputs, continued: hostile files and broken code of the user's. A checkpoint whose
pickle would run a command, a checkpoint's .json naming code to import, a poisoned cache entry, policies
of one's own that hang, write out of bounds, do not import or do not compile, long solves that must not
start unasked, empty selections, and the smaller surfaces of the same round. Each is refused in one line
naming what is wrong (or handled as the case says), before any output is written, and runs nothing it
was not asked to run."""

from __future__ import annotations

import json
import shutil
import zipfile
from pathlib import Path

import numpy as np
import pytest

from msj_gym.cli import main
from tests.test_bad_inputs import _empty, _refused

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = ROOT / "msj_gym" / "agents" / "checkpoints"
LB = ["leaderboard", "--policies", "fcfs", "--loads", "0.5", "--seeds", "1", "--arrivals", "300"]


# ------------------------------------------------------------------------------ a hostile checkpoint


@pytest.fixture(scope="module")
def hostile(tmp_path_factory) -> tuple[Path, Path]:
    """An SB3 checkpoint (with its .json) whose ``lr_schedule`` pickle writes a marker file when loaded."""
    pytest.importorskip("sb3_contrib")
    from tests.agents.test_checkpoint import _hostile

    folder = tmp_path_factory.mktemp("hostile")
    marker = folder / "marker"
    return _hostile(folder / "evil.zip", marker), marker


def _sequence_log(tmp_path: Path) -> str:
    rows = [f"{i} {10 * i} -1 5 1 -1 -1 1 10 -1 1 1 1 -1 1 -1 -1 -1" for i in range(1, 60)]
    path = tmp_path / "log.swf"
    path.write_text("; MaxProcs: 4\n" + "\n".join(rows) + "\n")
    return f"swf:{path}"


SURFACES = ["leaderboard", "leaderboard-bare", "benchmark", "sequences"]


@pytest.mark.parametrize("surface", SURFACES)
def test_a_hostile_checkpoint_is_refused_and_runs_nothing(surface, hostile, tmp_path, capsys, monkeypatch):
    path, marker = hostile
    out = tmp_path / "out"
    if surface.startswith("leaderboard"):
        argv = [*LB, "--agent", str(path), "--out", str(out)]
        if surface == "leaderboard-bare":
            bare = tmp_path / "bare.zip"  # no .json: admitted with --bare-agents, and still no pickle
            shutil.copy(path, bare)
            argv = [*LB, "--agent", str(bare), "--bare-agents", "--out", str(out)]
    elif surface == "benchmark":
        from msj_gym.experiments import benchmark as bm

        monkeypatch.setattr(bm, "BENCHMARK_SUITE", (("sf-fig2", 0.5),))
        monkeypatch.setattr(bm, "_policy_ids", lambda preemptive: ["fcfs", "msf"])
        argv = ["benchmark", "--quick", "--workers", "1", "--agent", str(path), "--out", str(out)]
    else:
        argv = ["sequences", "--scenario", _sequence_log(tmp_path), "--length", "5", "--agent", str(path)]
    name = "bare.zip" if surface == "leaderboard-bare" else "evil.zip"
    _refused(argv, [name, "stable-baselines3 checkpoint", "unpickled", "--trust-pickle"], capsys)
    assert not marker.exists() and _empty(out)


def test_evaluate_refuses_a_hostile_checkpoint(hostile, tmp_path, capsys):
    from msj_gym.agents import evaluate
    from msj_gym.agents._cli import run_script

    path, marker = hostile
    code = run_script(evaluate.PROG, evaluate.main, [str(path), "--seeds", "1", "--arrivals", "200"])
    err = capsys.readouterr().err.splitlines()
    assert code == 2 and len(err) == 1 and "--trust-pickle" in err[0] and not marker.exists()


def test_a_derivation_of_the_generalist_refuses_a_hostile_checkpoint(hostile, tmp_path, capsys):
    from msj_gym.agents import generalist
    from msj_gym.agents._cli import run_script

    path, marker = hostile
    argv = ["--simulate-selection", str(path), "--out", str(tmp_path / "g.zip")]
    code = run_script("python -m msj_gym.agents.generalist", generalist.main, argv)
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1, err
    assert "--simulate-selection" in err[0] and "--trust-pickle" in err[0] and not marker.exists()


# ------------------------------------------------------------------ a .json that names code to import


EVIL_MODULE = "open({marker!r}, 'w').write('imported')\n"


def _named_code(tmp_path: Path, edit, agent: str = "rollout-sf-fig2-0.7") -> tuple[Path, Path]:
    """A copy of a shipped agent whose .json (or config) ``edit`` makes name ``evilmod:Evil``, a module
    that writes a marker when imported."""
    marker = tmp_path / "imported"
    (tmp_path / "evilmod.py").write_text(EVIL_MODULE.format(marker=str(marker)))
    path = tmp_path / "named.zip"
    shutil.copy(SHIPPED / f"{agent}.zip", path)
    meta = json.loads((SHIPPED / f"{agent}.json").read_text())
    edit(meta, path)
    path.with_suffix(".json").write_text(json.dumps(meta))
    return path, marker


def _advisor(meta, path):
    meta["env_kwargs"] = {**meta["env_kwargs"], "actions": "priority", "advisor": ["msf", "evilmod:Evil"]}


def _warm_start(meta, path):
    meta["env_kwargs"] = {**meta["env_kwargs"], "warm_start": "evilmod:Evil"}


def _selection_base(meta, path):
    with zipfile.ZipFile(path) as z:
        members = {n: z.read(n) for n in z.namelist()}
    config = json.loads(members["agent.json"])
    config["policy_kwargs"]["simulated_selection"]["bases"][0] = "evilmod:Evil"
    members["agent.json"] = json.dumps(config).encode()
    with zipfile.ZipFile(path, "w") as z:
        for n, blob in members.items():
            z.writestr(n, blob)


NAMED_CODE = [
    ("advisor", _advisor, "rollout-sf-fig2-0.7", "env_kwargs.advisor"),
    ("warm-start", _warm_start, "rollout-sf-fig2-0.7", "env_kwargs.warm_start"),
    ("selection-base", _selection_base, "generalist", "simulated_selection.bases"),
]


@pytest.mark.parametrize(
    ("edit", "agent", "field"), [c[1:] for c in NAMED_CODE], ids=[c[0] for c in NAMED_CODE]
)
def test_a_checkpoint_naming_code_is_refused_unless_imports_are_trusted(
    edit, agent, field, tmp_path, capsys, monkeypatch
):
    pytest.importorskip("sb3_contrib")
    monkeypatch.syspath_prepend(str(tmp_path))
    path, marker = _named_code(tmp_path, edit, agent)
    out = tmp_path / "out"
    _refused(
        [*LB, "--agent", str(path), "--out", str(out)], [field, "'evilmod:Evil'", "--trust-imports"], capsys
    )
    assert not marker.exists() and _empty(out)


def test_evaluate_refuses_a_base_that_names_code(tmp_path, capsys, monkeypatch):
    pytest.importorskip("sb3_contrib")
    from msj_gym.agents import evaluate
    from msj_gym.agents._cli import run_script

    monkeypatch.syspath_prepend(str(tmp_path))
    path, marker = _named_code(tmp_path, lambda meta, p: meta.update(base="evilmod:Evil"))
    code = run_script(evaluate.PROG, evaluate.main, [str(path), "--seeds", "1", "--arrivals", "200"])
    err = capsys.readouterr().err.splitlines()
    assert code == 2 and len(err) == 1 and "base names code" in err[0] and not marker.exists(), err


# ------------------------------------------------------------------------------ poisoned cache entries


def _solved(tmp_path: Path, monkeypatch, load: float = 0.55) -> tuple[object, Path]:
    """sf-fig2 at ``load`` solved into a fresh cache (a second: no shipped value there)."""
    from msj_gym.analysis import solutions
    from msj_gym.workloads.scenarios import load_scenario

    monkeypatch.setenv("MSJ_GYM_CACHE", str(tmp_path / "cache"))
    solutions._SOLVED.clear()
    workload = load_scenario("sf-fig2").build(load=load)
    solutions.solved_table(workload, False)
    (entry,) = (tmp_path / "cache" / "optimal").glob("*.npz")
    solutions._SOLVED.clear()
    return workload, entry


def _poison(entry: Path, value=None, table=None, configs=None, digest: bool = True) -> None:
    """Rewrite a cached solve as someone with write access to the folder would, its digest made anew
    (``digest`` False: left as it was)."""
    from msj_gym.analysis import solutions

    with np.load(entry) as z:
        data = {k: z[k] for k in z.files}
    v = json.loads(str(data["value"]))
    if value is not None:
        v["mean_response_time"] = value
    data["value"] = np.array(json.dumps(v))
    if table is not None:
        data["table"] = table
    if configs is not None:
        data["configs"] = configs
    if digest:
        arrays = {k: data[k] for k in ("table", "configs", "up", "buffers")}
        key = str(data["key_doc"])
        data["digest"] = np.array(
            solutions._digest(key, arrays, str(data["value"]), bool(data["lost_arrivals_charged"]))
        )
    np.savez_compressed(entry.with_suffix(".tmp.npz"), **data)
    entry.with_suffix(".tmp.npz").replace(entry)


def _msf_table(workload, entry: Path) -> tuple[np.ndarray, float]:
    """Most Servers First's table on the cached chain, and its exact value (a policy, not the optimum)."""
    from msj_gym.analysis.optimal import MSJChain, _heuristic_policy, _parameters, _value

    with np.load(entry) as z:
        buffers = [int(b) for b in z["buffers"]]
    needs, k, lam, mu = _parameters(workload)
    chain = MSJChain.build(needs, k, lam, mu, buffers, False)
    policy = _heuristic_policy(chain, -1)
    return policy.table, _value(chain, "msf", policy.post)[0].mean_response_time


POISONS = [
    ("value-edited", {"value": 0.001}, "gives"),
    ("value-edited-digest-stale", {"value": 0.001, "digest": False}, "does not match its digest"),
    ("table-of-another-policy", {"table": "msf"}, "does not check out"),
    ("table-out-of-range", {"table": "range"}, "table"),
    ("configs-edited", {"configs": "shifted"}, "configs"),
]


@pytest.mark.parametrize(("poison", "needle"), [c[1:] for c in POISONS], ids=[c[0] for c in POISONS])
def test_a_poisoned_optimum_is_solved_again_with_a_note(poison, needle, tmp_path, monkeypatch, capsys):
    from msj_gym.analysis import solutions

    workload, entry = _solved(tmp_path, monkeypatch)
    true = solutions.solved_table(workload, False)["value"]["mean_response_time"]
    solutions._SOLVED.clear()
    with np.load(entry) as z:
        table, configs = z["table"], z["configs"]
    poison = dict(poison)
    if poison.get("table") == "msf":
        poison["table"], poison["value"] = _msf_table(workload, entry)  # consistent with its own value
    elif poison.get("table") == "range":
        poison["table"] = np.where(table >= 0, 7, table)
    if poison.get("configs") == "shifted":
        poison["configs"] = configs[::-1].copy()
    _poison(entry, **poison)
    capsys.readouterr()
    got = solutions.solved_table(workload, False)
    err = capsys.readouterr().err
    assert got["value"]["mean_response_time"] == pytest.approx(true, rel=1e-9)
    assert "does not check out" in err or "unreadable" in err, err
    assert needle in err, err
    solutions._SOLVED.clear()  # and the entry is healed: the next process reads it silently
    assert (
        solutions.solved_table(workload, False)["value"]["mean_response_time"]
        == got["value"]["mean_response_time"]
    )
    assert capsys.readouterr().err == ""


def test_a_poisoned_optimum_never_reaches_a_leaderboard_row(tmp_path, monkeypatch, capsys):
    from msj_gym.analysis.optimal import solve_optimal

    workload, entry = _solved(tmp_path, monkeypatch)
    true = solve_optimal(workload, check_buffers=False).value.mean_response_time
    _poison(entry, value=0.001)
    out = tmp_path / "lb"
    argv = ["leaderboard", "--policies", "fcfs", "--loads", "0.55", "--seeds", "1", "--arrivals", "300"]
    assert main([*argv, "--workers", "1", "--out", str(out)]) == 0
    rows = [
        line.split() for line in capsys.readouterr().out.splitlines() if "size-oblivious optimum  no" in line
    ]
    assert rows and all(float(row[5]) == pytest.approx(true, abs=5e-4) for row in rows), rows


def _plan(tmp_path: Path, monkeypatch):
    from msj_gym.agents.system_model import _StoredPlan

    monkeypatch.setenv("MSJ_GYM_CACHE", str(tmp_path / "cache"))
    plan = _StoredPlan('{"system": "demo"}', choices=3)
    plan.put((1, 0, 2))
    return plan


PLAN_POISONS = [
    ("pick-edited", lambda e: e.update(pick=2)),
    ("pick-out-of-range", "range"),
    ("mode-not-a-mode", "mode"),
    ("no-digest", lambda e: e.pop("digest")),
]


@pytest.mark.parametrize("edit", [c[1] for c in PLAN_POISONS], ids=[c[0] for c in PLAN_POISONS])
def test_a_poisoned_plan_is_planned_again_with_a_note(edit, tmp_path, monkeypatch, capsys):
    pytest.importorskip("torch")
    plan = _plan(tmp_path, monkeypatch)
    assert plan.get() == (1, 0, 2)
    entry = json.loads(plan.path.read_text())
    if edit in ("range", "mode"):  # a writer who knows the format: a digest made anew
        entry.update(pick=9) if edit == "range" else entry.update(mode=5)
        entry["digest"] = plan._digest((entry["pick"], entry["mode"], entry["alone"]))
    else:
        edit(entry)
    plan.path.write_text(json.dumps(entry))
    capsys.readouterr()
    assert plan.get() is None
    assert "does not check out" in capsys.readouterr().err


# ------------------------------------------------------------------------ broken policies of one's own

BROKEN = '''
from msj_gym.core import Policy
from msj_gym.core.access import first_waiting, next_waiting, start
from msj_gym.core.jit import inline_jit


@inline_jit
def _far_write(view, pdata, actions):
    s = first_waiting(view)
    if s == -1:
        return 0
    actions[100_000_000] = s
    return 1


@inline_jit
def _forever(view, pdata, actions):
    x = 0
    while x >= 0:
        x = (x + 1) % 7
    return 0


@inline_jit
def _untypable(view, pdata, actions):
    return "a" + 1


def _python(view, pdata, actions):
    return 0


@inline_jit
def _all_at_once(view, pdata, actions):
    s = first_waiting(view)
    n = 0
    while s != -1:
        n = start(actions, n, s)
        s = next_waiting(view, s)
    return n


def _make(name, kernel):
    doc = "A broken example. Non-preemptive; size-oblivious."
    fields = {"__doc__": doc, "policy_id": name.lower(), "reference": "x", "kernel": kernel}
    return type(name, (Policy,), fields)


FarWrite = _make("FarWrite", _far_write)
Forever = _make("Forever", _forever)
Untypable = _make("Untypable", _untypable)
PlainPython = _make("PlainPython", _python)
AllAtOnce = _make("AllAtOnce", _all_at_once)


class Raising(Policy):
    """Raises when made."""

    policy_id = "raising"
    reference = "x"
    kernel = _far_write

    def __init__(self, **params):
        raise RuntimeError("the constructor fails")
'''

OTHER_MODULES = {
    "raises_on_import": 'raise RuntimeError("the module fails on import")\n',
    "syntax_error": "def f(:\n    pass\n",
    "hangs_on_import": "while True:\n    pass\n",
}


@pytest.fixture
def broken(tmp_path, monkeypatch):
    """The broken policies' modules in a folder on the path (the current folder, as a user's), with a
    vetting time limit of a few seconds."""
    from msj_gym import guard

    (tmp_path / "broken.py").write_text(BROKEN)
    for name, text in OTHER_MODULES.items():
        (tmp_path / f"{name}.py").write_text(text)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(guard, "VET_SECONDS", 4.0)
    guard._VETTED.clear()
    return tmp_path


POLICY_CASES = [
    ("broken:FarWrite", ["a short run failed", "IndexError", "out of bounds"]),
    ("broken:Forever", ["its decisions on a run of 1000 arrivals did not finish within 4 s", "endless loop"]),
    ("broken:Untypable", ["compiling its kernel with bounds checks failed", "TypingError"]),
    ("broken:PlainPython", ["'_python' is not compiled", "@inline_jit"]),
    ("broken:AllAtOnce", ["a short run failed", "SimulationError", "exceeds the idle servers"]),
    ("broken:Raising", ["importing and making it failed", "RuntimeError: the constructor fails"]),
    ("raises_on_import:P", ["importing and making it failed", "the module fails on import"]),
    ("syntax_error:P", ["importing and making it failed", "SyntaxError"]),
    ("hangs_on_import:P", ["did not finish within 4 s", "when it is imported or made"]),
    ("no_such_module:P", ["cannot import it", "no_such_module"]),
    ("broken:NoSuchClass", ["cannot import it", "NoSuchClass"]),
]


@pytest.mark.parametrize(("spec", "needles"), POLICY_CASES, ids=[c[0] for c in POLICY_CASES])
def test_simulate_vets_a_policy_of_ones_own(spec, needles, broken, capsys):
    _refused(
        ["simulate", "--scenario", "sf-fig2", "--policy", spec, "--arrivals", "2000"],
        [spec, *needles],
        capsys,
    )


SURFACE_CASES = [
    ("leaderboard", "broken:FarWrite", ["out of bounds"]),
    ("leaderboard", "broken:Forever", ["did not finish within 4 s"]),
    ("leaderboard", "syntax_error:P", ["SyntaxError"]),
    ("benchmark", "broken:FarWrite", ["out of bounds"]),
    ("benchmark", "raises_on_import:P", ["the module fails on import"]),
    ("sequences", "broken:FarWrite", ["out of bounds"]),
    ("sequences", "broken:Untypable", ["TypingError"]),
]


@pytest.mark.parametrize(
    ("command", "spec", "needles"), SURFACE_CASES, ids=[f"{c[0]}-{c[1]}" for c in SURFACE_CASES]
)
def test_every_command_vets_a_policy_of_ones_own(command, spec, needles, broken, capsys, monkeypatch):
    out = broken / "out"
    if command == "leaderboard":
        argv = [*LB[:1], "--policies", f"fcfs,{spec}", *LB[3:], "--workers", "1", "--out", str(out)]
    elif command == "benchmark":
        from msj_gym.experiments import benchmark as bm

        monkeypatch.setattr(bm, "BENCHMARK_SUITE", (("sf-fig2", 0.5),))
        monkeypatch.setattr(bm, "_policy_ids", lambda preemptive: ["fcfs", "msf"])
        argv = ["benchmark", "--quick", "--workers", "1", "--policies", spec, "--out", str(out)]
    else:
        argv = [
            "sequences",
            "--scenario",
            _sequence_log(broken),
            "--length",
            "5",
            "--policies",
            f"fcfs,{spec}",
        ]
    _refused(argv, ["--policies", spec, *needles], capsys)
    assert _empty(out)


@pytest.mark.parametrize("command", ["leaderboard", "sequences", "benchmark"])
def test_the_same_policy_twice_is_refused(command, broken, capsys, monkeypatch):
    (broken / "good.py").write_text("from msj_gym.baselines.priority import FirstFit as Mine\n")
    out = broken / "out"
    if command == "leaderboard":
        argv = ["leaderboard", "--policies", "good:Mine,fcfs,good:Mine", "--seeds", "1", "--out", str(out)]
    elif command == "sequences":
        argv = ["sequences", "--scenario", _sequence_log(broken), "--policies", "fcfs,fcfs"]
    else:
        argv = ["benchmark", "--quick", "--policies", "good:Mine,good:Mine", "--out", str(out)]
    _refused(argv, ["--policies", "twice"], capsys)
    assert _empty(out)


@pytest.mark.parametrize("given", ["spec", "instance"])
def test_an_env_vets_a_users_advisor(given, broken):
    import gymnasium as gym

    import msj_gym  # noqa: F401

    advisor = "broken:Forever"
    if given == "instance":
        import broken as module  # the folder is on the path (the fixture)

        advisor = module.Forever()
    with pytest.raises(ValueError) as info:
        gym.make("MSJ-v0", actions="priority", advisor=["msf", advisor])
    line = str(info.value)
    assert "\n" not in line and line.startswith("advisor ") and "did not finish within 4 s" in line


# -------------------------------------------------------------------- nothing long starts unasked


def test_simulate_and_render_refuse_a_long_solve_at_once(capsys, tmp_path):
    # sf-fig2 at 0.97: about 31 minutes by the estimate, over the limit of msj-gym optimal
    needles = ["sf-fig2", "about 31 min", "over the limit of 10 min", "msj-gym optimal"]
    _refused(
        ["simulate", "--scenario", "sf-fig2", "--load", "0.97", "--policy", "mdp-optimal"], needles, capsys
    )
    out = tmp_path / "o.gif"
    _refused(
        ["render", "--scenario", "sf-fig2", "--load", "0.97", "--policy", "mdp-optimal", "--out", str(out)],
        needles,
        capsys,
    )
    assert not out.exists()


THREE_CLASSES = """num_servers = 16
load = 0.8
[[classes]]
server_need = 1
probability = 0.5
service_time = { distribution = "exponential", mean = 1.0 }
[[classes]]
server_need = 4
probability = 0.3
service_time = { distribution = "exponential", mean = 1.0 }
[[classes]]
server_need = 16
probability = 0.2
service_time = { distribution = "exponential", mean = 1.0 }
"""


def test_a_leaderboard_leaves_out_an_optimum_row_it_would_take_hours_to_solve(tmp_path, capsys):
    path = tmp_path / "three.toml"
    path.write_text(THREE_CLASSES)  # the user's own system of the issue: 3 million states
    argv = ["leaderboard", "--scenario", str(path), "--policies", "fcfs", "--loads", "0.8", "--seeds", "1"]
    assert main([*argv, "--arrivals", "300", "--workers", "1", "--out", str(tmp_path / "lb")]) == 0
    err = capsys.readouterr().err
    assert "note: no non-preemptive optimum row" in err and "over the limit of 10 min" in err
    _refused([*argv[:4], "mdp-optimal", *argv[5:], "--out", str(tmp_path / "lb2")], ["mdp-optimal"], capsys)


@pytest.mark.parametrize("points", ["", " ", ",", " , "])
def test_an_empty_selection_of_points_is_refused(points, tmp_path, capsys):
    out = tmp_path / "b"
    _refused(["benchmark", "--quick", "--points", points, "--out", str(out)], ["--points"], capsys)
    assert _empty(out)


def test_an_empty_scenario_is_refused(tmp_path, capsys):
    out = tmp_path / "lb"
    _refused(["leaderboard", "--scenario", "", "--out", str(out)], ["scenario", "got ''"], capsys)
    _refused(["simulate", "--scenario", "", "--policy", "fcfs"], ["scenario", "got ''"], capsys)
    assert _empty(out)


# --------------------------------------------------------------------------- the smaller surfaces


@pytest.mark.parametrize("device", ["/dev/full", "/dev/zero", "/dev/null"])
def test_evaluate_refuses_a_device_as_its_out(device, capsys):
    pytest.importorskip("sb3_contrib")
    if not Path(device).exists():
        pytest.skip(f"no {device}")
    from msj_gym.agents import evaluate
    from msj_gym.agents._cli import run_script

    argv = ["rollout-sf-fig2-0.7", "--seeds", "1", "--arrivals", "200", "--out", device]
    code = run_script(evaluate.PROG, evaluate.main, argv)
    err = capsys.readouterr().err.splitlines()
    assert code == 2 and len(err) == 1 and "not a regular file" in err[0] and device in err[0]


GENERALIST_CASES = [
    (["--threads", "0"], ["--threads 0", "[1, 1024]"]),
    (["--threads", "-1"], ["--threads", "-1"]),
    (["--learning-rate", "nan"], ["--learning-rate", "nan"]),
    (["--learning-rate", "inf"], ["--learning-rate", "inf"]),
    (["--learning-rate", "0"], ["--learning-rate", "0"]),
    (["--learning-rate", "-0.1"], ["--learning-rate", "-0.1"]),
]


@pytest.mark.parametrize(
    ("flags", "needles"), GENERALIST_CASES, ids=[" ".join(c[0]) for c in GENERALIST_CASES]
)
def test_bad_generalist_number(flags, needles, tmp_path, capsys):
    pytest.importorskip("sb3_contrib")
    from msj_gym.agents import generalist
    from msj_gym.agents._cli import run_script

    code = run_script(
        "python -m msj_gym.agents.generalist", generalist.main, [*flags, "--out", str(tmp_path / "g.zip")]
    )
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1, err
    for needle in needles:
        assert needle in err[0], (needle, err[0])


def test_improve_on_a_full_disk_leaves_no_partial_checkpoint(tmp_path, monkeypatch, capsys):
    pytest.importorskip("sb3_contrib")
    from msj_gym.agents import checkpoint, improve
    from msj_gym.agents._cli import run_script

    def full_disk(model, path, algo=None):
        Path(path).write_bytes(b"PK\x03\x04 half a zip")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(checkpoint, "save_model", full_disk)
    out = tmp_path / "agent.zip"
    argv = [
        "--decisions",
        "60",
        "--rounds",
        "1",
        "--epochs",
        "1",
        "--episode-arrivals",
        "400",
        "--skip",
        "50",
    ]
    argv += ["--tail", "100", "--candidates", "1", "--select-seeds", "1", "--select-arrivals", "200"]
    argv += ["--out", str(out)]
    code = run_script(improve.PROG, improve.main, argv)
    err = [line for line in capsys.readouterr().err.splitlines() if "error" in line]
    assert code == 1 and len(err) == 1 and "No space left on device" in err[0] and "agent.zip" in err[0]
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # no partial zip, no .json, no temporary file


ENV_CASES = [
    ({"queue_window": 2**63}, ["queue_window", "9223372036854775808", "1048576"]),
    ({"queue_window": 2**20 + 1}, ["queue_window", "1048577"]),
    ({"preempt_window": 2**63}, ["preempt_window", "9223372036854775808"]),
    ({"actions": "priority", "queue_window": 4}, ["queue_window", "only with actions='jobs'", "'priority'"]),
    ({"actions": "priority-shortest", "queue_window": 2}, ["queue_window", "'priority-shortest'"]),
]


@pytest.mark.parametrize(("kwargs", "needles"), ENV_CASES, ids=[repr(c[0]) for c in ENV_CASES])
def test_bad_env_window(kwargs, needles):
    import gymnasium as gym

    import msj_gym  # noqa: F401

    with pytest.raises(ValueError) as info:
        gym.make("MSJ-v0", **kwargs)
    line = str(info.value)
    assert "\n" not in line
    for needle in needles:
        assert needle in line, (needle, line)


@pytest.mark.parametrize("num_envs", [2**31, 2**16 + 1])
def test_a_vector_env_of_too_many_envs_is_refused_before_allocating(num_envs):
    import gymnasium as gym

    import msj_gym  # noqa: F401

    with pytest.raises(ValueError, match=rf"num_envs: expected an integer in \[1, 65536\], got {num_envs}"):
        gym.make_vec("MSJ-v0", num_envs=num_envs, vectorization_mode="vector_entry_point")


@pytest.mark.parametrize("other", ["figures", "benchmark"])
def test_a_leaderboard_never_moves_into_another_commands_folder(other, tmp_path, capsys):
    out = tmp_path / "done"
    out.mkdir()
    runs = '{"point": "a finished run of another command"}\n'
    (out / "runs.jsonl").write_text(runs)
    if other == "figures":
        (out / "004-fig3.csv").write_text("x,y\n")
        needles = ["reproduced figures", "004-fig3.csv"]
    else:
        (out / "benchmark.json").write_text("{}")
        needles = ["a benchmark"]
    _refused([*LB, "--workers", "1", "--out", str(out)], ["--out", *needles], capsys)
    assert (out / "runs.jsonl").read_text() == runs and not (out / "leaderboard.json").exists()


def test_a_sequence_window_beyond_the_log_is_refused(tmp_path, capsys):
    spec = _sequence_log(tmp_path)  # 59 jobs
    _refused(
        ["sequences", "--scenario", spec, "--length", "5", "--window", "1000"],
        ["--window 1000", "holds 59 jobs"],
        capsys,
    )


@pytest.mark.parametrize(
    "query", ["?need=max&need=requested", "?tau=5&tau=10", "?cleaning=standard&cleaning=rlscheduler"]
)
def test_a_repeated_trace_option_is_refused(query, tmp_path, capsys):
    spec = _sequence_log(tmp_path) + query
    key = query[1:].partition("=")[0]
    _refused(["simulate", "--scenario", spec, "--policy", "fcfs"], [f"option {key!r} is given twice"], capsys)


def test_a_repeated_option_of_a_figures_trace_source_is_refused(tmp_path):
    from msj_gym.workloads.swf import swf_source

    spec = _sequence_log(tmp_path) + "?first=10&first=20"
    with pytest.raises(ValueError, match="option 'first' is given twice"):
        swf_source(spec, num_servers=4)


def test_a_repeated_gpu_trace_option_is_refused(tmp_path, capsys):
    path = tmp_path / "t.csv"
    path.write_text("submit_time,duration,num_gpu\n0,10,1\n5,20,2\n")
    _refused(
        ["simulate", "--scenario", f"gpu:{path}?num_servers=8&num_servers=16", "--policy", "fcfs"],
        ["option 'num_servers' is given twice"],
        capsys,
    )


def test_the_trust_catalogue_has_its_cases():
    tables = (
        SURFACES,
        NAMED_CODE,
        POISONS,
        PLAN_POISONS,
        POLICY_CASES,
        SURFACE_CASES,
        GENERALIST_CASES,
        ENV_CASES,
    )
    assert sum(len(t) for t in tables) >= 45


@pytest.mark.parametrize("kind", ["fifo", "device"])
def test_a_scenario_that_is_no_regular_file_is_refused_not_read_for_ever(kind, tmp_path, capsys):
    import os

    if kind == "fifo":
        path = tmp_path / "pipe.toml"
        os.mkfifo(path)
    else:
        path = tmp_path / "zero.toml"
        if not Path("/dev/zero").exists():
            pytest.skip("no /dev/zero")
        path.symlink_to("/dev/zero")
    _refused(
        ["simulate", "--scenario", str(path), "--policy", "fcfs"], [str(path), "not a regular file"], capsys
    )


def test_a_planners_json_naming_code_is_refused_unless_imports_are_trusted(tmp_path, capsys, monkeypatch):
    from msj_gym.agents.network import ENV_KWARGS

    monkeypatch.syspath_prepend(str(tmp_path))
    marker = tmp_path / "imported"
    (tmp_path / "evilmod.py").write_text(EVIL_MODULE.format(marker=str(marker)))
    path = tmp_path / "plan.npz"
    path.write_bytes(b"")  # no network: its bases alone decide
    meta = {"algo": "planner", "env_id": "MSJ-v0", "env_kwargs": dict(ENV_KWARGS)}
    meta["planner"] = {"network": False, "bases": ["fcfs", "evilmod:Evil"]}
    path.with_suffix(".json").write_text(json.dumps(meta))
    out = tmp_path / "out"
    _refused(
        [*LB, "--agent", str(path), "--out", str(out)],
        ["plan.npz", "planner.bases", "'evilmod:Evil'", "--trust-imports"],
        capsys,
    )
    assert not marker.exists() and _empty(out)
