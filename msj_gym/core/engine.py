"""The compiled event engine: exact, event-driven, no time stepping.

Two entry points drive it:

* ``advance(sim)`` moves the clock to the next event instant and processes *every* event at that
  instant (departures and budget expiries first, then arrivals, each in job-id order), then returns
  ``ST_EVENT``: the state in which the policy is asked for a decision. Before touching anything it may
  instead return ``ST_NEED_ARRIVALS`` (the arrival ring ran dry: the Python side refills it and calls
  again), ``ST_NEED_SLOTS`` or ``ST_NEED_RECORDS`` (arrays to grow), or ``ST_OVERFLOW`` (the queue passed
  the run's limit); it returns ``ST_FINISHED`` once every measured job has left and ``ST_ERROR`` on a
  stall.
* ``apply(sim, actions, n)`` validates and applies a decision (the words of
  :mod:`msj_gym.core.actions`): start, preempt (preempt-resume: the remaining work is kept), serve on
  ``n`` servers at a rate, set a work budget, requeue. It is the one place where capacity, job states
  and preemption rights are checked.

Service is measured in work: a running job receives work at its ``RATE`` (1.0 for every MSJ job, so
work is time there, bit for bit), ``REMAINING`` / ``ATTAINED`` are settled (``done = elapsed * RATE``) at
every rate change and preemption, and its heap key is when it next needs the engine: its departure,
or the expiry of its work budget if that comes first. An expiry is an event instant with no arrival or
departure: the job's budget is marked spent (NaN), it keeps running, and the policy decides (that is
how Algorithm 1 of Bonald & Comte (2017) interrupts jobs, or how a round-robin quantum would end). Jobs carry
the workload's per-job attributes (``ji[s, JATTR:]``, e.g. a job's compatible servers) and a place in the
service order (``ORDER``), which the job lists follow; both are inert for the MSJ policies.

``run_batch`` alternates the two with a policy's compiled decision rule (and, in debug mode, the
engine's and the policy's invariants); the Gymnasium environments drive the same two functions.
"""

from __future__ import annotations

from collections.abc import Callable

import numba
import numpy as np

from .access import measured_batch
from .actions import OP_BUDGET, OP_LIMIT, OP_REQUEUE, OP_SERVE, bits_f64
from .jit import argument_types, compile_announced, internal_jit, kernel_jit
from .kernels import DecisionRule, kernel_types
from .state import (
    A_BSLD,
    A_COUNT,
    A_PREEMPT,
    A_RESP,
    A_WAIT,
    A_WAITED,
    ARRIVAL,
    ATTAINED,
    BUDGET,
    C_HEAD,
    C_NEED,
    C_NRUN,
    C_NWAIT,
    C_TAIL,
    CLS,
    CNEXT,
    CPREV,
    E_BAD_OPERAND,
    E_INVARIANT,
    E_NO_CAPACITY,
    E_NONE,
    E_NOT_IN_SYSTEM,
    E_POLICY_INVARIANT,
    E_PREEMPT_FORBIDDEN,
    E_PREEMPT_NOT_RUNNING,
    E_STALL,
    E_START_NOT_WAITING,
    E_UNKNOWN_JOB,
    F_BUSY_AREA,
    F_FIRST_MEASURED,
    F_HORIZON,
    F_LAST,
    F_LAST_MEASURED,
    F_MEAS_BSLD,
    F_MEAS_WAIT,
    F_NOW,
    F_RUN_AREA,
    F_SYS_AREA,
    F_TAU,
    F_WAIT_AREA,
    F_WARM_TIME,
    F_WIN_HI,
    F_WIN_LO,
    FIRST_START,
    FREE_SLOT,
    HEAPPOS,
    I_DECISIONS,
    I_DONE,
    I_ERR,
    I_ERR_JOB,
    I_EVENTS,
    I_EXHAUSTED,
    I_EXPIRIES,
    I_FREE,
    I_FREE_HEAD,
    I_HEAPN,
    I_K,
    I_MAX_SYS,
    I_MEAS_DONE,
    I_MEAS_HI,
    I_MEAS_LO,
    I_NARR,
    I_NCHECK,
    I_NFREE,
    I_NGEN,
    I_NRUN,
    I_NSYS,
    I_NWAIT,
    I_PREEMPTIONS,
    I_PREEMPTIVE,
    I_RECORD,
    I_SEQ,
    I_SHEAD,
    I_STAIL,
    I_STARTS,
    I_WHEAD,
    I_WTAIL,
    JATTR,
    JOB_ID,
    LAST_START,
    NEED,
    NOISE,
    NPREEMPT,
    ORDER,
    R_ARRIVAL,
    R_ATTAINED,
    R_CLASS,
    R_DEPARTURE,
    R_FIRST_START,
    R_NPREEMPT,
    R_SERVICE,
    RATE,
    REMAINING,
    RUNNING,
    RUNPOS,
    SERVICE,
    SNEXT,
    SPREV,
    ST_ERROR,
    ST_EVENT,
    ST_FINISHED,
    ST_NEED_ARRIVALS,
    ST_NEED_RECORDS,
    ST_NEED_SLOTS,
    ST_OVERFLOW,
    STATE,
    WAITING,
    WNEXT,
    WPREV,
)

