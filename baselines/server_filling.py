"""ServerFilling and its size-based variants, and First-Fit SRPT: the preemptive packing policies.

All of them compute a target set of jobs to run and hand it to ``fill_and_diff``, which preempts what
leaves the target and starts what enters it. Decisions are re-taken at every arrival and departure; a
job's priority changing between two events (a remaining size shrinking while it runs) takes effect at
the next event, as in the papers' event-driven simulations.

Packing when needs do not divide k (the papers assume powers of two): ``packing="greedy"`` (default)
places every job of the candidate set that fits, in priority order, and skips the others;
``packing="stop"`` stops at the first job that does not fit ("until no servers remain or the next job
cannot fit", 000 Sec. 2). With k and all needs powers of two the two readings coincide.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from msj_gym.core import Param, Policy
from msj_gym.core.jit import inline_jit
from msj_gym.core.state import CLS, I_K, I_SHEAD, NEED, SNEXT, PolicyData

from ._kit import (
    PACK_GREEDY,
    PACKINGS,
    attained_now,
    fill_and_diff,
    keep_smallest,
    heapify_min,
    pop_min,
    remaining_now,
    sort_ascending,
)

SIZE_AREA, SIZE_DURATION = 0, 1
_PACKING = Param(str, "greedy", "how to pack when a candidate does not fit: greedy (skip it) or stop", PACKINGS)


# Scratch layout of every kernel here: iwork = [candidates][marks: k][starts: k], fwork = keys.


@inline_jit
def _server_filling(view, pdata, actions):
    k = view.iv[I_K]
    cap = pdata.iwork.size - 2 * k
    cand, marks, starts = pdata.iwork[:cap], pdata.iwork[cap : cap + k], pdata.iwork[cap + k :]
    keys = pdata.fwork
    # M: the shortest arrival-order prefix of all jobs in the system needing >= k servers in total.
    m = 0
    total = 0
    s = view.iv[I_SHEAD]
    while s != -1 and total < k:
        need = view.ji[s, NEED]
        cand[m] = s
        keys[m] = -need
        total += need
        m += 1
        s = view.ji[s, SNEXT]
    sort_ascending(view, keys, cand, m)
    return fill_and_diff(view, cand, m, int(pdata.params[0]), marks, starts, actions)


class _Packing(Policy):
    preemptive = True
    params_spec = {"packing": _PACKING}
    kernel_depends = ("baselines._kit",)

    def prepare(self, workload: Any, rng: np.random.Generator) -> PolicyData:
        base = super().prepare(workload, rng)
        return base._replace(params=np.array([float(PACKINGS.index(self.param_values["packing"]))]))

    def work_sizes(self, num_slots: int, num_servers: int, num_classes: int) -> tuple[int, int]:
        return 3 * num_servers, num_servers


class ServerFilling(_Packing):
    """ServerFilling: take M, the shortest prefix of all jobs in the system (waiting or running, in
    arrival order) whose server needs add up to at least k (all jobs if there is no such prefix); serve
    the jobs of M in order of decreasing server need (ties: arrival order), preempting the rest.

    Source: Grosof & Harchol-Balter (001) Sec. 6; Anselmi & Doncel (000) Sec. 2; spec msfq.md 2.8.
    Preemptive (preempt-resume); size-oblivious. Throughput-optimal when k and all needs are powers of
    two. ``packing`` chooses how to pack when they are not (see the module docstring).
    """

    policy_id = "server-filling"
    size_aware = False
    reference = "001 Sec. 6; 000 Sec. 2"
    kernel = _server_filling


@inline_jit
def _sf_ranked(view, pdata, keys, cand, m, marks, starts, actions):
    """Given the k smallest (rank, slot) entries in a max-heap, keep the prefix M whose needs reach k
    and serve M by decreasing need, ties by increasing rank (then arrival)."""
    k = view.iv[I_K]
    sort_ascending(view, keys, cand, m)
    mm = 0
    total = 0
    while mm < m and total < k:
        total += view.ji[cand[mm], NEED]
        mm += 1
    for i in range(mm):
        keys[i] = -view.ji[cand[i], NEED] * (k + 1.0) + i
    sort_ascending(view, keys, cand, mm)
    return fill_and_diff(view, cand, mm, int(pdata.params[0]), marks, starts, actions)


@inline_jit
def _sf_srpt(view, sizes, pdata, actions):
    k = view.iv[I_K]
    cap = pdata.iwork.size - 2 * k
    cand, marks, starts = pdata.iwork[:cap], pdata.iwork[cap : cap + k], pdata.iwork[cap + k :]
    keys = pdata.fwork
    by_duration = pdata.params[1] == SIZE_DURATION
    m = 0
    s = view.iv[I_SHEAD]
    while s != -1:
        r = remaining_now(view, sizes, s)
        key = r if by_duration else r * view.ji[s, NEED]
        m = keep_smallest(view, keys, cand, m, k, key, s)
        s = view.ji[s, SNEXT]
    return _sf_ranked(view, pdata, keys, cand, m, marks, starts, actions)


class ServerFillingSRPT(_Packing):
    """ServerFilling-SRPT: order all jobs by remaining size (server need x remaining service time,
    ties: arrival order); M is the shortest prefix of that order needing >= k servers (all jobs if none);
    serve M by decreasing server need, ties by smaller remaining size; preempt the rest.

    Source: Anselmi & Doncel (000) Sec. 2 (definition); Grosof & Harchol-Balter (001) Sec. 6.
    Preemptive (preempt-resume); size-aware (reads remaining service times).
    """

    policy_id = "server-filling-srpt"
    size_aware = True
    reference = "000 Sec. 2; 001 Sec. 6"
    kernel = _sf_srpt

    def prepare(self, workload: Any, rng: np.random.Generator) -> PolicyData:
        base = super().prepare(workload, rng)
        return base._replace(params=np.append(base.params, float(SIZE_AREA)))


@inline_jit
def _sf_gittins(view, pdata, actions):
    k = view.iv[I_K]
    cap = pdata.iwork.size - 2 * k
    cand, marks, starts = pdata.iwork[:cap], pdata.iwork[cap : cap + k], pdata.iwork[cap + k :]
    keys = pdata.fwork
    table = pdata.table
    grid = table.shape[1]
    m = 0
    s = view.iv[I_SHEAD]
    while s != -1:
        c = view.ji[s, CLS]
        idx = int(attained_now(view, s) * pdata.params[1 + c])
        key = table[c, min(idx, grid - 1)]
        m = keep_smallest(view, keys, cand, m, k, key, s)
        s = view.ji[s, SNEXT]
    return _sf_ranked(view, pdata, keys, cand, m, marks, starts, actions)


def gittins_rank_table(distribution: Any, grid: int = 512, fine: int = 8) -> tuple[np.ndarray, float]:
    """Gittins rank of a service-time distribution on an age grid: rank(a) = inf_{b > a}
    E[min(D, b) - a | D > a] / P(D <= b | D > a) = inf_b int_a^b S(t) dt / (S(a) - S(b)).
    Returns (ranks at ages 0, h, 2h, ..., h * (grid - 1)) and 1 / h. Integrals by the trapezoid rule on
    a grid ``fine`` times finer; the grid ends where the survival function drops below 1e-6."""
    mean = distribution.mean
    top = mean
    while float(distribution.survival(np.array([top]))[0]) > 1e-6 and top < mean * 1e7:
        top *= 2.0
    n_fine = grid * fine
    x = np.linspace(0.0, top, n_fine + 1)
    surv = np.clip(distribution.survival(x), 0.0, 1.0)
    integral = np.concatenate(([0.0], np.cumsum(0.5 * (surv[1:] + surv[:-1]) * np.diff(x))))
    ranks = np.empty(grid)
    for i in range(grid):
        a = i * fine
        num = integral[a + 1 :] - integral[a]
        den = surv[a] - surv[a + 1 :]
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where(den > 1e-12, num / den, np.inf)
        ranks[i] = ratio.min() if np.isfinite(ratio).any() else (ranks[i - 1] if i else mean)
    step = top / grid
    return ranks, 1.0 / step


class ServerFillingGittins(_Packing):
    """ServerFilling-Gittins: as ServerFilling-SRPT, but jobs are ordered by their Gittins rank, which
    for a class-i job with attained service a is n_i x inf_{b > a} E[min(D_i, b) - a | D_i > a] /
    P(D_i <= b | D_i > a) (the duration rank scaled to server-time units). It knows each class's
    service-time distribution, not the jobs' sizes.

    Source: Anselmi & Doncel (000) Sec. 2. The paper writes "age (time spent in the system)"; Gittins'
    rank is defined on the service already received, which is what we use (a waiting job does not age).
    With deterministic durations it coincides with ServerFilling-SRPT; with exponential ones every job
    of a class has the constant rank n_i E[D_i].
    Preemptive (preempt-resume); size-oblivious (distribution-aware). Ranks are tabulated on a
    512-point age grid per class.
    """

    policy_id = "server-filling-gittins"
    size_aware = False
    reference = "000 Sec. 2"
    kernel = _sf_gittins

    def prepare(self, workload: Any, rng: np.random.Generator) -> PolicyData:
        base = super().prepare(workload, rng)
        tables, inv_steps = [], []
        for c in workload.classes:
            ranks, inv_step = gittins_rank_table(c.service_time)
            tables.append(c.server_need * ranks)
            inv_steps.append(inv_step)
        return base._replace(params=np.concatenate((base.params, inv_steps)), table=np.array(tables))


@inline_jit
def _ff_srpt(view, sizes, pdata, actions):
    k = view.iv[I_K]
    nslot = (pdata.iwork.size - 2 * k) // 2
    heap, cand = pdata.iwork[:nslot], pdata.iwork[nslot : 2 * nslot]
    marks, starts = pdata.iwork[2 * nslot : 2 * nslot + k], pdata.iwork[2 * nslot + k :]
    keys = pdata.fwork
    by_duration = pdata.params[1] == SIZE_DURATION
    min_need = k
    h = 0
    s = view.iv[I_SHEAD]
    while s != -1:
        r = remaining_now(view, sizes, s)
        need = view.ji[s, NEED]
        keys[h] = r if by_duration else r * need
        heap[h] = s
        h += 1
        min_need = min(min_need, need)
        s = view.ji[s, SNEXT]
    heapify_min(view, keys, heap, h)
    # Pop in SRPT order until the servers are full; the popped prefix is all fill_and_diff needs.
    m = 0
    left = k
    while h > 0 and left >= min_need:
        s = pop_min(view, keys, heap, h)
        h -= 1
        cand[m] = s
        m += 1
        if view.ji[s, NEED] <= left:
            left -= view.ji[s, NEED]
    return fill_and_diff(view, cand, m, PACK_GREEDY, marks, starts, actions)


class FirstFitSRPT(Policy):
    """First-Fit SRPT: go through all jobs in order of least remaining size (server need x remaining
    service time; ties: arrival order) and serve each one that fits in the servers still free, skipping
    those that do not, until the servers are full or the jobs run out; preempt the rest.

    Source: Anselmi & Doncel (000) Sec. 2. The paper says "least remaining processing time" and likens
    the policy to "Smallest Area First"; we read the order as remaining *size* (area, as for
    ServerFilling-SRPT in the same section); ``order="duration"`` orders by remaining service time.
    Preemptive (preempt-resume); size-aware.
    """

    policy_id = "first-fit-srpt"
    preemptive = True
    size_aware = True
    reference = "000 Sec. 2"
    params_spec = {
        "order": Param(str, "size", "rank jobs by remaining size (need x time) or remaining duration",
                       ("size", "duration")),
    }
    kernel = _ff_srpt
    kernel_depends = ("baselines._kit",)

    def prepare(self, workload: Any, rng: np.random.Generator) -> PolicyData:
        base = super().prepare(workload, rng)
        order = SIZE_DURATION if self.param_values["order"] == "duration" else SIZE_AREA
        return base._replace(params=np.array([float(PACK_GREEDY), float(order)]))

    def work_sizes(self, num_slots: int, num_servers: int, num_classes: int) -> tuple[int, int]:
        return 2 * num_slots + 2 * num_servers, num_slots
