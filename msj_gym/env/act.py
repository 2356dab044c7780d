"""The action modes of the MSJ environments, compiled into their step: what an action means, which
actions are valid (the mask), and how an action becomes engine decisions.

* **Job actions** (``actions="jobs"``; ``C`` class slots, ``W = ep[EP_QWIN]``, ``P = ep[EP_PWIN]``):
  ``0`` wait; ``1 + c*W + r`` (``r < W``) start the ``r``-th oldest waiting job of class ``c``;
  ``1 + C*W + c*P + r`` (``r < P``, preemptive only) preempt the ``r``-th youngest running job of class
  ``c`` (youngest = latest arrival). One start or preemption per step.
* **Priority actions** (``actions="priority"`` / ``"priority-shortest"``): ``0`` wait; ``1 + c`` serve
  class ``c`` first: the servers are packed greedily, as many class-``c`` jobs as fit, then the other
  classes by decreasing server need (ties: class order), and the running jobs are brought to those
  counts at once (non-preemptive: by starting the oldest, or shortest, waiting jobs; preemptive: also
  by preempting the youngest running jobs of the classes above their count). ``1 + C``, with an
  advisor, is the advisor's decision, which the Python side applies (it runs a policy's kernel).

The layout of ``ep`` and ``work`` is :mod:`msj_gym.env.layout`'s. This module does not import
gymnasium.
"""

from __future__ import annotations

import numpy as np

from ..core.engine import apply_one, apply_start, apply_start_words, apply_starts
from ..core.jit import internal_jit, kernel_jit
from ..core.state import (
    C_HEAD,
    C_NEED,
    C_NRUN,
    C_NWAIT,
    CLS,
    CNEXT,
    I_EXHAUSTED,
    I_FREE,
    I_HEAPN,
    I_K,
    I_NARR,
    I_NGEN,
    I_NRUN,
    I_NWAIT,
    JOB_ID,
    RUNNING,
    STATE,
    WAITING,
)
from .layout import (
    ACT_JOBS,
    ACT_PRIORITY,
    ACT_SHORTEST,
    EP_ACTIONS,
    EP_ADVISOR,
    EP_PREEMPTIVE,
    EP_PWIN,
    EP_QWIN,
    EP_SLOTS,
)
from .observe import known_remaining

__all__ = [
    "action_family",
    "apply_job_action",
    "apply_priority_action",
    "encode_action",
    "priority_offered",
    "priority_plan",
    "write_job_mask",
    "write_priority_mask",
]


@internal_jit
def can_wait(sim):
    """True if waiting leads somewhere: a departure is scheduled or an arrival may still come."""
    iv = sim.iv
    return iv[I_HEAPN] > 0 or iv[I_NARR] < iv[I_NGEN] or iv[I_EXHAUSTED] == 0


# --- job actions ---------------------------------------------------------------------------------
@internal_jit
def _nth_waiting(sim, c, r):
    s = sim.ci[C_HEAD, c]
    while r > 0 and s != -1:
        s = sim.ji[s, CNEXT]
        r -= 1
    return s


@internal_jit
def _nth_youngest_running(sim, c, r):
    ji, run_list = sim.ji, sim.run_list
    nrun = sim.iv[I_NRUN]
    bound = np.iinfo(np.int64).max
    best = -1
    for _ in range(r + 1):
        best = -1
        best_id = -1
        for p in range(nrun):
            s = run_list[p]
            j = ji[s, JOB_ID]
            if ji[s, CLS] == c and best_id < j < bound:
                best, best_id = s, j
        if best == -1:
            return -1
        bound = best_id
    return best