__all__ = [
    "advance",
    "apply",
    "apply_one",
    "apply_starts",
    "batch_runner",
    "can_decide",
    "check_invariants",
    "run_batch",
]

# ---------------------------------------------------------------------------------------------------
# Departure heap: binary min-heap on (time, job id) holding slots; HEAPPOS is each slot's position.


@internal_jit
def _before(sim, t1, s1, t2, s2):
    return t1 < t2 or (t1 == t2 and sim.ji[s1, JOB_ID] < sim.ji[s2, JOB_ID])


@internal_jit
def _heap_sift_up(sim, pos):
    ht, hs, ji = sim.heap_t, sim.heap_s, sim.ji
    t, s = ht[pos], hs[pos]
    while pos > 0:
        parent = (pos - 1) >> 1
        if not _before(sim, t, s, ht[parent], hs[parent]):
            break
        ht[pos], hs[pos] = ht[parent], hs[parent]
        ji[hs[pos], HEAPPOS] = pos
        pos = parent
    ht[pos], hs[pos] = t, s
    ji[s, HEAPPOS] = pos
    return pos


@internal_jit
def _heap_sift_down(sim, pos):
    ht, hs, ji = sim.heap_t, sim.heap_s, sim.ji
    n = sim.iv[I_HEAPN]
    t, s = ht[pos], hs[pos]
    while True:
        child = 2 * pos + 1
        if child >= n:
            break
        if child + 1 < n and _before(sim, ht[child + 1], hs[child + 1], ht[child], hs[child]):
            child += 1
        if not _before(sim, ht[child], hs[child], t, s):
            break
        ht[pos], hs[pos] = ht[child], hs[child]
        ji[hs[pos], HEAPPOS] = pos
        pos = child
    ht[pos], hs[pos] = t, s
    ji[s, HEAPPOS] = pos


@internal_jit
def _heap_push(sim, s, t):
    n = sim.iv[I_HEAPN]
    sim.heap_t[n] = t
    sim.heap_s[n] = s
    sim.iv[I_HEAPN] = n + 1
    _heap_sift_up(sim, n)


@internal_jit
def _heap_remove(sim, s):
    pos = sim.ji[s, HEAPPOS]
    n = sim.iv[I_HEAPN] - 1
    sim.iv[I_HEAPN] = n
    sim.ji[s, HEAPPOS] = -1
    if pos == n:
        return
    sim.heap_t[pos] = sim.heap_t[n]
    sim.heap_s[pos] = sim.heap_s[n]
    sim.ji[sim.heap_s[pos], HEAPPOS] = pos
    _heap_sift_down(sim, _heap_sift_up(sim, pos))


# ---------------------------------------------------------------------------------------------------
# Doubly linked lists of slots in job-id (arrival) order. A list is (head, tail) plus NEXT/PREV columns.


@internal_jit
def _list_insert(ji, nxt, prv, head, tail, s):
    """Insert slot s keeping ORDER increasing; returns the new (head, tail). Arrivals (and requeued
    jobs) append in O(1); a preempted job goes back to its place in the order, found by scanning from
    both ends at once, so the cost is the distance to the nearer end in list entries (order numbers
    alone can mislead: a long queue of recent arrivals behind a few old jobs)."""
    if tail == -1:
        ji[s, nxt] = -1
        ji[s, prv] = -1
        return s, s
    jid = ji[s, ORDER]
    if ji[tail, ORDER] < jid:
        ji[tail, nxt] = s
        ji[s, prv] = tail
        ji[s, nxt] = -1
        return head, s
    # The tail's order is above jid, so the forward scan stops at the tail at the latest.
    fwd = head
    bwd = tail
    while True:
        if ji[fwd, ORDER] > jid:
            cur = fwd
            break
        fwd = ji[fwd, nxt]
        p = ji[bwd, prv]
        if p == -1 or ji[p, ORDER] < jid:
            cur = bwd
            break
        bwd = p
    before = ji[cur, prv]
    ji[s, prv] = before
    ji[s, nxt] = cur
    ji[cur, prv] = s
    if before == -1:
        return s, tail
    ji[before, nxt] = s
    return head, tail


