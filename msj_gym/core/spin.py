"""Hand-off between the main thread and the worker threads of a batched step, without waking threads.

A worker thread runs a compiled loop (``nogil``) that polls its row of ``ctl`` (int64 ``[workers, 3]``:
generation posted by the main thread, generation done by the worker, stop flag) and steps its share of
the environments whenever a new generation is posted. Waking a sleeping thread through the OS costs
about as much as stepping a few hundred environments on this kind of machine; a polling worker starts
within a microsecond. It yields the CPU on every poll and, after some milliseconds without work,
sleeps 1 ms between polls, so an idle environment (e.g. during a learner's gradient steps) costs a few
per cent of a core.

The polls call libc (``sched_yield``, ``usleep``) through ctypes. Besides yielding, an opaque call is a
compiler barrier: ``ctl`` is re-read at each poll, and the step's stores are issued before the done flag.
That suffices on x86-64, whose stores reach other cores in program order; elsewhere the hand-off would
need hardware fences, so :data:`SUPPORTED` is false there. Functions that call ctypes cannot be cached
by numba: the worker kernels compile once per process.
"""

from __future__ import annotations

import ctypes
import platform

from numba import njit

__all__ = ["CTL_DONE", "CTL_POSTED", "CTL_STOP", "publish", "wait_posted"]

CTL_POSTED, CTL_DONE, CTL_STOP = 0, 1, 2
_IDLE_POLLS = 10_000  # polls (each a sched_yield, 0.3-1 us) before backing off to 1 ms sleeps

_libc = ctypes.CDLL(None)
_sched_yield = _libc.sched_yield
_sched_yield.restype = ctypes.c_int
_sched_yield.argtypes = ()
_usleep = _libc.usleep
_usleep.restype = ctypes.c_int
_usleep.argtypes = (ctypes.c_uint,)

SUPPORTED = platform.machine() in ("x86_64", "AMD64")  # total store order: no hardware fence needed


@njit(inline="always", _nrt=False)
def wait_posted(ctl, w, seen):
    """Poll row ``w`` of ``ctl`` until a generation other than ``seen`` is posted (returned), or the
    stop flag is set (-1 is returned)."""
    polls = 0
    while True:
        if polls < _IDLE_POLLS:
            _sched_yield()
            polls += 1
        else:
            _usleep(1000)
        if ctl[w, CTL_STOP] != 0:
            return -1
        g = ctl[w, CTL_POSTED]
        if g != seen:
            return g


@njit(inline="always", _nrt=False)
def publish(ctl, w, g):
    """Mark generation ``g`` done on row ``w``, after every store of the step (the opaque call keeps
    the compiler from moving them past the flag)."""
    _sched_yield()
    ctl[w, CTL_DONE] = g
