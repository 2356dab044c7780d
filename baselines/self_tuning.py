"""A self-tuning HPC scheduler: it learns the run times of the jobs that finish and switches, as it
goes, to the priority rule that a simulation from the current state says is best.

Reads only what a batch scheduler knows: each job's requested time and processors, the queue, and a job's
actual run time once it has finished (the time from its start to the departure the scheduler sees). It
is size-oblivious: the simulator never hands it the service times. It is called at every event, so it
sees every departure when it happens.

**Run-time predictions** (Gibbons (1997) and Smith, Foster & Taylor (1998): predict from the run
times of earlier jobs of the same *template*; Tsafrir, Etsion & Feitelson (2007): the mean of the last
two such run times, used in place of the user's estimate both to order the queue and to backfill). The
template of a job is its (processors, requested time): in a log, the jobs of one user's script share
both. A job's prediction p is the mean of the run times of the last ``history`` finished jobs of its
template, at most its requested time r; a job of a template none of whose jobs has finished is
predicted at r. A running job that outlives its prediction is expected to end at its start plus r
(past that, at once, as EASY assumes of a job past its estimate).

**The rules** (:data:`CANDIDATES`, ``rules``): FCFS, SJF, WFP3, UNICEP and F1 with p in place of r, the
scores of :mod:`msj_gym.baselines.hpc`. Jobs start as the rule in force orders them: from the head while
they fit (``self-tuning``: the head blocks) or, with EASY backfilling (``self-tuning-easy``), the head
that does not fit gets a reservation at its shadow time by the predicted ends, and later jobs of the
order start if they fit and, by their predictions, end by then or use only the processors the
reservation leaves spare (Mu'alem & Feitelson (2001), Sec. 2, along the rule's order; every job
predicted to end at the shadow time counts towards them).

**Switching, by rollouts** (``choose="rollout"``, the default). Self-tuning schedulers switch between
policies by evaluating each on what they know (Streit (2002), dynP: plan the queue under each policy,
keep the best; Talby & Feitelson (2005): simulate each on the recent past); here each candidate rule is
*played out* from the current state, as a rollout algorithm compares base policies (Bertsekas &
Castañon (1999)). Every ``every`` arrivals, if two or more jobs wait, each rule schedules, in a
simulation started now: the running jobs (to their expected ends), the waiting jobs, and a sample of the
future, the last ``window`` jobs to arrive with their submissions shifted so that the oldest arrives
now. A job of the sample that has finished runs its run time; every other job runs its prediction times
an error drawn from the last 256 recorded errors of predictions of its kind (run time over prediction,
for predictions from a template's history and for requested times apart; the same draw for every rule:
common random numbers). The rule whose simulation has the smallest mean bounded slowdown over the
waiting and sampled jobs takes over (a tie keeps the rule in force; the first rule is in force at the
start); ``samples`` draws of the errors are summed. ``choose="plan"`` is dynP's choice instead: at each
decision instant, the waiting jobs are planned in each rule's order (each when the running and earlier
planned jobs have freed enough processors by their predicted ends, no earlier than the job before it),
and the rule whose plan has the smallest sum of bounded slowdowns takes over.

Readings chosen: the simulations run the rules as the scheduler does (re-ranked at every event; EASY by
the predictions); the choice is kept for every call at the same instant, so that a decision is
prefix-consistent. The design and its parameters were chosen on sequences of other logs and of later
parts of these logs (not on the sequences RLScheduler's table reports): see the HPC track's page.

Non-preemptive; size-oblivious (requested times, processors, and the run times of finished jobs).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np

from msj_gym.core import Param, Policy
from msj_gym.core.access import (
    arrival_time,
    field,
    first_waiting,
    free_servers,
    in_system,
    int_value,
    job_attribute_float,
    job_class,
    job_id,
    last_in_system,
    last_start,
    next_waiting,
    now,
    num_arrived,
    num_running,
    num_slots,
    prev_in_system,
    region,
    running_job,
    server_need,
    value,
)
from msj_gym.core.jit import inline_jit
from msj_gym.core.layout import Layout
from msj_gym.core.record import Record
from msj_gym.core.state import PolicyData
from msj_gym.metrics.result import default_slowdown_tau
from msj_gym.workloads.trace import requested_time_attribute
from msj_gym.workloads.workload import ClassTable

from ._kit import sort_ascending, start_in_order
from .backfilling import easy_start
from .hpc import RULE_F1, RULE_FCFS, RULE_SJF, RULE_UNICEP, RULE_WFP3, VARIANT_PAPER, job_score, score

#: The rules the scheduler may switch between, by name (each with the predicted run time for r).
CANDIDATES = {"fcfs": RULE_FCFS, "sjf": RULE_SJF, "wfp3": RULE_WFP3, "unicep": RULE_UNICEP, "f1": RULE_F1}
DEFAULT_RULES = "fcfs,sjf,wfp3,unicep,f1"
TABLE_SIZE = 4096  # templates remembered (open addressing; a power of two)
PROBES = 64  # a template not found within this many probes replaces the one at its home

FIELDS = Record(
    "backfill",
    "requested_attribute",
    "tau",
    "history",
    "rules",
    "num_servers",
    "choose",
    "window",
    "every",
    "samples",
)
BACKFILL, REQUESTED_ATTRIBUTE, TAU, HISTORY, RULES, NUM_SERVERS, CHOOSE, WINDOW, EVERY, SAMPLES = FIELDS.ids
CHOOSERS = ("rollout", "plan")
CHOOSE_ROLLOUT, CHOOSE_PLAN = range(2)
WORK = Layout(
    ints={
        "ranked": "slots + servers + window",
        "heap_need": "slots + 2 * servers + window",
        "r_need": "slots + servers + window",
        "r_wait": "slots + servers + window",
        "r_ahead": "slots + servers + window",
        "r_class": "slots + servers + window",
        "r_salt": "slots + servers + window",
    },
    floats={
        "keys": "slots + servers + window",
        "pred": "slots",
        "heap_end": "slots + 2 * servers + window",
        "r_submit": "slots + servers + window",
        "r_est": "slots + servers + window",
        "r_run": "slots + servers + window",
        "r_req": "slots + servers + window",
        "r_start": "slots + servers + window",
        "r_shadow": "slots + servers + window",
    },
    params=FIELDS,
)
(
    RANKED,
    HEAP_NEED,
    R_NEED,
    R_WAIT,
    R_AHEAD,
    R_CLASS,
    R_SALT,
    KEYS,
    PRED,
    HEAP_END,
    R_SUBMIT,
    R_EST,
    R_RUN,
    R_REQ,
    R_START,
    R_SHADOW,
) = WORK.ids

# pdata.state: the rule in force, when it was chosen, the jobs seen running at the last call, the jobs
# recorded, when to replay next; the running jobs; the ring of recent jobs; the template table
S_RULE, S_CHOSEN_AT, S_NTRACK, S_SEEN, S_NEXT_ROLLOUT = range(5)
S_STARTS = 5  # jobs started while each rule was in force, by rule code
S_ERRORS = S_STARTS + 6  # errors recorded: of predictions from a template's history, of requested times
ERRORS = S_ERRORS + 2  # the last ERROR_RING of each (run time / prediction), from here
ERROR_RING = 256
TRACK = (
    ERRORS + 2 * ERROR_RING
)  # tracked running jobs from here, each: slot, job id, start, class, requested time
TRACK_WIDTH = 5
RING_WIDTH = 6  # a recent job: id, submit, processors, class, requested time, run time (NaN: unknown)
ENTRY = 3  # a template's entry: class + 1 (0: empty), requested time, finished jobs, then its run times


def state_size(num_servers: int, history: int, window: int) -> int:
    """The length of ``pdata.state`` for ``num_servers`` processors, ``history`` run times kept per
    template and a ring of ``window`` recent jobs."""
    return TRACK + TRACK_WIDTH * num_servers + RING_WIDTH * window + TABLE_SIZE * (ENTRY + history)


@inline_jit
def _ring(k):
    return TRACK + TRACK_WIDTH * k


@inline_jit
def _table(k, window):
    return TRACK + TRACK_WIDTH * k + RING_WIDTH * window


@inline_jit
def _entry(state, base, history, c, r):
    """The table entry (at ``base``) of template (class ``c``, requested time ``r``): where it starts
    in ``state``, and whether it holds that template (else it is where the template would go: an
    empty entry, or its home entry to overwrite)."""
    width = ENTRY + history
    h = (c * 1000003 + int(r * 8.0)) & (TABLE_SIZE - 1)
    for i in range(PROBES):
        at = base + ((h + i) & (TABLE_SIZE - 1)) * width
        if state[at] == 0.0:
            return at, False
        if state[at] == c + 1.0 and state[at + 1] == r:
            return at, True
    return base + h * width, False


@inline_jit
def _learn(state, base, history, c, r, run):
    """Record a finished job's run time under its template (the last ``history`` are kept, newest
    first)."""
    at, found = _entry(state, base, history, c, r)
    if not found:
        state[at] = c + 1.0
        state[at + 1] = r
        state[at + 2] = 0.0
    m = int(min(state[at + 2], history - 1))
    for i in range(m, 0, -1):
        state[at + ENTRY + i] = state[at + ENTRY + i - 1]
    state[at + ENTRY] = run
    state[at + 2] += 1.0


@inline_jit
def _lookup(state, base, history, c, r):
    """(the predicted run time of a job of template (``c``, ``r``), whether its template has a finished
    job): the mean of its template's last ``history`` run times, at most r; r if none has finished."""
    at, found = _entry(state, base, history, c, r)
    if not found:
        return r, False
    m = int(min(state[at + 2], history))
    total = 0.0
    for i in range(m):
        total += state[at + ENTRY + i]
    return min(total / m, r), True


