"""Most Servers First with Quickswap (MSFQ) for the one-or-all system, and Static / Adaptive Quickswap
for any classes.

Chen et al. (2026), Quickswap, Sec. 4. Where the paper's text leaves a rule open, this module follows
the authors' simulator or states the reading it takes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np

from msj_gym.core import Param, Policy
from msj_gym.core.access import (
    arrivals_ended,
    class_need,
    class_running,
    class_waiting,
    field,
    first_waiting_of_class,
    free_servers,
    in_measurement_window,
    int_value,
    job_class,
    now,
    num_classes,
    num_running,
    num_servers,
    server_need,
    start,
    value,
)
from msj_gym.core.jit import inline_jit
from msj_gym.core.record import Record
from msj_gym.core.state import PolicyData
from msj_gym.core.workload import WorkloadLike
from msj_gym.workloads.workload import ClassTable

from ._kit import admit_fifo

# MSFQ's parameters: the threshold ell, the light and the heavy class, the variant of the rules.
MSFQ_FIELDS = Record("ell", "light", "heavy", "variant")
ELL, LIGHT, HEAVY, VARIANT = MSFQ_FIELDS.ids
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
    t = now(view)
    began = st[S_START]
    if in_measurement_window(view, began) and t > began:  # empty phases are not visits
        st[S_TIME + old] += t - began
        st[S_VISITS + old] += 1.0
    st[S_PHASE] = new
    st[S_START] = t


@inline_jit
def _light_mode(k, n_light):
    return 2 if n_light >= k else 3


@inline_jit
def _admit_class(view, c, free, actions, n):
    """Start class ``c``'s waiting jobs (FIFO) while they fit; returns (n, free, started)."""
    return admit_fifo(view, c, free, num_servers(view), actions, n)


@inline_jit
def _msfq_literal(view, pdata, actions):
    st, par = pdata.state, pdata.params
    light, heavy = int_value(par, LIGHT), int_value(par, HEAVY)
    ell = value(par, ELL)
    k = num_servers(view)
    free = free_servers(view)
    lw, lr = class_waiting(view, light), class_running(view, light)
    hw, hr = class_waiting(view, heavy), class_running(view, heavy)
    s_heavy = first_waiting_of_class(view, heavy)
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
                    n = start(actions, n, s_heavy)
                    free -= k
                    hw -= 1
                    hr += 1
                return n
            # no heavy job left: light mode (it admits min(N_1, k) lights before testing N_1 <= ell)
            _set_phase(view, st, _light_mode(k, lw + lr) if lw + lr > 0 else 0)
        elif ph == 2 or ph == 3:
            n, free, started = _admit_class(view, light, free, actions, n)
            lw -= started
            lr += started
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
    """The authors' simulator's "quick swap" (the authors' variant), threshold t = k - ell
    idle servers, with (armed, blocked) flags; admission otherwise in MSF order."""
    st, par = pdata.state, pdata.params
    light, heavy = int_value(par, LIGHT), int_value(par, HEAVY)
    k = num_servers(view)
    t = k - value(par, ELL)
    free = free_servers(view)
    lr = class_running(view, light)
    hw, hr = class_waiting(view, heavy), class_running(view, heavy)
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
            n = start(actions, n, first_waiting_of_class(view, heavy))
            free -= k
            hw -= 1
            hr += 1
            st[S_ARMED] = 0.0
        n, free, started = _admit_class(view, light, free, actions, n)
        lr += started
        if light_departed and st[S_ARMED] == 0.0 and hr == 0 and free >= t:
            st[S_ARMED] = 1.0
            if hw > 0:
                st[S_BLOCKED] = 1.0
    st[S_PREV_LRUN] = lr
    st[S_PREV_HEAVY] = hw + hr
    return n


@inline_jit
def _msfq(view, pdata, actions):
    if value(pdata.params, VARIANT) == VARIANT_AUTHOR:
        return _msfq_author(view, pdata, actions)
    return _msfq_literal(view, pdata, actions)


