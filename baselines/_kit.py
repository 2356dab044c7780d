"""Compiled building blocks shared by the policy kernels.

* ordering: a bounded max-heap and an in-place sort over parallel (key, slot) arrays; ties on the key are
  broken by job id (arrival order), so every ordering is total and deterministic;
* ``start_in_order``: the step a non-preemptive priority policy begins with (the head blocks);
* ``fill_and_diff``: the step every preemptive policy ends with: go through candidates in priority order,
  keep those that fit in the k servers, and emit the difference to what runs now (preemptions first,
  then starts); ``serve_by_need`` is the same step for ServerFilling's service order (by decreasing
  need over a prefix);
* time-dependent job quantities (attained and remaining service).
"""

from __future__ import annotations

from msj_gym.core.access import (
    class_need,
    class_running,
    class_waiting,
    first_waiting_of_class,
    is_running,
    job_class,
    job_id,
    last_start,
    next_waiting_of_class,
    now,
    num_arrived,
    num_classes,
    num_departures,
    num_in_system,
    num_preemptions,
    num_running,
    num_servers,
    num_starts,
    preempt,
    remaining_work,
    running_index,
    running_job,
    server_need,
    service_rate,
    service_received,
    start,
)
from msj_gym.core.jit import inline_jit

PACK_GREEDY, PACK_STOP = 0, 1
PACKINGS = ("greedy", "stop")


@inline_jit
def attained_now(view, s):
    """Service (work) received so far by the job in slot ``s``."""
    a = service_received(view, s)
    if is_running(view, s):
        a += (now(view) - last_start(view, s)) * service_rate(view, s)
    return a


@inline_jit
def remaining_now(view, sizes, s):
    """Remaining service (work) of the job in slot ``s`` (size-aware policies only)."""
    r = remaining_work(sizes, s)
    if is_running(view, s):
        r -= (now(view) - last_start(view, s)) * service_rate(view, s)
    return max(r, 0.0)


@inline_jit
def _lt(view, ka, sa, kb, sb):
    return ka < kb or (ka == kb and job_id(view, sa) < job_id(view, sb))


@inline_jit
def _sift_down_max(view, keys, slots, pos, m):
    k, s = keys[pos], slots[pos]
    while True:
        c = 2 * pos + 1
        if c >= m:
            break
        if c + 1 < m and _lt(view, keys[c], slots[c], keys[c + 1], slots[c + 1]):
            c += 1
        if not _lt(view, k, s, keys[c], slots[c]):
            break
        keys[pos], slots[pos] = keys[c], slots[c]
        pos = c
    keys[pos], slots[pos] = k, s