@inline_jit
def _predict(state, base, history, c, r):
    """The predicted run time of a job of template (``c``, ``r``) (see :func:`_lookup`)."""
    return _lookup(state, base, history, c, r)[0]


@inline_jit
def _sampled_run(state, base, history, c, r, salt):
    """A run time for a job of template (``c``, ``r``) whose run time is unknown: its prediction times
    one of the last recorded errors of predictions of its kind (from a template's history, or a
    requested time), picked by ``salt`` (the same job gets the same error for every candidate rule);
    at most r."""
    p, known = _lookup(state, base, history, c, r)
    which = 0 if known else 1
    count = int(min(state[S_ERRORS + which], ERROR_RING))
    if count == 0:
        return p
    pick = ((salt * 2654435761) % 4294967296) % count
    return min(p * state[ERRORS + which * ERROR_RING + pick], r)


@inline_jit
def _observe(view, state, k, history, window, attribute):
    """Record the jobs arrived since the last call in the ring; learn the run time of every job that
    ran (or was started) at the last call and has left since (the kernel is called at every event, so
    it left now); then remember the jobs running now."""
    t = now(view)
    ring, table = _ring(k), _table(k, window)
    seen = int(state[S_SEEN])
    s = last_in_system(view)
    while s != -1 and job_id(view, s) >= seen:
        j = job_id(view, s)
        at = ring + RING_WIDTH * (j % window)
        state[at] = j
        state[at + 1] = arrival_time(view, s)
        state[at + 2] = server_need(view, s)
        state[at + 3] = job_class(view, s)
        state[at + 4] = job_attribute_float(view, s, attribute)
        state[at + 5] = np.nan
        s = prev_in_system(view, s)
    state[S_SEEN] = num_arrived(view)
    for i in range(int(state[S_NTRACK])):
        at = TRACK + TRACK_WIDTH * i
        s = int(state[at])
        if s < num_slots(view) and job_id(view, s) == int(state[at + 1]) and in_system(view, s):
            continue  # still running (or, started by a decision not applied in full, still waiting)
        run = max(t - state[at + 2], 0.0)
        p, known = _lookup(state, table, history, int(state[at + 3]), state[at + 4])
        if p > 0.0:
            which = 0 if known else 1
            count = int(state[S_ERRORS + which])
            state[ERRORS + which * ERROR_RING + count % ERROR_RING] = run / p
            state[S_ERRORS + which] = count + 1
        _learn(state, table, history, int(state[at + 3]), state[at + 4], run)
        j = int(state[at + 1])
        where = ring + RING_WIDTH * (j % window)
        if state[where] == j:
            state[where + 5] = run
    m = num_running(view)
    for i in range(m):
        s = running_job(view, i)
        at = TRACK + TRACK_WIDTH * i
        state[at] = s
        state[at + 1] = job_id(view, s)
        state[at + 2] = last_start(view, s)
        state[at + 3] = job_class(view, s)
        state[at + 4] = job_attribute_float(view, s, attribute)
    state[S_NTRACK] = m


