"""Moldable jobs with concave speed-up in a loss system: the optimisation problems behind the p-scheme.

Source: Ghanbarian et al. (2024), moldable jobs, Sec. 3-4 and 6. The paper's mathematics was lost in
extraction; the formulas here are reconstructed from its text: LP (P) and its closed form (Theorem 1),
the probability vector p, the multi-class problem (Q) solved by water-filling over (Q1), and the exact
CTMC of small systems (checked against LP solvers and simulation).

Notation: ``speed_up[i-1] = s(i)`` for ``i = 1..d`` (``s(1) = 1``, strictly increasing, concave);
``lam`` is the normalised arrival rate (arrivals per server per mean inherent size).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__ = [
    "LPOptimum",
    "MultiClassOptimum",
    "SmallSystem",
    "check_speed_up",
    "lp_optimum",
    "multiclass_optimum",
    "small_system_ctmc",
    "traffic",
]

_TOL = 1e-12


def check_speed_up(speed_up: Sequence[float] | np.ndarray, where: str = "speed_up") -> np.ndarray:
    """``speed_up`` as a float array after checking P1 (``1 = s(1) < s(2) < ...``) and P2 (concavity,
    ``s(0) = 0``); errors name ``where`` and the offending entry."""
    try:
        s = np.asarray(speed_up, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{where}: expected a list of numbers, got {speed_up!r}") from None
    if s.ndim != 1 or s.size == 0 or not np.all(np.isfinite(s)):
        raise ValueError(f"{where}: expected a non-empty list of finite numbers, got {speed_up!r}")
    if abs(s[0] - 1.0) > _TOL:
        raise ValueError(f"{where}: s(1) must be 1 (unit-rate servers), got {s[0]!r}")
    ext = np.concatenate(([0.0], s))
    inc = np.diff(ext)
    for i in range(1, s.size):
        if inc[i] <= 0:
            raise ValueError(
                f"{where}: expected strictly increasing speed-up (P1), got "
                f"s({i + 1})={s[i]!r} <= s({i})={s[i - 1]!r}"
            )
        if inc[i] > inc[i - 1] + 1e-9:
            raise ValueError(
                f"{where}: expected concave speed-up (P2), got s({i + 1})-s({i})={inc[i]:.6g} > "
                f"s({i})-s({i - 1})={inc[i - 1]:.6g}"
            )
    return s


def traffic(num_servers: int, alpha: float, beta: float) -> float:
    """Normalised arrival rate ``lam_n = 1 - beta * n^(-alpha)`` (alpha = 0 mean-field,
    1/2 Halfin-Whitt, in (1/2, 1) super-Halfin-Whitt)."""
    if isinstance(num_servers, bool) or int(num_servers) != num_servers or num_servers < 1:
        raise ValueError(f"num_servers: expected a positive integer, got {num_servers!r}")
    lam = 1.0 - float(beta) * float(num_servers) ** (-float(alpha))
    if not 0.0 < lam <= 1.0:
        raise ValueError(
            f"traffic: 1 - beta * n^(-alpha) = {lam!r} is not in (0, 1] for n={num_servers}, "
            f"alpha={alpha!r}, beta={beta!r}"
        )
    return lam


@dataclass(frozen=True)
class LPOptimum:
    """Optimum of (P): ``x`` (x[i-1] = x*_i), ``objective`` = OPT, ``mean_execution_time`` T* = OPT/lam,
    ``p`` the p-scheme's probabilities s(i) x*_i / lam, ``case`` of Theorem 1 ('i', 'ii' or 'iii') and
    ``capacity_price`` the dual value v of the capacity constraint (0 when capacity is slack)."""

    lam: float
    x: np.ndarray
    objective: float
    mean_execution_time: float
    p: np.ndarray
    case: str
    capacity_price: float


def lp_optimum(speed_up: Sequence[float] | np.ndarray, lam: float) -> LPOptimum:
    """Closed-form optimum of (P): minimise sum x_i s.t. sum s(i) x_i = lam, sum i x_i <= 1, x >= 0
    (Theorem 1). Defined for ``0 < lam <= 1`` (Proposition 1)."""
    s = check_speed_up(speed_up)
    lam = float(lam)
    if not 0.0 < lam <= 1.0 + _TOL:
        raise ValueError(f"lam: (P) has an optimum only for 0 < lam <= 1 (Proposition 1), got {lam!r}")
    lam = min(lam, 1.0)
    d = s.size
    idx = np.arange(1, d + 1, dtype=np.float64)
    r = s / idx
    x = np.zeros(d)
    if lam <= r[-1] * (1.0 + _TOL):
        x[d - 1] = lam / s[d - 1]
        case, price = "i", 0.0
    else:
        # largest i with r(i) >= lam (r is non-increasing and r(1) = 1 >= lam)
        i = max(j for j in range(1, d + 1) if r[j - 1] >= lam * (1.0 - _TOL))
        if abs(r[i - 1] - lam) <= _TOL * lam:
            x[i - 1] = 1.0 / i
            case = "ii"
            price = 0.0 if i == d else float("nan")  # degenerate: any v in an interval is dual-optimal
        else:
            big_d = (i + 1) * s[i - 1] - i * s[i]
            x[i - 1] = ((i + 1) * lam - s[i]) / big_d
            x[i] = (s[i - 1] - i * lam) / big_d
            case, price = "iii", float((s[i] - s[i - 1]) / big_d)
    opt = float(x.sum())
    p = s * x / lam
    return LPOptimum(lam, x, opt, opt / lam, p, case, price)


@dataclass(frozen=True)
class MultiClassOptimum:
    """Optimum of (Q) by water-filling over (Q1) (Sec. 6): per class the reserved server fraction
    ``gamma``, the optimum ``x`` (list of arrays, x[k][i-1] = x*_{k,i}), the p-scheme vectors ``p`` within
    each reservation, and the objective (mean number of jobs per server); ``mean_execution_time`` is the
    objective divided by the total normalised arrival rate."""

    gamma: np.ndarray
    x: list[np.ndarray]
    p: list[np.ndarray]
    objective: float
    mean_execution_time: float


def multiclass_optimum(
    arrival_rates: Sequence[float] | np.ndarray,
    service_rates: Sequence[float] | np.ndarray,
    speed_ups: Sequence[Sequence[float]],
) -> MultiClassOptimum:
    """Solve (Q): min sum_k sum_i x_{k,i} s.t. sum_i mu_k s_k(i) x_{k,i} = lam_k for every k and
    sum_{k,i} i x_{k,i} <= 1, by the decomposition (Q1)/(Q2) and water-filling (Sec. 6)."""
    lam = np.asarray(arrival_rates, dtype=np.float64)
    mu = np.asarray(service_rates, dtype=np.float64)
    if lam.ndim != 1 or lam.size == 0 or lam.size != mu.size or lam.size != len(speed_ups):
        raise ValueError(
            "multiclass_optimum: arrival_rates, service_rates and speed_ups need one entry per class, got "
            f"{lam.size}, {mu.size} and {len(speed_ups)}"
        )
    if np.any(~np.isfinite(lam)) or np.any(lam <= 0) or np.any(~np.isfinite(mu)) or np.any(mu <= 0):
        raise ValueError(f"arrival_rates and service_rates must be positive, got {lam!r} and {mu!r}")
    speeds = [check_speed_up(s, f"speed_ups[{k}]") for k, s in enumerate(speed_ups)]
    rho = lam / mu
    if rho.sum() > 1.0 + _TOL:
        raise ValueError(f"load: (Q) is feasible only if sum_k lam_k/mu_k <= 1, got {rho.sum()!r}")
    gamma = rho.copy()
    residual = max(0.0, 1.0 - rho.sum())
    segments = []
    for k, s in enumerate(speeds):
        for j in range(1, s.size):
            big_d = (j + 1) * s[j - 1] - j * s[j]
            if big_d <= _TOL:
                continue  # s linear over [j, j+1]: more capacity does not help this class
            length = rho[k] * ((j + 1) / s[j] - j / s[j - 1])
            segments.append((-(s[j] - s[j - 1]) / big_d, k, j, length))
    for _, k, _, length in sorted(segments):
        if residual <= 0.0:
            break
        give = min(length, residual)
        gamma[k] += give
        residual -= give
    xs, ps, total = [], [], 0.0
    for k, s in enumerate(speeds):
        inner = lp_optimum(s, min(1.0, rho[k] / gamma[k]))
        xs.append(gamma[k] * inner.x)
        ps.append(inner.p)
        total += gamma[k] * inner.objective
    return MultiClassOptimum(gamma, xs, ps, float(total), float(total / lam.sum()))


@dataclass(frozen=True)
class SmallSystem:
    """Exact stationary metrics of the loss system under a probabilistic allocation (Exp(1) sizes)."""

    blocking: float
    mean_execution_time: float
    mean_jobs: np.ndarray  # E[Q_i], i = 1..d
    num_states: int


def small_system_ctmc(
    num_servers: int, speed_up: Sequence[float], lam: float, p: Sequence[float]
) -> SmallSystem:
    """Stationary distribution of the CTMC of the model (eq. (10)): state Q (jobs per allocation size),
    arrivals at rate n*lam, an arrival with m >= 1 idle servers gets k with probability
    p_k 1{m >= k} + 1{m == k} sum_{j>k} p_j, departures from Q_i at rate s(i) Q_i. Greedy is
    ``p = e_d``. Solved densely: meant for small systems."""
    s = check_speed_up(speed_up)
    d = s.size
    pv = np.asarray(p, dtype=np.float64)
    if pv.shape != (d,) or np.any(pv < 0) or abs(pv.sum() - 1.0) > 1e-9:
        raise ValueError(f"p: expected {d} non-negative probabilities summing to 1, got {p!r}")
    n = int(num_servers)
    if n < 1 or n > 60:
        raise ValueError(f"num_servers: the dense CTMC solve is for 1..60 servers, got {num_servers!r}")
    states = [
        q
        for q in itertools.product(*(range(n // i + 1) for i in range(1, d + 1)))
        if sum((i + 1) * qi for i, qi in enumerate(q)) <= n
    ]
    index = {q: j for j, q in enumerate(states)}
    m = len(states)
    gen = np.zeros((m, m))
    rate = n * float(lam)
    tail = np.concatenate((np.cumsum(pv[::-1])[::-1][1:], [0.0]))  # tail[k-1] = sum_{j>k} p_j
    alloc = np.zeros((m, d))  # P_k(Q) for accepted allocations
    for a, q in enumerate(states):
        idle = n - sum((i + 1) * qi for i, qi in enumerate(q))
        for k in range(1, min(idle, d) + 1):
            prob = pv[k - 1] + (tail[k - 1] if idle == k else 0.0)
            if prob > 0:
                alloc[a, k - 1] = prob
                nq = list(q)
                nq[k - 1] += 1
                gen[a, index[tuple(nq)]] += rate * prob
        for i in range(d):
            if q[i]:
                nq = list(q)
                nq[i] -= 1
                gen[a, index[tuple(nq)]] += s[i] * q[i]
        gen[a, a] = -gen[a].sum()
    a_mat = gen.T.copy()
    a_mat[-1] = 1.0  # pi Q = 0 has rank m - 1: replace one balance equation by sum(pi) = 1
    b = np.zeros(m)
    b[-1] = 1.0
    pi = np.linalg.solve(a_mat, b)
    accepted = pi @ alloc  # by PASTA: P(arrival accepted with k servers)
    p_acc = float(accepted.sum())
    mean_t = float((accepted / s).sum() / p_acc)
    mean_q = np.asarray(states, dtype=np.float64).T @ pi
    return SmallSystem(1.0 - p_acc, mean_t, mean_q, m)
