"""Compiled one-decision-at-a-time stepping of the moldable loss simulator, the one step shared by
``MSJMoldable-v0`` and its batched vector env (:mod:`msj_gym.moldable.batch`).

:func:`step` applies the agent's allocation with the simulator's own ``_apply``, runs the same
``_advance`` as the batch loop to the next arrival that finds an idle server, and writes the
observation and the action mask (layout: see :class:`~msj_gym.env.moldable_env.MSJMoldableEnv`) into
preallocated buffers. Actions: ``0`` rejects the arriving job, ``k >= 1`` gives it ``k`` servers; an
action the mask rules out is taken as ``0`` and flagged in ``out[O_INVALID]``.
"""

from __future__ import annotations

from ..core.jit import inline_jit, kernel_jit
from .loss import DONE, I_IDLE, I_N, I_POS, REFILL, _advance, _apply

__all__ = ["N_OUT", "O_INVALID", "env_step", "observe", "step"]

# --- ``out`` (float64): set by one step
O_INVALID = 0
N_OUT = 1


@inline_jit
def observe(st, max_par, over, obs, mask):
    """Observation and mask of the state ``st`` (``over``: the episode has ended, no arrival to
    decide: only "reject" is valid). ``max_par[c]`` is class ``c``'s max parallelism ``d_c``."""
    iv = st.iv
    n = iv[I_N]
    idle = iv[I_IDLE]
    nc = st.q.shape[0]
    d = st.q.shape[1] - 1
    for j in range(obs.size):
        obs[j] = 0.0
    for j in range(mask.size):
        mask[j] = False
    obs[0] = idle / n
    mask[0] = True
    if not over:
        c = st.ac[iv[I_POS]]
        obs[1 + c] = 1.0
        for k in range(1, min(max_par[c], idle) + 1):
            mask[k] = True
    for c in range(nc):
        obs[1 + nc + c] = st.busy[c] / n
        for i in range(d):
            obs[1 + 2 * nc + c * d + i] = st.q[c, i + 1] / n


@inline_jit
def step(st, action, max_par, obs, mask, out):
    """Give the pending arrival ``action`` servers (``-1``: no action, only advance), advance to the
    next decision and observe it. Returns ``_advance``'s outcome: ``PENDING`` (a decision is due),
    ``REFILL`` (the caller refills the arrival chunk and steps again with ``-1``; nothing observed) or
    ``DONE`` (the run is over; observed as such)."""
    if action >= 0:
        k = action
        if not mask[k]:
            out[O_INVALID] = 1.0
            k = 0
        _apply(st, k)
    r = _advance(st)
    if r != REFILL:
        observe(st, max_par, r == DONE, obs, mask)
    return r


@kernel_jit
def env_step(st, action, max_par, obs, mask, out):
    """:func:`step` for one environment (``MSJMoldable-v0``)."""
    return step(st, action, max_par, obs, mask, out)