@internal_jit
def _decode(sim, ep, action):
    """The engine action (slot ``s`` to start, ``-s-1`` to preempt) named by job action ``action``."""
    w = ep[EP_QWIN]
    b = action - 1
    if b < ep[EP_SLOTS] * w:
        return _nth_waiting(sim, b // w, b % w)
    b -= ep[EP_SLOTS] * w
    p = ep[EP_PWIN]
    return -_nth_youngest_running(sim, b // p, b % p) - 1


@internal_jit
def _write_job_mask(sim, ep, mask):
    iv, ci = sim.iv, sim.ci
    nclass = ci.shape[1]
    slots = ep[EP_SLOTS]
    w = ep[EP_QWIN]
    free = iv[I_FREE]
    for c in range(slots):
        nw = ci[C_NWAIT, c] if c < nclass else 0
        fits = c < nclass and ci[C_NEED, c] <= free
        base = 1 + c * w
        for r in range(w):
            mask[base + r] = fits and r < nw
    if ep[EP_PREEMPTIVE] != 0:
        p = ep[EP_PWIN]
        base0 = 1 + slots * w
        someone_waits = iv[I_NWAIT] > 0
        for c in range(slots):
            nr = ci[C_NRUN, c] if c < nclass else 0
            for r in range(p):
                mask[base0 + c * p + r] = someone_waits and r < nr


# --- priority actions ----------------------------------------------------------------------------
@internal_jit
def _order_classes(sim, order):
    """``order[:C]``: the classes by decreasing server need, ties in class order (insertion sort)."""
    need = sim.ci[C_NEED]
    nclass = need.shape[0]
    for c in range(nclass):
        pos = c
        while pos > 0 and need[order[pos - 1]] < need[c]:
            order[pos] = order[pos - 1]
            pos -= 1
        order[pos] = c


@internal_jit
def _targets(sim, preemptive, c, order, targets):
    """``targets[d]``: how many class-``d`` jobs run under priority ``c`` (greedy packing: class ``c``
    first, then ``order`` without ``c``; non-preemptive: running jobs stay and waiting ones are added;
    preemptive: any job in the system may run). Returns whether that differs from the running jobs."""
    ci = sim.ci
    nclass = ci.shape[1]
    free = sim.iv[I_K] if preemptive else sim.iv[I_FREE]
    changes = False
    for q in range(nclass + 1):
        if q == 0:
            d = c
        else:
            d = order[q - 1]
            if d == c:
                continue
        need = ci[C_NEED, d]
        if preemptive:
            t = min(ci[C_NWAIT, d] + ci[C_NRUN, d], free // need)
            free -= t * need
        else:
            add = min(ci[C_NWAIT, d], free // need)
            free -= add * need
            t = ci[C_NRUN, d] + add
        targets[d] = t
        changes = changes or t != ci[C_NRUN, d]
    return changes


@internal_jit
def _scratch(ep, work):
    """The class order, targets and decision words inside ``work`` (see ``layout.work_size``)."""
    slots = ep[EP_SLOTS]
    at = slots * ep[EP_PWIN]
    return work[at : at + slots], work[at + slots : at + 2 * slots], work[at + 2 * slots :]


@internal_jit
def write_priority_mask(sim, ep, mask, work):
    """Priority ``1 + c`` is offered where it changes the running jobs and its own class has a job to
    serve (one that waits and fits, without preemption; one in the system, with it), so that no class
    lends its name to another's decision."""
    ci = sim.ci
    nclass = ci.shape[1]
    slots = ep[EP_SLOTS]
    preemptive = ep[EP_PREEMPTIVE] != 0
    order, targets, _ = _scratch(ep, work)
    _order_classes(sim, order)
    mask[0] = can_wait(sim)
    for c in range(slots):
        if c >= nclass:
            mask[1 + c] = False
        elif not preemptive:  # its own class adds a job exactly where the packing changes anything
            mask[1 + c] = ci[C_NWAIT, c] > 0 and ci[C_NEED, c] <= sim.iv[I_FREE]
        else:
            changes = _targets(sim, True, c, order, targets)
            mask[1 + c] = changes and ci[C_NWAIT, c] + ci[C_NRUN, c] > 0
    for j in range(ep[EP_ADVISOR]):
        mask[1 + slots + j] = True


@internal_jit
def priority_offered(sim, ep, work):
    """True if some priority would change the running jobs (else the decision is passed over)."""
    ci = sim.ci
    nclass = ci.shape[1]
    if ep[EP_PREEMPTIVE] == 0:
        free = sim.iv[I_FREE]
        for c in range(nclass):
            if ci[C_NWAIT, c] > 0 and ci[C_NEED, c] <= free:
                return True
        return False
    order, targets, _ = _scratch(ep, work)
    _order_classes(sim, order)
    for c in range(nclass):
        if ci[C_NWAIT, c] + ci[C_NRUN, c] > 0 and _targets(sim, True, c, order, targets):
            return True
    return False


@internal_jit
def _shortest_waiting(sim, ep, d, count, out, n):
    """Append to ``out[n:]`` the ``count`` waiting class-``d`` jobs with the least remaining service
    as the env knows it (:func:`~msj_gym.env.observe.known_remaining`: exact, or requested times;
    ties: the earlier in the class's service order), in that order; returns the new length. A
    bounded insertion: never more than ``count`` entries, so the scratch is bounded by ``k``."""
    ji = sim.ji
    kept = 0
    s = sim.ci[C_HEAD, d]
    while s != -1:
        r = known_remaining(sim, ep, s, 0.0)
        if kept < count or r < known_remaining(sim, ep, out[n + kept - 1], 0.0):
            pos = min(kept, count - 1)  # the last entry drops out when the list is full
            while pos > 0 and known_remaining(sim, ep, out[n + pos - 1], 0.0) > r:
                out[n + pos] = out[n + pos - 1]
                pos -= 1
            out[n + pos] = s
            kept = min(kept + 1, count)
        s = ji[s, CNEXT]
    return n + kept


@internal_jit
def _plan(sim, ep, c, work):
    """The engine words of priority ``c`` in ``work``'s decision words: the preemptions first (per
    class above its target, the youngest running jobs, youngest first), then the starts (per class
    below it, the oldest or shortest waiting jobs). Returns ``(words, n)``."""
    ji, ci = sim.ji, sim.ci
    nclass = ci.shape[1]
    preemptive = ep[EP_PREEMPTIVE] != 0
    order, targets, words = _scratch(ep, work)
    _order_classes(sim, order)
    _targets(sim, preemptive, c, order, targets)
    n = 0
    for d in range(nclass):
        drop = ci[C_NRUN, d] - targets[d]
        bound = np.iinfo(np.int64).max
        for _ in range(drop):  # the youngest running class-d jobs below the last one taken
            best, best_id = -1, -1
            for q in range(sim.iv[I_NRUN]):
                s = sim.run_list[q]
                j = ji[s, JOB_ID]
                if ji[s, CLS] == d and best_id < j < bound:
                    best, best_id = s, j
            words[n] = -best - 1
            n += 1
            bound = best_id
    shortest = ep[EP_ACTIONS] == ACT_SHORTEST
    for d in range(nclass):
        count = targets[d] - ci[C_NRUN, d]
        if count <= 0:
            continue
        if shortest:
            n = _shortest_waiting(sim, ep, d, count, words, n)
        else:
            s = ci[C_HEAD, d]
            for _ in range(count):
                words[n] = s
                n += 1
                s = ji[s, CNEXT]
    return words, n


@kernel_jit
def priority_plan(sim, ep, c, work, out):
    """``out[:n]`` = the engine words of priority ``c`` in the current state (not applied); returns
    ``n``. For inspection: the step applies them itself."""
    words, n = _plan(sim, ep, c, work)
    for i in range(n):
        out[i] = words[i]
    return n


# --- the pieces the step is assembled from, per action family ------------------------------------
@internal_jit
def write_job_mask(sim, ep, mask, work):
    """The valid job actions of the current state."""
    mask[0] = can_wait(sim)
    _write_job_mask(sim, ep, mask)


@internal_jit
def apply_job_action(sim, ep, action, work):
    """Apply the valid job action ``action`` (not "wait"); returns the engine error."""
    return apply_one(sim, _decode(sim, ep, action))


@internal_jit
def apply_job_start(sim, ep, action, work):
    """:func:`apply_job_action` in an env that never preempts, whose job actions are all starts: its
    step does not compile the decoding of preemptions nor the preemption itself."""
    w = ep[EP_QWIN]
    b = action - 1
    return apply_start(sim, _nth_waiting(sim, b // w, b % w))


@internal_jit
def apply_priority_action(sim, ep, action, work):
    """Apply the valid priority ``action`` (not "wait", not the advisor's); returns the engine error."""
    words, n = _plan(sim, ep, action - 1, work)
    return apply_starts(sim, words, n)


@internal_jit
def apply_priority_starts(sim, ep, action, work):
    """:func:`apply_priority_action` in an env that never preempts, whose priorities only start jobs:
    its step does not compile the preemption."""
    words, n = _plan(sim, ep, action - 1, work)
    return apply_start_words(sim, words, n)


def action_family(code: int) -> int:
    """The family of action code ``ep[EP_ACTIONS]`` the step is assembled for: ``ACT_JOBS`` or
    ``ACT_PRIORITY`` (both priority modes share their code; ``_plan`` reads which one at run time)."""
    return ACT_JOBS if code == ACT_JOBS else ACT_PRIORITY


@kernel_jit
def decode_action(sim, ep, action):
    """The engine action (start slot ``s`` / preempt ``-s-1``) that valid job action ``action`` names
    (not "wait"): the inverse of :func:`encode_action`."""
    return _decode(sim, ep, action)


@kernel_jit
def encode_action(sim, ep, engine_action):
    """The job action that names engine action ``engine_action`` (start slot ``s`` / preempt ``-s-1``),
    or ``-1 - rank`` when the job's rank is outside the action window (``-1``: no such job)."""
    ji = sim.ji
    slots = ep[EP_SLOTS]
    if engine_action >= 0:
        s = engine_action
        if ji[s, STATE] != WAITING:
            return -1
        c = ji[s, CLS]
        r = 0
        cur = sim.ci[C_HEAD, c]
        while cur != s:
            cur = ji[cur, CNEXT]
            r += 1
        w = ep[EP_QWIN]
        return 1 + c * w + r if r < w else -1 - r
    s = -engine_action - 1
    if ji[s, STATE] != RUNNING or ep[EP_PREEMPTIVE] == 0:
        return -1
    c = ji[s, CLS]
    j = ji[s, JOB_ID]
    r = 0
    for q in range(sim.iv[I_NRUN]):
        o = sim.run_list[q]
        if ji[o, CLS] == c and ji[o, JOB_ID] > j:
            r += 1
    p = ep[EP_PWIN]
    return 1 + slots * ep[EP_QWIN] + c * p + r if r < p else -1 - r
