"""The job-server compatibility model (Bonald & Comte, 003 Sec. 2 and 4) on the engine's state.

Model. ``S`` servers of capacities ``C_s``; each job may use a set of servers (its class's
compatibility set, or ``d`` servers drawn at arrival). Jobs stand in one *service order*; each server
serves the first job in that order that may use it, and a job is processed in parallel by every server
serving it, at the sum of their capacities (rate-additive pooled service instead of the MSJ model's
fixed server need). Under FCFS the service order is the arrival order.

Algorithm 1 (003 Sec. 4, the ``balanced-fair`` scheduler): each server interrupts the job it serves
after an exponential time of rate ``C_s / theta``; the interrupted job releases all its servers and
goes to the end of the order. A job served at rate ``r`` is therefore interrupted at rate ``r / theta``:
per unit of *work* received at rate 1 / theta, whatever its servers. The loop uses exactly that: each job
carries the work left until its next interruption, drawn Exp(``theta``) at arrival and after each
interruption (memorylessness makes the two descriptions the same process), and its next event is
whichever of completion and interruption its work reaches first. ``theta = sigma / m`` with ``m`` the
mean number of interruptions per job; ``m = 0`` is FCFS.

State. The run lives in the engine's :class:`~msj_gym.core.state.Sim` with its conventions: slots,
arrival ring, (batch, class) accumulators, checkpoints, per-job records, measurement windows, and the
engine's own helpers for arrivals (``_arrive``), departures and measurement (``_depart``), time
integrals, the departure heap and the job lists. Differences, all inside this module:

* the ``S``-list (``SNEXT``/``SPREV``) is the service order (interrupted jobs move to its tail);
* ``LAST_START`` is the time of the job's last rate change, ``REMAINING`` its work left and
  ``ATTAINED`` the work received (not the time in service);
* a job is ``RUNNING`` while at least one server serves it; ``NEED`` is 0 (servers are tracked one by
  one in :class:`Pool`) and ``I_FREE`` counts idle servers, so utilisation is the busy-server share;
* the heap key of a running job is the time its work reaches completion or its next interruption.

The MSJ engine's loop and its policies are untouched: the compatibility model is its own small loop
(``run_pooled``) over the same state, one event at a time. (Fallback noted in the README: the
allocation of servers is the model's, so there is no per-event decision for a policy kernel to make.)
"""

from __future__ import annotations

import dataclasses
from typing import Any, NamedTuple

import numpy as np

from ..metrics.result import SimulationResult
from .engine import (
    _add_running,
    _arrive,
    _depart,
    _dequeue_waiting,
    _enqueue_waiting,
    _finished,
    _heap_push,
    _heap_remove,
    _integrate,
    _list_remove,
    _remove_running,
)
from .jit import inline_jit, kernel_jit
from .policy import Policy
from .simulator import SimulationError, Simulator
from .state import (
    ATTAINED,
    C_NEED,
    F_NOW,
    FIRST_START,
    HEAPPOS,
    I_EVENTS,
    I_EXHAUSTED,
    I_FREE,
    I_FREE_HEAD,
    I_HEAPN,
    I_K,
    I_MAX_SYS,
    I_MEAS_HI,
    I_MEAS_LO,
    I_NARR,
    I_NFREE,
    I_NGEN,
    I_NRUN,
    I_NSYS,
    I_NWAIT,
    I_PREEMPTIONS,
    I_RECORD,
    I_SHEAD,
    I_STAIL,
    I_STARTS,
    LAST_START,
    NPREEMPT,
    REMAINING,
    RUNNING,
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
)

__all__ = ["ST_DECIDE", "ST_NEED_DRAWS", "Pool", "allocate_pool", "check_pool", "grow_pool", "run_pooled"]

ST_NEED_DRAWS = 7  # the interruption draws ran out: the Python side refills Pool.expo
ST_DECIDE = 8  # with P_STOP set: the next event is an arrival whose servers an agent may choose

