"""Compiled one-action-at-a-time stepping of the engine, for the Gymnasium environments.

The batch path (``engine.run_batch``) asks a policy for a whole decision at every event. An agent
instead acts one job at a time, and only where a decision exists: :func:`env_step` applies one action,
then (after "wait", or when nothing more can be decided at this instant) runs the same ``advance`` as
the batch path through the events at which nothing can be decided, integrating the reward on the way,
and finally writes the observation and the action mask into preallocated buffers.

Actions (``ep`` holds the layout; ``C`` classes, ``W = ep[EP_QWIN]``, ``P = ep[EP_PWIN]``):

* ``0``: wait for the next event;
* ``1 + c*W + r`` (``r < W``): start the ``r``-th oldest waiting job of class ``c``;
* ``1 + C*W + c*P + r`` (``r < P``, preemptive only): preempt the ``r``-th youngest running job of
  class ``c`` (youngest = latest arrival).

A decision exists when some job waits and either one of the waiting jobs fits in the idle servers or
(preemptive variant) some job runs. This module does not import gymnasium.
"""

from __future__ import annotations

import numpy as np

from ..core.engine import advance, apply_one, can_decide
from ..core.jit import internal_jit, kernel_jit
from ..core.state import (
    ARRIVAL,
    ATTAINED,
    C_HEAD,
    C_NEED,
    C_NRUN,
    C_NWAIT,
    CLS,
    CNEXT,
    E_NONE,
    F_NOW,
    I_EXHAUSTED,
    I_FREE,
    I_HEAPN,
    I_K,
    I_NARR,
    I_NGEN,
    I_NRUN,
    I_NSYS,
    I_NWAIT,
    I_WHEAD,
    JOB_ID,
    LAST_START,
    NEED,
    REMAINING,
    RUNNING,
    ST_ERROR,
    ST_EVENT,
    STATE,
    WAITING,
    WNEXT,
)

# --- layout of the integer parameters ``ep`` -------------------------------------------------------
EP_PREEMPTIVE, EP_QWIN, EP_PWIN, EP_OBSJOBS, EP_REVEAL, EP_WEIGHTED, EP_EVERY_EVENT = range(7)
N_EP = 7
# --- ``fpar``: [0:C] mean service time per class, [C:2C] reward weight per class, [2C] mean need / k
# --- ``action`` of :func:`step` that only writes the observation and mask of the current state
OBSERVE_ONLY = -2
# --- ``out`` (float64): accumulated over one ``step`` call
O_REWARD, O_ELAPSED, O_INVALID = range(3)
N_OUT = 3
# --- per-feature widths of the flat observation
SYSTEM_FEATURES = 2
CLASS_FEATURES = 5
QUEUE_FEATURES = 4  # +1 with revealed sizes
RUNNING_FEATURES = 2  # +1 with revealed sizes (preemptive variant only)

__all__ = ["encode_action", "env_step", "num_actions", "observation_size", "observe", "step"]


def num_actions(num_classes: int, queue_window: int, preempt_window: int, preemptive: bool) -> int:
    return 1 + num_classes * queue_window + (num_classes * preempt_window if preemptive else 0)


def observation_size(
    num_classes: int, obs_jobs: int, preempt_window: int, preemptive: bool, reveal_sizes: bool
) -> int:
    n = SYSTEM_FEATURES + CLASS_FEATURES * num_classes + (QUEUE_FEATURES + reveal_sizes) * obs_jobs
    if preemptive:
        n += (RUNNING_FEATURES + reveal_sizes) * num_classes * preempt_window
    return n


@internal_jit
def _squash(x):
    # log1p first: queues and ages span orders of magnitude, and an unstable queue must stay visible
    lg = np.log1p(max(x, 0.0))  # max: a remaining time may round to a hair below 0
    return lg / (1.0 + lg)


@internal_jit
def _can_wait(sim):
    """True if waiting leads somewhere: a departure is scheduled or an arrival may still come."""
    iv = sim.iv
    return iv[I_HEAPN] > 0 or iv[I_NARR] < iv[I_NGEN] or iv[I_EXHAUSTED] == 0


