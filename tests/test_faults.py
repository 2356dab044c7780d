"""Clean failure: a full filesystem (a small tmpfs, mounted in a private mount namespace where the test
may make one, skipped with the reason where it may not), a read-only folder, and SIGKILL during a
benchmark and during rollout collection, each resumed and compared with an uninterrupted run."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
LB = ["--policies", "fcfs,msf", "--loads", "0.5", "--seeds", "1", "--arrivals", "2000", "--workers", "1"]


def _namespaces() -> str | None:
    """Why a private mount namespace cannot be made here (None if it can)."""
    if shutil.which("unshare") is None:
        return "needs unshare (util-linux)"
    probe = subprocess.run(
        ["unshare", "-rm", "sh", "-c", "d=$(mktemp -d) && mount -t tmpfs -o size=64k tmpfs $d && umount $d"],
        capture_output=True,
        text=True,
    )
    if probe.returncode != 0:
        return f"cannot mount a tmpfs in a user mount namespace here: {probe.stderr.strip()[:120]}"
    return None


NO_NAMESPACE = _namespaces()
needs_tmpfs = pytest.mark.skipif(NO_NAMESPACE is not None, reason=NO_NAMESPACE or "")


def _script(tmp_path: Path, body: str) -> subprocess.CompletedProcess[str]:
    """Run a shell ``body`` in a private mount namespace (its mounts vanish with it); ``$PY`` is this
    Python, ``$T`` the test's folder (outside every mount)."""
    env = {**ENV, "PY": sys.executable, "T": str(tmp_path), "MSJ_GYM_CACHE": str(tmp_path / "cache")}
    return subprocess.run(
        ["unshare", "-rm", "sh", "-c", "set -u\n" + body], capture_output=True, text=True, env=env, cwd=ROOT
    )


def _result(tmp_path: Path, name: str) -> tuple[int, list[str], str]:
    """The exit code, stderr lines and stdout a script saved as ``name.code/.err/.out``."""
    code = int((tmp_path / f"{name}.code").read_text())
    err = (tmp_path / f"{name}.err").read_text().splitlines()
    return code, err, (tmp_path / f"{name}.out").read_text()


def _run(name: str, command: str) -> str:
    return f'{command} > "$T/{name}.out" 2> "$T/{name}.err"; echo $? > "$T/{name}.code"\n'


def _errors(lines: list[str]) -> list[str]:
    """The error lines (compile announcements and notes are progress, not errors)."""
    return [line for line in lines if "error" in line or "Traceback" in line]


