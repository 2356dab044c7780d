"""The named accessors read what the engine's columns hold, in a live state."""

from __future__ import annotations

from typing import Any

import numpy as np

from msj_gym.baselines import make_policy
from msj_gym.core import access as A
from msj_gym.core import state as S
from msj_gym.core.simulator import Simulator
from msj_gym.workloads.scenarios import load_scenario


def test_accessors_read_the_state() -> None:
    sim = Simulator(
        load_scenario("four-class").build(load=0.9), make_policy("first-fit"), num_arrivals=5000, seed=3
    )
    sim.run_policy_python(sim.policy, sim.pdata, until_arrivals=3000)
    v, z = sim.view, sim.sizes
    assert sim.sim.iv[S.I_NWAIT] > 0  # a queue to walk
    assert (A.now(v), A.num_servers(v), A.free_servers(v)) == (v.fv[S.F_NOW], v.iv[S.I_K], v.iv[S.I_FREE])
    assert (A.num_waiting(v), A.num_running(v), A.num_classes(v)) == (v.iv[S.I_NWAIT], v.iv[S.I_NRUN], 4)
    waiting = []
    s = A.first_waiting(v)
    while s != -1:
        waiting.append(s)
        s = A.next_waiting(v, s)
    assert len(waiting) == A.num_waiting(v)
    assert [A.job_id(v, s) for s in waiting] == sorted(A.job_id(v, s) for s in waiting)  # arrival order
    for c in range(A.num_classes(v)):
        mine, s = [], A.first_waiting_of_class(v, c)
        while s != -1:
            mine.append(s)
            s = A.next_waiting_of_class(v, s)
        assert mine == [s for s in waiting if A.job_class(v, s) == c] and len(mine) == A.class_waiting(v, c)
        assert A.class_need(v, c) == v.ci[S.C_NEED, c]
    running = [A.running_job(v, i) for i in range(A.num_running(v))]
    assert sum(A.server_need(v, s) for s in running) == A.num_servers(v) - A.free_servers(v)
    for c in range(A.num_classes(v)):
        assert A.class_running(v, c) == sum(A.job_class(v, s) == c for s in running)
    for s in running + waiting:
        assert A.arrival_time(v, s) == v.jf[s, S.ARRIVAL] <= A.now(v)
        assert A.service_received(v, s) == v.jf[s, S.ATTAINED]
        assert A.service_time(z, s) == z.js[s, S.SERVICE] > 0
        assert A.remaining_work(z, s) == z.js[s, S.REMAINING]


def _walk(v: Any, s: int, step: Any) -> list[int]:
    """The slots of a job list from ``s`` on, following ``step`` (an accessor) to its end (-1)."""
    out = []
    while s != -1:
        out.append(s)
        s = step(v, s)
    return out


def test_accessors_of_the_system_and_of_running_jobs() -> None:
    sim = Simulator(
        load_scenario("four-class").build(load=0.9),
        make_policy("server-filling"),
        num_arrivals=5000,
        seed=3,
    )
    sim.run_policy_python(sim.policy, sim.pdata, until_arrivals=3000)
    v, z = sim.view, sim.sizes
    system = _walk(v, A.first_in_system(v), A.next_in_system)
    backwards = _walk(v, A.last_in_system(v), A.prev_in_system)
    assert backwards[::-1] == system
    assert len(system) == A.num_in_system(v) == A.num_waiting(v) + A.num_running(v) > 0
    assert [A.job_id(v, s) for s in system] == sorted(A.job_id(v, s) for s in system)  # arrival order
    assert all(A.in_system(v, s) for s in system)
    running = [A.running_job(v, i) for i in range(A.num_running(v))]
    assert sorted(s for s in system if A.is_running(v, s)) == sorted(running)
    for i, s in enumerate(running):
        assert A.running_index(v, s) == i
        assert A.last_start(v, s) == v.jf[s, S.LAST_START] <= A.now(v)
        assert A.service_rate(v, s) == v.jf[s, S.RATE] == 1.0
    for s in system:
        assert A.estimate_noise(z, s) == z.js[s, S.NOISE]
    assert A.num_arrived(v) == v.iv[S.I_NARR] == A.num_departures(v) + A.num_in_system(v)
    assert A.num_starts(v) == v.iv[S.I_STARTS] >= A.num_running(v)
    assert A.num_preemptions(v) == v.iv[S.I_PREEMPTIONS] > 0  # ServerFilling preempts
    assert not A.arrivals_ended(v)


def test_decision_writers() -> None:
    actions = np.zeros(4, dtype=np.int64)
    n = A.preempt(actions, 0, 5)
    n = A.start(actions, n, 7)
    assert n == 2 and list(actions[:2]) == [-6, 7]


def test_accessors_of_the_waiting_list_ends_measurement_and_budgets() -> None:
    sim = Simulator(
        load_scenario("four-class").build(load=0.9), make_policy("first-fit"), num_arrivals=5000, seed=3
    )
    sim.run_policy_python(sim.policy, sim.pdata, until_arrivals=3000)
    v = sim.view
    waiting = _walk(v, A.first_waiting(v), A.next_waiting)
    backwards = _walk(v, A.last_waiting(v), A.prev_waiting)
    assert backwards[::-1] == waiting and len(waiting) > 0
    assert A.num_slots(v) == v.ji.shape[0] > max(waiting)
    running = [A.running_job(v, i) for i in range(A.num_running(v))]
    assert all(A.is_waiting(v, s) for s in waiting) and not any(A.is_waiting(v, s) for s in running)
    assert not any(A.budget_spent(v, s) for s in running + waiting)  # MSJ jobs have no budget
    assert A.num_expiries(v) == v.iv[S.I_EXPIRIES] == 0
    lo, hi = v.fv[S.F_WIN_LO], v.fv[S.F_WIN_HI]
    assert A.in_measurement_window(v, A.now(v)) == (lo <= A.now(v) < hi)
    assert not A.in_measurement_window(v, -1.0)
    nb = 30
    batches = [A.measured_batch(v, s, nb) for s in sorted(running + waiting, key=lambda s: A.job_id(v, s))]
    measured = [b for b in batches if b >= 0]
    assert measured and measured == sorted(measured) and all(0 <= b < nb for b in measured)
    for s in running + waiting:
        j, mlo, mhi = A.job_id(v, s), v.iv[S.I_MEAS_LO], v.iv[S.I_MEAS_HI]
        expected = -1 if j < mlo or j >= mhi else min(max((j - mlo) * nb // (mhi - mlo), 0), nb - 1)
        assert A.measured_batch(v, s, nb) == expected
