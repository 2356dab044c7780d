"""Compiled one-action-at-a-time stepping of the engine, for the Gymnasium environments.

The batch path (``engine.run_batch``) asks a policy for a whole decision at every event. An agent
instead acts through an action mode (:mod:`msj_gym.env.act`: one job at a time, or a class priority
that makes the whole decision), and only where a decision exists: :func:`step` applies one action,
then (after "wait", a priority, or when nothing more can be decided at this instant) runs the same
``advance`` as the batch path through the events at which nothing can be decided, collecting the
reward on the way (:func:`reward_paid`), and finally writes the observation
(:mod:`msj_gym.env.observe`) and the action mask into preallocated buffers. The layout of its
parameter arrays is :mod:`msj_gym.env.layout`'s.

A decision exists when some job waits and either one of the waiting jobs fits in the idle servers or
(preemptive variant) some job runs; with priority actions, also some priority must change the running
jobs (decisions where none would are passed over, as "wait"). This module does not import gymnasium.
"""

from __future__ import annotations

from ..core.engine import advance, can_decide
from ..core.jit import internal_jit
from ..core.state import (
    C_NRUN,
    C_NWAIT,
    E_NONE,
    F_MEAS_BSLD,
    F_MEAS_WAIT,
    F_NOW,
    F_RUN_AREA,
    I_NSYS,
    ST_ERROR,
    ST_EVENT,
)
from .act import apply_action, encode_action, priority_offered, write_mask
from .layout import (
    ACT_JOBS,
    CLASS_FEATURES,
    EP_ACTIONS,
    EP_ADVISE,
    EP_EVERY_EVENT,
    EP_OBSJOBS,
    EP_PREEMPTIVE,
    EP_PWIN,
    EP_QWIN,
    EP_REVEAL,
    EP_REWARD,
    EP_WEIGHTED,
    N_EP,
    N_OUT,
    O_ELAPSED,
    O_INVALID,
    O_REWARD,
    OBSERVE_ONLY,
    QUEUE_FEATURES,
    REWARD_AREA,
    REWARD_SLOWDOWN,
    REWARD_WAITING,
    RUNNING_FEATURES,
    SYSTEM_FEATURES,
    num_actions,
    observation_size,
)
from .observe import observe_state

__all__ = [
    "CLASS_FEATURES",
    "EP_EVERY_EVENT",
    "EP_OBSJOBS",
    "EP_PREEMPTIVE",
    "EP_PWIN",
    "EP_QWIN",
    "EP_REVEAL",
    "EP_WEIGHTED",
    "N_EP",
    "N_OUT",
    "OBSERVE_ONLY",
    "O_ELAPSED",
    "O_INVALID",
    "O_REWARD",
    "QUEUE_FEATURES",
    "RUNNING_FEATURES",
    "SYSTEM_FEATURES",
    "encode_action",
    "env_step",
    "num_actions",
    "observation_size",
    "observe",
    "reward_paid",
    "step",
]


@internal_jit
def _load_now(sim, ep, fpar):
    """The (weighted) number of jobs in the system: the reward rate."""
    if ep[EP_WEIGHTED] == 0:
        return float(sim.iv[I_NSYS])
    ci = sim.ci
    nclass = ci.shape[1]
    total = 0.0
    for c in range(nclass):
        total += fpar[nclass + c] * (ci[C_NWAIT, c] + ci[C_NRUN, c])
    return total


@internal_jit(python=True)
def reward_paid(fv, ep):
    """What the episode has paid so far (unsigned, unscaled, unweighted), by ``ep[EP_REWARD]``: the time
    integral of the number of jobs in the system, or the sum of the bounded slowdowns or of the waiting
    times of the measured jobs that have left. The last two are the engine's own running totals (its
    ``_measure`` is the one place that computes a job's slowdown and wait), so that an episode's return
    is exactly what its result measures. ``fv`` is the state's ``Sim.fv``."""
    mode = ep[EP_REWARD]
    if mode == REWARD_SLOWDOWN:
        return fv[F_MEAS_BSLD]
    if mode == REWARD_WAITING:
        return fv[F_MEAS_WAIT]
    return fv[F_RUN_AREA]


@internal_jit
def observe(sim, ep, fpar, obs, mask, work):
    """Write the observation and the action mask of the current state (inlined into its callers;
    Python asks :func:`step` for it with ``OBSERVE_ONLY``)."""
    observe_state(sim, ep, fpar, obs, work)
    write_mask(sim, ep, mask, work)


@internal_jit(python=True)
def step(sim, action, ep, fpar, obs, mask, out, work):
    """Apply env action ``action`` (``-1``: none, resume advancing after a Python-side request), advance
    to the next decision epoch, write observation and mask. ``mask`` must hold the mask of the current
    state: an action it rules out is counted in ``out[O_INVALID]`` and treated as "wait". Returns the
    engine status: ``ST_EVENT`` once a decision is due, else what ``advance`` asked for. With
    ``OBSERVE_ONLY`` it only writes the observation and mask of the current state. A job action that
    leaves something to decide at this instant stays at it; a priority makes the whole decision.
    The advisor's action is never passed here: the Python side applies it, then steps with ``-1``.

    One implementation of the step: the single env calls it from Python (as :data:`env_step`), the
    batched step of :mod:`msj_gym.env.batch` inlines it."""
    preemptive = ep[EP_PREEMPTIVE] != 0
    jobs = ep[EP_ACTIONS] == ACT_JOBS
    move = action != OBSERVE_ONLY  # one call of observe below: its code is inlined once
    if action > 0:
        if mask[action]:
            if apply_action(sim, ep, action, work) != E_NONE:
                return ST_ERROR
            move = not jobs or not can_decide(sim, preemptive)
        else:
            out[O_INVALID] += 1.0
    elif action == 0 and not mask[0]:
        out[O_INVALID] += 1.0
    if move:
        fv = sim.fv
        while True:
            t0 = fv[F_NOW]
            rate = _load_now(sim, ep, fpar)
            paid = reward_paid(fv, ep)
            status = advance(sim)
            if status != ST_EVENT:
                return status
            dt = fv[F_NOW] - t0
            if ep[EP_REWARD] == REWARD_AREA:
                out[O_REWARD] -= rate * dt
            else:  # the measured jobs that left at this event, each once
                out[O_REWARD] -= reward_paid(fv, ep) - paid
            out[O_ELAPSED] += dt
            if ep[EP_EVERY_EVENT] != 0 or ep[EP_ADVISE] != 0:
                break
            if can_decide(sim, preemptive) and (jobs or priority_offered(sim, ep, work)):
                break
    observe(sim, ep, fpar, obs, mask, work)
    return ST_EVENT


# The single env's entry point is the step itself, not a kernel that calls it: such a kernel was one
# more LLVM optimisation and code generation of the whole inlined step (0.7 s of a cold start).
env_step = step
