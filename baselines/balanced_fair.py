"""The job-server compatibility model of Bonald & Comte (2017): FCFS on it (Sec. 2) and balanced fair
sharing by random service interruptions (Algorithm 1, Sec. 4), as decision kernels of the engine.

Model (Bonald & Comte (2017), Sec. 2). ``S`` servers of capacities ``C_s``; each job may use a set of servers
(its class's compatibility set, or ``d`` servers drawn at arrival: the workload's per-job attributes, read
from ``job_attribute(view, s, q)``). Jobs stand in one *service order* (the engine's job lists, sorted by
``ORDER``); each server serves the first job in that order that may use it, and a job is processed in
parallel by every server serving it, at the sum of their capacities. Under FCFS the service order is
the arrival order. The kernels tell the engine each job's server count and rate (``OP_SERVE``), so the
engine's clock, departures, capacity check and metrics are the ones every MSJ policy runs on.

Algorithm 1 (Bonald & Comte (2017), Sec. 4). Each server interrupts the job it serves after an exponential
time of rate
``C_s / theta``; the interrupted job releases all its servers and goes to the end of the order. A job
served at rate ``r`` is thus interrupted at rate ``r / theta``: after Exp(``theta``) *work*, whatever its
servers. The kernel draws that work (from the policy's own generator, at the job's arrival and after
each interruption; memorylessness makes the two descriptions the same process), hands it to the engine
as the job's budget (``OP_BUDGET``) when the job starts, and at the budget's expiry event requeues and
preempts the job (``OP_REQUEUE``, then a preemption). ``theta = sigma / m``, ``m`` the mean number of
interruptions per job; ``m = 0`` is FCFS.

Bookkeeping (``pdata``'s scratch, laid out by ``WORK``, kept across decisions and across slot growth,
see ``with_work``): per server the list of jobs in the system that may use it, in service order, whose
head is the job it serves; per job its servers, the number it holds and their total capacity. Each
decision updates the lists for what happened since the last one (departures, spent budgets, arrivals:
``O(d)`` per job involved, plus one pass over the servers at instants with a departure or an expiry) and
emits the jobs whose servers changed. The kernels are driven whole by the batch loop (they are not
prefix-consistent); in debug mode ``_compat_check`` recomputes the allocation from the engine's state
alone and compares."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from msj_gym.core import Param, Policy
from msj_gym.core.access import (
    budget_spent,
    field,
    first_in_system,
    free_servers,
    give_budget,
    in_system,
    int_value,
    is_running,
    is_waiting,
    job_attribute,
    job_class,
    job_id,
    last_in_system,
    next_in_system,
    num_arrived,
    num_departures,
    num_expiries,
    num_servers,
    preempt,
    prev_in_system,
    requeue,
    serve,
    server_need,
    service_rate,
    value,
)
from msj_gym.core.jit import inline_jit, kernel_jit
from msj_gym.core.layout import Layout, region
from msj_gym.core.record import Record
from msj_gym.core.state import PolicyData
from msj_gym.workloads.compat import CompatWorkload

MODEL = "compatibility"

# params: theta (mean work between interruptions, inf: never), d (servers per job, at most), b (node
# stride 2**b >= d), each server's capacity C_0 .. C_{S-1}, and the assignment: 0 = the servers the
# workload drew for each job, 1 = the lowest-scored of its class's pool (per class its d, ``choose``,
# and its pool as a C x S 0/1 table, ``pool``; the score's ``weights``, one per feature of
# SCORE_FEATURES: (1, 0, 0, 0) is the least-loaded choice)
FIELDS = Record(
    "theta", "d", "shift", "capacity", "assign", "choose", "pool", "weights", nonfinite=("theta",)
)
THETA, D, SHIFT, CAPACITY, ASSIGN, CHOOSE, POOL, WEIGHTS = FIELDS.ids
#: What the scored assignment weighs per server of the arriving job's pool, each scale-free: the jobs
#: allowed on it (least-loaded's count); the time to clear them, the sum over its list of one mean
#: size over each job's rate (its current one, or the capacity of all its servers if it waits);
#: that of the job it serves now alone; its own slowness, one over its capacity. Times are in mean
#: job sizes over unit capacity.
SCORE_FEATURES = ("jobs", "clearing_time", "serving_time", "slowness")
LEAST_LOADED = np.array([1.0, 0.0, 0.0, 0.0])  # the weights of the least-loaded choice: the count alone
# The bookkeeping (see the module docstring): per server (``S``) its list's head and tail (a node, -1:
# empty), then the instant's interrupted jobs, changed jobs (up to 2S + 1) and per-server counts; per job
# slot its servers, as nodes (the node of job s's q-th server is s * 2**b + q, so its slot is a shift),
# each node's next and previous in its server's list, and per slot the servers held, the stamps of the
# last decision that changed or interrupted it, its job id, its rate and its work until the next
# interruption. ``memo``: what the engine had counted at the last decision.
WORK = Layout(
    ints={
        "memo": "4",
        "head": "servers",
        "tail": "servers",
        "interrupted": "servers",
        "dirty": "2 * servers + 1",
        "taken": "servers",
        "allowed": "servers",
        "drawn": "servers",
        "node_server": "slots << shift",
        "node_next": "slots << shift",
        "node_prev": "slots << shift",
        "held": "slots",
        "dirty_stamp": "slots",
        "interrupt_stamp": "slots",
        "job_id": "slots",
    },
    floats={"rate": "slots", "fragment": "slots"},
    params=FIELDS,
)
(
    MEMO,
    HEAD,
    TAIL,
    INTERRUPTED,
    DIRTY,
    TAKEN,
    ALLOWED,
    DRAWN,
    NODE_SERVER,
    NODE_NEXT,
    NODE_PREV,
    HELD,
    DIRTY_STAMP,
    INTERRUPT_STAMP,
    JOB_ID,
    RATE,
    FRAGMENT,
) = WORK.ids
M_NARR, M_DONE, M_EXP, M_STAMP = 0, 1, 2, 3  # memo: arrivals, departures, expiries, last stamp


@inline_jit
def _parts(pdata):
    """Views of the bookkeeping's regions (``WORK``), all but the memo."""
    iw, fw = pdata.iwork, pdata.fwork
    return (
        region(iw, HEAD),
        region(iw, TAIL),
        region(iw, INTERRUPTED),
        region(iw, DIRTY),
        region(iw, TAKEN),
        region(iw, NODE_SERVER),
        region(iw, NODE_NEXT),
        region(iw, NODE_PREV),
        region(iw, HELD),
        region(iw, DIRTY_STAMP),
        region(iw, INTERRUPT_STAMP),
        region(iw, JOB_ID),
        region(fw, RATE),
        region(fw, FRAGMENT),
    )


