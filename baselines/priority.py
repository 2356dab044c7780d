"""Class-priority policies: First-Fit backfilling, Most Servers First, Least Servers First, and the
preemptive Most Servers First.

Within a class every job has the same server need, so "the oldest waiting job that fits" of a class is
the head of its FIFO queue. The three non-preemptive rules then differ only in how they rank classes,
and share one kernel: repeatedly start the waiting job that fits with the smallest (class key, job id).
"""

from __future__ import annotations

import numpy as np

from msj_gym.core import Policy
from msj_gym.core.access import (
    class_need,
    field,
    first_waiting_of_class,
    free_servers,
    job_id,
    next_waiting_of_class,
    num_classes,
    num_running,
    num_servers,
    region,
    running_job,
    server_need,
    start,
)
from msj_gym.core.jit import inline_jit
from msj_gym.core.layout import Layout
from msj_gym.core.record import Record
from msj_gym.core.state import PolicyData
from msj_gym.core.workload import WorkloadLike
from msj_gym.workloads.workload import ClassTable

from ._kit import PACK_GREEDY, fill_and_diff, sort_ascending

FIELDS = Record("class_key")  # per class: its rank (smaller first)
(CLASS_KEY,) = FIELDS.ids
# each class's next waiting job not yet started in this decision
WORK = Layout(ints={"cursor": "classes"})
(CURSOR,) = WORK.ids
# MSF-preemptive: the candidates (the running jobs and up to k waiting ones per class) with their keys,
# and fill_and_diff's marks and starts
MSFP_WORK = Layout(
    ints={"cand": "servers * (1 + classes)", "marks": "servers", "starts": "servers"},
    floats={"keys": "servers * (1 + classes)"},
)
CAND, MARKS, STARTS, KEYS = MSFP_WORK.ids


@inline_jit
def _class_priority(view, pdata, actions):
    nclass = num_classes(view)
    key = field(pdata.params, CLASS_KEY)
    cursor = region(pdata.iwork, CURSOR)
    for c in range(nclass):
        cursor[c] = first_waiting_of_class(view, c)
    free = free_servers(view)
    n = 0
    while free > 0:
        best = -1
        best_key = np.inf
        best_id = 0
        for c in range(nclass):
            s = cursor[c]
            if s == -1 or class_need(view, c) > free:
                continue
            jid = job_id(view, s)
            if best == -1 or key[c] < best_key or (key[c] == best_key and jid < best_id):
                best, best_key, best_id = c, key[c], jid
        if best == -1:
            break
        s = cursor[best]
        n = start(actions, n, s)
        free -= class_need(view, best)
        cursor[best] = next_waiting_of_class(view, s)
    return n


