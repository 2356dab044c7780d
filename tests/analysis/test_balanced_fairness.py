"""Balanced-fairness references (003): recursion (4) against the detailed measure (1)-(2), the closed
forms (10)-(11) and the symmetric random-assignment reduction against recursion (4), Theorem 1."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from msj_gym.analysis.balanced_fairness import (
    balance_function,
    balanced_fair_performance,
    random_assignment_performance,
    stability_violation,
    stationary_distribution,
    tree_service_rates,
    workload_performance,
)
from msj_gym.workloads.compat import CompatClass, CompatWorkload, build_compat_scenario

TREE = [(0, 2), (1, 2)]


def _detailed_aggregate(mu, sets, lam, max_len):
    """Sum of pi(c) of (1) (pi(empty) = 1) over the detailed states c of each aggregate state x."""
    n = len(sets)
    out = {}
    for length in range(max_len + 1):
        for c in itertools.product(range(n), repeat=length):
            w, used = 1.0, set()
            for k in c:
                used |= set(sets[k])
                w *= lam[k] / sum(mu[s] for s in used)
            x = tuple(np.bincount(np.array(c, dtype=int), minlength=n)) if c else (0,) * n
            out[x] = out.get(x, 0.0) + w
    return out


@pytest.mark.parametrize(
    ("mu", "sets", "lam"),
    [
        ([1.0, 1.0, 1.0], TREE, [0.7, 0.9]),
        ([0.5, 2.0, 1.0], [(0,), (0, 1), (1, 2)], [0.3, 0.8, 0.6]),
    ],
)
def test_recursion_4_is_the_aggregate_of_the_detailed_measure(mu, sets, lam):
    """(3)-(4): Phi(x) prod lambda^x equals the sum of (1) over the orderings with |c| = x."""
    phi = balance_function(mu, sets, 4)
    detailed = _detailed_aggregate(mu, sets, lam, 5)
    checked = 0
    for x, value in detailed.items():
        if max(x) <= 4:
            expected = phi[x] * math.prod(lam[i] ** x[i] for i in range(len(x)))
            assert value == pytest.approx(expected, rel=1e-12), x
            checked += 1
    assert checked >= 19  # every x with |x| <= 5 inside the box


def test_stationary_distribution_is_normalised_and_balanced():
    pi = stationary_distribution([1, 1, 1], TREE, [0.6, 0.6], 60)
    assert pi.sum() == pytest.approx(1.0)
    # Whittle network: phi_i(x) = Phi(x - e_i) / Phi(x) sum to mu(A(x)) (Corollary 1) in every state.
    phi = balance_function([1, 1, 1], TREE, 5)
    for x in itertools.product(range(1, 6), range(0, 6)):
        rates = phi[x[0] - 1, x[1]] / phi[x] + (phi[x[0], x[1] - 1] / phi[x] if x[1] else 0.0)
        assert rates == pytest.approx(3.0 if x[1] else 2.0)


@pytest.mark.parametrize("rho", [0.2, 0.6, 0.9])
@pytest.mark.parametrize(
    ("mu", "sets"),
    [((1.0, 1.0, 1.0), TREE), ((1.0, 0.0, 1.0), [(0, 1), (1,)]), ((2.0, 1.0, 1.0), TREE)],
    ids=["symmetric", "asymmetric-fig2", "heterogeneous"],
)
def test_closed_forms_10_11_match_recursion(mu, sets, rho):
    mu1, mu2, mu3 = mu
    lam = rho * (mu1 + mu2 + mu3) / 2.0
    caps = [mu1, mu3] if mu2 == 0.0 else list(mu)  # mu2 = 0: class 1 on servers {1, 3}, class 2 on {3}
    g1, g2 = tree_service_rates(mu1, mu2, mu3, lam, lam)
    rec = balanced_fair_performance(caps, sets, [lam, lam])
    np.testing.assert_allclose(rec.mean_service_rate, [g1, g2], rtol=1e-8)
    assert rec.mean_service_rate[0] <= mu1 + mu3 + 1e-12


@pytest.mark.parametrize(("s", "d", "lam"), [(3, 2, 1.5), (4, 3, 2.0), (4, 2, 1.2), (5, 4, 3.0)])
def test_random_assignment_reduction_matches_recursion(s, d, lam):
    sets = list(itertools.combinations(range(s), d))
    rec = balanced_fair_performance([1.0] * s, sets, [lam / len(sets)] * len(sets), tol=1e-10)
    red = random_assignment_performance(s, d, lam)
    assert red.mean_jobs[0] == pytest.approx(rec.mean_jobs.sum(), rel=1e-7)
    assert red.p_empty == pytest.approx(rec.p_empty, rel=1e-7)


def test_random_assignment_limits():
    # d = S: one pooled server of capacity S (M/M/1 with rate S): E[n] = rho / (1 - rho).
    red = random_assignment_performance(10, 10, 7.0)
    assert red.mean_jobs[0] == pytest.approx(0.7 / 0.3)
    # d = 1: S independent M/M/1 queues with rate lambda / S each.
    red = random_assignment_performance(10, 1, 7.0)
    assert red.mean_jobs[0] == pytest.approx(10 * 0.7 / 0.3)
    # S = 100 (Figs. 3-4): more choices, shorter delays; delay above the bare service time 1 / d.
    d2 = random_assignment_performance(100, 2, 90.0).mean_delay[0]
    d3 = random_assignment_performance(100, 3, 90.0).mean_delay[0]
    assert 1 / 2 < d2 and 1 / 3 < d3 < d2


def test_theorem_1_stability_check():
    wl = build_compat_scenario("003-tree-symmetric", load=0.9)
    assert stability_violation(wl) is None
    # class 1 alone exceeds its two servers although the total load is below 1
    lopsided = CompatWorkload((1.0, 1.0, 1.0), (CompatClass((0, 2), 2.05), CompatClass((1, 2), 0.2)))
    assert lopsided.load < 1
    why = stability_violation(lopsided)
    assert why is not None and "['class1']" in why and ">= the capacity 2" in why
    named = CompatWorkload((1.0, 1.0, 1.0), (CompatClass((0, 2), 2.05, name="a"), CompatClass((1, 2), 0.2)))
    assert "['a']" in stability_violation(named)
    assert stability_violation(build_compat_scenario("003-random-2", load=0.99)) is None
    assert "capacity 100" in stability_violation(build_compat_scenario("003-random-2", load=1.0))
    with pytest.raises(ValueError, match="unstable"):
        tree_service_rates(1, 1, 1, 2.0, 0.1)


def test_workload_performance_dispatches():
    wl = build_compat_scenario("003-random-3", load=0.5, distribution="zipf")
    perf = workload_performance(wl)
    ref = random_assignment_performance(100, 3, wl.arrival_rate, mean_size=wl.mean_size)
    assert perf.mean_delay[0] == pytest.approx(ref.mean_delay[0])
    # sizes scale time: the service rate (capacity units) is the same as with unit-mean sizes
    unit = workload_performance(build_compat_scenario("003-random-3", load=0.5))
    assert perf.mean_service_rate[0] == pytest.approx(unit.mean_service_rate[0])
    tree = workload_performance(build_compat_scenario("003-tree-asymmetric", load=0.5))
    g1, g2 = tree_service_rates(1, 0, 1, 0.5, 0.5)
    np.testing.assert_allclose(tree.mean_service_rate, [g1, g2])
