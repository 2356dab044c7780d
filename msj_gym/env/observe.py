"""The observation encoders of the MSJ environments, compiled into their step: the flat vector (also
cut into the parts of ``observation="dict"``) and the class set (``observation="classes"``).

Every entry lies in ``[0, 1]``. ``squash(x) = L / (1 + L)`` with ``L = log(1 + x)`` maps counts, ages and
ratios that span orders of magnitude into it, monotone and still telling 100 from 1000 apart. The
layout of ``ep``, ``fpar`` and ``work`` is :mod:`msj_gym.env.layout`'s. This module does not import
gymnasium.
"""

from __future__ import annotations

import numpy as np

from ..core.actions import bits_f64
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
    F_NOW,
    I_FREE,
    I_K,
    I_NRUN,
    I_NSYS,
    I_WHEAD,
    JATTR,
    JOB_ID,
    LAST_START,
    NEED,
    RATE,
    REMAINING,
    WNEXT,
)
from .layout import (
    CLASS_FEATURES,
    EP_ESTIMATE,
    EP_OBSJOBS,
    EP_PREEMPTIVE,
    EP_PWIN,
    EP_REVEAL,
    EP_SLOTS,
    F_SET_CLASS,
    F_SET_LOAD,
    F_SET_SYSTEM,
    OBS_CLASSES,
    OBS_FLAT,
    QUEUE_FEATURES,
    RUNNING_FEATURES,
    SET_CLASS_FEATURES,
    SET_CONSTANTS_PER_CLASS,
    SET_SIZE_FEATURES,
    SET_SYSTEM_FEATURES,
    SYSTEM_FEATURES,
)

__all__ = [
    "OBSERVATION_WRITERS",
    "class_set_constants",
    "known_remaining",
    "squash",
    "write_class_rows",
    "write_class_set",
    "write_flat",
]


@internal_jit
def known_remaining(sim, ep, s, served):
    """What the env tells of job ``s``'s remaining service, ``served`` more of it done since its last
    start (0 for a waiting job): the exact remaining service time, or with ``ep[EP_ESTIMATE]`` an
    attribute, the job's requested time less the service it has had (at least 0: a job may outrun its
    request). Shared by the observations and the shortest-first starts."""
    attribute = ep[EP_ESTIMATE]
    if attribute < 0:
        return sim.js[s, REMAINING] - served
    requested = bits_f64(sim.ji[s, JATTR + attribute])
    return max(requested - sim.jf[s, ATTAINED] - served, 0.0)


@internal_jit
def squash(x):
    # log1p first: queues and ages span orders of magnitude, and an unstable queue must stay visible
    v = max(x, 0.0)  # max: a remaining time may round to a hair below 0
    # log1p(+-0) is +-0 exactly: empty queues are common, and the call is most of an observation's cost
    lg = v if v == 0.0 else np.log1p(v)
    return lg / (1.0 + lg)


