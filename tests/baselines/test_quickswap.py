"""MSFQ (004 Sec. 4, spec msfq.md 2.4): hand-checked schedules of both readings, MSFQ(0) = MSF, phases."""

from __future__ import annotations

import numpy as np
import pytest

from msj_gym import Simulator, load_scenario
from msj_gym.baselines import make_policy
from msj_gym.workloads import TraceWorkload


def _starts(variant: str) -> list[float]:
    # k=2: lights A (t=0, 5 long), B (t=0.5, 1), C (t=1.2, 1); heavy H (t=1, 1), ell = k-1 = 1.
    trace = TraceWorkload(2, [0.0, 0.5, 1.0, 1.2], [1, 1, 2, 1], [5.0, 1.0, 1.0, 1.0])
    sim = Simulator(
        trace,
        make_policy("msfq", variant=variant),
        seed=0,
        num_arrivals=4,
        warmup=0,
        record_jobs=True,
        debug=True,
    )
    sim.run()
    return sim.records()["first_start"].tolist()


def test_literal_schedule() -> None:
    # A starts, N_1 = 1 <= ell: phase 4 blocks B and C even though no heavy job waits (literal
    # reading); A ends at 5: phase 1 runs H [5, 6); then B and C start together (phase 2).
    assert _starts("literal") == [0.0, 6.0, 5.0, 6.0]


def test_author_schedule() -> None:
    # MSF admission: B starts at 0.5; C when B ends (1.5); after C ends (2.2) one server is idle with
    # H waiting: armed and blocked; when A ends at 5 the flags clear and H starts.
    assert _starts("author") == [0.0, 0.5, 5.0, 1.5]


def test_threshold_zero_is_msf_sample_path() -> None:
    wl = load_scenario("one-or-all").build(arrival_rate=6.5)
    a = Simulator(wl, make_policy("msfq", ell=0), seed=4, num_arrivals=100_000).run().to_dict()
    b = Simulator(wl, make_policy("msf"), seed=4, num_arrivals=100_000).run().to_dict()
    for key in ("provenance", "policy_metrics"):
        a.pop(key), b.pop(key)
    assert a == b


def test_phase_metrics() -> None:
    wl = load_scenario("one-or-all").build(arrival_rate=7.0)
    m = Simulator(wl, make_policy("msfq"), seed=1, num_arrivals=200_000).run().policy_metrics
    total = sum(m[f"phase{p}_time_fraction"] for p in range(1, 5)) + m["empty_time_fraction"]
    assert total == pytest.approx(1.0)
    assert m["phase3_visits"] == 0  # ell = k - 1: phase 3 is empty
    # phase 4 drains 31 lights: its mean length is the max of 31 Exp(1), H_31 = 4.03
    assert m["phase4_mean_duration"] == pytest.approx(sum(1 / i for i in range(1, 32)), rel=0.05)


def test_msfq_beats_msf_by_an_order_of_magnitude_at_high_load() -> None:
    wl = load_scenario("one-or-all").build(arrival_rate=7.25)
    q = Simulator(wl, make_policy("msfq"), seed=2, num_arrivals=300_000).run()
    m = Simulator(wl, make_policy("msf"), seed=2, num_arrivals=300_000).run()
    assert q.mean_response_time * 10 < m.mean_response_time
    assert q.weighted_mean_response_time * 10 < m.weighted_mean_response_time


@pytest.mark.parametrize(("kwargs", "match"), [({"ell": 40}, "ell"), ({"variant": "x"}, "variant")])
def test_bad_parameters(kwargs, match) -> None:
    wl = load_scenario("one-or-all").build(arrival_rate=7.0)
    with pytest.raises(ValueError, match=match):
        Simulator(wl, make_policy("msfq", **kwargs), num_arrivals=100)


def test_needs_a_one_or_all_workload() -> None:
    wl = load_scenario("four-class").build(arrival_rate=3.0)
    with pytest.raises(ValueError, match="one-or-all"):
        Simulator(wl, make_policy("msfq"), num_arrivals=100)


def test_adaptive_quickswap_unit_case() -> None:
    """spec msfq.md check 11: k=15; 15 lights in service, none queued, a heavy job waits -> the trigger
    fires; a light arriving later waits (although a server frees up) until the heavy job has run."""
    k = 15
    times = [0.0] * 15 + [0.5, 0.6]
    needs = [1] * 15 + [k, 1]
    durations = [0.7] + [2.0] * 14 + [1.0, 1.0]  # one light ends at 0.7, the others at 2
    trace = TraceWorkload(k, times, needs, durations)

    def starts(pid: str) -> tuple[float, float]:
        sim = Simulator(trace, make_policy(pid), seed=0, num_arrivals=17, warmup=0, record_jobs=True)
        sim.run()
        first = sim.records()["first_start"]
        return first[15], first[16]  # heavy, late light

    assert starts("adaptive-quickswap") == (2.0, 3.0)
    assert starts("msf") == (2.0, 0.7)  # MSF lets the late light take the idle server


def test_static_quickswap_cycles_in_descending_need() -> None:
    from msj_gym.baselines.quickswap import _descending_order

    assert _descending_order(np.array([1, 3, 5, 15])).tolist() == [3, 2, 1, 0]
    assert _descending_order(np.array([4, 1, 4])).tolist() == [0, 2, 1]


def test_four_class_ordering_at_high_load() -> None:
    """004 Fig. 5 claim (and the spec's numbers, lambda = 3.6: AQS 13.9, SQS 18.7, MSF 21.9, FF 31.8):
    Adaptive < Static < MSF < First-Fit in weighted mean response time."""
    wl = load_scenario("four-class").build(arrival_rate=3.6)
    res = {
        pid: Simulator(wl, make_policy(pid), seed=3, num_arrivals=2_000_000).run()
        for pid in ("adaptive-quickswap", "static-quickswap", "msf", "first-fit")
    }
    w = [r.weighted_mean_response_time for r in res.values()]
    hw = [r.weighted_ci95_half_width for r in res.values()]
    for i in range(3):
        assert w[i] + hw[i] < w[i + 1] - hw[i + 1], (w, hw)
