"""LP (P) closed form, (Q) water-filling and the small-system CTMC against spec moldable.md Sec. 6 and a
generic LP solver."""

from __future__ import annotations

import math

import numpy as np
import pytest

from msj_gym.analysis.moldable import (
    check_speed_up,
    lp_optimum,
    multiclass_optimum,
    small_system_ctmc,
    traffic,
)

linprog = pytest.importorskip("scipy.optimize").linprog

SUB = (1.0, 1.8, 2.5, 3.0, 3.4)

# spec 6.1: (s, lam, x* (index -> value), OPT, T*, p (index -> value))
TABLE_61 = [
    ((1, 2, 3, 4, 5), 0.8, {5: 0.16}, 0.16, 0.2, {5: 1.0}),
    (SUB, 0.8, {3: 0.2, 4: 0.1}, 0.3, 0.375, {3: 0.625, 4: 0.375}),
    (SUB, 0.9, {2: 0.5}, 0.5, 0.555556, {2: 1.0}),
    (SUB, 2.5 / 3, {3: 1 / 3}, 1 / 3, 0.4, {3: 1.0}),
    (SUB, 0.7, {4: 0.071429, 5: 0.142857}, 0.214286, 0.306122, {4: 0.306122, 5: 0.693878}),
    (SUB, 0.6, {5: 0.176471}, 0.176471, 0.294118, {5: 1.0}),
    (
        SUB,
        1 - 0.1 / math.sqrt(4000),
        {1: 0.984189, 2: 0.007906},
        0.992094,
        0.993665,
        {1: 0.985747, 2: 0.014253},
    ),
    (SUB, 1 - 0.1 * 4000**-0.65, {1: 0.995443, 2: 0.002278}, 0.997722, 0.998176, {1: 0.995897, 2: 0.004103}),
]


def _dense(entries: dict[int, float], d: int) -> np.ndarray:
    v = np.zeros(d)
    for i, value in entries.items():
        v[i - 1] = value
    return v


@pytest.mark.parametrize(("s", "lam", "x", "opt", "t", "p"), TABLE_61)
def test_closed_form_matches_spec_table(s, lam, x, opt, t, p) -> None:
    o = lp_optimum(s, lam)
    np.testing.assert_allclose(o.x, _dense(x, len(s)), atol=5e-7)
    np.testing.assert_allclose(o.p, _dense(p, len(s)), atol=5e-7)
    assert o.objective == pytest.approx(opt, abs=5e-7)
    assert o.mean_execution_time == pytest.approx(t, abs=5e-7)


def _random_concave(rng: np.random.Generator) -> np.ndarray:
    d = int(rng.integers(1, 8))
    inc = [1.0]
    for _ in range(d - 1):
        # sometimes an affine stretch (equal increments), the degenerate case of Theorem 1
        inc.append(inc[-1] if rng.random() < 0.2 else inc[-1] * rng.uniform(0.02, 1.0))
    return np.cumsum(inc)


def _solve_p(s: np.ndarray, lam: float) -> float:
    d = s.size
    res = linprog(
        np.ones(d),
        A_ub=[np.arange(1, d + 1)],
        b_ub=[1.0],
        A_eq=[s],
        b_eq=[lam],
        bounds=(0, None),
        method="highs",
    )
    assert res.status == 0
    return float(res.fun)


def test_closed_form_equals_linprog_on_random_concave_instances() -> None:
    rng = np.random.default_rng(2406)
    for _ in range(400):
        s = _random_concave(rng)
        d = s.size
        r = s / np.arange(1, d + 1)
        lam = float(rng.choice(r)) if rng.random() < 0.2 else float(rng.uniform(1e-3, 1.0))
        o = lp_optimum(s, lam)
        assert o.objective == pytest.approx(_solve_p(s, lam), rel=1e-8, abs=1e-10), (s, lam)
        # feasible, p a distribution, at most two adjacent non-zero components
        assert s @ o.x == pytest.approx(lam, rel=1e-10)
        assert np.arange(1, d + 1) @ o.x <= 1 + 1e-10
        assert o.p.sum() == pytest.approx(1.0, abs=1e-12) and np.all(o.p >= -1e-15)
        nz = np.flatnonzero(o.x > 1e-14)
        assert 1 <= nz.size <= 2 and nz.max() - nz.min() <= 1
        if o.case in ("ii", "iii"):
            assert np.arange(1, d + 1) @ o.x == pytest.approx(1.0, abs=1e-10)  # every server busy
        if o.case == "iii":  # dual certificate: u s(j) - v j <= 1 for all j, and lam u - v = OPT
            i = nz.min() + 1
            big_d = (i + 1) * s[i - 1] - i * s[i]
            u, v = 1 / big_d, o.capacity_price
            assert np.all(u * s - v * np.arange(1, d + 1) <= 1 + 1e-9)
            assert lam * u - v == pytest.approx(o.objective, rel=1e-10)