@inline_jit
def _gain(mu, held, rate, dst, dlist, nd, stamp, g, v):
    """Job ``g`` becomes the head of server ``v``'s list: it holds ``v`` from now on."""
    held[g] += 1
    rate[g] += mu[v]
    if dst[g] != stamp:
        dst[g] = stamp
        dlist[nd] = g
        nd += 1
    return nd


@inline_jit
def _unlink(mu, d, sh, head, tail, srv, nxt, prv, held, rate, dst, dlist, nd, stamp, s):
    """Take job ``s`` out of every server list; a server it held passes to the next job in its list."""
    for q in range(d):
        node = (s << sh) + q
        v = srv[node]
        if v < 0:
            break
        p, x = prv[node], nxt[node]
        if p == -1:
            head[v] = x
            if x != -1:
                nd = _gain(mu, held, rate, dst, dlist, nd, stamp, x >> sh, v)
        else:
            nxt[p] = x
        if x == -1:
            tail[v] = p
        else:
            prv[x] = p
    held[s] = 0
    rate[s] = 0.0
    return nd


@inline_jit
def _append(mu, d, sh, head, tail, srv, nxt, prv, held, rate, dst, dlist, nd, stamp, s):
    """Put job ``s`` at the end of every list of its servers; it takes those nobody else may use."""
    for q in range(d):
        node = (s << sh) + q
        v = srv[node]
        if v < 0:
            break
        t = tail[v]
        prv[node] = t
        nxt[node] = -1
        tail[v] = node
        if t == -1:
            head[v] = node
            nd = _gain(mu, held, rate, dst, dlist, nd, stamp, s, v)
        else:
            nxt[t] = node
    return nd


@inline_jit
def _list_lengths(nserv, sh, head, nxt, count):
    """``count[v]``: the jobs in server ``v``'s list, i.e. in the system and allowed to use ``v``."""
    for v in range(nserv):
        k = 0
        node = head[v]
        while node != -1:
            k += 1
            node = nxt[node]
        count[v] = k


