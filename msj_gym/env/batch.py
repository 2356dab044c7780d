"""Many simulators stepped together: the state of ``N`` environments in stacked arrays, one compiled call
per batched step.

:class:`BatchSim` has the fields of :class:`~msj_gym.core.state.Sim`, each with a leading environment
axis (``iv[i]`` is environment ``i``'s ``Sim.iv``). A compiled loop takes the views of one environment
at a time as a ``Sim`` and runs the same inlined step as the single environment (the step of its
modes, :func:`msj_gym.env.stepping.step_of`), so environment ``i`` evolves exactly as a single
environment with the same job stream and actions, whatever the other environments do: no state is shared.

What the engine asks of Python (more arrivals, more slots, the end of an episode) is reported per
environment in ``status``; the caller serves it and resumes those environments alone.

This module does not import gymnasium.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from ..core import state as S
from ..core.jit import internal_jit, kernel_jit
from ..core.state import Sim
from ..native.copying import copy1d, copy2d, copy3d
from ..native.spin import CTL_DONE, CTL_WIDTH, publish, wait_posted
from .stepping import step_of

__all__ = [
    "BatchSim",
    "allocate_batch",
    "batch_reset",
    "batch_step",
    "batch_worker",
    "grow_batch_slots",
    "load_row",
    "sample_masked",
]


class BatchSim(Sim):
    """The fields of :class:`~msj_gym.core.state.Sim` for ``N`` environments (leading axis ``N``): the
    same names, so that adding a field to the state adds it here."""

    __slots__ = ()


def allocate_batch(template: Sim, num_envs: int, ring: int) -> BatchSim:
    """Room for ``num_envs`` copies of ``template`` (a fresh state), with an arrival ring of ``ring``
    entries each (a power of two). The environments still need :func:`batch_reset`."""
    if ring < 1 or ring & (ring - 1):
        raise ValueError(f"ring: expected a power of two, got {ring}")
    fields = {}
    for name, arr in template._asdict().items():
        if name.startswith("ring_"):
            fields[name] = np.zeros((num_envs, ring, *arr.shape[1:]), dtype=arr.dtype)
        else:
            fields[name] = np.empty((num_envs, *arr.shape), dtype=arr.dtype)
            fields[name][:] = arr
    return BatchSim(**fields)


def grow_batch_slots(batch: BatchSim) -> BatchSim:
    """Every environment with twice the slots, the new ones in front of its free list (what
    :func:`~msj_gym.core.state.grow_slots` does to one state)."""
    n, old = batch.ji.shape[0], batch.ji.shape[1]
    new = 2 * old
    ji = np.full((n, new, batch.ji.shape[2]), -1, dtype=np.int64)
    ji[:, :old] = batch.ji
    ji[:, old:new, S.STATE] = S.FREE_SLOT
    ji[:, old:new, S.WNEXT] = np.arange(old + 1, new + 1)
    ji[:, new - 1, S.WNEXT] = batch.iv[:, S.I_FREE_HEAD]
    batch.iv[:, S.I_FREE_HEAD] = old
    batch.iv[:, S.I_NFREE] += new - old
    jf = np.zeros((n, new, S.N_JF))
    jf[:, :old] = batch.jf
    js = np.zeros((n, new, S.N_JS))
    js[:, :old] = batch.js
    return batch._replace(ji=ji, jf=jf, js=js)


def load_row(batch: BatchSim, i: int, src: Sim) -> None:
    """Environment ``i``'s state becomes ``src`` (with as many job slots), all but the arrival ring,
    which the caller feeds."""
    for name, arr in src._asdict().items():
        if not name.startswith("ring_"):
            getattr(batch, name)[i] = arr


@internal_jit
def sim_at(b, i):
    """Environment ``i``'s state as a ``Sim`` of views."""
    return Sim(
        b.iv[i],
        b.fv[i],
        b.jf[i],
        b.js[i],
        b.ji[i],
        b.ci[i],
        b.run_list[i],
        b.heap_t[i],
        b.heap_s[i],
        b.ring_t[i],
        b.ring_c[i],
        b.ring_s[i],
        b.ring_n[i],
        b.ring_a[i],
        b.acc_f[i],
        b.acc_i[i],
        b.ck_key[i],
        b.ck_nsys[i],
        b.rec[i],
    )


