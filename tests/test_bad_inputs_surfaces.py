"""The bad-input catalogue, continued (``tests/test_bad_inputs.py`` holds the first part): every entry
point added since, each case refused with exit code 2 and ONE line on stderr that names the field or
flag and the value, no traceback, nothing on stdout and nothing written. The surfaces: the
``python -m msj_gym.agents.improve / evaluate / train / generalist / explain / assign_search /
hpc_search`` scripts,
the GPU-trace loaders and SWF replay, ``msj-gym benchmark`` and the agents' metadata (benchmark and
leaderboard), ``msj-gym score`` and the policy-search example, ``msj-gym optimal``, ``msj-gym render``,
``msj_gym.testing.check_policy`` and the env keywords and vector-env seeds."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pytest

from msj_gym.cli import main

CHECKPOINTS = Path(__file__).resolve().parents[1] / "agents" / "checkpoints"
LOCK = ".msj-gym.lock"


def _snapshot(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` (but the lock file a command may take) with its bytes."""
    if not folder.exists():
        return {}
    return {
        str(p.relative_to(folder)): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and p.name != LOCK
    }


def _one_line(code: int, err: str, out: str, prefix: str, needles: list[str], expected: int = 2) -> str:
    lines = err.splitlines()
    assert code == expected, (code, err)
    assert len(lines) == 1, err
    assert lines[0].startswith(prefix), lines[0]
    assert "Traceback" not in err
    assert out == ""
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    return lines[0]


def _refused(argv: list[str], needles: list[str], capsys: pytest.CaptureFixture[str], tmp_path: Path) -> str:
    """The CLI in-process: exit 2, one error line holding every needle, and ``tmp_path`` unchanged."""
    before = _snapshot(tmp_path)
    code = main(argv)
    captured = capsys.readouterr()
    line = _one_line(code, captured.err, captured.out, "msj-gym: error: ", needles)
    assert _snapshot(tmp_path) == before, "a refused command wrote something"
    return line


# ------------------------------------------------------------------------------------ agents scripts


def _script(name: str, argv: list[str], needles: list[str], capsys, tmp_path: Path, expected: int = 2) -> str:
    import importlib

    from msj_gym.agents._cli import run_script

    module = importlib.import_module(f"msj_gym.agents.{name}")
    before = _snapshot(tmp_path)
    prog = f"python -m msj_gym.agents.{name}"
    code = run_script(prog, module.main, argv)
    captured = capsys.readouterr()
    line = _one_line(code, captured.err, captured.out, f"{prog}: error: ", needles, expected)
    assert _snapshot(tmp_path) == before, "a refused command wrote something"
    return line


IMPROVE_CASES = [
    (["--load", "2.0"], ["--load 2.0", "(0, 1)"]),
    (["--load", "1"], ["--load 1.0"]),
    (["--load", "0"], ["--load 0.0"]),
    (["--load", "-0.5"], ["--load -0.5"]),
    (["--load", "nan"], ["--load nan"]),
    (["--load", "inf"], ["--load inf"]),
    (["--net-arch", "0"], ["--net-arch '0'", "got 0"]),
    (["--net-arch", "64", "0"], ["--net-arch '64 0'", "got 0"]),
    (["--net-arch", "100000"], ["--net-arch '100000'"]),
    (["--net-arch", "-8"], ["--net-arch '-8'"]),
    (["--k", "0"], ["--k 0"]),
    (["--k", str(2**25)], ["--k 33554432"]),
    (["--skip", "-1"], ["--skip -1"]),
    (["--tail", "-1"], ["--tail -1"]),
    (["--obs-jobs", "-1"], ["--obs-jobs -1"]),
    (["--queue-window", "0"], ["--queue-window 0"]),
    (["--threads", "0"], ["--threads 0"]),
    (["--seed", "-1"], ["--seed -1"]),
    (["--learning-rate", "0"], ["--learning-rate 0.0"]),
    (["--learning-rate", "nan"], ["--learning-rate nan"]),
    (["--entropy", "-1"], ["--entropy -1.0"]),
    (["--decisions", "0"], ["--decisions", "got 0"]),
    (["--decisions", "abc"], ["--decisions", "'abc'"]),
    (["--episode-arrivals", "0"], ["--episode-arrivals", "got 0"]),
    (["--explore", "1.0"], ["--explore", "1.0"]),
    (["--sample-every", "0.5"], ["--sample-every", "0.5"]),
    (["--skip", "2000", "--tail", "1000"], ["--skip + --tail", "2000 + 1000"]),
    (["--select-arrivals", "1"], ["--select-arrivals", "got 1"]),
    (["--actions", "bogus"], ["--actions", "'bogus'"]),
    (["--base", "no-such-policy"], ["'no-such-policy'"]),
    (["--base", "no_such_module:Thing"], ["'no_such_module:Thing'"]),
]


@pytest.mark.parametrize(("flags", "needles"), IMPROVE_CASES, ids=[" ".join(c[0]) for c in IMPROVE_CASES])
def test_bad_improve_flag(flags, needles, capsys, tmp_path):
    _script("improve", [*flags, "--out", str(tmp_path / "a.zip")], needles, capsys, tmp_path)


@pytest.mark.parametrize("where", ["suffix", "under a file", "a folder", "data is a file", "under /proc"])
def test_improve_output_paths_are_checked_before_the_work(where, capsys, tmp_path):
    afile = tmp_path / "afile"
    afile.write_text("x")
    (tmp_path / "folder.zip").mkdir()
    out, extra, needle = {
        "suffix": (tmp_path / "a.txt", [], "--out"),
        "under a file": (afile / "a.zip", [], "--out"),
        "a folder": (tmp_path / "folder.zip", [], "a folder is there"),
        "data is a file": (tmp_path / "a.zip", ["--data", str(afile)], "--data"),
        "under /proc": (Path("/proc/msj-gym-agent/a.zip"), [], "--out '/proc/msj-gym-agent/a.zip'"),
    }[where]
    if where == "under /proc" and not Path("/proc/self").is_dir():
        pytest.skip("needs Linux /proc")
    _script("improve", [*extra, "--out", str(out)], [needle], capsys, tmp_path)