@inline_jit
def _server_score(v, count, head, nxt, sh, srv, rate, mu, d, w):
    """``w`` times :data:`SCORE_FEATURES` of server ``v`` (lower is better), for a job about to join
    its list; with weights (1, 0, 0, 0) it is the list's length itself."""
    score = w[0] * count[v]
    if w[1] != 0.0 or w[2] != 0.0:
        clearing = 0.0
        serving = 0.0
        node = head[v]
        while node != -1:
            k = node >> sh
            r = rate[k]
            if r <= 0.0:  # waiting: it will run on all its servers at best
                for q in range(d):
                    u = srv[(k << sh) + q]
                    if u < 0:
                        break
                    r += mu[u]
            if node == head[v]:
                serving = 1.0 / r
            clearing += 1.0 / r
            node = nxt[node]
        score += w[1] * clearing + w[2] * serving
    if w[3] != 0.0:
        score += w[3] / mu[v]
    return score


@inline_jit
def _pick_server(nserv, start, allowed, drawn, count, w, head, nxt, sh, srv, rate, mu, d):
    """The next server of an arriving job among the ``allowed`` ones (1/0 per server): the lowest score
    with weights ``w`` (with (1, 0, 0, 0) the fewest jobs), then the servers the workload ``drawn`` for
    the job (1/0), then the cyclic order from ``start``, the first server drawn. Shared by the decision
    rule and by :func:`next_assigned_server` (the same choice through ``CompatAssign-v0``)."""
    best = -1
    best_score = 0.0
    best_drawn = 0
    for o in range(nserv):
        v = (start + o) % nserv
        if allowed[v] == 0:
            continue
        score = _server_score(v, count, head, nxt, sh, srv, rate, mu, d, w)
        undrawn = 1 - drawn[v]
        if best == -1 or score < best_score or (score == best_score and undrawn < best_drawn):
            best, best_score, best_drawn = v, score, undrawn
    return best


@inline_jit
def _assign_servers(view, pdata, par, nserv, sh, srv, count, s):
    """Give job ``s`` the ``d`` servers of its class's pool that :func:`_pick_server` picks one after
    another, sorted; a class without random assignment keeps its fixed servers."""
    c = job_class(view, s)
    k = int(field(par, CHOOSE)[c])
    d = int_value(par, D)
    base = s << sh
    if k == 0:
        for q in range(d):
            srv[base + q] = job_attribute(view, s, q)
        return
    pool = field(par, POOL)
    allowed = region(pdata.iwork, ALLOWED)
    drawn = region(pdata.iwork, DRAWN)
    for v in range(nserv):
        allowed[v] = 1 if pool[c * nserv + v] != 0.0 else 0
        drawn[v] = 0
    for r in range(k):
        drawn[job_attribute(view, s, r)] = 1
    head = region(pdata.iwork, HEAD)
    nxt = region(pdata.iwork, NODE_NEXT)
    rate = region(pdata.fwork, RATE)
    w = field(par, WEIGHTS)
    mu = field(par, CAPACITY)
    start = job_attribute(view, s, 0)
    for q in range(d):
        srv[base + q] = -1
    for q in range(k):
        v = _pick_server(nserv, start, allowed, drawn, count, w, head, nxt, sh, srv, rate, mu, d)
        srv[base + q] = v
        allowed[v] = 0
    for q in range(1, k):  # sorted, as the environment writes a job's servers
        v = srv[base + q]
        r = q - 1
        while r >= 0 and srv[base + r] > v:
            srv[base + r + 1] = srv[base + r]
            r -= 1
        srv[base + r + 1] = v


@kernel_jit
def next_assigned_server(par, iwork, fwork, weights, allowed, drawn, start, count):
    """The server the scored assignment with ``weights`` (least-loaded with (1, 0, 0, 0)) picks next
    for the job about to arrive, among the ``allowed`` servers (1/0 per server; ``drawn``: 1 for the
    servers the workload drew for it, the first of them ``start``), from the scheduler's bookkeeping
    (``params``, ``iwork`` and ``fwork`` of ``compat-fcfs``'s policy data, kept by ``CompatAssign-v0``):
    the same choice as the decision rule's, so an agent following it through the environment runs
    exactly the native policy. ``count`` is scratch, one integer per server."""
    sh = int_value(par, SHIFT)
    d = int_value(par, D)
    head = region(iwork, HEAD)
    nxt = region(iwork, NODE_NEXT)
    srv = region(iwork, NODE_SERVER)
    rate = region(fwork, RATE)
    mu = field(par, CAPACITY)
    nserv = count.size
    _list_lengths(nserv, sh, head, nxt, count)
    return _pick_server(nserv, start, allowed, drawn, count, weights, head, nxt, sh, srv, rate, mu, d)


