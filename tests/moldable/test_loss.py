"""The moldable loss simulator against the exact CTMC (spec moldable.md 6.2), the paper's qualitative
claims at small sizes (spec 3.2, 5.1, 6.3), determinism and bad input."""

from __future__ import annotations

import math

import numpy as np
import pytest

from msj_gym.analysis.moldable import lp_optimum, small_system_ctmc
from msj_gym.baselines import make_moldable_policy
from msj_gym.baselines.moldable import reserve_servers
from msj_gym.moldable import (
    LINEAR,
    SUB_LINEAR,
    LossSimulator,
    MoldableClass,
    MoldableSystem,
    simulate_moldable,
)
from msj_gym.workloads.distributions import Deterministic, HyperExponential
from tests.conftest import assert_within

CTMC_CASES = [
    # n, s, lam, policy
    (6, (1, 1.8, 2.5), 0.87, "moldable-p-scheme"),
    (10, SUB_LINEAR, 0.8, "moldable-p-scheme"),
    (20, LINEAR, 0.8, "moldable-greedy"),
    (8, SUB_LINEAR, 0.9, "moldable-greedy"),
]


@pytest.mark.parametrize(("n", "s", "lam", "policy"), CTMC_CASES)
def test_simulation_reproduces_exact_ctmc(n, s, lam, policy) -> None:
    system = MoldableSystem.single(n, s, lam)
    p = lp_optimum(s, lam).p if policy == "moldable-p-scheme" else np.eye(len(s))[-1]
    exact = small_system_ctmc(n, s, lam, p)
    res = simulate_moldable(system, policy, seed=3, num_arrivals=300_000)
    assert_within(res.blocking, exact.blocking, res.blocking_ci95, f"{policy} n={n} blocking")
    assert_within(
        res.mean_execution_time, exact.mean_execution_time, res.execution_ci95, f"{policy} n={n} E[T]"
    )


def test_hyperexponential_sizes_reproduce_ctmc() -> None:
    """Spec 6.3 reports insensitivity to the size law. A two-phase hyperexponential matches the Exp
    CTMC within CIs at n = 6; deterministic sizes do not (blocking 0.3254 +- 0.0004 against 0.3290 with
    4e6 arrivals: the state-dependent allocation breaks exact insensitivity; see
    docs/papers/002-moldable.md), so only the direction and size of that gap are pinned here."""
    n, s, lam = 6, (1, 1.8, 2.5), 0.87
    exact = small_system_ctmc(n, s, lam, lp_optimum(s, lam).p)
    system = MoldableSystem(n, (MoldableClass(s, lam, HyperExponential([0.5, 0.5], [0.5, 1.5])),))
    res = simulate_moldable(system, "moldable-p-scheme", seed=4, num_arrivals=300_000)
    assert_within(res.blocking, exact.blocking, res.blocking_ci95, "H2 blocking")
    assert_within(res.mean_execution_time, exact.mean_execution_time, res.execution_ci95, "H2 E[T]")
    det = simulate_moldable(
        MoldableSystem(n, (MoldableClass(s, lam, Deterministic(1.0)),)),
        "moldable-p-scheme",
        seed=4,
        num_arrivals=300_000,
    )
    assert 0 < exact.blocking - det.blocking < 0.01


def test_qualitative_claims_mean_field_sub_linear() -> None:
    """p-scheme blocking -> 0 (about n^-1/2) and E[T] -> T* = 0.375 from above; greedy keeps blocking
    above its floor 1 - s(5)/(5 lam) = 0.15 with E[T] near 1/s(5) (spec 3.2, 5.1, 6.3)."""
    lam = 0.8
    t_star = lp_optimum(SUB_LINEAR, lam).mean_execution_time
    floor = 1 - SUB_LINEAR[-1] / (5 * lam)
    ps, gr = {}, {}
    for n in (25, 100, 400):
        system = MoldableSystem.single(n, SUB_LINEAR, alpha=0.0, beta=0.2)
        ps[n] = simulate_moldable(system, "moldable-p-scheme", seed=1, num_arrivals=200_000)
        gr[n] = simulate_moldable(system, "moldable-greedy", seed=1, num_arrivals=200_000)
    for a, b in ((25, 100), (100, 400)):
        assert ps[b].blocking + ps[b].blocking_ci95 < ps[a].blocking - ps[a].blocking_ci95
        gap_a, gap_b = ps[a].mean_execution_time - t_star, ps[b].mean_execution_time - t_star
        assert gap_b + ps[b].execution_ci95 < gap_a - ps[a].execution_ci95
    slope = math.log(ps[400].blocking / ps[25].blocking) / math.log(16)
    assert -0.7 < slope < -0.3, f"p-scheme blocking decays like n^{slope:.2f}, expected about n^-0.5"
    assert ps[400].mean_execution_time - ps[400].execution_ci95 > t_star - 1e-9  # from above
    assert ps[400].mean_execution_time - t_star < 0.015
    for n, r in gr.items():
        assert r.blocking - r.blocking_ci95 > floor, f"greedy n={n}: blocking {r.blocking} below its floor"
        assert abs(r.mean_execution_time - 1 / SUB_LINEAR[-1]) < 3 * r.execution_ci95 + 1e-3
    assert gr[400].blocking > 2 * ps[400].blocking
    assert ps[400].blocking + ps[400].blocking_ci95 < floor / 2  # the p-scheme goes through the floor


