"""A user's own policy, named ``module:Class`` (or ``module:attr``), is a first-class entrant: the
docs' walk from an empty file to a leaderboard row runs as written; the policy runs natively in worker
processes and on Ray with results identical to one process; its runs are keyed by its source files;
the benchmark scores it without making it a reference; a script without a ``__main__`` guard runs
instead of breaking the pool; and bad specs are one-line errors before any work."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from msj_gym.cli import main
from msj_gym.experiments import runner
from msj_gym.experiments.leaderboard import LeaderboardConfig, run_leaderboard

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "write-your-own.md"

# A rule split over two files, as a user's grows: the kernel calls a compiled helper of another module.
HELPERS = """
from msj_gym.core.access import next_waiting, server_need, start
from msj_gym.core.jit import inline_jit


@inline_jit
def take(view, actions, n, s, free):
    if server_need(view, s) <= free:
        return start(actions, n, s), free - server_need(view, s)
    return n, free


@inline_jit
def after(view, s):
    return next_waiting(view, s)
"""

RULE = """
from msj_gym.core import Policy
from msj_gym.core.access import first_waiting, free_servers
from msj_gym.core.jit import inline_jit

from {helpers} import after, take


@inline_jit
def _rule(view, pdata, actions):
    free = free_servers(view)
    s = first_waiting(view)
    n = 0
    while s != -1:
        n, free = take(view, actions, n, s, free)
        s = after(view, s)
    return n


class Mine(Policy):
    \"\"\"First-Fit in two files.\"\"\"

    policy_id = "{policy_id}"
    reference = "a test"
    kernel = _rule


class NotAPolicy:
    pass
"""


@pytest.fixture
def own(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest):
    """A user's module (and its helper module) in a folder on sys.path, under names of this test
    alone (a module stays imported in this process); returns ``(module name, helper path)``."""
    tag = re.sub(r"\W", "_", request.node.name)
    name, helpers = f"own_{tag}", f"own_helpers_{tag}"
    folder = tmp_path / "src"
    folder.mkdir()
    (folder / f"{helpers}.py").write_text(HELPERS)
    (folder / f"{name}.py").write_text(RULE.format(helpers=helpers, policy_id=f"mine-{tag}"[:40]))
    monkeypatch.syspath_prepend(str(folder))  # worker processes inherit sys.path
    return name, folder / f"{helpers}.py"


def _rows(out: Path) -> dict[tuple[str, int], float]:
    rows = [json.loads(line) for line in (out / "runs.jsonl").read_text().splitlines()]
    return {(r["policy"], r["seed"]): r["mean_response_time"] for r in rows}


SMALL = dict(loads="0.7", seeds=2, arrivals=1500)


def test_a_policy_of_ones_own_runs_in_worker_processes_and_on_ray(own, tmp_path: Path) -> None:
    name, _ = own
    config = LeaderboardConfig(policies=(f"{name}:Mine", "first-fit"), **SMALL)
    one = run_leaderboard(config, tmp_path / "one", workers=1, progress=False)
    run_leaderboard(config, tmp_path / "two", workers=2, progress=False)
    rows = _rows(tmp_path / "one")
    assert rows == _rows(tmp_path / "two")  # the workers imported the module and ran it natively
    for seed in (0, 1):  # First-Fit written again, on the same jobs: equal on every seed
        assert rows[(f"{name}:Mine", seed)] == rows[("first-fit", seed)]
    assert {r.entrant for r in one["rows"]} == {"first-fit", one["rows"][0].entrant} | {
        r.entrant for r in one["rows"] if r.entrant.startswith("mine-")
    }
    pytest.importorskip("ray")
    run_leaderboard(config, tmp_path / "ray", backend="ray", workers=2, progress=False)
    assert _rows(tmp_path / "ray") == rows


def test_an_edited_policy_file_is_refused_never_reused(own, tmp_path: Path, monkeypatch) -> None:
    name, helpers = own
    config = LeaderboardConfig(policies=(f"{name}:Mine",), **SMALL)
    run_leaderboard(config, tmp_path / "lb", workers=1, progress=False)
    point = runner.Point("x", 0.7, "sf-fig2", f"{name}:Mine", 0, 1500)
    before = runner.code_version(point)
    # only the helper module changes (the policy's own file does not): a new process reads it anew
    helpers.write_text(helpers.read_text() + "\n# tuned\n")
    monkeypatch.setattr(runner, "_FILE_HASHES", {})
    monkeypatch.setattr(runner, "_CODE", {})
    assert runner.code_version(point) != before
    with pytest.raises(runner.StaleRuns, match=rf"the source of {name}:Mine or of msj_gym changed"):
        run_leaderboard(config, tmp_path / "lb", workers=1, progress=False)


def test_the_benchmark_scores_it_and_never_takes_it_as_a_reference(own, tmp_path: Path) -> None:
    from msj_gym.experiments import benchmark as bm
    from tests.experiments.test_benchmark import _patch

    name, _ = own
    with pytest.MonkeyPatch.context() as mp:
        _patch(mp)
        alone = bm.run_benchmark(bm.BenchmarkConfig(seeds=2, arrivals=2000), tmp_path / "b", progress=False)
        config = bm.BenchmarkConfig(seeds=2, arrivals=2000, policies=(f"{name}:Mine",))
        report = bm.run_benchmark(config, tmp_path / "b", workers=1, progress=False)
    label = next(r.entrant for r in report["points"] if r.entrant.startswith("mine-"))
    for point in report["points"]:
        if point.entrant == label:
            assert point.kind == "user, non-preemptive" and not bm._heuristic(point.kind)
            ff = next(
                r
                for r in report["points"]
                if (r.scenario, r.load, r.entrant) == (point.scenario, point.load, "first-fit")
            )
            assert point.scores == ff.scores
    # the scale is the baselines' alone
    assert [(s.low_ref, s.high_ref, s.low, s.high) for s in report["scales"]] == [
        (s.low_ref, s.high_ref, s.low, s.high) for s in alone["scales"]
    ]


SCRIPT = """
from pathlib import Path