@inline_jit
def _track_started(view, state, actions, n, attribute):
    """Remember the jobs this decision starts, from now: one may leave at the very next event."""
    m = int(state[S_NTRACK])
    for i in range(n):
        s = actions[i]
        at = TRACK + TRACK_WIDTH * (m + i)
        state[at] = s
        state[at + 1] = job_id(view, s)
        state[at + 2] = now(view)
        state[at + 3] = job_class(view, s)
        state[at + 4] = job_attribute_float(view, s, attribute)
    state[S_NTRACK] = m + n


@inline_jit
def _expected_end(begun, p, r, t):
    """When a job started at ``begun``, predicted to run ``p`` and requesting ``r``, is expected to end
    at time ``t``: at its start plus p; past that, its start plus r; past that, now."""
    end = begun + p
    if end <= t:
        end = begun + r
    return max(end, t)


@inline_jit
def _heap_push(ends, needs, m, end, need):
    pos = m
    ends[pos], needs[pos] = end, need
    while pos > 0:
        parent = (pos - 1) >> 1
        if ends[parent] <= ends[pos]:
            break
        ends[pos], ends[parent] = ends[parent], ends[pos]
        needs[pos], needs[parent] = needs[parent], needs[pos]
        pos = parent
    return m + 1


@inline_jit
def _heap_pop(ends, needs, m):
    """Remove the earliest end; returns (it, its need, the new size)."""
    end, need = ends[0], needs[0]
    m -= 1
    ends[0], needs[0] = ends[m], needs[m]
    pos = 0
    while True:
        c = 2 * pos + 1
        if c >= m:
            break
        if c + 1 < m and ends[c + 1] < ends[c]:
            c += 1
        if ends[pos] <= ends[c]:
            break
        ends[pos], ends[c] = ends[c], ends[pos]
        needs[pos], needs[c] = needs[c], needs[pos]
        pos = c
    return end, need, m