@needs_tmpfs
def test_a_full_disk_is_one_line_leaves_no_partial_file_and_the_run_resumes(tmp_path, capsys):
    from msj_gym.cli import main

    (tmp_path / "cache").mkdir()
    body = 'mkdir "$T/m1" "$T/m2" "$T/m3" "$T/copy"\n'
    # room for the runs and tables of a two-run leaderboard, not for its picture
    body += 'mount -t tmpfs -o size=40k tmpfs "$T/m1"\n'
    body += _run("lb", f'"$PY" -m msj_gym.cli leaderboard {" ".join(LB)} --out "$T/m1/lb"')
    body += 'cp -a "$T/m1/lb" "$T/copy/lb"\n'
    body += 'mount -t tmpfs -o size=16k tmpfs "$T/m2"\n'
    render = "render --scenario sf-fig2 --policy msf --arrivals 60 --max-frames 40"
    body += _run("gif", f'"$PY" -m msj_gym.cli {render} --out "$T/m2/run.gif"')
    body += _run(
        "png", f'"$PY" -m msj_gym.cli {render.replace(" --max-frames 40", "")} --out "$T/m2/run.png"'
    )
    body += 'ls -A "$T/m2" > "$T/m2.ls"\n'
    body += 'mount -t tmpfs -o size=8k tmpfs "$T/m3"\n'
    body += _run(
        "opt", '"$PY" -m msj_gym.cli optimal --scenario sf-fig2 --load 0.5 --quiet --png "$T/m3/p.png"'
    )
    body += 'ls -A "$T/m3" > "$T/m3.ls"\n'
    done = _script(tmp_path, body)
    assert done.returncode == 0, done.stderr

    # the leaderboard: one line naming the file and the reason, exit 1, and how to resume
    code, err, _ = _result(tmp_path, "lb")
    errors = _errors(err)
    assert code == 1 and len(errors) == 1, err
    assert errors[0].startswith("msj-gym: error: cannot write") and "No space left on device" in errors[0]
    assert "rerun the same command to resume" in errors[0]
    left = sorted(p.name for p in (tmp_path / "copy" / "lb").iterdir())
    assert not [n for n in left if ".tmp" in n], left  # no temporary file behind
    assert "leaderboard-sf-fig2.png" not in left  # and no partial picture
    runs = (tmp_path / "copy" / "lb" / "runs.jsonl").read_text().splitlines()
    assert len(runs) == 2
    # resumed on a disk with room: no run again, tables equal to an uninterrupted run's
    resumed = subprocess.run(
        [sys.executable, "-m", "msj_gym.cli", "leaderboard", *LB, "--out", str(tmp_path / "copy" / "lb")],
        capture_output=True,
        text=True,
        env=ENV,
    )
    assert resumed.returncode == 0, resumed.stderr
    assert (tmp_path / "copy" / "lb" / "runs.jsonl").read_text().splitlines() == runs
    assert main(["leaderboard", *LB, "--out", str(tmp_path / "ref")]) == 0
    capsys.readouterr()
    table = (tmp_path / "ref" / "leaderboard.csv").read_text()
    assert (tmp_path / "copy" / "lb" / "leaderboard.csv").read_text() == table
    assert (tmp_path / "copy" / "lb" / "leaderboard-sf-fig2.png").stat().st_size > 10_000

    # render: one line, exit 1, no truncated GIF or PNG and no temporary file
    for name in ("gif", "png"):
        code, err, _ = _result(tmp_path, name)
        errors = _errors(err)
        assert code == 1 and len(errors) == 1 and "No space left on device" in errors[0], err
    assert (tmp_path / "m2.ls").read_text().split() == []

    # optimal: the solve is printed and cached; only the picture is lost, in one line
    code, err, out = _result(tmp_path, "opt")
    errors = _errors(err)
    assert code == 1 and len(errors) == 1, err
    assert errors[0].startswith("msj-gym: error: --png: cannot write") and "the solve is kept" in errors[0]
    assert "optimal mean response time" in out
    assert list((tmp_path / "cache" / "optimal").glob("*.npz"))
    assert (tmp_path / "m3.ls").read_text().split() == []


@needs_tmpfs
def test_a_read_only_folder_is_refused_before_any_work(tmp_path):
    body = 'mkdir "$T/ro"\nmount -t tmpfs -o ro,size=64k tmpfs "$T/ro"\n'
    commands = {
        # the plan of this one solves an optimum for a minute: the folder is refused before it
        "lb": '"$PY" -m msj_gym.cli leaderboard --policies mdp-optimal --loads 0.9 --out "$T/ro/lb"',
        "bench": '"$PY" -m msj_gym.cli benchmark --quick --workers 1 --out "$T/ro/bench"',
        "gif": '"$PY" -m msj_gym.cli render --scenario sf-fig2 --policy msf --out "$T/ro/a.gif"',
        "opt": '"$PY" -m msj_gym.cli optimal --scenario sf-fig2 --load 0.9 --png "$T/ro/p.png"',
        "fig": '"$PY" -m msj_gym.cli reproduce 004-fig3 --out "$T/ro/figs"',
        "evaluate": '"$PY" -m msj_gym.agents.evaluate rollout-sf-fig2-0.7 --out "$T/ro/e.jsonl"',
        "improve": '"$PY" -m msj_gym.agents.improve --out "$T/ro/a.zip"',
        "train": '"$PY" -m msj_gym.agents.train --out "$T/ro/a.zip"',
    }
    for name, command in commands.items():
        body += (
            f'start=$(date +%s)\n{_run(name, command)}echo $(( $(date +%s) - start )) > "$T/{name}.secs"\n'
        )
    body += 'ls -A "$T/ro" > "$T/ro.ls"\n'
    done = _script(tmp_path, body)
    assert done.returncode == 0, done.stderr
    for name in commands:
        code, err, out = _result(tmp_path, name)
        prog = (
            "msj-gym" if name in ("lb", "bench", "gif", "opt", "fig") else f"python -m msj_gym.agents.{name}"
        )
        assert code == 2 and len(err) == 1 and out == "", (name, code, err, out)
        assert err[0].startswith(f"{prog}: error: ") and "Traceback" not in err[0], err
        assert "ro/" in err[0], err  # the path it could not write
        # refused before the work: an optimum at load 0.9 alone takes a minute
        assert int((tmp_path / f"{name}.secs").read_text()) < 30, name
    assert (tmp_path / "ro.ls").read_text().split() == []