@internal_jit
def _list_remove(ji, nxt, prv, head, tail, s):
    a, b = ji[s, prv], ji[s, nxt]
    if a == -1:
        head = b
    else:
        ji[a, nxt] = b
    if b == -1:
        tail = a
    else:
        ji[b, prv] = a
    ji[s, nxt] = -1
    ji[s, prv] = -1
    return head, tail


@internal_jit
def _enqueue_waiting(sim, s):
    iv, ji, ci = sim.iv, sim.ji, sim.ci
    c = ji[s, CLS]
    iv[I_WHEAD], iv[I_WTAIL] = _list_insert(ji, WNEXT, WPREV, iv[I_WHEAD], iv[I_WTAIL], s)
    ci[C_HEAD, c], ci[C_TAIL, c] = _list_insert(ji, CNEXT, CPREV, ci[C_HEAD, c], ci[C_TAIL, c], s)
    ji[s, STATE] = WAITING
    iv[I_NWAIT] += 1
    ci[C_NWAIT, c] += 1


@internal_jit
def _dequeue_waiting(sim, s):
    iv, ji, ci = sim.iv, sim.ji, sim.ci
    c = ji[s, CLS]
    iv[I_WHEAD], iv[I_WTAIL] = _list_remove(ji, WNEXT, WPREV, iv[I_WHEAD], iv[I_WTAIL], s)
    ci[C_HEAD, c], ci[C_TAIL, c] = _list_remove(ji, CNEXT, CPREV, ci[C_HEAD, c], ci[C_TAIL, c], s)
    iv[I_NWAIT] -= 1
    ci[C_NWAIT, c] -= 1


@internal_jit
def _add_running(sim, s):
    n = sim.iv[I_NRUN]
    sim.run_list[n] = s
    sim.ji[s, RUNPOS] = n
    sim.iv[I_NRUN] = n + 1
    sim.ji[s, STATE] = RUNNING
    sim.iv[I_FREE] -= sim.ji[s, NEED]
    sim.ci[C_NRUN, sim.ji[s, CLS]] += 1


@internal_jit
def _remove_running(sim, s):
    pos = sim.ji[s, RUNPOS]
    last = sim.iv[I_NRUN] - 1
    moved = sim.run_list[last]
    sim.run_list[pos] = moved
    sim.ji[moved, RUNPOS] = pos
    sim.run_list[last] = -1
    sim.ji[s, RUNPOS] = -1
    sim.iv[I_NRUN] = last
    sim.iv[I_FREE] += sim.ji[s, NEED]
    sim.ci[C_NRUN, sim.ji[s, CLS]] -= 1


# ---------------------------------------------------------------------------------------------------
# Events


@internal_jit
def _integrate(sim, t):
    iv, fv = sim.iv, sim.fv
    lo = max(fv[F_LAST], fv[F_WIN_LO])
    hi = min(t, fv[F_WIN_HI])
    if hi > lo:
        dt = hi - lo
        fv[F_BUSY_AREA] += dt * (iv[I_K] - iv[I_FREE])
        fv[F_SYS_AREA] += dt * iv[I_NSYS]
        fv[F_WAIT_AREA] += dt * iv[I_NWAIT]
    fv[F_RUN_AREA] += (t - fv[F_LAST]) * iv[I_NSYS]
    fv[F_LAST] = t


@internal_jit
def _arrive(sim, j, t):
    iv, fv, ji, jf, js = sim.iv, sim.fv, sim.ji, sim.jf, sim.js
    s = iv[I_FREE_HEAD]
    iv[I_FREE_HEAD] = ji[s, WNEXT]
    iv[I_NFREE] -= 1
    r = j & (sim.ring_t.size - 1)
    c = sim.ring_c[r]
    ji[s, JOB_ID] = j
    ji[s, CLS] = c
    ji[s, NEED] = sim.ci[C_NEED, c]
    ji[s, NPREEMPT] = 0
    ji[s, RUNPOS] = -1
    ji[s, HEAPPOS] = -1
    ji[s, ORDER] = iv[I_SEQ]
    iv[I_SEQ] += 1
    for q in range(sim.ring_a.shape[1]):
        ji[s, JATTR + q] = sim.ring_a[r, q]
    jf[s, ARRIVAL] = t
    jf[s, LAST_START] = np.nan
    jf[s, FIRST_START] = np.nan
    jf[s, ATTAINED] = 0.0
    jf[s, RATE] = 1.0
    jf[s, BUDGET] = np.inf
    js[s, SERVICE] = sim.ring_s[r]
    js[s, REMAINING] = sim.ring_s[r]
    js[s, NOISE] = sim.ring_n[r]
    iv[I_SHEAD], iv[I_STAIL] = _list_insert(ji, SNEXT, SPREV, iv[I_SHEAD], iv[I_STAIL], s)
    _enqueue_waiting(sim, s)
    iv[I_NSYS] += 1
    iv[I_NARR] = j + 1
    horizon_mode = fv[F_HORIZON] < np.inf
    if horizon_mode:
        if iv[I_MEAS_LO] < 0 and t >= fv[F_WARM_TIME]:
            iv[I_MEAS_LO] = j
        if iv[I_MEAS_HI] < 0 and t >= fv[F_HORIZON]:
            iv[I_MEAS_HI] = j
            if iv[I_MEAS_LO] < 0:
                iv[I_MEAS_LO] = j
    else:
        if j == iv[I_MEAS_LO]:
            fv[F_WIN_LO] = t
        if j == iv[I_MEAS_HI]:
            fv[F_WIN_HI] = t
    key = t if horizon_mode else float(j)
    b = iv[I_NCHECK]
    while b < sim.ck_key.size and key >= sim.ck_key[b]:
        sim.ck_nsys[b] = iv[I_NSYS]
        b += 1
    iv[I_NCHECK] = b