# Pool.iv slots
P_DMAX, P_EXP_POS, P_INTERRUPTIONS, P_ERR = range(4)
P_STOP = 4  # 1: return ST_DECIDE before each arrival until P_GO approves it (environment mode)
P_GO = 5  # 1: the next arrival's servers are final, process it
N_PIV = 8
# Pool.fv slots
P_THETA = 0  # mean work between interruptions (inf: FCFS)
P_AREA = 1  # time integral of the number of jobs in the system, over the whole run (rewards)
N_PFV = 4


class Pool(NamedTuple):
    """The per-server and per-job state of the compatibility model, beside :class:`Sim`."""

    iv: np.ndarray  # int64[N_PIV]
    fv: np.ndarray  # float64[N_PFV]
    mu: np.ndarray  # float64[S]: capacities C_s
    owner: np.ndarray  # int64[S]: slot served by each server, -1 if idle
    srv: np.ndarray  # int64[slots, dmax]: each job's servers, -1 padded
    rate: np.ndarray  # float64[slots]: current service rate (sum of its servers' capacities)
    frag: np.ndarray  # float64[slots]: work left until the job's next interruption
    ring_srv: np.ndarray  # int64[R, dmax]: servers of future jobs, by job id mod R
    expo: np.ndarray  # float64[E]: Exp(1) draws for the interruptions (the policy's stream)
    mark: np.ndarray  # int64[S]: scratch of the invariant check


def allocate_pool(
    capacities: np.ndarray, dmax: int, *, slots: int, ring: int, theta: float, draws: int
) -> Pool:
    iv = np.zeros(N_PIV, dtype=np.int64)
    iv[P_DMAX] = dmax
    iv[P_EXP_POS] = draws  # empty: the first use asks for a refill
    fv = np.zeros(N_PFV)
    fv[P_THETA] = theta
    return Pool(
        iv=iv,
        fv=fv,
        mu=np.asarray(capacities, dtype=np.float64).copy(),
        owner=np.full(len(capacities), -1, dtype=np.int64),
        srv=np.full((slots, dmax), -1, dtype=np.int64),
        rate=np.zeros(slots),
        frag=np.zeros(slots),
        ring_srv=np.full((ring, dmax), -1, dtype=np.int64),
        expo=np.zeros(draws),
        mark=np.zeros(len(capacities), dtype=np.int64),
    )


def grow_pool(pool: Pool, slots: int) -> Pool:
    """The per-slot arrays resized to ``slots`` (after the engine state grew its slots)."""
    old = pool.srv.shape[0]
    srv = np.full((slots, pool.srv.shape[1]), -1, dtype=np.int64)
    srv[:old] = pool.srv
    rate = np.zeros(slots)
    rate[:old] = pool.rate
    frag = np.zeros(slots)
    frag[:old] = pool.frag
    return pool._replace(srv=srv, rate=rate, frag=frag)


# ---------------------------------------------------------------------------------------------------


@inline_jit
def _settle(sim, pool, s, t):
    """Account the work job ``s`` received at its current rate since its last rate change."""
    r = pool.rate[s]
    if r > 0.0:
        done = (t - sim.jf[s, LAST_START]) * r
        sim.js[s, REMAINING] -= done
        pool.frag[s] -= done
        sim.jf[s, ATTAINED] += done
    sim.jf[s, LAST_START] = t


@inline_jit
def _schedule(sim, pool, s, t):
    """(Re)key job ``s`` in the heap at the time its work reaches completion or interruption."""
    if sim.ji[s, HEAPPOS] >= 0:
        _heap_remove(sim, s)
    work = min(max(sim.js[s, REMAINING], 0.0), max(pool.frag[s], 0.0))
    _heap_push(sim, s, t + work / pool.rate[s])


@inline_jit
def _draw(pool):
    """Work until the next interruption: theta * Exp(1) (inf for FCFS, which draws nothing)."""
    theta = pool.fv[P_THETA]
    if theta == np.inf:
        return np.inf
    p = pool.iv[P_EXP_POS]
    pool.iv[P_EXP_POS] = p + 1
    return theta * pool.expo[p]


