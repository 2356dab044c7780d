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

Every accessor is compiled inline into its caller (LLVM inlines it), so reading through a name costs
what reading the array does.
"""

from __future__ import annotations

from .jit import inline_jit
from .state import (
    ARRIVAL,
    ATTAINED,
    C_HEAD,
    C_NEED,
    C_NRUN,
    C_NWAIT,
    CLS,
    CNEXT,
    F_NOW,
    I_FREE,
    I_K,
    I_NRUN,
    I_NWAIT,
    I_WHEAD,
    JOB_ID,
    NEED,
    REMAINING,
    SERVICE,
    WNEXT,
)

__all__ = [
    "arrival_time",
    "class_need",
    "class_running",
    "class_waiting",
    "first_waiting",
    "first_waiting_of_class",
    "free_servers",
    "job_class",
    "job_id",
    "next_waiting",
    "next_waiting_of_class",
    "now",
    "num_classes",
    "num_running",
    "num_servers",
    "num_waiting",
    "preempt",
    "remaining_work",
    "running_job",
    "server_need",
    "service_received",
    "service_time",
    "start",
]


# --- the system ------------------------------------------------------------------------------------
@inline_jit
def now(view):
    """The current time."""
    return view.fv[F_NOW]


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
def num_classes(view):
    """Number of job classes."""
    return view.ci.shape[1]


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
def server_need(view, s):
    """The servers the job needs (holds, while it runs)."""
    return view.ji[s, NEED]


@inline_jit
def arrival_time(view, s):
    """When the job arrived."""
    return view.jf[s, ARRIVAL]


@inline_jit
def service_received(view, s):
    """Work the job has received so far (its age in service: size-oblivious policies may read it)."""
    return view.jf[s, ATTAINED]


@inline_jit
def service_time(sizes, s):
    """The job's service time (size-aware policies only: they alone are handed ``sizes``)."""
    return sizes.js[s, SERVICE]


@inline_jit
def remaining_work(sizes, s):
    """The job's work still to do, as of its last start or preemption (size-aware policies only)."""
    return sizes.js[s, REMAINING]


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