TRAIN_CASES = [
    (["--load", "2.0"], ["--load 2.0"]),
    (["--gamma", "0"], ["--gamma 0.0"]),
    (["--gamma", "1.5"], ["--gamma 1.5"]),
    (["--gae-lambda", "2"], ["--gae-lambda 2.0"]),
    (["--n-envs", "0"], ["--n-envs 0"]),
    (["--n-steps", "0"], ["--n-steps 0"]),
    (["--batch-size", "0"], ["--batch-size 0"]),
    (["--timesteps", "0"], ["--timesteps", "0"]),
    (["--net-arch", "0"], ["--net-arch '0'"]),
    (["--seed", "-1"], ["--seed -1"]),
    (["--reward-scale", "0"], ["--reward-scale 0.0"]),
    (["--ent-coef", "-1"], ["--ent-coef -1.0"]),
    (["--episode-arrivals", "1"], ["--episode-arrivals 1"]),
    (["--algo", "ppo", "--imitate", "msf"], ["--imitate", "maskable-ppo"]),
    (["--average-reward"], ["--average-reward", "--reward integral"]),
    (["--algo", "a3c"], ["--algo", "'a3c'"]),
    (["--advisor", "first-fit"], ["--advisor", "--actions priority"]),
    (["--actions", "priority", "--advisor", "nope"], ["advisor 'nope'", "unknown policy"]),
    (["--lyapunov-weight", "-1"], ["--lyapunov-weight -1.0"]),
    (["--lyapunov-power", "0.5"], ["--lyapunov-power 0.5"]),
    (["--lyapunov-of", "queue"], ["--lyapunov-of", "'queue'"]),
    (["--cost-scale", "seconds"], ["--cost-scale 'seconds'"]),
    (["--cost-scale", "0"], ["--cost-scale 0.0"]),
    (["--clip-range", "0"], ["--clip-range 0.0"]),
    (["--vf-warmup", "-5"], ["--vf-warmup -5"]),
    (["--algo", "dqn", "--vf-warmup", "10"], ["--vf-warmup", "ppo"]),
    (["--eval-every", "-1"], ["--eval-every -1"]),
    (["--eval-arrivals", "10"], ["--eval-arrivals 10"]),
    (["--eval-seeds", "a-b"], ["--eval-seeds", "'a-b'"]),
    (["--eval-systems", "0"], ["--eval-systems 0"]),
    (["--keep", "best"], ["--keep best", "--eval-every"]),
    (["--recipe", "no-such-recipe"], ["--recipe 'no-such-recipe'"]),
    (["--imitate", "advisor"], ["--imitate advisor", "--advisor"]),
    (["--lr-schedule", "cosine"], ["--lr-schedule", "'cosine'"]),
    (["--env-id", "CompatAssign-v0", "--lyapunov-weight", "1"], ["--lyapunov-weight", "CompatAssign-v0"]),
]


@pytest.mark.parametrize(("flags", "needles"), TRAIN_CASES, ids=[" ".join(c[0]) for c in TRAIN_CASES])
def test_bad_train_flag(flags, needles, capsys, tmp_path):
    _script("train", [*flags, "--out", str(tmp_path / "a.zip")], needles, capsys, tmp_path)


def test_train_out_is_checked_before_the_training(capsys, tmp_path):
    _script("train", ["--out", str(tmp_path / "a.txt")], ["--out", "a.txt", ".zip"], capsys, tmp_path)


SHIPPED = "rollout-sf-fig2-0.7"


def _checkpoint(tmp_path: Path, meta: str | None, name: str = "agent") -> Path:
    """A copy of a shipped checkpoint in ``tmp_path`` with ``meta`` as its ``.json`` (None: none)."""
    zip_path = tmp_path / "agents" / f"{name}.zip"
    zip_path.parent.mkdir(exist_ok=True)
    shutil.copy(CHECKPOINTS / f"{SHIPPED}.zip", zip_path)
    if meta is not None:
        zip_path.with_suffix(".json").write_text(meta)
    return zip_path


GOOD_META = json.loads((CHECKPOINTS / f"{SHIPPED}.json").read_text())
META_CASES = [
    ("missing", None, ["no metadata 'agent.json'", "--bare-agents"]),
    ("not-json", "{not json", ["agent.json", "is not JSON"]),
    ("a-list", "[1, 2]", ["agent.json", "expected a JSON object, got list"]),
    ("another-env", json.dumps({**GOOD_META, "env_id": "CartPole-v1"}), ["env_id 'CartPole-v1'"]),
    (
        "unknown-keyword",
        json.dumps({**GOOD_META, "env_kwargs": {"scenario": "sf-fig2", "colour": "red"}}),
        ["'colour'", "not keywords of MSJ-v0"],
    ),
    ("kwargs-not-object", json.dumps({**GOOD_META, "env_kwargs": [1]}), ["env_kwargs", "[1]"]),
    ("unknown-algo", json.dumps({**GOOD_META, "algo": "a3c"}), ["unknown algo 'a3c'"]),
]


@pytest.mark.parametrize(("meta", "needles"), [c[1:] for c in META_CASES], ids=[c[0] for c in META_CASES])
def test_evaluate_checks_the_checkpoints_metadata(meta, needles, capsys, tmp_path):
    pytest.importorskip("sb3_contrib")
    ckpt = _checkpoint(tmp_path, meta)
    _script("evaluate", [str(ckpt), "--seeds", "1", "--arrivals", "200"], needles, capsys, tmp_path)


GENERALIST_CASES = [
    (["--persist", "0"], ["--persist", "got 0"]),
    (["--persist", "-3"], ["--persist", "got -3"]),
    (["--persist", "two"], ["--persist", "'two'"]),
    (["--play-out", "native"], ["--play-out", "'native'"]),
    (["--wide-weight", "-1"], ["--wide-weight", "got -1.0"]),
    (["--wide-weight", "heavy"], ["--wide-weight", "'heavy'"]),
    (["--wide-weight", "inf"], ["--wide-weight", "got inf"]),
    (["--selection-lean", "inf"], ["--selection-lean", "got inf"]),
    (["--selection-lean", "some"], ["--selection-lean", "'some'"]),
    (["--selection-seeds", "0"], ["--selection-seeds", "got 0"]),
    (["--rehearse", "-4"], ["--rehearse", "got -4"]),
    (["--rehearse", "many"], ["--rehearse", "'many'"]),
    (["--rehearse-trust", "-1.5"], ["--rehearse-trust", "got -1.5"]),
    (["--fallbacks", "lsf"], ["--fallbacks", "--simulate-selection"]),
    (["--no-rehearse-fallbacks"], ["--no-rehearse-fallbacks", "--rehearse"]),
    (["--all-flagged", "mean"], ["--all-flagged", "'mean'"]),
    (["--simulate-selection", "nope.zip"], ["--simulate-selection", "'nope.zip'"]),
]


@pytest.mark.parametrize(
    ("flags", "needles"), GENERALIST_CASES, ids=[" ".join(c[0]) for c in GENERALIST_CASES]
)
def test_bad_generalist_flag(flags, needles, capsys, tmp_path):
    _script("generalist", [*flags, "--out", str(tmp_path / "g.zip")], needles, capsys, tmp_path)


ASSIGN_SEARCH_CASES = [
    (["--load", "1.2"], ["--load 1.2", "(0, 1)"]),
    (["--load", "0.7,0.8,0.9"], ["--load '0.7,0.8,0.9'", "one per scenario (2)"]),
    (["--load", "high"], ["--load 'high'", "numbers"]),
    (
        ["--scenario", "003-tree-symmetric", "--load", "0.7"],
        ["--scenario '003-tree-symmetric'", "nothing to assign"],
    ),
    (["--scenario", "sf-fig2"], ["--scenario 'sf-fig2'", "not a compatibility system"]),
    (["--elite", "16"], ["--elite 16", "[1, 15]"]),
    (["--population", "1"], ["--population 1", "[2,"]),
    (["--arrivals", "10"], ["--arrivals 10", "[1000,"]),
    (["--init-std", "0"], ["--init-std 0.0", "(0, 100]"]),
    (["--init-std", "nan"], ["--init-std nan"]),
    (["--workers", "0"], ["--workers 0"]),
]


@pytest.mark.parametrize(
    ("flags", "needles"), ASSIGN_SEARCH_CASES, ids=[" ".join(c[0]) for c in ASSIGN_SEARCH_CASES]
)
def test_bad_assign_search_flag(flags, needles, capsys, tmp_path):
    _script("assign_search", [*flags, "--out", str(tmp_path / "a.zip")], needles, capsys, tmp_path)


