"""Most Servers First with Quickswap (MSFQ) for the one-or-all system.

Chen et al., "Improving Nonpreemptive Multiserver Job Scheduling with Quickswap" (paper 004), Sec. 4;
the definitions are rebuilt in ``shared/spec/msfq.md`` Sec. 2.4, which this module follows.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np

from msj_gym.core import Param, Policy
from msj_gym.core.jit import inline_jit
from msj_gym.core.state import (
    C_HEAD,
    C_NRUN,
    C_NWAIT,
    CNEXT,
    F_NOW,
    F_WIN_HI,
    F_WIN_LO,
    I_FREE,
    I_K,
    PolicyData,
)

# pdata.params
P_ELL, P_LIGHT, P_HEAVY, P_VARIANT = range(4)
VARIANT_LITERAL, VARIANT_AUTHOR = 0.0, 1.0
# pdata.state: current phase (0 = empty system), when it began, per-phase time and completed visits
# (visits that began inside the measurement window), then the author variant's flags and counters.
S_PHASE, S_START = 0, 1
S_TIME, S_VISITS = 2, 7  # 5 entries each, phases 0..4
S_ARMED, S_BLOCKED, S_PREV_LRUN, S_PREV_HEAVY = 12, 13, 14, 15
N_STATE = 16


@inline_jit
def _set_phase(view, st, new):
    old = int(st[S_PHASE])
    if new == old:
        return
    now = view.fv[F_NOW]
    start = st[S_START]
    if view.fv[F_WIN_LO] <= start < view.fv[F_WIN_HI] and now > start:  # empty phases are not visits
        st[S_TIME + old] += now - start
        st[S_VISITS + old] += 1.0
    st[S_PHASE] = new
    st[S_START] = now


@inline_jit
def _light_mode(k, n_light):
    return 2 if n_light >= k else 3


@inline_jit
def _msfq_literal(view, pdata, actions):
    st, par, ci = pdata.state, pdata.params, view.ci
    light, heavy = int(par[P_LIGHT]), int(par[P_HEAVY])
    ell = par[P_ELL]
    k = view.iv[I_K]
    free = view.iv[I_FREE]
    lw, lr = ci[C_NWAIT, light], ci[C_NRUN, light]
    hw, hr = ci[C_NWAIT, heavy], ci[C_NRUN, heavy]
    s_light, s_heavy = ci[C_HEAD, light], ci[C_HEAD, heavy]
    n = 0
    for _ in range(8):  # a decision settles within a few phase changes
        ph = int(st[S_PHASE])
        if ph == 0:
            if hw + hr > 0:
                _set_phase(view, st, 1)
            elif lw + lr > 0:
                _set_phase(view, st, _light_mode(k, lw + lr))
            else:
                return n
        elif ph == 1:
            if hr > 0:
                return n
            if hw > 0:
                if free == k:
                    actions[n] = s_heavy
                    n += 1
                    free -= k
                    hw -= 1
                    hr += 1
                return n
            # no heavy job left: light mode (it admits min(N_1, k) lights before testing N_1 <= ell)
            _set_phase(view, st, _light_mode(k, lw + lr) if lw + lr > 0 else 0)
        elif ph == 2 or ph == 3:
            while free > 0 and lw > 0:
                actions[n] = s_light
                n += 1
                s_light = view.ji[s_light, CNEXT]
                free -= 1
                lw -= 1
                lr += 1
            if ph == 2 and lw + lr < k:
                _set_phase(view, st, 3)
                ph = 3
            if ph == 3 and lw + lr <= ell:
                _set_phase(view, st, 4)
            else:
                return n
        else:  # phase 4: admit nothing until the lights in service have finished
            if lr > 0:
                return n
            if hw > 0:
                _set_phase(view, st, 1)
            elif lw > 0:
                _set_phase(view, st, _light_mode(k, lw))
            else:
                _set_phase(view, st, 0)
    return n


@inline_jit
def _msfq_author(view, pdata, actions):
    """The authors' simulator's "quick swap" (spec msfq.md 2.4, author variant), threshold t = k - ell
    idle servers, with (armed, blocked) flags; admission otherwise in MSF order."""
    st, par, ci = pdata.state, pdata.params, view.ci
    light, heavy = int(par[P_LIGHT]), int(par[P_HEAVY])
    k = view.iv[I_K]
    t = k - par[P_ELL]
    free = view.iv[I_FREE]
    lw, lr = ci[C_NWAIT, light], ci[C_NRUN, light]
    hw, hr = ci[C_NWAIT, heavy], ci[C_NRUN, heavy]
    light_departed = lr < st[S_PREV_LRUN]
    heavy_arrived = hw + hr > st[S_PREV_HEAVY]
    if st[S_BLOCKED] != 0.0 and lr == 0:
        st[S_ARMED] = 0.0
        st[S_BLOCKED] = 0.0
    if heavy_arrived and st[S_ARMED] != 0.0 and st[S_BLOCKED] == 0.0 and hr == 0 and lr > 0:
        st[S_BLOCKED] = 1.0
    n = 0
    if st[S_BLOCKED] == 0.0:
        if hw > 0 and free == k:
            actions[n] = ci[C_HEAD, heavy]
            n += 1
            free -= k
            hw -= 1
            hr += 1
            st[S_ARMED] = 0.0
        s = ci[C_HEAD, light]
        while free > 0 and lw > 0:
            actions[n] = s
            n += 1
            s = view.ji[s, CNEXT]
            free -= 1
            lw -= 1
            lr += 1
        if light_departed and st[S_ARMED] == 0.0 and hr == 0 and free >= t:
            st[S_ARMED] = 1.0
            if hw > 0:
                st[S_BLOCKED] = 1.0
    st[S_PREV_LRUN] = lr
    st[S_PREV_HEAVY] = hw + hr
    return n


@inline_jit
def _msfq(view, pdata, actions):
    if pdata.params[P_VARIANT] == VARIANT_AUTHOR:
        return _msfq_author(view, pdata, actions)
    return _msfq_literal(view, pdata, actions)


class MSFQ(Policy):
    """MSFQ(ell): Most Servers First with Quickswap, for the one-or-all system (light jobs need 1
    server, heavy jobs all k).

    Source: Chen et al. (004) Sec. 4, as rebuilt in spec msfq.md Sec. 2.4. Literal reading (default,
    ``variant="literal"``; the one the paper's analysis describes and whose numbers it reproduces):
    cyclic phases 1: heavy jobs one at a time, exhaustively; 2: lights admitted whenever a server is
    idle while N_1 >= k lights are present; 3: lights still admitted until N_1 <= ell; 4: no light
    admitted until the lights in service finish, then phase 1. Edge rules (spec): entering light mode
    first admits min(N_1, k) lights, then tests N_1 <= ell; phase 1 is skipped when no heavy job
    waits; an empty system waits for the next arrival; phase 4 blocks lights even when no heavy job
    waits. ``ell = 0`` is MSF (same sample path). ``variant="author"`` is the authors' simulator's
    "quick swap" (threshold t = k - ell idle servers, armed/blocked flags), which never blocks lights
    when no heavy job waits. Default ``ell``: k - 1, the paper's heuristic.

    Non-preemptive; size-oblivious. Its state evolves at every event (phase changes), so through the
    environment it is asked at every event (see :class:`msj_gym.PolicyAgent`). ``report`` gives the
    fraction of time and mean duration of each phase (literal variant; visits of positive length that
    began inside the measurement window).
    """

    policy_id = "msfq"
    reference = "004 Sec. 4 (spec msfq.md 2.4)"
    preemptive = False
    size_aware = False
    decides_every_event = True
    kernel = _msfq
    params_spec: ClassVar[Mapping[str, Param]] = {
        "ell": Param(
            int, -1, "threshold: lights left before the swap (-1: k - 1, the paper's choice)", minimum=-1
        ),
        "variant": Param(
            str,
            "literal",
            "phase rules: the paper's ('literal') or the authors' code's",
            choices=("literal", "author"),
        ),
    }

    def prepare(self, workload: Any, rng: np.random.Generator) -> PolicyData:
        needs = np.asarray(workload.server_needs)
        k = int(workload.num_servers)
        if needs.size != 2 or sorted(needs.tolist()) != [1, k]:
            raise ValueError(
                f"policy 'msfq': needs a one-or-all workload (server needs 1 and k={k}), got needs "
                f"{needs.tolist()}"
            )
        ell = self.param_values["ell"]
        ell = k - 1 if ell == -1 else ell
        if not 0 <= ell <= k - 1:
            raise ValueError(f"policy 'msfq' parameter 'ell': expected an integer in [0, {k - 1}], got {ell}")
        light, heavy = int(np.argmin(needs)), int(np.argmax(needs))
        variant = VARIANT_AUTHOR if self.param_values["variant"] == "author" else VARIANT_LITERAL
        base = super().prepare(workload, rng)
        return base._replace(
            params=np.array([ell, light, heavy, variant], dtype=np.float64), state=np.zeros(N_STATE)
        )

    def report(self, pdata: PolicyData) -> dict[str, Any]:
        if pdata.params[P_VARIANT] != VARIANT_LITERAL:
            return {}
        st = pdata.state
        times = st[S_TIME : S_TIME + 5]
        visits = st[S_VISITS : S_VISITS + 5]
        total = float(times.sum())
        out: dict[str, Any] = {}
        for ph in range(1, 5):
            out[f"phase{ph}_time_fraction"] = float(times[ph] / total) if total > 0 else float("nan")
            out[f"phase{ph}_mean_duration"] = float(times[ph] / visits[ph]) if visits[ph] else float("nan")
            out[f"phase{ph}_visits"] = int(visits[ph])
        out["empty_time_fraction"] = float(times[0] / total) if total > 0 else float("nan")
        return out
