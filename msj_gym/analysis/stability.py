"""Stability limits of policies, where a theorem gives one: the largest load at which a policy is
stable (the sup of the loads rho = lambda * sum_i alpha_i E[S_i] n_i / k of its stability region, the
class mix held fixed). One function per theorem; a policy declares which applies to it in its
``stability_limit`` method, and :func:`msj_gym.registry.stability_limit` asks the policy.

* ServerFilling and its SRPT / Gittins variants: 1 when k and every server need are powers of two
  (Grosof & Harchol-Balter (2023), Sec. 6; Anselmi & Doncel (2024), Sec. 1).
* MSF (non-preemptive) and every MSFQ: 1 on a one-or-all workload (Chen et al. (2026), Thm. 5.1; MSF is MSFQ
with
  threshold 0).
* Static Quickswap: the sufficient condition of Chen et al. (2026), Sec. 5.1 (Remark 1),
  lambda * sum_i alpha_i E[S_i] / floor(k / n_i) < 1, which is 1 when every need divides k. A lower
  bound on the limit, marked so.
* FCFS with exponential durations: exact, from the *saturated system* (the queue never empties; its
  departure rate X is the largest stable arrival rate, the saturation rule of Foss & Chernova used for
  FCFS in the works Chen et al. (2026), Sec. 2 cites). :func:`fcfs_saturated` solves its Markov chain: the
  numbers of jobs of each class in service and the class of the blocked head-of-line job.
"""

from __future__ import annotations

import numpy as np

from ..workloads.workload import ClassTable

#: A state of the saturated chain: jobs in service per class, and the head-of-line job's class.
_State = tuple[tuple[int, ...], int]
#: Where an admission cascade stops, with its probability.
_Stop = tuple[_State, float]

__all__ = [
    "SaturatedFCFS",
    "fcfs_limit",
    "fcfs_saturated",
    "msf_one_or_all_limit",
    "server_filling_limit",
    "static_quickswap_limit",
]


def _pow2(n: int) -> bool:
    return n >= 1 and n & (n - 1) == 0


def _one_or_all(workload: ClassTable) -> bool:
    needs = sorted(int(n) for n in workload.server_needs)
    return len(needs) == 2 and needs == [1, workload.num_servers]


def _work_per_arrival(workload: ClassTable) -> float:
    """sum_i alpha_i E[S_i] n_i / k: the load per unit arrival rate."""
    a, m, n = workload.probabilities, workload.mean_service_times, workload.server_needs
    return float(np.sum(a * m * n) / workload.num_servers)


class SaturatedFCFS:
    """The saturated FCFS system's throughput (jobs per unit time), utilisation and load limit."""

    def __init__(self, throughput: float, utilization: float, load_limit: float, states: int) -> None:
        self.throughput = throughput
        self.utilization = utilization
        self.load_limit = load_limit
        self.states = states

    def __repr__(self) -> str:
        return (
            f"SaturatedFCFS(throughput={self.throughput:.6g}, utilization={self.utilization:.6g}, "
            f"load_limit={self.load_limit:.6g}, states={self.states})"
        )


def fcfs_saturated(workload: ClassTable, max_states: int = 5000) -> SaturatedFCFS | None:
    """Solve the saturated FCFS chain of ``workload`` (exponential durations only; None otherwise or
    when the chain has more than ``max_states`` states).

    After each departure the head-of-line job enters service if it fits, and so on down the queue,
    each next job's class drawn from the class probabilities; the state is (jobs in service per
    class, class of the head-of-line job that does not fit)."""
    if any(c.service_time.kind != "exponential" for c in workload.classes):
        return None
    k = int(workload.num_servers)
    need = [int(n) for n in workload.server_needs]
    alpha = [float(a) for a in workload.probabilities]
    rate = [1.0 / float(m) for m in workload.mean_service_times]
    nc = len(need)
    live = [i for i in range(nc) if alpha[i] > 0]
    # any feasible packing can be a state: give up early on large systems
    if _count_packings(k, [need[i] for i in live], max_states) > max_states:
        return None

    memo: dict[_State, tuple[_Stop, ...]] = {}

    def cascade(c: tuple[int, ...], h: int) -> tuple[_Stop, ...]:
        """Where admission from state (c, head class h) stops, with probabilities. Each admission
        leads to the state with one more job in service, so a cascade is as deep as k jobs fit:
        worked out with an explicit stack, not recursion, which k = 512 need-1 servers would exceed."""
        stack = [(c, h)]
        while stack:
            c_, h_ = stack[-1]
            if (c_, h_) in memo:
                stack.pop()
                continue
            free = k - sum(ci * ni for ci, ni in zip(c_, need, strict=True))
            if need[h_] > free:
                memo[(c_, h_)] = (((c_, h_), 1.0),)
                stack.pop()
                continue
            up = tuple(ci + (i == h_) for i, ci in enumerate(c_))
            todo = [(up, j) for j in live if (up, j) not in memo]
            if todo:
                stack.extend(todo)
                continue
            out: dict[tuple[tuple[int, ...], int], float] = {}
            for j in live:
                for s, p in memo[(up, j)]:
                    out[s] = out.get(s, 0.0) + alpha[j] * p
            memo[(c_, h_)] = tuple(out.items())
            stack.pop()
        return memo[(c, h)]

    start: dict[tuple[tuple[int, ...], int], float] = {}
    for j in live:
        for s, p in cascade((0,) * nc, j):
            start[s] = start.get(s, 0.0) + alpha[j] * p
    index: dict[tuple[tuple[int, ...], int], int] = {}
    frontier = list(start)
    transitions: list[tuple[int, int, float]] = []
    for s in frontier:
        index.setdefault(s, len(index))
    while frontier:
        s = frontier.pop()
        c, h = s
        for i in range(nc):
            if c[i] == 0:
                continue
            c2 = list(c)
            c2[i] -= 1
            for t, p in cascade(tuple(c2), h):
                if t not in index:
                    if len(index) >= max_states:
                        return None
                    index[t] = len(index)
                    frontier.append(t)
                transitions.append((index[s], index[t], c[i] * rate[i] * p))
    n = len(index)
    pi = _stationary(n, transitions)
    states = sorted(index, key=index.__getitem__)
    out_rate = np.array([sum(ci * ri for ci, ri in zip(c, rate, strict=True)) for c, _ in states])
    busy = np.array([sum(ci * ni for ci, ni in zip(c, need, strict=True)) for c, _ in states])
    throughput = float(pi @ out_rate)
    return SaturatedFCFS(throughput, float(pi @ busy) / k, throughput * _work_per_arrival(workload), n)