def test_p_scheme_time_averages_approach_lp_optimum() -> None:
    system = MoldableSystem.single(400, SUB_LINEAR, 0.8)
    res = simulate_moldable(system, "moldable-p-scheme", seed=2, num_arrivals=200_000)
    q = res.per_class["jobs"].mean_jobs
    np.testing.assert_allclose(q, lp_optimum(SUB_LINEAR, 0.8).x, atol=0.015)
    assert 0.9 < res.busy_fraction <= 1.0


def test_same_seed_same_jobs_and_results() -> None:
    system = MoldableSystem.single(30, SUB_LINEAR, 0.8)
    a = simulate_moldable(system, "moldable-p-scheme", seed=9, num_arrivals=70_000).to_dict()
    b = simulate_moldable(system, "moldable-p-scheme", seed=9, num_arrivals=70_000).to_dict()
    c = simulate_moldable(system, "moldable-p-scheme", seed=10, num_arrivals=70_000).to_dict()
    assert a == b and a != c


def test_linear_speed_up_greedy_is_p_scheme() -> None:
    """Spec 3.2: with linear speed-up p = e_d, so greedy and the p-scheme take identical decisions."""
    system = MoldableSystem.single(40, LINEAR, 0.9)
    a = simulate_moldable(system, "moldable-p-scheme", seed=5, num_arrivals=50_000)
    b = simulate_moldable(system, "moldable-greedy", seed=5, num_arrivals=50_000)
    assert a.blocking == b.blocking and a.mean_execution_time == b.mean_execution_time


def test_reserved_keeps_classes_in_their_pools() -> None:
    classes = (
        MoldableClass(SUB_LINEAR, 0.4, name="A"),
        MoldableClass((1, 1.5, 1.8), 0.3, name="B"),
    )
    system = MoldableSystem(60, classes)
    gamma, pools = reserve_servers(system)
    np.testing.assert_allclose(gamma, [0.533333, 0.466667], atol=1e-6)
    assert pools.tolist() == [32, 28]
    sim = LossSimulator(system, None, seed=0, num_arrivals=20_000, warmup=0)
    policy = make_moldable_policy("moldable-reserved")
    rule = policy.prepare(system)
    peak = np.zeros(2, dtype=np.int64)
    while sim.next_decision():
        c = sim.pending_class
        k = policy.decide(rule, c, sim.state.busy, sim.idle, sim.pending_uniform)
        sim.admit(k)
        peak = np.maximum(peak, sim.state.busy)
    assert np.all(peak <= pools) and np.all(peak >= pools - 5)  # pools used, never exceeded
    res = sim.result()
    assert set(res.per_class) == {"A", "B"} and res.per_class["A"].allocation[3] > 0  # A mostly on 4


def test_bad_input() -> None:
    with pytest.raises(ValueError, match="num_servers"):
        MoldableSystem.single(0, SUB_LINEAR, 0.8)
    with pytest.raises(ValueError, match="arrival_rate"):
        MoldableClass(SUB_LINEAR, -1.0)
    with pytest.raises(ValueError, match="P2"):
        MoldableSystem.single(10, (1, 1.2, 2.0), 0.8)
    with pytest.raises(ValueError, match="load"):
        simulate_moldable(MoldableSystem.single(10, SUB_LINEAR, 1.3), "moldable-p-scheme")
    with pytest.raises(ValueError, match="unknown moldable policy"):
        make_moldable_policy("moldable-nope")
    with pytest.raises(ValueError, match="warmup"):
        LossSimulator(MoldableSystem.single(10, SUB_LINEAR, 0.8), None, num_arrivals=10, warmup=20)
    sim = LossSimulator(MoldableSystem.single(10, SUB_LINEAR, 0.8), None, num_arrivals=100)
    with pytest.raises(ValueError, match="no arrival is waiting"):
        sim.admit(1)
    assert sim.next_decision()
    with pytest.raises(ValueError, match=r"k: expected an integer in \[0, 5\]"):
        sim.admit(6)
    with pytest.raises(ValueError, match="no policy"):
        sim.run()
