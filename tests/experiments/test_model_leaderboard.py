"""The leaderboards of the moldable loss system and of compatibility graphs, through the command line:
tables, files, resuming, stale inputs refused, reference rows, bad input."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest

from msj_gym.cli import main
from msj_gym.experiments.tracks import track
from msj_gym.experiments.tracks.compatibility import compat_workload


def reference_rows(model: str, scenario: str, x: float) -> list:
    """A point's reference rows, as its model's track gives them."""
    on = track(model)
    return on.references(on.default_metric, scenario, x, None)


def _rows(path: Path) -> int:
    return len(path.read_text().splitlines())


def test_moldable_leaderboard_end_to_end(tmp_path: Path, capsys, monkeypatch) -> None:
    out = tmp_path / "lb"
    argv = ["leaderboard", "--scenario", "002-sub-linear-mean-field", "--loads", "20,40", "--seeds", "2"]
    argv += ["--arrivals", "2000", "--workers", "1", "--out", str(out)]
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert "002-sub-linear-mean-field  n = 20 (lam = 0.8)" in text and "ranked by cost" in text
    assert re.search(r"^-\s+LP optimum \(n -> infinity\)\s+0\s+0\.375\s+0\.375$", text, re.M)
    for pid in ("moldable-p-scheme", "moldable-greedy", "moldable-reserved"):
        assert pid in text
    names = ("leaderboard.md", "leaderboard.csv", "leaderboard-002-sub-linear-mean-field.png", "runs.jsonl")
    assert all((out / n).is_file() for n in names)
    assert _rows(out / "runs.jsonl") == 3 * 2 * 2
    # the same command again: every run reused, the same table
    assert main(argv) == 0
    assert capsys.readouterr().out == text and _rows(out / "runs.jsonl") == 12
    # another regime behind the same name: other content, refused before anything runs
    from msj_gym.moldable import systems

    monkeypatch.setitem(systems.REGIMES, "mean-field", (0.0, 0.25))
    before = (out / "leaderboard.md").read_text()
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "scenario content" in err and "holds runs of" in err
    assert _rows(out / "runs.jsonl") == 12 and (out / "leaderboard.md").read_text() == before


def test_compatibility_leaderboard_end_to_end(tmp_path: Path, capsys, monkeypatch) -> None:
    out = tmp_path / "lb"
    argv = ["leaderboard", "--scenario", "003-random-2?sizes=bimodal", "--loads", "0.5,0.8", "--seeds", "2"]
    argv += ["--arrivals", "2000", "--workers", "1", "--out", str(out)]
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert "003-random-2?sizes=bimodal  load 0.8  (2 seeds x 2000 arrivals, 200 warm-up)" in text
    assert "balanced fairness, random assignment (exact)" in text
    lines = [line for line in text.splitlines() if line.startswith("1 ")]
    assert lines and all("compat-least-loaded" in line for line in lines)  # the baseline leads
    assert (out / "leaderboard-003-random-2-sizes-bimodal.png").is_file()
    assert _rows(out / "runs.jsonl") == 3 * 2 * 2
    assert main(argv) == 0
    assert capsys.readouterr().out == text and _rows(out / "runs.jsonl") == 12
    # a changed system behind the same name (99 servers): refused, nothing rerun
    from msj_gym.experiments import runner
    from msj_gym.workloads import compat

    desc, _ = compat.COMPAT_SCENARIOS["003-random-2"]
    monkeypatch.setitem(
        compat.COMPAT_SCENARIOS,
        "003-random-2",
        (desc, lambda load, distribution: compat._random_d(99, 2, load, distribution)),
    )
    monkeypatch.setattr(runner, "_CONTENT", {})
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "scenario content" in err
    assert _rows(out / "runs.jsonl") == 12


def _bf(scenario: str, rho: float):
    """The balanced-fairness reference row of a compatibility point."""
    rows = [
        r for r in reference_rows("compatibility", scenario, rho) if r.entrant.startswith("balanced fairness")
    ]
    assert len(rows) == 1
    return rows[0]


def test_reference_rows_are_the_closed_forms() -> None:
    from msj_gym.analysis.balanced_fairness import random_assignment_performance, tree_service_rates

    for rho in (0.5, 0.8):
        # Fig. 1: three unit servers, lam_1 = lam_2 = 3 rho / 2; closed forms (10)-(11), sigma = 1
        lam = 3 * rho / 2
        g1, g2 = tree_service_rates(1.0, 1.0, 1.0, lam, lam)
        row = _bf("003-tree-symmetric", rho)
        assert row.values["T.class1"][0] == pytest.approx(1 / g1, rel=1e-9)
        assert row.values["T.class2"][0] == pytest.approx(1 / g2, rel=1e-9)
        # Fig. 2: mu_2 = 0
        lam = 2 * rho / 2
        g1, g2 = tree_service_rates(1.0, 0.0, 1.0, lam, lam)
        row = _bf("003-tree-asymmetric", rho)
        assert row.values["T.class1"][0] == pytest.approx(1 / g1, rel=1e-9)
        assert row.values["T.class2"][0] == pytest.approx(1 / g2, rel=1e-9)
        mean = (g1**-1 + g2**-1) / 2
        assert row.values["mean_response_time"][0] == pytest.approx(mean, rel=1e-9)
        # random assignment, S = 100, d = 2: the exact symmetric reduction
        perf = random_assignment_performance(100, 2, 100 * rho)
        row = _bf("003-random-2?sizes=zipf", rho)
        zipf = compat_workload("003-random-2?sizes=zipf", rho, "zipf").mean_size
        want = random_assignment_performance(100, 2, 100 * rho / zipf, mean_size=zipf).mean_delay[0]
        assert row.values["mean_response_time"][0] == pytest.approx(want, rel=1e-12)
        assert perf.mean_delay[0] < want  # longer jobs: longer delays at the same load
    # a lower bound leads the rows: the size-oblivious one where sizes are exponential, else the
    # service-time one (sigma over the d servers' capacity)
    from msj_gym.analysis.compat_bound import size_oblivious_bound
    from msj_gym.experiments.tracks.compatibility import BOUND_LABELS

    first = reference_rows("compatibility", "003-random-3", 0.85)[0]
    assert first.entrant == BOUND_LABELS[0]
    want = size_oblivious_bound(compat_workload("003-random-3", 0.85, "exponential")).mean_response_time
    assert first.values["mean_response_time"][0] == want
    rows = reference_rows("compatibility", "003-random-2?sizes=zipf", 0.8)
    assert [r.entrant for r in rows] == [BOUND_LABELS[1], "balanced fairness, random assignment (exact)"]
    zipf = compat_workload("003-random-2?sizes=zipf", 0.8, "zipf").mean_size
    assert rows[0].values["mean_response_time"][0] == pytest.approx(zipf / 2, rel=1e-12)
    # moldable: T* of Theorem 1; linear speed-up: 1 / s(d) = 0.2 in every regime
    row = reference_rows("moldable", "002-linear-halfin-whitt", 1000.0)[0]
    assert row.values["mean_execution_time"][0] == pytest.approx(0.2) and row.values["blocking"][0] == 0.0
    row = reference_rows("moldable", "002-sub-linear-mean-field", 400.0)[0]
    assert row.values["cost"][0] == pytest.approx(0.375)  # lam = 0.8: x*_3, x*_4 of case (iii)
    assert not math.isfinite(row.values["cost"][1])


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--scenario", "002-nonesuch"], "unknown scenario '002-nonesuch'"),
        (
            ["--scenario", "002-linear-mean-field", "--loads", "0.5"],
            "--loads '0.5': a moldable system sweeps",
        ),
        (["--scenario", "002-linear-mean-field", "--loads", "10,200000"], "got 200000"),
        (["--scenario", "003-random-2", "--loads", "0.5,1.2"], "--loads '0.5,1.2': a compatibility system's"),
        (
            ["--scenario", "002-linear-mean-field", "--policies", "fcfs"],
            "--policies 'fcfs': defined on the msj",
        ),
        (
            ["--scenario", "003-random-2", "--policies", "moldable-greedy"],
            "--policies 'moldable-greedy': defined",
        ),
        (["--scenario", "003-random-2", "--scenario", "sf-fig2"], "one leaderboard ranks one model's"),
        (["--scenario", "003-tree-symmetric", "--policies", "compat-least-loaded"], "nothing to assign"),
        (["--scenario", "003-random-2?sizes=pareto"], "unknown size law 'pareto'"),
        (
            ["--scenario", "003-random-2", "--agent", "rollout-sf-fig2-0.7"],
            "--agent 'rollout-sf-fig2-0.7': env_id 'MSJ-v0' acts on the msj model, not on the compatibility",
        ),
        (
            ["--scenario", "002-linear-mean-field", "--agent", "maskable-ppo-sf-fig2-0.7"],
            "env_id 'MSJ-v0' acts on the msj model, not on the moldable model of scenario",
        ),
        (["--scenario", "002-linear-mean-field", "--agent", "nonesuch"], "--agent 'nonesuch': no such file"),
        (
            ["--scenario", "003-tree-symmetric", "--agent", "ppo-assign-random-d"],
            "--agent 'ppo-assign-random-d': its env does not build on scenario '003-tree-symmetric' at load",
        ),
        (
            ["--scenario", "002-linear-mean-field", "--agent", "ppo-assign-random-d"],
            "env_id 'CompatAssign-v0' acts on the compatibility model, not on the moldable model",
        ),
        (
            [
                "--scenario",
                "002-linear-mean-field",
                "--agent",
                "msj_gym.baselines:LeastLoadedAssignmentAgent",
            ],
            "LeastLoadedAssignmentAgent': does not act in MSJMoldable-v0 on scenario",
        ),
        (["--scenario", "002-linear-mean-field", "--metric", "p_wait"], "--metric 'p_wait': the moldable"),
    ],
)
def test_bad_input_is_one_line_exit_2_and_writes_nothing(tmp_path: Path, capsys, argv, message) -> None:
    out = tmp_path / "lb"
    assert main(["leaderboard", *argv, "--workers", "1", "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("msj-gym: error: ") and message in err
    assert not out.exists()


# ---------------------------------------------------------------------------------------------------------
# Agents beside the policies


def _runs(out: Path) -> list[dict]:
    import json

    return [json.loads(line) for line in (out / "runs.jsonl").read_text().splitlines()]


def _by_entrant(out: Path, metric: str) -> dict[str, dict[tuple[float, int], float]]:
    got: dict[str, dict[tuple[float, int], float]] = {}
    for row in _runs(out):
        got.setdefault(row["series"], {})[(row["x"], row["seed"])] = row[metric]
    return got


def test_moldable_agent_that_plays_the_p_scheme_scores_its_values(
    tmp_path: Path, capsys, monkeypatch
) -> None:
    """An agent playing the p-scheme through MSJMoldable-v0 gets exactly the native scheme's blocking
    and execution time, seed by seed (the same job stream per seed); a rerun resumes; an edited agent
    module is other code, refused before any run."""
    mod = tmp_path / "moldable_agents_here.py"
    mod.write_text(
        "from msj_gym.env.moldable_env import MoldablePolicyAgent\n\n\n"
        "def p_scheme(env):\n    return MoldablePolicyAgent('moldable-p-scheme', env)\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    out = tmp_path / "lb"
    argv = ["leaderboard", "--scenario", "002-sub-linear-halfin-whitt", "--loads", "20,40", "--seeds", "2"]
    argv += ["--arrivals", "1000", "--policies", "moldable-p-scheme,moldable-greedy"]
    argv += ["--agent", "moldable_agents_here:p_scheme", "--workers", "1", "--out", str(out)]
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert "agent:p_scheme" in text
    for metric in ("blocking", "mean_execution_time"):
        got = _by_entrant(out, metric)
        assert got["agent:p_scheme"] == got["moldable-p-scheme"] != got["moldable-greedy"]
    rows = [r for r in text.splitlines() if "agent:p_scheme" in r or r.startswith(("1 ", "2 ", "3 "))]
    assert any("1 ± 0" in r for r in rows if "agent:p_scheme" in r or "moldable-p-scheme" in r)
    assert _rows(out / "runs.jsonl") == 3 * 2 * 2
    assert main(argv) == 0  # resumed: every run reused
    assert capsys.readouterr().out == text and _rows(out / "runs.jsonl") == 12
    from msj_gym.experiments import runner

    mod.write_text(mod.read_text() + "# edited\n")
    monkeypatch.setattr(runner, "_FILE_HASHES", {})  # a new process reads the files afresh
    monkeypatch.setattr(runner, "_CODE", {})
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "holds runs of" in err and "code" in err
    assert _rows(out / "runs.jsonl") == 12


def test_compatibility_agents_that_play_policies_score_their_values(tmp_path: Path, capsys) -> None:
    """Through CompatAssign-v0, the least-loaded assignment and the workload's own random draws give
    exactly compat-least-loaded's and compat-fcfs's response times, seed by seed."""
    out = tmp_path / "lb"
    argv = [
        "leaderboard",
        "--scenario",
        "003-random-2",
        "--loads",
        "0.6",
        "--seeds",
        "2",
        "--arrivals",
        "500",
    ]
    argv += ["--policies", "compat-fcfs,compat-least-loaded", "--workers", "1", "--out", str(out)]
    argv += ["--agent", "msj_gym.baselines:LeastLoadedAssignmentAgent"]
    argv += ["--agent", "msj_gym.env.compat_env:DrawnAssignmentAgent"]
    assert main(argv) == 0
    text = capsys.readouterr().out
    got = _by_entrant(out, "mean_response_time")
    assert got["agent:LeastLoadedAssignmentAgent"] == got["compat-least-loaded"]
    assert got["agent:DrawnAssignmentAgent"] == got["compat-fcfs"] != got["compat-least-loaded"]
    line = next(r for r in text.splitlines() if "agent:DrawnAssignmentAgent" in r)
    assert " no " in line  # not preemptive: the env schedules by FCFS


def test_agent_files_key_a_shipped_checkpoint_by_its_bytes() -> None:
    from msj_gym.experiments.agents import agent_files, shipped_agents
    from msj_gym.experiments.runner import Point, _code_files

    name = "rollout-sf-fig2-0.7"
    zip_path = shipped_agents()[name]
    files = agent_files(name)
    assert files[:2] == (str(zip_path.resolve()), str(zip_path.with_suffix(".json").resolve()))
    assert [Path(f).name for f in files[2:]] == ["checkpoint.py"]  # how msj_gym reads its network
    point = Point("a", 0.5, "002-linear-mean-field", "agent:x", 0, 100, {}, agent=name)
    assert str(zip_path.resolve()) in _code_files(point, None)
    assert agent_files("msj_gym.baselines:LeastLoadedAssignmentAgent")[0].endswith("__init__.py")