@internal_jit
def _measure(sim, s, t):
    """Accumulate a departing measured job into its (batch, class) cell: its response time, waiting
    time (response minus service) and bounded slowdown max(response / max(service, tau), 1) (wait plus
    run over the run time, bounded below by tau), and the span from the first measured arrival to the
    last measured departure (the makespan)."""
    iv, ji, jf, fv = sim.iv, sim.ji, sim.jf, sim.fv
    j = ji[s, JOB_ID]
    lo = iv[I_MEAS_LO]
    b = measured_batch(sim, s, sim.acc_f.shape[0])  # the rule policies read through the accessor
    c = ji[s, CLS]
    response = t - jf[s, ARRIVAL]
    service = sim.js[s, SERVICE]
    waited = jf[s, FIRST_START] > jf[s, ARRIVAL] or ji[s, NPREEMPT] > 0
    wait = max(response - service, 0.0)
    slowdown = max(response / max(service, fv[F_TAU]), 1.0)
    sim.acc_f[b, c, A_RESP] += response
    sim.acc_f[b, c, A_WAIT] += wait
    sim.acc_f[b, c, A_BSLD] += slowdown
    # running totals over all cells: what the env's slowdown and waiting rewards pay, job by job
    fv[F_MEAS_BSLD] += slowdown
    fv[F_MEAS_WAIT] += wait
    fv[F_FIRST_MEASURED] = min(fv[F_FIRST_MEASURED], jf[s, ARRIVAL])
    fv[F_LAST_MEASURED] = max(fv[F_LAST_MEASURED], t)
    sim.acc_i[b, c, A_COUNT] += 1
    sim.acc_i[b, c, A_WAITED] += 1 if waited else 0
    sim.acc_i[b, c, A_PREEMPT] += ji[s, NPREEMPT]
    if iv[I_RECORD] != 0:
        row = j - lo
        sim.rec[row, R_ARRIVAL] = jf[s, ARRIVAL]
        sim.rec[row, R_FIRST_START] = jf[s, FIRST_START]
        sim.rec[row, R_DEPARTURE] = t
        sim.rec[row, R_SERVICE] = sim.js[s, SERVICE]
        sim.rec[row, R_CLASS] = c
        sim.rec[row, R_NPREEMPT] = ji[s, NPREEMPT]
        sim.rec[row, R_ATTAINED] = jf[s, ATTAINED]
    iv[I_MEAS_DONE] += 1


@internal_jit
def _due(sim, s, now):
    """When the running job ``s`` next needs the engine: its departure, or the expiry of its budget
    if that comes first (a spent (NaN) or unlimited budget bounds nothing)."""
    w = max(sim.js[s, REMAINING], 0.0)
    b = sim.jf[s, BUDGET]
    if b < w:
        w = max(b, 0.0)
    return now + w / sim.jf[s, RATE]


@internal_jit
def _settle(sim, s, now):
    """Account the work the running job ``s`` received at its current rate since ``LAST_START``."""
    jf = sim.jf
    done = (now - jf[s, LAST_START]) * jf[s, RATE]
    sim.js[s, REMAINING] -= done
    jf[s, ATTAINED] += done
    jf[s, BUDGET] -= done
    jf[s, LAST_START] = now


# _expire and _operation are compiled once and called, not inlined by numba: only the
# compatibility-model policies reach them, and inlining their heap and list code into every policy's
# loop tripled the compile time of each specialisation (15 s -> 50 s for fcfs on sf-fig2; 15 s again
# this way). Numba gives them the forceinline of the caller that compiles them (advance, apply), so
# LLVM still inlines their cached code there.
@internal_jit(inline=False)
def _expire(sim, s, t):
    """The budget of the running job ``s`` ran out at ``t``: its work is settled, the budget marked
    spent (NaN) and the job keyed at its departure; what follows is the policy's decision."""
    _settle(sim, s, t)
    sim.jf[s, BUDGET] = np.nan
    _heap_remove(sim, s)
    _heap_push(sim, s, _due(sim, s, t))
    sim.iv[I_EXPIRIES] += 1