@inline_jit
def _grant(sim, pool, s, t):
    """Give job ``s`` every idle server it may use; start it if it was waiting. Returns the number of
    servers granted."""
    got = 0
    gain = 0.0
    for q in range(pool.srv.shape[1]):
        v = pool.srv[s, q]
        if v < 0:
            break
        if pool.owner[v] == -1:
            pool.owner[v] = s
            gain += pool.mu[v]
            got += 1
    if got == 0:
        return 0
    sim.iv[I_FREE] -= got
    _settle(sim, pool, s, t)
    pool.rate[s] += gain
    if sim.ji[s, STATE] == WAITING:
        _dequeue_waiting(sim, s)
        _add_running(sim, s)
        if np.isnan(sim.jf[s, FIRST_START]):
            sim.jf[s, FIRST_START] = t
        sim.iv[I_STARTS] += 1
    _schedule(sim, pool, s, t)
    return got


@inline_jit
def _release(sim, pool, s):
    """Free every server of job ``s``; returns how many it held."""
    n = 0
    for q in range(pool.srv.shape[1]):
        v = pool.srv[s, q]
        if v < 0:
            break
        if pool.owner[v] == s:
            pool.owner[v] = -1
            n += 1
    sim.iv[I_FREE] += n
    pool.rate[s] = 0.0
    return n


@inline_jit
def _reassign(sim, pool, start, released, t):
    """Algorithm 1's scan: walk the service order from slot ``start`` and give the released servers to
    the first jobs that may use them (an idle server is compatible with no job ahead of ``start``)."""
    c = start
    while c != -1 and released > 0:
        released -= _grant(sim, pool, c, t)
        c = sim.ji[c, SNEXT]


@inline_jit
def _complete(sim, pool, t):
    """The job at the top of the heap reached completion or its next interruption at ``t``. Returns
    (slot where Algorithm 1's scan starts, servers released)."""
    iv, ji = sim.iv, sim.ji
    s = sim.heap_s[0]
    departs = sim.js[s, REMAINING] <= pool.frag[s]  # both fall at the same rate: compare before settling
    _settle(sim, pool, s, t)
    nxt = ji[s, SNEXT]
    released = _release(sim, pool, s)
    if departs:
        sim.js[s, REMAINING] = 0.0
        _depart(sim, s, t)  # heap, running set, service order, measurement, slot
        return nxt, released
    # Interruption: back to the end of the service order with a fresh interruption draw.
    _heap_remove(sim, s)
    _remove_running(sim, s)
    _enqueue_waiting(sim, s)
    sim.js[s, REMAINING] = max(sim.js[s, REMAINING], 0.0)
    ji[s, NPREEMPT] += 1
    iv[I_PREEMPTIONS] += 1
    pool.iv[P_INTERRUPTIONS] += 1
    pool.frag[s] = _draw(pool)
    if iv[I_STAIL] != s:
        iv[I_SHEAD], iv[I_STAIL] = _list_remove(ji, SNEXT, SPREV, iv[I_SHEAD], iv[I_STAIL], s)
        tail = iv[I_STAIL]
        ji[tail, SNEXT] = s
        ji[s, SPREV] = tail
        ji[s, SNEXT] = -1
        iv[I_STAIL] = s
    return (nxt if nxt != -1 else s), released


@inline_jit
def _pooled_arrive(sim, pool, j, t):
    """Job ``j`` joins the end of the service order; returns its slot."""
    s = sim.iv[I_FREE_HEAD]
    _arrive(sim, j, t)  # slot from the free list, service-order tail, waiting list, checkpoints
    r = j & (sim.ring_t.size - 1)
    for q in range(pool.srv.shape[1]):
        pool.srv[s, q] = pool.ring_srv[r, q]
    pool.rate[s] = 0.0
    pool.frag[s] = _draw(pool)
    sim.jf[s, LAST_START] = t
    return s