from msj_gym.experiments.leaderboard import LeaderboardConfig, run_leaderboard


def rank():
    config = LeaderboardConfig(policies=("{spec}", "first-fit"), loads="0.7", seeds=2, arrivals=1000)
    report = run_leaderboard(config, Path("out"), workers=2, progress=False)
    print(sorted({{r.entrant for r in report["rows"]}}))


{call}
"""


@pytest.mark.parametrize("kind", ["unguarded", "guarded"])
def test_a_script_without_a_main_guard_runs_in_one_process(own, tmp_path: Path, kind: str) -> None:
    name, _ = own
    # the call is made from a function, as scripts often do: what counts is where the script calls it
    call = "if __name__ == '__main__':\n    rank()" if kind == "guarded" else "rank()"
    script = tmp_path / f"{kind}.py"
    script.write_text(SCRIPT.format(spec=f"{name}:Mine", call=call))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(tmp_path / "src")])}
    out = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-3000:]
    assert "first-fit" in out.stdout and "mine-" in out.stdout
    note = "running in this process only"
    assert (note in out.stderr) == (kind == "unguarded"), out.stderr
    assert "BrokenProcessPool" not in out.stderr


def test_no_script_to_run_again_under_pytest() -> None:
    assert runner.unguarded_script() is None  # pytest's own entry point is guarded
    assert runner.local_workers(4) == 4


def test_code_run_in_the_main_namespace_from_elsewhere_is_no_script_call(tmp_path: Path) -> None:
    # a notebook: the kernel's launcher script is guarded, the cells' code has file names of its own
    cell = "from msj_gym.experiments.runner import unguarded_script\nprint(unguarded_script())\n"
    script = tmp_path / "launcher.py"
    script.write_text(
        "import sys\n\n\ndef run(cell):\n"
        "    exec(compile(cell, '/tmp/cell-1.py', 'exec'), vars(sys.modules['__main__']))\n"
        f"\n\nif __name__ == '__main__':\n    run({cell!r})\n    print('-')\n"
        f"run({cell!r})\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["None", "-", str(script.resolve())]  # guarded, then unguarded


def _doc_blocks() -> list[tuple[str, str]]:
    return re.findall(r"```(python|bash)\n(.*?)```", DOC.read_text(), re.S)


def test_the_docs_walk_runs_end_to_end(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    """Every file and Python block of docs/write-your-own.md, and its commands naming my_policy, run
    as written in an empty folder (the CLI finds my_policy there, with no PYTHONPATH)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", os.getcwd())])
    for mod in ("my_policy", "my_agent"):
        monkeypatch.delitem(sys.modules, mod, raising=False)
    files: dict[str, str] = {}
    snippets: list[str] = []
    commands: list[str] = []
    for lang, code in _doc_blocks():
        first = code.splitlines()[0]
        if lang == "python" and re.fullmatch(r"# (\w+\.py)( \(continued\))?", first):
            fname = first.split()[1]
            files[fname] = files.get(fname, "") + code
        elif lang == "python":
            snippets.append(code)
        else:
            commands += [line for line in code.splitlines() if line.startswith("msj-gym ")]
    text = DOC.read_text().replace("\n", " ")
    commands += [c for c in re.findall(r"`(msj-gym simulate [^`]*)`", text) if "my_policy:" in c]
    assert set(files) == {"my_policy.py", "my_agent.py"} and len(snippets) >= 3 and len(commands) >= 3
    for fname, code in files.items():
        (tmp_path / fname).write_text(code)

    for command in commands:
        assert main(shlex.split(command)[1:]) == 0, command
    rows = _rows(tmp_path / "leaderboard")
    assert len(rows) == 15  # 3 entrants x 5 seeds
    for seed in range(5):
        assert rows[("my_policy:ScanFit", seed)] == rows[("first-fit", seed)]
    capsys.readouterr()

    sys.path.append(str(tmp_path))  # what running a script in this folder gives it
    for code in snippets:
        exec(compile(code, str(DOC), "exec"), {"__name__": "docs_example"})
    printed = capsys.readouterr().out
    assert "scan-fit" in printed  # the Python route's table
    agent, msf, mine = (float(x) for x in printed.strip().splitlines()[-3:])
    assert agent == msf  # LastClassFirst makes MSF's decisions on sf-fig2
    assert mine > 0
    assert len(_rows(tmp_path / "leaderboard")) == 15  # the Python route reused the runs


