"""The self-tuning HPC scheduler: it reads no run time before the job finishes, learns each finished
job's run time exactly, ranks as the heuristics do when it has one rule, and passes the policy checks
(bounds, determinism, the same result through MSJ-v0)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from msj_gym import Simulator
from msj_gym.baselines import make_policy
from msj_gym.baselines import self_tuning as st
from msj_gym.testing import check_policy
from msj_gym.workloads.trace import TraceWorkload

K = 16


def _jobs(n: int = 400, seed: int = 5, exact: bool = False) -> dict[str, np.ndarray]:
    """A congested log on 16 processors whose jobs come from a few templates (processors, requested
    time), each with its own run times, as users' scripts do."""
    rng = np.random.default_rng(seed)
    templates = [
        (1, 600.0, 40.0),
        (2, 3600.0, 900.0),
        (4, 64800.0, 10.0),
        (8, 7200.0, 3000.0),
        (16, 900.0, 300.0),
    ]
    pick = rng.integers(0, len(templates), size=n)
    need = np.array([templates[i][0] for i in pick])
    request = np.array([templates[i][1] for i in pick])
    run = np.array([min(templates[i][2] * rng.lognormal(0.0, 0.3), templates[i][1]) for i in pick]).round()
    run = np.maximum(run, 1.0)
    arrival = np.cumsum(rng.exponential(130.0, size=n)).round() + 1.0
    return {"arrival": arrival, "need": need, "run": run, "request": run.copy() if exact else request}


def _trace(jobs: dict[str, np.ndarray], run: np.ndarray | None = None) -> TraceWorkload:
    return TraceWorkload(
        K,
        jobs["arrival"],
        jobs["need"],
        jobs["run"] if run is None else run,
        name="templates",
        requested_time=jobs["request"],
    )


def _lengthened(run: np.ndarray) -> np.ndarray:
    """Run times made longer, by unequal amounts, so that their order changes too."""
    return run + 7.0 + 3600.0 * (np.arange(run.size) % 3)


def _records(policy_id: str, wl: TraceWorkload, **params) -> dict[str, np.ndarray]:
    sim = Simulator(wl, make_policy(policy_id, **params), num_arrivals=wl.arrival_time.size, warmup=0,
                    record_jobs=True)  # fmt: skip
    sim.run()
    return sim.records()


@pytest.mark.parametrize("policy_id", ["self-tuning", "self-tuning-easy"])
def test_it_reads_no_run_time_before_the_job_finishes(policy_id) -> None:
    """Lengthen the run time of every job that has not finished by time T: every decision made by T
    stays as it was (a scheduler that read a run time earlier would decide otherwise), while later
    ones change."""
    jobs = _jobs()
    base = _records(policy_id, _trace(jobs))
    cut = float(np.median(base["departure_time"]))
    later = base["departure_time"] > cut
    longer = np.where(later, _lengthened(jobs["run"]), jobs["run"])  # ends after T in the other run too
    other = _records(policy_id, _trace(jobs, longer))
    decided = base["first_start"] <= cut
    assert 50 < decided.sum() < len(decided)
    assert np.array_equal(other["first_start"][decided], base["first_start"][decided])
    assert not np.array_equal(other["first_start"][~decided], base["first_start"][~decided])


def test_the_check_can_fail() -> None:
    """The same check on a scheduler that reads run times (SJF with EASY on exact run times) sees
    decisions before T change: the check has the power to fail."""
    jobs = _jobs()
    base = _records("sjf-easy", _trace(jobs), estimates="exact")
    cut = float(np.median(base["departure_time"]))
    longer = np.where(base["departure_time"] > cut, _lengthened(jobs["run"]), jobs["run"])
    other = _records("sjf-easy", _trace(jobs, longer), estimates="exact")
    decided = base["first_start"] <= cut
    assert not np.array_equal(other["first_start"][decided], base["first_start"][decided])


