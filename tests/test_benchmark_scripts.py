"""Every script in ``benchmarks/`` runs to its end with tiny arguments, so that a change elsewhere does
not leave one broken unnoticed (two were, until 2026-11-27). Slow (5 to 60 s each, compiling and
loading networks): run with ``pytest -m slow tests/test_benchmark_scripts.py``. The off-distribution
script's refusals and its choice of reference are checked in every run (they start nothing)."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = {
    "bench_engine.py": ["--arrivals", "2000", "--repeats", "1"],
    "bench_env.py": ["--steps", "500", "--repeats", "1", "--num-envs", "2"],
    "bench_rollout.py": ["--decisions", "50", "--repeats", "1"],
    "bench_generalist_rounds.py": ["--systems", "2", "--decisions", "40", "--repeats", "1"],
    "bench_optimal.py": ["--skip-large", "--repeats", "1"],
    "bench_vector_env.py": [
        "--steps",
        "2000",
        "--repeats",
        "1",
        "--num-envs",
        "4",
        "--train-timesteps",
        "256",
        "--cases",
        "classes",
    ],
    "bench_reproduce.py": ["--figures", "004-fig1", "--arrivals", "2000", "--workers", "1", "--fresh"],
    "rlscheduler_table.py": ["--count", "2", "--length", "64"],
    "generalist_off_distribution.py": [
        "--points",
        "bs-fig1-k32-0.876",
        "--seeds",
        "2",
        "--arrivals",
        "300",
        "--agent",
        "generalist",
    ],
    "generalist_selection.py": ["--systems", "3", "--truth-seeds", "1", "--truth-arrivals", "500"],
    "gap_closed.py": [
        "--agent",
        "msj_gym.env:RandomAgent",
        "--points",
        "sf-fig2:0.5",
        "--seeds",
        "1",
        "--arrivals",
        "300",
    ],
    "bench_planner.py": ["--decisions", "40", "--repeats", "1"],
    "code_figures.py": ["--list", "--pairs"],
}
# RLScheduler's simulator is not a dependency: the speed benchmark needs a checkout of its repository
REFERENCE = os.environ.get("MSJ_GYM_RLSCHEDULER_CHECKOUT")


def _run(script: str, args: list[str], tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / script), *args],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert out.returncode == 0, f"{script}: {out.stderr[-2000:]}"


def test_every_script_is_listed() -> None:
    listed = {*SCRIPTS, "bench_rlscheduler_speed.py"}
    assert {p.name for p in (ROOT / "benchmarks").glob("*.py")} == listed


@pytest.mark.slow
@pytest.mark.parametrize("script", sorted(SCRIPTS))
def test_the_script_runs(script: str, tmp_path: Path) -> None:
    if script == "rlscheduler_table.py" and not _traces_found():
        pytest.skip(
            "needs the Parallel Workloads Archive logs of ../shared/data/traces (or $MSJ_GYM_TRACE_DIR)"
        )
    _run(script, SCRIPTS[script], tmp_path)


@pytest.mark.slow
@pytest.mark.skipif(
    REFERENCE is None,
    reason="needs a checkout of DIR-LAB/deep-batch-scheduler named by $MSJ_GYM_RLSCHEDULER_CHECKOUT",
)
def test_the_rlscheduler_speed_script_runs(tmp_path: Path) -> None:
    if not _traces_found():
        pytest.skip(
            "needs the Parallel Workloads Archive logs of ../shared/data/traces (or $MSJ_GYM_TRACE_DIR)"
        )
    _run("bench_rlscheduler_speed.py", ["--reference", str(REFERENCE), "--count", "2"], tmp_path)


def _traces_found() -> bool:
    from msj_gym.workloads.swf import find_trace

    return find_trace("SDSC-SP2-1998-4.2-cln.swf.gz").is_file()


def _script_module(name: str) -> Any:
    spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _off_distribution() -> Any:
    return _script_module("generalist_off_distribution")


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["--agent", "nope"], "--agent 'nope': no such file, not a shipped agent"),
        (["--agent", "maskable-ppo-sf-fig2-0.7"], "has no simulated selection"),
        (["--systems", "0"], "--systems: expected a positive integer, got 0"),
        (["--truth-seeds", "-1"], "--truth-seeds: expected a positive integer, got -1"),
        (["--truth-arrivals", "x"], "--truth-arrivals: invalid int value: 'x'"),
        (["--seed", "-3"], "--seed: expected a non-negative integer, got -3"),
    ],
)
def test_the_selection_script_refuses_bad_input(argv: list[str], needle: str) -> None:
    pytest.importorskip("sb3_contrib", reason="the generalists need the rl extra (sb3-contrib, torch)")
    with pytest.raises(ValueError, match=re.escape(needle)):
        _script_module("generalist_selection").main(argv)


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["--point", "one-or-all"], "--point: expected SCENARIO:LOAD or SCENARIO:LOAD:K, got 'one-or-all'"),
        (["--point", "one-or-all:0.8:x"], "got 'one-or-all:0.8:x'"),
        (["--point", "one-or-all:-1"], "--point: expected a load in (0, 1) and a positive k, got 'one-or"),
        (["--point", "sf-fig2:1.5"], "--point: expected a load in (0, 1) and a positive k, got 'sf-fig2:1"),
        (["--point", "sf-fig2:0.7:16:3"], "--point: expected a load in (0, 1) and a positive k, got"),
        (["--point", "sf-fig2:0.7:0"], "--point: expected a load in (0, 1) and a positive k, got"),
        (["--point", "nope:0.5"], "--point: 'nope' at load 0.5: unknown scenario 'nope'"),
        (["--point", "nope:0.5:16"], "another k needs a built-in scenario or a .toml file, got 'nope'"),
        (["--point", "four-class:0.7:4"], "--point: four-class with num_servers = 4 at load 0.7:"),
        (["--points", "zz"], "--points: expected labels among sf-fig2-0.6"),
        (["--seeds", "x"], "--seeds: expected a count"),
        (["--arrivals", "5"], "--arrivals: expected an integer >= 100, got 5"),
        (["--workers", "0"], "--workers: expected a positive integer, got 0"),
    ],
)
def test_the_off_distribution_script_refuses_bad_input_before_writing(
    argv: list[str], needle: str, tmp_path: Path
) -> None:
    pytest.importorskip("sb3_contrib", reason="the generalists need the rl extra (sb3-contrib, torch)")
    out = tmp_path / "out"
    with pytest.raises(ValueError, match=re.escape(needle)):
        _off_distribution().main([*argv, "--out", str(out)])
    assert not out.exists()


def test_the_off_distribution_script_compares_with_the_best_heuristic_of_the_agents_kind() -> None:
    ratios = _off_distribution().ratios

    def run(series: str, seed: int, mean: float, stable: bool = True) -> dict:
        return {"series": series, "seed": seed, "mean_response_time": mean, "stable": stable}

    runs = [run("agent:a", s, m) for s, m in ((1, 2.0), (2, 3.0))]
    runs += [run("ff", s, m) for s, m in ((1, 4.0), (2, 4.0))]  # stable, size-oblivious
    runs += [run("easy", s, m) for s, m in ((1, 1.0), (2, 2.0))]  # better, but reads sizes
    runs += [run("nmsr", 1, 1.0), run("nmsr", 2, 1.0, stable=False)]  # better, flagged on one seed
    runs += [run("mdp-optimal", s, 0.5) for s in (1, 2)]  # not a heuristic
    aware = {"ff": False, "easy": True, "nmsr": False, "mdp-optimal": False}
    ref, r, stable = ratios(runs, "agent:a", False, aware)
    assert ref == "ff" and r.tolist() == [0.5, 0.75] and stable
    ref, r, _ = ratios(runs, "agent:a", True, aware)
    assert ref == "easy" and r.tolist() == [2.0, 1.5]
    assert ratios(runs, "agent:a", False, {"nmsr": False}) is None
