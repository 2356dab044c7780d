"""Engine invariants on every event for every registered policy, and the simulator's contracts."""

from __future__ import annotations

import numpy as np
import pytest

from msj_gym import Policy, SimulationError, Simulator, load_scenario
from msj_gym.baselines import POLICIES, make_policy, supports
from msj_gym.core.state import I_FREE, I_WHEAD, NEED, WNEXT, PolicyData
from msj_gym.workloads import Deterministic, HyperExponential, JobClass, TraceWorkload, Workload

SMALL_WORKLOADS = {
    "sf-fig2": lambda: load_scenario("sf-fig2").build(load=0.8),
    "one-or-all-k4": lambda: load_scenario("one-or-all").build(num_servers=4, load=0.8),
    "bs-fig1-k64": lambda: load_scenario("bs-fig1").build(num_servers=64, load=0.75),
    "four-class": lambda: load_scenario("four-class").build(arrival_rate=3.0),
    "mixed": lambda: Workload(
        6,
        [
            JobClass(1, HyperExponential(mean=1.0, scv=6.0), 0.5, "a"),
            JobClass(2, Deterministic(2.0), 0.3, "b"),
            JobClass(5, HyperExponential(mean=0.5, scv=2.0), 0.2, "c"),
        ],
        load=0.7,
    ),
}


@pytest.mark.parametrize("workload", sorted(SMALL_WORKLOADS))
@pytest.mark.parametrize("policy_id", sorted(POLICIES))
def test_invariants_hold_on_every_event(policy_id, workload):
    """debug=True checks after every event instant: busy servers <= k and equal to the running needs,
    jobs in = jobs out + jobs in system, list/heap/slot consistency. Records then check per job that a
    non-preemptive policy never preempts and that service is conserved under preemption."""
    wl = SMALL_WORKLOADS[workload]()
    if supports(policy_id, wl) is not None:
        pytest.skip(f"{policy_id} is not defined on {workload}")
    sim = Simulator(wl, make_policy(policy_id), seed=5, num_arrivals=3000, debug=True, record_jobs=True)
    result = sim.run()
    rec = sim.records()
    assert rec["arrival_time"].size == 2700
    left = np.isfinite(rec["departure_time"])
    # Every measured job counts: one still in the system when the arrival cap stopped the run (all of
    # them had arrived by then) with its time so far; such a run is unstable.
    assert result.num_measured == 2700
    assert left.all() or (not result.stable and f"{2700 - left.sum()} of the 2700" in result.stability_note)
    rec = {name: values[left] for name, values in rec.items()}
    assert np.all(rec["departure_time"] >= rec["first_start"])
    assert np.all(rec["first_start"] >= rec["arrival_time"])
    # Work conservation: every job received exactly its service time, however often it was preempted.
    np.testing.assert_allclose(rec["service_received"], rec["service_time"], rtol=1e-9, atol=1e-9)
    if not POLICIES[policy_id].preemptive:
        assert result.preemptions_per_job == 0.0
        assert np.all(rec["preemptions"] == 0)
        # departure = start + service in floating point: exact up to rounding at the clock's magnitude
        np.testing.assert_allclose(rec["departure_time"] - rec["first_start"], rec["service_time"], atol=1e-9)
    assert 0.0 < result.utilization <= 1.0 + 1e-12


def test_fcfs_starts_jobs_in_arrival_order():
    wl = load_scenario("bs-fig1").build(num_servers=128, load=0.8)
    sim = Simulator(wl, make_policy("fcfs"), seed=2, num_arrivals=20_000, record_jobs=True)
    sim.run()
    starts = sim.records()["first_start"]
    assert np.all(np.diff(starts) >= 0)


def test_first_fit_does_skip_ahead():
    wl = load_scenario("sf-fig2").build(load=0.5)
    sim = Simulator(wl, make_policy("first-fit"), seed=2, num_arrivals=5_000, record_jobs=True)
    sim.run()
    assert np.any(np.diff(sim.records()["first_start"]) < 0)


@pytest.mark.parametrize("policy_id", ["fcfs", "server-filling-srpt", "easy-backfilling"])
def test_same_seed_same_result_bit_for_bit(policy_id):
    wl = load_scenario("sf-fig2").build(load=0.7)
    a = Simulator(wl, make_policy(policy_id), seed=11, num_arrivals=20_000).run().to_dict()
    b = Simulator(wl, make_policy(policy_id), seed=11, num_arrivals=20_000).run().to_dict()
    c = Simulator(wl, make_policy(policy_id), seed=12, num_arrivals=20_000).run().to_dict()
    a["provenance"].pop("msj_gym_version"), b["provenance"].pop("msj_gym_version")
    assert a == b
    assert a["mean_response_time"] != c["mean_response_time"]


