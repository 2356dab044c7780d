"""Balanced Splitting's analysis (paper 000): Erlang B at scale, the partition of eq. (2a)-(2b) with its
psi search, and Theorems 1-2 against the exact Erlang-B expression (16) they are limits of."""

from __future__ import annotations

import math

import numpy as np
import pytest

from msj_gym import load_scenario
from msj_gym.analysis import (
    bs_partition,
    erlang_b,
    helper_load,
    helper_probabilities,
    relative_demands,
    theorem1_limit,
    theorem2_bound,
)
from msj_gym.analysis.queueing import _RECURSION_MAX
from msj_gym.workloads import Exponential, JobClass, Workload


def _phi(x: float) -> float:
    return math.exp(-0.5 * x * x) / math.sqrt(2 * math.pi)


def _cdf(x: float) -> float:
    return 0.5 * math.erfc(-x / math.sqrt(2))


def test_erlang_b_known_values_and_edges():
    assert erlang_b(0, 3.0) == 1.0 and erlang_b(5, 0.0) == 0.0
    assert erlang_b(1, 1.0) == pytest.approx(0.5)
    assert erlang_b(10, 5.0) == pytest.approx(0.018384570, rel=1e-7)
    assert erlang_b(100, 80.0) == pytest.approx(0.004, abs=5e-4)  # telephony tables: 80 E on 100 lines
    # exact rational value: E_3(2) = (8/6) / (1 + 2 + 2 + 8/6) = 4/19
    assert erlang_b(3, 2.0) == pytest.approx(4 / 19, rel=1e-14)
    for bad in (-1, 2.5, True):
        with pytest.raises(ValueError, match="servers"):
            erlang_b(bad, 1.0)
    with pytest.raises(ValueError, match="offered"):
        erlang_b(3, float("nan"))


@pytest.mark.parametrize(("s", "a"), [(5000, 4900.0), (5000, 20000.0), (20000, 19990.0), (8000, 10.0)])
def test_erlang_b_log_space_sum_agrees_with_the_recursion(monkeypatch, s, a):
    monkeypatch.setattr("msj_gym.analysis.queueing._RECURSION_MAX", 10**9)
    exact = erlang_b(s, a)
    monkeypatch.setattr("msj_gym.analysis.queueing._RECURSION_MAX", _RECURSION_MAX)
    assert erlang_b(s, a) == pytest.approx(exact, rel=1e-9, abs=1e-300)


@pytest.mark.parametrize("theta", [0.5, 1.0, 2.0])
def test_erlang_b_halfin_whitt_limit_at_a_million_servers(theta):
    # Lemma 1 (Jagerman / Janssen et al.): sqrt(s) E_s(s - theta sqrt(s)) -> phi(theta) / Phi(theta), with
    # an O(1 / sqrt(s)) correction; at s = 10^6 the two agree to ~1e-3.
    s = 10**6
    value = math.sqrt(s) * erlang_b(s, s - theta * math.sqrt(s))
    assert value == pytest.approx(_phi(theta) / _cdf(theta), rel=3e-3)
    assert 0.0 < erlang_b(10**6, 2.0 * 10**6) == pytest.approx(0.5, rel=1e-5)  # E_s(a) -> 1 - s / a


def test_partition_psi_search_by_hand():
    # k = 6, needs 1, 2, equal demands: psi = 1 would give blocks (3, 1), one helper < max need 2; the
    # breakpoints x = 1/3 (class 1), 2/3 (both) are feasible, x = 1 is not: blocks (2, 1), 2 helpers.
    p = bs_partition(6, [1, 2], [1.0, 1.0])
    assert (p.blocks, p.servers, p.helpers, p.psi) == ((2, 1), (2, 2), 2, pytest.approx(1.0))
    # k = 10, needs 1, 4, demands 3:2 -> c = (6, 1): all integers: psi = 1, no helpers (paper's case).
    p = bs_partition(10, [1, 4], [3.0, 2.0])
    assert (p.blocks, p.helpers, p.psi) == ((6, 1), 0, 1.0)
    # k = 11, same: c = (6.6, 1.1), psi = 1 leaves 11 - 6 - 4 = 1 < 4 helpers; the largest feasible x is
    # just below 1 / 1.1 (class 2's first block): blocks (5, 0) at x in [5/6.6, 1/1.1), 6 helpers.
    p = bs_partition(11, [1, 4], [3.0, 2.0])
    assert (p.blocks, p.helpers) == ((5, 0), 6)
    assert p.psi == pytest.approx(1 / 1.1)
    # psi = 1 feasible when the floors leave room: k = 100, needs 1, 2, equal demands -> (50, 25) has no
    # room, but demands 0.49 / 0.51 give c = (49, 25.5): floors (49, 25), 1 helper < 2 -> smaller psi.
    p = bs_partition(100, [1, 2], [0.49, 0.51])
    assert p.helpers >= 2 and sum(p.servers) + p.helpers == 100