def _solve_q(lam, mu, speeds) -> float:
    a_eq, b_eq, cap = [], [], []
    offset = [0]
    for s in speeds:
        offset.append(offset[-1] + len(s))
    n = offset[-1]
    for k, s in enumerate(speeds):
        row = np.zeros(n)
        row[offset[k] : offset[k + 1]] = mu[k] * np.asarray(s)
        a_eq.append(row)
        b_eq.append(lam[k])
        cap += list(range(1, len(s) + 1))
    res = linprog(np.ones(n), A_ub=[cap], b_ub=[1.0], A_eq=a_eq, b_eq=b_eq, bounds=(0, None), method="highs")
    assert res.status == 0
    return float(res.fun)


def test_water_filling_equals_direct_lp_of_q() -> None:
    rng = np.random.default_rng(6)
    for _ in range(200):
        k = int(rng.integers(1, 4))
        speeds = [_random_concave(rng) for _ in range(k)]
        mu = rng.uniform(0.3, 3.0, k)
        share = rng.dirichlet(np.ones(k)) * rng.uniform(0.05, 1.0)  # rho_k, sum <= 1
        lam = share * mu
        m = multiclass_optimum(lam, mu, speeds)
        assert m.objective == pytest.approx(_solve_q(lam, mu, speeds), rel=1e-8, abs=1e-10)
        used = 0.0
        for j, s in enumerate(speeds):
            assert mu[j] * (s @ m.x[j]) == pytest.approx(lam[j], rel=1e-9)
            used += np.arange(1, s.size + 1) @ m.x[j]
            assert m.p[j].sum() == pytest.approx(1.0)
        assert used <= 1 + 1e-9 and m.gamma.sum() <= 1 + 1e-9 and np.all(m.gamma >= share - 1e-12)


def test_water_filling_spec_example() -> None:
    m = multiclass_optimum([0.4, 0.3], [1, 1], [SUB, (1, 1.5, 1.8)])
    np.testing.assert_allclose(m.gamma, [0.533333, 0.466667], atol=1e-6)
    np.testing.assert_allclose(m.x[0], [0, 0, 0, 0.133333, 0], atol=1e-6)
    np.testing.assert_allclose(m.x[1], [0, 0.066667, 0.111111], atol=1e-6)
    np.testing.assert_allclose(m.p[1], [0, 1 / 3, 2 / 3], atol=1e-9)
    assert m.objective == pytest.approx(0.311111, abs=1e-6)


# spec 6.2: n, s, lam, p (or None: from the LP), P_B, E[T]
TABLE_62 = [
    (6, (1, 1.8, 2.5), 0.87, None, 0.329019, 0.583051),
    (10, SUB, 0.8, None, 0.307348, 0.442608),
    (20, SUB, 0.8, None, 0.233769, 0.425669),
    (20, (1, 2, 3, 4, 5), 0.8, (0, 0, 0, 0, 1), 0.228145, 0.200000),
]


@pytest.mark.parametrize(("n", "s", "lam", "p", "blocking", "mean_t"), TABLE_62)
def test_small_system_ctmc_matches_spec(n, s, lam, p, blocking, mean_t) -> None:
    if p is None:
        p = lp_optimum(s, lam).p
    ex = small_system_ctmc(n, s, lam, p)
    assert ex.blocking == pytest.approx(blocking, abs=5e-7)
    assert ex.mean_execution_time == pytest.approx(mean_t, abs=5e-7)
    # Little's law and rate conservation (spec (3)-(4)) hold exactly in the stationary chain
    accepted = n * lam * (1 - ex.blocking)
    assert ex.mean_jobs.sum() == pytest.approx(accepted * ex.mean_execution_time, rel=1e-9)
    assert np.asarray(s) @ ex.mean_jobs == pytest.approx(accepted, rel=1e-9)


def test_bad_input_is_named() -> None:
    with pytest.raises(ValueError, match=r"s\(1\) must be 1"):
        check_speed_up([2, 3])
    with pytest.raises(ValueError, match="P1"):
        check_speed_up([1, 1.5, 1.5])
    with pytest.raises(ValueError, match="P2"):
        check_speed_up([1, 1.5, 2.2])
    with pytest.raises(ValueError, match="Proposition 1"):
        lp_optimum(SUB, 1.2)
    with pytest.raises(ValueError, match="feasible only"):
        multiclass_optimum([0.7, 0.5], [1, 1], [SUB, SUB])
    with pytest.raises(ValueError, match="not in"):
        traffic(4, 0.0, 1.5)
    assert traffic(4000, 0.5, 0.1) == pytest.approx(1 - 0.1 / math.sqrt(4000))