@inline_jit
def sort_ascending(view, keys, slots, m):
    """In-place sort of keys[:m] (and slots with them) into ascending (key, job id) order: insertion
    sort for short arrays, heapsort otherwise."""
    if m <= 24:
        for i in range(1, m):
            k, s = keys[i], slots[i]
            j = i - 1
            while j >= 0 and _lt(view, k, s, keys[j], slots[j]):
                keys[j + 1], slots[j + 1] = keys[j], slots[j]
                j -= 1
            keys[j + 1], slots[j + 1] = k, s
        return
    for pos in range((m // 2) - 1, -1, -1):
        _sift_down_max(view, keys, slots, pos, m)
    for end in range(m - 1, 0, -1):
        keys[0], keys[end] = keys[end], keys[0]
        slots[0], slots[end] = slots[end], slots[0]
        _sift_down_max(view, keys, slots, 0, end)


@inline_jit
def keep_smallest(view, keys, slots, m, cap, key, s):
    """Offer (key, s) to a max-heap holding the ``cap`` smallest entries seen; returns the new size."""
    if m < cap:
        keys[m], slots[m] = key, s
        pos = m
        while pos > 0:
            parent = (pos - 1) >> 1
            if not _lt(view, keys[parent], slots[parent], keys[pos], slots[pos]):
                break
            keys[pos], keys[parent] = keys[parent], keys[pos]
            slots[pos], slots[parent] = slots[parent], slots[pos]
            pos = parent
        return m + 1
    if _lt(view, key, s, keys[0], slots[0]):
        keys[0], slots[0] = key, s
        _sift_down_max(view, keys, slots, 0, m)
    return m


@inline_jit
def decision_still_valid(view, memo):
    """True if nothing but arrivals happened since the kernel's last complete decision, and that
    decision was applied in full. ``memo`` = [valid, departures, starts + preemptions expected, ...]."""
    return (
        memo[0] == 1.0
        and memo[1] == num_departures(view)
        and memo[2] == num_starts(view) + num_preemptions(view)
    )


@inline_jit
def remember_decision(view, memo, n, reusable):
    memo[0] = 1.0 if reusable else 0.0
    memo[1] = num_departures(view)
    memo[2] = num_starts(view) + num_preemptions(view) + n
    memo[3] = num_arrived(view)


@inline_jit
def fill_and_diff(view, cand, m, packing, marks, starts, actions):
    """Target set = the candidates ``cand[:m]`` (in priority order) that fit in the k servers, skipping
    a job that does not fit (``PACK_GREEDY``) or stopping at it (``PACK_STOP``). Writes the actions that
    turn the running set into the target set (preemptions, then starts) and returns their number.
    ``marks`` needs k entries, ``starts`` k entries; both are scratch."""
    nrun = num_running(view)
    for p in range(nrun):
        marks[p] = 0
    cap = num_servers(view)
    ns = 0
    for i in range(m):
        if cap == 0:
            break
        s = cand[i]
        need = server_need(view, s)
        if need <= cap:
            cap -= need
            if is_running(view, s):
                marks[running_index(view, s)] = 1
            else:
                starts[ns] = s
                ns += 1
        elif packing == PACK_STOP:
            break
    n = 0
    for p in range(nrun):
        if marks[p] == 0:
            n = preempt(actions, n, running_job(view, p))
    for i in range(ns):
        n = start(actions, n, starts[i])
    return n


@inline_jit
def _need_prefix(view, order, m, whole, group_of_class, ngroup, counts, gneed):
    """M of :func:`serve_by_need`: the shortest prefix of ``order[:m]`` whose server needs add up to at
    least k (all m jobs if none), found from the tail with the class counts if ``whole`` (and order[:m]
    holds every job in the system), else by a pass over the prefix. Writes the size of each need group
    in M to ``counts`` and the group's need to ``gneed``; returns (M's length, M's total need)."""
    k = num_servers(view)
    for g in range(ngroup):
        counts[g] = 0
        gneed[g] = 0
    total = 0
    if whole and m == num_in_system(view):
        for c in range(num_classes(view)):
            g = int(group_of_class[c])
            jobs = class_waiting(view, c) + class_running(view, c)
            counts[g] += jobs
            gneed[g] = class_need(view, c)
            total += jobs * class_need(view, c)
        mm = m
        while mm > 0:
            s = order[mm - 1]
            need = server_need(view, s)
            if total - need < k:
                break
            total -= need
            counts[int(group_of_class[job_class(view, s)])] -= 1
            mm -= 1
    else:
        mm = 0
        while mm < m and total < k:
            s = order[mm]
            g = int(group_of_class[job_class(view, s)])
            counts[g] += 1
            gneed[g] = server_need(view, s)
            total += gneed[g]
            mm += 1
    return mm, total


@inline_jit
def _preempt_unlisted(view, order, m, marks, actions, n):
    """Append preemptions of the running jobs missing from ``order[:m]`` altogether (not served either);
    returns the new ``n``. ``marks``: scratch, k entries."""
    nrun = num_running(view)
    for p in range(nrun):
        marks[p] = 0
    for i in range(m):
        s = order[i]
        if is_running(view, s):
            marks[running_index(view, s)] = 1
    for p in range(nrun):
        if marks[p] == 0:
            n = preempt(actions, n, running_job(view, p))
    return n


@inline_jit
def serve_by_need(
    view, order, m, whole, group_of_class, ngroup, packing, counts, gneed, marks, starts, actions
):
    """ServerFilling's service step over a priority order ``order[:m]``, which should hold every running
    job (one it lacks costs a pass over the running list). M is the shortest prefix whose server needs
    add up to at least k (all m jobs if none); M is served by decreasing need, within a need in
    ``order``'s order, packed ``PACK_GREEDY`` or ``PACK_STOP`` as ``fill_and_diff`` would, and the
    actions that turn the running set into the served set are written (preemptions, then starts).
    Returns (n, M's length, M's total need, M's smallest need).

    With ``whole`` (order[:m] is every job in the system) M is found from the tail: the class counts
    give every need group's size, and the jobs behind M are peeled off; otherwise by a pass over the
    prefix. Same-need jobs are taken in order while they fit, so need group g serves min(count_g,
    cap // need_g) jobs: the packing is O(groups) arithmetic and one pass over M picks the jobs.
    Scratch: ``marks`` and ``starts`` k entries, ``counts`` and ``gneed`` ``ngroup``."""
    k = num_servers(view)
    mm, total = _need_prefix(view, order, m, whole, group_of_class, ngroup, counts, gneed)
    cap = k
    full = True
    smallest = k
    for g in range(ngroup):
        c = counts[g]
        t = 0
        if c > 0:
            smallest = min(smallest, gneed[g])
            if full:
                t = min(c, cap // gneed[g])
                cap -= t * gneed[g]
                if t < c and packing == PACK_STOP:
                    full = False
        counts[g] = t  # from here on: how many more of group g are served
    n = 0
    ns = 0
    seen = 0
    for i in range(mm):
        s = order[i]
        g = int(group_of_class[job_class(view, s)])
        running = is_running(view, s)
        seen += 1 if running else 0
        if counts[g] > 0:
            counts[g] -= 1
            if not running:
                starts[ns] = s
                ns += 1
        elif running:
            n = preempt(actions, n, s)
    for i in range(mm, m):
        # Running jobs ranked behind M: M shrank when the ranks moved (see _sf_srpt), or a rank rose.
        s = order[i]
        if is_running(view, s):
            n = preempt(actions, n, s)
            seen += 1
    if seen < num_running(view):
        n = _preempt_unlisted(view, order, m, marks, actions, n)
    for i in range(ns):
        n = start(actions, n, starts[i])
    return n, mm, total, smallest


@inline_jit
def start_in_order(view, slots, m, free, actions):
    """Start the jobs ``slots[:m]`` in that order while each fits in the ``free`` servers (the first that
    does not blocks the rest). Returns (the number of starts written, the index of the first job not
    started, ``m`` if none, the servers still free)."""
    n = 0
    i = 0
    while i < m and server_need(view, slots[i]) <= free:
        n = start(actions, n, slots[i])
        free -= server_need(view, slots[i])
        i += 1
    return n, i, free


@inline_jit
def admit_fifo(view, c, free, limit, actions, n):
    """Append starts of class ``c``'s waiting jobs, oldest first, while they fit in ``free`` servers,
    at most ``limit`` of them; returns (n, free, started)."""
    need = class_need(view, c)
    s = first_waiting_of_class(view, c)
    started = 0
    while s != -1 and started < limit and need <= free:
        n = start(actions, n, s)
        free -= need
        started += 1
        s = next_waiting_of_class(view, s)
    return n, free, started