def _stationary(n: int, transitions: list[tuple[int, int, float]]) -> np.ndarray:
    """The stationary distribution of the chain on states ``0..n-1`` with these (from, to, rate)
    transitions (repeats add up, self-loops do nothing)."""
    q = np.zeros((n, n))
    for a, b, r in transitions:
        if a != b:
            q[a, b] += r
            q[a, a] -= r
    # pi Q = 0, sum pi = 1
    m = np.vstack([q.T, np.ones(n)])
    rhs = np.zeros(n + 1)
    rhs[-1] = 1.0
    return np.linalg.lstsq(m, rhs, rcond=None)[0]


def _count_packings(k: int, needs: list[int], cap: int) -> int:
    """The number of vectors c >= 0 with sum c_i n_i <= k, counted up to ``cap`` (then cap + 1)."""
    total = 0

    def rec(i: int, free: int) -> None:
        nonlocal total
        if total > cap:
            return
        if i == len(needs):
            total += 1
            return
        for c in range(free // needs[i] + 1):
            rec(i + 1, free - c * needs[i])
            if total > cap:
                return

    rec(0, k)
    return total


def server_filling_limit(workload: ClassTable) -> tuple[float, str] | None:
    """ServerFilling and its SRPT / Gittins variants: throughput-optimal (limit 1) when k and every
    server need are powers of two; no theorem otherwise."""
    k = int(workload.num_servers)
    if _pow2(k) and all(_pow2(int(n)) for n in workload.server_needs):
        return 1.0, "Grosof & Harchol-Balter (2023), Sec. 6: throughput-optimal (k, needs powers of two)"
    return None


def msf_one_or_all_limit(workload: ClassTable) -> tuple[float, str] | None:
    """MSF (non-preemptive) and every MSFQ: throughput-optimal on a one-or-all workload."""
    if _one_or_all(workload):
        return 1.0, "Chen et al. (2026), Thm. 5.1: throughput-optimal on one-or-all"
    return None


def static_quickswap_limit(workload: ClassTable) -> tuple[float, str]:
    """Static Quickswap: the sufficient condition ``lambda * sum_i alpha_i E[S_i] / floor(k / n_i) < 1``
    as a load (a lower bound on the limit), which is 1 when every need divides k."""
    k = int(workload.num_servers)
    a, m = workload.probabilities, workload.mean_service_times
    per_rate = float(np.sum(a * m / np.floor(k / np.asarray(workload.server_needs, dtype=np.float64))))
    limit = _work_per_arrival(workload) / per_rate
    if abs(limit - 1.0) < 1e-12:
        return 1.0, "Chen et al. (2026), Remark 1: throughput-optimal (every need divides k)"
    return limit, "Chen et al. (2026), Sec. 5.1: sufficient condition (a lower bound)"


def fcfs_limit(workload: ClassTable) -> tuple[float, str] | None:
    """FCFS with exponential durations: exact, from the saturated system (:func:`fcfs_saturated`); None
    where its chain is not solved (other durations, too many states)."""
    sat = fcfs_saturated(workload)
    if sat is None:
        return None
    return sat.load_limit, f"saturated FCFS chain, exact for exponential durations ({sat.states} states)"
