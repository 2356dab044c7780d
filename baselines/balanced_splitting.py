"""Balanced Splitting: BS-pi and ModifiedBS-pi (Anselmi & Doncel (2024), Definitions 1 and 2).

The k servers are split once into A_1, ..., A_C and the helpers H (eq. (2a)-(2b), see
:func:`msj_gym.analysis.balanced_splitting.bs_partition`); A_i holds s_i = a_i / n_i class-i jobs at once.
The engine counts idle servers, not server identities: since A_i only ever runs class-i jobs, each of
n_i servers, the policy only needs how many class-i jobs run in A_i, which it gets as (class-i jobs
running) - (class-i jobs it started on the helpers and that still run). It keeps that short helper list
(at most |H| / min n_i jobs) and scans it when a departure happened since its last decision.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np

from msj_gym.analysis.balanced_splitting import BSPartition, bs_partition, relative_demands
from msj_gym.core import Param, Policy
from msj_gym.core.access import (
    class_need,
    class_running,
    field,
    first_waiting_of_class,
    free_servers,
    int_value,
    is_running,
    job_class,
    job_id,
    last_waiting,
    measured_batch,
    next_waiting,
    next_waiting_of_class,
    num_arrived,
    num_classes,
    num_departures,
    prev_waiting,
    region,
    start,
)
from msj_gym.core.jit import inline_jit
from msj_gym.core.layout import Layout
from msj_gym.core.record import Record
from msj_gym.core.state import PolicyData
from msj_gym.workloads.workload import ClassTable

# pdata.params: the mode (MODE_BS or MODE_MODIFIED), the auxiliary policy (AUX_*), per class s_i, the
# servers of its block A_i in jobs (C), and the helpers' priority key of each class (C; smaller first)
FIELDS = Record("mode", "aux", "blocks", "key")
MODE, AUX, BLOCKS, KEY = FIELDS.ids
# per slot: sent to an A_i in the current decision; per class: its next waiting job not yet taken
WORK = Layout(ints={"marks": "slots", "cursor": "classes"})
MARKS, CURSOR = WORK.ids
MODE_BS, MODE_MODIFIED = 0, 1
AUX_FCFS, AUX_FIRST_FIT, AUX_MSF = 0, 1, 2
AUXILIARY = ("fcfs", "first-fit", "msf")
# pdata.state = [departures seen, arrivals seen, helper-list length, then per class: jobs running on the
# helpers (C); then per batch and class (NB x C each) the measured arrivals, those of them sent to the
# helpers on arrival and those served by the helpers; then the helper list, 3 entries per job: slot,
# job id, class]
S_DONE, S_NARR, S_NH = 0, 1, 2
N_SFIX = 3
NB = 30  # batches of the P_H estimate (arrival order, as the engine batches response times)


@inline_jit
def _next_unmarked(view, s, marks):
    while s != -1 and marks[s] != 0:
        s = next_waiting_of_class(view, s)
    return s


@inline_jit
def _forget_departed(view, st, on_h, hl0):
    """Step 1: drop the helper jobs that have left from the list at ``hl0`` (slot, job id, class per
    entry; a slot reused by a later job counts as left) and from the per-class counts ``on_h``."""
    nh = int(st[S_NH])
    p = 0
    while p < nh:
        s = int(st[hl0 + 3 * p])
        if not is_running(view, s) or job_id(view, s) != int(st[hl0 + 3 * p + 1]):
            on_h[int(st[hl0 + 3 * p + 2])] -= 1.0
            nh -= 1
            st[hl0 + 3 * p] = st[hl0 + 3 * nh]
            st[hl0 + 3 * p + 1] = st[hl0 + 3 * nh + 1]
            st[hl0 + 3 * p + 2] = st[hl0 + 3 * nh + 2]
        else:
            p += 1
    st[S_NH] = nh
    st[S_DONE] = num_departures(view)


@inline_jit
def _serve_helpers(view, st, actions, n, h_free, on_h, hl0, srv0, marks, cursor, aux, key):
    """Step 4: the auxiliary policy on the ``h_free`` idle helpers, over the waiting jobs not ``marks``ed
    (just sent to an A_i): per class the oldest such job (a class's jobs share a need, so its oldest is
    the one that fits if any does). Appends the starts to ``actions[:n]``, records the jobs in the
    helper list and the batch counts at ``srv0``; returns the new ``n``."""
    nclass = num_classes(view)
    for c in range(nclass):
        cursor[c] = _next_unmarked(view, first_waiting_of_class(view, c), marks)
    nh = int(st[S_NH])
    cap = (st.size - hl0) // 3
    while h_free > 0 and nh < cap:
        best = -1
        best_key = np.inf
        best_id = 0
        for c in range(nclass):
            s = cursor[c]
            if s == -1:
                continue
            if aux != AUX_FCFS and class_need(view, c) > h_free:
                continue
            jid = job_id(view, s)
            if best == -1 or key[c] < best_key or (key[c] == best_key and jid < best_id):
                best, best_key, best_id = c, key[c], jid
        if best == -1 or class_need(view, best) > h_free:
            break  # FCFS: the oldest helper job does not fit and blocks the rest
        s = cursor[best]
        n = start(actions, n, s)
        h_free -= class_need(view, best)
        on_h[best] += 1.0
        st[hl0 + 3 * nh] = s
        st[hl0 + 3 * nh + 1] = job_id(view, s)
        st[hl0 + 3 * nh + 2] = best
        nh += 1
        b = measured_batch(view, s, NB)
        if b >= 0:
            st[srv0 + b * nclass + best] += 1.0
        cursor[best] = _next_unmarked(view, next_waiting_of_class(view, s), marks)
    st[S_NH] = nh
    return n


@inline_jit
def _balanced_splitting(view, pdata, actions):
    par, st = pdata.params, pdata.state
    nclass = num_classes(view)
    mode = int_value(par, MODE)
    aux = int_value(par, AUX)
    blocks = field(par, BLOCKS)
    key = field(par, KEY)
    on_h = st[N_SFIX : N_SFIX + nclass]
    arr0 = N_SFIX + nclass
    toh0 = arr0 + NB * nclass
    srv0 = toh0 + NB * nclass
    hl0 = srv0 + NB * nclass
    marks = region(pdata.iwork, MARKS)
    cursor = region(pdata.iwork, CURSOR)

    # 1. Helper jobs that left since the last decision.
    if st[S_DONE] != num_departures(view):
        _forget_departed(view, st, on_h, hl0)

    # 2. Room in each A_i, and the idle helpers.
    h_free = free_servers(view)
    for c in range(nclass):
        room = int(blocks[c]) - (class_running(view, c) - int(on_h[c]))
        cursor[c] = max(room, 0)  # cursor holds the room until step 4
        h_free -= cursor[c] * class_need(view, c)
    h_free = max(h_free, 0)  # < 0 only if jobs were started by another policy (a warm start)

    # 3. Jobs into their A_i. BS: the oldest waiting jobs of the class (rule 1 for an arrival that finds
    # room, rule 3 after a departure; a class never has jobs waiting while its A_i has room). ModifiedBS:
    # only the jobs arriving now, in arrival order; older waiting jobs belong to the helpers for good.
    n = 0
    first_new = int(st[S_NARR])
    if mode == MODE_BS:
        for c in range(nclass):
            s = first_waiting_of_class(view, c)
            while s != -1 and cursor[c] > 0:
                n = start(actions, n, s)
                marks[s] = 1
                cursor[c] -= 1
                s = next_waiting_of_class(view, s)
    # the jobs arriving now are the tail of the waiting list
    s = last_waiting(view)
    head_new = -1
    while s != -1 and job_id(view, s) >= first_new:
        head_new = s
        s = prev_waiting(view, s)
    s = head_new
    while s != -1:
        c = job_class(view, s)
        if mode == MODE_MODIFIED and cursor[c] > 0:
            n = start(actions, n, s)
            marks[s] = 1
            cursor[c] -= 1
        b = measured_batch(view, s, NB)
        if b >= 0:
            st[arr0 + b * nclass + c] += 1.0
            if marks[s] == 0:
                st[toh0 + b * nclass + c] += 1.0
        s = next_waiting(view, s)
    st[S_NARR] = num_arrived(view)

    # 4. The auxiliary policy on the helpers, over the waiting jobs not just sent to an A_i.
    n = _serve_helpers(view, st, actions, n, h_free, on_h, hl0, srv0, marks, cursor, aux, key)
    for i in range(n):
        marks[actions[i]] = 0
    return n


def _parse_demands(policy_id: str, text: str, nclass: int | None = None) -> np.ndarray | None:
    """``demands`` parameter: "" (from the workload) or comma-separated numbers (brackets allowed), as
    many as the workload's classes where ``nclass`` is given; a one-line ValueError otherwise."""
    where = f"policy {policy_id!r} parameter 'demands'"
    body = text.strip().strip("[]()").strip()
    if not body:
        return None
    try:
        values = np.array([float(v) for v in body.split(",") if v.strip()], dtype=np.float64)
    except ValueError:
        raise ValueError(f"{where}: expected comma-separated numbers, got {text!r}") from None
    if nclass is not None and values.size != nclass:
        raise ValueError(f"{where}: expected {nclass} numbers (one per class), got {values.size} in {text!r}")
    return values


