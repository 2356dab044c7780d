"""Named accessors of what a decision rule reads and writes, so that a policy needs none of the
engine's column constants or list bookkeeping.

A decision rule gets a read-only :class:`~msj_gym.core.state.View` (and, if size-aware,
:class:`~msj_gym.core.state.Sizes`). Jobs are named by their *slot* ``s`` (an integer, valid while the
job is in the system); lists end with ``-1``::

    s = first_waiting(view)            # the oldest waiting job (in service order)
    while s != -1:
        if server_need(view, s) <= free:
            n = start(actions, n, s)
        s = next_waiting(view, s)

A policy's own parameters come in ``pdata.params``, packed by a :class:`~msj_gym.core.record.Record`
in ``prepare`` and read by field id (an int constant of the policy's module)::

    FIELDS = Record("threshold", "keys")        # a scalar and a per-class array
    THRESHOLD, KEYS = FIELDS.ids
    ...
    limit = value(pdata.params, THRESHOLD)      # the scalar
    keys = field(pdata.params, KEYS)            # a 1-D view: keys[c]

Its scratch arrays (``pdata.iwork``, ``pdata.fwork``) are laid out by a
:class:`~msj_gym.core.layout.Layout` (the policy's ``work``) and read by region id::

    WORK = Layout(ints={"cursor": "classes"})   # one int per class
    (CURSOR,) = WORK.ids
    ...
    cursor = region(pdata.iwork, CURSOR)        # a 1-D view: cursor[c]

Every accessor is compiled inline into its caller (LLVM inlines it), so reading through a name costs
what reading the array does.
"""

from __future__ import annotations

import numpy as np

from .actions import bits_f64, emit_budget, emit_requeue, emit_serve
from .jit import inline_jit
from .layout import region
from .record import field, int_value, value
from .state import (
    ARRIVAL,
    ATTAINED,
    BUDGET,
    C_HEAD,
    C_NEED,
    C_NRUN,
    C_NWAIT,
    CLS,
    CNEXT,
    F_HORIZON,
    F_NOW,
    F_WARM_TIME,
    F_WIN_HI,
    F_WIN_LO,
    FREE_SLOT,
    I_DONE,
    I_EXHAUSTED,
    I_EXPIRIES,
    I_FREE,
    I_K,
    I_MEAS_HI,
    I_MEAS_LO,
    I_NARR,
    I_NGEN,
    I_NRUN,
    I_NSYS,
    I_NWAIT,
    I_PREEMPTIONS,
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
    RATE,
    REMAINING,
    RUNNING,
    RUNPOS,
    SERVICE,
    SNEXT,
    SPREV,
    STATE,
    WAITING,
    WNEXT,
    WPREV,
)

__all__ = [
    "arrival_time",
    "arrivals_ended",
    "budget_spent",
    "class_need",
    "class_running",
    "class_waiting",
    "estimate_noise",
    "field",
    "first_in_system",
    "first_waiting",
    "first_waiting_of_class",
    "free_servers",
    "give_budget",
    "in_measurement_window",
    "in_system",
    "int_value",
    "is_running",
    "is_waiting",
    "job_attribute",
    "job_attribute_float",
    "job_class",
    "job_id",
    "last_in_system",
    "last_start",
    "last_waiting",
    "measured_batch",
    "next_in_system",
    "next_waiting",
    "next_waiting_of_class",
    "now",
    "num_arrived",
    "num_classes",
    "num_departures",
    "num_expiries",
    "num_in_system",
    "num_preemptions",
    "num_running",
    "num_servers",
    "num_slots",
    "num_starts",
    "num_waiting",
    "preempt",
    "prev_in_system",
    "prev_waiting",
    "region",
    "remaining_work",
    "requeue",
    "running_index",
    "running_job",
    "serve",
    "server_need",
    "service_rate",
    "service_received",
    "service_time",
    "start",
    "value",
]


# --- the system ------------------------------------------------------------------------------------
@inline_jit
def now(view):
    """The current time."""
    return view.fv[F_NOW]


@inline_jit
def in_measurement_window(view, t):
    """True if time ``t`` lies in the measurement window, over which the run's time averages accumulate
    (never, while no window is set)."""
    return view.fv[F_WIN_LO] <= t < view.fv[F_WIN_HI]


@inline_jit
def num_servers(view):
    """``k``, the number of servers."""
    return view.iv[I_K]


@inline_jit
def free_servers(view):
    """Servers idle now."""
    return view.iv[I_FREE]


@inline_jit
def num_waiting(view):
    """Jobs waiting (all classes)."""
    return view.iv[I_NWAIT]


