"""Exact long-run average-cost optimal scheduling of small multiserver-job systems.

Poisson arrivals of ``C`` classes (rate ``lambda_c``), exponential service times (rate ``mu_c``),
``k`` servers, a class-``c`` job holding ``n_c`` of them. The state of the Markov decision process is,
per class, the number of jobs in the system ``t_c`` and the number in service ``r_c`` (the running
*configuration* ``r`` packs: ``sum_c n_c r_c <= k``). The cost rate is the number of jobs in the system,
so that the optimal gain divided by the total arrival rate is the optimal mean response time (Little's
law).

* **Non-preemptive** (what ``MSJ-v0``'s actions express): at every arrival or departure the controller
  may start any set of waiting jobs that fits, or leave servers idle on purpose; running jobs run to
  completion. From ``(t, r)`` it may move to any ``(t, r')`` with ``r <= r' <= t`` that packs.
* **Preemptive** (preempt-resume; with exponential service times the remaining time of a preempted job
  is again exponential, so the state is ``t`` alone): any packing configuration ``r' <= t``.

Method: uniformisation (constant ``Lambda = sum_c lambda_c + max_r sum_c r_c mu_c``) turns the
continuous-time problem into a discrete-time one in which a decision is taken at every (real or
fictitious) event; its optimal average cost per step times ``Lambda`` is the continuous-time optimum.
The state space is truncated at a buffer ``T_c`` jobs of class ``c`` in the system: an arrival finding
``T_c`` is lost. The blocked fraction of arrivals is reported (PASTA: the stationary probability that
``t_c = T_c``) and the buffers are grown until it is below ``blocking_target``; a check at larger
buffers reports how much the answer moves. Lost arrivals cost nothing in the truncated problem, so at
too small a buffer its optimum may give a class up (one-or-all's heavy jobs: never served, their
arrivals lost); once that is seen, the buffer search charges every lost arrival the buffer's content,
and the final buffers are solved again without the charge. Where that problem still profits from
losing arrivals (its policy iteration reaches a policy that blocks more than the target: one-or-all at
load 0.9, whose heavy class's tail is long), the charged solution is the answer, and
``lost_arrivals_charged`` says so; either way the reported value counts jobs in the system only.

Policy iteration solves it: each policy is evaluated exactly by one sparse LU factorisation (gain and
relative values) of its chain on the post-decision states it takes (a pre-decision state's value is
that of its post-decision state, and a policy that fills the servers takes few of them: one-or-all at
load 0.9 keeps 0.37 M of 3.5 M states), eliminated in a nested dissection of the grid of per-class
counts, and checked against the Poisson equation of the whole chain; it is improved greedily through
the post-decision values
``W(y) = N(y)/Lambda + sum_y' p(y, y') h(y')``, which do not depend on the state the decision was taken
in. The greedy choice is made by walking up the lattice of configurations one start at a time, so the
solved policy is *prefix-consistent*: starting the first job it names and asking again names the rest.
That is how the compiled ``mdp-optimal`` policy replays it one action per step through ``MSJ-v0``.
An improvement that would leave states unable ever to empty the system (a second recurrent class, on
which the evaluation is singular) is not taken in those states.

The same evaluation gives the exact value of any *class-level* stationary policy (one whose decision
depends only on the per-class counts): Most Servers First and Least Servers First, non-preemptive
and preemptive. Policies that look at arrival order (FCFS, First-Fit, ServerFilling) are not
class-level and are not evaluated here.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..workloads.workload import Workload
from .limits import DEFAULT_MAX_STATES

__all__ = [
    "DEFAULT_MAX_STATES",
    "HEURISTICS",
    "MSJChain",
    "OptimalSolution",
    "PolicyValue",
    "SolveEstimate",
    "check_solution",
    "count_configurations",
    "describe_policy",
    "estimate_solve",
    "evaluate_heuristic",
    "plot_policy",
    "solve_optimal",
]

# class-level heuristics evaluated exactly: id -> (preemptive, order of classes by need: -1 = largest first)
HEURISTICS: dict[str, tuple[bool, int]] = {
    "msf": (False, -1),
    "lsf": (False, +1),
    "msf-preemptive": (True, -1),
    "lsf-preemptive": (True, +1),
}


def _configurations(needs: Sequence[int], k: int) -> np.ndarray:
    """Every running configuration ``r`` (jobs in service per class) with ``sum n_c r_c <= k``."""
    out: list[tuple[int, ...]] = []

    def rec(c: int, room: int, cur: list[int]) -> None:
        if c == len(needs):
            out.append(tuple(cur))
            return
        for x in range(room // needs[c] + 1):
            rec(c + 1, room - x * needs[c], [*cur, x])

    rec(0, k, [])
    return np.array(out, dtype=np.int64).reshape(len(out), len(needs))


@dataclass(frozen=True)
class MSJChain:
    """The truncated state space of an exponential MSJ system and its uniformised transitions.

    States live in a dense array of shape ``(num_configs, T_1 + 1, ..., T_C + 1)`` indexed by
    ``(r, t)``; entries with ``r_c > t_c`` are invalid. ``pre_index`` numbers the pre-decision states
    (valid ``(r, t)`` if non-preemptive, ``t`` alone if preemptive)."""

    server_needs: tuple[int, ...]
    num_servers: int
    arrival_rates: tuple[float, ...]
    service_rates: tuple[float, ...]
    buffers: tuple[int, ...]
    preemptive: bool
    configs: np.ndarray = field(repr=False)
    up: np.ndarray = field(repr=False)
    down: np.ndarray = field(repr=False)
    valid: np.ndarray = field(repr=False)
    pre_index: np.ndarray = field(repr=False)
    num_pre: int = 0
    uniformization: float = 0.0

    @classmethod
    def build(
        cls,
        server_needs: Sequence[int],
        num_servers: int,
        arrival_rates: Sequence[float],
        service_rates: Sequence[float],
        buffers: Sequence[int],
        preemptive: bool,
    ) -> MSJChain:
        needs = tuple(int(n) for n in server_needs)
        k = int(num_servers)
        C = len(needs)
        R = _configurations(needs, k)
        nR = len(R)
        lookup = {tuple(r): i for i, r in enumerate(R)}
        up = np.full((C, nR), nR, dtype=np.int64)  # nR: no such configuration
        down = np.full((C, nR), nR, dtype=np.int64)
        for i, r in enumerate(R):
            for c in range(C):
                e = np.zeros(C, dtype=np.int64)
                e[c] = 1
                up[c, i] = lookup.get(tuple(r + e), nR)
                down[c, i] = lookup.get(tuple(r - e), nR)
        T = tuple(int(b) for b in buffers)
        grid = tuple(b + 1 for b in T)
        axes = np.meshgrid(*[np.arange(g) for g in grid], indexing="ij")
        valid = np.ones((nR, *grid), dtype=bool)
        for c in range(C):
            valid &= R[:, c].reshape((nR,) + (1,) * C) <= axes[c][None]
        if preemptive:
            pre_index = np.arange(int(np.prod(grid))).reshape(grid)
        else:
            pre_index = np.full(valid.shape, -1, dtype=np.int64)
            pre_index[valid] = np.arange(int(valid.sum()))
        mu = np.asarray(service_rates, dtype=np.float64)
        lam = np.asarray(arrival_rates, dtype=np.float64)
        uniformization = float(lam.sum() + (R * mu[None, :]).sum(axis=1).max())
        return cls(
            needs,
            k,
            tuple(float(x) for x in lam),
            tuple(float(x) for x in mu),
            T,
            bool(preemptive),
            R,
            up,
            down,
            valid,
            pre_index,
            int(pre_index.max()) + 1,
            uniformization,
        )

    # ---------------------------------------------------------------------------------------------
    @property
    def num_classes(self) -> int:
        return len(self.server_needs)

    @property
    def grid(self) -> tuple[int, ...]:
        return self.valid.shape[1:]

    def jobs(self) -> np.ndarray:
        """Number of jobs in the system at each grid point ``t``."""
        axes = np.meshgrid(*[np.arange(g) for g in self.grid], indexing="ij")
        return np.sum(axes, axis=0).astype(np.float64)

    def transitions(self) -> list[tuple[np.ndarray, np.ndarray]]:
        """For every post-decision state ``y = (r', t)`` of the dense array: (probability, pre-decision
        index of the next state) per event: each class's arrival, each class's departure, and the
        fictitious self-loop. Blocked arrivals and invalid entries point back at ``y``'s own pre-decision
        state (index 0 where ``y`` is invalid; its probability is then irrelevant)."""
        C, R, nR, L = self.num_classes, self.configs, len(self.configs), self.uniformization
        shape = self.valid.shape
        axes = np.meshgrid(*[np.arange(g) for g in self.grid], indexing="ij")
        ri = np.broadcast_to(np.arange(nR).reshape((nR,) + (1,) * C), shape)
        t = [np.broadcast_to(a[None], shape) for a in axes]

        def pre(r_idx: np.ndarray, tt: Sequence[np.ndarray]) -> np.ndarray:
            if self.preemptive:
                return self.pre_index[tuple(tt)]
            return self.pre_index[(r_idx, *tt)]

        own = np.where(self.valid, pre(ri, t), 0)
        out: list[tuple[np.ndarray, np.ndarray]] = []
        stay = np.ones(shape)
        for c in range(C):
            p = np.full(shape, self.arrival_rates[c] / L)
            tt = list(t)
            blocked = t[c] == self.buffers[c]
            tt[c] = np.minimum(t[c] + 1, self.buffers[c])
            dest = np.where(blocked | ~self.valid, own, pre(ri, tt))
            out.append((p, dest))
            stay = stay - p
        for c in range(C):
            p = R[:, c].reshape((nR,) + (1,) * C) * (self.service_rates[c] / L) * np.ones(shape)
            tt = list(t)
            tt[c] = np.maximum(t[c] - 1, 0)
            rd = np.broadcast_to(self.down[c].reshape((nR,) + (1,) * C), shape)
            ok = self.valid & (p > 0)
            dest = np.where(ok, pre(np.minimum(rd, nR - 1), tt), own)
            p = np.where(ok, p, 0.0)
            out.append((p, dest))
            stay = stay - p
        out.append((stay, own))
        return out


# -------------------------------------------------------------------------------------------------
@dataclass
class _Policy:
    """A stationary policy: for each pre-decision state, the dense index of its post-decision state,
    and the successor table the compiled policy reads."""

    post: np.ndarray  # (num_pre,) flat index into the dense (r, t) array
    table: np.ndarray  # non-preemptive: next class to start per dense (r, t) (-1: none);
    # preemptive: target configuration per grid point t


def _greedy(chain: MSJChain, W: np.ndarray) -> _Policy:
    """The policy that takes the reachable post-decision state of least ``W`` (invalid entries +inf),
    walking up the configuration lattice one start at a time (ties: stop, then the lowest class)."""
    C, nR = chain.num_classes, len(chain.configs)
    level = chain.configs.sum(axis=1)
    best = np.empty((nR + 1, *chain.grid))
    best[nR] = np.inf
    best[:nR] = W
    step = np.full((nR, *chain.grid), -1, dtype=np.int64)
    for lv in range(int(level.max()), -1, -1):
        ids = np.nonzero(level == lv)[0]
        cur = best[ids].copy()
        for c in range(C):
            cand = best[chain.up[c, ids]]
            better = cand < cur
            cur = np.where(better, cand, cur)
            step[ids] = np.where(better, c, step[ids])
        best[ids] = cur
    return _from_steps(chain, step)


def _from_steps(chain: MSJChain, step: np.ndarray) -> _Policy:
    """The policy of a step table (per dense ``(r, t)``: the class to start next, -1: none)."""
    nR = len(chain.configs)
    level = chain.configs.sum(axis=1)
    step = np.where(chain.valid, step, -1)
    grid_flat = np.arange(int(np.prod(chain.grid))).reshape(chain.grid)
    gsize = grid_flat.size
    # the post-decision configuration of every (r, t): a step leads one level up, so with the
    # targets of the higher levels known, each configuration's is one look-up (work linear in the
    # dense array, where following every walk costs its length)
    flat_step = step.reshape(nR, gsize)
    flat_target = np.empty((nR, gsize), dtype=np.int64)
    cells = grid_flat.ravel()
    for i in np.argsort(-level, kind="stable"):
        s = flat_step[i]
        moving = s >= 0
        nxt = chain.up[np.maximum(s, 0), i]
        flat_target[i] = np.where(moving, flat_target.ravel()[np.where(moving, nxt, i) * gsize + cells], i)
    target = flat_target.reshape(step.shape)
    if chain.preemptive:
        # any configuration below t: the walk from r = 0
        post = target[0].ravel() * gsize + grid_flat.ravel()
        return _Policy(post=post, table=target[0].astype(np.int64))
    valid = chain.valid
    post_dense = target * gsize + grid_flat[None]
    post = post_dense[valid]
    return _Policy(post=post, table=step.astype(np.int64))


def _extend(chain: MSJChain, old: _Policy, old_buffers: Sequence[int]) -> _Policy:
    """A policy on ``chain`` (larger buffers) that acts at every ``t`` as ``old`` acted at ``t``
    clipped to ``old_buffers``: the warm start of policy iteration after the buffers grew."""
    # the solved policy bends near its own buffer (arrivals there are lost): reuse its interior
    axes = np.meshgrid(
        *[np.minimum(np.arange(g), (3 * b) // 4) for g, b in zip(chain.grid, old_buffers, strict=True)],
        indexing="ij",
    )
    if chain.preemptive:
        target = old.table[tuple(axes)]
        grid_flat = np.arange(int(np.prod(chain.grid)))
        return _Policy(post=target.ravel() * grid_flat.size + grid_flat, table=target)
    nR = len(chain.configs)
    step = old.table[(np.arange(nR).reshape((nR,) + (1,) * chain.num_classes), *[a[None] for a in axes])]
    return _from_steps(chain, step)


def _policy_matrix(
    chain: MSJChain, trans: list[tuple[np.ndarray, np.ndarray]], post: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The transition probabilities of a policy's chain over all pre-decision states as COO arrays
    (row, column, probability). The solver evaluates the smaller chain of :func:`_reduce`; this one is
    the reference it is tested against."""
    n = chain.num_pre
    rows = np.repeat(np.arange(n), len(trans))
    probs = np.stack([p.ravel()[post] for p, _ in trans], axis=1).ravel()
    cols = np.stack([d.ravel()[post] for _, d in trans], axis=1).ravel()
    keep = probs > 0
    return rows[keep], cols[keep], probs[keep]