@internal_jit
def _depart(sim, s, t):
    iv, ji = sim.iv, sim.ji
    _heap_remove(sim, s)
    _remove_running(sim, s)
    iv[I_SHEAD], iv[I_STAIL] = _list_remove(ji, SNEXT, SPREV, iv[I_SHEAD], iv[I_STAIL], s)
    sim.jf[s, ATTAINED] += (t - sim.jf[s, LAST_START]) * sim.jf[s, RATE]  # before _measure records it
    sim.js[s, REMAINING] = 0.0
    iv[I_NSYS] -= 1
    iv[I_DONE] += 1
    j = ji[s, JOB_ID]
    lo, hi = iv[I_MEAS_LO], iv[I_MEAS_HI]
    if lo >= 0 and j >= lo and (hi < 0 or j < hi):
        _measure(sim, s, t)
    ji[s, STATE] = FREE_SLOT
    ji[s, WNEXT] = iv[I_FREE_HEAD]
    iv[I_FREE_HEAD] = s
    iv[I_NFREE] += 1


@internal_jit
def _finished(iv):
    lo, hi = iv[I_MEAS_LO], iv[I_MEAS_HI]
    return lo >= 0 and hi >= 0 and iv[I_MEAS_DONE] >= hi - lo


@internal_jit(python=True)  # also stepped from Python (Simulator.step)
def advance(sim):
    """Process every event at the next event instant; see the module docstring for the status codes."""
    iv, fv = sim.iv, sim.fv
    if _finished(iv):
        return ST_FINISHED
    mask = sim.ring_t.size - 1
    narr, ngen = iv[I_NARR], iv[I_NGEN]
    if narr < ngen:
        ta = sim.ring_t[narr & mask]
    elif iv[I_EXHAUSTED] != 0:
        ta = np.inf
        if iv[I_MEAS_HI] < 0:
            iv[I_MEAS_HI] = narr
        if iv[I_MEAS_LO] < 0:
            iv[I_MEAS_LO] = iv[I_MEAS_HI]
        if _finished(iv):
            return ST_FINISHED
    else:
        return ST_NEED_ARRIVALS
    td = sim.heap_t[0] if iv[I_HEAPN] > 0 else np.inf
    t = min(ta, td)
    if t == np.inf:
        if iv[I_NWAIT] > 0:
            iv[I_ERR] = E_STALL
            iv[I_ERR_JOB] = iv[I_NWAIT]
            return ST_ERROR
        return ST_FINISHED
    if ta <= t:
        # Every arrival at this instant must be in the ring and have a slot before anything changes.
        q = narr
        while q < ngen and sim.ring_t[q & mask] <= t:
            q += 1
        if q == ngen and iv[I_EXHAUSTED] == 0:
            return ST_NEED_ARRIVALS
        if iv[I_NSYS] + q - narr > iv[I_MAX_SYS]:
            return ST_OVERFLOW
        if q - narr > iv[I_NFREE]:
            return ST_NEED_SLOTS
        if (
            iv[I_RECORD] != 0
            and iv[I_MEAS_HI] < 0
            and iv[I_MEAS_LO] >= 0
            and q - iv[I_MEAS_LO] > sim.rec.shape[0]
        ):
            return ST_NEED_RECORDS
    _integrate(sim, t)
    fv[F_NOW] = t
    iv[I_EVENTS] += 1
    while iv[I_HEAPN] > 0 and sim.heap_t[0] <= t:
        s = sim.heap_s[0]
        if sim.js[s, REMAINING] > sim.jf[s, BUDGET]:  # never for an unlimited or spent budget
            _expire(sim, s, t)
        else:
            _depart(sim, s, t)
    while narr < ngen and sim.ring_t[narr & mask] <= t:
        _arrive(sim, narr, t)
        narr += 1
    return ST_EVENT


# ---------------------------------------------------------------------------------------------------
# Decisions


@internal_jit
def _start(sim, s):
    iv, ji, jf = sim.iv, sim.ji, sim.jf
    if s < 0 or s >= ji.shape[0]:
        return E_UNKNOWN_JOB
    if ji[s, STATE] != WAITING:
        return E_START_NOT_WAITING
    if ji[s, NEED] > iv[I_FREE]:
        return E_NO_CAPACITY
    now = sim.fv[F_NOW]
    _dequeue_waiting(sim, s)
    _add_running(sim, s)
    jf[s, LAST_START] = now
    if np.isnan(jf[s, FIRST_START]):
        jf[s, FIRST_START] = now
    _heap_push(sim, s, _due(sim, s, now))
    iv[I_STARTS] += 1
    return E_NONE