@inline_jit
def num_running(view):
    """Jobs in service (all classes)."""
    return view.iv[I_NRUN]


@inline_jit
def num_in_system(view):
    """Jobs in the system (waiting or running)."""
    return view.iv[I_NSYS]


@inline_jit
def num_classes(view):
    """Number of job classes."""
    return view.ci.shape[1]


@inline_jit
def num_slots(view):
    """Number of job slots: every slot ``s`` is in ``0 <= s < num_slots(view)`` (it grows with the system)."""
    return view.ji.shape[0]


# --- counts since the run began ----------------------------------------------------------------------
@inline_jit
def num_arrived(view):
    """Jobs arrived so far (also the id the next arrival will get)."""
    return view.iv[I_NARR]


@inline_jit
def arrivals_ended(view):
    """True once no job will arrive any more (the source is exhausted and all its jobs have arrived)."""
    return view.iv[I_EXHAUSTED] != 0 and view.iv[I_NARR] >= view.iv[I_NGEN]


@inline_jit
def num_departures(view):
    """Jobs departed so far."""
    return view.iv[I_DONE]


@inline_jit
def num_starts(view):
    """Starts so far (a preempted job's resumption counts again)."""
    return view.iv[I_STARTS]


@inline_jit
def num_preemptions(view):
    """Preemptions so far."""
    return view.iv[I_PREEMPTIONS]


@inline_jit
def num_expiries(view):
    """Expiries of work budgets so far (event instants at which a job's budget ran out)."""
    return view.iv[I_EXPIRIES]


# --- classes ---------------------------------------------------------------------------------------
@inline_jit
def class_need(view, c):
    """The server need of class ``c``."""
    return view.ci[C_NEED, c]


@inline_jit
def class_waiting(view, c):
    """Jobs of class ``c`` waiting."""
    return view.ci[C_NWAIT, c]


@inline_jit
def class_running(view, c):
    """Jobs of class ``c`` in service."""
    return view.ci[C_NRUN, c]


# --- measurement -----------------------------------------------------------------------------------
@inline_jit
def measured_batch(view, s, nb):
    """The batch ``0 <= b < nb`` in which the run's metrics count job ``s``, as the engine batches its
    measured jobs (in arrival order: by arrival time over the measured span in horizon mode, by job id
    otherwise), or -1 if the job is not measured (or the measured jobs are not yet known)."""
    j = view.ji[s, JOB_ID]
    lo, hi = view.iv[I_MEAS_LO], view.iv[I_MEAS_HI]
    if lo < 0 or j < lo or (hi >= 0 and j >= hi):
        return -1
    if view.fv[F_HORIZON] < np.inf:
        span = view.fv[F_HORIZON] - view.fv[F_WARM_TIME]
        b = int((view.jf[s, ARRIVAL] - view.fv[F_WARM_TIME]) / span * nb)
    else:
        b = (j - lo) * nb // (hi - lo)
    return min(max(b, 0), nb - 1)


# --- lists of jobs (slots; -1 ends a list) ---------------------------------------------------------
@inline_jit
def first_waiting(view):
    """The first waiting job in service order (arrival order unless a policy requeues), or -1."""
    return view.iv[I_WHEAD]


@inline_jit
def next_waiting(view, s):
    """The waiting job after ``s`` in service order, or -1."""
    return view.ji[s, WNEXT]


@inline_jit
def last_waiting(view):
    """The last waiting job in service order (the newest arrival, unless a policy requeues), or -1."""
    return view.iv[I_WTAIL]


@inline_jit
def prev_waiting(view, s):
    """The waiting job before ``s`` in service order, or -1."""
    return view.ji[s, WPREV]


@inline_jit
def first_waiting_of_class(view, c):
    """The first waiting job of class ``c`` in service order, or -1."""
    return view.ci[C_HEAD, c]


@inline_jit
def next_waiting_of_class(view, s):
    """The waiting job of ``s``'s class after ``s``, or -1."""
    return view.ji[s, CNEXT]


@inline_jit
def running_job(view, i):
    """The ``i``-th job in service, ``0 <= i < num_running(view)`` (in no particular order)."""
    return view.run_list[i]


@inline_jit
def running_index(view, s):
    """The place ``i`` of the running job ``s`` among the jobs in service: ``running_job(view, i) == s``."""
    return view.ji[s, RUNPOS]


@inline_jit
def first_in_system(view):
    """The first job in the system (waiting or running) in service order, or -1."""
    return view.iv[I_SHEAD]


@inline_jit
def next_in_system(view, s):
    """The job in the system after ``s`` in service order, or -1."""
    return view.ji[s, SNEXT]