@inline_jit
def _compat_serve(view, pdata, actions):
    par = pdata.params
    nserv = num_servers(view)
    d = int_value(par, D)
    sh = int_value(par, SHIFT)
    theta = value(par, THETA)
    mu = field(par, CAPACITY)
    head, tail, ilist, dlist, taken, srv, nxt, prv, held, dst, ist, jid, rate, frag = _parts(pdata)
    memo = region(pdata.iwork, MEMO)
    stamp = memo[M_STAMP] + 1
    memo[M_STAMP] = stamp
    ni = 0
    nd = 0
    # Departures and spent budgets: each such job heads the list of a server it held.
    if num_departures(view) != memo[M_DONE] or num_expiries(view) != memo[M_EXP]:
        memo[M_DONE] = num_departures(view)
        memo[M_EXP] = num_expiries(view)
        for v in range(nserv):
            while head[v] >= 0:
                s = head[v] >> sh
                if not in_system(view, s) or job_id(view, s) != jid[s]:  # departed (slot maybe reused)
                    nd = _unlink(mu, d, sh, head, tail, srv, nxt, prv, held, rate, dst, dlist, nd, stamp, s)
                elif is_running(view, s) and budget_spent(view, s):  # Algorithm 1: interrupted
                    nd = _unlink(mu, d, sh, head, tail, srv, nxt, prv, held, rate, dst, dlist, nd, stamp, s)
                    ilist[ni] = s
                    ni += 1
                    ist[s] = stamp
                else:
                    break
    # Arrivals since the last decision: the last ones of the engine's order, oldest first.
    narr = num_arrived(view)
    new = narr - memo[M_NARR]
    memo[M_NARR] = narr
    if new > 0:
        assign = int_value(par, ASSIGN)
        if assign == 1:
            _list_lengths(nserv, sh, head, nxt, taken)
        s = last_in_system(view)
        for _ in range(new - 1):
            s = prev_in_system(view, s)
        while s != -1:
            if assign == 1:
                _assign_servers(view, pdata, par, nserv, sh, srv, taken, s)
                for q in range(d):
                    if srv[(s << sh) + q] >= 0:
                        taken[srv[(s << sh) + q]] += 1
            else:
                for q in range(d):
                    srv[(s << sh) + q] = job_attribute(view, s, q)  # the job's compatible servers
            jid[s] = job_id(view, s)
            held[s] = 0
            rate[s] = 0.0
            frag[s] = theta * pdata.rng.standard_exponential() if theta < np.inf else np.inf
            nd = _append(mu, d, sh, head, tail, srv, nxt, prv, held, rate, dst, dlist, nd, stamp, s)
            s = next_in_system(view, s)
    # Interrupted jobs join the end of the order behind this instant's arrivals, as the engine's
    # requeue puts them.
    for i in range(ni):
        s = ilist[i]
        frag[s] = theta * pdata.rng.standard_exponential()
        nd = _append(mu, d, sh, head, tail, srv, nxt, prv, held, rate, dst, dlist, nd, stamp, s)
    n = 0
    for i in range(ni):
        s = ilist[i]
        n = requeue(actions, n, s)
        n = preempt(actions, n, s)
    for i in range(nd):
        s = dlist[i]
        if held[s] == 0:
            continue
        if theta < np.inf and (ist[s] == stamp or is_waiting(view, s)):
            n = give_budget(actions, n, s, frag[s])
        n = serve(actions, n, s, held[s], rate[s])
    return n


