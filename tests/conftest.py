"""Shared helpers. Statistical checks compare against theory with a 99 % confidence interval (fixed up
front for every check: with a dozen checks, 95 % intervals would fail one by chance about half of the
time)."""

from __future__ import annotations

import math
import os
from pathlib import Path

import pytest

from msj_gym.metrics.stats import student_t_quantile

# torch's intra-op threads: the tests' networks are tiny, and under pytest-xdist every worker's torch
# would start one thread per core, each spinning while the other workers hold the cores (a rehearsal
# test took 14 times its CPU time so). Set before any test imports torch; subprocesses inherit it.
os.environ.setdefault("OMP_NUM_THREADS", "1")

SHARED = Path(__file__).resolve().parents[1].parent / "shared"


# The heaviest files first (what imports torch and trains or plans, then the subprocess-heavy ones):
# the workers of pytest-xdist (-n auto in pyproject.toml) take files in this order, so that no heavy
# file is left for the end, when one worker would run it alone. The other worker shows progress
# meanwhile. Without xdist (-p no:xdist) they run last instead, so that progress shows at once.
HEAVY = ("tests/agents/", "tests/experiments/", "tests/test_faults.py", "tests/integrations/", "tests/env/")


def _heavy(item: pytest.Item) -> int:
    return next((i for i, prefix in enumerate(HEAVY) if item.nodeid.startswith(prefix)), len(HEAVY))


def _in_xdist_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if _in_xdist_worker(config):
        items.sort(key=_heavy)  # stable: the usual order within each group
    else:
        items.sort(key=lambda item: _heavy(item) < len(HEAVY))
    # the type check runs beside the other tests, on the core they leave idle (see tests/test_types.py);
    # under xdist every worker collects every test, and the test runs mypy itself where it lands
    if _in_xdist_worker(config):
        return
    if any(item.nodeid.endswith("test_types.py::test_mypy_public_api") for item in items):
        from tests.test_types import start_mypy

        config._msj_gym_mypy = start_mypy()  # type: ignore[attr-defined]


def pytest_unconfigure(config: pytest.Config) -> None:
    started = getattr(config, "_msj_gym_mypy", None)
    if started is not None:
        import shutil

        process, folder = started
        if process.poll() is None:  # a session that ended before the type check's test
            process.kill()
            process.wait()
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(autouse=True, scope="session")
def _sb3_logs_in_a_temporary_folder(tmp_path_factory: pytest.TempPathFactory):
    """SB3 makes a log folder in the system's temp directory on every ``learn`` whose model has no
    logger of its own (tests that train a model directly): keep those in pytest's temporary folders,
    subprocesses included."""
    mp = pytest.MonkeyPatch()
    mp.setenv("SB3_LOGDIR", str(tmp_path_factory.mktemp("sb3-logs")))
    yield
    mp.undo()


def trace_records(policy, num_servers, times, needs, durations) -> dict:
    """Per-job records of ``policy`` (a Policy) on a hand-made job stream, every job measured, with
    the engine's invariants checked after every event."""
    from msj_gym import Simulator
    from msj_gym.workloads import TraceWorkload

    sim = Simulator(
        TraceWorkload(num_servers, times, needs, durations),
        policy,
        seed=0,
        num_arrivals=len(times),
        warmup=0,
        record_jobs=True,
        debug=True,
    )
    sim.run()
    return sim.records()


def ci99(half_width95: float, batches: int = 30) -> float:
    """Widen a 95 % batch-means half-width (``batches`` batches) to 99 %."""
    return half_width95 * student_t_quantile(0.995, batches - 1) / student_t_quantile(0.975, batches - 1)


def assert_within(value: float, reference: float, half_width95: float, what: str) -> None:
    hw = ci99(half_width95)
    assert math.isfinite(value), f"{what}: non-finite estimate {value}"
    assert abs(value - reference) <= hw, (
        f"{what}: simulated {value:.5g} vs theory {reference:.5g}, |diff| {abs(value - reference):.3g} "
        f"> 99% half-width {hw:.3g}"
    )


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    if not SHARED.is_dir():
        pytest.skip(f"shared data folder not found at {SHARED}")
    return SHARED