@pytest.mark.parametrize("k", [8, 64, 1024, 4096, 10**6])
def test_partition_invariants_on_bs_fig1(k):
    wl = load_scenario("bs-fig1").build(num_servers=k)
    p = bs_partition(k, wl.server_needs, relative_demands(wl))
    assert sum(p.servers) + p.helpers == k
    assert p.helpers >= max(p.server_needs) or p.helpers == 0
    assert all(a == s * n for a, s, n in zip(p.servers, p.blocks, p.server_needs, strict=True))
    # psi is maximal: just past it (a breakpoint) too few helpers are left; just below, this partition
    rho = np.asarray(p.demands)
    c = k * rho / (np.asarray(p.server_needs) * rho.sum())
    assert tuple(np.floor(p.psi * (1 - 1e-12) * c).astype(int)) == p.blocks
    if p.psi < 1.0:
        past = np.floor(p.psi * (1 + 1e-12) * c).astype(int)
        assert k - int(np.dot(past, p.server_needs)) < max(p.server_needs)
    if k == 10**6:
        assert p.psi == 1.0  # Proposition 3: psi^(k) = 1 for k large


def test_partition_bad_input():
    with pytest.raises(ValueError, match=r"server_needs\[1\]: 9 exceeds num_servers = 8"):
        bs_partition(8, [1, 9], [1.0, 1.0])
    with pytest.raises(ValueError, match=r"demands\[0\]"):
        bs_partition(8, [1, 2], [0.0, 1.0])
    with pytest.raises(ValueError, match="one relative demand per class"):
        bs_partition(8, [1, 2], [1.0])
    with pytest.raises(ValueError, match="num_servers"):
        bs_partition(0, [1], [1.0])


def _fig_classes(f: int) -> list[JobClass]:
    return [
        JobClass(f, Exponential(1.0), 0.95),
        JobClass(2 * f, Exponential(40.0), 0.05 / 3),
        JobClass(4 * f, Exponential(20.0), 0.05 / 3),
        JobClass(8 * f, Exponential(10.0), 0.05 / 3),
    ]


def test_theorem2_bound_is_the_limit_of_the_exact_expression():
    # Scaling (8) with f_k = 1: load 1 - theta sqrt(f_k / k). sqrt(k / f_k) P_H^ModifiedBS (eq. (16), exact
    # via Erlang B) must approach the bound (9), with the O(1 / sqrt(s_i)) error shrinking as k grows.
    theta = 0.7
    base = _fig_classes(1)
    bound = theorem2_bound(theta, [0.95] + [0.05 / 3] * 3, [1.0, 40.0, 20.0, 10.0], [1, 2, 4, 8])
    errors = []
    for k in (2**12, 2**16, 2**20):
        wl = Workload(k, base, load=1 - theta / math.sqrt(k))
        _, p_h = helper_probabilities(wl)
        errors.append(abs(math.sqrt(k) * p_h - bound) / bound)
    assert errors[0] > errors[1] > errors[2]
    assert errors[2] < 0.02


def test_theorem1_zero_wait_in_the_subcritical_regime():
    # Scaling (7): fixed load 0.9, needs n_i f_k, f_k = floor((k/32)^(2/3)). P_H^ModifiedBS -> 0, the
    # helpers' load (Proposition 1) -> 0, so BS-pi's mean response time -> sum alpha_i d_i (Theorem 1).
    # With f_k growing like k^(2/3) the loss systems only grow like k^(1/3): the decay is slow, and the
    # helpers (about 8 f_k servers) stay overloaded in the sense of (5) up to k = 2^22 (measured: 2.4 at
    # k = 2^10, 3.9 at 2^22): Proposition 1's condition holds only for far larger k.
    prev = 1.0
    for k in (2**10, 2**14, 2**18, 2**22):
        f = max(1, math.floor((k / 32) ** (2 / 3)))
        wl = Workload(k, _fig_classes(f), load=0.9)
        _, p_h = helper_probabilities(wl)
        assert p_h < prev
        prev = p_h
    assert p_h < 0.01
    # With f_k = 1 the loss systems grow like k and P_H and the helpers' load vanish exponentially fast.
    wl = Workload(2**16, _fig_classes(1), load=0.9)
    assert helper_probabilities(wl)[1] < 1e-8 and helper_load(wl) < 1e-3
    assert theorem1_limit(wl) == pytest.approx(0.95 + 0.05 / 3 * 70)