def test_it_learns_each_finished_jobs_run_time() -> None:
    """Each template's history holds the run times of its last finished jobs, newest first, as the
    departures show them (departure - start = the run time)."""
    jobs = _jobs()
    wl = _trace(jobs)
    policy = make_policy("self-tuning-easy", history=3)
    sim = Simulator(wl, policy, num_arrivals=wl.arrival_time.size, warmup=0, record_jobs=True)
    sim.run()
    rec = sim.records()
    state = sim.pdata.state
    base = st._table(K, int(policy.param_values["window"]))
    classes = {int(n): c for c, n in enumerate(wl.server_needs)}
    order = np.argsort(rec["departure_time"], kind="stable")
    for need, request in {(int(n), float(r)) for n, r in zip(jobs["need"], jobs["request"], strict=True)}:
        mine = order[(jobs["need"][order] == need) & (jobs["request"][order] == request)]
        at, found = st._entry(state, base, 3, classes[need], request)
        assert found
        assert state[at + 2] == len(mine)  # every finished job of the template was seen
        newest = jobs["run"][mine][::-1][:3]
        assert np.array_equal(state[at + st.ENTRY : at + st.ENTRY + len(newest)], newest)
        prediction = st._predict(state, base, 3, classes[need], request)
        assert prediction == pytest.approx(min(newest.mean(), request))


@pytest.mark.parametrize("rule", ["sjf", "wfp3", "unicep", "f1", "fcfs"])
def test_with_one_rule_and_exact_requests_it_is_that_heuristic(rule) -> None:
    """Where the requested times are the run times, every prediction is exact from the start: with one
    candidate rule, the scheduler without backfilling is that heuristic, job for job."""
    wl = _trace(_jobs(exact=True))
    mine = _records("self-tuning", wl, rules=rule)
    theirs = _records(rule, wl) if rule != "fcfs" else _records("fcfs", wl)
    assert np.array_equal(mine["first_start"], theirs["first_start"])


def test_it_switches_rules_and_reports_how_often(tmp_path: Path) -> None:
    wl = _trace(_jobs())
    res = Simulator(wl, make_policy("self-tuning-easy"), num_arrivals=wl.arrival_time.size, warmup=0).run()
    shares = res.policy_metrics
    assert set(shares) == {f"rule_share_{name}" for name in st.CANDIDATES}
    assert sum(shares.values()) == pytest.approx(1.0)
    assert sum(v > 0 for v in shares.values()) >= 2  # it used more than one rule


def test_bad_rules_and_workloads_without_requests() -> None:
    with pytest.raises(ValueError, match="parameter 'rules': expected distinct names of fcfs, sjf"):
        make_policy("self-tuning", rules="sjf,edf")
    with pytest.raises(ValueError, match="parameter 'rules'"):
        make_policy("self-tuning", rules="sjf,sjf")
    from msj_gym.registry import supports
    from msj_gym.workloads.scenarios import load_scenario

    assert "carries no requested times" in supports("self-tuning-easy", load_scenario("sf-fig2").build())


@pytest.mark.parametrize("policy_id", ["self-tuning", "self-tuning-easy"])
def test_the_policy_checks(policy_id, tmp_path: Path) -> None:
    """Bounds-checked, deterministic, and the same result through MSJ-v0 (one action per step)."""
    jobs = _jobs(n=600, seed=9)
    lines = ["; MaxProcs: 16"]
    for i in range(jobs["arrival"].size):
        a, n, r, q = jobs["arrival"][i], jobs["need"][i], jobs["run"][i], jobs["request"][i]
        lines.append(f"{i + 1} {a:g} -1 {r:g} {n} -1 -1 {n} {q:g} -1 1 1 1 -1 1 -1 -1 -1")
    path = tmp_path / "templates.swf"
    path.write_text("\n".join(lines) + "\n")
    result = check_policy(policy_id, scenario=f"swf:{path}", load=0.9, num_arrivals=500, queue_window=256)
    assert result["num_measured"] > 0
