"""Simulator state as a few flat NumPy arrays, shared by the compiled engine and the policies.

Memory stays flat however long the run: a job lives in a recycled *slot* from its arrival to its
departure (slot arrays grow only with the number of jobs present at once), future arrivals wait in a
ring buffer that the Python side refills chunk by chunk, and the metrics are accumulated online at each
departure (per-job records are optional). Every job also keeps its *id*, its arrival sequence number,
which is the last tie-break between simultaneous events, and its place in the service order (``ORDER``),
which orders the queues: the id itself unless a policy requeued the job.

Per-slot fields are columns of 2-D arrays indexed ``[slot, FIELD]``; scalars live in ``iv`` (int64) and
``fv`` (float64). The named constants below are module globals, which numba folds into compile-time
constants.

A policy never sees ``Sim`` itself: it gets a :class:`View` whose arrays are read-only (numba rejects a
write at compile time) and which holds no service-time information; size-aware policies also get
:class:`Sizes`.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

# --- job states ----------------------------------------------------------------------------------
FREE_SLOT, WAITING, RUNNING = 0, 1, 2

# --- columns of Sim.jf (observable per-slot floats) ----------------------------------------------
# RATE: work per unit time while the job runs (1.0 for every MSJ job); REMAINING and ATTAINED are in
# work, so a job started at t departs at t + REMAINING / RATE. BUDGET: work the job may still receive
# before the engine raises an expiry event for it (inf: none; NaN: spent, see ``engine``).
ARRIVAL, LAST_START, FIRST_START, ATTAINED, RATE, BUDGET = 0, 1, 2, 3, 4, 5
N_JF = 6
# --- columns of Sim.js (size information) --------------------------------------------------------
SERVICE, REMAINING, NOISE = 0, 1, 2
N_JS = 3
# --- columns of Sim.ji (per-slot integers) -------------------------------------------------------
# ORDER: the job's place in the service order, by which the job lists are sorted: its arrival sequence
# number, renewed when a policy requeues it (so ORDER = JOB_ID for every job never requeued). After the
# N_JI engine columns come the workload's per-job attributes (``Sim.ring_a``), from column JATTR on.
(
    JOB_ID,
    CLS,
    NEED,
    STATE,
    NPREEMPT,
    WNEXT,
    WPREV,
    CNEXT,
    CPREV,
    SNEXT,
    SPREV,
    RUNPOS,
    HEAPPOS,
    ORDER,
) = range(14)
N_JI = 14
JATTR = N_JI
# --- rows of Sim.ci (per-class integers) ---------------------------------------------------------
C_NEED, C_HEAD, C_TAIL, C_NWAIT, C_NRUN = range(5)
N_CI = 5
# --- columns of Sim.rec (optional per-job records, indexed by measured job) ----------------------
R_ARRIVAL, R_FIRST_START, R_DEPARTURE, R_SERVICE, R_CLASS, R_NPREEMPT, R_ATTAINED = range(7)
N_REC = 7

# --- Sim.iv slots --------------------------------------------------------------------------------
(
    I_K,  # number of servers
    I_FREE,  # idle servers
    I_NRUN,  # jobs in service
    I_NWAIT,  # jobs waiting
    I_NSYS,  # jobs in the system
    I_NARR,  # jobs arrived so far (= id of the next arrival)
    I_NGEN,  # jobs written to the arrival ring so far
    I_EXHAUSTED,  # 1 once the source will produce no more jobs
    I_WHEAD,
    I_WTAIL,  # waiting list (arrival order), slots
    I_SHEAD,
    I_STAIL,  # all jobs in the system (arrival order), slots
    I_HEAPN,  # departures scheduled
    I_MEAS_LO,
    I_MEAS_HI,  # measured jobs are ids in [lo, hi); -1 while not yet known
    I_MEAS_DONE,  # measured jobs departed
    I_DONE,  # all departures
    I_EVENTS,  # event instants processed
    I_STARTS,
    I_PREEMPTIONS,
    I_PREEMPTIVE,  # 1 if the running policy may preempt
    I_ERR,
    I_ERR_JOB,
    I_NCHECK,  # checkpoints recorded
    I_NCLASS,
    I_DECISIONS,  # decision epochs at which the policy acted
    I_FREE_HEAD,  # head of the free-slot list
    I_NFREE,  # free slots
    I_RECORD,  # 1 if per-job records are kept
    I_MAX_SYS,  # a run whose queue passes this many jobs is stopped as unstable
    I_SEQ,  # next service-order number (ORDER): arrivals and requeues draw from it
    I_EXPIRIES,  # budget expiry events so far
) = range(32)
N_IV = 32

# --- Sim.fv slots --------------------------------------------------------------------------------
(
    F_NOW,
    F_LAST,  # time up to which the time integrals are accumulated
    F_WIN_LO,
    F_WIN_HI,  # measurement window (time integrals only accumulate inside it)
    F_BUSY_AREA,  # integral of busy servers
    F_SYS_AREA,  # integral of jobs in the system
    F_WAIT_AREA,  # integral of waiting jobs
    F_HORIZON,  # horizon mode: arrivals at or after it are not measured (inf in arrival-count mode)
    F_WARM_TIME,  # horizon mode: arrivals before it are not measured
    F_RUN_AREA,  # integral of jobs in the system over the whole run, window or not (env rewards)
    F_TAU,  # the bounded slowdown's threshold tau (max(response / max(service, tau), 1)), a time
    F_FIRST_MEASURED,  # earliest arrival of a departed measured job (inf until one departs)
    F_LAST_MEASURED,  # latest departure of a measured job (-inf until one departs)
    F_MEAS_BSLD,  # sum of the measured departed jobs' bounded slowdowns (env rewards; = acc_f's total)
    F_MEAS_WAIT,  # sum of the measured departed jobs' waiting times (env rewards; = acc_f's total)
) = range(15)
N_FV = 16

# --- columns of Sim.acc_f[batch, class, :] and Sim.acc_i[batch, class, :] (online metrics) --------
A_RESP, A_WAIT, A_BSLD = 0, 1, 2  # A_BSLD: sum of bounded slowdowns
N_ACCF = 3
A_COUNT, A_WAITED, A_PREEMPT = 0, 1, 2
N_ACCI = 3

# --- engine status codes -------------------------------------------------------------------------
ST_EVENT, ST_NEED_ARRIVALS, ST_FINISHED, ST_ERROR, ST_NEED_SLOTS, ST_NEED_RECORDS, ST_OVERFLOW = (
    0,
    1,
    2,
    3,
    4,
    5,
    6,
)

# --- error codes (Sim.iv[I_ERR]) -----------------------------------------------------------------
E_NONE, E_START_NOT_WAITING, E_NO_CAPACITY, E_PREEMPT_NOT_RUNNING, E_PREEMPT_FORBIDDEN = 0, 1, 2, 3, 4
E_UNKNOWN_JOB, E_INVARIANT, E_STALL, E_BAD_OPERAND, E_NOT_IN_SYSTEM, E_POLICY_INVARIANT = 5, 6, 7, 8, 9, 10
ERROR_MESSAGES = {
    E_START_NOT_WAITING: "the policy tried to start slot {job}, which holds no waiting job",
    E_NO_CAPACITY: "the policy tried to start slot {job}, whose server need exceeds the idle servers",
    E_PREEMPT_NOT_RUNNING: "the policy tried to preempt slot {job}, which holds no running job",
    E_PREEMPT_FORBIDDEN: "a non-preemptive policy tried to preempt slot {job}",
    E_UNKNOWN_JOB: "the policy named slot {job}, which does not exist",
    E_INVARIANT: "simulator invariant violated after an event (detail code {job})",
    E_STALL: "the policy left {job} jobs waiting with every server idle and no event pending",
    E_BAD_OPERAND: (
        "the policy gave slot {job} an invalid server count, rate or budget (or an unknown action)"
    ),
    E_NOT_IN_SYSTEM: "the policy named slot {job}, which holds no job in the system",
    E_POLICY_INVARIANT: "the policy's own invariant violated after an event (detail code {job})",
}


class Sim(NamedTuple):
    """Mutable simulator state (engine-private)."""

    iv: np.ndarray  # int64[N_IV]
    fv: np.ndarray  # float64[N_FV]
    jf: np.ndarray  # float64[S, N_JF]
    js: np.ndarray  # float64[S, N_JS]
    ji: np.ndarray  # int64[S, N_JI]
    ci: np.ndarray  # int64[N_CI, C]
    run_list: np.ndarray  # int64[k]: slots of the running jobs, unordered
    heap_t: np.ndarray  # float64[k]: departure times (binary min-heap on (time, job id))
    heap_s: np.ndarray  # int64[k]: slots
    ring_t: np.ndarray  # float64[R]: arrival times of future jobs, by job id mod R
    ring_c: np.ndarray  # int64[R]: classes
    ring_s: np.ndarray  # float64[R]: service times
    ring_n: np.ndarray  # float64[R]: estimate noise
    ring_a: np.ndarray  # int64[R, A]: per-job attributes of future jobs (copied to ji[:, JATTR:])
    acc_f: np.ndarray  # float64[B, C, N_ACCF]: response / waiting / slowdown sums per batch and class
    acc_i: np.ndarray  # int64[B, C, N_ACCI]: counts per batch and class
    ck_key: np.ndarray  # float64[K]: checkpoint keys (job id in count mode, time in horizon mode)
    ck_nsys: np.ndarray  # int64[K]: jobs in system at each checkpoint
    rec: np.ndarray  # float64[M, N_REC]: optional per-job records (measured jobs, by id - lo)


class View(NamedTuple):
    """What every policy may read: read-only, no service times."""

    iv: np.ndarray
    fv: np.ndarray
    jf: np.ndarray
    ji: np.ndarray
    ci: np.ndarray
    run_list: np.ndarray


class Sizes(NamedTuple):
    """Service-time information, handed only to size-aware policies (read-only)."""

    js: np.ndarray


class PolicyData(NamedTuple):
    """A policy's own arrays: fixed ``params``, mutable ``state``, a 2-D lookup ``table``, pre-drawn
    ``uniforms`` (from the policy's own child stream), scratch space ``iwork`` / ``fwork`` (kernels
    may not allocate) and ``rng``, a ``numpy.random.Generator`` on the policy's own stream that a kernel
    may draw from while it runs (numba shares the generator's state with Python: the same draws in the
    same order whichever path drives the kernel)."""

    params: np.ndarray
    state: np.ndarray
    table: np.ndarray
    uniforms: np.ndarray
    iwork: np.ndarray
    fwork: np.ndarray
    rng: np.random.Generator


def _readonly(a: np.ndarray) -> np.ndarray:
    v = a.view()
    v.flags.writeable = False
    return v


def _link_free(ji: np.ndarray, lo: int, hi: int, head: int) -> int:
    """Chain slots lo..hi-1 in front of the free list ``head``; returns the new head."""
    ji[lo:hi, STATE] = FREE_SLOT
    ji[lo:hi, WNEXT] = np.arange(lo + 1, hi + 1)
    ji[hi - 1, WNEXT] = head
    return lo


def allocate(
    num_servers: int,
    class_needs: np.ndarray,
    *,
    slots: int,
    ring: int,
    num_batches: int,
    num_checkpoints: int,
    records: int = 0,
    job_attributes: int = 0,
) -> Sim:
    """A fresh, empty state; ``job_attributes`` integers per job are drawn with each arrival."""
    k = int(num_servers)
    nclass = int(class_needs.size)
    if ring & (ring - 1):
        raise ValueError(f"ring: expected a power of two, got {ring}")
    iv = np.zeros(N_IV, dtype=np.int64)
    iv[I_K] = k
    iv[I_FREE] = k
    iv[I_WHEAD] = iv[I_WTAIL] = iv[I_SHEAD] = iv[I_STAIL] = -1
    iv[I_MEAS_LO] = iv[I_MEAS_HI] = -1
    iv[I_NCLASS] = nclass
    iv[I_RECORD] = 1 if records > 0 else 0
    iv[I_MAX_SYS] = np.iinfo(np.int64).max
    fv = np.zeros(N_FV, dtype=np.float64)
    fv[F_WIN_LO] = np.inf
    fv[F_WIN_HI] = np.inf
    fv[F_HORIZON] = np.inf
    fv[F_FIRST_MEASURED] = np.inf
    fv[F_LAST_MEASURED] = -np.inf
    ci = np.zeros((N_CI, nclass), dtype=np.int64)
    ci[C_NEED] = class_needs
    ci[C_HEAD] = -1
    ci[C_TAIL] = -1
    if int(job_attributes) < 0:
        raise ValueError(f"job_attributes: expected an integer >= 0, got {job_attributes!r}")
    ji = np.full((slots, N_JI + int(job_attributes)), -1, dtype=np.int64)
    iv[I_FREE_HEAD] = _link_free(ji, 0, slots, -1)
    iv[I_NFREE] = slots
    return Sim(
        iv=iv,
        fv=fv,
        jf=np.zeros((slots, N_JF)),
        js=np.zeros((slots, N_JS)),
        ji=ji,
        ci=ci,
        run_list=np.full(k, -1, dtype=np.int64),
        heap_t=np.zeros(k),
        heap_s=np.full(k, -1, dtype=np.int64),
        ring_t=np.zeros(ring),
        ring_c=np.zeros(ring, dtype=np.int64),
        ring_s=np.zeros(ring),
        ring_n=np.zeros(ring),
        ring_a=np.full((ring, int(job_attributes)), -1, dtype=np.int64),
        acc_f=np.zeros((num_batches, nclass, N_ACCF)),
        acc_i=np.zeros((num_batches, nclass, N_ACCI), dtype=np.int64),
        ck_key=np.full(max(num_checkpoints, 1), np.inf),
        ck_nsys=np.zeros(max(num_checkpoints, 1), dtype=np.int64),
        rec=np.full((max(records, 1), N_REC), np.nan),
    )


def grow_slots(sim: Sim) -> Sim:
    """The same state with twice the slots; the new ones join the free list."""
    old = sim.ji.shape[0]
    new = 2 * old
    ji = np.full((new, sim.ji.shape[1]), -1, dtype=np.int64)
    ji[:old] = sim.ji
    sim.iv[I_FREE_HEAD] = _link_free(ji, old, new, int(sim.iv[I_FREE_HEAD]))
    sim.iv[I_NFREE] += new - old
    jf = np.zeros((new, N_JF))
    jf[:old] = sim.jf
    js = np.zeros((new, N_JS))
    js[:old] = sim.js
    return sim._replace(ji=ji, jf=jf, js=js)


def grow_records(sim: Sim, size: int) -> Sim:
    old = sim.rec.shape[0]
    if size <= old:
        return sim
    rec = np.full((size, N_REC), np.nan)
    rec[:old] = sim.rec
    return sim._replace(rec=rec)


def make_view(sim: Sim) -> View:
    return View(
        iv=_readonly(sim.iv),
        fv=_readonly(sim.fv),
        jf=_readonly(sim.jf),
        ji=_readonly(sim.ji),
        ci=_readonly(sim.ci),
        run_list=_readonly(sim.run_list),
    )


def make_sizes(sim: Sim) -> Sizes:
    return Sizes(js=_readonly(sim.js))
