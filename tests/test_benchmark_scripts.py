"""Every script in ``benchmarks/`` runs to its end with tiny arguments, so that a change elsewhere does
not leave one broken unnoticed (two were, until 2026-11-27). Slow (5 to 60 s each, compiling and
loading networks): run with ``pytest -m slow tests/test_benchmark_scripts.py``."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

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
