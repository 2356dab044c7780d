"""Grosof & Harchol-Balter (001), Fig. 2: k = 8, need 1 w.p. 2/3 else 8, Exp(1) durations."""

from __future__ import annotations

import pytest

from msj_gym import Simulator, load_scenario
from msj_gym.baselines import make_policy

from ..conftest import ci99


def _run(policy_id: str, load: float, arrivals: int = 200_000, seed: int = 2023):
    wl = load_scenario("sf-fig2").build(load=load)
    return Simulator(wl, make_policy(policy_id), seed=seed, num_arrivals=arrivals).run()


def test_fcfs_turns_unstable_near_0_6():
    # The paper: FCFS "becomes unstable around rho = 0.6". Its throughput saturates near 0.6.
    assert _run("fcfs", 0.5).stable
    unstable = _run("fcfs", 0.7)
    assert not unstable.stable
    assert "queue keeps growing" in unstable.stability_note or "arrival cap" in unstable.stability_note
    assert 0.55 < unstable.utilization < 0.65


def test_server_filling_stays_stable_up_to_0_95():
    result = _run("server-filling", 0.95, arrivals=400_000)
    assert result.stable, result.stability_note
    assert result.utilization == pytest.approx(0.95, abs=0.01)


def test_ordering_at_0_9_sf_srpt_below_sf_below_preemptive_msf():
    srpt, sf, msf = (_run(p, 0.9) for p in ("server-filling-srpt", "server-filling", "msf-preemptive"))
    for lower, higher in ((srpt, sf), (sf, msf)):
        gap = higher.mean_response_time - lower.mean_response_time
        assert gap > ci99(lower.ci95_half_width) + ci99(higher.ci95_half_width), (
            lower.mean_response_time,
            higher.mean_response_time,
        )


def test_preemption_rates_follow_the_paper():
    # 001 Sec. 7: MSF preempts least, then ServerFilling; SF-SRPT preempts far more; FCFS/EASY never.
    rates = {
        p: _run(p, 0.9, arrivals=50_000).preemptions_per_job
        for p in ("msf-preemptive", "server-filling", "server-filling-srpt", "easy-backfilling", "fcfs")
    }
    assert rates["fcfs"] == rates["easy-backfilling"] == 0.0
    assert 0 < rates["msf-preemptive"] < rates["server-filling"] < rates["server-filling-srpt"]