@internal_jit
def _preempt(sim, s):
    iv, ji, jf = sim.iv, sim.ji, sim.jf
    if s < 0 or s >= ji.shape[0]:
        return E_UNKNOWN_JOB
    if iv[I_PREEMPTIVE] == 0:
        return E_PREEMPT_FORBIDDEN
    if ji[s, STATE] != RUNNING:
        return E_PREEMPT_NOT_RUNNING
    done = (sim.fv[F_NOW] - jf[s, LAST_START]) * jf[s, RATE]
    sim.js[s, REMAINING] = max(sim.js[s, REMAINING] - done, 0.0)
    jf[s, ATTAINED] += done
    jf[s, BUDGET] -= done
    _heap_remove(sim, s)
    _remove_running(sim, s)
    _enqueue_waiting(sim, s)
    ji[s, NPREEMPT] += 1
    iv[I_PREEMPTIONS] += 1
    return E_NONE


@internal_jit
def _in_system(sim, s):
    if s < 0 or s >= sim.ji.shape[0]:
        return E_UNKNOWN_JOB
    st = sim.ji[s, STATE]
    if st != WAITING and st != RUNNING:
        return E_NOT_IN_SYSTEM
    return E_NONE


@internal_jit
def _serve(sim, s, n, rate):
    """``OP_SERVE``: job ``s`` holds ``n`` servers at ``rate`` (see :mod:`msj_gym.core.actions`)."""
    iv, ji, jf = sim.iv, sim.ji, sim.jf
    err = _in_system(sim, s)
    if err != E_NONE:
        return err
    if n < 1 or n > sim.ci[C_NEED, ji[s, CLS]] or not (0.0 < rate < np.inf):
        return E_BAD_OPERAND
    now = sim.fv[F_NOW]
    if ji[s, STATE] == WAITING:
        if n > iv[I_FREE]:
            return E_NO_CAPACITY
        ji[s, NEED] = n
        jf[s, RATE] = rate
        return _start(sim, s)
    gain = n - ji[s, NEED]
    if gain > iv[I_FREE]:
        return E_NO_CAPACITY
    _settle(sim, s, now)
    iv[I_FREE] -= gain
    ji[s, NEED] = n
    jf[s, RATE] = rate
    _heap_remove(sim, s)
    _heap_push(sim, s, _due(sim, s, now))
    return E_NONE


@internal_jit
def _budget(sim, s, b):
    """``OP_BUDGET``: job ``s`` may receive ``b`` more work before its next expiry event."""
    err = _in_system(sim, s)
    if err != E_NONE:
        return err
    if not b > 0.0:
        return E_BAD_OPERAND
    if sim.ji[s, STATE] == RUNNING:
        now = sim.fv[F_NOW]
        _settle(sim, s, now)
        sim.jf[s, BUDGET] = b
        _heap_remove(sim, s)
        _heap_push(sim, s, _due(sim, s, now))
    else:
        sim.jf[s, BUDGET] = b
    return E_NONE


@internal_jit
def _requeue(sim, s):
    """``OP_REQUEUE``: job ``s`` goes to the end of the service order."""
    iv, ji, ci = sim.iv, sim.ji, sim.ci
    err = _in_system(sim, s)
    if err != E_NONE:
        return err
    ji[s, ORDER] = iv[I_SEQ]
    iv[I_SEQ] += 1
    iv[I_SHEAD], iv[I_STAIL] = _list_remove(ji, SNEXT, SPREV, iv[I_SHEAD], iv[I_STAIL], s)
    iv[I_SHEAD], iv[I_STAIL] = _list_insert(ji, SNEXT, SPREV, iv[I_SHEAD], iv[I_STAIL], s)
    if ji[s, STATE] == WAITING:
        c = ji[s, CLS]
        iv[I_WHEAD], iv[I_WTAIL] = _list_remove(ji, WNEXT, WPREV, iv[I_WHEAD], iv[I_WTAIL], s)
        iv[I_WHEAD], iv[I_WTAIL] = _list_insert(ji, WNEXT, WPREV, iv[I_WHEAD], iv[I_WTAIL], s)
        ci[C_HEAD, c], ci[C_TAIL, c] = _list_remove(ji, CNEXT, CPREV, ci[C_HEAD, c], ci[C_TAIL, c], s)
        ci[C_HEAD, c], ci[C_TAIL, c] = _list_insert(ji, CNEXT, CPREV, ci[C_HEAD, c], ci[C_TAIL, c], s)
    return E_NONE


