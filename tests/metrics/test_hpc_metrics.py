"""The metrics of the HPC and GPU-cluster papers in every result: bounded slowdown, response-time
percentiles with their intervals, makespan; against small cases worked by hand."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from msj_gym import Simulator, load_scenario
from msj_gym.baselines import make_policy
from msj_gym.metrics.result import default_slowdown_tau
from msj_gym.metrics.stats import order_statistic, quantile_sectioning, student_t_quantile
from msj_gym.workloads.trace import TraceWorkload

# k = 2, FCFS. By hand (arrival, need, service -> start, departure, response):
#   j0  0  2   4  ->  0,  4     4
#   j1  1  1   1  ->  4,  5     4    (waits for j0's two servers)
#   j2  2  1  20  ->  4, 24    22    (starts beside j1)
#   j3  3  2   2  -> 24, 26    23    (needs both: j2 holds one until 24)
#   j4 30  1 0.5  -> 30, 30.5  0.5
ARRIVALS = [0.0, 1.0, 2.0, 3.0, 30.0]
NEEDS = [2, 1, 1, 2, 1]
SERVICE = [4.0, 1.0, 20.0, 2.0, 0.5]
RESPONSE = [4.0, 4.0, 22.0, 23.0, 0.5]


def _run(**kwargs) -> object:
    trace = TraceWorkload(2, ARRIVALS, NEEDS, SERVICE, name="hand")
    return Simulator(trace, make_policy("fcfs"), num_arrivals=5, warmup=0, num_batches=2, **kwargs).run()


def test_bounded_slowdown_by_hand() -> None:
    # tau = 10 (a trace's default, seconds): max(T / max(D, 10), 1) = 1, 1, 22/20, 23/10, 1
    res = _run()
    assert res.slowdown_tau == 10.0
    assert res.mean_bounded_slowdown == pytest.approx((1 + 1 + 1.1 + 2.3 + 1) / 5, rel=1e-15)
    assert res.per_class["need-1"].mean_bounded_slowdown == pytest.approx((1 + 1.1 + 1) / 3, rel=1e-15)
    assert res.per_class["need-2"].mean_bounded_slowdown == pytest.approx((1 + 2.3) / 2, rel=1e-15)
    # tau = 1: 4/4, 4/1, 22/20, 23/2, and 0.5 / max(0.5, 1) = 0.5 bounded below by 1
    res = _run(slowdown_tau=1.0)
    assert res.mean_bounded_slowdown == pytest.approx((1 + 4 + 1.1 + 11.5 + 1) / 5, rel=1e-15)
    assert res.mean_response_time == pytest.approx(sum(RESPONSE) / 5, rel=1e-15)
    assert res.mean_waiting_time == pytest.approx((0 + 3 + 2 + 21 + 0) / 5, rel=1e-15)


def test_makespan_by_hand() -> None:
    # first measured arrival 0, last departure 30.5
    assert _run().makespan == 30.5


def test_percentiles_by_hand() -> None:
    res = _run()
    # sorted response times 0.5, 4, 4, 22, 23 (n = 5): ranks ceil(5 p): p50 -> 3rd, p95 and p99 -> 5th
    assert (res.response_time_p50, res.response_time_p95, res.response_time_p99) == (4.0, 23.0, 23.0)
    # sections: batch b = i * 2 // 5 -> jobs 0-2 and 3-4; their medians 4 (of 4, 4, 22) and 0.5 (of 23, 0.5)
    t = student_t_quantile(0.975, 1)
    sd = abs(4.0 - 0.5) / math.sqrt(2)
    assert res.response_time_p50_ci95_half_width == pytest.approx(t * sd / math.sqrt(2), rel=1e-12)
    # p99: 22 in the first batch, 23 in the second
    assert res.response_time_p99_ci95_half_width == pytest.approx(t * (1 / math.sqrt(2)) / math.sqrt(2))
    assert "5 measured jobs" in res.percentile_method and "2 batches" in res.percentile_method


def test_without_records_the_percentiles_are_nan_and_say_why() -> None:
    res = _run(record_jobs=False)
    assert math.isnan(res.response_time_p99) and math.isnan(res.response_time_p99_ci95_half_width)
    assert "records off" in res.percentile_method
    assert res.to_dict()["response_time_p50"] is None  # JSON: null
    assert res.mean_bounded_slowdown == _run().mean_bounded_slowdown  # online: records not needed


def test_records_are_on_by_default_up_to_the_limit(monkeypatch) -> None:
    wl = load_scenario("sf-fig2").build(load=0.5)
    assert Simulator(wl, make_policy("msf"), num_arrivals=1000).record_jobs
    monkeypatch.setattr(Simulator, "RECORD_LIMIT", 899)  # 1000 arrivals, 100 warm-up: 900 measured
    assert not Simulator(wl, make_policy("msf"), num_arrivals=1000).record_jobs
    assert Simulator(wl, make_policy("msf"), num_arrivals=1000, record_jobs=True).record_jobs


def test_percentiles_equal_the_order_statistics_of_the_records() -> None:
    wl = load_scenario("four-class").build(load=0.7)
    sim = Simulator(wl, make_policy("server-filling"), num_arrivals=5000, seed=3)
    res = sim.run()
    rec = sim.records()
    resp = rec["departure_time"] - rec["arrival_time"]
    assert res.response_time_p95 == np.quantile(resp, 0.95, method="inverted_cdf")
    assert res.response_time_p50 == np.quantile(resp, 0.5, method="inverted_cdf")
    assert 0 < res.response_time_p99_ci95_half_width < res.response_time_p99
    # the slowdown sums what the records give, job by job
    bsld = np.maximum(resp / np.maximum(rec["service_time"], res.slowdown_tau), 1.0)
    assert res.mean_bounded_slowdown == pytest.approx(bsld.mean(), rel=1e-12)


def test_horizon_mode_percentiles_use_the_engine_batches() -> None:
    wl = load_scenario("sf-fig2").build(load=0.5)
    sim = Simulator(wl, make_policy("msf"), horizon=2000.0, warmup_time=100.0, seed=2)
    res = sim.run()
    rec = sim.records()
    resp = rec["departure_time"] - rec["arrival_time"]
    assert res.response_time_p99 == np.quantile(resp[~np.isnan(resp)], 0.99, method="inverted_cdf")
    assert math.isfinite(res.response_time_p99_ci95_half_width)


def test_synthetic_tau_is_a_tenth_of_the_mean_service_time() -> None:
    wl = load_scenario("four-class").build(load=0.7)
    mean = float(np.sum(wl.probabilities * wl.mean_service_times))
    assert default_slowdown_tau(wl) == pytest.approx(0.1 * mean)
    res = Simulator(wl, make_policy("fcfs"), num_arrivals=500).run()
    assert res.slowdown_tau == default_slowdown_tau(wl)


@pytest.mark.parametrize("tau", [0.0, -1.0, math.inf, math.nan, True, "10"])
def test_bad_tau_is_refused(tau) -> None:
    wl = load_scenario("sf-fig2").build(load=0.5)
    with pytest.raises(ValueError, match="slowdown_tau: expected a positive finite time"):
        Simulator(wl, make_policy("fcfs"), num_arrivals=100, slowdown_tau=tau)


def test_order_statistic_and_sectioning() -> None:
    x = np.array([5.0, 1.0, 3.0, 2.0, 4.0])
    assert [order_statistic(x, p) for p in (20, 21, 50, 80, 81, 99)] == [1.0, 2.0, 3.0, 4.0, 5.0, 5.0]
    # 20 values: 0.95 * 20 is 19 exactly, the 19th smallest, whatever floating point makes of it
    assert order_statistic(np.arange(1.0, 21.0), 95) == 19.0
    assert math.isnan(order_statistic(np.array([]), 50))
    with pytest.raises(ValueError, match="percent"):
        order_statistic(x, 100)
    est = quantile_sectioning(np.array([1.0, 2.0, 3.0, 10.0, 20.0, 30.0]), np.array([0, 0, 0, 1, 1, 1]), 50)
    assert est.mean == 3.0  # the overall 3rd smallest
    assert est.ci95_half_width == pytest.approx(
        student_t_quantile(0.975, 1) * (18 / math.sqrt(2)) / math.sqrt(2)
    )


def test_simulate_json_has_the_metrics(capsys) -> None:
    from msj_gym.cli import main

    assert (
        main(
            [
                "simulate",
                "--scenario",
                "sf-fig2",
                "--policy",
                "msf",
                "--load",
                "0.5",
                "--arrivals",
                "2000",
                "--json",
                "--tau",
                "0.5",
            ]
        )
        == 0
    )
    out = json.loads(capsys.readouterr().out)
    for key in (
        "mean_bounded_slowdown",
        "response_time_p50",
        "response_time_p95",
        "response_time_p99",
        "response_time_p99_ci95_half_width",
        "makespan",
        "mean_waiting_time",
        "utilization",
    ):
        assert isinstance(out[key], float), key
    assert out["slowdown_tau"] == 0.5
    assert isinstance(out["per_class"]["need-1"]["mean_bounded_slowdown"], float)