@dataclass(frozen=True)
class _Reduced:
    """A policy's chain on the post-decision states it takes (:func:`_reduce`)."""

    used: np.ndarray  # flat indices into the dense (r, t) array of the post-decision states taken, ascending
    of_pre: np.ndarray  # (num_pre,) position in ``used`` of each pre-decision state's post-decision state
    P: tuple[np.ndarray, np.ndarray, np.ndarray]  # COO (row, column, probability) over ``used``


def _reduce(chain: MSJChain, trans: list[tuple[np.ndarray, np.ndarray]], post: np.ndarray) -> _Reduced:
    """The chain a policy induces on the post-decision states it takes, ``y -> post(next(y))``.

    A pre-decision state ``x`` moves at once to ``post(x)``, and the cost and the next state's law depend
    on that post-decision state alone, so the relative values are ``h(x) = V(post(x))`` with ``V`` the
    relative values of this chain (the same gain), and its stationary law has the same per-class
    marginals of the numbers in the system (a decision does not change them). It is much smaller than
    the chain of all pre-decision states: a policy that fills the servers takes every running
    configuration at a queue-length point to the same post-decision state, so in the bulk of the grid a
    point keeps a few of its up to ``num_configs`` states, and the LU factors, whose fill grows with the
    square of the states per point, shrink far more (one-or-all at load 0.9: 3.5 M pre-decision states,
    about 0.3 M taken)."""
    taken = np.zeros(chain.valid.size, dtype=bool)
    taken[post] = True
    used = np.flatnonzero(taken)
    of_pre = (np.cumsum(taken) - 1)[post]
    if used[0] != 0:
        raise RuntimeError("the empty state must be its own post-decision state")
    m = len(used)
    rows = np.repeat(np.arange(m), len(trans))
    probs = np.stack([p.ravel()[used] for p, _ in trans], axis=1).ravel()
    cols = np.stack([of_pre[d.ravel()[used]] for _, d in trans], axis=1).ravel()
    keep = probs > 0
    return _Reduced(used=used, of_pre=of_pre, P=(rows[keep], cols[keep], probs[keep]))