def test_assign_search_out_must_be_a_zip(capsys, tmp_path):
    _script("assign_search", ["--out", str(tmp_path / "a.txt")], ["--out", "a .zip path"], capsys, tmp_path)


HPC_SEARCH_CASES = [
    (["--scenario", "sf-fig2"], ["--scenario 'sf-fig2'", "not a trace"]),
    (["--scenario", "swf:nosuch.swf"], ["--scenario 'swf:nosuch.swf'", "no such file"]),
    (["--skip", "200000"], ["--skip 200000", "no room after it"]),
    (["--skip", "-1"], ["--skip -1"]),
    (["--length", "1"], ["--length 1", "[2,"]),
    (["--gap-scale", "0.5"], ["--gap-scale '0.5'", "two numbers"]),
    (["--gap-scale", "1,0.5"], ["--gap-scale '1,0.5'", "LO <= HI"]),
    (["--gap-scale", "0,1"], ["--gap-scale '0,1'", "0 < LO"]),
    (["--reference", "nosuch"], ["--reference", "nosuch"]),
    (["--elite", "24"], ["--elite 24", "[1, 23]"]),
    (["--sequences", "0"], ["--sequences 0"]),
    (["--init-std", "nan"], ["--init-std nan"]),
]


@pytest.mark.parametrize(
    ("flags", "needles"), HPC_SEARCH_CASES, ids=[" ".join(c[0]) for c in HPC_SEARCH_CASES]
)
def test_bad_hpc_search_flag(flags, needles, capsys, tmp_path):
    traces = Path(__file__).resolve().parents[2] / "shared" / "data" / "traces"
    if flags[0] == "--skip" and not (traces / "HPC2N-2002-2.2-cln.swf.gz").exists():
        pytest.skip("needs ../shared/data/traces (the search's default SDSC-SP2 and HPC2N logs)")
    _script("hpc_search", [*flags, "--out", str(tmp_path / "h.zip")], needles, capsys, tmp_path)


EXPLAIN_CASES = [
    (["nosuch"], ["--agent 'nosuch'", "not a shipped agent"]),
    (["rollout-sf-fig2-0.7", "--arrivals", "5"], ["--arrivals", "got 5"]),
    (["rollout-sf-fig2-0.7", "--arrivals", "many"], ["argument --arrivals", "'many'"]),
    (["rollout-sf-fig2-0.7", "--loads", "a,b"], ["--loads", "'a,b'"]),
    (["scored-assign-random-d"], ["agent 'scored-assign-random-d'", "acts in CompatAssign-v0"]),
    (["scored-easy-hpc"], ["'scored-easy'", "carries no requested times"]),
    (["rollout-sf-fig2-0.7", "--bogus"], ["unrecognized arguments: --bogus"]),
]


@pytest.mark.parametrize(("argv", "needles"), EXPLAIN_CASES, ids=[" ".join(c[0]) for c in EXPLAIN_CASES])
def test_bad_explain_argument(argv, needles, capsys, tmp_path):
    _script("explain", argv, needles, capsys, tmp_path)


EVALUATE_CASES = [
    (["--arrivals", "10"], ["--arrivals 10", "[100,"]),
    (["--arrivals", "99"], ["--arrivals 99"]),
    (["--arrivals", "200", "--warmup", "-1"], ["--warmup -1"]),
    (["--arrivals", "200", "--warmup", "199"], ["--warmup 199"]),
    (["--seeds", "a-b"], ["--seeds", "'a-b'"]),
    (["--seeds", "-1"], ["--seeds", "'-1'"]),
    (["--seeds", "0-100000"], ["--seeds '0-100000'", "10000"]),
    (["--seeds", str(2**63)], ["--seeds", str(2**63)]),
    (["--also", "no_such_module:Rule"], ["--also", "'no_such_module:Rule'"]),
    (["--arrivals", "abc"], ["--arrivals", "'abc'"]),
]


@pytest.mark.parametrize(("flags", "needles"), EVALUATE_CASES, ids=[" ".join(c[0]) for c in EVALUATE_CASES])
def test_bad_evaluate_flag(flags, needles, capsys, tmp_path):
    pytest.importorskip("sb3_contrib")
    _script("evaluate", [SHIPPED, *flags], needles, capsys, tmp_path)


def test_evaluate_missing_checkpoint_and_odd_out(capsys, tmp_path):
    pytest.importorskip("sb3_contrib")
    _script(
        "evaluate", [str(tmp_path / "missing.zip")], ["'", "missing.zip", "no such file"], capsys, tmp_path
    )
    afile = tmp_path / "afile"
    afile.write_text("x")
    argv = [SHIPPED, "--seeds", "1", "--arrivals", "200", "--out", str(afile / "eval.jsonl")]
    _script("evaluate", argv, ["--out", "afile"], capsys, tmp_path)


def test_evaluate_refuses_an_agent_of_another_model(capsys, tmp_path):
    pytest.importorskip("sb3_contrib")
    argv = ["ppo-moldable-hw", "--out", str(tmp_path / "eval.jsonl")]
    _script(
        "evaluate", argv, ["ppo-moldable-hw.zip", "an agent of MSJMoldable-v0", "MSJ-v0"], capsys, tmp_path
    )


def test_evaluate_refuses_an_agent_that_cannot_act_on_its_envs_workload(capsys, tmp_path):
    # the HPC agent reads requested times, which its env's default scenario does not carry
    argv = ["scored-easy-hpc", "--arrivals", "200", "--out", str(tmp_path / "eval.jsonl")]
    _script("evaluate", argv, ["scored-easy-hpc.zip", "carries no requested times"], capsys, tmp_path)


def test_evaluate_refuses_a_stale_out_in_one_line(capsys, tmp_path):
    pytest.importorskip("sb3_contrib")
    out = tmp_path / "eval.jsonl"
    row = {"policy": "fcfs", "seed": 1, "arrivals": 200, "warmup": 20, "stamp": "0123456789abcdef"}
    out.write_text(json.dumps(row) + "\n")
    argv = [SHIPPED, "--seeds", "1", "--arrivals", "200", "--out", str(out)]
    _script("evaluate", argv, ["--out", "another checkpoint or code", "'0123456789abcdef'"], capsys, tmp_path)
    out.write_text("not a row\n")
    _script("evaluate", argv, ["--out", "line 1 is not a result row"], capsys, tmp_path)


# ------------------------------------------------------------------------------------- GPU traces

HELIOS_HEAD = "vc,gpu_num,submit_time,duration\n"
GOOD_ROWS = "a,1,0,10\nb,2,5,20\nc,4,9,30\n"


def _trace(tmp_path: Path, rows: str, name: str = "t.csv", head: str = HELIOS_HEAD) -> Path:
    path = tmp_path / name
    path.write_text(head + rows)
    return path


