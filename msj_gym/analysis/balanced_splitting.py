"""Balanced Splitting (Anselmi & Doncel (2024)): the static server partition and its Erlang-B
analysis.

* :func:`bs_partition`: the sets A_i and the helpers H of eq. (2a)-(2b), with the psi search;
* :func:`helper_probabilities`: per class E_{s_i}(lambda alpha_i d_i), the probability that a class-i
  arrival is sent to the helpers under ModifiedBS-pi (Property 1, eq. (11)), and P_H of eq. (16), which
  bounds BS-pi's P_H from above (Corollary 1);
* :func:`helper_load`: the left side of Proposition 1's sufficient stability condition (5);
* :func:`theorem1_limit`: the limit sum_i alpha_i d_i of BS-pi's mean response time (Theorem 1);
* :func:`theorem2_bound`: the bound (9) on lim sqrt(k / f_k) P_H in the critical regime (Theorem 2).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ..workloads.workload import ClassTable, Workload
from .queueing import erlang_b

if TYPE_CHECKING:
    from ..workloads.trace import TraceWorkload

__all__ = [
    "BSPartition",
    "bs_partition",
    "helper_load",
    "helper_probabilities",
    "relative_demands",
    "theorem1_limit",
    "theorem2_bound",
]

# c_i = psi-free number of class-i blocks k rho_i / (n_i rho) closer than this (relative) to an integer is
# taken as that integer: the paper's psi = 1 case ("k / n_i rho_i / rho is an integer for all i") must not
# hinge on the last bit of a floating-point product.
_INTEGER_TOL = 1e-9


@dataclass(frozen=True)
class BSPartition:
    """The static partition of the k servers (Anselmi & Doncel (2024), Sec. 3.2).

    ``blocks[i]`` = s_i = floor(psi k rho_i / (n_i rho)) (class i's job positions in A_i),
    ``servers[i]`` = a_i = s_i n_i = |A_i|, ``helpers`` = |H| = k - sum_i a_i, and ``psi``: 1 when
    every k rho_i / (n_i rho) is an integer (then H is empty) or when psi = 1 leaves at least max_i n_i
    helpers; otherwise the supremum of the x in [0, 1] that leave at least max_i n_i helpers. The
    helper count is a non-increasing step function of x that drops *at* each breakpoint, so that
    supremum is itself a breakpoint where too few helpers are left; the partition is the one of the
    step just below it (the largest x that is feasible), and ``psi`` reports the breakpoint.
    """

    num_servers: int
    server_needs: tuple[int, ...]
    demands: tuple[float, ...]
    psi: float
    blocks: tuple[int, ...]
    servers: tuple[int, ...]
    helpers: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "psi": self.psi,
            "blocks": list(self.blocks),
            "servers": list(self.servers),
            "helpers": self.helpers,
        }


def relative_demands(workload: ClassTable) -> np.ndarray:
    """rho_i = alpha_i d_i n_i (Anselmi & Doncel (2024), Sec. 3.1): the server-time a random arrival brings to
    class i."""
    return (
        np.asarray(workload.probabilities, dtype=np.float64)
        * np.asarray(workload.mean_service_times, dtype=np.float64)
        * np.asarray(workload.server_needs, dtype=np.float64)
    )


def bs_partition(
    num_servers: int, server_needs: Sequence[int] | np.ndarray, demands: Sequence[float] | np.ndarray
) -> BSPartition:
    """The partition of eq. (2a)-(2b) for k = ``num_servers``, needs n_i and relative demands rho_i.

    Raises ``ValueError`` naming the field when some n_i > k or n_i < 1, some rho_i is not a positive
    finite number, or the lengths differ. A class with s_i = 0 (its share is below one job position) has
    no servers of its own: all its jobs go to the helpers (Anselmi & Doncel (2024), Sec. 3.2, "one can always
    redirect class-i jobs to the helpers").
    """
    if isinstance(num_servers, bool) or int(num_servers) != num_servers or num_servers < 1:
        raise ValueError(f"num_servers: expected a positive integer, got {num_servers!r}")
    k = int(num_servers)
    needs = np.asarray(server_needs)
    rho = np.asarray(demands, dtype=np.float64)
    if needs.ndim != 1 or needs.size == 0 or rho.shape != needs.shape:
        raise ValueError(
            f"demands: expected one relative demand per class ({needs.size} classes), got {rho.size}"
        )
    for i, n in enumerate(needs):
        if int(n) != n or n < 1:
            raise ValueError(f"server_needs[{i}]: expected a positive integer, got {n!r}")
        if n > k:
            raise ValueError(
                f"server_needs[{i}]: {int(n)} exceeds num_servers = {k}; no psi leaves room for this class"
            )
    for i, r in enumerate(rho):
        if not math.isfinite(r) or r <= 0:
            raise ValueError(
                f"demands[{i}]: expected a positive relative demand rho_i = alpha_i d_i n_i, "
                f"got {float(r)!r} (a class without demand gets no share of the partition; remove it from "
                "the workload)"
            )
    needs = needs.astype(np.int64)
    c = k * rho / (needs * rho.sum())  # blocks of class i at psi = 1
    near = np.abs(c - np.round(c)) <= _INTEGER_TOL * np.maximum(1.0, c)
    c = np.where(near, np.round(c), c)
    largest = int(needs.max())

    def helpers_at(blocks: np.ndarray) -> int:
        return k - int(np.dot(blocks, needs))

    if np.all(c == np.round(c)):
        blocks = c.astype(np.int64)  # the paper's psi = 1 case: H may be empty
        return _make(k, needs, rho, 1.0, blocks, helpers_at(blocks))
    full = np.floor(c).astype(np.int64)
    if helpers_at(full) >= largest:
        return _make(k, needs, rho, 1.0, full, helpers_at(full))
    # helpers_at(floor(x c)) is non-increasing in x: bisect for the last feasible x (to the resolution
    # of floats), which gives the step just below the first infeasible breakpoint.
    lo, hi = 0.0, 1.0
    while True:
        mid = 0.5 * (lo + hi)
        if not lo < mid < hi:
            break
        if helpers_at(np.floor(mid * c).astype(np.int64)) >= largest:
            lo = mid
        else:
            hi = mid
    blocks = np.floor(lo * c).astype(np.int64)
    return _make(k, needs, rho, hi, blocks, helpers_at(blocks))


def _make(k: int, needs: np.ndarray, rho: np.ndarray, psi: float, blocks: np.ndarray, h: int) -> BSPartition:
    return BSPartition(
        num_servers=k,
        server_needs=tuple(int(n) for n in needs),
        demands=tuple(float(r) for r in rho),
        psi=float(psi),
        blocks=tuple(int(b) for b in blocks),
        servers=tuple(int(b * n) for b, n in zip(blocks, needs, strict=True)),
        helpers=int(h),
    )


def _offered(workload: Workload | TraceWorkload) -> np.ndarray:
    """lambda alpha_i d_i: the offered load (in jobs) of the loss system M/GI/s_i/s_i of class i."""
    return (
        # a built Workload's rate is a float: set in __post_init__, though declared optional
        float(workload.arrival_rate)  # type: ignore[arg-type]
        * np.asarray(workload.probabilities, dtype=np.float64)
        * np.asarray(workload.mean_service_times, dtype=np.float64)
    )


def _partition_of(workload: ClassTable, partition: BSPartition | None) -> BSPartition:
    if partition is not None:
        return partition
    return bs_partition(workload.num_servers, workload.server_needs, relative_demands(workload))


def helper_probabilities(
    workload: Workload | TraceWorkload, partition: BSPartition | None = None
) -> tuple[np.ndarray, float]:
    """(per class E_{s_i}(lambda alpha_i d_i), P_H = sum_i alpha_i E_{s_i}(lambda alpha_i d_i)): under
    ModifiedBS-pi the fraction of class-i arrivals sent to the helpers (Property 1, eq. (11)) and the
    overall one (eq. (16)); BS-pi's P_H is at most the latter (Corollary 1). ``partition`` defaults to
    the one from the workload's own relative demands."""
    part = _partition_of(workload, partition)
    per_class = np.array([erlang_b(s, a) for s, a in zip(part.blocks, _offered(workload), strict=True)])
    p = np.asarray(workload.probabilities, dtype=np.float64)
    return per_class, float(np.dot(p, per_class))


def helper_load(workload: Workload, partition: BSPartition | None = None) -> float:
    """(lambda / |H|) sum_i rho_i E_{s_i}(lambda alpha_i d_i): the load ModifiedBS-pi puts on the helpers
    (Anselmi & Doncel (2024), Sec. 5.2). Proposition 1: if it is < 1 and pi is throughput optimal, BS-pi is
    stable. ``inf`` when there are no helpers but some class can be blocked."""
    part = _partition_of(workload, partition)
    per_class, _ = helper_probabilities(workload, part)
    # a built Workload's rate is a float: set in __post_init__, though declared optional
    rate = float(workload.arrival_rate)  # type: ignore[arg-type]
    work = rate * float(np.dot(relative_demands(workload), per_class))
    if part.helpers == 0:
        return 0.0 if work == 0.0 else math.inf
    return work / part.helpers


def theorem1_limit(workload: ClassTable) -> float:
    """sum_i alpha_i d_i: the limit of BS-pi's mean response time in the subcritical many-server regime
    (Theorem 1), i.e. the mean service time (zero wait)."""
    p = np.asarray(workload.probabilities, dtype=np.float64)
    return float(np.dot(p, np.asarray(workload.mean_service_times, dtype=np.float64)))


def _std_normal_pdf(x: float) -> float:
    return math.exp(-0.5 * x * x) / math.sqrt(2.0 * math.pi)


def _std_normal_cdf(x: float) -> float:
    return 0.5 * math.erfc(-x / math.sqrt(2.0))


def theorem2_bound(
    theta: float,
    probabilities: Sequence[float],
    mean_service_times: Sequence[float],
    server_needs: Sequence[int],
) -> float:
    """theta sum_i alpha_i phi(theta_i) / (theta_i Phi(theta_i)), theta_i = theta sqrt(rho_i / (n_i rho)):
    Theorem 2's bound on lim_k sqrt(k / f_k) P_H in the critical regime (8). ``server_needs`` are the
    unscaled n_i (those of f_k = 1) and rho_i = alpha_i d_i n_i with them."""
    if not math.isfinite(theta) or theta <= 0:
        raise ValueError(f"theta: expected a positive number, got {theta!r}")
    p = np.asarray(probabilities, dtype=np.float64)
    d = np.asarray(mean_service_times, dtype=np.float64)
    n = np.asarray(server_needs, dtype=np.float64)
    rho = p * d * n
    total = 0.0
    for i in range(p.size):
        th = theta * math.sqrt(rho[i] / (n[i] * rho.sum()))
        total += p[i] * _std_normal_pdf(th) / (th * _std_normal_cdf(th))
    return theta * total