@internal_jit(inline=False)
def _operation(sim, actions, i, n):
    """Apply the operation whose tag is ``actions[i]``; returns (error, its slot, next word)."""
    a = actions[i]
    s = actions[i + 1] if i + 1 < n else -1
    if a == OP_SERVE and i + 4 <= n:
        return _serve(sim, s, actions[i + 2], bits_f64(actions[i + 3])), s, i + 4
    if a == OP_BUDGET and i + 3 <= n:
        return _budget(sim, s, bits_f64(actions[i + 2])), s, i + 3
    if a == OP_REQUEUE and i + 2 <= n:
        return _requeue(sim, s), s, i + 2
    return E_BAD_OPERAND, s, n


@internal_jit
def _start_or_preempt(sim, a):
    """Apply the word ``a > OP_LIMIT``: a start (``a >= 0``) or a preemption; returns (error, its slot)."""
    if a >= 0:
        return _start(sim, a), a
    return _preempt(sim, -a - 1), -a - 1


@internal_jit
def _refused(sim, err, job):
    """Record a refused decision (its error and job) for the Python side; returns the error."""
    sim.iv[I_ERR] = err
    sim.iv[I_ERR_JOB] = job
    return err


@internal_jit(python=True)  # also called from Python (the envs' engine actions)
def apply(sim, actions, n):
    """Apply the decision ``actions[:n]`` (see :mod:`msj_gym.core.actions`) in order; stop at the first
    invalid action and return its error code."""
    i = 0
    while i < n:
        a = actions[i]
        if a > OP_LIMIT:
            err, job = _start_or_preempt(sim, a)
            i += 1
        else:
            err, job, i = _operation(sim, actions, i, n)
        if err != E_NONE:
            return _refused(sim, err, job)
    if n > 0:
        sim.iv[I_DECISIONS] += 1
    return E_NONE


@internal_jit
def apply_one(sim, a):
    """``apply(sim, [a], 1)`` for a start or a preemption ``a``, all that an environment's agent does:
    the same effect, without compiling the operations of the compatibility models into the
    environment step (a second of its cold start)."""
    if a > OP_LIMIT:
        err, job = _start_or_preempt(sim, a)
    else:
        err, job = E_BAD_OPERAND, -1
    if err != E_NONE:
        return _refused(sim, err, job)
    sim.iv[I_DECISIONS] += 1
    return E_NONE


@internal_jit
def apply_start(sim, s):
    """``apply_one(sim, s)`` for a start alone (``s >= 0``), all that an environment that never
    preempts applies: the same effect, without compiling the preemption into its step (about a
    second of its cold start)."""
    err = _start(sim, s)
    if err != E_NONE:
        return _refused(sim, err, s)
    sim.iv[I_DECISIONS] += 1
    return E_NONE


@internal_jit
def apply_start_words(sim, words, n):
    """:func:`apply_starts` for a decision of starts alone (an environment that never preempts): the
    same effect, without compiling the preemption into its step."""
    for i in range(n):
        err = _start(sim, words[i])
        if err != E_NONE:
            return _refused(sim, err, words[i])
    if n > 0:
        sim.iv[I_DECISIONS] += 1
    return E_NONE


@internal_jit
def apply_starts(sim, words, n):
    """``apply(sim, words, n)`` for a decision made of starts and preemptions only (an environment's
    priority action): the same effect, without compiling the other operations into the step."""
    for i in range(n):
        err, job = _start_or_preempt(sim, words[i])
        if err != E_NONE:
            return _refused(sim, err, job)
    if n > 0:
        sim.iv[I_DECISIONS] += 1
    return E_NONE