@kernel_jit
def _compat_check(view, pdata):
    """0 if the allocation is the model's, computed from the engine's state alone: along the service
    order, every server serves the first job that may use it (idle if none may), a job runs iff it
    holds a server, on as many servers as it holds and at the sum of their capacities; and the
    kernel's lists agree."""
    par = pdata.params
    nserv = num_servers(view)
    d = int_value(par, D)
    sh = int_value(par, SHIFT)
    mu = field(par, CAPACITY)
    head, _, _, _, taken, srv, _, _, held, _, _, _, rate, _ = _parts(pdata)
    assign = int_value(par, ASSIGN)
    for v in range(nserv):
        taken[v] = 0
    s = first_in_system(view)
    while s != -1:
        n = 0
        r = 0.0
        for q in range(d):
            v = srv[(s << sh) + q] if assign == 1 else job_attribute(view, s, q)
            if srv[(s << sh) + q] != v:
                return 1
            if v < 0:
                break
            if taken[v] == 0:
                taken[v] = 1
                n += 1
                r += mu[v]
                if head[v] < 0 or head[v] >> sh != s:
                    return 2
        running = is_running(view, s)
        if running != (n > 0) or held[s] != n or abs(rate[s] - r) > 1e-9 * max(1.0, r):
            return 3
        if running and (server_need(view, s) != n or abs(service_rate(view, s) - r) > 1e-9 * max(1.0, r)):
            return 4
        s = next_in_system(view, s)
    idle = 0
    for v in range(nserv):
        if taken[v] == 0:
            if head[v] != -1:
                return 5
            idle += 1
    if idle != free_servers(view):
        return 6
    return 0


class _CompatPolicy(Policy):
    """What the compatibility-model kernels share: parameters, bookkeeping, its growth."""

    size_aware = False
    kernel = _compat_serve
    invariant = _compat_check
    models: ClassVar[tuple[str, ...]] = (MODEL,)
    decides_every_event = True  # its bookkeeping follows every arrival and departure
    work = WORK

    def theta(self, workload: CompatWorkload) -> float:
        """Mean work between two interruptions of a job (inf: never interrupted)."""
        return np.inf

    def assignment(self, workload: CompatWorkload) -> int:
        """How a job of a random-assignment class gets its servers: 0, those the workload drew for it
        (the paper's random assignment); 1, the lowest-scored ones of its class's pool
        (:meth:`score_weights`)."""
        return 0

    def score_weights(self) -> np.ndarray:
        """The weights of :data:`SCORE_FEATURES` in the scored assignment (unused by the drawn one)."""
        return np.zeros(len(SCORE_FEATURES))

    # a policy is prepared only for a workload of its own models (for_workload checks): narrower by design
    def prepare(self, workload: CompatWorkload, rng: np.random.Generator) -> PolicyData:  # type: ignore[override]
        if workload.model != MODEL:
            raise ValueError(
                f"policy {self.policy_id!r}: defined on the job-server compatibility model "
                f"(CompatWorkload), not on {type(workload).__name__}"
            )
        base = super().prepare(workload, rng)
        d = workload.max_degree
        shift = max(int(d - 1).bit_length(), 0)
        params = FIELDS.pack(
            theta=self.theta(workload),
            d=d,
            shift=shift,
            capacity=workload.capacities,
            assign=self.assignment(workload),
            choose=[c.choose for c in workload.classes],
            pool=[float(v in c.servers) for c in workload.classes for v in range(workload.num_servers)],
            weights=self.score_weights(),
        )
        # Interruption draws: child 0 of the policy's stream (stateless, so preparing twice for one
        # run gives the same stream).
        ss = rng.bit_generator.seed_seq
        # the run's policy stream is seeded by a SeedSequence (numpy's legacy seeding alone has none)
        assert isinstance(ss, np.random.SeedSequence)
        child = np.random.SeedSequence(ss.entropy, spawn_key=(*ss.spawn_key, 0), pool_size=ss.pool_size)
        return base._replace(params=params, rng=np.random.Generator(np.random.PCG64(child)))

    def action_words(self, num_servers: int) -> int:
        # per job interrupted: requeue (2) + preemption (1); per job served: budget (3) + serve (4)
        return 10 * num_servers + 2

    def with_work(self, pdata: PolicyData, num_slots: int, num_servers: int, num_classes: int) -> PolicyData:
        """Bookkeeping sized for ``num_slots`` slots (never fewer than it already holds), the existing
        one carried over: it must survive the engine's slot growth, where slots keep their numbers."""
        fresh = not WORK.laid_out(pdata)
        slots = max(int(num_slots), 1 if fresh else WORK.get(pdata, "held").size)
        out = WORK.with_work(pdata, slots, num_servers, num_classes, keep=True)
        if fresh:
            WORK.get(out, "head")[:] = -1  # empty server lists
            WORK.get(out, "tail")[:] = -1
        return out

    def busy_servers(self, pdata: PolicyData, num_servers: int) -> np.ndarray:
        """Which servers serve a job now (for observations)."""
        return WORK.get(pdata, "head") >= 0

    def serving_slots(self, pdata: PolicyData, num_servers: int) -> np.ndarray:
        """Per server, the engine slot of the job it serves now (-1: idle), for pictures."""
        head = WORK.get(pdata, "head")
        # a list head is a node s * 2**b + q of job slot s
        return np.where(head >= 0, head >> int(FIELDS.get(pdata.params, "shift")[0]), -1)