class _BalancedSplittingBase(Policy):
    """Shared machinery of BS-pi and ModifiedBS-pi."""

    mode: ClassVar[int] = MODE_BS
    preemptive = False
    size_aware = False
    decides_every_event = True  # it must see every arrival (ModifiedBS) and departure (both)
    kernel = _balanced_splitting
    work = WORK
    params_spec: ClassVar[Mapping[str, Param]] = {
        "aux": Param(str, "fcfs", "auxiliary policy pi on the helper set", choices=AUXILIARY),
        "demands": Param(
            str,
            "",
            "relative demands rho_i = alpha_i d_i n_i used for the partition, comma-separated "
            "(empty: from the workload; give estimates to study a mis-estimated partition)",
        ),
    }

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        _parse_demands(self.policy_id, self.param_values["demands"])  # numbers, before any workload

    def partition(self, workload: ClassTable) -> BSPartition:
        """The static partition this policy uses on ``workload`` (Anselmi & Doncel (2024), eq. (2a)-(2b))."""
        given = _parse_demands(self.policy_id, self.param_values["demands"], workload.num_classes)
        demands = relative_demands(workload) if given is None else given
        try:
            return bs_partition(workload.num_servers, workload.server_needs, demands)
        except ValueError as exc:
            raise ValueError(f"policy {self.policy_id!r}: {exc}") from None

    # a policy is asked only about a workload of its own models (for_workload checks): narrower by design
    def unsupported(self, workload: ClassTable) -> str | None:  # type: ignore[override]
        try:
            part = self.partition(workload)
        except ValueError as exc:  # the given demands do not fit its classes, or no partition exists
            return str(exc)
        if self.mode == MODE_MODIFIED and part.helpers == 0:
            return (
                f"policy {self.policy_id!r}: the partition leaves no helpers (every k rho_i / (n_i rho) "
                "is an integer, so psi = 1 and |H| = 0): jobs it sends to the helpers would never be "
                "served; give slightly different 'demands' or use 'bs'"
            )
        return None

    # a policy is prepared only for a workload of its own models (for_workload checks): narrower by design
    def prepare(self, workload: ClassTable, rng: np.random.Generator) -> PolicyData:  # type: ignore[override]
        self.require(workload)
        part = self.partition(workload)
        needs = np.asarray(workload.server_needs, dtype=np.int64)
        nclass = needs.size
        aux = AUXILIARY.index(self.param_values["aux"])
        keys = -needs.astype(np.float64) if aux == AUX_MSF else np.zeros(nclass)
        params = FIELDS.pack(mode=self.mode, aux=aux, blocks=part.blocks, key=keys)
        cap = part.helpers // int(needs.min()) + 1
        state = np.zeros(N_SFIX + nclass + 3 * NB * nclass + 3 * cap)
        base = super().prepare(workload, rng)
        return base._replace(params=params, state=state)

    def report(self, pdata: PolicyData) -> dict[str, Any]:
        """Over the measured jobs, each with a batch-means 95 % half-width (``..._ci95``, 30 batches in
        arrival order), overall and per class (``..._class{i}``):

        * ``p_helpers``: the fraction served by the helpers, P_H of Anselmi & Doncel (2024), Sec. 3.4 /
        Corollary 1 (a BS-pi
          job sent to the helpers on arrival but later moved to its A_i is not counted);
        * ``p_sent_to_helpers``: the fraction that found no room in their A_i on arrival (the two agree
          under ModifiedBS-pi, up to jobs still waiting when a run stops).
        """
        from msj_gym.metrics.stats import batch_ratio

        nclass = FIELDS.get(pdata.params, "key").size
        arr0 = N_SFIX + nclass
        cells = pdata.state[arr0 : arr0 + 3 * NB * nclass].reshape(3, NB, nclass)
        arrivals = cells[0]
        out: dict[str, Any] = {"measured_arrivals": int(arrivals.sum())}
        for name, counts in (("p_helpers", cells[2]), ("p_sent_to_helpers", cells[1])):
            est = batch_ratio(counts.sum(axis=1), arrivals.sum(axis=1))
            out[name], out[f"{name}_ci95"] = est.mean, est.ci95_half_width
            for c in range(nclass):
                est = batch_ratio(counts[:, c], arrivals[:, c])
                out[f"{name}_class{c}"] = est.mean
                out[f"{name}_class{c}_ci95"] = est.ci95_half_width
        return out