@functools.cache
def _batch_kernels(step: Any) -> tuple[Any, Any]:
    # Called from Python and inlined into the worker: a kernel that only called it would be one more
    # LLVM optimisation and code generation of the whole inlined step on a cold start.
    @internal_jit(python=True, nogil=True)
    def batch_step(b, idx, actions, ep, fpar, obs, mask, out, work, status):
        """The env's step for each environment ``i`` in ``idx`` with action ``actions[i]`` (``-1``: no
        action, advance to the next decision); ``status[i]`` gets its engine status. Rows of
        ``fpar`` (the float parameters, which depend on the environment's load), ``obs``, ``mask``,
        ``out`` and ``work`` are per environment. Releases the GIL (``nogil``): disjoint sets of
        environments may be stepped by concurrent threads, as no two environments share state."""
        for q in range(idx.size):
            i = idx[q]
            status[i] = step(sim_at(b, i), actions[i], ep, fpar[i], obs[i], mask[i], out[i], work[i])
        return 0

    @kernel_jit(nogil=True)
    def batch_worker(ctl, w, b, idx, actions, ep, fpar, obs, mask, out, work, status):
        """A worker thread's loop: ``batch_step`` of the environments ``idx`` each time the main thread
        posts a generation for worker ``w`` in ``ctl`` (see :mod:`msj_gym.native.spin`), until it is
        stopped."""
        seen = ctl[w * CTL_WIDTH + CTL_DONE]
        while True:
            g = wait_posted(ctl, w, seen)
            if g < 0:
                return g  # -1: stopped, -2: idle (the caller sleeps until the next post)
            batch_step(b, idx, actions, ep, fpar, obs, mask, out, work, status)
            publish(ctl, w, g)
            seen = g

    return batch_step, batch_worker


def batch_step(ep: np.ndarray) -> Any:
    """The compiled batched step of environments whose modes are written in ``ep``
    (:func:`~msj_gym.env.stepping.step_of`), called as ``batch_step(ep)(b, idx, actions, ep, fpar,
    obs, mask, out, work, status)``: the env's step for each environment ``i`` in ``idx`` with action
    ``actions[i]`` (``-1``: none), its engine status in ``status[i]``. It releases the GIL, so
    disjoint sets of environments may be stepped by concurrent threads."""
    return _batch_kernels(step_of(ep))[0]


def batch_worker(ep: np.ndarray) -> Any:
    """The compiled loop of a worker thread for environments whose modes are written in ``ep``:
    ``batch_step(ep)`` of its environments each time the main thread posts a generation for it (see
    :mod:`msj_gym.native.spin`), until it is stopped."""
    return _batch_kernels(step_of(ep))[1]


@internal_jit
def copy_state(dst, src):
    """Every array of the state ``src`` into ``dst``, in place, but the arrival ring (the caller feeds
    it, or shares it). ``dst`` may have more job slots than ``src``: the extra ones go in front of its
    free list, as ``state.grow_slots`` puts them."""
    copy1d(dst.iv, src.iv)
    copy1d(dst.fv, src.fv)
    copy2d(dst.jf, src.jf)
    copy2d(dst.js, src.js)
    copy2d(dst.ji, src.ji)
    old, new = src.ji.shape[0], dst.ji.shape[0]
    if new > old:
        for s in range(old, new):
            dst.ji[s, S.STATE] = S.FREE_SLOT
            dst.ji[s, S.WNEXT] = s + 1
        dst.ji[new - 1, S.WNEXT] = src.iv[S.I_FREE_HEAD]
        dst.iv[S.I_FREE_HEAD] = old
        dst.iv[S.I_NFREE] = src.iv[S.I_NFREE] + new - old
    copy2d(dst.ci, src.ci)
    copy1d(dst.run_list, src.run_list)
    copy1d(dst.heap_t, src.heap_t)
    copy1d(dst.heap_s, src.heap_s)
    copy3d(dst.acc_f, src.acc_f)
    copy3d(dst.acc_i, src.acc_i)
    copy1d(dst.ck_key, src.ck_key)
    copy1d(dst.ck_nsys, src.ck_nsys)
    copy2d(dst.rec, src.rec)


@kernel_jit
def batch_reset(b, t, idx):
    """Put each environment in ``idx`` back into the fresh state ``t`` (a ``Sim`` with as many slots;
    its arrival ring is not copied: the caller feeds the new episode's jobs)."""
    for q in range(idx.size):
        copy_state(sim_at(b, idx[q]), t)
    return 0


@kernel_jit
def sample_masked(mask, u, actions):
    """For each row ``i`` of ``mask``, the valid action of rank ``floor(u[i] * valid count)`` (uniform
    among the valid actions for ``u[i]`` uniform in [0, 1)); ``-1`` where no action is valid."""
    n, m = mask.shape
    for i in range(n):
        count = 0
        for a in range(m):
            count += mask[i, a]
        if count == 0:
            actions[i] = -1
            continue
        r = min(int(u[i] * count), count - 1)
        for a in range(m):
            if mask[i, a]:
                if r == 0:
                    actions[i] = a
                    break
                r -= 1
    return 0
