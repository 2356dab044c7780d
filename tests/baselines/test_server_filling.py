"""ServerFilling and ServerFilling-SRPT against a direct, slow implementation of their definitions, and
their shortcuts (decisions reused between events) against full re-decisions."""

from __future__ import annotations

import numpy as np
import pytest

from msj_gym.baselines.server_filling import ServerFilling, ServerFillingSRPT

from ..conftest import trace_records


def _direct(k, times, needs, durations, ranked, packing):
    """The definition, re-decided at every arrival and departure: order all jobs in the system (arrival
    order, or remaining size need x remaining time with ties by arrival); M = the shortest prefix needing
    >= k servers; serve M by decreasing need (ties: that order), packing greedy or stop. Returns the
    departure times and preemption counts."""
    n = len(times)
    remaining = [float(d) for d in durations]
    departure = np.full(n, np.nan)
    preemptions = np.zeros(n, dtype=int)
    running: set[int] = set()
    present: list[int] = []
    now, arrived = 0.0, 0
    while arrived < n or present:
        next_arrival = times[arrived] if arrived < n else np.inf
        next_departure = min((now + remaining[j] for j in running), default=np.inf)
        t = min(next_arrival, next_departure)
        for j in running:
            remaining[j] -= t - now
        now = t
        for j in [j for j in running if remaining[j] <= 1e-9]:
            running.discard(j)
            present.remove(j)
            departure[j] = now
        while arrived < n and times[arrived] <= now:
            present.append(arrived)
            arrived += 1
        order = sorted(present, key=lambda j: (needs[j] * remaining[j], j)) if ranked else list(present)
        members, total = [], 0
        for j in order:
            if total >= k:
                break
            members.append(j)
            total += needs[j]
        cap, served = k, set()
        for j in sorted(members, key=lambda j: (-needs[j], order.index(j))):
            if needs[j] <= cap:
                served.add(j)
                cap -= needs[j]
            elif packing == "stop":
                break
        for j in running - served:
            preemptions[j] += 1
        running = served
    return departure, preemptions


def _random_trace(rng, n, rounded):
    k = int(rng.choice([7, 10, 16]))
    needs = rng.choice([1, 2, 3, 5, k // 2, k], size=n)
    times = np.cumsum(rng.exponential(0.3, n))
    durations = rng.exponential(1.0, n) * rng.choice([0.5, 1.0, 4.0], n)
    if rounded:  # many ties in arrival times, keys and departures
        times, durations = np.round(times, 1), np.round(durations, 1) + 0.1
    return k, times, needs, durations


@pytest.mark.parametrize("packing", ["greedy", "stop"])
@pytest.mark.parametrize("policy", [ServerFilling, ServerFillingSRPT])
def test_matches_the_direct_definition(policy, packing):
    rng = np.random.default_rng(2026)
    for _ in range(25):
        k, times, needs, durations = _random_trace(rng, 60, rounded=False)
        rec = trace_records(policy(packing=packing), k, times, needs, durations)
        departure, preemptions = _direct(k, times, needs, durations, policy is ServerFillingSRPT, packing)
        np.testing.assert_allclose(rec["departure_time"], departure, rtol=0, atol=1e-9)
        np.testing.assert_array_equal(rec["preemptions"], preemptions)


class _SlowSF(ServerFilling):
    fast_path = False


class _SlowSRPT(ServerFillingSRPT):
    fast_path = False


@pytest.mark.parametrize("packing", ["greedy", "stop"])
@pytest.mark.parametrize(("fast", "slow"), [(ServerFilling, _SlowSF), (ServerFillingSRPT, _SlowSRPT)])
def test_reused_decisions_equal_full_decisions(fast, slow, packing):
    # The shortcut of ServerFilling-SRPT used to keep M after arrivals even when a running job had
    # overtaken a waiting one and M had shrunk: 398 of 600 such traces differed.
    rng = np.random.default_rng(7)
    for _ in range(40):
        k, times, needs, durations = _random_trace(rng, 200, rounded=True)
        a = trace_records(fast(packing=packing), k, times, needs, durations)
        b = trace_records(slow(packing=packing), k, times, needs, durations)
        for name in a:
            np.testing.assert_array_equal(a[name], b[name], err_msg=name)


def test_a_running_job_overtaking_a_waiting_one_can_shrink_m():
    # k = 7. At t = 4.07 job 8 (need 2) arrives; M by remaining size is {5, 7, 4, 8, 3} (total 9) and
    # need order serves 3, 4, 8. By t = 4.13, when job 9 arrives (ranked last), jobs 4 and 3 have run
    # past 5 and 7 and job 8 has become M's last member: M = {5, 7, 4, 3} (total 7), so 8 is preempted
    # and 5 and 7 start, though job 9 ranks behind all of them.
    times = [0.91, 1.09, 1.64, 1.67, 2.74, 2.75, 3.94, 3.96, 4.07, 4.13]
    needs = [7, 3, 2, 3, 2, 1, 7, 1, 2, 2]
    durations = [1.14, 1.05, 0.97, 2.37, 2.28, 1.24, 0.74, 1.18, 1.09, 1.71]
    rec = trace_records(ServerFillingSRPT(), 7, np.array(times), np.array(needs), np.array(durations))
    np.testing.assert_allclose(rec["departure_time"][[5, 7, 8]], [5.03, 6.15, 6.55], atol=1e-9)
    assert list(rec["preemptions"][[5, 7, 8]]) == [2, 3, 2]
