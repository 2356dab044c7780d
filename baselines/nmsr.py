"""nMSR: the non-preemptive Markovian Service Rate policy."""

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
    job_class,
    job_id,
    next_waiting_of_class,
    now,
    num_classes,
    num_running,
    num_waiting,
    server_need,
    start,
    value,
)
from msj_gym.core.jit import inline_jit
from msj_gym.core.record import Record
from msj_gym.core.state import PolicyData
from msj_gym.workloads.workload import ClassTable

from ._kit import admit_fifo

# pdata.params: the chain's mean cycle length, the backfilling flag (0 or 1) and per schedule its mean
# sojourn (C); table[c, i] = target of class i in schedule c
FIELDS = Record("tau", "backfill", "mean_sojourn")
TAU, BACKFILL, MEAN_SOJOURN = FIELDS.ids
# pdata.state  = [schedule, residual clock, clock time, switching, uniform index, then per schedule:
#                 time spent (C), then per class: jobs in service after the last decision (C)]
S_SCHED, S_RESIDUAL, S_CLOCK, S_SWITCHING, S_UNIFORM = range(5)
N_FIXED = 5
UNIFORMS = 1 << 16


@inline_jit
def _draw(pdata, mean):
    st = pdata.state
    i = int(st[S_UNIFORM])
    st[S_UNIFORM] = (i + 1) % pdata.uniforms.size
    return -mean * np.log1p(-pdata.uniforms[i])


@inline_jit
def _targets_met(pdata, c, running):
    """True if no class has more jobs in ``running`` (per-class counts) than schedule ``c`` allows."""
    table = pdata.table
    for i in range(table.shape[1]):
        if running[i] > table[c, i]:
            return False
    return True


@inline_jit
def _targets_met_now(view, pdata, c):
    """``_targets_met`` for the jobs in service now."""
    table = pdata.table
    for i in range(table.shape[1]):
        if class_running(view, i) > table[c, i]:
            return False
    return True


@inline_jit
def _advance_clock(pdata, now, running, spent):
    """Run the schedule chain from the last clock time up to ``now`` with the per-class counts
    ``running`` (constant over that interval): frozen while switching, which ends once no class has more
    jobs in service than the current schedule's target. ``spent`` collects the clock time per schedule."""
    st = pdata.state
    nsched = pdata.table.shape[0]
    t = st[S_CLOCK]
    for _ in range(1_000_000):
        c = int(st[S_SCHED])
        if st[S_SWITCHING] != 0.0:
            if not _targets_met(pdata, c, running):
                break
            st[S_SWITCHING] = 0.0
        if st[S_RESIDUAL] > now - t:
            st[S_RESIDUAL] -= now - t
            spent[c] += now - t
            break
        spent[c] += st[S_RESIDUAL]
        t += st[S_RESIDUAL]
        c = (c + 1) % nsched
        st[S_SCHED] = c
        st[S_RESIDUAL] = _draw(pdata, field(pdata.params, MEAN_SOJOURN)[c])
        st[S_SWITCHING] = 1.0
    st[S_CLOCK] = now


@inline_jit
def _nmsr(view, pdata, actions):
    st, table = pdata.state, pdata.table
    nclass = num_classes(view)
    nsched = table.shape[0]
    spent = st[N_FIXED : N_FIXED + nsched]
    prev = st[N_FIXED + nsched : N_FIXED + nsched + nclass]
    _advance_clock(pdata, now(view), prev, spent)  # up to now, with the counts left by the last decision
    if st[S_SWITCHING] != 0.0 and _targets_met_now(view, pdata, int(st[S_SCHED])):
        st[S_SWITCHING] = 0.0  # a departure just now ended the switch: the clock runs on from now
    c = int(st[S_SCHED])
    free = free_servers(view)
    n = 0
    for i in range(nclass):
        room = int(table[c, i]) - class_running(view, i)
        if room > 0:
            n, free, _ = admit_fifo(view, i, free, room, actions, n)
    if value(pdata.params, BACKFILL) != 0.0 and st[S_SWITCHING] == 0.0:
        # first-fit backfilling: queue heads that fit, oldest head first
        while free > 0:
            best, best_id = -1, 0
            for i in range(nclass):
                s = first_waiting_of_class(view, i)
                while s != -1 and _already(actions, n, s):
                    s = next_waiting_of_class(view, s)
                if s != -1 and class_need(view, i) <= free and (best == -1 or job_id(view, s) < best_id):
                    best, best_id = s, job_id(view, s)
            if best == -1:
                break
            n = start(actions, n, best)
            free -= server_need(view, best)
    if n == 0 and num_running(view) == 0 and num_waiting(view) > 0 and arrivals_ended(view):
        # End of a trace: nothing runs and no event will come to move the chain on; jump to the next
        # schedule whose class waits rather than deadlock.
        for step in range(1, nsched + 1):
            c2 = (c + step) % nsched
            for i in range(nclass):
                if table[c2, i] > 0 and class_waiting(view, i) > 0:
                    st[S_SCHED] = c2
                    st[S_SWITCHING] = 0.0
                    n, free, _ = admit_fifo(view, i, free, int(table[c2, i]), actions, n)
            if n > 0:
                break
    for i in range(nclass):
        prev[i] = class_running(view, i)
    for j in range(n):
        prev[job_class(view, actions[j])] += 1
    return n


