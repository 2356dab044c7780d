"""The engine's operations beyond start / preempt (``msj_gym.core.actions``): service at a rate, work
budgets with their expiry events, requeueing; used here by small Python policies that have nothing to
do with the compatibility model, to check that the features are general."""

from __future__ import annotations

import math

import numpy as np
import pytest

from msj_gym import Policy, SimulationError, Simulator
from msj_gym.core.actions import OP_LIMIT, budget_words, requeue_words, serve_words
from msj_gym.core.state import (
    BUDGET,
    I_DONE,
    I_EXPIRIES,
    I_FREE,
    I_NRUN,
    I_NWAIT,
    I_WHEAD,
    JOB_ID,
    NEED,
    WNEXT,
)
from msj_gym.workloads import Exponential, JobClass, TraceWorkload, Workload

from ..conftest import assert_within

QUANTUM = 0.5


class _RoundRobin(Policy):
    """Round robin with a quantum of work: each job starts with a budget of QUANTUM; at its expiry the
    job goes to the back of the queue if another waits, else it gets a new quantum."""

    policy_id = "test-round-robin"
    preemptive = True

    def action_words(self, num_servers: int) -> int:
        return 8 * num_servers + 2

    def decide(self, view, sizes, pdata, actions):
        words: list[int] = []
        free = int(view.iv[I_FREE])
        for p in range(view.iv[I_NRUN]):
            s = int(view.run_list[p])
            if np.isnan(view.jf[s, BUDGET]):  # its quantum is spent
                if view.iv[I_NWAIT] > 0:
                    words += [*requeue_words(s), -s - 1]
                    free += int(view.ji[s, NEED])
                else:
                    words += budget_words(s, QUANTUM)
        s = int(view.iv[I_WHEAD])
        while s != -1 and view.ji[s, NEED] <= free:
            words += [*budget_words(s, QUANTUM), s]
            free -= int(view.ji[s, NEED])
            s = int(view.ji[s, WNEXT])
        actions[: len(words)] = words
        return len(words)


def test_round_robin_by_budgets_is_an_mm1_queue():
    # M/M/1 at rho = 0.7: any non-idling discipline blind to sizes gives E[T] = 1 / (1 - rho). A job
    # of size S reaches ceil(S / q) - 1 expiries: e^-q / (1 - e^-q) per job on average.
    wl = Workload(1, [JobClass(1, Exponential(1.0), 1.0, "a")], load=0.7)
    sim = Simulator(wl, _RoundRobin(), seed=4, num_arrivals=30_000, record_jobs=True)
    res = sim.run()
    assert_within(res.mean_response_time, 1.0 / (1.0 - 0.7), res.ci95_half_width, "round robin M/M/1")
    per_job = sim.sim.iv[I_EXPIRIES] / sim.sim.iv[I_DONE]
    expected = math.exp(-QUANTUM) / (1.0 - math.exp(-QUANTUM))
    assert abs(per_job - expected) < 0.05 * expected, (per_job, expected)
    rec = sim.records()
    np.testing.assert_allclose(rec["service_received"], rec["service_time"], rtol=1e-9, atol=1e-9)
    assert rec["preemptions"].max() > 3  # the quantum did send jobs to the back of the queue


def test_round_robin_keeps_the_invariants_on_every_event():
    wl = Workload(2, [JobClass(1, Exponential(1.0), 1.0, "a")], load=0.8)
    res = Simulator(wl, _RoundRobin(), seed=1, num_arrivals=1500, debug=True).run()
    assert res.stable and res.preemptions_per_job > 0


class _ScriptedRates(Policy):
    """Job 0 starts on one server at rate 1 and gets both at rate 2.5 once another job waits; any other
    job starts on both servers at rate 2."""

    policy_id = "test-rates"

    def action_words(self, num_servers: int) -> int:
        return 16

    def decide(self, view, sizes, pdata, actions):
        words: list[int] = []
        free = int(view.iv[I_FREE])
        for p in range(view.iv[I_NRUN]):
            s = int(view.run_list[p])
            if view.ji[s, NEED] == 1 and view.iv[I_NWAIT] > 0 and free >= 1:
                words += serve_words(s, 2, 2.5)
                free -= 1
        s = int(view.iv[I_WHEAD])
        if s != -1 and view.iv[I_NRUN] == 0:
            words += serve_words(s, 1, 1.0) if view.ji[s, JOB_ID] == 0 else serve_words(s, 2, 2.0)
        actions[: len(words)] = words
        return len(words)


def test_service_at_a_rate_settles_the_work_at_every_change():
    # A (4 units of work) runs at rate 1 on one server from 0; B arrives at 1, A (3 left) goes on two
    # servers at rate 2.5 and leaves at 2.2; B (1 unit) then runs at rate 2: 2.2 to 2.7.
    trace = TraceWorkload(2, [0.0, 1.0], [2, 2], [4.0, 1.0])
    sim = Simulator(trace, _ScriptedRates(), seed=0, num_arrivals=2, warmup=0, record_jobs=True, debug=True)
    res = sim.run()
    rec = sim.records()
    np.testing.assert_allclose(rec["first_start"], [0.0, 2.2])
    np.testing.assert_allclose(rec["departure_time"], [2.2, 2.7])
    np.testing.assert_allclose(rec["service_received"], [4.0, 1.0])
    assert res.preemptions_per_job == 0.0


class _Emits(Policy):
    policy_id = "test-emits"
    preemptive = True

    def __init__(self, words_for):
        super().__init__()
        self.words_for = words_for

    def decide(self, view, sizes, pdata, actions):
        s = int(view.iv[I_WHEAD])
        if s == -1:
            return 0
        words = self.words_for(s)
        actions[: len(words)] = words
        return len(words)


@pytest.mark.parametrize(
    ("words_for", "message"),
    [
        (lambda s: serve_words(s, 3, 1.0), "gave slot 0 an invalid server count"),  # class need is 2
        (lambda s: serve_words(s, 1, 0.0), "gave slot 0 an invalid server count, rate"),
        (lambda s: budget_words(s, float("nan")), "invalid server count, rate or budget"),
        (lambda s: requeue_words(7), "named slot 7, which holds no job in the system"),
        (lambda s: [OP_LIMIT - 99, s], "or an unknown action"),
        (lambda s: serve_words(s, 1, 1.0)[:3], "or an unknown action"),  # operands missing
    ],
)
def test_bad_operations_are_refused_with_a_clear_error(words_for, message):
    trace = TraceWorkload(2, [0.0, 1.0], [2, 2], [1.0, 1.0])
    with pytest.raises(SimulationError, match=message):
        Simulator(trace, _Emits(words_for), seed=0, num_arrivals=2, warmup=0).run()