class BalancedSplitting(_BalancedSplittingBase):
    """BS-pi, Balanced Splitting (Definition 1): a class-i arrival starts on A_i if A_i has n_i idle
    servers, else joins the helper set, where the auxiliary policy pi (``aux``: FCFS, First-Fit or
    non-preemptive MSF) schedules the waiting jobs on the |H| helper servers only; when a class-i job
    leaves A_i, the oldest class-i job waiting on the helpers moves to A_i.

    Source: Anselmi & Doncel (2024), Sec. 3.2-3.3, Definition 1, eq. (2a)-(2b). Readings chosen: "waiting
    for service in the helper set" is every waiting job (nothing else waits), so a job that waits for
    the helpers may still start on its A_i; at an instant with several events, departures free their
    servers first, then the A_i take the oldest waiting jobs of their class (which covers rule 3 and
    rule 1, in arrival order), then pi fills the helpers; the partition uses rho_i from the workload
    unless ``demands`` gives them (the paper's "user profiling", Remark 1); psi = 1 when every
    k rho_i / (n_i rho) is an integer even though that leaves no helpers (BS-pi still runs: blocked
    jobs wait for their A_i). ``report``: ``p_helpers`` = P_H, the fraction of jobs served by the
    helpers, and ``p_sent_to_helpers``, the fraction that found no room in A_i on arrival, overall and
    per class. Non-preemptive; size-oblivious (it needs the class of each job and
    the relative demands, not the durations).
    """

    policy_id = "bs"
    reference = "Anselmi & Doncel (2024), Sec. 3.3, Definition 1"
    mode = MODE_BS


class ModifiedBalancedSplitting(_BalancedSplittingBase):
    """ModifiedBS-pi (Definition 2): a class-i arrival starts on A_i if A_i has n_i idle servers, else it
    goes to the helper set irrevocably (it is never moved to A_i), where pi (``aux``) schedules it on
    the helpers. Each A_i is then an M/GI/s_i/s_i loss system (Property 1), so the fraction of class-i
    arrivals sent to the helpers is Erlang's E_{s_i}(lambda alpha_i d_i).

    Source: Anselmi & Doncel (2024), Sec. 5.1, Definition 2, Property 1. Same partition, ``aux``,
    ``demands`` and report as ``bs``; a partition without helpers is rejected (its blocked jobs would
    never be served). Non-preemptive; size-oblivious.
    """

    policy_id = "modified-bs"
    reference = "Anselmi & Doncel (2024), Sec. 5.1, Definition 2"
    mode = MODE_MODIFIED