@inline_jit
def _pooled_advance(sim, pool):
    """One event (a completion, an interruption or an arrival), or a request to the Python side."""
    iv, fv = sim.iv, sim.fv
    if _finished(iv):
        return ST_FINISHED
    if pool.fv[P_THETA] < np.inf and pool.iv[P_EXP_POS] >= pool.expo.size:
        return ST_NEED_DRAWS
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
        return ST_FINISHED
    arrival = ta < td  # simultaneous events: completions first, as in the engine
    if arrival:
        if pool.iv[P_STOP] != 0 and pool.iv[P_GO] == 0:
            return ST_DECIDE
        if iv[I_NSYS] + 1 > iv[I_MAX_SYS]:
            return ST_OVERFLOW
        if iv[I_NFREE] < 1:
            return ST_NEED_SLOTS
        if iv[I_RECORD] != 0 and iv[I_MEAS_HI] < 0 and iv[I_MEAS_LO] >= 0:
            if narr + 1 - iv[I_MEAS_LO] > sim.rec.shape[0]:
                return ST_NEED_RECORDS
    _integrate(sim, t)
    pool.fv[P_AREA] += (t - fv[F_NOW]) * iv[I_NSYS]
    fv[F_NOW] = t
    iv[I_EVENTS] += 1
    if arrival:
        pool.iv[P_GO] = 0
        start = _pooled_arrive(sim, pool, narr, t)
        released = sim.iv[I_K]  # the new job takes whichever of its servers are idle
    else:
        start, released = _complete(sim, pool, t)
    _reassign(sim, pool, start, released, t)
    return ST_EVENT


@kernel_jit
def check_pool(sim, pool):
    """0 if the allocation is the model's, else a detail code: every server serves the first job in
    the service order that may use it (or idles if none may), rates are the sums of the capacities
    served, and the running / waiting split and counters match. Uses ``pool.mark`` as scratch."""
    ji = sim.ji
    nserv = pool.mu.size
    taken = pool.mark
    for v in range(nserv):
        taken[v] = 0
    s = sim.iv[I_SHEAD]
    nrun = 0
    nsys = 0
    while s != -1:
        nsys += 1
        rate = 0.0
        for q in range(pool.srv.shape[1]):
            v = pool.srv[s, q]
            if v < 0:
                break
            if taken[v] == 0:
                taken[v] = 1
                if pool.owner[v] != s:
                    return 1
                rate += pool.mu[v]
            elif pool.owner[v] == s:
                return 2
        if abs(rate - pool.rate[s]) > 1e-9 * max(1.0, rate):
            return 3
        if (rate > 0) != (ji[s, STATE] == RUNNING):
            return 4
        if rate > 0:
            nrun += 1
        s = ji[s, SNEXT]
    if nsys != sim.iv[I_NSYS] or nrun != sim.iv[I_NRUN] or nsys - nrun != sim.iv[I_NWAIT]:
        return 5
    idle = 0
    for v in range(nserv):
        if taken[v] == 0:
            if pool.owner[v] != -1:
                return 6
            idle += 1
    if idle != sim.iv[I_FREE] or sim.iv[I_HEAPN] != nrun or sim.iv[I_K] != nserv:
        return 7
    return 0


@kernel_jit
def run_pooled(sim, pool, debug):
    """Run the compatibility model until the Python side is needed (status codes of the engine, plus
    :data:`ST_NEED_DRAWS`, and :data:`ST_DECIDE` in environment mode). With ``debug`` the allocation
    is checked after every event; a violation returns ``ST_ERROR`` with the detail code in
    ``pool.iv[P_ERR]``."""
    while True:
        status = _pooled_advance(sim, pool)
        if status != ST_EVENT:
            return status
        if debug:
            detail = check_pool(sim, pool)
            if detail != 0:
                pool.iv[P_ERR] = detail
                return ST_ERROR


# ---------------------------------------------------------------------------------------------------
# The Python face