@pytest.mark.parametrize("policy_id", ["fcfs", "server-filling-srpt", "easy-backfilling"])
def test_initial_slots_do_not_change_results(policy_id):
    """Slots only hold jobs: 8 slots that double many times give the run of the default 1024."""
    wl = load_scenario("bs-fig1").build(load=0.9, num_servers=256)
    small = Simulator(wl, make_policy(policy_id), seed=5, num_arrivals=5000, slots=8)
    a = small.run().to_dict()
    b = Simulator(wl, make_policy(policy_id), seed=5, num_arrivals=5000).run().to_dict()
    assert small.sim.ji.shape[0] > 8
    assert a == b


def test_every_policy_sees_the_same_jobs():
    wl = load_scenario("four-class").build(arrival_rate=3.0)
    records = []
    for pid in ("fcfs", "msf", "server-filling"):
        sim = Simulator(wl, make_policy(pid), seed=4, num_arrivals=4000, record_jobs=True)
        sim.run()
        records.append(sim.records())
    for other in records[1:]:
        for field in ("arrival_time", "service_time", "job_class"):
            assert np.array_equal(records[0][field], other[field])


def test_horizon_mode_and_growth_of_slots_and_records():
    wl = load_scenario("sf-fig2").build(load=0.95)
    sim = Simulator(wl, make_policy("msf"), seed=1, horizon=3000.0, warmup_time=300.0, record_jobs=True)
    result = sim.run()
    rec = sim.records()
    assert np.all((rec["arrival_time"] >= 300.0) & (rec["arrival_time"] < 3000.0))
    assert result.num_measured == rec["arrival_time"].size > 0
    expected = wl.arrival_rate * 2700
    assert abs(result.num_measured - expected) < 5 * np.sqrt(expected)
    # A queue far larger than the initial 1024 slots (FCFS is unstable here).
    big = Simulator(wl, make_policy("fcfs"), seed=1, num_arrivals=30_000)
    out = big.run()
    assert big.sim.ji.shape[0] > 1024
    assert not out.stable


def test_trace_replay_handles_simultaneous_arrivals():
    tr = TraceWorkload(4, [0.0, 0.0, 0.0, 1.0, 1.0], [2, 2, 1, 4, 1], [3.0, 1.0, 1.0, 1.0, 0.5])
    sim = Simulator(tr, make_policy("fcfs"), seed=0, num_arrivals=5, warmup=0, record_jobs=True)
    sim.run()
    rec = sim.records()
    # t=0: jobs 0 and 1 (need 2 each) start; job 2 waits. t=1: job 1 leaves, job 2 starts, job 3 (need 4)
    # blocks job 4. t=3: job 0 leaves; t=2 job 2 left: job 3 starts at 3, job 4 at 4.
    np.testing.assert_allclose(rec["first_start"], [0.0, 0.0, 1.0, 3.0, 4.0])
    np.testing.assert_allclose(rec["departure_time"], [3.0, 1.0, 2.0, 4.0, 4.5])


class _StartsARunningJob(Policy):
    policy_id = "bad-start"

    def decide(self, view, sizes, pdata, actions):
        s = view.iv[I_WHEAD]
        if s == -1 or view.ji[s, NEED] > view.iv[I_FREE]:
            return 0
        actions[0] = s
        actions[1] = s  # the same job twice: the second start is invalid
        return 2


class _PreemptsWithoutRight(Policy):
    policy_id = "bad-preempt"

    def decide(self, view, sizes, pdata, actions):
        if view.iv[2] > 0:  # something runs: try to preempt it
            actions[0] = -view.run_list[0] - 1
            return 1
        s = view.iv[I_WHEAD]
        if s != -1 and view.ji[s, NEED] <= view.iv[I_FREE]:
            actions[0] = s
            return 1
        return 0


class _NeverStarts(Policy):
    policy_id = "idle"

    def decide(self, view, sizes, pdata, actions):
        return 0


class _PythonFCFS(Policy):
    """FCFS written in plain Python: the simulator's slow path must agree with the compiled one."""

    policy_id = "python-fcfs"

    def decide(self, view, sizes, pdata: PolicyData, actions):
        free, s, n = view.iv[I_FREE], view.iv[I_WHEAD], 0
        while s != -1 and view.ji[s, NEED] <= free:
            actions[n] = s
            n += 1
            free -= view.ji[s, NEED]
            s = view.ji[s, WNEXT]
        return n


def test_python_policies_use_the_same_engine():
    wl = load_scenario("sf-fig2").build(load=0.5)
    fast = Simulator(wl, make_policy("fcfs"), seed=3, num_arrivals=3000).run()
    slow = Simulator(wl, _PythonFCFS(), seed=3, num_arrivals=3000).run()
    assert fast.mean_response_time == slow.mean_response_time
    assert fast.per_class == slow.per_class