# (id, rows replacing the good ones, spec options, strings the one line must contain)
TRACE_ROW_CASES = [
    ("gpus-1e300", "a,1,0,10\nb,1e300,5,10\n", "", ["line 3", "1e+300 GPUs", "MAX_SERVERS"]),
    ("gpus-2-25", f"a,1,0,10\nb,{2**25},5,10\n", "", ["line 3", "3.35544e+07 GPUs", "16777216"]),
    ("gpus-negative", "a,1,0,10\nb,-2,5,10\n", "", ["line 3", "'gpu_num'", "-2.0"]),
    ("gpus-word", "a,1,0,10\nb,two,5,10\n", "", ["line 3", "'gpu_num'", "'two'"]),
    ("gpus-inf", "a,1,0,10\nb,inf,5,10\n", "", ["line 3", "'gpu_num'", "'inf'"]),
    ("duration-1e300", "a,1,0,10\nb,1,5,1e300\n", "", ["line 3", "duration 1e+300 s", "[1e-06, 1e+09]"]),
    ("duration-1e10", "a,1,0,10\nb,1,5,1e10\n", "", ["line 3", "duration 1e+10 s"]),
    ("duration-1e-9", "a,1,0,10\nb,1,5,1e-9\n", "", ["line 3", "duration 1e-09 s"]),
    ("duration-negative", "a,1,0,10\nb,1,5,-3\n", "", ["line 3", "'duration'", "-3.0"]),
    ("duration-nan-word", "a,1,0,10\nb,1,5,soon\n", "", ["line 3", "'duration'", "'soon'"]),
    ("time-unreadable", "a,1,0,10\nb,1,yesterday,10\n", "", ["line 3", "'submit_time'", "'yesterday'"]),
    ("fields", "a,1,0,10\nb,1,5\n", "", ["line 3", "expected 4 fields", "got 3"]),
    ("one-instant", "a,1,7,10\nb,1,7,10\nc,2,7,5\n", "", ["all 3 jobs arrive at one instant"]),
    ("one-job", "a,1,0,10\nb,0,5,10\n", "", ["fewer than 2 replayable jobs", "no GPU: 1"]),
    ("own-load-tiny", "a,1,0,1e-6\nb,1,9e11,1e-6\n", "", ["its own load", "[1e-06, 1e+06]"]),
    ("k-below-need", GOOD_ROWS, "?num_servers=2", ["num_servers: 2 GPUs", "need 4", "wide=drop"]),
    ("num-servers-huge", GOOD_ROWS, "?num_servers=100000000000", ["num_servers", "100000000000", "16777216"]),
    ("num-servers-zero", GOOD_ROWS, "?num_servers=0", ["num_servers", "got 0"]),
    ("num-servers-negative", GOOD_ROWS, "?num_servers=-3", ["num_servers", "-3"]),
    ("num-servers-float", GOOD_ROWS, "?num_servers=1e3", ["num_servers expects a number", "'1e3'"]),
    ("load-1e9", GOOD_ROWS, "?load=1e9", ["load", "1000000000.0", "[1e-06, 1e+06]"]),
    ("load-zero", GOOD_ROWS, "?load=0", ["load", "0.0"]),
    ("load-nan", GOOD_ROWS, "?load=nan", ["load", "nan"]),
    ("load-inf", GOOD_ROWS, "?load=inf", ["load", "inf"]),
    ("load-tiny", GOOD_ROWS, "?load=1e-9", ["load", "1e-09"]),
    ("load-word", GOOD_ROWS, "?load=high", ["load expects a number", "'high'"]),
    ("first-zero", GOOD_ROWS, "?first=0", ["first", "got 0"]),
    ("first-word", GOOD_ROWS, "?first=some", ["first expects a number", "'some'"]),
    ("wide-word", GOOD_ROWS, "?wide=maybe", ["wide 'maybe'", "refuse, drop"]),
    ("option-unknown", GOOD_ROWS, "?colour=red", ["unknown option 'colour'"]),
    ("option-no-value", GOOD_ROWS, "?load", ["expected option=value", "'load'"]),
    ("class-by-missing", GOOD_ROWS, "?class_by=queue", ["class_by column 'queue'"]),
    (
        "wide-drop-leaves-one",
        GOOD_ROWS,
        "?num_servers=1&wide=drop",
        ["fewer than 2", "wider than num_servers: 2"],
    ),
]


@pytest.mark.parametrize(
    ("rows", "options", "needles"), [c[1:] for c in TRACE_ROW_CASES], ids=[c[0] for c in TRACE_ROW_CASES]
)
def test_bad_gpu_trace(rows, options, needles, capsys, tmp_path):
    path = _trace(tmp_path, rows)
    argv = ["simulate", "--scenario", f"helios:{path}{options}", "--policy", "fcfs", "--arrivals", "50"]
    _refused(argv, needles, capsys, tmp_path)


def _big_csv() -> bytes:
    rows = "".join(f"v{i % 3},{1 + i % 4},{i},{10 + i % 7}\n" for i in range(20_000))
    return (HELIOS_HEAD + rows).encode()


TRACE_FILE_CASES = [
    ("truncated-gz", "t.csv.gz", lambda: gzip.compress(_big_csv())[:30_000], ["corrupt gzip data"]),
    ("garbage-gz", "t.csv.gz", lambda: b"\x1f\x8b\x08\x00" + bytes(range(256)) * 8, ["corrupt gzip data"]),
    ("not-gzip", "t.csv.gz", lambda: b"this is not gzip\n", ["t.csv.gz"]),
    ("empty", "t.csv", lambda: b"", ["the file is empty"]),
    ("json-deep", "t.json", lambda: b"[" * 100_000 + b"]" * 100_000, ["nested too deeply"]),
    ("json-not-a-job", "t.json", lambda: b"[1, 2]", ["job 0", "'submitted_time'"]),
    ("json-broken", "t.json", lambda: b'[{"submitted_time": ', ["not JSON"]),
    ("unknown-format", "t.csv", lambda: b"a,b,c\n1,2,3\n", ["cannot tell its format", "'a,b,c'"]),
    ("missing-column", "t.csv", lambda: b"vc,gpu_num,duration\na,1,10\n", ["t.csv"]),
]


@pytest.mark.parametrize(
    ("name", "content", "needles"), [c[1:] for c in TRACE_FILE_CASES], ids=[c[0] for c in TRACE_FILE_CASES]
)
def test_bad_gpu_trace_file(name, content, needles, capsys, tmp_path):
    path = tmp_path / name
    path.write_bytes(content())
    fmt = "philly" if name.endswith(".json") else "gpu"
    argv = ["simulate", "--scenario", f"{fmt}:{path}", "--policy", "fcfs", "--arrivals", "50"]
    _refused(argv, needles, capsys, tmp_path)


@pytest.mark.parametrize(
    ("spec", "needles"),
    [
        ("helios:{tmp}/missing.csv", ["no such file", "missing.csv"]),
        ("helios:{tmp}", ["no such file"]),
        ("philly:{trace}", ["looks like 'helios'", "write helios:"]),
    ],
    ids=["missing", "a-folder", "wrong-format"],
)
def test_bad_gpu_trace_path(spec, needles, capsys, tmp_path):
    trace = _trace(tmp_path, GOOD_ROWS)
    argv = ["simulate", "--scenario", spec.format(tmp=tmp_path, trace=trace), "--policy", "fcfs"]
    _refused(argv, needles, capsys, tmp_path)


@pytest.mark.parametrize(
    ("flags", "needles"),
    [
        (["--k", "0"], ["--k", "got 0"]),
        (["--load", "1e9"], ["--load", "1000000000.0"]),
        (["--k", "2"], ["num_servers: 2"]),
    ],
    ids=["k-zero", "load-huge", "k-below-need"],
)
def test_bad_flag_on_a_trace(flags, needles, capsys, tmp_path):
    path = _trace(tmp_path, GOOD_ROWS)
    _refused(
        ["simulate", "--scenario", f"helios:{path}", "--policy", "fcfs", *flags], needles, capsys, tmp_path
    )


