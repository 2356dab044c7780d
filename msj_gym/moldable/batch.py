"""Many moldable loss simulators stepped together: the state of ``N`` environments in stacked arrays,
one compiled call per batched step.

:class:`BatchLossState` has the fields of :class:`~msj_gym.moldable.loss.LossState`, each with a leading
environment axis, except the speed-up table, which all environments share. A compiled loop takes the
views of one environment at a time as a ``LossState`` and runs the single environment's step
(:func:`msj_gym.moldable.stepping.step`), so environment ``i`` evolves exactly as a single
``MSJMoldable-v0`` with the same job stream and actions, whatever the other environments do.

What the simulator asks of Python (the next arrival chunk, the end of an episode) is reported per
environment in ``status``; the caller serves it and resumes those environments alone.
"""

from __future__ import annotations

import numpy as np

from ..core.jit import inline_jit, kernel_jit
from ..native.copying import copy1d, copy2d
from ..native.spin import CTL_DONE, CTL_WIDTH, publish, wait_posted
from .loss import LossState
from .stepping import step

__all__ = ["BatchLossState", "allocate_batch", "batch_reset", "batch_step", "batch_worker", "state_at"]


class BatchLossState(LossState):
    """The fields of :class:`~msj_gym.moldable.loss.LossState` for ``N`` environments (leading axis
    ``N``; ``speed`` is shared): the same names, so that adding a field to the state adds it here."""

    __slots__ = ()


def allocate_batch(template: LossState, num_envs: int) -> BatchLossState:
    """``num_envs`` copies of the fresh state ``template`` (their arrival chunks still to be filled)."""
    fields = {}
    for name, arr in template._asdict().items():
        if name == "speed":
            fields[name] = arr
        else:
            fields[name] = np.empty((num_envs, *arr.shape), dtype=arr.dtype)
            fields[name][:] = arr
    return BatchLossState(**fields)


@inline_jit
def state_at(b, i):
    """Environment ``i``'s state as a ``LossState`` of views."""
    return LossState(
        b.iv[i],
        b.fv[i],
        b.heap_t[i],
        b.heap_c[i],
        b.heap_k[i],
        b.busy[i],
        b.q[i],
        b.q_area[i],
        b.speed,
        b.at[i],
        b.ac[i],
        b.ax[i],
        b.au[i],
        b.b_arr[i],
        b.b_blk[i],
        b.b_time[i],
        b.alloc[i],
    )


@kernel_jit(nogil=True)
def batch_step(b, idx, actions, max_par, obs, mask, out, status):
    """:func:`~msj_gym.moldable.stepping.step` for each environment ``i`` in ``idx`` with action
    ``actions[i]`` (``-1``: no action, advance to the next decision); ``status[i]`` gets its outcome.
    Rows of ``obs``, ``mask`` and ``out`` are per environment. Releases the GIL: disjoint sets of
    environments may be stepped by concurrent threads, as no two environments share mutable state."""
    _step_each(b, idx, actions, max_par, obs, mask, out, status)
    return 0


@inline_jit
def _step_each(b, idx, actions, max_par, obs, mask, out, status):
    for q in range(idx.size):
        i = idx[q]
        status[i] = step(state_at(b, i), actions[i], max_par, obs[i], mask[i], out[i])


@kernel_jit(nogil=True)
def batch_worker(ctl, w, b, idx, actions, max_par, obs, mask, out, status):
    """A worker thread's loop: :func:`batch_step` of the environments ``idx`` each time the main thread
    posts a generation for worker ``w`` in ``ctl`` (see :mod:`msj_gym.native.spin`), until it is stopped."""
    seen = ctl[w * CTL_WIDTH + CTL_DONE]
    while True:
        g = wait_posted(ctl, w, seen)
        if g < 0:
            return g  # -1: stopped, -2: idle (the caller sleeps until the next post)
        _step_each(b, idx, actions, max_par, obs, mask, out, status)
        publish(ctl, w, g)
        seen = g


@kernel_jit
def batch_reset(b, t, idx):
    """Put each environment in ``idx`` back into the fresh state ``t`` (a ``LossState``; the arrival
    chunk is not copied, the caller fills the new episode's; the heap past its size is never read)."""
    for q in range(idx.size):
        i = idx[q]
        copy1d(b.iv[i], t.iv)
        copy1d(b.fv[i], t.fv)
        copy1d(b.busy[i], t.busy)
        copy2d(b.q[i], t.q)
        copy2d(b.q_area[i], t.q_area)
        copy2d(b.b_arr[i], t.b_arr)
        copy2d(b.b_blk[i], t.b_blk)
        copy2d(b.b_time[i], t.b_time)
        copy2d(b.alloc[i], t.alloc)
    return 0