BAD = [
    (
        ["leaderboard", "--policies", "no_such_module_x:P"],
        ["--policies", "no_such_module_x:P", "cannot import"],
    ),
    (["leaderboard", "--policies", "{own}:NotAPolicy"], ["--policies", "expected a Policy class"]),
    (["leaderboard", "--policies", "{own}:Missing"], ["--policies", "Missing", "cannot import"]),
    (["simulate", "--scenario", "sf-fig2", "--policy", "{own}:Missing"], ["--policy", "Missing"]),
    (
        ["simulate", "--scenario", "sf-fig2", "--policy", "{own}:Mine", "--policy-param", "x=1"],
        ["--policy", "unknown parameter", "'x'"],
    ),
    (["benchmark", "--policies", "first-fit"], ["--policies", "module:Class", "'first-fit'"]),
    (["benchmark", "--policies", "no_such_module_x:P"], ["--policies", "cannot import"]),
]


@pytest.mark.parametrize(("argv", "needles"), BAD, ids=[" ".join(a[:3]) for a, _ in BAD])
def test_bad_specs_are_one_line_before_any_work(own, tmp_path: Path, argv, needles, capsys) -> None:
    name, _ = own
    argv = [a.replace("{own}", name) for a in argv]
    if argv[0] != "simulate":
        argv += ["--out", str(tmp_path / "out")]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("msj-gym: error: "), err
    assert all(n in err[0] for n in needles), err[0]
    assert not (tmp_path / "out").exists()


def test_an_id_taken_by_another_entrant_is_refused(own, tmp_path: Path, capsys) -> None:
    name, _ = own
    module = sys.modules.get(name) or __import__(name)
    (Path(module.__file__).parent / f"{name}_twin.py").write_text(
        textwrap.dedent(
            f"""
            from {name} import Mine


            class Twin(Mine):
                \"\"\"Takes a baseline's id.\"\"\"

                policy_id = "first-fit"
            """
        )
    )
    argv = ["leaderboard", "--policies", f"{name}_twin:Twin,first-fit", "--out", str(tmp_path / "out")]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "policy_id 'first-fit' of another entrant" in err and not (tmp_path / "out").exists()