def test_a_trace_shorter_than_the_run_says_so(capsys, tmp_path):
    path = _trace(tmp_path, "".join(f"a,{1 + i % 2},{3 * i},2\n" for i in range(40)))
    argv = ["simulate", "--scenario", f"helios:{path}", "--policy", "fcfs", "--arrivals", "60", "--json"]
    assert main(argv) == 0
    captured = capsys.readouterr()
    notes = [line for line in captured.err.splitlines() if "note:" in line]
    assert len(notes) == 1 and "holds 40 jobs, fewer than --arrivals 60" in notes[0]
    # jobs 4..39: the default warm-up is a tenth of the 40 jobs the run replays, not of --arrivals
    assert json.loads(captured.out)["num_measured"] == 36


def test_wide_jobs_dropped_by_the_explicit_option_are_counted(tmp_path):
    from msj_gym.workloads.gpu_traces import gpu_trace_workload

    path = _trace(tmp_path, GOOD_ROWS + "d,1,12,5\n")
    wl = gpu_trace_workload(path, "helios", num_servers=2, wide="drop")
    assert wl.arrival_time.size == 3 and wl.meta["skipped"]["wider than num_servers"] == 1
    with pytest.raises(ValueError, match="wide: expected one of refuse, drop, got 'some'"):
        gpu_trace_workload(path, "helios", num_servers=2, wide="some")


# ------------------------------------------------------------------------------------- SWF replay


def _swf(tmp_path: Path, rows: list[tuple[float, float, float]]) -> Path:
    """An SWF log of (submit time, run time, processors) jobs, the other fields -1."""
    lines = ["; Version: 2.2"]
    for i, (submit, run, procs) in enumerate(rows, 1):
        fields = [i, submit, 0, run, procs] + [-1] * 13
        lines.append(" ".join(f"{v:g}" for v in fields))
    path = tmp_path / "log.swf"
    path.write_text("\n".join(lines) + "\n")
    return path


GOOD_SWF = [(0, 10, 1), (5, 20, 2), (9, 30, 4), (12, 5, 1)]
SWF_CASES = [
    ("wider-than-k", GOOD_SWF, {"num_servers": 2}, ["num_servers: 2", "need 4", "line 4", "wide='drop'"]),
    ("run-negative", [*GOOD_SWF, (13, -5, 1)], {}, ["line 6", "'run_time' -5", "-1 = missing"]),
    ("run-1e300", [*GOOD_SWF, (13, 1e300, 1)], {}, ["line 6", "'run_time' 1e+300", "1e+09"]),
    ("run-tiny", [*GOOD_SWF, (13, 1e-9, 1)], {}, ["line 6", "'run_time' 1e-09"]),
    ("submit-negative", [*GOOD_SWF, (-7, 5, 1)], {}, ["line 6", "'submit_time' -7"]),
    ("procs-negative", [*GOOD_SWF, (13, 5, -4)], {}, ["line 6", "'allocated_processors' -4"]),
    ("all-at-zero", [(0, 10, 1), (0, 20, 2), (0, 5, 1)], {}, ["all 3 kept jobs arrive at one instant"]),
    ("k-zero", GOOD_SWF, {"num_servers": 0}, ["num_servers", "got 0"]),
    ("k-huge", GOOD_SWF, {"num_servers": 10**11}, ["num_servers", "100000000000"]),
    ("load-huge", GOOD_SWF, {"load": 1e9}, ["load", "1000000000.0"]),
    ("wide-word", GOOD_SWF, {"wide": "maybe"}, ["wide", "'maybe'"]),
    ("all-missing", [(0, -1, 1), (5, -1, 2)], {}, ["fewer than 2 usable jobs", "missing or zero run_time"]),
]


@pytest.mark.parametrize(
    ("rows", "kwargs", "needles"), [c[1:] for c in SWF_CASES], ids=[c[0] for c in SWF_CASES]
)
def test_bad_swf_replay(rows, kwargs, needles, tmp_path):
    from msj_gym.workloads.swf import swf_workload

    path = _swf(tmp_path, rows)
    kwargs = {"num_servers": 8, **kwargs}
    with pytest.raises(ValueError) as info:
        swf_workload(path, **kwargs)
    line = str(info.value)
    assert "\n" not in line
    for needle in needles:
        assert needle in line, (needle, line)


def test_swf_jobs_left_out_are_counted_and_wide_ones_dropped_on_request(tmp_path):
    from msj_gym.workloads.swf import swf_workload

    path = _swf(tmp_path, [*GOOD_SWF, (13, -1, 1), (14, 5, 200)])
    wl = swf_workload(path, 2, wide="drop")
    assert wl.arrival_time.size == 3
    assert wl.meta["skipped"] == {
        "missing or zero run_time": 1,
        "need outside the round-down binning (max_need=64)": 1,
        "wider than num_servers": 1,
    }


# ----------------------------------------------------------------- benchmark and agents' metadata

TINY = (("sf-fig2", 0.5), ("sf-fig2", 0.7))


@pytest.fixture
def tiny_suite(monkeypatch):
    from msj_gym.experiments import benchmark as bm

    monkeypatch.setattr(bm, "BENCHMARK_SUITE", TINY)
    monkeypatch.setattr(bm, "_policy_ids", lambda preemptive: ["fcfs", "msf"])
    monkeypatch.setattr(bm, "exact_optima", lambda scenario, load: {})


def _bench(tmp_path: Path, *flags: str) -> list[str]:
    return ["benchmark", "--quick", "--workers", "1", "--out", str(tmp_path / "bench"), *flags]


@pytest.mark.parametrize(("meta", "needles"), [c[1:] for c in META_CASES], ids=[c[0] for c in META_CASES])
def test_benchmark_checks_the_agents_metadata(meta, needles, capsys, tmp_path, tiny_suite):
    pytest.importorskip("sb3_contrib")
    ckpt = _checkpoint(tmp_path, meta)
    _refused(_bench(tmp_path, "--agent", str(ckpt)), [f"--agent {str(ckpt)!r}", *needles], capsys, tmp_path)


@pytest.mark.parametrize(
    ("meta", "needles"), [c[1:] for c in META_CASES[:5]], ids=[c[0] for c in META_CASES[:5]]
)
def test_leaderboard_checks_the_agents_metadata(meta, needles, capsys, tmp_path):
    pytest.importorskip("sb3_contrib")
    ckpt = _checkpoint(tmp_path, meta)
    argv = ["leaderboard", "--policies", "fcfs", "--seeds", "1", "--arrivals", "200", "--loads", "0.5"]
    argv += ["--agent", str(ckpt), "--out", str(tmp_path / "lb")]
    _refused(argv, [f"--agent {str(ckpt)!r}", *needles], capsys, tmp_path)


_AGENTS = '''
import gymnasium as gym
import numpy as np


class Raising:
    def __init__(self, env):
        raise RuntimeError("weights not found")


class Blind:
    """An agent trained on another observation: it fits no point of the suite."""

    observation_space = gym.spaces.Box(0.0, 1.0, (3,), np.float32)

    def predict(self, observation, state=None, episode_start=None, deterministic=True):
        return 0, state


blind = Blind()
'''