class PooledSimulator(Simulator):
    """One seeded run of a compatibility-model scheduler on a
    :class:`~msj_gym.workloads.compat.CompatWorkload`; measurement options, results and records as in
    :class:`~msj_gym.core.Simulator` (whose feeding, growth and summary code it reuses).

    The scheduler is any policy declaring ``interruptions_per_job`` (the ``m`` of Algorithm 1):
    ``fcfs`` (0) or ``balanced-fair``. The stability condition of Theorem 1 is checked first; an
    unstable system raises unless ``allow_unstable=True``. ``record_jobs`` records' ``service_received``
    is the work received, and ``first_start`` the first time any server served the job.

    Metrics: ``mean_waiting_time`` is response time minus size (at unit capacity), not a wait in
    queue; ``policy_metrics`` adds ``interruptions_per_job`` and per class the mean service rate
    ``service_rate.NAME`` = sigma / delta_i (003 eq. 9).
    """

    DRAWS = 1 << 15

    def __init__(self, workload: Any, policy: Policy, *, allow_unstable: bool = False, **kwargs: Any) -> None:
        from ..analysis.balanced_fairness import stability_violation

        if not hasattr(workload, "capacities") or not hasattr(workload, "max_degree"):
            raise TypeError(
                f"workload: expected a compatibility-graph CompatWorkload, got {type(workload).__name__}"
            )
        m = getattr(policy, "interruptions_per_job", None)
        if m is None:
            raise ValueError(
                f"policy {getattr(policy, 'policy_id', policy)!r} is not defined on the compatibility model; "
                "use 'fcfs' or 'balanced-fair'"
            )
        if not allow_unstable:
            why = stability_violation(workload)
            if why is not None:
                raise ValueError(f"workload {workload.name!r} is unstable (003 Theorem 1): {why}")
        self.interruptions = float(m)
        super().__init__(workload, policy, **kwargs)

    def _setup(self) -> None:
        wl = self.workload
        theta = wl.mean_size / self.interruptions if self.interruptions > 0 else np.inf
        self.pool = allocate_pool(
            np.asarray(wl.capacities),
            wl.max_degree,
            slots=1024,
            ring=2 * self.CHUNK,
            theta=theta,
            draws=self.DRAWS,
        )
        super()._setup()
        self.sim.ci[C_NEED] = 0  # servers are tracked one by one in the pool, not counted by need
        self._draw_rng = np.random.Generator(np.random.PCG64(self.policy_seed.spawn(1)[0]))

    def _feed(self) -> None:
        ngen = int(self.sim.iv[I_NGEN])
        super()._feed()
        m = int(self.sim.iv[I_NGEN]) - ngen
        if m > 0:
            pos = (ngen + np.arange(m)) & (self.sim.ring_t.size - 1)
            self.pool.ring_srv[pos] = self.source.last_servers[:m]

    def handle(self, status: int) -> bool:
        if status == ST_NEED_DRAWS:
            self.pool.expo[:] = self._draw_rng.standard_exponential(self.pool.expo.size)
            self.pool.iv[P_EXP_POS] = 0
            return True
        more = super().handle(status)
        if self.sim.ji.shape[0] > self.pool.srv.shape[0]:
            self.pool = grow_pool(self.pool, self.sim.ji.shape[0])
        return more

    def run(self) -> SimulationResult:
        while True:
            status = run_pooled(self.sim, self.pool, self.debug)
            if status == ST_ERROR and self.pool.iv[P_ERR] != 0:
                raise SimulationError(
                    f"compatibility model: allocation invariant {int(self.pool.iv[P_ERR])} violated at "
                    f"t={self.sim.fv[F_NOW]:.6g}"
                )
            if not self.handle(status):
                return self.result()

    def result(self) -> SimulationResult:
        res = super().result()
        sigma = self.workload.mean_size
        extra: dict[str, Any] = {
            "interruptions_per_job": res.preemptions_per_job,
            "interruption_parameter_m": self.interruptions,
        }
        for name, c in res.per_class.items():
            extra[f"service_rate.{name}"] = sigma / c.mean_response_time if c.count else float("nan")
        return dataclasses.replace(res, policy_metrics={**res.policy_metrics, **extra})
