"""Balanced Splitting against its theory (paper 000): under ModifiedBS-pi each A_i is an M/GI/s_i/s_i
loss system (Property 1), so the fraction of class-i arrivals sent to the helpers is Erlang's
E_{s_i}(lambda alpha_i d_i) whatever the service distribution; BS-pi's P_H is at most ModifiedBS-pi's
(Corollary 1)."""

from __future__ import annotations

import pytest

from msj_gym import Simulator
from msj_gym.analysis import helper_probabilities
from msj_gym.baselines import make_policy
from msj_gym.workloads import Exponential, HyperExponential, JobClass, Workload

from ..conftest import assert_within, ci99


def _workload(dist) -> Workload:
    # k = 32, needs 1 / 4 / 8: partition s = (7, 2, 1) with 9 helpers; every class is blocked often.
    classes = [
        JobClass(1, dist(1.0), 0.8, "n1"),
        JobClass(4, dist(2.0), 0.15, "n4"),
        JobClass(8, dist(4.0), 0.05, "n8"),
    ]
    return Workload(32, classes, load=0.5)


DISTRIBUTIONS = {
    "exponential": Exponential,
    "hyperexponential-scv10": lambda mean: HyperExponential(mean=mean, scv=10.0),
}


@pytest.mark.parametrize("dist", sorted(DISTRIBUTIONS))
def test_modified_bs_helper_fraction_is_erlang_b(dist):
    wl = _workload(DISTRIBUTIONS[dist])
    res = Simulator(wl, make_policy("modified-bs"), seed=2, num_arrivals=120_000).run()
    assert res.stable
    m = res.policy_metrics
    per_class, total = helper_probabilities(wl)
    for c, ref in enumerate(per_class):
        assert 0.03 < ref < 0.7  # the check has teeth: blocking is neither rare nor certain
        assert_within(
            m[f"p_sent_to_helpers_class{c}"],
            ref,
            m[f"p_sent_to_helpers_class{c}_ci95"],
            f"{dist} E_s class {c}",
        )
    assert_within(m["p_sent_to_helpers"], total, m["p_sent_to_helpers_ci95"], f"{dist} P_H (16)")


def test_bs_uses_the_helpers_less_than_modified_bs():
    wl = _workload(Exponential)
    bs = Simulator(wl, make_policy("bs"), seed=5, num_arrivals=60_000).run().policy_metrics
    mod = Simulator(wl, make_policy("modified-bs"), seed=5, num_arrivals=60_000).run().policy_metrics
    # Corollary 1, per class too (Proposition 2: BS's A_i take at least ModifiedBS's arrival rate).
    slack = ci99(bs["p_helpers_ci95"]) + ci99(mod["p_helpers_ci95"])
    assert bs["p_helpers"] <= mod["p_helpers"] + slack
    for c in range(3):
        k = f"p_helpers_class{c}"
        assert bs[k] <= mod[k] + ci99(bs[f"{k}_ci95"]) + ci99(mod[f"{k}_ci95"])