class MSFQ(Policy):
    """MSFQ(ell): Most Servers First with Quickswap, for the one-or-all system (light jobs need 1
    server, heavy jobs all k).

    Source: Chen et al. (2026), Quickswap, Sec. 4. Literal reading (default,
    ``variant="literal"``; the one the paper's analysis describes and whose numbers it reproduces):
    cyclic phases 1: heavy jobs one at a time, exhaustively; 2: lights admitted whenever a server is
    idle while N_1 >= k lights are present; 3: lights still admitted until N_1 <= ell; 4: no light
    admitted until the lights in service finish, then phase 1. Edge rules (our reading of the text): entering
    light mode first admits min(N_1, k) lights, then tests N_1 <= ell; phase 1 is skipped when no heavy job
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

    def stability_limit(self, workload: WorkloadLike) -> tuple[float, str] | None:
        """Throughput-optimal on a one-or-all workload, at every threshold (Chen et al. (2026), Thm. 5.1)."""
        if not isinstance(workload, ClassTable):
            return None
        # the analysis package loads on demand, so that importing the policies stays cheap
        from msj_gym.analysis.stability import msf_one_or_all_limit

        return msf_one_or_all_limit(workload)

    reference = "Chen et al. (2026), Quickswap, Sec. 4"
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

    # a policy is asked only about a workload of its own models (for_workload checks): narrower by design
    def unsupported(self, workload: ClassTable) -> str | None:  # type: ignore[override]
        needs = np.asarray(workload.server_needs)
        k = int(workload.num_servers)
        if needs.size != 2 or sorted(needs.tolist()) != [1, k]:
            return (
                f"policy 'msfq': needs a one-or-all workload (server needs 1 and k={k}), got needs "
                f"{needs.tolist()}"
            )
        ell = self.param_values["ell"]
        if ell != -1 and not 0 <= ell <= k - 1:
            return f"policy 'msfq' parameter 'ell': expected an integer in [0, {k - 1}], got {ell}"
        return None

    # a policy is prepared only for a workload of its own models (for_workload checks): narrower by design
    def prepare(self, workload: ClassTable, rng: np.random.Generator) -> PolicyData:  # type: ignore[override]
        self.require(workload)
        needs = np.asarray(workload.server_needs)
        k = int(workload.num_servers)
        ell = self.param_values["ell"]
        ell = k - 1 if ell == -1 else ell
        light, heavy = int(np.argmin(needs)), int(np.argmax(needs))
        variant = VARIANT_AUTHOR if self.param_values["variant"] == "author" else VARIANT_LITERAL
        base = super().prepare(workload, rng)
        return base._replace(
            params=MSFQ_FIELDS.pack(ell=ell, light=light, heavy=heavy, variant=variant),
            state=np.zeros(N_STATE),
        )

    def report(self, pdata: PolicyData) -> dict[str, Any]:
        if MSFQ_FIELDS.get(pdata.params, "variant")[0] != VARIANT_LITERAL:
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


# --- any number of classes ---------------------------------------------------------------------------
# The Quickswap policies' parameter: the classes in descending server need (ties: class index).
ORDER_FIELDS = Record("order")
(ORDER,) = ORDER_FIELDS.ids


def _descending_order(needs: np.ndarray) -> np.ndarray:
    return np.array(sorted(range(needs.size), key=lambda c: (-int(needs[c]), c)), dtype=np.float64)


@inline_jit
def _adaptive(view, pdata, actions):
    order, st = field(pdata.params, ORDER), pdata.state
    nclass = order.size
    free = free_servers(view)
    n = 0
    draining = st[0] != 0.0
    for i in range(nclass):
        c = int(order[i])
        if class_waiting(view, c) == 0:
            continue
        if draining:
            # only the largest class with waiting jobs may enter; once one of its jobs has, MSF resumes
            n, free, started = _admit_class(view, c, free, actions, n)
            if started == 0:
                break
            draining = False
        else:
            n, free, _ = _admit_class(view, c, free, actions, n)
    if not draining:
        # quickswap trigger: a class waits with none of its jobs in service, while every class that has
        # jobs in service has an empty queue (counted after this pass's admissions)
        starved = False
        busy_with_queue = False
        for c in range(nclass):
            waiting = class_waiting(view, c)
            running = class_running(view, c)
            for j in range(n):
                if job_class(view, actions[j]) == c:
                    waiting -= 1
                    running += 1
            if waiting > 0 and running == 0:
                starved = True
            if running > 0 and waiting > 0:
                busy_with_queue = True
        draining = starved and not busy_with_queue
    st[0] = 1.0 if draining else 0.0
    return n


class AdaptiveQuickswap(Policy):
    """Adaptive Quickswap: MSF admission, plus a draining phase triggered when some class waits with
    none of its jobs in service while every class in service has an empty queue; while draining, only
    the largest-need class with waiting jobs may start a job, and once one has, MSF admission resumes.

    Source: Chen et al. (2026), Quickswap, Sec. 4.3, read with the authors' simulator (``AdaptiveMSF``):
    the trigger is evaluated after each admission pass and takes effect from the
    next event. Non-preemptive; size-oblivious; no stability guarantee is claimed by the paper.
    """

    policy_id = "adaptive-quickswap"
    reference = "Chen et al. (2026), Quickswap, Sec. 4.3"
    preemptive = False
    size_aware = False
    decides_every_event = True
    kernel = _adaptive

    # a policy is prepared only for a workload of its own models (for_workload checks): narrower by design
    def prepare(self, workload: ClassTable, rng: np.random.Generator) -> PolicyData:  # type: ignore[override]
        base = super().prepare(workload, rng)
        return base._replace(
            params=ORDER_FIELDS.pack(order=_descending_order(np.asarray(workload.server_needs))),
            state=np.zeros(1),
        )


# Static Quickswap state: [current position in the descending order (-1: not started),
#                          per-class jobs in the system after the previous decision (C entries)]


@inline_jit
def _next_nonempty(view, order, cur):
    """The next class in cyclic descending order with waiting jobs; ``cur`` if there is none."""
    nclass = order.size
    for step in range(1, nclass):
        p = (cur + step) % nclass
        if class_waiting(view, int(order[p])) > 0:
            return p
    return cur


@inline_jit
def _turn_may_end(view, c, started):
    """C: no job of another class in service, and fewer class-c jobs in service (counting ``started``
    just now) than fill the servers."""
    for o in range(num_classes(view)):
        if o != c and class_running(view, o) > 0:
            return False
    return class_running(view, c) + started <= num_servers(view) // class_need(view, c) - 1


@inline_jit
def _static(view, pdata, actions):
    order, st = field(pdata.params, ORDER), pdata.state
    nclass = order.size
    arrived = -1
    for c in range(nclass):
        if class_waiting(view, c) + class_running(view, c) > st[1 + c]:
            arrived = c
            break
    cur = int(st[0])
    n = 0
    if cur == -1:
        if arrived == -1:
            return 0
        for p in range(nclass):
            if int(order[p]) == arrived:
                cur = p
    if arrived != -1:
        if _turn_may_end(view, int(order[cur]), 0) and arrived != int(order[cur]):
            cur = _next_nonempty(view, order, cur)
        if class_waiting(view, int(order[cur])) == 0:
            cur = _next_nonempty(view, order, cur)
    c = int(order[cur])
    n, _, _ = _admit_class(view, c, free_servers(view), actions, n)
    # the turn test counts this pass's starts as in service; the new class starts at the next event, as
    # in the authors' code, unless a second pass is asked for or no next event will ever come (nothing
    # in service, no arrival left: the end of a trace would otherwise deadlock)
    if _turn_may_end(view, c, n):
        nxt = _next_nonempty_after(view, order, cur, c, class_waiting(view, c) - n)
        if nxt != cur:
            cur = nxt
            last = num_running(view) + n == 0 and arrivals_ended(view)
            if pdata.table.size > 0 or last:
                n, _, _ = _admit_class(
                    view, int(order[cur]), free_servers(view) - _needs_of(view, actions, n), actions, n
                )
    st[0] = cur
    for o in range(nclass):
        st[1 + o] = class_waiting(view, o) + class_running(view, o)
    return n


@inline_jit
def _needs_of(view, actions, n):
    total = 0
    for j in range(n):
        total += server_need(view, actions[j])
    return total


@inline_jit
def _next_nonempty_after(view, order, cur, c, waiting_c):
    # as _next_nonempty, with class c's queue length taken after this pass's admissions
    nclass = order.size
    for step in range(1, nclass):
        p = (cur + step) % nclass
        o = int(order[p])
        if (waiting_c if o == c else class_waiting(view, o)) > 0:
            return p
    return cur


class StaticQuickswap(Policy):
    """Static Quickswap: serve the classes in turn (descending server need, cyclically); only the
    current class's jobs start (FIFO, while they fit); the turn moves on when no job of another class is
    in service and fewer than floor(k / n) current-class jobs are, to the next class with waiting jobs.

    Source: Chen et al. (2026), Quickswap, Sec. 4.2 (Remark 1: stable if
    sum_i lambda_i / (mu_i floor(k/n_i)) < 1), read with the authors' simulator (``StaticMSF``), the
    reading that reproduces Figs. 5-6: the turn starts at the first arrival's class; an arrival of another
    class moves the turn on if the condition holds; after each admission pass the condition is tested again
    and the new class starts at the next event (as in the authors' code), except when no next event will come
    (no job in service and no arrival left, at the end of a trace, where waiting would deadlock); then it
    starts at once. ``second_pass=True`` always starts the new class at once (a "cleaner"
    reading, about 5-7 % lower weighted response time). Jobs of the previous class keep running while
    the new class's jobs start as they fit (no strict barrier).
    Non-preemptive; size-oblivious.
    """

    policy_id = "static-quickswap"

    def stability_limit(self, workload: WorkloadLike) -> tuple[float, str] | None:
        """Chen et al. (2026), Sec. 5.1's sufficient condition as a load (a lower bound on the limit; 1,
        throughput-optimal, when every need divides k, Remark 1)."""
        if not isinstance(workload, ClassTable):
            return None
        # the analysis package loads on demand, so that importing the policies stays cheap
        from msj_gym.analysis.stability import static_quickswap_limit

        return static_quickswap_limit(workload)

    reference = "Chen et al. (2026), Quickswap, Sec. 4.2"
    preemptive = False
    size_aware = False
    decides_every_event = True
    kernel = _static
    params_spec: ClassVar[Mapping[str, Param]] = {
        "second_pass": Param(bool, False, "start the next class's jobs in the same event as the turn moves"),
    }

    # a policy is prepared only for a workload of its own models (for_workload checks): narrower by design
    def prepare(self, workload: ClassTable, rng: np.random.Generator) -> PolicyData:  # type: ignore[override]
        base = super().prepare(workload, rng)
        state = np.zeros(1 + workload.num_classes)
        state[0] = -1.0
        # the table's size carries the flag (params holds the class order)
        table = np.zeros((1, 1)) if self.param_values["second_pass"] else np.zeros((0, 0))
        return base._replace(
            params=ORDER_FIELDS.pack(order=_descending_order(np.asarray(workload.server_needs))),
            state=state,
            table=table,
        )