@pytest.mark.parametrize(
    ("policy", "message"),
    [
        (_StartsARunningJob(), "which holds no waiting job"),
        (_PreemptsWithoutRight(), "a non-preemptive policy tried to preempt"),
        (_NeverStarts(), "left .* jobs waiting with every server idle"),
    ],
)
def test_invalid_decisions_are_refused_with_a_clear_error(policy, message):
    trace = TraceWorkload(8, np.arange(50.0), [1, 8] * 25, np.full(50, 3.0))  # finite: no arrival cap
    with pytest.raises(SimulationError, match=message):
        Simulator(trace, policy, seed=0, num_arrivals=50).run()


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"num_arrivals": 1}, "num_arrivals: expected an integer >= 2"),
        ({"num_arrivals": 100, "warmup": 100}, "warmup: expected an integer in"),
        ({"horizon": -5.0}, "horizon: expected a positive finite time"),
        ({"horizon": 10.0, "num_arrivals": 10}, "at most one of num_arrivals and horizon"),
        ({"seed": -1}, "seed: expected a non-negative integer"),
        ({"horizon": 10.0, "warmup_time": 20.0}, r"warmup_time: expected a time in \[0, horizon\)"),
        ({"slots": 0}, "slots: expected a positive integer, got 0"),
    ],
)
def test_bad_run_parameters(kwargs, message):
    wl = load_scenario("sf-fig2").build(load=0.5)
    with pytest.raises(ValueError, match=message):
        Simulator(wl, make_policy("fcfs"), **kwargs)


def test_unknown_policy_and_parameters():
    with pytest.raises(ValueError, match="unknown policy 'nope'"):
        make_policy("nope")
    with pytest.raises(ValueError, match=r"unknown parameter\(s\) \['bogus'\]"):
        make_policy("server-filling", bogus=1)
    with pytest.raises(ValueError, match=r"expected one of \['greedy', 'stop'\], got 'tight'"):
        make_policy("server-filling", packing="tight")
    with pytest.raises(ValueError, match=r"expected >= 0\.0, got -1"):
        make_policy("easy-backfilling", estimate_factor=-1)


def test_policy_flags_match_the_papers():
    preemptive = {pid for pid, cls in POLICIES.items() if cls.preemptive}
    size_aware = {pid for pid, cls in POLICIES.items() if cls.size_aware}
    assert preemptive == {
        "balanced-fair",  # 003 Algorithm 1 interrupts jobs (on the compatibility model)
        "msf-preemptive",
        "server-filling",
        "server-filling-srpt",
        "server-filling-gittins",
        "first-fit-srpt",
        "mdp-optimal-preemptive",  # the exact optimum of the preempt-resume chain (issue 17)
    }
    # the HPC heuristics are handed sizes for their estimates="exact" / "f-model" modes
    hpc = {"sjf", "wfp3", "unicep", "f1", "sjf-easy", "wfp3-easy", "unicep-easy", "f1-easy"}
    assert size_aware == {"server-filling-srpt", "first-fit-srpt", "easy-backfilling", *hpc}
    for cls in POLICIES.values():
        assert cls.reference and cls.__doc__ and "preemptive" in cls.__doc__.lower()


def test_runaway_queue_stops_the_run_and_is_reported():
    wl = load_scenario("sf-fig2").build(load=0.9)
    sim = Simulator(wl, make_policy("fcfs"), seed=1, num_arrivals=50_000, max_jobs_in_system=500)
    result = sim.run()
    assert not result.stable
    assert "queue passed 500 jobs" in result.stability_note
    assert sim.sim.iv[4] <= 500  # never more than the limit in the system
    with pytest.raises(ValueError, match="max_jobs_in_system: expected a positive integer"):
        Simulator(wl, make_policy("fcfs"), max_jobs_in_system=0)


def test_a_stopped_run_counts_its_unfinished_jobs_with_their_time_so_far():
    # one server, FCFS; a long job arrives at 0, short ones at 1, 2, ...: with at most 3 jobs in the
    # system the run stops at t = 2, when the fourth would arrive, with jobs 0, 1 and 2 there (response
    # times so far 2, 1 and 0; waiting times so far 0, 1 and 0): none of them had left
    times, needs = np.arange(6, dtype=np.float64), np.ones(6, dtype=np.int64)
    wl = TraceWorkload(1, times, needs, np.array([100.0, 1, 1, 1, 1, 1]))
    sim = Simulator(wl, make_policy("fcfs"), num_arrivals=6, warmup=0, max_jobs_in_system=3, record_jobs=True)
    result = sim.run()
    assert sim.sim.fv[0] == 2.0
    assert result.num_measured == 3 and not result.stable
    assert "3 of the 3 measured jobs had not left when the run stopped" in result.stability_note
    assert "lower bounds" in result.stability_note and result.summary().startswith("UNSTABLE")
    assert result.mean_response_time == 1.0 and result.response_time_p50 == 1.0
    assert result.mean_waiting_time == 1 / 3 and result.p_wait == 2 / 3
    assert [c.count for c in result.per_class.values()] == [3]
    # the same jobs run to the end: every job left (each after 100 in the system), nothing added
    done = Simulator(wl, make_policy("fcfs"), num_arrivals=6, warmup=0, record_jobs=True).run()
    assert done.num_measured == 6 and "had not left" not in done.stability_note
    assert done.mean_response_time == 100.0
