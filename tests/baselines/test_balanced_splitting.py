"""BS-pi and ModifiedBS-pi (paper 000, Definitions 1 and 2) on hand-made job streams where the schedule
is known, their partition, parameters and bad input, and their run through the environment."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from msj_gym import PolicyAgent, Simulator, load_scenario, rollout
from msj_gym.baselines import make_policy, supports
from msj_gym.workloads import Exponential, JobClass, TraceWorkload, Workload


def _run(policy_id, k, times, needs, durations, **params):
    trace = TraceWorkload(k, times, needs, durations)
    sim = Simulator(
        trace,
        make_policy(policy_id, **params),
        seed=0,
        num_arrivals=len(times),
        warmup=0,
        record_jobs=True,
        debug=True,
    )
    result = sim.run()
    return sim.records()["first_start"], result.policy_metrics


# k = 6, needs 1 and 2, demands 1:1 -> s = (2, 1): A_1 = 2 servers, A_2 = 2 servers, H = 2 servers.
K6 = {"k": 6, "demands": "1, 1"}
TIMES = [0, 1, 2, 2.5, 4, 5, 10.5]
NEEDS = [1, 1, 1, 2, 2, 1, 1]
DURS = [10, 10, 1, 10, 20, 1, 1]


def test_partition_of_the_hand_made_example():
    trace = TraceWorkload(6, TIMES, NEEDS, DURS)
    part = make_policy("bs", demands="1,1").partition(trace)
    assert part.blocks == (2, 1) and part.servers == (2, 2) and part.helpers == 2


def test_bs_moves_the_oldest_helper_job_to_its_A_set():
    # j0, j1 fill A_1; j2 finds A_1 full and runs on H (2-3); j3 takes A_2; j4 finds A_2 full and runs on
    # H (4-24); j5 finds A_1 and H full and waits. At 10 j0 leaves A_1: BS moves j5 there (rule 3). At
    # 10.5 j6 finds A_1 full (j1, j5) and waits on the helpers; at 11 both leave A_1 and j6 moves in.
    starts, metrics = _run("bs", 6, TIMES, NEEDS, DURS, demands="1,1")
    np.testing.assert_allclose(starts, [0, 1, 2, 2.5, 4, 10, 11])
    assert metrics["p_helpers"] == pytest.approx(2 / 7)  # served by H: j2, j4
    assert metrics["p_sent_to_helpers"] == pytest.approx(4 / 7)  # j2, j4, j5, j6 found no room
    assert metrics["p_helpers_class0"] == pytest.approx(1 / 5)


def test_modified_bs_sends_to_the_helpers_irrevocably():
    # Same stream: j5 stays with the helpers until j4 leaves them at 24, and j6 (arriving at 10.5 with
    # A_1 holding only j1) starts on A_1 at once.
    starts, metrics = _run("modified-bs", 6, TIMES, NEEDS, DURS, demands="1,1")
    np.testing.assert_allclose(starts, [0, 1, 2, 2.5, 4, 24, 10.5])
    assert metrics["p_helpers"] == pytest.approx(3 / 7)
    assert metrics["p_sent_to_helpers"] == pytest.approx(3 / 7)


@pytest.mark.parametrize("policy_id", ["bs", "modified-bs"])
@pytest.mark.parametrize(("aux", "expected"), [("fcfs", 7), ("first-fit", 3), ("msf", 3)])
def test_auxiliary_policy_runs_on_the_helpers_only(policy_id, aux, expected):
    # A_1, A_2 are full (jobs 0-2, 100 s). j3 (need 1) takes one helper; j4 (need 2) cannot fit the one
    # helper left; j5 (need 1) could: FCFS keeps it behind j4 (j3 ends at 6, j4 runs 6-7, then j5);
    # First-Fit and MSF start it at once. Idle servers elsewhere (none here) are never used.
    times, needs, durs = [0, 0.1, 0.2, 1, 2, 3], [1, 1, 2, 1, 2, 1], [100, 100, 100, 5, 1, 1]
    starts, _ = _run(policy_id, 6, times, needs, durs, demands="1,1", aux=aux)
    np.testing.assert_allclose(starts, [0, 0.1, 0.2, 1, 6, expected])


def test_a_class_without_servers_of_its_own_uses_the_helpers():
    # k = 8, needs 1 and 8: the helpers must hold 8 servers, so no A_i gets any (a_i = 0) and BS-FCFS is
    # FCFS on all k servers.
    wl = load_scenario("sf-fig2").build(load=0.6)
    part = make_policy("bs").partition(wl)
    assert part.servers == (0, 0) and part.helpers == 8
    runs = [Simulator(wl, make_policy(p), seed=3, num_arrivals=3000).run() for p in ("bs", "fcfs")]
    assert runs[0].mean_response_time == runs[1].mean_response_time
    assert runs[0].policy_metrics["p_helpers"] == 1.0


def _two_class(k=4, needs=(1, 3)):
    return Workload(k, [JobClass(n, Exponential(1.0), 0.5, f"n{n}") for n in needs], load=0.5)


def test_bad_input_is_rejected_with_the_field_named():
    with pytest.raises(ValueError, match=r"demands\[1\].*positive.*got 0\.0 "):
        make_policy("bs", demands="1, 0").prepare(_two_class(), np.random.default_rng(0))
    with pytest.raises(ValueError, match=r"^policy 'bs' parameter 'demands': expected 2 numbers"):
        make_policy("bs", demands="1").prepare(_two_class(), np.random.default_rng(0))
    # numbers or not is told with the parameters, before any workload
    with pytest.raises(ValueError, match=r"^policy 'bs' parameter 'demands': expected comma-separated"):
        make_policy("bs", demands="1, x")
    with pytest.raises(ValueError, match="aux"):
        make_policy("bs", aux="lsf-preemptive")
    # every k rho_i / (n_i rho) an integer: psi = 1 and no helpers; BS runs, ModifiedBS cannot.
    wl = Workload(4, [JobClass(1, Exponential(1.0), 0.5), JobClass(2, Exponential(0.5), 0.5)], load=0.5)
    assert make_policy("bs").partition(wl).helpers == 0
    assert "no helpers" in supports("modified-bs", wl)
    assert supports("bs", wl) is None
    Simulator(wl, make_policy("bs"), seed=0, num_arrivals=2000, debug=True).run()


def test_user_given_demands_change_the_partition():
    wl = load_scenario("bs-fig1").build(num_servers=256)
    own = make_policy("bs").partition(wl)
    skewed = make_policy("bs", demands="[1, 1, 1, 1]").partition(wl)
    assert own.blocks != skewed.blocks
    assert own.servers == make_policy("bs", demands=",".join(map(str, own.demands))).partition(wl).servers


@pytest.mark.parametrize("policy_id", ["bs", "modified-bs"])
def test_through_the_env_equals_the_native_run(policy_id):
    # bs-fig1 at k = 64: every A_i non-empty, helpers in use; the agent's own P_H report must match too.
    env = gym.make(
        "MSJ-v0", scenario="bs-fig1", num_servers=64, num_arrivals=3000, warmup=300, queue_window=4096
    )
    agent = PolicyAgent(policy_id, env)
    through_env = rollout(env, agent, seed=4).to_dict()
    native = Simulator(
        env.unwrapped.workload,
        make_policy(policy_id),
        seed=4,
        num_arrivals=3000,
        warmup=300,
        max_arrivals=2 * 3000 + 2,
        record_jobs=False,  # as the env: no per-job records, no percentiles
    ).run()
    agent_metrics = agent.policy.report(agent._driver.pdata)
    native_dict = native.to_dict()
    for key in ("provenance", "policy_metrics"):
        through_env.pop(key), native_dict.pop(key)
    assert through_env == native_dict
    assert agent_metrics == native.policy_metrics
    assert 0.0 < native.policy_metrics["p_helpers"] < 1.0
