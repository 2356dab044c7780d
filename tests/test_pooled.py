"""The compatibility-model loop (003 Sec. 2 and 4): hand-checked schedules, the allocation invariant
after every event, work conservation, determinism, and the policies it accepts."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pytest

from msj_gym import load_scenario
from msj_gym.baselines import make_policy, supports
from msj_gym.pooled import PooledSimulator
from msj_gym.workloads.compat import CompatChunk, CompatClass, CompatWorkload, build_compat_scenario


class _Trace:
    finite = True

    def __init__(self, times, classes, sizes, servers):
        self.chunk = CompatChunk(
            np.asarray(times, float),
            np.asarray(classes, np.int64),
            np.asarray(sizes, float),
            np.zeros(len(times)),
            np.asarray(servers, np.int64),
        )
        self.done = False

    def next_chunk(self, n):
        if self.done:
            self.last_servers = self.chunk.servers[:0]
            return CompatChunk(
                *(
                    a[:0]
                    for a in (
                        self.chunk.arrival_time,
                        self.chunk.job_class,
                        self.chunk.service_time,
                        self.chunk.estimate_noise,
                        self.chunk.servers,
                    )
                )
            )
        self.done = True
        self.last_servers = self.chunk.servers
        return self.chunk


@dataclass(frozen=True)
class _TraceWorkload(CompatWorkload):
    jobs: tuple = field(default=())

    def arrivals(self, seed):
        times, classes, sizes = zip(*self.jobs, strict=True)
        servers = [
            list(self.classes[c].servers) + [-1] * (self.max_degree - self.classes[c].degree) for c in classes
        ]
        return _Trace(times, classes, sizes, servers)


def _tree_trace(jobs, caps=(1.0, 1.0, 1.0)):
    classes = (CompatClass((0, 2), 0.1, name="c1"), CompatClass((1, 2), 0.1, name="c2"))
    return _TraceWorkload(caps, classes, jobs=tuple(jobs))


def _records(wl, policy="compat-fcfs", **params):
    sim = PooledSimulator(
        wl,
        make_policy(policy, **params),
        seed=0,
        num_arrivals=len(wl.jobs),
        warmup=0,
        record_jobs=True,
        debug=True,
    )
    sim.run()
    return sim.records()


def test_servers_pool_their_rates_in_arrival_order():
    # A (class 1: servers 1, 3; 4 units of work) at 0 runs at rate 2. B (class 2: servers 2, 3; 2 units)
    # at 1 gets server 2 only (3 is busy with the earlier A): rate 1. A leaves at 2 (2 left at rate 2);
    # B, with 1 unit left, then takes server 3 too and leaves at 2.5.
    rec = _records(_tree_trace([(0.0, 0, 4.0), (1.0, 1, 2.0)]))
    np.testing.assert_allclose(rec["departure_time"], [2.0, 2.5])
    np.testing.assert_allclose(rec["first_start"], [0.0, 1.0])
    np.testing.assert_allclose(rec["service_received"], [4.0, 2.0])
    # Capacities add: with C = (1, 1, 3) A runs at 4, B at 1 then 4.
    rec = _records(_tree_trace([(0.0, 0, 4.0), (0.5, 1, 2.0)], caps=(1.0, 1.0, 3.0)))
    np.testing.assert_allclose(rec["departure_time"], [1.0, 0.5 + 0.5 + 1.5 / 4])


def test_a_later_job_waits_only_for_servers_it_shares():
    # A (class 1) at 0 with 10 units, B (class 1) at 0.1: every server of B is A's -> waits until 5.
    # C (class 2) at 0.2 gets server 2 at once although B arrived earlier.
    rec = _records(_tree_trace([(0.0, 0, 10.0), (0.1, 0, 1.0), (0.2, 1, 1.0)]))
    np.testing.assert_allclose(rec["first_start"], [0.0, 5.0, 0.2])
    np.testing.assert_allclose(rec["departure_time"], [5.0, 5.5, 1.2])


@pytest.mark.parametrize("scenario", ["003-tree-symmetric", "003-tree-asymmetric", "small-random"])
@pytest.mark.parametrize("policy", [("compat-fcfs", {}), ("balanced-fair", {"m": 2.0})])
def test_allocation_invariant_and_work_conservation(scenario, policy):
    if scenario == "small-random":
        wl = CompatWorkload(
            (1.0, 2.0, 0.5, 1.0, 1.5),
            (CompatClass(tuple(range(5)), 4.5, choose=2),),
            {"distribution": "hyperexponential", "mean": 1.0, "scv": 4.0},
        )
    else:
        wl = build_compat_scenario(scenario, load=0.85, distribution="bimodal")
    sim = PooledSimulator(
        wl, make_policy(policy[0], **policy[1]), seed=3, num_arrivals=4000, record_jobs=True, debug=True
    )
    result = sim.run()
    rec = sim.records()
    assert result.num_measured == 3600
    np.testing.assert_allclose(rec["service_received"], rec["service_time"], rtol=1e-9, atol=1e-9)
    assert np.all(rec["first_start"] >= rec["arrival_time"])
    assert np.all(rec["departure_time"] > rec["first_start"])
    if policy[0] == "compat-fcfs":
        assert np.all(rec["preemptions"] == 0)
    else:  # Exp(theta) work between interruptions: m = 2 per job on average
        assert 1.5 < result.policy_metrics["interruptions_per_job"] < 2.5
    assert 0.0 < result.utilization <= 1.0


def test_same_seed_same_run_and_m0_is_fcfs():
    wl = build_compat_scenario("003-tree-symmetric", load=0.7, distribution="hyperexponential")

    def run(policy, **params):
        return PooledSimulator(wl, make_policy(policy, **params), seed=11, num_arrivals=5000).run()

    a, b = run("balanced-fair", m=1.0), run("balanced-fair", m=1.0)
    assert a.mean_response_time == b.mean_response_time and a.events == b.events
    assert run("balanced-fair", m=0.0).mean_response_time == run("compat-fcfs").mean_response_time
    assert run("balanced-fair", m=3.0).mean_response_time != a.mean_response_time


def test_bad_input_is_named():
    wl = build_compat_scenario("003-tree-symmetric", load=0.5)
    with pytest.raises(ValueError, match="'msf' is not defined on the compatibility model"):
        PooledSimulator(wl, make_policy("msf"))
    assert "not defined on the compatibility model" in supports("server-filling", wl)
    assert supports("compat-fcfs", wl) is None and supports("balanced-fair", wl) is None
    lopsided = CompatWorkload((1.0, 1.0, 1.0), (CompatClass((0, 2), 2.5, name="a"), CompatClass((1, 2), 0.1)))
    with pytest.raises(ValueError, match=r"unstable \(Bonald & Comte 2017, Theorem 1\): classes \['a'\]"):
        PooledSimulator(lopsided, make_policy("compat-fcfs"))
    with pytest.raises(ValueError, match=r"expected >= 0\.0, got -1"):
        make_policy("balanced-fair", m=-1)
    with pytest.raises(ValueError, match="server 3 does not exist"):
        CompatWorkload((1.0, 1.0), (CompatClass((0, 3), 1.0),))
    with pytest.raises(ValueError, match="choose: 3 exceeds the 2 servers"):
        CompatClass((0, 1), 1.0, choose=3)
    with pytest.raises(ValueError, match="distribution: expected one of"):
        build_compat_scenario("003-random-2", distribution="pareto")
    with pytest.raises(ValueError, match="compatibility model"):
        make_policy("balanced-fair").prepare(load_scenario("sf-fig2").build(), np.random.default_rng(0))


@pytest.mark.parametrize(("policy", "params"), [("compat-fcfs", {}), ("balanced-fair", {"m": 2.0})])
def test_bookkeeping_survives_slot_growth(policy, params):
    # From 2 slots the engine doubles them many times; the kernels' per-slot lists must carry over
    # (the debug invariant checks them after every event) and the run must not depend on it.
    wl = build_compat_scenario("003-random-2", load=0.9)
    small, large = (
        PooledSimulator(wl, make_policy(policy, **params), seed=2, num_arrivals=3000, slots=n, debug=d).run()
        for n, d in ((2, True), (1024, False))
    )
    assert small.mean_response_time == large.mean_response_time and small.events == large.events