@kernel_jit
def check_invariants(sim):
    """0 if the state is consistent, else a detail code (used by tests and ``debug=True`` runs)."""
    iv, ji, ci = sim.iv, sim.ji, sim.ci
    k = iv[I_K]
    busy = 0
    for p in range(iv[I_NRUN]):
        s = sim.run_list[p]
        if ji[s, STATE] != RUNNING or ji[s, RUNPOS] != p:
            return 1
        busy += ji[s, NEED]
        if ji[s, NEED] < 1 or ji[s, NEED] > ci[C_NEED, ji[s, CLS]] or not sim.jf[s, RATE] > 0.0:
            return 2
    if busy != k - iv[I_FREE] or busy > k or iv[I_FREE] < 0:
        return 3
    if iv[I_NSYS] != iv[I_NWAIT] + iv[I_NRUN]:
        return 4
    if iv[I_NARR] != iv[I_DONE] + iv[I_NSYS]:
        return 5
    if iv[I_HEAPN] != iv[I_NRUN]:
        return 6
    if iv[I_NFREE] + iv[I_NSYS] != ji.shape[0]:
        return 7
    count = 0
    prev = -1
    s = iv[I_WHEAD]
    while s != -1:
        if ji[s, STATE] != WAITING or ji[s, ORDER] <= prev:
            return 8
        prev = ji[s, ORDER]
        count += 1
        s = ji[s, WNEXT]
    if count != iv[I_NWAIT]:
        return 9
    total = 0
    for c in range(ci.shape[1]):
        total += ci[C_NWAIT, c]
        if ci[C_NRUN, c] < 0 or ci[C_NWAIT, c] < 0:
            return 10
    if total != iv[I_NWAIT]:
        return 11
    count = 0
    prev = -1
    s = iv[I_SHEAD]
    while s != -1:
        if ji[s, ORDER] <= prev or ji[s, ORDER] >= iv[I_SEQ]:
            return 13
        prev = ji[s, ORDER]
        count += 1
        s = ji[s, SNEXT]
    if count != iv[I_NSYS]:
        return 12
    return 0


@internal_jit
def can_decide(sim, preemptive):
    """True if some action other than "wait" is possible."""
    iv, ci = sim.iv, sim.ci
    if iv[I_NWAIT] == 0:
        return False
    if preemptive and iv[I_NRUN] > 0:
        return True
    free = iv[I_FREE]
    for c in range(ci.shape[1]):
        if ci[C_NWAIT, c] > 0 and ci[C_NEED, c] <= free:
            return True
    return False


@kernel_jit
def run_batch(plain, sized, check, size_aware, every_event, sim, view, sizes, pdata, actions, debug):
    """Run a policy until the engine needs something from Python, finishes, or fails. The policy's
    kernel (``sized`` if ``size_aware``, else ``plain``) and its invariant ``check`` are first-class
    function arguments (see :class:`~msj_gym.core.kernels.DecisionRule`), so this loop is compiled
    once for every policy. Unless the policy asks to see ``every_event``, it is only asked when it
    can act (:func:`can_decide`), exactly as the environments ask an agent."""
    preemptive = sim.iv[I_PREEMPTIVE] != 0
    while True:
        status = advance(sim)
        if status != ST_EVENT:
            return status
        if every_event or can_decide(sim, preemptive):
            if size_aware:
                n = sized(view, sizes, pdata, actions)
            else:
                n = plain(view, pdata, actions)
            if n > 0 and apply(sim, actions, n) != E_NONE:
                return ST_ERROR
        if debug:
            detail = check_invariants(sim)
            if detail != 0:
                sim.iv[I_ERR] = E_INVARIANT
                sim.iv[I_ERR_JOB] = detail
                return ST_ERROR
            detail = check(view, pdata)
            if detail != 0:
                sim.iv[I_ERR] = E_POLICY_INVARIANT
                sim.iv[I_ERR_JOB] = detail
                return ST_ERROR


_RUNNERS: dict[tuple, Callable[..., int]] = {}  # the compiled loops' entry points
_COMPILED: set[tuple] = set()  # (decision rule, argument types, debug) compiled


def batch_runner(rule: DecisionRule, sim, view, sizes, pdata, actions, debug) -> int:
    """``run_batch`` for a policy's decision ``rule``. The loop is compiled (or loaded from the cache)
    for the argument types, with the kernel slots typed as functions of the kernels' fixed signatures,
    and its entry point kept: that skips numba's per-call dispatch and keeps one machine-code loop for
    every policy. Either compilation, when it happens, is announced on stderr."""
    args = (sim, view, sizes, pdata, actions, debug)
    key = argument_types(args)
    runner = _RUNNERS.get(key)
    _, view_t, sizes_t, pdata_t, actions_t, _ = key
    if runner is None:
        sig = (
            *kernel_types(view_t, sizes_t, pdata_t, actions_t),
            numba.types.FunctionType(numba.types.int64(view_t, pdata_t)),
            numba.types.boolean,
            numba.types.boolean,
            *key,
        )
        compile_announced(run_batch, sig, "compiling the engine loop")
        runner = _RUNNERS[key] = run_batch.overloads[sig].entry_point
    if (rule, key, bool(debug)) not in _COMPILED:
        what = f"compiling {rule.name}"
        if rule.size_aware:
            compile_announced(rule.sized, (view_t, sizes_t, pdata_t, actions_t), what)
        else:
            compile_announced(rule.plain, (view_t, pdata_t, actions_t), what)
        if debug:
            compile_announced(rule.check, (view_t, pdata_t), f"{what} (its invariant check)")
        _COMPILED.add((rule, key, bool(debug)))
    return runner(rule.plain, rule.sized, rule.check, rule.size_aware, rule.every_event, *args)