@pytest.mark.parametrize(
    ("spec", "needles"),
    [
        (
            "my_agents:Raising",
            ["--agent 'my_agents:Raising'", "making the agent failed", "weights not found"],
        ),
        ("my_agents:blind", ["--agent 'my_agents:blind'", "fits no point of the suite"]),
        ("my_agents:nothing", ["'my_agents:nothing'"]),
        ("no-such-agent", ["--agent 'no-such-agent'", "not a shipped agent"]),
    ],
    ids=["raising-factory", "fits-nowhere", "missing-attr", "unknown-name"],
)
def test_benchmark_refuses_an_agent_in_one_line(spec, needles, capsys, tmp_path, monkeypatch, tiny_suite):
    (tmp_path / "my_agents.py").write_text(_AGENTS)
    monkeypatch.syspath_prepend(str(tmp_path))
    _refused(_bench(tmp_path, "--agent", spec), needles, capsys, tmp_path)


def test_benchmark_refuses_the_same_agent_twice(capsys, tmp_path, tiny_suite):
    _refused(_bench(tmp_path, "--agent", SHIPPED, "--agent", SHIPPED), ["--agent", "twice"], capsys, tmp_path)


@pytest.mark.parametrize(
    ("name", "text", "needles"),
    [
        ("optima.json", "[]", ["optima.json", "got list []"]),
        ("optima.json", '{"sf-fig2@0.5": "fast"}', ["optima.json", "expected a table", "fast"]),
        ("optima.json", '{"sf-fig2@0.5": -1}', ["optima.json", "-1"]),
        ("benchmark.json", "[]", ["benchmark.json there is not a benchmark's record"]),
        ("benchmark.json", "{not json", ["benchmark.json there is not a benchmark's record"]),
        ("benchmark.json", '{"config": {"suite": "v0"}}', ["another suite or run length", "'v0'"]),
        ("leaderboard.json", "{}", ["holds runs of something else"]),
    ],
    ids=["optima-list", "optima-text", "optima-negative", "bench-list", "bench-broken", "bench-other", "lb"],
)
def test_benchmark_refuses_a_file_of_the_wrong_shape(name, text, needles, capsys, tmp_path, tiny_suite):
    from msj_gym.experiments import benchmark as bm

    out = tmp_path / "bench"
    out.mkdir()
    if name == "optima.json":  # next to the folder's own record, so that only optima.json is wrong
        config = bm.BenchmarkConfig(seeds=2, arrivals=2000)
        (out / "benchmark.json").write_text(json.dumps({"config": config.identity()}))
    (out / name).write_text(text)
    _refused(_bench(tmp_path), needles, capsys, tmp_path)


@pytest.mark.parametrize(
    ("where", "needles"),
    [
        ("a file", ["a file is there"]),
        ("under a file", ["cannot be made a folder"]),
        ("workers", ["--workers"]),
    ],
)
def test_benchmark_odd_out_or_workers(where, needles, capsys, tmp_path, tiny_suite):
    afile = tmp_path / "afile"
    afile.write_text("x")
    if where == "workers":
        argv = _bench(tmp_path, "--workers", "0")
    else:
        out = afile if where == "a file" else afile / "bench"
        argv = ["benchmark", "--quick", "--workers", "1", "--out", str(out)]
    _refused(argv, needles, capsys, tmp_path)


# ------------------------------------------------- msj-gym score and the policy-search example

SCORE_CASES = [
    ([], ["score: expected SPEC", "--builtin"]),
    (["no-such-policy"], ["unknown policy 'no-such-policy'"]),
    (["compat-fcfs"], ["score 'compat-fcfs'", "compatibility model"]),
    (["missing.py:Rule"], ["score 'missing.py:Rule'", "the file 'missing.py' does not exist"]),
    (["no_such_module_anywhere:Rule"], ["no module 'no_such_module_anywhere' on the path"]),
    (["mine.py:1st"], ["score 'mine.py:1st'", "expected a class or object name after the colon"]),
    (["json.py:Rule"], ["score 'json.py:Rule'", "the module name 'json'", "is taken by", "rename the file"]),
    (["first-fit", "first-fit"], ["'first-fit' given twice"]),
    (["first-fit", "--policy-param", "spread=2"], ["score 'first-fit'", "spread"]),
    (["first-fit", "--builtin", "--policy-param", "a=1"], ["--policy-param", "applies to one SPEC"]),
    (["first-fit", "--seeds", "0-9"], ["--seeds '0-9'", "seed 0", "published"]),
    (["first-fit", "--seeds", "9000-9003"], ["--seeds '9000-9003'", "seed 9000", "published"]),
    (["first-fit", "--seeds", "5600-5600"], ["--seeds '5600-5600'", "at least 2 seeds"]),
    (["first-fit", "--seeds", "many"], ["--seeds", "'many'"]),
    (["first-fit", "--arrivals", "10"], ["--arrivals", "10"]),
    (["first-fit", "--arrivals", "lots"], ["--arrivals", "'lots'"]),
    (["first-fit", "--points", "sf-fig2@0.6"], ["--points 'sf-fig2@0.6'", "not a point of the score suite"]),
    (["first-fit", "--points", "nowhere"], ["--points 'nowhere'"]),
    (["first-fit", "--time-limit", "0"], ["--time-limit", "positive number of seconds"]),
    (["first-fit", "--time-limit", "nan"], ["--time-limit", "nan"]),
    (["first-fit", "--workers", "0"], ["--workers", "0"]),
]


