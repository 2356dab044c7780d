"""Paper 000's qualitative claims (Figs. 1-2, Theorems 1-2) at small sizes, with paired runs (same seed,
hence the same jobs for every policy). Where our measurements disagree with the paper (BS-FCFS above
FCFS at k <= 64 in the critical regime, a tie at k = 1024, see docs/papers/000-balanced-splitting.md),
the tests check the range where the claim holds and that page reports the rest. 200,000 arrivals:
with 40,000 the FCFS and ServerFilling means swing enough between seeds (long blocking episodes) that a
paired comparison flips for some seeds."""

from __future__ import annotations

import pytest

from msj_gym import Simulator, load_scenario
from msj_gym.analysis import helper_probabilities
from msj_gym.baselines import make_policy

ARRIVALS = 200_000


def _runs(scenario, policies, seed=1, arrivals=ARRIVALS, **build):
    wl = load_scenario(scenario).build(**build)
    return wl, {p: Simulator(wl, make_policy(p), seed=seed, num_arrivals=arrivals).run() for p in policies}


def test_fig1_critical_regime_bs_beats_fcfs_and_server_filling():
    _, r = _runs("bs-fig1", ["bs", "fcfs", "server-filling", "server-filling-srpt"], num_servers=256)
    bs = r["bs"].mean_response_time
    assert bs < r["fcfs"].mean_response_time
    assert bs < r["server-filling"].mean_response_time
    # "competitive with ServerFilling-SRPT" (preemptive, size-aware): measured a factor 1.4-1.5
    assert bs < 2.0 * r["server-filling-srpt"].mean_response_time


@pytest.mark.parametrize("load", [0.9, 0.95])
def test_fig2a_heavy_traffic_bs_beats_fcfs_and_server_filling(load):
    _, r = _runs("bs-fig2a", ["bs", "fcfs", "server-filling"], load=load, num_servers=1024)
    bs = r["bs"].mean_response_time
    assert bs < r["fcfs"].mean_response_time and bs < r["server-filling"].mean_response_time


def test_fig2b_subcritical_bs_beats_fcfs_and_is_near_server_filling_srpt():
    _, r = _runs("bs-fig2b", ["bs", "fcfs", "server-filling-srpt"], num_servers=256)
    bs = r["bs"].mean_response_time
    assert bs < r["fcfs"].mean_response_time
    assert bs < 1.4 * r["server-filling-srpt"].mean_response_time


@pytest.mark.parametrize("scenario", ["bs-fig1", "bs-fig2b"])
def test_p_h_falls_as_k_grows_and_stays_below_modified_bs(scenario):
    """Theorems 1-2: P_H -> 0 as k grows, in the critical (bs-fig1) and subcritical (bs-fig2b) regimes;
    Corollary 1: BS's P_H <= ModifiedBS's, which is exact by Erlang B (eq. (16))."""
    p_h = {}
    for k in (64, 4096):
        wl, r = _runs(scenario, ["bs"], arrivals=40_000, num_servers=k)
        m = r["bs"].policy_metrics
        p_h[k] = m["p_helpers"]
        assert m["p_helpers"] <= helper_probabilities(wl)[1] + 2.0 * m["p_helpers_ci95"]
    assert p_h[4096] < 0.5 * p_h[64]