class CompatFCFS(_CompatPolicy):
    """FCFS on the job-server compatibility model of Bonald & Comte (2017), Sec. 2: every server serves
    the oldest job in the system that may use it, and a job is served in parallel, at the sum of
    their capacities, by every compatible server not busy with an earlier job (Algorithm 1 with
    m = 0), on a :class:`~msj_gym.workloads.compat.CompatWorkload`. Its id is ``compat-fcfs``: ``fcfs``
    is the multiserver-job rule (:class:`~msj_gym.baselines.fcfs.FCFS`).

    Non-preemptive (a job keeps its servers until it leaves; it gains the ones earlier jobs release);
    size-oblivious.
    """

    policy_id = "compat-fcfs"
    preemptive = False
    reference = "Bonald & Comte (2017), Sec. 2"
    interruptions_per_job = 0.0


class BalancedFair(_CompatPolicy):
    """Algorithm 1 (random service interruptions) of Bonald & Comte, *Balanced Fair Resource Sharing
    in Computer Clusters* (2017, Sec. 4), on the job-server compatibility model of Sec. 2.

    Each server interrupts the job it serves after an exponential time of rate C_s / theta; the
    interrupted job releases all its servers and goes to the end of the (single, virtual) queue, whose
    order each server follows: it serves the first job in the queue that may use it. The parameter is
    ``m = sigma / theta``, the mean number of interruptions per job (sigma the mean job size); ``m = 0``
    is FCFS, and as m grows the allocation tends to balanced fairness (Theorem 2), whose performance is
    insensitive to the job-size distribution beyond its mean.

    Reading: the timers are driven per unit of work (rate C_s / theta at each serving server adds up to
    the job's rate / theta), so a job is interrupted after Exp(theta) work, which is the same process;
    the engine raises the interruption as the expiry of the job's work budget. Runs only on a
    :class:`~msj_gym.workloads.compat.CompatWorkload` (see the module docstring for the kernel).

    Preemptive (interruptions, preempt-resume: work done is kept); size-oblivious.
    """

    policy_id = "balanced-fair"
    preemptive = True
    reference = "Bonald & Comte (2017), Sec. 4, Algorithm 1"
    params_spec: ClassVar[dict[str, Param]] = {
        "m": Param(
            float, 5.0, "mean number of service interruptions per job, m = sigma/theta (0: FCFS)", minimum=0.0
        )
    }

    @property
    def interruptions_per_job(self) -> float:
        return float(self.param_values["m"])

    def theta(self, workload: CompatWorkload) -> float:
        m = self.interruptions_per_job
        return workload.mean_size / m if m > 0 else np.inf


class CompatLeastLoaded(_CompatPolicy):
    """Least-loaded assignment, then FCFS, on the job-server compatibility model (not from the papers:
    a simple strong baseline beside their random assignment).

    Bonald & Comte (2017), Sec. 5, give each job of a random-assignment class (``choose = d``) ``d``
    servers drawn uniformly from its class's pool. This policy gives it instead the ``d`` servers of the
    pool that the fewest jobs in the system may use (the lengths of the servers' FCFS lists, arrivals
    included), a join-the-shortest-queue over compatible servers; ties go first to the servers the
    random assignment drew for the job, then in cyclic order from the first of them, so that on an
    empty system it is the random assignment, and every entrant still sees the same random numbers.
    The servers are fixed for the job's life, and served as :class:`CompatFCFS` serves.

    Non-preemptive; size-oblivious (it counts jobs, not work: it needs no job sizes). Defined on
    workloads with at least one random-assignment class (elsewhere there is nothing to assign and it
    would be ``compat-fcfs``). The same choice through ``CompatAssign-v0`` (scheduler ``fcfs``) is
    :class:`LeastLoadedAssignmentAgent`, with identical results.
    """

    policy_id = "compat-least-loaded"
    preemptive = False
    reference = "not from the papers: join-the-shortest-queue over compatible servers"
    interruptions_per_job = 0.0

    def assignment(self, workload: CompatWorkload) -> int:
        return 1

    def score_weights(self) -> np.ndarray:
        return LEAST_LOADED.copy()

    # a policy is asked only about a workload of its own models (for_workload checks): narrower by design
    def unsupported(self, workload: CompatWorkload) -> str | None:  # type: ignore[override]
        if workload.model == MODEL and not any(c.choose for c in workload.classes):
            return (
                f"policy {self.policy_id!r}: no class of {workload.name!r} has a random assignment "
                "(choose = d), so there is nothing to assign (it would be compat-fcfs)"
            )
        return None

    # a policy is prepared only for a workload of its own models (for_workload checks): narrower by design
    def prepare(self, workload: CompatWorkload, rng: np.random.Generator) -> PolicyData:  # type: ignore[override]
        self.require(workload)
        return super().prepare(workload, rng)