def _dissection_order(t: Sequence[np.ndarray], leaf: int = 64) -> np.ndarray:
    """A nested-dissection elimination order of states at queue-length points ``t`` (per class, the
    count of each state).

    Every transition moves one class's count by at most one, so the states at one value of one count
    separate those below it from those above. Cutting each group of states at the median of the count
    whose median value holds the fewest states, again and again, and eliminating both sides before the
    separating states, keeps the LU factors near ``n log n`` in size, where a generic fill-reducing
    order (SuperLU's COLAMD) finds the grid's geometry only in part; the median, not the middle of the
    range, because the states crowd where few jobs wait (every running configuration is taken there)."""
    coords = np.stack([np.asarray(x, dtype=np.int64) for x in t], axis=1)
    out: list[np.ndarray] = []
    # an explicit stack instead of recursion, the order built back to front (separators after both
    # sides once reversed)
    todo = [np.arange(len(coords))]
    while todo:
        idx = todo.pop()
        if len(idx) <= leaf:
            out.append(idx[::-1])
            continue
        best: tuple[int, int, int] | None = None  # (separator size, class, cut value)
        for c in range(coords.shape[1]):
            x = coords[idx, c]
            lo = int(x.min())
            hist = np.bincount(x - lo)
            if len(hist) == 1:
                continue
            cut = int(np.searchsorted(np.cumsum(hist), len(idx) // 2))
            if best is None or hist[cut] < best[0]:
                best = (int(hist[cut]), c, cut + lo)
        if best is None:  # one queue-length point: nothing separates its states
            out.append(idx[::-1])
            continue
        _size, c, cut = best
        x = coords[idx, c]
        out.append(idx[x == cut][::-1])
        for part in (idx[x < cut], idx[x > cut]):
            if len(part):
                todo.append(part)
    return np.concatenate(out)[::-1]


class _LU:
    """The LU factors of ``I - P`` (``n`` states, index 0 the empty state) with the empty state's
    column replaced by ones. Solving with them gives the gain and relative values
    (``(I - P) h + g = cost``, ``h(empty) = 0``); solving with the transpose gives the stationary
    distribution (``pi (I - P) = 0``, ``sum pi = 1``). The states are factorised in the order of
    :func:`_dissection_order` (``t``: their counts), the empty state's column last."""

    def __init__(self, n: int, P: tuple[np.ndarray, ...], t: Sequence[np.ndarray]) -> None:
        import scipy.sparse.linalg as spla

        order = _dissection_order(t)
        order = np.concatenate([order[order != 0], [0]])
        pos = np.empty(n, dtype=np.int64)
        pos[order] = np.arange(n)
        self.n, self.pos, self.order = n, pos, order
        self.lu = spla.splu(_matrix(n, P, pos), permc_spec="NATURAL")

    def solve(self, b: np.ndarray, trans: str = "N") -> np.ndarray:
        return self.lu.solve(np.ascontiguousarray(b[self.order]), trans=trans)[self.pos]


def _matrix(n: int, P: tuple[np.ndarray, ...], pos: np.ndarray | None = None) -> Any:
    """``I - P`` with the empty state's (index 0) column replaced by ones (CSC), its rows and columns
    renumbered by ``pos`` if given."""
    import scipy.sparse as sp

    rows, cols, probs = P
    off = cols != 0
    idx = np.arange(1, n)
    r = np.concatenate([rows[off], idx, np.arange(n)])
    c = np.concatenate([cols[off], idx, np.zeros(n, dtype=np.int64)])
    v = np.concatenate([-probs[off], np.ones(n - 1), np.ones(n)])
    if pos is not None:
        r, c = pos[r], pos[c]
    return sp.csc_matrix((v, (r, c)), shape=(n, n))


def _stationary(lu: _LU) -> np.ndarray:
    b = np.zeros(lu.n)
    b[0] = 1.0
    pi = np.maximum(lu.solve(b, trans="T"), 0.0)
    return pi / pi.sum()


@dataclass(frozen=True)
class _Evaluation:
    """A policy's gain per step, the relative values of every pre-decision state (``h(empty) = 0``) and,
    if asked for, the stationary law of the post-decision states it takes (``reduced.used``)."""

    gain: float
    h: np.ndarray
    reduced: _Reduced
    lu: _LU
    pi: np.ndarray | None


def _evaluate(
    chain: MSJChain,
    trans: list[tuple[np.ndarray, np.ndarray]],
    post: np.ndarray,
    cost_dense: np.ndarray | None,
    stationary: bool = False,
    reduced: _Reduced | None = None,
) -> _Evaluation:
    """Evaluate a policy exactly by one sparse LU factorisation of its chain on the post-decision
    states it takes (:func:`_reduce`); ``cost_dense`` None: the stationary law only."""
    red = reduced if reduced is not None else _reduce(chain, trans, post)
    lu = _LU(len(red.used), red.P, _counts(chain, red.used))
    g, h = math.nan, np.zeros(0)
    if cost_dense is not None:
        z = lu.solve(np.ascontiguousarray(cost_dense.ravel()[red.used]))
        g = float(z[0])
        z[0] = 0.0
        h = z[red.of_pre]
    return _Evaluation(gain=g, h=h, reduced=red, lu=lu, pi=_stationary(lu) if stationary else None)


def _check_residual(g: float, h: np.ndarray, W: np.ndarray, post: np.ndarray) -> None:
    """The evaluation is exact on the whole pre-decision chain: ``h(x) + g = W(post(x))`` in every
    state, to round-off. A reduction that lost a transition would fail here, not give a wrong answer."""
    resid = np.abs(h + g - W.ravel()[post])
    worst = float(resid.max())
    if not worst <= 1e-9 * max(1.0, float(np.abs(h).max())):
        raise RuntimeError(f"policy evaluation: Poisson equation residual {worst:.3g} on the full chain")


def _post_values(
    chain: MSJChain, trans: list[tuple[np.ndarray, np.ndarray]], h: np.ndarray, cost_dense: np.ndarray
) -> np.ndarray:
    W = cost_dense.copy()
    for p, dest in trans:
        W += p * h[dest]
    return np.where(chain.valid, W, np.inf)


# -------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class PolicyValue:
    """The exact long-run value of one policy on the truncated chain."""

    policy: str
    preemptive: bool
    mean_response_time: float
    mean_jobs: float
    class_mean_jobs: tuple[float, ...]
    class_mean_response_times: tuple[float, ...]
    blocked: tuple[float, ...]  # per class: fraction of that class's arrivals lost at the buffer
    buffers: tuple[int, ...]
    states: int

    @property
    def max_blocked(self) -> float:
        return max(self.blocked)

    def to_dict(self) -> dict[str, Any]:
        return {
            "policy": self.policy,
            "preemptive": self.preemptive,
            "mean_response_time": self.mean_response_time,
            "mean_jobs": self.mean_jobs,
            "class_mean_jobs": list(self.class_mean_jobs),
            "class_mean_response_times": list(self.class_mean_response_times),
            "blocked": list(self.blocked),
            "buffers": list(self.buffers),
            "states": self.states,
        }


@dataclass(frozen=True)
class OptimalSolution:
    """The solved optimal policy of an exponential MSJ system and how it was obtained."""

    value: PolicyValue
    chain: MSJChain = field(repr=False)
    table: np.ndarray = field(repr=False)
    iterations: int
    seconds: float
    buffer_check: dict[str, Any]
    # True when the solution is that of the truncated problem that charges every lost arrival the
    # buffer's content (the problem without the charge profits from losing arrivals at these buffers)
    lost_arrivals_charged: bool = False

    @property
    def mean_response_time(self) -> float:
        return self.value.mean_response_time

    def to_dict(self) -> dict[str, Any]:
        return {
            **self.value.to_dict(),
            "policy_iterations": self.iterations,
            "seconds": round(self.seconds, 2),
            "buffer_check": self.buffer_check,
            "lost_arrivals_charged": self.lost_arrivals_charged,
            "server_needs": list(self.chain.server_needs),
            "num_servers": self.chain.num_servers,
            "arrival_rates": list(self.chain.arrival_rates),
            "service_rates": list(self.chain.service_rates),
        }


def _counts(chain: MSJChain, used: np.ndarray) -> list[np.ndarray]:
    """Per class, its number of jobs in the system at each of the dense ``(r, t)`` entries ``used``."""
    return list(np.unravel_index(used % math.prod(chain.grid), chain.grid))


def _marginals(chain: MSJChain, ev: _Evaluation) -> list[np.ndarray]:
    """Per class, the stationary distribution of its number in the system; its last entry, the full
    buffer, is the class's fraction of lost arrivals (PASTA)."""
    assert ev.pi is not None
    t = _counts(chain, ev.reduced.used)
    return [np.bincount(t[c], weights=ev.pi, minlength=b + 1) for c, b in enumerate(chain.buffers)]


def _value(
    chain: MSJChain, name: str, post: np.ndarray, done: _Evaluation | None = None
) -> tuple[PolicyValue, list[np.ndarray]]:
    """The exact value of the policy ``post``; ``done``: its evaluation if policy iteration ended on it
    (its factors give the stationary law without a new factorisation)."""
    if done is None:
        ev = _evaluate(chain, chain.transitions(), post, None, stationary=True)
    elif done.pi is None:
        ev = _Evaluation(done.gain, done.h, done.reduced, done.lu, _stationary(done.lu))
    else:
        ev = done
    assert ev.pi is not None
    C = chain.num_classes
    t = _counts(chain, ev.reduced.used)
    lam = np.asarray(chain.arrival_rates)
    class_jobs = tuple(float(ev.pi @ t[c]) for c in range(C))
    marginals = _marginals(chain, ev)
    blocked = tuple(float(marginals[c][chain.buffers[c]]) for c in range(C))
    # Little's law on the admitted arrivals
    admitted = lam * (1.0 - np.asarray(blocked))
    total_jobs = float(sum(class_jobs))
    value = PolicyValue(
        policy=name,
        preemptive=chain.preemptive,
        mean_response_time=total_jobs / float(admitted.sum()),
        mean_jobs=total_jobs,
        class_mean_jobs=class_jobs,
        class_mean_response_times=tuple(
            class_jobs[c] / admitted[c] if admitted[c] > 0 else math.nan for c in range(C)
        ),
        blocked=blocked,
        buffers=chain.buffers,
        states=chain.num_pre,
    )
    return value, marginals


def _parameters(workload: Workload) -> tuple[list[int], int, list[float], list[float]]:
    """(needs, k, arrival rates, service rates) of a Poisson workload with exponential service."""
    classes = getattr(workload, "classes", None)
    if classes is None or not hasattr(workload, "arrival_rate"):
        raise ValueError("workload: the exact solver needs a Poisson workload (a scenario), not a trace")
    for c, cls in enumerate(classes):
        if cls.service_time.kind != "exponential":
            raise ValueError(
                f"class {cls.name or c!r}.service_time: the exact solver needs exponential service "
                f"times, got {cls.service_time.kind!r}"
            )
    needs = [int(c.server_need) for c in classes]
    # a built Workload's rate is a float: set in __post_init__, though declared optional
    rate = float(workload.arrival_rate)  # type: ignore[arg-type]
    lam = [rate * c.probability for c in classes]
    mu = [1.0 / float(c.service_time.mean) for c in classes]
    return needs, int(workload.num_servers), lam, mu


def count_configurations(server_needs: Sequence[int], num_servers: int, limit: int = 10**7) -> int:
    """The number of running configurations (at most ``limit + 1``: counting stops there)."""
    counts = np.zeros(num_servers + 1, dtype=np.int64)  # configurations by servers used
    counts[0] = 1
    for n in server_needs:
        for used in range(n, num_servers + 1):  # unbounded knapsack count, ascending
            counts[used] += counts[used - n]
        if counts.sum() > limit:
            return limit + 1
    return int(min(counts.sum(), limit + 1))


def _initial_buffers(needs: Sequence[int], k: int, lam: Sequence[float], mu: Sequence[float]) -> list[int]:
    load = sum(l_ * n / m for l_, n, m in zip(lam, needs, mu, strict=True)) / k
    if load >= 1.0:
        raise ValueError(f"load: the optimum is finite only below load 1, got {load:.6g}")
    base = 20.0 / (1.0 - load)
    return [int(k // n + max(8, base * l_ / sum(lam) + 4)) for n, l_ in zip(needs, lam, strict=True)]


# Seconds of a whole solve per (states of the first chain) ** 1.5: the sparse factorisations grow a
# little faster than the chain, and the buffers grow from there 2 to 4 times. Fitted to the wall times
# of six solves with the evaluation on post-decision states (docs/optimal.md's table: sf-fig2 at 0.7
# and 0.9, one-or-all at loads 0.51, 0.77, 0.897 and 0.9; 3.5 s to 6 min), as the constant whose
# largest over- and under-estimate are equal: each within a factor of 2.6, enough to tell seconds
# from hours before anything is solved. (3.7e-6, measured before that evaluation, overstated five of
# the six 2 to 5.5 times.)
SECONDS_PER_STATE_POWER = 1.75e-6


@dataclass(frozen=True)
class SolveEstimate:
    """What :func:`solve_optimal` would start from: the buffers and states of its first chain, and the
    wall time the whole solve is expected to take (within a factor of about 3)."""

    buffers: tuple[int, ...]
    states: int
    seconds: float

    def describe(self) -> str:
        minutes = self.seconds / 60
        took = f"{self.seconds:.0f} s" if minutes < 2 else f"{minutes:.0f} min"
        return f"{self.states} states at the first buffers {list(self.buffers)}: about {took} to solve"


def estimate_solve(workload: Workload, *, max_states: int = DEFAULT_MAX_STATES) -> SolveEstimate:
    """The size of the first chain :func:`solve_optimal` would build for ``workload`` (preemptive or
    not: the state limit counts both alike), and its expected solve time, found without building
    anything (counting the configurations stops past ``max_states``). A ``ValueError`` as in
    :func:`solve_optimal` for a workload it cannot solve."""
    needs, k, lam, mu = _parameters(workload)
    T = _initial_buffers(needs, k, lam, mu)
    states = count_configurations(needs, k, max_states) * math.prod(b + 1 for b in T)
    return SolveEstimate(tuple(T), int(states), SECONDS_PER_STATE_POWER * float(states) ** 1.5)


def _heuristic_policy(chain: MSJChain, order: int) -> _Policy:
    """Most (order -1) or Least (order +1) Servers First at class level, as a W table whose greedy
    walk reproduces it: larger running totals of the preferred classes are cheaper."""
    needs = np.asarray(chain.server_needs, dtype=np.float64)
    rank = np.argsort(order * needs, kind="stable")  # preferred class first
    nR = len(chain.configs)
    # lexicographic preference on configurations, most preferred = most jobs of the first class, ...
    keys = np.zeros(nR)
    scale = 1.0
    for c in reversed(rank):
        keys += chain.configs[:, c] * scale
        scale *= chain.num_servers + 1
    W = np.broadcast_to(-keys.reshape((nR,) + (1,) * chain.num_classes), chain.valid.shape)
    if chain.preemptive:
        return _greedy(chain, np.where(chain.valid, W, np.inf))
    # non-preemptive priority: start the preferred class first while it fits (a lexicographic
    # maximum over reachable configurations is exactly that)
    return _greedy(chain, np.where(chain.valid, W, np.inf))


def _cannot_empty(red: _Reduced) -> np.ndarray:
    """Pre-decision states from which a policy's chain never reaches the empty state. A policy with
    such states may have a second recurrent class (say: a class it never serves, piled up at its
    buffer), and its evaluation, which assumes one, is then singular. Found on the reduced chain: a
    pre-decision path passes the empty state exactly when its post-decision path passes the empty
    post-decision state (nothing can be started there)."""
    import scipy.sparse as sp
    from scipy.sparse.csgraph import breadth_first_order

    m = len(red.used)
    rows, cols, _probs = red.P
    reverse = sp.csr_matrix((np.ones(len(rows), dtype=np.int8), (cols, rows)), shape=(m, m))
    reach = np.zeros(m, dtype=bool)
    reach[breadth_first_order(reverse, 0, directed=True, return_predecessors=False)] = True
    return ~reach[red.of_pre]


def _policy_iteration(
    chain: MSJChain,
    start: _Policy | None,
    tol: float,
    max_iterations: int,
    log: Callable[[str], None],
    lost_cost: Sequence[float] | None = None,
    stop_blocked: float | None = None,
) -> tuple[_Policy, _Evaluation | None, int]:
    """Policy iteration from ``start`` (default Most Servers First): the policy, its evaluation where it is
    the one evaluated last (else None), and the iterations taken. ``lost_cost`` (per class, in
    job-time units) charges every arrival lost at the buffer: the buffer search uses it so that the
    truncated problem cannot profit from giving a class up (the cost only counts jobs in the system).
    With ``stop_blocked``, an evaluated policy that loses a larger fraction of some class's arrivals
    raises :class:`_Exploited`."""
    trans = chain.transitions()
    grid_jobs = chain.jobs()
    if lost_cost is not None:
        axes = np.meshgrid(*[np.arange(g) for g in chain.grid], indexing="ij")
        for c, b in enumerate(chain.buffers):
            grid_jobs = grid_jobs + chain.arrival_rates[c] * lost_cost[c] * (axes[c] == b)
    cost_dense = np.broadcast_to(grid_jobs[None], chain.valid.shape) / chain.uniformization
    policy = start or _heuristic_policy(chain, -1)
    red = _reduce(chain, trans, policy.post)
    stuck = _cannot_empty(red)
    if stuck.any():
        # a warm start that leaves some states unable to empty: serve them as Most Servers First
        msf = _heuristic_policy(chain, -1)
        policy = _Policy(post=np.where(stuck, msf.post, policy.post), table=policy.table)
        red = _reduce(chain, trans, policy.post)
    g_prev = math.inf
    for it in range(1, max_iterations + 1):
        ev = _evaluate(chain, trans, policy.post, cost_dense, stop_blocked is not None, red)
        if stop_blocked is not None:
            blocked = [float(m[-1]) for m in _marginals(chain, ev)]
            if max(blocked) > stop_blocked:
                raise _Exploited(it, blocked)
        g, h = ev.gain, ev.h
        W = _post_values(chain, trans, h, cost_dense)
        _check_residual(g, h, W, policy.post)
        new = _greedy(chain, W)
        w_flat = W.ravel()
        gain_of = w_flat[policy.post] - w_flat[new.post]  # >= 0: what each state's new action saves
        # keep the current action where the new one saves no more than round-off
        improve = gain_of > 1e-12 * np.maximum(1.0, np.abs(w_flat[policy.post]))
        log(
            f"policy iteration {it}: mean jobs {g * chain.uniformization:.12g}, "
            f"{int(improve.sum())} states improve ({len(ev.reduced.used)} post-decision states taken)"
        )
        # converged, or the last improvement of the gain was below tol: what is left to improve
        # is in states the chain almost never visits (near the truncation)
        if not improve.any() or g >= g_prev * (1 - tol):
            if np.array_equal(new.post, policy.post):
                return new, ev, it
            if not _cannot_empty(_reduce(chain, trans, new.post)).any():
                return new, None, it
            # the greedy policy would trap states (the truncated optimum gives a class up): keep the
            # evaluated policy; its step table is the greedy one's, exact only where they agree
            log("the greedy policy has states that never empty: keeping the evaluated policy")
            return _Policy(post=policy.post, table=new.table), ev, it
        g_prev = g
        post = np.where(improve, new.post, policy.post)
        red = _reduce(chain, trans, post)
        stuck = _cannot_empty(red)
        if stuck.any():
            # the improvement would trap the chain (a second recurrent class): keep the current action
            # in the states it traps. They reached the empty state before, through states that keep
            # their action or reach it now, so every state reaches it again.
            log(f"{int(stuck.sum())} states would never empty: they keep their action")
            post = np.where(stuck, policy.post, post)
            red = _reduce(chain, trans, post)
        policy = _Policy(post=post, table=new.table)
    raise RuntimeError(f"policy iteration did not converge in {max_iterations} iterations")


class _Exploited(Exception):
    """Policy iteration reached a policy that loses more arrivals than allowed."""

    def __init__(self, iteration: int, blocked: Sequence[float]) -> None:
        super().__init__(f"iteration {iteration}: blocked {max(blocked):.2e}")
        self.iteration = iteration


# a blocked fraction above which the truncated optimum is taken to have given a class up
_GIVE_UP = 0.1


def solve_optimal(
    workload: Workload,
    *,
    preemptive: bool = False,
    buffers: Sequence[int] | None = None,
    blocking_target: float = 1e-6,
    check_buffers: bool = True,
    max_states: int = DEFAULT_MAX_STATES,
    tol: float = 1e-7,
    max_iterations: int = 100,
    log: Callable[[str], None] | None = None,
) -> OptimalSolution:
    """The exact average-cost optimal policy of ``workload`` (Poisson arrivals, exponential service
    times), non-preemptive (default) or preemptive.

    ``buffers`` (jobs per class in the system) are chosen automatically unless given: they grow until
    every class's blocked fraction of arrivals is below ``blocking_target`` (or ``max_states`` would be
    exceeded: a ``ValueError``). With ``check_buffers`` the problem is solved again with every buffer
    25 % larger and the change of the optimal mean response time is reported in ``buffer_check``."""
    say = log or (lambda _msg: None)
    needs, k, lam, mu = _parameters(workload)
    problem = _Problem(needs, k, lam, mu, preemptive, tol, max_iterations, say)
    t0 = time.perf_counter()
    T = problem.start_buffers(buffers)
    iterations = 0
    previous: tuple[_Policy, list[int]] | None = None
    # set once the truncated optimum gives a class up: the buffer search then charges lost arrivals
    charged = False
    kept_charge = False  # the final solution is the charged problem's (see below)
    while True:
        chain = problem.chain(T, max_states)
        say(f"buffers {T}: {chain.num_pre} states")
        start = None if previous is None else _extend(chain, *previous)
        policy, done, its = problem.iterate(chain, start, problem.lost_charge(T) if charged else None)
        iterations += its
        value, marginals = problem.value(chain, policy, done)
        if charged and value.max_blocked <= blocking_target:
            # the charge only steered the search: solve the problem itself from its policy, unless
            # that problem profits from losing arrivals at these buffers (its optimum then blocks
            # more than the target: one-or-all near load 0.9), and the charged solution stands
            say("without the charge for lost arrivals")
            try:
                free, done, its = problem.iterate(chain, policy, stop_blocked=blocking_target)
            except _Exploited as e:
                iterations += e.iteration
                say(f"without the charge the policy learns to lose arrivals ({e}): keeping the charged one")
                kept_charge = True
            else:
                iterations += its
                policy = free
                value, marginals = problem.value(chain, policy, done)
        if buffers is not None or value.max_blocked <= blocking_target:
            break
        if not charged and value.max_blocked > _GIVE_UP:
            # Blocking is free in the truncated problem: below some buffer the optimum stops serving
            # a class and lets its arrivals be lost (one-or-all's heavy jobs), and growing the buffer
            # by steps until that stops costs many solves. Charging each lost arrival the buffer's
            # whole content makes giving up dearer than any policy that serves, so the search sees
            # the real tail at once; the final buffers are solved without the charge.
            charged = True
            previous = None
            say(f"blocked {value.max_blocked:.2f}: a class is given up; charging lost arrivals")
            continue
        previous = (policy, T)
        T = _grown_buffers(T, marginals, blocking_target)
    check: dict[str, Any] = {}
    if check_buffers:
        check, its = _check_buffers(problem, T, policy, value, kept_charge, max_states)
        iterations += its
    return OptimalSolution(
        value=value,
        chain=chain,
        table=policy.table,
        iterations=iterations,
        seconds=time.perf_counter() - t0,
        buffer_check=check,
        lost_arrivals_charged=kept_charge,
    )


@dataclass(frozen=True)
class _Problem:
    """What every chain of one solve's buffer search shares: the system (class needs, servers,
    arrival and service rates, preemption) and the policy iteration's settings."""

    needs: list[int]
    k: int
    lam: list[float]
    mu: list[float]
    preemptive: bool
    tol: float
    max_iterations: int
    say: Callable[[str], None]

    def start_buffers(self, buffers: Sequence[int] | None) -> list[int]:
        """The first solve's buffers: those given (each at least what fits in service) or the
        automatic start."""
        needs, k = self.needs, self.k
        T = list(buffers) if buffers is not None else _initial_buffers(needs, k, self.lam, self.mu)
        for c, n in enumerate(needs):
            if T[c] < k // n:
                raise ValueError(f"buffers[{c}]: expected at least {k // n} (class need {n}), got {T[c]}")
        return T

    def chain(self, T: Sequence[int], max_states: int) -> MSJChain:
        """The chain truncated at buffers ``T`` (refused above ``max_states`` states)."""
        return _build_checked(self.needs, self.k, self.lam, self.mu, T, self.preemptive, max_states)

    def iterate(
        self,
        chain: MSJChain,
        start: _Policy | None,
        lost: Sequence[float] | None = None,
        stop_blocked: float | None = None,
    ) -> tuple[_Policy, _Evaluation | None, int]:
        """:func:`_policy_iteration` on ``chain`` with this solve's settings."""
        return _policy_iteration(chain, start, self.tol, self.max_iterations, self.say, lost, stop_blocked)

    def value(
        self, chain: MSJChain, policy: _Policy, done: _Evaluation | None
    ) -> tuple[PolicyValue, list[np.ndarray]]:
        """:func:`_value` of ``policy`` on ``chain``, named as the registry names the solve's policy,
        its blocked fractions logged."""
        value, marginals = _value(
            chain, "mdp-optimal" + ("-preemptive" if self.preemptive else ""), policy.post, done
        )
        self.say(f"blocked fractions {[f'{b:.2e}' for b in value.blocked]}")
        return value, marginals

    def lost_charge(self, T: Sequence[int]) -> list[float]:
        """Each class's charge per lost arrival at buffers ``T``: the buffers' whole content."""
        return [sum(T) / rate for rate in self.lam]


def _check_buffers(
    problem: _Problem, T: list[int], policy: _Policy, value: PolicyValue, charged: bool, max_states: int
) -> tuple[dict[str, Any], int]:
    """The problem solved again with every buffer 25 % larger, from ``policy`` (with the charge for
    lost arrivals if the solution kept it): the change of the optimal mean response time
    (``buffer_check``), and the policy iterations it took."""
    T2 = [math.ceil(b * 1.25) for b in T]
    chain2 = problem.chain(T2, max_states * 2)
    lost2 = problem.lost_charge(T2) if charged else None
    pol2, done2, its2 = problem.iterate(chain2, _extend(chain2, policy, T), lost2)
    v2, _ = _value(chain2, value.policy, pol2.post, done2)
    check = {
        "buffers": T2,
        "mean_response_time": v2.mean_response_time,
        "relative_change": abs(v2.mean_response_time - value.mean_response_time) / value.mean_response_time,
    }
    problem.say(f"larger buffers {T2}: {v2.mean_response_time:.10g}")
    return check, its2


def check_solution(
    workload: Workload,
    *,
    preemptive: bool,
    table: np.ndarray,
    buffers: Sequence[int],
    lost_arrivals_charged: bool = False,
    max_states: int = DEFAULT_MAX_STATES,
    tol: float = 1e-7,
    configs: np.ndarray | None = None,
    up: np.ndarray | None = None,
) -> PolicyValue:
    """The value policy iteration reaches from a stored solution of ``workload``: the chain of
    ``buffers`` rebuilt, the stored policy ``table`` (:attr:`OptimalSolution.table`) checked entry by
    entry (each start fits a waiting job, each target configuration the jobs there) and taken as the
    start. An optimal table is evaluated once and improved by round-off at most (two or three sparse
    factorisations, a fraction of a solve), so its value comes back; a table that is not the
    optimum's improves, and its value drops. ``configs`` and ``up``, where given, must be the chain's
    own (the compiled policy indexes them). A one-line ``ValueError`` names what does not fit."""
    needs, k, lam, mu = _parameters(workload)
    T = [int(b) for b in buffers]
    if len(T) != len(needs) or any(T[c] < k // n for c, n in enumerate(needs)):
        raise ValueError(f"buffers {T}: not buffers of a chain of this system (needs {needs}, k = {k})")
    chain = _build_checked(needs, k, lam, mu, T, preemptive, max_states)
    for name, given, own in (("configs", configs, chain.configs), ("up", up, chain.up)):
        if given is not None and not np.array_equal(np.asarray(given), own):
            raise ValueError(f"{name}: not the configurations of this system")
    table = np.asarray(table)
    nR, C = len(chain.configs), chain.num_classes
    if table.dtype.kind not in "iu":
        raise ValueError(f"table: expected integers, got {table.dtype}")
    gsize = int(np.prod(chain.grid))
    if preemptive:
        if table.shape != chain.grid or table.min() < 0 or table.max() >= nR:
            raise ValueError(f"table: expected configurations 0..{nR - 1} on the grid {chain.grid}")
        post = table.ravel().astype(np.int64) * gsize + np.arange(gsize)
        if not chain.valid.ravel()[post].all():
            raise ValueError("table: a target configuration serves more jobs than there are")
        start = _Policy(post=post, table=table.astype(np.int64))
    else:
        if table.shape != chain.valid.shape or table.min() < -1 or table.max() >= C:
            raise ValueError(f"table: expected classes -1..{C - 1} over the states {chain.valid.shape}")
        step = table.astype(np.int64)
        r_index = np.broadcast_to(np.arange(nR).reshape((nR,) + (1,) * C), step.shape)
        nxt = chain.up[np.maximum(step, 0), r_index]
        fits = nxt < nR
        lands = np.zeros_like(fits)
        grid_flat = np.broadcast_to(np.arange(gsize).reshape(chain.grid)[None], step.shape)
        lands[fits] = chain.valid.ravel()[nxt[fits] * gsize + grid_flat[fits]]
        if not ((step < 0) | ~chain.valid | (fits & lands)).all():
            raise ValueError("table: a start does not fit the servers or has no waiting job")
        start = _from_steps(chain, step)
    lost = [sum(T) / rate for rate in lam] if lost_arrivals_charged else None
    name = "mdp-optimal" + ("-preemptive" if preemptive else "")
    try:
        policy, done, _ = _policy_iteration(chain, start, tol, 4, lambda _m: None, lost)
    except RuntimeError as exc:  # not converging within a few steps: not an optimum's table
        raise ValueError(f"table: {exc}") from None
    value, _ = _value(chain, name, policy.post, done)
    return value


def _grown_buffers(T: Sequence[int], marginals: list[np.ndarray], target: float) -> list[int]:
    """Buffers at which each class's blocking should fall below ``target``: its stationary tail
    ``P(t_c = x)`` extrapolated geometrically with the decay rate between half and three quarters of
    the buffer (the solved policy bends near its buffer), at least 25 % and at most 50 % more."""
    out = []
    for b, pmf in zip(T, marginals, strict=True):
        if pmf[b] <= target:
            out.append(int(b))
            continue
        lo, hi = b // 2, (3 * b) // 4
        ratio = pmf[hi] / pmf[lo] if pmf[lo] > 0 and hi > lo else 1.0
        extra = b // 2
        if 0 < ratio < 1:
            extra = math.ceil(1.2 * math.log(target / pmf[b]) / math.log(ratio ** (1.0 / (hi - lo))))
        out.append(int(b + min(max(extra, b // 4), b // 2)))
    return out


def _build_checked(
    needs: Sequence[int],
    k: int,
    lam: Sequence[float],
    mu: Sequence[float],
    T: Sequence[int],
    preemptive: bool,
    max_states: int,
) -> MSJChain:
    nR = count_configurations(needs, k, max_states)
    size = nR * math.prod(b + 1 for b in T)
    if size > max_states:
        raise ValueError(
            f"buffers {list(T)}: {size} states exceed max_states={max_states}; the system is too large "
            "(or too heavily loaded) for the exact solver"
        )
    return MSJChain.build(needs, k, lam, mu, T, preemptive)


def evaluate_heuristic(
    workload: Workload,
    policy_id: str,
    *,
    buffers: Sequence[int] | None = None,
    blocking_target: float = 1e-6,
    max_states: int = DEFAULT_MAX_STATES,
) -> PolicyValue:
    """The exact value of a class-level heuristic (:data:`HEURISTICS`). Without ``buffers`` they grow
    as in :func:`solve_optimal` until the blocked fractions fall below ``blocking_target`` or the next
    chain would exceed ``max_states``; the returned ``blocked`` fractions then say how far the
    truncated value is to be trusted (a heuristic that is unstable, or nearly so, keeps blocking)."""
    if policy_id not in HEURISTICS:
        raise ValueError(f"policy: expected one of {sorted(HEURISTICS)}, got {policy_id!r}")
    preemptive, order = HEURISTICS[policy_id]
    needs, k, lam, mu = _parameters(workload)
    T = list(buffers) if buffers is not None else _initial_buffers(needs, k, lam, mu)
    value: PolicyValue | None = None
    while True:
        try:
            chain = _build_checked(needs, k, lam, mu, T, preemptive, max_states)
        except ValueError:
            if value is None:
                raise
            return value
        pol = _heuristic_policy(chain, order)
        value, marginals = _value(chain, policy_id, pol.post)
        if buffers is not None or value.max_blocked <= blocking_target:
            return value
        T = _grown_buffers(T, marginals, blocking_target)


# -------------------------------------------------------------------------------------------------
def _starts(sol: OptimalSolution, r_index: int, t: Sequence[int]) -> np.ndarray:
    """Jobs of each class the solved non-preemptive policy starts at running configuration ``r_index``
    and counts ``t``."""
    chain = sol.chain
    out = np.zeros(chain.num_classes, dtype=np.int64)
    i = r_index
    while True:
        c = int(sol.table[(i, *t)])
        if c < 0:
            return out
        out[c] += 1
        i = int(chain.up[c, i])


def describe_policy(sol: OptimalSolution, names: Sequence[str], show: int = 12) -> list[str]:
    """The solved policy's structure in words: where it leaves servers idle on purpose (non-preemptive)
    or which jobs it serves (preemptive), over queues of up to ``show`` jobs per class."""
    chain = sol.chain
    needs, k, C = chain.server_needs, chain.num_servers, chain.num_classes
    lines: list[str] = []
    if chain.preemptive:
        agree = {"most servers first": 0, "least servers first": 0}
        total = 0
        for t in np.ndindex(*[min(show, b) + 1 for b in chain.buffers]):
            target = chain.configs[int(sol.table[t])]
            total += 1
            for label, order in (("most servers first", -1), ("least servers first", 1)):
                r = np.zeros(C, dtype=np.int64)
                room = k
                for c in np.argsort(order * np.asarray(needs), kind="stable"):
                    r[c] = min(t[c], room // needs[c])
                    room -= r[c] * needs[c]
                agree[label] += int(np.array_equal(r, target))
            if int(np.dot(target, needs)) + min(needs) <= k and any(
                t[c] > target[c] and needs[c] <= k - int(np.dot(target, needs)) for c in range(C)
            ):
                lines.append(f"at {dict(zip(names, t, strict=True))} in the system it leaves servers idle")
        lines.insert(
            0,
            f"over the {total} states with at most {show} jobs per class it allocates as "
            + ", ".join(f"{label} in {100 * n / total:.0f} %" for label, n in agree.items()),
        )
        return lines[:20]
    for i, r in enumerate(chain.configs):
        free = k - int(np.dot(r, needs))
        running = ", ".join(f"{r[c]} {names[c]}" for c in range(C) if r[c]) or "nothing"
        for c in range(C):
            if needs[c] > free:
                continue
            held: dict[tuple[int, ...], int] = {}
            for q in np.ndindex(*[show + 1] * C):
                t = tuple(int(q[j] + r[j]) for j in range(C))
                if q[c] == 0 or any(t[j] > chain.buffers[j] for j in range(C)):
                    continue
                if _starts(sol, i, t).sum() == 0:
                    others = tuple(q[j] for j in range(C) if j != c)
                    held[others] = max(held.get(others, 0), q[c])
            if held:
                other_names = [names[j] for j in range(C) if j != c]
                parts = [
                    (
                        f"{', '.join(f'{n}={v}' for n, v in zip(other_names, key, strict=True))}"
                        if any(key)
                        else "none queued"
                    )
                    + f": up to {most}"
                    for key, most in sorted(held.items())
                ][:6]
                lines.append(
                    f"with {running} running ({free} idle), it holds back waiting {names[c]} jobs "
                    f"(queued {', '.join(other_names)} -> most {names[c]} held): " + "; ".join(parts)
                )
    if not lines:
        lines.append(f"it never leaves a fitting job waiting (over queues of up to {show} per class)")
    empty_all = tuple(min(3, b) for b in chain.buffers)
    first = _starts(sol, 0, empty_all)
    lines.append(
        "from an empty set of servers with 3 jobs of each class waiting it starts "
        + ", ".join(f"{first[c]} {names[c]}" for c in range(C) if first[c])
    )
    return lines


def plot_policy(sol: OptimalSolution, path: str, names: Sequence[str], show: int = 20) -> None:
    """A picture of a two-class solved policy over the queue lengths: per running configuration
    (non-preemptive) what it starts, or (preemptive) how many jobs of each class it serves."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.colors import ListedColormap

    chain = sol.chain
    if chain.num_classes != 2:
        raise ValueError(f"--png: the picture is drawn for two classes, got {chain.num_classes}")
    needs, k = chain.server_needs, chain.num_servers
    n = [min(show, b) for b in chain.buffers]
    if chain.preemptive:
        fig, axes = plt.subplots(1, 2, figsize=(9, 4), constrained_layout=True)
        target = chain.configs[sol.table[: n[0] + 1, : n[1] + 1]]
        for c, ax in enumerate(axes):
            im = ax.imshow(target[..., c].T, origin="lower", cmap="viridis", aspect="auto")
            ax.set_xlabel(f"{names[0]} jobs in the system")
            ax.set_ylabel(f"{names[1]} jobs in the system")
            ax.set_title(f"{names[c]} jobs served")
            fig.colorbar(im, ax=ax)
    else:
        configs = [i for i, r in enumerate(chain.configs) if k - int(np.dot(r, needs)) >= min(needs)][:8]
        cols = min(4, len(configs))
        rows = (len(configs) + cols - 1) // cols
        fig, axes = plt.subplots(
            rows, cols, figsize=(3.2 * cols, 3 * rows), squeeze=False, constrained_layout=True
        )
        cmap = ListedColormap(["#dddddd", "#d62728", "#1f77b4", "#2ca02c", "#9467bd"])
        labels = ["nothing fits", "holds idle", f"starts {names[0]}", f"starts {names[1]}", "starts both"]
        for ax, i in zip(axes.ravel(), configs, strict=False):
            r = chain.configs[i]
            free = k - int(np.dot(r, needs))
            img = np.zeros((n[0] + 1, n[1] + 1))
            for q0 in range(n[0] + 1):
                for q1 in range(n[1] + 1):
                    t = (min(q0 + r[0], chain.buffers[0]), min(q1 + r[1], chain.buffers[1]))
                    fits = (q0 > 0 and needs[0] <= free) or (q1 > 0 and needs[1] <= free)
                    s = _starts(sol, i, t)
                    img[q0, q1] = (
                        0 if not fits else 1 if s.sum() == 0 else 2 if s[1] == 0 else 3 if s[0] == 0 else 4
                    )
            ax.imshow(
                img.T, origin="lower", cmap=cmap, vmin=0, vmax=4, aspect="auto", interpolation="nearest"
            )
            ax.set_title(f"running: {r[0]} {names[0]}, {r[1]} {names[1]}", fontsize=9)
            ax.set_xlabel(f"{names[0]} waiting")
            ax.set_ylabel(f"{names[1]} waiting")
        for ax in axes.ravel()[len(configs) :]:
            ax.axis("off")
        handles = [plt.Rectangle((0, 0), 1, 1, color=cmap(j)) for j in range(5)]
        fig.legend(handles, labels, loc="outside lower center", ncol=5, fontsize=8)
    kind = "preemptive" if chain.preemptive else "non-preemptive"
    fig.suptitle(
        f"optimal {kind} policy, k={k}, needs {list(needs)}: mean response time {sol.mean_response_time:.4f}"
    )
    from ..atomic import atomic_savefig

    atomic_savefig(fig, path, dpi=110)