@inline_jit
def last_in_system(view):
    """The last job in the system in service order (the newest, unless a policy requeues), or -1."""
    return view.iv[I_STAIL]


@inline_jit
def prev_in_system(view, s):
    """The job in the system before ``s`` in service order, or -1."""
    return view.ji[s, SPREV]


# --- one job -----------------------------------------------------------------------------------------
@inline_jit
def job_id(view, s):
    """The job's id: its arrival number, stable for its whole stay (a slot is reused after it leaves)."""
    return view.ji[s, JOB_ID]


@inline_jit
def job_class(view, s):
    """The job's class."""
    return view.ji[s, CLS]


@inline_jit
def job_attribute(view, s, q):
    """The job's ``q``-th per-job attribute, drawn with it by the workload (the compatibility model's
    ``q``-th compatible server, ``-1`` past the last one)."""
    return view.ji[s, JATTR + q]


@inline_jit
def job_attribute_float(view, s, q):
    """The job's ``q``-th per-job attribute read as the float64 whose bits it holds: how a workload
    passes a real number with each job, e.g. a trace's requested time (the index of that attribute is
    :func:`msj_gym.workloads.trace.requested_time_attribute` of the workload, known when the policy is
    prepared)."""
    return bits_f64(view.ji[s, JATTR + q])


@inline_jit
def server_need(view, s):
    """The servers the job needs (holds, while it runs)."""
    return view.ji[s, NEED]


@inline_jit
def in_system(view, s):
    """True if slot ``s`` holds a job (waiting or running); a departed job's slot holds none until reused."""
    return view.ji[s, STATE] != FREE_SLOT


@inline_jit
def is_running(view, s):
    """True if the job is in service."""
    return view.ji[s, STATE] == RUNNING


@inline_jit
def is_waiting(view, s):
    """True if the job waits (is in the system, not in service)."""
    return view.ji[s, STATE] == WAITING


@inline_jit
def budget_spent(view, s):
    """True if the job's work budget has run out (its expiry event has come and no new budget is set)."""
    return np.isnan(view.jf[s, BUDGET])


@inline_jit
def arrival_time(view, s):
    """When the job arrived."""
    return view.jf[s, ARRIVAL]


@inline_jit
def service_received(view, s):
    """Work the job had received by its last start, preemption or change of rate (its age in service,
    which size-oblivious policies may read); while it runs, ``service_rate`` times the time since
    ``last_start`` comes on top."""
    return view.jf[s, ATTAINED]


@inline_jit
def last_start(view, s):
    """While the job runs: when its current stretch of service began (its last start, resumption or
    change of rate), from which ``service_rate`` accrues on top of ``service_received``."""
    return view.jf[s, LAST_START]


@inline_jit
def service_rate(view, s):
    """Work the job receives per unit time while it runs (1 for every multiserver job)."""
    return view.jf[s, RATE]


@inline_jit
def service_time(sizes, s):
    """The job's service time (size-aware policies only: they alone are handed ``sizes``)."""
    return sizes.js[s, SERVICE]


@inline_jit
def remaining_work(sizes, s):
    """The job's work still to do, as of its last start or preemption (size-aware policies only)."""
    return sizes.js[s, REMAINING]


@inline_jit
def estimate_noise(sizes, s):
    """The job's runtime-estimate noise, in [0, 1), for policies modelling inexact user estimates of
    its service time (size-aware policies only)."""
    return sizes.js[s, NOISE]


# --- writing a decision --------------------------------------------------------------------------------
@inline_jit
def start(actions, n, s):
    """Append "start waiting job ``s``" to the decision of ``n`` words; returns the new length."""
    actions[n] = s
    return n + 1


@inline_jit
def preempt(actions, n, s):
    """Append "preempt running job ``s``" (preempt-resume: its work done is kept); returns the new
    length. Preemptions come before starts in a decision."""
    actions[n] = -s - 1
    return n + 1


@inline_jit
def serve(actions, n, s, servers, rate):
    """Append "job ``s`` now holds ``servers`` servers and is served at ``rate`` work per unit time"
    (a waiting job starts; a running one changes its allocation without a preemption); returns the new
    length. For models whose jobs run on a varying number of servers (the compatibility graph)."""
    return emit_serve(actions, n, s, servers, rate)


@inline_jit
def give_budget(actions, n, s, work):
    """Append "job ``s`` may receive ``work`` more work before an expiry event asks for a decision
    again" (``inf``: unlimited); returns the new length."""
    return emit_budget(actions, n, s, work)


@inline_jit
def requeue(actions, n, s):
    """Append "job ``s`` goes to the end of the service order"; returns the new length."""
    return emit_requeue(actions, n, s)
