"""Hand-off between the main thread and the worker threads of a batched step, without waking threads.

A worker thread runs a compiled loop (``nogil``) that polls its slots of ``ctl`` (int64, ``CTL_WIDTH``
per worker: generation posted by the main thread, generation done, stop flag, idle flag) and steps
its share of the environments whenever a new generation is posted. Waking a sleeping thread through
the OS costs about as much as stepping a few hundred environments on this kind of machine; a polling
worker starts within a microsecond. After ``IDLE_POLLS`` empty polls (a few milliseconds) the loop
raises its idle flag and returns; the Python side of the worker then blocks on an event until the
main thread posts again (see :class:`WorkerPool`), so an idle environment costs nothing.

The flags are read and written with atomic loads and stores (acquire / release), and the idle hand-
shake uses sequentially consistent fences on both sides; all of it compiles to plain instructions, so
the kernels stay cacheable. The Python side clears a worker's idle flag and sets the stop flags with
ordinary stores: the idle flag is cleared by the worker's own thread, and a stop flag seen late only
delays the stop.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

from ..core.jit import inline_jit, kernel_jit

__all__ = ["CTL_WIDTH", "IDLE_POLLS", "WorkerPool", "publish", "wait_posted"]

CTL_POSTED, CTL_DONE, CTL_STOP, CTL_IDLE = 0, 1, 2, 3
CTL_WIDTH = 4
IDLE_POLLS = 20_000_000  # empty polls before a worker goes to sleep (measured: about 3 ms)


def _slot_pointer(context: Any, builder: Any, aryty: Any, arr: Any, i: Any) -> Any:
    ary = context.make_array(aryty)(context, builder, arr)
    return cgutils.get_item_pointer(context, builder, aryty, ary, [i], wraparound=False)


@intrinsic
def _load_acquire(typingctx: Any, arr: Any, i: Any) -> Any:
    def codegen(context: Any, builder: Any, sig: Any, args: Any) -> Any:
        return builder.load_atomic(_slot_pointer(context, builder, sig.args[0], *args), "acquire", 8)

    return types.int64(arr, i), codegen


@intrinsic
def _store_release(typingctx: Any, arr: Any, i: Any, value: Any) -> Any:
    def codegen(context: Any, builder: Any, sig: Any, args: Any) -> Any:
        ptr = _slot_pointer(context, builder, sig.args[0], args[0], args[1])
        v = context.cast(builder, args[2], sig.args[2], types.int64)
        builder.store_atomic(v, ptr, "release", 8)
        return context.get_dummy_value()

    return types.none(arr, i, value), codegen


@intrinsic
def _fence(typingctx: Any) -> Any:
    def codegen(context: Any, builder: Any, sig: Any, args: Any) -> Any:
        builder.fence("seq_cst")
        return context.get_dummy_value()

    return types.none(), codegen


@inline_jit
def wait_posted(ctl, w, seen):
    """Poll worker ``w``'s slots until a generation other than ``seen`` is posted (returned); -1 if the
    stop flag is set, -2 if nothing came for ``IDLE_POLLS`` polls (the idle flag is then up)."""
    base = w * CTL_WIDTH
    polls = 0
    while True:
        if _load_acquire(ctl, base + CTL_STOP) != 0:
            return -1
        g = _load_acquire(ctl, base + CTL_POSTED)
        if g != seen:
            return g
        polls += 1
        if polls >= IDLE_POLLS:
            _store_release(ctl, base + CTL_IDLE, 1)
            _fence()  # the flag is visible before the last look below (the poster fences too)
            g = _load_acquire(ctl, base + CTL_POSTED)
            if g != seen or _load_acquire(ctl, base + CTL_STOP) != 0:
                _store_release(ctl, base + CTL_IDLE, 0)
                polls = 0
                continue
            return -2


@inline_jit
def publish(ctl, w, g):
    """Mark generation ``g`` done for worker ``w``; every store of the step is visible before it."""
    _store_release(ctl, w * CTL_WIDTH + CTL_DONE, g)


@kernel_jit
def _post(ctl, g):
    """Post generation ``g`` to every worker; returns a mask of those asleep (to be woken)."""
    n = ctl.size // CTL_WIDTH
    for w in range(n):
        _store_release(ctl, w * CTL_WIDTH + CTL_POSTED, g)
    _fence()
    asleep = 0
    for w in range(n):
        if _load_acquire(ctl, w * CTL_WIDTH + CTL_IDLE) != 0:
            asleep |= 1 << w
    return asleep


@kernel_jit(nogil=True)
def _wait_done(ctl, g):
    """Spin until every worker has done generation ``g``, without the GIL (a worker woken from its
    sleep needs the GIL to get back into its loop)."""
    for w in range(ctl.size // CTL_WIDTH):
        while _load_acquire(ctl, w * CTL_WIDTH + CTL_DONE) != g:
            pass
    return 0


class WorkerPool:
    """Worker threads, each running ``kernel(ctl, w, *args_w)`` (a compiled ``nogil`` loop built on
    :func:`wait_posted` / :func:`publish`) with its own arguments ``args_w``. :meth:`run` posts a
    generation, calls ``main`` (the caller's own share) and waits for every worker."""

    def __init__(self, kernel: Callable[..., int], worker_args: Sequence[tuple[Any, ...]]) -> None:
        n = len(worker_args)
        self.ctl = np.zeros(n * CTL_WIDTH, dtype=np.int64)
        self._generation = 0
        self._wake = [threading.Event() for _ in range(n)]
        self._threads = [
            threading.Thread(
                target=_worker_main,
                args=(kernel, self.ctl, w, args, self._wake[w]),
                name=f"msj-vector-{w}",
                daemon=True,
            )
            for w, args in enumerate(worker_args)
        ]
        for t in self._threads:
            t.start()

    def run(self, main: Callable[[], None]) -> None:
        self._generation += 1
        g = self._generation
        asleep = int(_post(self.ctl, g))
        for w, event in enumerate(self._wake):
            if asleep >> w & 1:
                event.set()
        main()
        _wait_done(self.ctl, g)

    def alive(self) -> list[bool]:
        return [t.is_alive() for t in self._threads]

    def stop(self) -> None:
        self.ctl[CTL_STOP::CTL_WIDTH] = 1
        for event in self._wake:
            event.set()
        for t in self._threads:
            t.join()


def _worker_main(
    kernel: Callable[..., int], ctl: np.ndarray, w: int, args: tuple, wake: threading.Event
) -> None:
    while True:
        if kernel(ctl, w, *args) == -1:  # stopped
            return
        wake.wait()  # idle: the poster saw the flag (or will, fenced) and sets the event
        wake.clear()
        ctl[w * CTL_WIDTH + CTL_IDLE] = 0