class CompatScoredAssignment(CompatLeastLoaded):
    """Scored assignment, then FCFS, on the job-server compatibility model (not from the papers: the
    decision rule of a learned assignment agent, whose weights a search fits to the environment).

    Each job of a random-assignment class gets, one after another, the ``d`` servers of its pool with
    the lowest score ``w . f``, ``f`` the server's :data:`SCORE_FEATURES` when the job arrives (the jobs
    allowed on it; the time to clear them, the sum of one mean size over each job's rate, the capacity
    of all its servers for a waiting one; the time of the job it serves; one over its capacity). Ties
    are broken as :class:`CompatLeastLoaded` breaks them, and with weights (1, 0, 0, 0) it is that
    policy, run for run. The servers are fixed for the job's life, and served as :class:`CompatFCFS`
    serves.

    Non-preemptive; size-oblivious (the times are expectations from the rates, never a job's size). Not
    registered by an id (its default is ``compat-least-loaded``): reached by its entry point
    (``msj_gym.baselines.balanced_fair:CompatScoredAssignment``) with its weights, as the agents of
    :mod:`msj_gym.agents.assign_search` run it.
    """

    policy_id = "compat-scored"
    reference = "not from the papers: a weighted score of the compatible servers"
    params_spec: ClassVar[dict[str, Param]] = {
        f"w_{name}": Param(float, float(w), f"weight of the server's {name.replace('_', ' ')}")
        for name, w in zip(SCORE_FEATURES, LEAST_LOADED, strict=True)
    }

    def score_weights(self) -> np.ndarray:
        return np.array([float(self.param_values[f"w_{name}"]) for name in SCORE_FEATURES])


class LeastLoadedAssignmentAgent:
    """:class:`CompatLeastLoaded`'s assignment through ``CompatAssign-v0`` (scheduler ``fcfs``): at each
    step, the server the policy would choose next (:func:`next_assigned_server`, the decision rule's own
    choice) from the scheduler's lists and the servers the workload drew for the arriving job
    (``info["drawn_servers"]``). With the same seed the episode is the native run of
    ``compat-least-loaded``."""

    def __init__(self, env: Any) -> None:
        self.env = env.unwrapped
        self.weights = LEAST_LOADED.copy()

    def predict(self, obs: Any, *args: Any, **kwargs: Any) -> tuple[int, None]:
        env = self.env
        pdata = env._sim.pdata
        n = env.workload.num_servers
        allowed = env.action_masks().astype(np.int64)  # the job's pool, less the servers chosen
        drawn = np.zeros(n, dtype=np.int64)
        drawn[env._drawn] = 1
        count = np.zeros(n, dtype=np.int64)
        args = (pdata.params, pdata.iwork, pdata.fwork, self.weights, allowed, drawn)
        return int(next_assigned_server(*args, env._drawn[0], count)), None


class ScoredAssignmentAgent(LeastLoadedAssignmentAgent):
    """:class:`CompatScoredAssignment`'s assignment with ``weights`` through ``CompatAssign-v0``
    (scheduler ``fcfs``): with the same seed the episode is the native run of that policy."""

    def __init__(self, env: Any, weights: Any) -> None:
        super().__init__(env)
        w = np.asarray(weights, dtype=np.float64)
        if w.shape != (len(SCORE_FEATURES),) or not np.all(np.isfinite(w)):
            raise ValueError(
                f"weights: expected {len(SCORE_FEATURES)} finite numbers ({', '.join(SCORE_FEATURES)}), "
                f"got {weights!r}"
            )
        self.weights = w