# ---------------------------------------------------------------------------------- SIGKILL, resume

_BENCH = """
import sys
from msj_gym.experiments import benchmark as bm
bm.BENCHMARK_SUITE = (("sf-fig2", 0.5), ("sf-fig2", 0.6))
bm.QUICK = {"seeds": 2, "arrivals": 60000}
bm._policy_ids = lambda preemptive: ["fcfs", "msf", "first-fit", "nmsr"]
bm.exact_optima = lambda scenario, load: {}
from msj_gym.cli import main
sys.exit(main(["benchmark", "--quick", "--workers", "1", "--out", sys.argv[1]]))
"""


def _bench(out: Path) -> subprocess.Popen[bytes]:
    cmd = [sys.executable, "-c", _BENCH, str(out)]
    return subprocess.Popen(cmd, env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _metrics(folder: Path) -> dict[str, float]:
    rows = (json.loads(line) for line in (folder / "runs.jsonl").read_text().splitlines())
    return {row["key"]: row["mean_response_time"] for row in rows}


def test_a_benchmark_killed_mid_run_resumes_to_the_uninterrupted_result(tmp_path):
    assert _bench(tmp_path / "ref").wait() == 0
    reference = _metrics(tmp_path / "ref")
    tables = {n: (tmp_path / "ref" / n).read_text() for n in ("benchmark.csv", "benchmark-points.csv")}
    rng = np.random.default_rng(30)
    for i, at in enumerate(rng.integers(1, len(reference), size=2)):
        out = tmp_path / f"killed-{i}"
        proc = _bench(out)
        deadline = time.monotonic() + 300
        rows = out / "runs.jsonl"
        while proc.poll() is None and time.monotonic() < deadline:
            if rows.exists() and len(rows.read_text().splitlines()) >= at:
                break
            time.sleep(0.01)
        proc.kill()  # SIGKILL
        proc.wait()
        done = len(rows.read_text().splitlines()) if rows.exists() else 0
        assert 0 < done < len(reference), f"the kill after {at} runs fell at {done} runs"
        assert _bench(out).wait() == 0  # resumes
        assert _metrics(out) == reference, f"killed at {done} runs: the resumed benchmark differs"
        for name, text in tables.items():
            assert (out / name).read_text() == text, name
        assert not [p for p in out.iterdir() if ".tmp" in p.name]


_IMPROVE = ["--decisions", "150", "--rounds", "2", "--epochs", "2", "--episode-arrivals", "400"]
_IMPROVE += ["--candidates", "1", "--select-seeds", "1", "--select-arrivals", "300", "--skip", "20"]
_IMPROVE += ["--tail", "100", "--threads", "1"]


def _improve(folder: Path, **kw) -> subprocess.Popen[str]:
    argv = [*_IMPROVE, "--data", str(folder / "data"), "--out", str(folder / "agent.zip")]
    return subprocess.Popen(
        [sys.executable, "-m", "msj_gym.agents.improve", *argv], env=ENV, text=True, cwd=ROOT, **kw
    )


def _collected(folder: Path) -> dict[str, np.ndarray]:
    out = {}
    for r in (1, 2):
        with np.load(folder / "data" / f"round-{r}.npz") as z:
            out.update({f"{r}/{k}": z[k] for k in z.files})
    return out


def _collection_times(folder: Path, proc: subprocess.Popen[str]) -> dict[str, float]:
    """Per round, the seconds from its "round r: collecting" line to its data file, in a whole run."""
    import threading

    started: dict[str, float] = {}

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            if ": collecting " in line:
                started.setdefault(line.split(":")[0], time.monotonic())

    reader = threading.Thread(target=read)
    reader.start()
    took: dict[str, float] = {}

    def look() -> None:
        for where, at in list(started.items()):
            if where not in took and (folder / "data" / f"{where.replace(' ', '-')}.npz").exists():
                took[where] = time.monotonic() - at

    while proc.poll() is None:
        look()
        time.sleep(0.01)
    reader.join()
    look()
    return took


@pytest.mark.parametrize(
    "rounds", [("round 2",), pytest.param(("round 1", "round 2"), marks=pytest.mark.slow)]
)
def test_rollout_collection_killed_then_resumed_equals_an_uninterrupted_run(tmp_path, rounds):
    """Killed within a round's collection, then resumed: the default run kills within round 2 (round
    1's data reused, round 2's collected again); the slow twin within each round."""
    pytest.importorskip("sb3_contrib")
    ref = tmp_path / "ref"
    proc = _improve(ref, stdout=subprocess.PIPE)
    took = _collection_times(ref, proc)
    assert proc.wait() == 0 and set(took) == {"round 1", "round 2"}, took
    reference, meta = _collected(ref), json.loads((ref / "agent.json").read_text())
    for where in rounds:
        # kill within the round's collection: a quarter of the way in, or sooner where the machine is
        # slower than it was for the reference run and the kill fell after the round's file was written
        for attempt, fraction in enumerate((1 / 4, 1 / 16, 0.0)):
            folder = tmp_path / f"{where.replace(' ', '-')}-{attempt}"
            proc = _improve(folder, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
            assert proc.stdout is not None
            for line in proc.stdout:  # the round's collection starts
                if line.startswith(f"{where}: collecting"):
                    break
            time.sleep(took[where] * fraction)
            proc.kill()  # SIGKILL
            proc.wait()
            data = folder / "data"
            if not (data / f"round-{where[-1]}.npz").exists():
                break
        assert not (data / "round-2.npz").exists(), "the kill fell after round 2's collection"
        assert (data / "round-1.npz").exists() == (where == "round 2"), "the kill fell after round 1's"
        assert _improve(folder, stdout=subprocess.DEVNULL).wait() == 0  # resumes
        mine = _collected(folder)
        assert mine.keys() == reference.keys()
        for key, value in reference.items():
            np.testing.assert_array_equal(mine[key], value, err_msg=key)
        again = json.loads((folder / "agent.json").read_text())
        for key in ("decisions", "selection_mean_response_time", "val_regret", "val_regret_base"):
            assert again[key] == meta[key], key


# ------------------------------------------------------------------------------- caches that heal


@pytest.mark.parametrize("damage", ["truncated", "garbage", "empty"])
def test_an_unreadable_cached_solve_is_solved_again_with_a_note(damage, tmp_path, monkeypatch, capsys):
    pytest.importorskip("scipy")
    import msj_gym.analysis.solutions as solved_tables
    from msj_gym import load_scenario

    monkeypatch.setenv("MSJ_GYM_CACHE", str(tmp_path))
    workload = load_scenario("sf-fig2").build(load=0.5)
    monkeypatch.setattr(solved_tables, "_SOLVED", {})
    first = solved_tables.solved_table(workload, False)
    [path] = (tmp_path / "optimal").glob("*.npz")
    whole = path.read_bytes()
    path.write_bytes(
        {"truncated": whole[: len(whole) // 2], "garbage": b"PK\x03\x04" + whole[::7], "empty": b""}[damage]
    )
    monkeypatch.setattr(solved_tables, "_SOLVED", {})
    capsys.readouterr()
    again = solved_tables.solved_table(workload, False)
    notes = [line for line in capsys.readouterr().err.splitlines() if "note:" in line]
    assert len(notes) == 1 and "is unreadable" in notes[0] and "solving again" in notes[0], notes
    assert again["value"]["mean_response_time"] == first["value"]["mean_response_time"]
    np.testing.assert_array_equal(again["table"], first["table"])
    assert path.read_bytes() != b"" and len(path.read_bytes()) > 100  # written anew, whole


_SOLVE_ONCE = """
import sys, time
from pathlib import Path
import msj_gym.analysis.optimal as optimal
from msj_gym import load_scenario
from msj_gym.analysis.solutions import solved_table

T = Path(sys.argv[1])
real = optimal.solve_optimal

def counted(*args, **kw):
    with (T / "solves").open("a") as fh:
        fh.write("solve\\n")
    deadline = time.monotonic() + 60
    while not (T / "go").exists() and time.monotonic() < deadline:  # held until the test says go
        time.sleep(0.05)
    return real(*args, **kw)

optimal.solve_optimal = counted
print(solved_table(load_scenario("sf-fig2").build(load=0.5), False)["value"]["mean_response_time"].hex())
"""


def test_processes_needing_one_optimum_at_once_solve_it_once(tmp_path):
    """The second process waits for the first's solve (saying so) and reads it from the cache."""
    pytest.importorskip("scipy")
    script = tmp_path / "solve.py"
    script.write_text(_SOLVE_ONCE)
    env = {**ENV, "MSJ_GYM_CACHE": str(tmp_path / "cache")}

    def start(name: str) -> subprocess.Popen[str]:
        with (tmp_path / f"{name}.err").open("w") as err:
            return subprocess.Popen(
                [sys.executable, str(script), str(tmp_path)],
                stdout=subprocess.PIPE,
                stderr=err,
                text=True,
                env=env,
            )

    def wait_for(what, timeout: float = 120.0) -> None:
        deadline = time.monotonic() + timeout
        while not what():
            assert time.monotonic() < deadline, "timed out"
            time.sleep(0.05)

    first = start("first")
    wait_for(lambda: (tmp_path / "solves").exists())  # the first holds the solve
    second = start("second")
    wait_for(lambda: "waiting for its result" in (tmp_path / "second.err").read_text())
    (tmp_path / "go").touch()
    outs = [proc.communicate(timeout=300)[0].strip() for proc in (first, second)]
    assert [first.returncode, second.returncode] == [0, 0]
    assert (tmp_path / "solves").read_text().splitlines() == ["solve"]  # solved once, by the first
    assert outs[0] == outs[1] and float.fromhex(outs[0]) > 0
    waited = [line for line in (tmp_path / "second.err").read_text().splitlines() if "waiting" in line]
    assert waited == [
        "msj-gym: another process is solving the exact non-preemptive optimum of sf-fig2 at load 0.5; "
        "waiting for its result"
    ]


def test_an_unreadable_optima_json_is_written_again_with_a_note(tmp_path, monkeypatch, capsys):
    from msj_gym.experiments import benchmark as bm

    calls = []
    monkeypatch.setattr(
        bm, "exact_optima", lambda scenario, load: calls.append(load) or {"non-preemptive": 2.5}
    )
    config = bm.BenchmarkConfig(points=(("sf-fig2", 0.5),), seeds=2, arrivals=200)
    out = tmp_path / "bench"
    out.mkdir()
    assert bm._optima(out, config, True) == {("sf-fig2", 0.5): 2.5} and calls == [0.5]
    (out / "optima.json").write_text('{"sf-fig2@0.5#')  # cut short by a killed writer
    capsys.readouterr()
    assert bm._optima(out, config, True) == {("sf-fig2", 0.5): 2.5} and calls == [0.5, 0.5]
    assert "optima.json' is unreadable" in capsys.readouterr().err
    record = json.loads((out / "optima.json").read_text())  # healed: whole JSON again
    # a value edited in the record is never read back: the score's 100 comes from checked sources
    (out / "optima.json").write_text(json.dumps(dict.fromkeys(record, 0.001)))
    assert bm._optima(out, config, True) == {("sf-fig2", 0.5): 2.5}


def test_a_bare_checkpoint_runs_only_when_asked(tmp_path, capsys):
    pytest.importorskip("sb3_contrib")
    from msj_gym.cli import main

    ckpt = tmp_path / "bare.zip"
    shutil.copy(ROOT / "msj_gym" / "agents" / "checkpoints" / "maskable-ppo-sf-fig2-0.7.zip", ckpt)
    argv = ["leaderboard", "--policies", "fcfs", "--loads", "0.5", "--seeds", "1", "--arrivals", "300"]
    argv += ["--workers", "1", "--agent", str(ckpt), "--out", str(tmp_path / "lb")]
    assert main(argv) == 2
    assert "no metadata 'bare.json'" in capsys.readouterr().err
    assert main([*argv, "--bare-agents"]) == 0
    assert "agent:bare" in capsys.readouterr().out
