"""The size-oblivious bound on compatibility graphs: its closed-form special cases (M/M/S, M/M/1), the
simulated policies above it (and on it where the bound is attained), and its refusals."""

from __future__ import annotations

import numpy as np
import pytest

from msj_gym.analysis import mmk_mean_response_time
from msj_gym.analysis.compat_bound import size_oblivious_bound
from msj_gym.pooled import PooledSimulator
from msj_gym.registry import make_policy
from msj_gym.workloads.compat import CompatClass, CompatWorkload, build_compat_scenario
from msj_gym.workloads.distributions import Deterministic, Exponential


@pytest.mark.parametrize(("servers", "load"), [(1, 0.5), (4, 0.3), (10, 0.8), (100, 0.95)])
def test_one_server_per_job_is_the_mmk_queue(servers, load):
    lam = load * servers
    wl = CompatWorkload((1.0,) * servers, (CompatClass(tuple(range(servers)), lam, choose=1),))
    bound = size_oblivious_bound(wl)
    assert bound.mean_response_time == pytest.approx(mmk_mean_response_time(lam, 1.0, servers), rel=1e-10)
    assert bound.job_rate == 1.0 and bound.capacity == servers


@pytest.mark.parametrize("mean", [0.5, 1.0, 3.0])
def test_jobs_that_may_use_every_server_make_the_mm1_queue(mean):
    caps = (2.0, 0.5, 1.5)  # C = 4
    lam = 0.7 * 4.0 / mean
    wl = CompatWorkload(caps, (CompatClass((0, 1, 2), lam),), service_time=Exponential(mean))
    assert size_oblivious_bound(wl).mean_response_time == pytest.approx(1.0 / (4.0 / mean - lam), rel=1e-12)


def test_a_random_assignment_may_use_its_largest_pool_servers():
    # pool (1, 2, 3) of capacities 0.5, 3, 1 with d = 2: at most 4 per job; the unused server 0 adds nothing
    wl = CompatWorkload((9.0, 0.5, 3.0, 1.0), (CompatClass((1, 2, 3), 2.0, choose=2),))
    bound = size_oblivious_bound(wl)
    assert bound.job_rate == 4.0 and bound.capacity == 4.5
    # two states below the plateau: death rates min(4 n, 4.5)
    lam, q = 2.0, 2.0 / 4.5
    p = np.array([1.0, lam / 4.0])
    tail = p[1] * lam / 4.5  # P(2), then geometric with ratio q
    mass = p.sum() + tail / (1 - q)
    jobs = p[1] + tail * (2 / (1 - q) + q / (1 - q) ** 2)
    assert bound.mean_jobs == pytest.approx(jobs / mass, rel=1e-12)


def _simulated(wl: CompatWorkload, policy: str, seeds: range, arrivals: int) -> np.ndarray:
    out = []
    for seed in seeds:
        sim = PooledSimulator(
            wl, make_policy(policy), seed=seed, num_arrivals=arrivals, warmup=arrivals // 10
        )
        out.append(sim.run().mean_response_time)
    return np.array(out)


def test_the_simulated_policies_lie_above_the_bound_and_fcfs_attains_it_where_jobs_use_every_server():
    wl = build_compat_scenario("003-random-2", load=0.9)
    bound = size_oblivious_bound(wl).mean_response_time
    for policy in ("compat-least-loaded", "compat-fcfs"):
        t = _simulated(wl, policy, range(4), 20_000)
        half = 2.0 * t.std(ddof=1) / np.sqrt(t.size)
        assert t.mean() - half > bound, policy
    # every job on all 4 servers: FCFS serves one job at a time at rate 4, the M/M/1 queue itself
    wl = CompatWorkload((1.0,) * 4, (CompatClass((0, 1, 2, 3), 2.8),))
    t = _simulated(wl, "compat-fcfs", range(6), 20_000)
    half = 3.0 * t.std(ddof=1) / np.sqrt(t.size)
    assert abs(t.mean() - size_oblivious_bound(wl).mean_response_time) < half


def test_refusals():
    wl = build_compat_scenario("003-random-2", load=0.5)
    fixed = CompatWorkload(wl.capacities, wl.classes, service_time=Deterministic(1.0))
    with pytest.raises(ValueError, match="service_time: the size-oblivious bound holds for exponential"):
        size_oblivious_bound(fixed)
    # 1.5 units of work per unit time on the 1 server class 0 may use, server 1 idle by construction
    wl = CompatWorkload((1.0, 5.0), (CompatClass((0,), 1.5),))
    with pytest.raises(ValueError, match="reach the capacity 1 of the servers the classes may use"):
        size_oblivious_bound(wl)


def test_the_service_time_bound_weighs_each_class_by_its_fastest_servers():
    from msj_gym.analysis.compat_bound import service_time_bound

    # class a: d = 2 of capacities (1, 4, 2) -> 6; class b: fixed server 0 -> 1; sigma = 3
    wl = CompatWorkload(
        (1.0, 4.0, 2.0),
        (CompatClass((0, 1, 2), 1.0, choose=2, name="a"), CompatClass((0,), 0.25, name="b")),
        service_time=Exponential(3.0),
    )
    assert service_time_bound(wl) == pytest.approx(0.8 * 3 / 6 + 0.2 * 3 / 1, rel=1e-12)
    # the exponential chain's bound is the stronger one: it adds the waiting
    assert size_oblivious_bound(wl).mean_response_time > 3 / 6
