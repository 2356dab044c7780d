"""Compiled one-action-at-a-time stepping of the engine, for the Gymnasium environments.

The batch path (``engine.run_batch``) asks a policy for a whole decision at every event. An agent
instead acts through an action mode (:mod:`msj_gym.env.act`: one job at a time, or a class priority
that makes the whole decision), and only where a decision exists: the step of the env's modes
(:func:`step_for`) applies one action, then (after "wait", a priority, or when nothing more can be
decided at this instant) runs the same ``advance`` as the batch path through the events at which
nothing can be decided, collecting the reward on the way (:func:`reward_paid`), and finally writes
the observation (:mod:`msj_gym.env.observe`) and the action mask into preallocated buffers. The
layout of its parameter arrays is :mod:`msj_gym.env.layout`'s.

A decision exists when some job waits and either one of the waiting jobs fits in the idle servers or
(preemptive variant) some job runs; with priority actions, also some priority must change the running
jobs (decisions where none would are passed over, as "wait"). This module does not import gymnasium.
"""

from __future__ import annotations

import functools
from typing import Any

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
from .act import (
    action_family,
    apply_job_action,
    apply_job_start,
    apply_priority_action,
    apply_priority_starts,
    encode_action,
    priority_offered,
    write_job_mask,
    write_priority_mask,
)
from .layout import (
    ACT_JOBS,
    CLASS_FEATURES,
    EP_ACTIONS,
    EP_ADVISE,
    EP_EVERY_EVENT,
    EP_OBS,
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
from .observe import OBSERVATION_WRITERS

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
    "num_actions",
    "observation_size",
    "reward_paid",
    "step_for",
    "step_of",
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


def _pieces(observation: int, actions: int, preemptive: bool) -> tuple[Any, Any, Any, Any]:
    """The compiled pieces of one observation code and one action code in an env that may preempt or
    not: the observation writer, the mask writer, the action's application and the test that some
    priority changes anything (``None`` for job actions)."""
    if action_family(actions) == ACT_JOBS:
        apply = apply_job_action if preemptive else apply_job_start
        return OBSERVATION_WRITERS[observation], write_job_mask, apply, None
    apply = apply_priority_action if preemptive else apply_priority_starts
    return OBSERVATION_WRITERS[observation], write_priority_mask, apply, priority_offered


@functools.cache
def _assembled(observation: int, family: int, preemptive: bool) -> Any:
    write_obs, write_mask, apply_action, priority_offered = _pieces(observation, family, preemptive)
    jobs = family == ACT_JOBS  # frozen into the code: numba drops the other family's branch untyped

    @internal_jit(python=True)
    def step(sim, action, ep, fpar, obs, mask, out, work):
        """Apply env action ``action`` (``-1``: none, resume advancing after a Python-side request),
        advance to the next decision epoch, write observation and mask. ``mask`` must hold the mask
        of the current state: an action it rules out is counted in ``out[O_INVALID]`` and treated as
        "wait". Returns the engine status: ``ST_EVENT`` once a decision is due, else what
        ``advance`` asked for. With ``OBSERVE_ONLY`` it only writes the observation and mask of the
        current state. A job action that leaves something to decide at this instant stays at it; a
        priority makes the whole decision. The advisor's action is never passed here: the Python
        side applies it, then steps with ``-1``."""
        preemptive = ep[EP_PREEMPTIVE] != 0
        move = action != OBSERVE_ONLY  # one call of each writer below: their code is inlined once
        if action > 0:
            if mask[action]:
                if apply_action(sim, ep, action, work) != E_NONE:
                    return ST_ERROR
                if jobs:
                    move = not can_decide(sim, preemptive)
                else:
                    move = True
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
                if jobs:
                    if can_decide(sim, preemptive):
                        break
                elif can_decide(sim, preemptive) and priority_offered(sim, ep, work):
                    break
        write_obs(sim, ep, fpar, obs, work)
        write_mask(sim, ep, mask, work)
        return ST_EVENT

    return step


def step_for(observation: int, actions: int, preemptive: bool) -> Any:
    """The compiled step of an env whose ``ep[EP_OBS]`` is ``observation``, ``ep[EP_ACTIONS]`` is
    ``actions`` and ``ep[EP_PREEMPTIVE]`` is ``preemptive``, assembled from that observation's writer
    and that action family's mask, application and decision test, and from nothing else: a cold start
    compiles only the modes it uses (the step with every mode took 13 s to compile, the default
    modes' 9 s; an env that never preempts does not compile the preemption: its first episode
    took 12 % less). One implementation of the step: the single env calls it from Python, the
    batched step of :mod:`msj_gym.env.batch` and the branch player of :mod:`msj_gym.env.branches`
    inline it. Both priority modes share one step."""
    return _assembled(observation, action_family(actions), bool(preemptive))


def step_of(ep: Any) -> Any:
    """:func:`step_for` the modes written in ``ep``."""
    return step_for(int(ep[EP_OBS]), int(ep[EP_ACTIONS]), ep[EP_PREEMPTIVE] != 0)