@internal_jit
def _nth_waiting(sim, c, r):
    s = sim.ci[C_HEAD, c]
    while r > 0 and s != -1:
        s = sim.ji[s, CNEXT]
        r -= 1
    return s


@internal_jit
def _nth_youngest_running(sim, c, r):
    ji, run_list = sim.ji, sim.run_list
    nrun = sim.iv[I_NRUN]
    bound = np.iinfo(np.int64).max
    best = -1
    for _ in range(r + 1):
        best = -1
        best_id = -1
        for p in range(nrun):
            s = run_list[p]
            j = ji[s, JOB_ID]
            if ji[s, CLS] == c and best_id < j < bound:
                best, best_id = s, j
        if best == -1:
            return -1
        bound = best_id
    return best


@internal_jit
def _decode(sim, ep, action):
    """The engine action (slot ``s`` to start, ``-s-1`` to preempt) named by env action ``action``."""
    nclass = sim.ci.shape[1]
    w = ep[EP_QWIN]
    b = action - 1
    if b < nclass * w:
        s = _nth_waiting(sim, b // w, b % w)
        return s
    b -= nclass * w
    p = ep[EP_PWIN]
    s = _nth_youngest_running(sim, b // p, b % p)
    return -s - 1


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


@internal_jit
def _write_mask(sim, ep, mask):
    iv, ci = sim.iv, sim.ci
    nclass = ci.shape[1]
    w = ep[EP_QWIN]
    mask[0] = _can_wait(sim)
    free = iv[I_FREE]
    for c in range(nclass):
        nw = ci[C_NWAIT, c]
        fits = ci[C_NEED, c] <= free
        base = 1 + c * w
        for r in range(w):
            mask[base + r] = fits and r < nw
    if ep[EP_PREEMPTIVE] != 0:
        p = ep[EP_PWIN]
        base0 = 1 + nclass * w
        someone_waits = iv[I_NWAIT] > 0
        for c in range(nclass):
            nr = ci[C_NRUN, c]
            for r in range(p):
                mask[base0 + c * p + r] = someone_waits and r < nr


@internal_jit
def _write_obs(sim, ep, fpar, obs, work):
    iv, ci, ji, jf, js = sim.iv, sim.ci, sim.ji, sim.jf, sim.js
    nclass = ci.shape[1]
    k = iv[I_K]
    now = sim.fv[F_NOW]
    free = iv[I_FREE]
    obs[0] = free / k
    obs[1] = _squash(iv[I_NSYS] * fpar[2 * nclass])
    p = SYSTEM_FEATURES
    for c in range(nclass):
        need = ci[C_NEED, c]
        h = ci[C_HEAD, c]
        obs[p] = need / k
        obs[p + 1] = _squash(ci[C_NWAIT, c] * need / k)
        obs[p + 2] = ci[C_NRUN, c] * need / k
        obs[p + 3] = _squash((now - jf[h, ARRIVAL]) / fpar[c]) if h != -1 else 0.0
        obs[p + 4] = 1.0 if h != -1 and need <= free else 0.0
        p += CLASS_FEATURES
    reveal = ep[EP_REVEAL] != 0
    s = iv[I_WHEAD]
    for _ in range(ep[EP_OBSJOBS]):
        if s != -1:
            c = ji[s, CLS]
            need = ji[s, NEED]
            obs[p] = 1.0
            obs[p + 1] = need / k
            obs[p + 2] = _squash((now - jf[s, ARRIVAL]) / fpar[c])
            obs[p + 3] = 1.0 if need <= free else 0.0
            if reveal:
                obs[p + 4] = _squash(js[s, REMAINING] / fpar[c])
            s = ji[s, WNEXT]
        else:
            for f in range(QUEUE_FEATURES + reveal):
                obs[p + f] = 0.0
        p += QUEUE_FEATURES + reveal
    if ep[EP_PREEMPTIVE] != 0:
        # per class, the P youngest running jobs (as the preempt actions name them): top-P job ids
        pw = ep[EP_PWIN]
        for i in range(nclass * pw):
            work[i] = -1
        for q in range(iv[I_NRUN]):
            s = sim.run_list[q]
            base = ji[s, CLS] * pw
            j = ji[s, JOB_ID]
            pos = pw
            while pos > 0 and (work[base + pos - 1] == -1 or ji[work[base + pos - 1], JOB_ID] < j):
                pos -= 1
            if pos < pw:
                for m in range(pw - 1, pos, -1):
                    work[base + m] = work[base + m - 1]
                work[base + pos] = s
        width = RUNNING_FEATURES + reveal
        for i in range(nclass * pw):
            s = work[i]
            if s != -1:
                c = ji[s, CLS]
                obs[p] = 1.0
                obs[p + 1] = _squash((jf[s, ATTAINED] + now - jf[s, LAST_START]) / fpar[c])
                if reveal:
                    obs[p + 2] = _squash((js[s, REMAINING] - (now - jf[s, LAST_START])) / fpar[c])
            else:
                for f in range(width):
                    obs[p + f] = 0.0
            p += width


@internal_jit
def observe(sim, ep, fpar, obs, mask, work):
    """Write the observation and the action mask of the current state (inlined into its callers;
    Python asks :func:`step` for it with ``OBSERVE_ONLY``)."""
    _write_obs(sim, ep, fpar, obs, work)
    _write_mask(sim, ep, mask)


@internal_jit(python=True)
def step(sim, action, ep, fpar, obs, mask, out, work):
    """Apply env action ``action`` (``-1``: none, resume advancing after a Python-side request), advance
    to the next decision epoch, write observation and mask. ``mask`` must hold the mask of the current
    state: an action it rules out is counted in ``out[O_INVALID]`` and treated as "wait". Returns the
    engine status: ``ST_EVENT`` once a decision is due, else what ``advance`` asked for. With
    ``OBSERVE_ONLY`` it only writes the observation and mask of the current state.

    One implementation of the step: the single env calls it from Python (as :data:`env_step`), the
    batched step of :mod:`msj_gym.env.batch` inlines it."""
    preemptive = ep[EP_PREEMPTIVE] != 0
    move = action != OBSERVE_ONLY  # one call of observe below: its code is inlined once
    if action > 0:
        if mask[action]:
            if apply_one(sim, _decode(sim, ep, action)) != E_NONE:
                return ST_ERROR
            move = not can_decide(sim, preemptive)
        else:
            out[O_INVALID] += 1.0
    elif action == 0 and not mask[0]:
        out[O_INVALID] += 1.0
    if move:
        fv = sim.fv
        while True:
            t0 = fv[F_NOW]
            rate = _load_now(sim, ep, fpar)
            status = advance(sim)
            if status != ST_EVENT:
                return status
            dt = fv[F_NOW] - t0
            out[O_REWARD] -= rate * dt
            out[O_ELAPSED] += dt
            if ep[EP_EVERY_EVENT] != 0 or can_decide(sim, preemptive):
                break
    observe(sim, ep, fpar, obs, mask, work)
    return ST_EVENT


# The single env's entry point is the step itself, not a kernel that calls it: such a kernel was one
# more LLVM optimisation and code generation of the whole inlined step (0.7 s of a cold start).
env_step = step


@kernel_jit
def encode_action(sim, ep, engine_action):
    """The env action that names engine action ``engine_action`` (start slot ``s`` / preempt ``-s-1``),
    or ``-1 - rank`` when the job's rank is outside the action window."""
    ji = sim.ji
    if engine_action >= 0:
        s = engine_action
        if ji[s, STATE] != WAITING:
            return -1
        c = ji[s, CLS]
        r = 0
        cur = sim.ci[C_HEAD, c]
        while cur != s:
            cur = ji[cur, CNEXT]
            r += 1
        w = ep[EP_QWIN]
        return 1 + c * w + r if r < w else -1 - r
    s = -engine_action - 1
    if ji[s, STATE] != RUNNING or ep[EP_PREEMPTIVE] == 0:
        return -1
    c = ji[s, CLS]
    j = ji[s, JOB_ID]
    r = 0
    for q in range(sim.iv[I_NRUN]):
        o = sim.run_list[q]
        if ji[o, CLS] == c and ji[o, JOB_ID] > j:
            r += 1
    p = ep[EP_PWIN]
    return 1 + sim.ci.shape[1] * ep[EP_QWIN] + c * p + r if r < p else -1 - r
