"""Balanced fairness on the job-server compatibility model (Bonald & Comte, 2017): exact references.

Notation of the paper. ``S`` servers with service rates ``mu_s`` (capacity ``C_s`` over the mean job
size ``sigma``), ``N`` classes with compatibility sets ``S_i`` and arrival rates ``lambda_i``;
``mu(A)`` is the total capacity of the servers some class of ``A`` may use.

* :func:`stability_violation`: Theorem 1, ``sum_{i in A} lambda_i < mu(A)`` for every non-empty ``A``.
* :func:`balance_function` / :func:`stationary_distribution`: recursion (4) and distribution (3) of the
  aggregate state ``x`` (jobs per class), on a box ``x_i <= L``.
* :func:`balanced_fair_performance`: per-class mean number of jobs, mean delay ``delta_i =
  E[x_i] / lambda_i`` and mean service rate ``gamma_i = sigma / delta_i`` (eq. 9), from recursion (4)
  summed until the mass left outside the box is negligible.
* :func:`tree_service_rates`: the closed forms (10)-(11) of the three-server tree.
* :func:`random_assignment_performance`: ``S`` unit servers, each job on ``d`` servers chosen uniformly
  at random (``N = C(S, d)`` classes, intractable for recursion (4) at ``S = 100``). This is an exact
  symmetric reduction, not Gardner et al.'s closed form: by Corollary 2 the mean number of jobs is that
  of the FCFS queue, whose stationary measure (1) summed over the detailed states depends on a job
  sequence only through the sizes ``M_k`` of the union of the first ``k`` jobs' servers, a Markov chain
  on ``{0, d, ..., S}``; summing (1) along that chain is an ``O(S d)`` triangular solve.

By Theorem 2 and Corollary 2 these are the exact values of FCFS and of Algorithm 1 (any m) with
exponential job sizes, and of balanced fairness with any size distribution.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..core.jit import kernel_jit
from ..workloads.compat import CompatWorkload

__all__ = [
    "BalancedFairPerformance",
    "balance_function",
    "balanced_fair_performance",
    "capacity_of_sets",
    "random_assignment_performance",
    "stability_violation",
    "stationary_distribution",
    "tree_service_rates",
    "workload_performance",
]

MAX_CELLS = 12_000_000  # largest box of the recursion (float64 cells)


def capacity_of_sets(
    capacities: Sequence[float] | np.ndarray, class_servers: Sequence[Sequence[int]]
) -> np.ndarray:
    """``mu(A)`` for every set of classes ``A``, indexed by bitmask (bit ``i`` = class ``i``)."""
    n = len(class_servers)
    if n > 24:
        raise ValueError(f"class_servers: at most 24 classes for subset enumeration, got {n}")
    caps = np.asarray(capacities, dtype=np.float64)
    server_mask = [sum(1 << s for s in set(srv)) for srv in class_servers]
    union = [0] * (1 << n)
    mu = np.zeros(1 << n)
    for a in range(1, 1 << n):
        low = (a & -a).bit_length() - 1
        union[a] = union[a & (a - 1)] | server_mask[low]
        u = union[a]
        mu[a] = sum(caps[s] for s in range(caps.size) if (u >> s) & 1)
    return mu


# --------------------------------------------------------------------------------------------------
# Theorem 1


def stability_violation(workload: CompatWorkload) -> str | None:
    """None if the compatibility workload satisfies Theorem 1, else a description of a violated set.

    Classes with fixed servers are checked over every set of classes. A single class with a random
    assignment of ``d`` of its pool ``P`` (Bonald & Comte (2017), Sec. 5) is checked exactly through its
    equivalent
    ``C(|P|, d)`` classes: the tightest sets are the classes inside the ``t`` smallest-capacity servers
    of ``P``, giving ``lambda C(t, d) / C(|P|, d) < (sum of the t smallest capacities)`` for every ``t``.
    """
    caps = np.asarray(workload.capacities, dtype=np.float64)
    sigma = float(workload.mean_size)
    classes = workload.classes
    random = [c for c in classes if c.choose]
    if random:
        if len(classes) != 1:
            expanded = []
            for c in classes:
                if not c.choose:
                    expanded.append((c.name, c.servers, c.arrival_rate))
                    continue
                subsets = list(itertools.combinations(c.servers, c.choose))
                if len(subsets) * len(classes) > 20:
                    raise NotImplementedError(
                        "stability check: mixed random-assignment classes are only supported when the "
                        f"expansion is small, got C({len(c.servers)}, {c.choose}) subsets"
                    )
                expanded += [(f"{c.name}{list(s)}", s, c.arrival_rate / len(subsets)) for s in subsets]
            return _check_sets(caps, sigma, expanded)
        c = random[0]
        pool = np.sort(caps[list(c.servers)])
        total = math.comb(len(c.servers), c.choose)
        for t in range(c.choose, len(c.servers) + 1):
            demand = c.arrival_rate * sigma * math.comb(t, c.choose) / total
            if demand >= pool[:t].sum():
                return (
                    f"jobs of class {c.name!r} assigned inside the {t} smallest servers of their pool bring "
                    f"work at rate {demand:.6g} >= their capacity {pool[:t].sum():.6g}"
                )
        return None
    named = [(c.name or f"class{i + 1}", c.servers, c.arrival_rate) for i, c in enumerate(classes)]
    return _check_sets(caps, sigma, named)


def _check_sets(
    caps: np.ndarray, sigma: float, classes: Sequence[tuple[str, Sequence[int], float]]
) -> str | None:
    mu = capacity_of_sets(caps, [srv for _, srv, _ in classes])
    lam = np.array([rate for _, _, rate in classes]) * sigma
    n = len(classes)
    for a in range(1, 1 << n):
        members = [i for i in range(n) if (a >> i) & 1]
        load = lam[members].sum()
        if load > 0 and load >= mu[a]:
            names = [classes[i][0] for i in members]
            return (
                f"classes {names} bring work at rate {load:.6g} >= the capacity {mu[a]:.6g} of their servers"
            )
    return None


# --------------------------------------------------------------------------------------------------
# Recursion (4) on a box


@kernel_jit(nrt=True)
def _psi_box(mu_of_mask, weights, size):
    """psi(x) = Phi(x) prod_i w_i^x_i on the box [0, size)^N, C order, by recursion (4):
    psi(x) = sum_{i in A(x)} w_i psi(x - e_i) / mu(A(x)). With unit weights psi is Phi."""
    n = weights.size
    strides = np.ones(n, dtype=np.int64)
    for i in range(n - 2, -1, -1):
        strides[i] = strides[i + 1] * size
    total = strides[0] * size
    psi = np.zeros(total)
    psi[0] = 1.0
    x = np.zeros(n, dtype=np.int64)
    for f in range(1, total):
        i = n - 1
        while True:  # odometer increment of x
            x[i] += 1
            if x[i] < size:
                break
            x[i] = 0
            i -= 1
        mask = 0
        acc = 0.0
        for i in range(n):
            if x[i] > 0:
                mask |= 1 << i
                acc += weights[i] * psi[f - strides[i]]
        psi[f] = acc / mu_of_mask[mask]
    return psi


def _box(mu: np.ndarray, weights: np.ndarray, size: int) -> np.ndarray:
    n = weights.size
    if float(size) ** n > MAX_CELLS:
        raise ValueError(f"max_jobs: a box of {size}^{n} cells exceeds the limit of {MAX_CELLS}")
    return _psi_box(mu, weights.astype(np.float64), int(size)).reshape((size,) * n)


def balance_function(
    capacities: Sequence[float], class_servers: Sequence[Sequence[int]], max_jobs: int
) -> np.ndarray:
    """Phi(x) of recursion (4) for every ``x`` with ``x_i <= max_jobs`` (array of shape
    ``(max_jobs + 1,) * N``); ``capacities`` are the service rates ``mu_s``."""
    mu = capacity_of_sets(capacities, class_servers)
    return _box(mu, np.ones(len(class_servers)), max_jobs + 1)


def stationary_distribution(
    capacities: Sequence[float],
    class_servers: Sequence[Sequence[int]],
    arrival_rates: Sequence[float],
    max_jobs: int,
) -> np.ndarray:
    """pi(x) of (3) on the box ``x_i <= max_jobs``, normalised over the box (the truncation of the
    stationary distribution of the aggregate state)."""
    mu = capacity_of_sets(capacities, class_servers)
    psi = _box(mu, np.asarray(arrival_rates, dtype=np.float64), max_jobs + 1)
    return psi / psi.sum()


@dataclass(frozen=True)
class BalancedFairPerformance:
    """Per-class metrics under balanced fairness (Bonald & Comte (2017), eq. 9). ``mean_delay`` is in time
    units,
    ``mean_service_rate`` (``gamma_i = sigma / delta_i``) in capacity units; ``p_empty = pi(0)``;
    ``truncation`` bounds the probability mass left outside the computation."""

    mean_jobs: np.ndarray
    mean_delay: np.ndarray
    mean_service_rate: np.ndarray
    p_empty: float
    truncation: float


def balanced_fair_performance(
    capacities: Sequence[float] | np.ndarray,
    class_servers: Sequence[Sequence[int]],
    arrival_rates: Sequence[float] | np.ndarray,
    *,
    mean_size: float = 1.0,
    tol: float = 1e-11,
) -> BalancedFairPerformance:
    """Mean number of jobs, delay and service rate per class under balanced fairness, by recursion (4)
    on boxes grown until the mass on their outer faces is below ``tol`` (relative)."""
    lam = np.asarray(arrival_rates, dtype=np.float64)
    n = lam.size
    mu = capacity_of_sets(np.asarray(capacities, dtype=np.float64) / mean_size, class_servers)
    why = _check_sets(
        np.asarray(capacities, dtype=np.float64),
        mean_size,
        [("", s, r) for s, r in zip(class_servers, lam, strict=True)],
    )
    if why is not None:
        raise ValueError(f"unstable (Bonald & Comte 2017, Theorem 1): {why}")
    largest = int(MAX_CELLS ** (1.0 / n) + 1e-9)
    size = min(32, largest)
    while True:
        psi = _box(mu, lam, size)
        total = psi.sum()
        face = 0.0
        for i in range(n):
            face = max(face, float(np.take(psi, size - 1, axis=i).sum()) / total)
        if face < tol:
            break
        if size >= largest:
            raise ValueError(
                f"balanced_fair_performance: truncation {face:.2g} > tol {tol:.2g} at the largest box "
                f"({size}^{n}); the load is too close to the stability limit for this method"
            )
        size = min(2 * size, largest)
    pi = psi / total
    grid = np.arange(size, dtype=np.float64)
    mean_jobs = np.array(
        [float(np.tensordot(pi.sum(axis=tuple(j for j in range(n) if j != i)), grid, 1)) for i in range(n)]
    )
    with np.errstate(divide="ignore", invalid="ignore"):
        delay = np.where(lam > 0, mean_jobs / lam, np.nan)
        rate = mean_size / delay
    return BalancedFairPerformance(mean_jobs, delay, rate, float(pi.flat[0]), face)


def tree_service_rates(mu1: float, mu2: float, mu3: float, lam1: float, lam2: float) -> tuple[float, float]:
    """(gamma_1, gamma_2) of the closed forms (10)-(11): class 1 on servers {1, 3}, class 2 on {2, 3},
    service rates ``mu_s`` (unit mean size). ``mu2 = 0`` gives the asymmetric system of Fig. 2."""
    mu = mu1 + mu2 + mu3
    rho1, rho2, rho = lam1 / (mu1 + mu3), lam2 / (mu2 + mu3), (lam1 + lam2) / mu
    if max(rho1, rho2, rho) >= 1.0:
        raise ValueError(
            f"unstable (Bonald & Comte 2017, Theorem 1): rho1={rho1:.4g}, rho2={rho2:.4g}, rho={rho:.4g}"
        )
    den = mu - (mu1 + mu3) * rho1 - (mu2 + mu3) * rho2 + mu3 * rho1 * rho2
    g1 = 1.0 / (1.0 / (mu * (1.0 - rho)) + (mu2 / (mu1 + mu3)) * (1.0 - rho2) / (1.0 - rho1) / den)
    g2 = 1.0 / (1.0 / (mu * (1.0 - rho)) + (mu1 / (mu2 + mu3)) * (1.0 - rho1) / (1.0 - rho2) / den)
    return g1, g2


# --------------------------------------------------------------------------------------------------
# Random d-assignment: exact symmetric reduction


def random_assignment_performance(
    num_servers: int, d: int, arrival_rate: float, *, capacity: float = 1.0, mean_size: float = 1.0
) -> BalancedFairPerformance:
    """Mean number of jobs, delay and service rate of a job (all classes alike) when each job is assigned
    ``d`` of ``num_servers`` servers of equal ``capacity`` uniformly at random, under balanced fairness
    (equivalently FCFS / Algorithm 1 with exponential sizes). ``arrival_rate`` is the total rate.

    Summing (1) over job sequences: a sequence of ``n`` jobs weighs ``prod_k (lambda/N) / mu(U_k)`` with
    ``U_k`` the union of the first ``k`` jobs' servers, and ``|U_k|`` is a Markov chain (from ``m`` to
    ``m + j`` with probability ``C(S-m, j) C(m, d-j) / C(S, d)``). With ``w(m', m) = lambda P(m' -> m) /
    (m mu)``: ``g(m) = sum_{m'} g(m') w(m', m)`` (total weight of the sequences ending in union size m,
    ``g(0) = 1``), ``h(m) = sum_{m'} (h(m') + g(m')) w(m', m)`` (the same weighted by length); then
    ``P(empty) = 1 / sum g`` and ``E[n] = sum h / sum g``.
    """
    s, d = int(num_servers), int(d)
    if not 1 <= d <= s:
        raise ValueError(f"d: expected an integer in [1, {s}], got {d!r}")
    lam = float(arrival_rate)
    mu = float(capacity) / float(mean_size)
    if not 0.0 < lam < s * mu:
        raise ValueError(
            f"unstable (Bonald & Comte 2017, Theorem 1): arrival rate {lam:.6g} "
            f">= total service rate {s * mu:.6g}"
        )
    total = math.comb(s, d)
    g = np.zeros(s + 1)
    h = np.zeros(s + 1)
    g[0] = 1.0

    def p(m_from: int, m_to: int) -> float:
        j = m_to - m_from
        if j < 0 or j > d or d - j > m_from:
            return 0.0
        return math.comb(s - m_from, j) * math.comb(m_from, d - j) / total

    for m in range(d, s + 1):
        w_self = lam * p(m, m) / (m * mu)
        if w_self >= 1.0:
            raise ValueError(
                f"unstable (Bonald & Comte 2017, Theorem 1): jobs inside {m} servers arrive too fast"
            )
        gin = hin = 0.0
        for m0 in [0, *range(max(d, m - d), m)]:
            w = lam * p(m0, m) / (m * mu)
            gin += g[m0] * w
            hin += (h[m0] + g[m0]) * w
        g[m] = gin / (1.0 - w_self)
        h[m] = (hin + w_self * g[m]) / (1.0 - w_self)
    z = g.sum()
    mean_jobs = float(h.sum() / z)
    delay = mean_jobs / lam
    return BalancedFairPerformance(
        np.array([mean_jobs]), np.array([delay]), np.array([mean_size / delay]), float(1.0 / z), 0.0
    )


def workload_performance(workload: CompatWorkload) -> BalancedFairPerformance:
    """Balanced-fair per-class metrics of a :class:`~msj_gym.workloads.compat.CompatWorkload`: the
    symmetric reduction for a single random-assignment class on equal servers, recursion (4)
    otherwise."""
    caps = np.asarray(workload.capacities, dtype=np.float64)
    classes = workload.classes
    if len(classes) == 1 and classes[0].choose:
        c = classes[0]
        if len(c.servers) != caps.size or not np.all(caps == caps[0]):
            raise NotImplementedError("random assignment: only a pool of all servers with equal capacities")
        return random_assignment_performance(
            caps.size, c.choose, c.arrival_rate, capacity=float(caps[0]), mean_size=workload.mean_size
        )
    if any(c.choose for c in classes):
        raise NotImplementedError("mixed random-assignment classes: expand them into fixed classes")
    return balanced_fair_performance(
        caps, [c.servers for c in classes], [c.arrival_rate for c in classes], mean_size=workload.mean_size
    )