@inline_jit
def _sort_keys(keys, idx, m):
    """Insertion-free heapsort of keys[:m] with idx, ascending by (key, idx): idx is the arrival
    order, so ties go to the earlier job."""
    for pos in range((m // 2) - 1, -1, -1):
        _sift(keys, idx, pos, m)
    for end in range(m - 1, 0, -1):
        keys[0], keys[end] = keys[end], keys[0]
        idx[0], idx[end] = idx[end], idx[0]
        _sift(keys, idx, 0, end)


@inline_jit
def _before(ka, ia, kb, ib):
    return ka < kb or (ka == kb and ia < ib)


@inline_jit
def _sift(keys, idx, pos, m):
    k, i = keys[pos], idx[pos]
    while True:
        c = 2 * pos + 1
        if c >= m:
            break
        if c + 1 < m and _before(keys[c], idx[c], keys[c + 1], idx[c + 1]):
            c += 1
        if not _before(k, i, keys[c], idx[c]):
            break
        keys[pos], idx[pos] = keys[c], idx[c]
        pos = c
    keys[pos], idx[pos] = k, i


@inline_jit
def _rank(view, rule, pred, weights, tau, keys, slots):
    """The waiting jobs in ``rule``'s order by their predictions into ``slots`` (scores in ``keys``);
    returns their number. UNICEP's two tiers are collected and sorted one after the other."""
    t = now(view)
    m = 0
    for tier in range(2 if rule == RULE_UNICEP else 1):
        lo = m
        s = first_waiting(view)
        while s != -1:
            level, key = score(view, rule, s, pred[s], t, VARIANT_PAPER, weights, tau, 0.0)
            if level == tier:
                keys[m] = key
                slots[m] = s
                m += 1
            s = next_waiting(view, s)
        sort_ascending(view, keys[lo:m], slots[lo:m], m - lo)
    return m


@inline_jit
def _plan(view, state, table, history, attribute, pred, slots, m, tau, ends, needs):
    """The sum of the planned bounded slowdowns of the waiting jobs ``slots[:m]`` started in that order,
    each when enough processors are free by the predicted ends, no earlier than the one before."""
    t = now(view)
    h = 0
    for i in range(num_running(view)):
        s = running_job(view, i)
        r = job_attribute_float(view, s, attribute)
        p = _predict(state, table, history, job_class(view, s), r)
        h = _heap_push(ends, needs, h, _expected_end(last_start(view, s), p, r, t), server_need(view, s))
    free = free_servers(view)
    at = t
    total = 0.0
    for i in range(m):
        s = slots[i]
        need = server_need(view, s)
        while free < need and h > 0:
            end, back, h = _heap_pop(ends, needs, h)
            free += back
            at = max(at, end)
        p = pred[s]
        total += max((at - arrival_time(view, s) + p) / max(p, tau), 1.0)
        free -= need
        h = _heap_push(ends, needs, h, at + p, need)
    return total


@inline_jit
def _rank_replay(rule, need, sub, est, wait, q, t, tau, k, keys, order):
    """The replay's waiting jobs ``wait[:q]`` in ``rule``'s order by their estimates at time ``t`` into
    ``order`` (scores in ``keys``), UNICEP's two tiers one after the other; returns their number."""
    dummy = keys[:0]
    n = 0
    for tier in range(2 if rule == RULE_UNICEP else 1):
        lo = n
        for i in range(q):
            j = wait[i]
            level, key = job_score(rule, need[j], sub[j], est[j], t, VARIANT_PAPER, dummy, tau, 0.0, k)
            if level == tier:
                keys[n] = key
                order[n] = j
                n += 1
        _sort_keys(keys[lo:n], order[lo:n], n - lo)
    return n


@inline_jit
def _replay_shadow(pdata, heap_job, h, t, free, head_need):
    """EASY's reservation in the replay for a head job needing ``head_need`` processors at time ``t``,
    ``free`` idle: (its shadow time by the estimated ends of the running jobs ``heap_job[:h]``, the
    processors it leaves spare then); every job expected to end at the shadow time counts."""
    need, begun = region(pdata.iwork, R_NEED), region(pdata.fwork, R_START)
    est, req = region(pdata.fwork, R_EST), region(pdata.fwork, R_REQ)
    shadow_end, ahead = region(pdata.fwork, R_SHADOW), region(pdata.iwork, R_AHEAD)
    r_count = 0
    for p in range(h):
        j = heap_job[p]
        shadow_end[r_count] = _expected_end(begun[j], est[j], req[j], t)
        ahead[r_count] = need[j]
        r_count += 1
    _sort_by_end(shadow_end, ahead, r_count)
    avail = free
    for p in range(r_count):
        avail += ahead[p]
        if avail >= head_need:
            for z in range(p + 1, r_count):
                if shadow_end[z] == shadow_end[p]:
                    avail += ahead[z]
            return shadow_end[p], avail - head_need
    return np.inf, 0


@inline_jit
def _simulate(pdata, rule, backfill, first, m, k, free, t0, tau):
    """The mean bounded slowdown of jobs ``first .. m - 1`` of the replay regions (each: submit,
    processors, estimate, run time, requested time; in arrival order) scheduled by ``rule`` (with EASY
    if ``backfill``) on ``k`` processors from time ``t0``, when jobs ``0 .. first - 1`` run (since
    their ``begun``, for their run times) and ``free`` processors are idle: the jobs run their run
    times, the rule orders and backfills by their estimates."""
    sub, need = region(pdata.fwork, R_SUBMIT), region(pdata.iwork, R_NEED)
    est, run, begun = region(pdata.fwork, R_EST), region(pdata.fwork, R_RUN), region(pdata.fwork, R_START)
    wait = region(pdata.iwork, R_WAIT)
    keys, order = region(pdata.fwork, KEYS), region(pdata.iwork, RANKED)
    ends, heap_job = region(pdata.fwork, HEAP_END), region(pdata.iwork, HEAP_NEED)
    nxt, q, h = first, 0, 0
    for j in range(first):
        h = _heap_push(ends, heap_job, h, begun[j] + run[j], j)
    total = 0.0
    while nxt < m or q > 0:
        t = sub[nxt] if nxt < m else np.inf
        if h > 0 and ends[0] < t:
            t = ends[0]
        t = max(t, t0)
        while h > 0 and ends[0] <= t:
            _, j, h = _heap_pop(ends, heap_job, h)
            free += need[j]
        while nxt < m and sub[nxt] <= t:
            wait[q] = nxt
            q += 1
            nxt += 1
        smallest = k + 1
        for i in range(q):
            smallest = min(smallest, need[wait[i]])
        if smallest > free:
            if h == 0 and nxt >= m:
                break  # cannot happen: a job needs at most k
            continue
        n = _rank_replay(rule, need, sub, est, wait, q, t, tau, k, keys, order)
        i = 0
        while i < n and need[order[i]] <= free:
            j = order[i]
            free -= need[j]
            begun[j] = t
            h = _heap_push(ends, heap_job, h, t + run[j], j)
            total += max((t - sub[j] + run[j]) / max(run[j], tau), 1.0)
            i += 1
        if i < n and backfill != 0 and free > 0:
            shadow, extra = _replay_shadow(pdata, heap_job, h, t, free, need[order[i]])
            for z in range(i + 1, n):
                j = order[z]
                if need[j] <= free and (t + est[j] <= shadow or need[j] <= extra):
                    if t + est[j] > shadow:
                        extra -= need[j]
                    free -= need[j]
                    begun[j] = t
                    h = _heap_push(ends, heap_job, h, t + run[j], j)
                    total += max((t - sub[j] + run[j]) / max(run[j], tau), 1.0)
                if free == 0:
                    break
        # keep the jobs still waiting, in arrival order
        kept = 0
        for z in range(q):
            j = wait[z]
            if np.isnan(begun[j]):
                wait[kept] = j
                kept += 1
        q = kept
    return total / max(m - first, 1)


@inline_jit
def _sort_by_end(ends, needs, m):
    for i in range(1, m):
        e, x = ends[i], needs[i]
        j = i - 1
        while j >= 0 and ends[j] > e:
            ends[j + 1], needs[j + 1] = ends[j], needs[j]
            j -= 1
        ends[j + 1], needs[j + 1] = e, x


@inline_jit
def _choose_by_rollout(
    view, pdata, state, k, history, window, rules, backfill, tau, attribute, current, samples
):
    """The rule of ``rules`` under which, from now, the running and waiting jobs and a sample of the
    future (the last ``window`` jobs arrived, their submissions shifted to start now) would have the
    smallest mean bounded slowdown, every job running its predicted time (a finished job of the sample,
    its run time); ``current`` where fewer than two jobs wait."""
    ring, table = _ring(k), _table(k, window)
    sub, need = region(pdata.fwork, R_SUBMIT), region(pdata.iwork, R_NEED)
    est, run, req = region(pdata.fwork, R_EST), region(pdata.fwork, R_RUN), region(pdata.fwork, R_REQ)
    begun = region(pdata.fwork, R_START)
    cls, salt = region(pdata.iwork, R_CLASS), region(pdata.iwork, R_SALT)
    t = now(view)
    m = 0
    for i in range(num_running(view)):
        s = running_job(view, i)
        sub[m] = arrival_time(view, s)
        need[m] = server_need(view, s)
        req[m] = job_attribute_float(view, s, attribute)
        est[m] = _predict(state, table, history, job_class(view, s), req[m])
        begun[m] = last_start(view, s)
        run[m] = _expected_end(begun[m], est[m], req[m], t) - begun[m]
        m += 1
    first = m
    s = first_waiting(view)
    while s != -1:
        sub[m] = arrival_time(view, s)
        need[m] = server_need(view, s)
        req[m] = job_attribute_float(view, s, attribute)
        est[m] = _predict(state, table, history, job_class(view, s), req[m])
        cls[m], salt[m] = job_class(view, s), job_id(view, s)
        m += 1
        s = next_waiting(view, s)
    if m - first < 2:
        return current
    hi = int(state[S_SEEN])
    shift = np.nan
    for j in range(max(0, hi - window), hi):
        at = ring + RING_WIDTH * (j % window)
        if state[at] != j:
            continue
        if np.isnan(shift):
            shift = t - state[at + 1]
        sub[m] = state[at + 1] + shift
        need[m] = int(state[at + 2])
        req[m] = state[at + 4]
        est[m] = _predict(state, table, history, int(state[at + 3]), req[m])
        run[m] = state[at + 5]
        cls[m], salt[m] = int(state[at + 3]), j if np.isnan(run[m]) else -1
        m += 1
    best, chosen, kept = np.inf, current, np.inf
    for i in range(rules.size):
        value_ = 0.0
        for draw in range(samples):
            for j in range(first, m):
                begun[j] = np.nan
                if salt[j] >= 0:
                    run[j] = _sampled_run(state, table, history, cls[j], req[j], salt[j] + 7919 * draw)
            value_ += _simulate(pdata, int(rules[i]), backfill, first, m, k, free_servers(view), t, tau)
        if int(rules[i]) == current:
            kept = value_
        if value_ < best:
            best, chosen = value_, int(rules[i])
    return chosen if best < kept else current  # a tie keeps the rule in force


@inline_jit
def _self_tuning(view, pdata, actions):
    state = pdata.state
    k = int_value(pdata.params, NUM_SERVERS)
    history = int_value(pdata.params, HISTORY)
    window = int_value(pdata.params, WINDOW)
    attribute = int_value(pdata.params, REQUESTED_ATTRIBUTE)
    backfill = int_value(pdata.params, BACKFILL)
    tau = value(pdata.params, TAU)
    rules = field(pdata.params, RULES)
    table = _table(k, window)
    _observe(view, state, k, history, window, attribute)
    free = free_servers(view)
    fits = False
    s = first_waiting(view)
    while s != -1:
        if server_need(view, s) <= free:
            fits = True
            break
        s = next_waiting(view, s)
    if not fits:
        return 0
    pred = region(pdata.fwork, PRED)
    keys, slots = region(pdata.fwork, KEYS), region(pdata.iwork, RANKED)
    ends, needs = region(pdata.fwork, HEAP_END), region(pdata.iwork, HEAP_NEED)
    s = first_waiting(view)
    while s != -1:
        pred[s] = _predict(state, table, history, job_class(view, s), job_attribute_float(view, s, attribute))
        s = next_waiting(view, s)
    t = now(view)
    choose = int_value(pdata.params, CHOOSE)
    if choose == CHOOSE_ROLLOUT:
        if state[S_RULE] < 0 or state[S_SEEN] >= state[S_NEXT_ROLLOUT]:
            current = int(rules[0]) if state[S_RULE] < 0 else int(state[S_RULE])
            samples = int_value(pdata.params, SAMPLES)
            state[S_RULE] = _choose_by_rollout(
                view, pdata, state, k, history, window, rules, backfill, tau, attribute, current, samples
            )
            state[S_NEXT_ROLLOUT] = state[S_SEEN] + int_value(pdata.params, EVERY)
    elif state[S_CHOSEN_AT] != t or state[S_RULE] < 0:
        best, chosen = np.inf, int(rules[0])
        for j in range(rules.size):
            rule = int(rules[j])
            m = _rank(view, rule, pred, rules, tau, keys, slots)
            total = _plan(view, state, table, history, attribute, pred, slots, m, tau, ends, needs)
            if total < best:
                best, chosen = total, rule
        state[S_RULE] = chosen
        state[S_CHOSEN_AT] = t
    rule = int(state[S_RULE])
    n = _start_jobs(view, pdata, state, table, history, attribute, rule, backfill, pred, tau, actions)
    state[S_STARTS + rule] += n
    _track_started(view, state, actions, n, attribute)
    return n


@inline_jit
def _start_jobs(view, pdata, state, table, history, attribute, rule, backfill, pred, tau, actions):
    """The decision of ``rule``'s heuristic on the predictions (with EASY if ``backfill``)."""
    keys, slots = region(pdata.fwork, KEYS), region(pdata.iwork, RANKED)
    ends, needs = region(pdata.fwork, HEAP_END), region(pdata.iwork, HEAP_NEED)
    t = now(view)
    m = _rank(view, rule, pred, keys, tau, keys, slots)
    n, i, free = start_in_order(view, slots, m, free_servers(view), actions)
    if i == m or free == 0 or backfill == 0:
        return n
    # EASY along the rule's order, by the predictions: the head's shadow time and spare processors
    h = 0
    for j in range(num_running(view)):
        s = running_job(view, j)
        r = job_attribute_float(view, s, attribute)
        p = _predict(state, table, history, job_class(view, s), r)
        h = _heap_push(ends, needs, h, _expected_end(last_start(view, s), p, r, t), server_need(view, s))
    for j in range(i):
        h = _heap_push(ends, needs, h, t + pred[slots[j]], server_need(view, slots[j]))
    head_need = server_need(view, slots[i])
    avail = free
    shadow, extra = np.inf, 0
    while h > 0:
        end, back, h = _heap_pop(ends, needs, h)
        avail += back
        if avail >= head_need:
            while h > 0 and ends[0] == end:  # every job ending then frees its processors then
                _, back, h = _heap_pop(ends, needs, h)
                avail += back
            shadow, extra = end, avail - head_need
            break
    for j in range(i + 1, m):
        s = slots[j]
        need = server_need(view, s)
        if need <= free:
            n, free, extra = easy_start(actions, n, s, need, free, extra, t + pred[s] <= shadow)
        if free == 0:
            break
    return n


class SelfTuning(Policy):
    """Self-tuning priority scheduling without backfilling (see the module docstring): the candidate
    rule (FCFS, SJF, WFP3, UNICEP, F1 on run times predicted from finished jobs) whose rollout from the
    current state has the smallest mean bounded slowdown orders the queue, and jobs start from its head
    while they fit; the head blocks. Sources: self-tuning policy switching, Streit (2002) (dynP) and
    Talby & Feitelson (2005); rollouts, Bertsekas & Castañon (1999); run-time predictions from finished
    jobs of the same template, Gibbons (1997), Smith, Foster & Taylor (1998), Tsafrir, Etsion &
    Feitelson (2007). Non-preemptive; size-oblivious (requested times, processors, and the run times
    of jobs once they finished).
    """

    policy_id = "self-tuning"
    backfill: ClassVar[bool] = False
    preemptive = False
    size_aware = False
    decides_every_event = True  # it learns from every departure
    kernel = _self_tuning
    work = WORK
    reference = (
        "Streit (2002), dynP; Talby & Feitelson (2005); Bertsekas & Castanon (1999), rollouts; "
        "Tsafrir, Etsion & Feitelson (2007), run-time predictions; Smith, Foster & Taylor (1998), templates"
    )
    params_spec: ClassVar[Mapping[str, Param]] = {
        "rules": Param(
            str,
            DEFAULT_RULES,
            "the candidate rules, comma-separated, of fcfs, sjf, wfp3, unicep, f1 (each on predicted run "
            "times); the first wins ties",
        ),
        "history": Param(
            int, 2, "run times of finished jobs of the same template averaged into a prediction", minimum=1
        ),
        "choose": Param(
            str,
            "rollout",
            "how the rule is chosen: rollout (the queue and a sampled future, simulated) or plan (dynP's "
            "plan of the queue)",
            choices=CHOOSERS,
        ),
        "window": Param(
            int, 512, "recent jobs whose arrivals, shifted to now, are a rollout's future", minimum=2
        ),
        "every": Param(int, 8, "arrivals between rollouts", minimum=1),
        "samples": Param(
            int, 1, "draws of the unknown run times per rollout (their values are summed)", minimum=1
        ),
    }

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        self._rule_codes = self._parse_rules(self.param_values["rules"])

    def _parse_rules(self, text: str) -> list[int]:
        names = [t.strip() for t in text.split(",")]
        bad = [t for t in names if t not in CANDIDATES]
        if not names or bad or len(set(names)) != len(names):
            raise ValueError(
                f"policy {self.policy_id!r} parameter 'rules': expected distinct names of "
                f"{', '.join(CANDIDATES)}, comma-separated, got {text!r}"
            )
        return [CANDIDATES[t] for t in names]

    # a policy is asked only about a workload of its own models (for_workload checks): narrower by design
    def unsupported(self, workload: ClassTable) -> str | None:  # type: ignore[override]
        if requested_time_attribute(workload) is None:
            return (
                f"policy {self.policy_id!r}: workload {getattr(workload, 'name', '?')!r} carries no "
                "requested times (an SWF log does): it orders and plans by them"
            )
        return None

    def kind_notes(self) -> tuple[str, ...]:
        return ("estimates: requested, learned from finished jobs",)

    def report(self, pdata: PolicyData) -> dict[str, Any]:
        """The share of the started jobs that each candidate rule started (``rule_share_NAME``)."""
        counts = {name: float(pdata.state[S_STARTS + code]) for name, code in CANDIDATES.items()}
        total = sum(counts.values())
        return {f"rule_share_{name}": (c / total if total else float("nan")) for name, c in counts.items()}

    # a policy is prepared only for a workload of its own models (for_workload checks): narrower by design
    def prepare(self, workload: ClassTable, rng: np.random.Generator) -> PolicyData:  # type: ignore[override]
        self.require(workload)
        base = super().prepare(workload, rng)
        history = int(self.param_values["history"])
        params = FIELDS.pack(
            backfill=int(self.backfill),
            requested_attribute=requested_time_attribute(workload),
            tau=default_slowdown_tau(workload),
            history=history,
            rules=np.array(self._rule_codes, dtype=np.float64),
            num_servers=workload.num_servers,
            choose=CHOOSERS.index(self.param_values["choose"]),
            window=int(self.param_values["window"]),
            every=int(self.param_values["every"]),
            samples=int(self.param_values["samples"]),
        )
        state = np.zeros(state_size(workload.num_servers, history, int(self.param_values["window"])))
        state[S_RULE] = -1.0
        state[S_CHOSEN_AT] = -np.inf
        state[S_NEXT_ROLLOUT] = 0.0
        return base._replace(params=params, state=state)


class SelfTuningEasy(SelfTuning):
    """Self-tuning priority scheduling with EASY backfilling along the order of the rule in force, by the
    learned run-time predictions (see the module docstring). Sources: as ``self-tuning``'s; EASY on
    predictions, Tsafrir, Etsion & Feitelson (2007); EASY: Mu'alem & Feitelson (2001), Sec. 2.
    Non-preemptive; size-oblivious (requested times, processors, and the run times of jobs once they
    finished).
    """

    policy_id = "self-tuning-easy"
    backfill = True
    reference = SelfTuning.reference + "; EASY: Mu'alem & Feitelson (2001), Sec. 2"