@internal_jit
def write_flat(sim, ep, fpar, obs, work):
    """The flat observation (see the ``MSJEnv`` card): system, per class slot, the oldest waiting
    jobs, and (preemptive) the youngest running jobs of each class."""
    iv, ci, ji, jf = sim.iv, sim.ci, sim.ji, sim.jf
    nclass = ci.shape[1]
    slots = ep[EP_SLOTS]
    k = iv[I_K]
    now = sim.fv[F_NOW]
    free = iv[I_FREE]
    obs[0] = free / k
    obs[1] = squash(iv[I_NSYS] * fpar[2 * nclass])
    p = SYSTEM_FEATURES
    for c in range(nclass):
        need = ci[C_NEED, c]
        h = ci[C_HEAD, c]
        obs[p] = need / k
        obs[p + 1] = squash(ci[C_NWAIT, c] * need / k)
        obs[p + 2] = ci[C_NRUN, c] * need / k
        obs[p + 3] = squash((now - jf[h, ARRIVAL]) / fpar[c]) if h != -1 else 0.0
        obs[p + 4] = 1.0 if h != -1 and need <= free else 0.0
        p += CLASS_FEATURES
    for _ in range((slots - nclass) * CLASS_FEATURES):  # padding slots
        obs[p] = 0.0
        p += 1
    reveal = ep[EP_REVEAL] != 0
    s = iv[I_WHEAD]
    for _ in range(ep[EP_OBSJOBS]):
        if s != -1:
            c = ji[s, CLS]
            need = ji[s, NEED]
            obs[p] = 1.0
            obs[p + 1] = need / k
            obs[p + 2] = squash((now - jf[s, ARRIVAL]) / fpar[c])
            obs[p + 3] = 1.0 if need <= free else 0.0
            if reveal:
                obs[p + 4] = squash(known_remaining(sim, ep, s, 0.0) / fpar[c])
            s = ji[s, WNEXT]
        else:
            for f in range(QUEUE_FEATURES + reveal):
                obs[p + f] = 0.0
        p += QUEUE_FEATURES + reveal
    if ep[EP_PREEMPTIVE] != 0:
        # per class slot, the P youngest running jobs (as the preempt actions name them): top-P job ids
        pw = ep[EP_PWIN]
        for i in range(slots * pw):
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
        for i in range(slots * pw):
            s = work[i]
            if s != -1:
                c = ji[s, CLS]
                obs[p] = 1.0
                obs[p + 1] = squash((jf[s, ATTAINED] + now - jf[s, LAST_START]) / fpar[c])
                if reveal:
                    obs[p + 2] = squash(known_remaining(sim, ep, s, now - jf[s, LAST_START]) / fpar[c])
            else:
                for f in range(width):
                    obs[p + f] = 0.0
            p += width


@kernel_jit
def class_set_constants(fpar, k, needs):
    """Fill in ``fpar``'s class-set constants (see :mod:`msj_gym.env.layout`) of a workload with ``k``
    servers and class server needs ``needs`` (int64), its other entries already set. Compiled with
    the step's own ``squash``, so that the step copies exactly what it would have computed."""
    nclass = needs.size
    load = fpar[2 * nclass + 1]
    mean_time = fpar[5 * nclass + 2]
    at = 5 * nclass
    fpar[at + F_SET_LOAD] = squash(1.0 / (1.0 - load)) if load < 1.0 else 1.0
    fpar[at + F_SET_SYSTEM] = min(np.log2(k) / 16.0, 1.0)
    for c in range(nclass):
        q = at + F_SET_CLASS + SET_CONSTANTS_PER_CLASS * c
        fpar[q] = squash(k / needs[c])
        fpar[q + 1] = squash(fpar[c] / mean_time)
        fpar[q + 2] = squash(fpar[4 * nclass + 2 + c])
    return 0