@pytest.mark.parametrize(
    ("flags", "needles"), SCORE_CASES, ids=[" ".join(c[0]) or "nothing" for c in SCORE_CASES]
)
def test_score_refuses_bad_input_before_any_work(flags, needles, capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("MSJ_GYM_CACHE", str(tmp_path / "cache"))  # nothing may be written there either
    monkeypatch.chdir(tmp_path)
    (tmp_path / "mine.py").write_text("")
    (tmp_path / "json.py").write_text("")  # named as a module every process has imported
    _refused(["score", *flags], needles, capsys, tmp_path)


@pytest.mark.parametrize(
    ("argv", "needles"),
    [
        (["--budget", "0"], ["--budget", "positive number of candidates, got 0"]),
        (["--search-seeds", "0-4"], ["--search-seeds '0-4'", "published"]),
        (["--held-out-seeds", "5605-5614"], ["--held-out-seeds '5605-5614'", "seed 5605 is a search seed"]),
        (["--arrivals", "5"], ["--arrivals", "5"]),
    ],
    ids=["budget", "search-seeds", "held-out-seeds", "arrivals"],
)
def test_the_policy_search_example_refuses_bad_input_in_one_line(argv, needles, tmp_path, monkeypatch):
    from tests.integrations.conftest import example

    monkeypatch.setenv("MSJ_GYM_CACHE", str(tmp_path / "cache"))
    with pytest.raises(SystemExit) as info:
        example("policy_search").main(argv)
    line = str(info.value.code)
    assert line.startswith("policy_search.py: error: ") and "\n" not in line, line
    for needle in needles:
        assert needle in line, (needle, line)
    assert not (tmp_path / "cache").exists()


# -------------------------------------------------------------------------------- msj-gym optimal


def _three_classes(tmp_path: Path) -> Path:
    path = tmp_path / "three.toml"
    classes = "".join(
        f"[[classes]]\nserver_need = {n}\nprobability = {p}\n"
        'service_time = { distribution = "exponential", mean = 1.0 }\n'
        for n, p in ((1, 0.5), (2, 0.3), (4, 0.2))
    )
    path.write_text(f"num_servers = 4\nload = 0.5\n{classes}")
    return path


OPTIMAL_CASES = [
    (["--max-minutes", "0"], ["--max-minutes", "0.0"]),
    (["--max-minutes", "nan"], ["--max-minutes", "nan"]),
    (["--max-minutes", "-1"], ["--max-minutes", "-1.0"]),
    (["--load", "0.96"], ["--max-minutes 10", "595120 states", "about 13 min"]),
    (["--load", "0.9", "--max-minutes", "0.01"], ["--max-minutes 0.01", "states at the first buffers"]),
    (["--max-states", "0"], ["--max-states", "got 0"]),
    (["--max-states", str(10**9)], ["--max-states", "1000000000"]),
    (["--max-states", "1000"], ["--max-states 1000", "more states"]),
    (["--blocking", "0"], ["--blocking", "0.0"]),
    (["--blocking", "1"], ["--blocking", "1.0"]),
    (["--blocking", "nan"], ["--blocking", "nan"]),
    (["--load", "1.5"], ["load", "below load 1", "1.5"]),
    (["--k", "0"], ["--k", "got 0"]),
    (["--png", "x.jpg"], ["--png", "'x.jpg'", ".png"]),
    (["--png", "{tmp}/no/such/x.png"], ["--png", "does not exist"]),
    (["--png", "{afile}/x.png"], ["--png", "is not a folder"]),
    (["--png", "{folder}"], ["--png", "a folder is there"]),
]


@pytest.mark.parametrize(("flags", "needles"), OPTIMAL_CASES, ids=[" ".join(c[0]) for c in OPTIMAL_CASES])
def test_bad_optimal_flag_before_the_solve(flags, needles, capsys, tmp_path):
    pytest.importorskip("scipy")
    afile = tmp_path / "afile"
    afile.write_text("x")
    folder = tmp_path / "pic.png"
    folder.mkdir()
    flags = [f.format(tmp=tmp_path, afile=afile, folder=folder) for f in flags]
    _refused(["optimal", "--scenario", "sf-fig2", "--load", "0.7", *flags], needles, capsys, tmp_path)


@pytest.mark.parametrize(
    ("scenario", "flags", "needles"),
    [
        ("three", ["--png", "{tmp}/p.png"], ["--png", "two classes", "has 3"]),
        ("bs-fig1", [], ["--max-states 6000000", "more states"]),
        ("lognormal", [], ["service_time", "exponential", "'lognormal'"]),
    ],
    ids=["png-three-classes", "too-large", "not-exponential"],
)
def test_optimal_refuses_a_problem_before_the_solve(scenario, flags, needles, capsys, tmp_path):
    pytest.importorskip("scipy")
    if scenario == "three":
        scenario = str(_three_classes(tmp_path))
    elif scenario == "lognormal":
        path = tmp_path / "ln.toml"
        path.write_text(
            "num_servers = 4\nload = 0.5\n[[classes]]\nserver_need = 1\nprobability = 1\n"
            'service_time = { distribution = "lognormal", mean = 1.0, std = 2.0 }\n'
        )
        scenario = str(path)
    flags = [f.format(tmp=tmp_path) for f in flags]
    _refused(["optimal", "--scenario", scenario, *flags], needles, capsys, tmp_path)


# --------------------------------------------------------------------------------- msj-gym render

RENDER_CASES = [
    (["--max-frames", "0"], "a.gif", ["--max-frames", "got 0"]),
    (["--max-frames", "5000"], "a.gif", ["--max-frames", "5000", "2000"]),
    (["--arrivals", "1"], "a.gif", ["--arrivals", "got 1"]),
    (["--arrivals", "30000"], "a.png", ["--arrivals", "30000", "20000"]),
    (["--arrivals", str(10**10)], "a.gif", ["--arrivals", str(10**10)]),
    (["--fps", "0"], "a.gif", ["--fps", "0.0"]),
    (["--fps", "1000"], "a.gif", ["--fps", "1000.0"]),
    (["--fps", "nan"], "a.gif", ["--fps", "nan"]),
    (["--seed", "-1"], "a.gif", ["--seed", "-1"]),
    (["--k", "0"], "a.gif", ["--k", "got 0"]),
    (["--load", "nan"], "a.gif", ["--load", "nan"]),
    (["--load", "1e308"], "a.png", ["--load", "1e+308"]),
    (["--policy", "bogus"], "a.gif", ["--policy", "'bogus'"]),
    (
        ["--policy", "msj_gym.baselines.priority:Nope"],
        "a.gif",
        ["--policy", "'msj_gym.baselines.priority:Nope'"],
    ),
    (["--policy", "numpy:pi"], "a.gif", ["--policy", "'numpy:pi'", "expected a Policy"]),
    (["--policy", "sjf"], "a.gif", ["'sjf'", "carries no requested times"]),  # before it says what it draws
    ([], "a.mp4", ["--out", "'{tmp}/a.mp4'", ".gif or .png"]),
    ([], "no/such/a.gif", ["--out", "does not exist"]),
    ([], "afile/a.gif", ["--out", "is not a folder"]),
    ([], "folder.gif", ["--out", "a folder is there"]),
]


@pytest.mark.parametrize(
    ("flags", "out", "needles"), RENDER_CASES, ids=[f"{' '.join(c[0])} {c[1]}".strip() for c in RENDER_CASES]
)
def test_bad_render_input(flags, out, needles, capsys, tmp_path):
    (tmp_path / "afile").write_text("x")
    (tmp_path / "folder.gif").mkdir()
    argv = ["render", "--scenario", "sf-fig2", "--policy", "msf", *flags, "--out", str(tmp_path / out)]
    if "--policy" in flags:
        argv = ["render", "--scenario", "sf-fig2", *flags, "--out", str(tmp_path / out)]
    _refused(argv, [n.format(tmp=tmp_path) for n in needles], capsys, tmp_path)


def test_render_out_under_proc_is_refused(capsys, tmp_path):
    if not Path("/proc/self").is_dir():
        pytest.skip("needs Linux /proc")
    argv = ["render", "--scenario", "sf-fig2", "--policy", "msf", "--out", "/proc/msj-gym.gif"]
    _refused(argv, ["--out '/proc/msj-gym.gif'", "cannot write in folder '/proc'"], capsys, tmp_path)


def test_render_says_what_it_makes_and_keeps_at_most_max_frames(capsys, tmp_path):
    pytest.importorskip("PIL")
    from PIL import Image

    gif = tmp_path / "long.gif"
    argv = [
        "render",
        "--scenario",
        "sf-fig2",
        "--policy",
        "msf",
        "--arrivals",
        "100000",
        "--max-frames",
        "12",
    ]
    assert main([*argv, "--out", str(gif)]) == 0
    captured = capsys.readouterr()
    first = captured.err.splitlines()[0]
    assert first.startswith(f"msj-gym render: {gif}: a GIF") and "at most 12 (--max-frames)" in first
    with Image.open(gif) as im:
        assert im.n_frames == 12
    assert "the first 12 decision instants (--max-frames)" in captured.out
    assert sorted(p.name for p in tmp_path.iterdir()) == ["long.gif"]  # no temporary file left


# --------------------------------------------------------------------------------- check_policy


def _broken_policies():
    from msj_gym.core import Policy
    from msj_gym.core.access import first_waiting, free_servers, next_waiting, server_need, start
    from msj_gym.core.jit import inline_jit

    @inline_jit
    def _far_write(view, pdata, actions):
        s = first_waiting(view)
        if s == -1:
            return 0
        actions[100_000_000] = s  # far outside the array
        return 1

    @inline_jit
    def _twice(view, pdata, actions):
        s = first_waiting(view)
        while s != -1:
            if 2 * server_need(view, s) <= free_servers(view):
                return start(actions, start(actions, 0, s), s)
            s = next_waiting(view, s)
        return 0

    @inline_jit
    def _forever(view, pdata, actions):
        x = 0
        while x >= 0:
            x = (x + 1) % 7
        return 0

    def _python(view, pdata, actions):
        return 0

    def make(pid, kernel):
        doc = "A broken example. Non-preemptive; size-oblivious."
        return type(
            pid.title(),
            (Policy,),
            {"__doc__": doc, "policy_id": pid, "reference": "broken", "kernel": kernel},
        )

    return {
        "far-write": make("far-write", _far_write),
        "twice": make("twice", _twice),
        "forever": make("forever", _forever),
        "python": make("python", _python),
    }


@pytest.mark.parametrize(
    ("name", "limit", "needles"),
    [
        ("python", 60, ["'_python' is not compiled", "@inline_jit"]),
        ("far-write", 120, ["the native run in debug mode failed", "IndexError", "out of bounds"]),
        ("twice", 120, ["the native run in debug mode failed", "starts job slot", "twice"]),
        ("forever", 3, ["(bounds-checked) did not finish within 3 s", "endless loop"]),
    ],
)
def test_check_policy_is_a_safety_net(name, limit, needles):
    from msj_gym.testing import check_policy

    policy = _broken_policies()[name]()
    with pytest.raises(AssertionError) as info:
        check_policy(policy, num_arrivals=300, time_limit=limit)
    line = str(info.value)
    assert line.startswith(f"check_policy({name!r}): ") and "\n" not in line
    for needle in needles:
        assert needle in line, (needle, line)


@pytest.mark.parametrize("limit", [0, -1.0, float("nan"), "10"])
def test_check_policy_time_limit_is_checked(limit):
    from msj_gym.testing import check_policy

    with pytest.raises(ValueError, match=r"time_limit: expected a positive number of seconds, got"):
        check_policy("first-fit", time_limit=limit)


# --------------------------------------------------------------------- env keywords and vector seeds

VEC_SEED_CASES = [
    (2**63, ["seed 9223372036854775808 + 1", "below 2**63"]),
    (2**63 - 1, ["seed 9223372036854775807 + 1", "below 2**63"]),
    (2**64, ["seed 18446744073709551616 + 1"]),
    ([1, 2**63], ["seed 9223372036854775808", "below 2**63"]),
    (-1, ["seed", "-1"]),
    ([1, -2], ["seed", "-2"]),
    (1.5, ["seed", "1.5"]),
    ([1], ["seed", "a list of 2 seeds"]),
]


@pytest.mark.parametrize(("seed", "needles"), VEC_SEED_CASES, ids=[repr(c[0]) for c in VEC_SEED_CASES])
def test_bad_vector_env_seed(seed, needles):
    import gymnasium as gym

    import msj_gym  # noqa: F401

    env = gym.make_vec("MSJ-v0", num_envs=2, vectorization_mode="vector_entry_point")
    with pytest.raises(ValueError) as info:
        env.reset(seed=seed)
    line = str(info.value)
    assert "\n" not in line
    for needle in needles:
        assert needle in line, (needle, line)


ENV_CASES = [
    # a TypeError in Python's own wording (wrappers that retry without an argument look for it)
    ({"colour": "red"}, ["unexpected keyword argument 'colour'", "known: scenario"]),
    ({"num_servers": 0}, ["num_servers", "0"]),
    ({"num_servers": 2**25}, ["num_servers", "33554432"]),
    ({"load": float("nan")}, ["load", "nan"]),
    ({"load": 1e9}, ["load", "1000000000.0"]),
    ({"num_arrivals": 1}, ["num_arrivals", "1"]),
    ({"obs_jobs": -1}, ["obs_jobs", "-1"]),
    ({"queue_window": 0}, ["queue_window", "0"]),
    ({"actions": "bogus"}, ["actions", "'bogus'"]),
    ({"reward": "bogus"}, ["reward", "'bogus'"]),
    ({"reward": "slowdwn"}, ["reward", "'slowdwn'", "'slowdown'"]),
    ({"slowdown_tau": 0}, ["slowdown_tau", "got 0"]),
    ({"slowdown_tau": -2.0}, ["slowdown_tau", "-2.0"]),
    ({"slowdown_tau": float("nan")}, ["slowdown_tau", "nan"]),
    ({"scenario": "helios:/no/such/trace.csv"}, ["no such file"]),
]


@pytest.mark.parametrize(
    ("kwargs", "needles"),
    ENV_CASES,
    ids=[next(iter(c[0])) + "=" + repr(next(iter(c[0].values()))) for c in ENV_CASES],
)
def test_bad_env_keyword(kwargs, needles):
    import gymnasium as gym

    import msj_gym  # noqa: F401

    with pytest.raises(TypeError if "colour" in kwargs else ValueError) as info:
        gym.make("MSJ-v0", **kwargs)
    line = str(info.value)
    assert "\n" not in line
    for needle in needles:
        assert needle in line, (needle, line)


# the env class takes the options as one object; its old flat keywords name what to give instead
ENV_CLASS_CASES = [
    ({"actions": "priority"}, TypeError, ["actions", "options=EnvOptions(actions=...)", "gym.make"]),
    ({"warmup_time": 2.0}, TypeError, ["warmup_time", "warmup=<time>"]),
    ({"options": {"actions": "priority"}}, ValueError, ["options", "EnvOptions"]),
    ({"options": "priority"}, ValueError, ["options", "'priority'"]),
]


@pytest.mark.parametrize(
    ("kwargs", "error", "needles"), ENV_CLASS_CASES, ids=[str(c[0]) for c in ENV_CLASS_CASES]
)
def test_bad_env_class_keyword(kwargs, error, needles):
    from msj_gym.env.msj_env import MSJEnv

    with pytest.raises(error) as info:
        MSJEnv(**kwargs)
    line = str(info.value)
    assert "\n" not in line
    for needle in needles:
        assert needle in line, (needle, line)


def test_a_variant_ids_defaults_are_checked_with_what_overrides_them():
    import gymnasium as gym

    import msj_gym  # noqa: F401

    with pytest.raises(ValueError, match="advisor: only with priority actions") as info:
        gym.make("MSJAdvised-v0", actions="jobs")  # its advisor default stays
    assert "\n" not in str(info.value)


def test_the_catalogue_covers_at_least_150_cases():
    # counted from the tables above and the parametrised cases without one
    tables = (
        IMPROVE_CASES,
        TRAIN_CASES,
        META_CASES,
        EVALUATE_CASES,
        TRACE_ROW_CASES,
        TRACE_FILE_CASES,
        SWF_CASES,
        OPTIMAL_CASES,
        RENDER_CASES,
        VEC_SEED_CASES,
        ENV_CASES,
        ENV_CLASS_CASES,
    )
    assert sum(len(t) for t in tables) >= 150