@inline_jit
def _already(actions, n, s):
    for j in range(n):
        if actions[j] == s:
            return True
    return False


class NMSR(Policy):
    """nMSR, non-preemptive Markovian Service Rate: a Markov chain independent of the queues cycles
    through candidate schedules; in schedule c, class-i jobs start (FIFO, as they fit) while fewer than
    u_i^(c) are in service. After each switch the chain's clock is frozen until no class has more jobs in
    service than the new schedule allows ("switching"); jobs of the old schedule finish undisturbed.

    Source: Chen et al. (2026), Sec. 2 and 6 (the competitor "nMSR"), reconstructed from the MSR
    paper (arXiv:2412.08915) and its code, as the Quickswap paper does not say how it ran nMSR. Reading
    chosen: the pure schedules u^(i) = floor(k / n_i) class-i jobs, visited in class order with time fractions
    alpha_i proportional to lambda_i E[S_i] / floor(k / n_i) (the LP's solution when needs divide k); sojourns
    Exp(alpha_c tau) with ``tau`` (default: 10 mean service times) the chain's mean cycle length, a free
    parameter the paper does not give; admission under the current schedule continues while switching (only
    the clock stops);
    ``backfill=True`` adds first-fit backfilling of queue heads when not switching (which variant the
    paper ran is unknown). Decisions are taken at arrivals and departures (as in the paper's model), so a
    schedule change takes effect at the next event; at the end of a finite trace, with nothing in
    service and no event to come, the chain jumps to the next schedule whose class waits instead of
    deadlocking. Non-preemptive; size-oblivious; its own random clock comes from the
    run's policy stream. ``report`` gives the fraction of time spent in each schedule.
    """

    policy_id = "nmsr"
    reference = "Chen et al. (2026), Quickswap, Sec. 2, 6"
    preemptive = False
    size_aware = False
    decides_every_event = True
    kernel = _nmsr
    params_spec: ClassVar[Mapping[str, Param]] = {
        "tau": Param(float, -1.0, "mean cycle length of the schedule chain (-1: 10 mean service times)"),
        "backfill": Param(bool, False, "first-fit backfilling of queue heads when not switching"),
    }

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        tau = self.param_values["tau"]
        if tau != -1.0 and tau <= 0:
            raise ValueError(f"policy 'nmsr' parameter 'tau': expected a positive time (or -1), got {tau!r}")

    # a policy is prepared only for a workload of its own models (for_workload checks): narrower by design
    def prepare(self, workload: ClassTable, rng: np.random.Generator) -> PolicyData:  # type: ignore[override]
        needs = np.asarray(workload.server_needs, dtype=np.int64)
        k = int(workload.num_servers)
        p = np.asarray(workload.probabilities, dtype=np.float64)
        means = np.asarray(workload.mean_service_times, dtype=np.float64)
        fill = k // needs
        share = p * means / fill
        alpha = share / share.sum()
        tau = self.param_values["tau"]
        if tau == -1.0:
            tau = 10.0 * float(np.dot(p, means))
        nclass = needs.size
        table = np.zeros((nclass, nclass))
        table[np.arange(nclass), np.arange(nclass)] = fill
        sojourn = alpha * tau
        params = FIELDS.pack(tau=tau, backfill=self.param_values["backfill"], mean_sojourn=sojourn)
        uniforms = rng.random(UNIFORMS)
        state = np.zeros(N_FIXED + 2 * nclass)
        state[S_RESIDUAL] = -sojourn[0] * np.log1p(-uniforms[0])
        state[S_UNIFORM] = 1.0
        base = super().prepare(workload, rng)
        return base._replace(params=params, table=table, uniforms=uniforms, state=state)

    def report(self, pdata: PolicyData) -> dict[str, Any]:
        nsched = pdata.table.shape[0]
        spent = pdata.state[N_FIXED : N_FIXED + nsched]
        total = float(spent.sum())
        return {
            f"schedule{c}_time_fraction": float(spent[c] / total) if total > 0 else float("nan")
            for c in range(nsched)
        }