class _ClassPriority(Policy):
    """Shared machinery: ``class_keys`` ranks the classes (smaller first, ties by arrival)."""

    preemptive = False
    size_aware = False
    kernel = _class_priority
    work = WORK

    def class_keys(self, needs: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    # a policy is prepared only for a workload of its own models (for_workload checks): narrower by design
    def prepare(self, workload: ClassTable, rng: np.random.Generator) -> PolicyData:  # type: ignore[override]
        base = super().prepare(workload, rng)
        return base._replace(params=FIELDS.pack(class_key=self.class_keys(workload.server_needs)))


class FirstFit(_ClassPriority):
    """First-Fit backfilling: scan the queue in arrival order and start every job that fits in the idle
    servers; a job that does not fit is skipped, not waited for (no reservation, no durations).

    Source: Anselmi & Doncel (2024), Sec. 2 ("First-Fit Back-Filling"); Grosof & Harchol-Balter (2023),
    ServerFilling, Sec. 5.2; Chen et al. (2026), Quickswap, Sec. 2.
    Non-preemptive; size-oblivious.
    """

    policy_id = "first-fit"
    reference = (
        "Anselmi & Doncel (2024), Sec. 2; Grosof & Harchol-Balter (2023), Sec. 5.2; "
        "Chen et al. (2026), Sec. 2"
    )

    def class_keys(self, needs: np.ndarray) -> np.ndarray:
        return np.zeros(needs.size)


class MostServersFirst(_ClassPriority):
    """Most Servers First, non-preemptive: whenever servers are idle, start the waiting job with the
    largest server need among those that fit (ties: arrival order); running jobs are never interrupted.

    Source: Grosof & Harchol-Balter (2023), Sec. 5.3 (the nonpreemptive version); Chen et al. (2026),
    Quickswap, Sec. 1 (MSF is MSFQ with threshold 0).
    Non-preemptive; size-oblivious.
    """

    policy_id = "msf"
    reference = "Grosof & Harchol-Balter (2023), Sec. 5.3; Chen et al. (2026), Sec. 1"

    def stability_limit(self, workload: WorkloadLike) -> tuple[float, str] | None:
        """Throughput-optimal on a one-or-all workload (Chen et al. (2026), Thm. 5.1: MSF is MSFQ with
        threshold 0)."""
        if not isinstance(workload, ClassTable):
            return None
        # the analysis package loads on demand, so that importing the policies stays cheap
        from msj_gym.analysis.stability import msf_one_or_all_limit

        return msf_one_or_all_limit(workload)

    def class_keys(self, needs: np.ndarray) -> np.ndarray:
        return -needs.astype(np.float64)


class LeastServersFirst(_ClassPriority):
    """Least Servers First: whenever servers are idle, start the waiting job with the smallest server
    need among those that fit (ties: arrival order).

    Source: Anselmi & Doncel (2024), Sec. 2. The paper says "at all times, priority is given to jobs with
    the smallest server needs" without saying whether running jobs are preempted; we read it as
    non-preemptive (priority applies to starting jobs), which is also how it must be expressible in the
    non-preemptive environment.
    Non-preemptive; size-oblivious.
    """

    policy_id = "lsf"
    reference = "Anselmi & Doncel (2024), Sec. 2"

    def class_keys(self, needs: np.ndarray) -> np.ndarray:
        return needs.astype(np.float64)


@inline_jit
def _msf_preemptive(view, pdata, actions):
    # Candidates: everything running plus, per class, the oldest waiting jobs that could possibly fit.
    k = num_servers(view)
    nclass = num_classes(view)
    nrun = num_running(view)
    cand, marks, starts = region(pdata.iwork, CAND), region(pdata.iwork, MARKS), region(pdata.iwork, STARTS)
    keys = region(pdata.fwork, KEYS)
    m = 0
    for p in range(nrun):
        s = running_job(view, p)
        cand[m] = s
        keys[m] = -server_need(view, s)
        m += 1
    for c in range(nclass):
        need = class_need(view, c)
        limit = k // need
        s = first_waiting_of_class(view, c)
        while s != -1 and limit > 0:
            cand[m] = s
            keys[m] = -need
            m += 1
            limit -= 1
            s = next_waiting_of_class(view, s)
    sort_ascending(view, keys, cand, m)
    return fill_and_diff(view, cand, m, PACK_GREEDY, marks, starts, actions)


class MostServersFirstPreemptive(Policy):
    """Most Servers First, preemptive: at all times serve jobs in order of decreasing server need (ties:
    arrival order), each job that fits in the k servers, preempting running jobs that lose their place.

    Source: Anselmi & Doncel (2024), Sec. 2 ("at all times, jobs with the highest server need are
    processed first ..., with preemption"); Grosof & Harchol-Balter (2023), Sec. 5.3.
    Preemptive (preempt-resume); size-oblivious.
    """

    policy_id = "msf-preemptive"
    preemptive = True
    size_aware = False
    reference = "Anselmi & Doncel (2024), Sec. 2; Grosof & Harchol-Balter (2023), Sec. 5.3"
    kernel = _msf_preemptive
    work = MSFP_WORK
