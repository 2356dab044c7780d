"""ServerFilling and its size-based variants, and First-Fit SRPT: the preemptive packing policies.

All of them compute a target set of jobs to run and emit the difference to what runs now (preempt what
leaves the target, start what enters it): ServerFilling and its ranked variants through
``serve_by_need``, First-Fit SRPT through ``fill_and_diff``. Decisions are re-taken at every arrival
and departure; a job's priority changing between two events (a remaining size shrinking while it
runs) takes effect at the next event, as in the papers' event-driven simulations.

Packing when needs do not divide k (the papers assume powers of two): ``packing="greedy"`` (default)
places every job of the candidate set that fits, in priority order, and skips the others;
``packing="stop"`` stops at the first job that does not fit ("until no servers remain or the next job
cannot fit", Anselmi & Doncel (2024), Sec. 2). With k and all needs powers of two the two readings coincide.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np

from msj_gym.core import Param, Policy
from msj_gym.core.access import (
    class_need,
    class_running,
    class_waiting,
    field,
    first_in_system,
    first_waiting,
    first_waiting_of_class,
    in_system,
    int_value,
    is_running,
    job_class,
    job_id,
    last_in_system,
    next_in_system,
    next_waiting,
    next_waiting_of_class,
    num_arrived,
    num_classes,
    num_running,
    num_servers,
    prev_in_system,
    region,
    running_job,
    server_need,
    start,
    value,
)
from msj_gym.core.jit import inline_jit
from msj_gym.core.layout import Layout
from msj_gym.core.record import Record
from msj_gym.core.state import PolicyData
from msj_gym.core.workload import WorkloadLike
from msj_gym.workloads.workload import ClassTable

from ._kit import (
    PACK_GREEDY,
    PACKINGS,
    attained_now,
    decision_still_valid,
    fill_and_diff,
    keep_smallest,
    remaining_now,
    remember_decision,
    serve_by_need,
    sort_ascending,
)

SIZE_AREA, SIZE_DURATION = 0, 1
_PACKING = Param(
    str, "greedy", "how to pack when a candidate does not fit: greedy (skip it) or stop", PACKINGS
)


# Parameters shared by the ServerFilling kernels: the packing rule, whether the decision memo may be
# reused (fast path), the number of distinct needs and each class's group (distinct needs, decreasing).
# The ranked variants extend the record with their own fields.
PACKING_FIELDS = Record("packing", "fast", "ngroup", "gmap")
PACKING, FAST, NGROUP, GMAP = PACKING_FIELDS.ids
SRPT_FIELDS = PACKING_FIELDS.extend("order")  # SIZE_AREA or SIZE_DURATION
ORDER = SRPT_FIELDS.id("order")
GITTINS_FIELDS = PACKING_FIELDS.extend("inv_step")  # per class: 1 / the step of its rank table's age grid
INV_STEP = GITTINS_FIELDS.id("inv_step")
# Scratch shared by the ServerFilling kernels: M's jobs in arrival order, serve_by_need's marks, starts,
# per-need counts and needs; ``state`` is the decision memo (see _kit.remember_decision) + the largest
# key in M.
PACKING_WORK = Layout(
    ints={"src": "servers", "marks": "servers", "starts": "servers", "counts": "classes", "gneed": "classes"}
)
SRC, MARKS, STARTS, COUNTS, GNEED = PACKING_WORK.ids


@inline_jit
def _serve(view, pdata, order, m, whole, actions):
    """Serve M, the shortest prefix of order[:m] needing >= k servers, by decreasing need (ties: order's
    order); ``whole``: order[:m] is every job in the system. Returns (actions, M's length, M's total
    need, M's smallest need)."""
    ngroup = int_value(pdata.params, NGROUP)
    gmap = field(pdata.params, GMAP)
    marks, starts = region(pdata.iwork, MARKS), region(pdata.iwork, STARTS)
    counts, gneed = region(pdata.iwork, COUNTS), region(pdata.iwork, GNEED)
    packing = int_value(pdata.params, PACKING)
    return serve_by_need(view, order, m, whole, gmap, ngroup, packing, counts, gneed, marks, starts, actions)


@inline_jit
def _start_all_if_room(view, memo, actions):
    """If all jobs together need at most k servers, M is every job and all of them run: start every
    waiting job (in arrival order) and return how many; otherwise return -1."""
    total = 0
    for c in range(num_classes(view)):
        total += (class_waiting(view, c) + class_running(view, c)) * class_need(view, c)
    if total > num_servers(view):
        return -1
    n = 0
    s = first_waiting(view)
    while s != -1:
        n = start(actions, n, s)
        s = next_waiting(view, s)
    remember_decision(view, memo, n, False)
    return n


@inline_jit
def _server_filling(view, pdata, actions):
    k = num_servers(view)
    memo = pdata.state
    if decision_still_valid(view, memo):
        # M was full: jobs arriving behind a full prefix cannot enter it, so nothing changes.
        return 0
    n = _start_all_if_room(view, memo, actions)
    if n >= 0:
        return n
    src = region(pdata.iwork, SRC)
    # M: the shortest arrival-order prefix of all jobs in the system needing >= k servers in total.
    m = 0
    total = 0
    s = first_in_system(view)
    while s != -1 and total < k:
        src[m] = s
        total += server_need(view, s)
        m += 1
        s = next_in_system(view, s)
    n, _, _, _ = _serve(view, pdata, src, m, False, actions)
    remember_decision(view, memo, n, total >= k)
    return n


class _Packing(Policy):
    preemptive = True
    params_spec: ClassVar[Mapping[str, Param]] = {"packing": _PACKING}
    fast_path = True
    fields: ClassVar[Record] = PACKING_FIELDS
    work = PACKING_WORK

    def extra_params(self, workload: ClassTable) -> dict[str, Any]:
        """Values of the fields a subclass adds to ``PACKING_FIELDS`` (its ``fields``)."""
        return {}

    def stability_limit(self, workload: WorkloadLike) -> tuple[float, str] | None:
        """Throughput-optimal when k and every need are powers of two (Grosof & Harchol-Balter (2023),
        Sec. 6), for ServerFilling and its ranked variants alike."""
        if not isinstance(workload, ClassTable):
            return None
        # the analysis package loads on demand, so that importing the policies stays cheap
        from msj_gym.analysis.stability import server_filling_limit

        return server_filling_limit(workload)

    # a policy is prepared only for a workload of its own models (for_workload checks): narrower by design
    def prepare(self, workload: ClassTable, rng: np.random.Generator) -> PolicyData:  # type: ignore[override]
        return self._packed(workload, rng, self.extra_params(workload))

    def _packed(self, workload: ClassTable, rng: np.random.Generator, extra: dict[str, Any]) -> PolicyData:
        """The shared preparation, ``extra`` the values of the subclass's own fields."""
        base = super().prepare(workload, rng)
        needs = workload.server_needs
        groups = np.unique(needs)[::-1]
        gmap = [int(np.flatnonzero(groups == n)[0]) for n in needs]
        params = self.fields.pack(
            packing=PACKINGS.index(self.param_values["packing"]),
            fast=self.fast_path,
            ngroup=groups.size,
            gmap=gmap,
            **extra,
        )
        return base._replace(params=params, state=np.zeros(5))


class ServerFilling(_Packing):
    """ServerFilling: take M, the shortest prefix of all jobs in the system (waiting or running, in
    arrival order) whose server needs add up to at least k (all jobs if there is no such prefix); serve
    the jobs of M in order of decreasing server need (ties: arrival order), preempting the rest.

    Source: Grosof & Harchol-Balter (2023), Sec. 6; Anselmi & Doncel (2024), Sec. 2; Chen et al. (2026), App.
    D. Preemptive (preempt-resume); size-oblivious. Throughput-optimal when k and all needs are powers of
    two. ``packing`` chooses how to pack when they are not (see the module docstring).
    """

    policy_id = "server-filling"
    size_aware = False
    reference = "Grosof & Harchol-Balter (2023), Sec. 6; Anselmi & Doncel (2024), Sec. 2"
    kernel = _server_filling


# The ranked variants keep every job of the system in rank order between decisions (after the shared
# scratch: [order length, newest id seen], the order's slots, ids and keys, one per slot).
# Each decision drops the jobs that left, appends the newcomers, refreshes the keys of running jobs (the
# only ones whose rank moves) and re-sorts by insertion in the same pass: the order is nearly sorted, so
# this costs O(jobs + displacements) with predictable branches, instead of a full sort. If the slots
# grow, the scratch arrays start empty and the next decision rebuilds the order from the job list.


RANKED_WORK = PACKING_WORK.extend(
    ints={"order_head": "2", "order_slots": "slots", "order_ids": "slots"}, floats={"order_keys": "slots"}
)
*_, ORDER_HEAD, ORDER_SLOTS, ORDER_IDS, ORDER_KEYS = RANKED_WORK.ids  # the shared regions keep theirs


@inline_jit
def _order_parts(view, pdata):
    head = region(pdata.iwork, ORDER_HEAD)
    slots = region(pdata.iwork, ORDER_SLOTS)
    ids = region(pdata.iwork, ORDER_IDS)
    keys = region(pdata.fwork, ORDER_KEYS)
    return head, slots, ids, keys


@inline_jit
def _order_rerank(view, pdata, key_of, key_data):
    """Bring the stored order up to date in one pass: drop departed jobs, recompute the key of every
    running job (whose rank moves with time) as ``key_of(view, key_data, slot)``, append newcomers,
    and insertion-sort each entry into place as it is taken. The order is nearly sorted, so this
    costs O(jobs + displacements). Returns the length of the order."""
    head, slots, ids, keys = _order_parts(view, pdata)
    m = 0
    for i in range(head[0]):
        s = slots[i]
        jid = ids[i]
        if not in_system(view, s) or job_id(view, s) != jid:
            continue  # departed (its slot may hold a newer job)
        key = key_of(view, key_data, s) if is_running(view, s) else keys[i]
        m = _insert_ranked(keys, slots, ids, m, key, s, jid)
    newest = head[1]
    s = last_in_system(view)
    first_new = -1
    while s != -1 and job_id(view, s) >= newest:
        first_new = s
        s = prev_in_system(view, s)
    s = first_new
    while s != -1:
        m = _insert_ranked(keys, slots, ids, m, key_of(view, key_data, s), s, job_id(view, s))
        s = next_in_system(view, s)
    head[0] = m
    head[1] = num_arrived(view)
    return m


@inline_jit
def _insert_ranked(keys, slots, ids, m, key, s, jid):
    """Insert (key, jid) into the sorted keys[:m] (ties: smaller job id first); returns m + 1. Entry m
    may be the one being moved: the caller has read it."""
    j = m - 1
    if j >= 0 and (key < keys[j] or (key == keys[j] and jid < ids[j])):
        while j >= 0 and (key < keys[j] or (key == keys[j] and jid < ids[j])):
            keys[j + 1] = keys[j]
            slots[j + 1] = slots[j]
            ids[j + 1] = ids[j]
            j -= 1
    keys[j + 1] = key
    slots[j + 1] = s
    ids[j + 1] = jid
    return m + 1


@inline_jit
def _order_serve(view, pdata, m, actions):
    """Serve M, the shortest prefix of the ranked order needing >= k, and remember the decision."""
    k = num_servers(view)
    _, slots, _, keys = _order_parts(view, pdata)
    n, mm, total, smallest = _serve(view, pdata, slots, m, True, actions)
    memo = pdata.state
    # Reusable only if no member can drop out of M when running jobs overtake waiting ones in rank:
    # M minus any one member needs < k servers (see _sf_srpt).
    reusable = total >= k and total - smallest < k and value(pdata.params, FAST) == 1.0
    remember_decision(view, memo, n, reusable)
    memo[4] = keys[mm - 1] if mm > 0 else np.inf
    return n


@inline_jit
def _srpt_key(view, sizes, s, by_duration):
    r = remaining_now(view, sizes, s)
    return r if by_duration else r * server_need(view, s)


@inline_jit
def _srpt_rank(view, data, s):
    sizes, by_duration = data
    return _srpt_key(view, sizes, s, by_duration)


@inline_jit
def _sf_srpt(view, sizes, pdata, actions):
    memo = pdata.state
    by_duration = value(pdata.params, ORDER) == SIZE_DURATION
    if decision_still_valid(view, memo):
        # Exact shortcut: since the last decision only jobs arrived, and the keys of running jobs only
        # fell. M's members still rank before everyone else, and M keeps all of them because M minus
        # any one member needs < k (checked when the decision was remembered; without that check a
        # running job overtaking a waiting one could shrink M). So M, and the jobs served in it,
        # change only if a newcomer ranks before M's largest member.
        newest = memo[3]
        s = last_in_system(view)
        unchanged = True
        while s != -1 and job_id(view, s) >= newest:
            if _srpt_key(view, sizes, s, by_duration) < memo[4]:
                unchanged = False
                break
            s = prev_in_system(view, s)
        if unchanged:
            memo[3] = num_arrived(view)
            return 0
    n = _start_all_if_room(view, memo, actions)
    if n >= 0:
        return n  # the stored order catches up at the next full decision
    m = _order_rerank(view, pdata, _srpt_rank, (sizes, by_duration))
    return _order_serve(view, pdata, m, actions)


class _Ranked(_Packing):
    work = RANKED_WORK


class ServerFillingSRPT(_Ranked):
    """ServerFilling-SRPT: order all jobs by remaining size (server need x remaining service time,
    ties: arrival order); M is the shortest prefix of that order needing >= k servers (all jobs if none);
    serve M by decreasing server need, ties by smaller remaining size; preempt the rest.

    Source: Anselmi & Doncel (2024), Sec. 2 (definition); Grosof & Harchol-Balter (2023), Sec. 6.
    Preemptive (preempt-resume); size-aware (reads remaining service times).
    """

    policy_id = "server-filling-srpt"
    size_aware = True
    reference = "Anselmi & Doncel (2024), Sec. 2; Grosof & Harchol-Balter (2023), Sec. 6"
    kernel = _sf_srpt

    fields = SRPT_FIELDS

    def extra_params(self, workload: ClassTable) -> dict[str, Any]:
        return {"order": SIZE_AREA}


@inline_jit
def _gittins_rank(view, data, s):
    table, inv_step = data
    c = job_class(view, s)
    return table[c, min(int(attained_now(view, s) * inv_step[c]), table.shape[1] - 1)]


@inline_jit
def _sf_gittins(view, pdata, actions):
    n = _start_all_if_room(view, pdata.state, actions)
    if n >= 0:
        return n
    inv_step = field(pdata.params, INV_STEP)
    m = _order_rerank(view, pdata, _gittins_rank, (pdata.table, inv_step))
    return _order_serve(view, pdata, m, actions)


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
    # Ranks that are equal in exact arithmetic (all of them, for an exponential distribution) must tie
    # exactly, so that the policy's own tie-break orders those jobs: the survival function's last bits
    # depend on the CPU's vector instructions, and unrounded they would decide the order.
    quantum = mean * 2.0**-30
    return np.round(ranks / quantum) * quantum, 1.0 / step


class ServerFillingGittins(_Ranked):
    """ServerFilling-Gittins: as ServerFilling-SRPT, but jobs are ordered by their Gittins rank, which
    for a class-i job with attained service a is n_i x inf_{b > a} E[min(D_i, b) - a | D_i > a] /
    P(D_i <= b | D_i > a) (the duration rank scaled to server-time units). It knows each class's
    service-time distribution, not the jobs' sizes.

    Source: Anselmi & Doncel (2024), Sec. 2. The paper writes "age (time spent in the system)"; Gittins'
    rank is defined on the service already received, which is what we use (a waiting job does not age).
    With deterministic durations it coincides with ServerFilling-SRPT (up to the rank grid); with
    exponential ones every job of a class has the constant rank n_i E[D_i].
    Preemptive (preempt-resume); size-oblivious (distribution-aware). Ranks are tabulated on a
    512-point age grid per class.
    """

    policy_id = "server-filling-gittins"
    size_aware = False
    reference = "Anselmi & Doncel (2024), Sec. 2"
    kernel = _sf_gittins
    fast_path = False  # ranks of running jobs may rise with age, so every event is re-examined
    fields = GITTINS_FIELDS

    # a policy is prepared only for a workload of its own models (for_workload checks): narrower by design
    def prepare(self, workload: ClassTable, rng: np.random.Generator) -> PolicyData:  # type: ignore[override]
        # the rank tables give both a field (their grids' steps) and the kernel's table: computed once,
        # here, rather than kept on the policy between the two
        tables = [gittins_rank_table(c.service_time) for c in workload.classes]
        base = self._packed(workload, rng, {"inv_step": [inv_step for _, inv_step in tables]})
        needs = workload.server_needs
        return base._replace(table=np.array([needs[i] * ranks for i, (ranks, _) in enumerate(tables)]))


# First-Fit SRPT's parameters: the key (SIZE_AREA or SIZE_DURATION), where each class's kept waiting
# jobs start in the kept regions (C + 1 offsets: class c keeps k // n_c of them) and how many are kept.
FF_FIELDS = Record("order", "kept", "num_kept")
FF_ORDER, FF_KEPT, FF_NUM_KEPT = FF_FIELDS.ids
# The kept waiting jobs and their keys; the candidates (running + kept) and their keys; fill_and_diff's
# marks and starts.
FF_WORK = Layout(
    ints={
        "kept_slots": "num_kept",
        "cand": "servers + num_kept",
        "ff_marks": "servers",
        "ff_starts": "servers",
    },
    floats={"kept_keys": "num_kept", "cand_keys": "servers + num_kept"},
    params=FF_FIELDS,
)
KEPT_SLOTS, CAND, FF_MARKS, FF_STARTS, KEPT_KEYS, CAND_KEYS = FF_WORK.ids


@inline_jit
def _ff_srpt(view, sizes, pdata, actions):
    # Candidates: the running jobs and, per class, the k // n_c waiting jobs with the smallest keys. No
    # other job can be picked: ahead of it in SRPT order stand k // n_c jobs of its own need, which
    # leave no room for it whether or not they are picked themselves. Keeps a runaway queue cheap.
    nclass = num_classes(view)
    by_duration = value(pdata.params, FF_ORDER) == SIZE_DURATION
    offsets = field(pdata.params, FF_KEPT)
    kept_slots, kept_keys = region(pdata.iwork, KEPT_SLOTS), region(pdata.fwork, KEPT_KEYS)
    cand, keys = region(pdata.iwork, CAND), region(pdata.fwork, CAND_KEYS)
    marks, starts = region(pdata.iwork, FF_MARKS), region(pdata.iwork, FF_STARTS)
    m = 0
    for p in range(num_running(view)):
        s = running_job(view, p)
        cand[m] = s
        keys[m] = _srpt_key(view, sizes, s, by_duration)
        m += 1
    for c in range(nclass):
        lo = int(offsets[c])
        cap = int(offsets[c + 1]) - lo
        hs, hk = kept_slots[lo : lo + cap], kept_keys[lo : lo + cap]
        h = 0
        s = first_waiting_of_class(view, c)
        while s != -1:
            h = keep_smallest(view, hk, hs, h, cap, _srpt_key(view, sizes, s, by_duration), s)
            s = next_waiting_of_class(view, s)
        for i in range(h):
            cand[m] = hs[i]
            keys[m] = hk[i]
            m += 1
    sort_ascending(view, keys, cand, m)
    return fill_and_diff(view, cand, m, PACK_GREEDY, marks, starts, actions)


class FirstFitSRPT(Policy):
    """First-Fit SRPT: go through all jobs in order of least remaining size (server need x remaining
    service time; ties: arrival order) and serve each one that fits in the servers still free, skipping
    those that do not, until the servers are full or the jobs run out; preempt the rest.

    Source: Anselmi & Doncel (2024), Sec. 2. The paper says "least remaining processing time" and likens
    the policy to "Smallest Area First"; we read the order as remaining *size* (area, as for
    ServerFilling-SRPT in the same section); ``order="duration"`` orders by remaining service time.
    Preemptive (preempt-resume); size-aware. Each decision scans the waiting jobs (O(queue)), so on an
    unstable workload (e.g. ``sf-fig2`` at load 0.9, where small jobs keep the 8-server jobs out) a run
    slows down as its queue grows; lower ``max_jobs_in_system`` to stop such runs early.
    """

    policy_id = "first-fit-srpt"
    preemptive = True
    size_aware = True
    reference = "Anselmi & Doncel (2024), Sec. 2"
    params_spec: ClassVar[Mapping[str, Param]] = {
        "order": Param(
            str,
            "size",
            "rank jobs by remaining size (need x time) or remaining duration",
            ("size", "duration"),
        ),
    }
    kernel = _ff_srpt
    work = FF_WORK

    # a policy is prepared only for a workload of its own models (for_workload checks): narrower by design
    def prepare(self, workload: ClassTable, rng: np.random.Generator) -> PolicyData:  # type: ignore[override]
        base = super().prepare(workload, rng)
        order = SIZE_DURATION if self.param_values["order"] == "duration" else SIZE_AREA
        per_class = workload.num_servers // workload.server_needs
        offsets = np.concatenate(([0], np.cumsum(per_class)))
        return base._replace(params=FF_FIELDS.pack(order=order, kept=offsets, num_kept=offsets[-1]))