@internal_jit
def write_class_rows(sim, ep, fpar, obs, free, nwait, nrun, head):
    """The size-oblivious part of the class-set observation of state ``sim`` in which ``free`` servers
    are idle and class ``c`` has ``nwait[c]`` jobs waiting (the oldest in slot ``head[c]``, -1 if none)
    and ``nrun[c]`` running: the system features and a row per class (its first
    ``SET_CLASS_FEATURES`` entries), padding rows zero. The env passes its state's own counts; a
    policy that decides several starts at one instant (:mod:`msj_gym.agents.network`) passes the
    counts as its earlier starts left them, so that it sees what the env would show."""
    iv, ci, jf = sim.iv, sim.ci, sim.jf
    nclass = ci.shape[1]
    slots = ep[EP_SLOTS]
    width = SET_CLASS_FEATURES + (SET_SIZE_FEATURES if ep[EP_REVEAL] != 0 else 0)
    k = iv[I_K]
    now = sim.fv[F_NOW]
    mean_need = fpar[2 * nclass]
    load = fpar[2 * nclass + 1]
    demand = 0.0
    for c in range(nclass):
        demand += nwait[c] * ci[C_NEED, c]
    obs[0] = min(load, 1.0)
    obs[1] = free / k
    obs[2] = squash(iv[I_NSYS] * mean_need)
    obs[3] = squash(demand / k)
    obs[4] = fpar[5 * nclass + F_SET_SYSTEM]
    obs[5] = nclass / slots
    obs[6] = fpar[5 * nclass + F_SET_LOAD]
    obs[7] = mean_need
    p = SET_SYSTEM_FEATURES
    for c in range(nclass):
        need = ci[C_NEED, c]
        waiting = nwait[c]
        h = head[c]
        m = fpar[c]
        share = fpar[3 * nclass + 2 + c]
        constants = 5 * nclass + F_SET_CLASS + SET_CONSTANTS_PER_CLASS * c
        obs[p] = 1.0
        obs[p + 1] = need / k
        obs[p + 2] = fpar[constants]
        obs[p + 3] = fpar[2 * nclass + 2 + c]
        obs[p + 4] = share
        obs[p + 5] = min(load * share, 1.0)
        obs[p + 6] = fpar[constants + 1]
        obs[p + 7] = fpar[constants + 2]
        obs[p + 8] = squash(waiting)
        obs[p + 9] = squash(waiting * need / k)
        obs[p + 10] = nrun[c] * need / k
        obs[p + 11] = squash((now - jf[h, ARRIVAL]) / m) if h != -1 else 0.0
        obs[p + 12] = 1.0 if h != -1 and need <= free else 0.0
        obs[p + 13] = min(waiting, free // need) * need / k
        p += width
    for q in range(p, SET_SYSTEM_FEATURES + slots * width):  # padding slots
        obs[q] = 0.0


@internal_jit
def write_class_set(sim, ep, fpar, obs, work):
    """The class-set observation: ``SET_SYSTEM_FEATURES`` system features, then one row per class slot
    (see the ``MSJEnv`` card), rows past the workload's classes all zero (column 0 is the mask)."""
    iv, ci, ji, jf = sim.iv, sim.ci, sim.ji, sim.jf
    nclass = ci.shape[1]
    reveal = ep[EP_REVEAL] != 0
    width = SET_CLASS_FEATURES + (SET_SIZE_FEATURES if reveal else 0)
    now = sim.fv[F_NOW]
    write_class_rows(sim, ep, fpar, obs, iv[I_FREE], ci[C_NWAIT], ci[C_NRUN], ci[C_HEAD])
    if reveal:
        for c in range(nclass):
            h = ci[C_HEAD, c]
            waiting = ci[C_NWAIT, c]
            m = fpar[c]
            p = SET_SYSTEM_FEATURES + c * width
            shortest, total = np.inf, 0.0
            s = h
            while s != -1:
                r = known_remaining(sim, ep, s, 0.0)
                shortest = min(shortest, r)
                total += r
                s = ji[s, CNEXT]
            q = p + SET_CLASS_FEATURES
            obs[q] = squash(shortest / m) if waiting > 0 else 0.0
            obs[q + 1] = squash(total / waiting / m) if waiting > 0 else 0.0
            obs[q + 2] = 2.0  # the soonest departure of the class, below (2: above any squash)
    if reveal:
        for q in range(iv[I_NRUN]):
            s = sim.run_list[q]
            c = ji[s, CLS]
            left = squash(known_remaining(sim, ep, s, (now - jf[s, LAST_START]) * jf[s, RATE]) / fpar[c])
            at = SET_SYSTEM_FEATURES + c * width + SET_CLASS_FEATURES + 2
            obs[at] = min(obs[at], left)
        for c in range(nclass):
            at = SET_SYSTEM_FEATURES + c * width + SET_CLASS_FEATURES + 2
            if obs[at] > 1.0:  # no class-c job runs
                obs[at] = 0.0


# The writer of each observation code (``ep[EP_OBS]``): the step is assembled from the one its env uses
# (:func:`msj_gym.env.stepping.step_for`), so it never compiles the others.
OBSERVATION_WRITERS = {OBS_FLAT: write_flat, OBS_CLASSES: write_class_set}
