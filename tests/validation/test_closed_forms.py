"""The simulator against closed forms, within confidence intervals."""

from __future__ import annotations

import pytest

from msj_gym import Simulator
from msj_gym.analysis import erlang_b, erlang_c, mg1_mean_response_time, mmk_mean_response_time
from msj_gym.baselines import make_policy
from msj_gym.workloads import Deterministic, Erlang, Exponential, HyperExponential, JobClass, Workload

from ..conftest import assert_within


def test_erlang_formulas_against_known_values():
    # Textbook values: E_1(1) = 1/2, E_2(1) = 1/5, E_10(5) = 0.018385; Erlang C(2, 1) = 1/3.
    assert erlang_b(1, 1.0) == pytest.approx(0.5)
    assert erlang_b(2, 1.0) == pytest.approx(0.2)
    assert erlang_b(10, 5.0) == pytest.approx(0.0183845, rel=1e-5)
    assert erlang_c(2, 1.0) == pytest.approx(1 / 3)
    # Large systems stay finite and in (0, 1) where factorials would overflow.
    assert 0.0 < erlang_b(100_000, 99_000.0) < 1.0
    assert mmk_mean_response_time(0.5, 1.0, 1) == pytest.approx(2.0)


@pytest.mark.parametrize("load", [0.5, 0.8, 0.95])
def test_all_needs_one_is_mmk(load):
    k = 4
    wl = Workload(k, [JobClass(1, Exponential(1.0), 1.0, "unit")], load=load)
    arrivals = 400_000 if load < 0.9 else 1_000_000
    result = Simulator(wl, make_policy("fcfs"), seed=101, num_arrivals=arrivals).run()
    theory = mmk_mean_response_time(wl.arrival_rate, 1.0, k)
    assert result.stable
    assert_within(result.mean_response_time, theory, result.ci95_half_width, f"M/M/{k} at load {load}")
    assert result.p_wait == pytest.approx(erlang_c(k, load * k), abs=0.01)
    assert result.utilization == pytest.approx(load, abs=0.01)


@pytest.mark.parametrize(
    "service",
    [Deterministic(1.0), Erlang(3, 1.0), HyperExponential(mean=1.0, scv=4.0)],
    ids=lambda d: d.kind,
)
def test_single_server_is_pollaczek_khinchine(service):
    load = 0.7
    wl = Workload(1, [JobClass(1, service, 1.0, "job")], load=load)
    result = Simulator(wl, make_policy("fcfs"), seed=202, num_arrivals=400_000).run()
    theory = mg1_mean_response_time(wl.arrival_rate, service.mean, service.second_moment)
    assert_within(result.mean_response_time, theory, result.ci95_half_width, f"M/G/1 {service.kind}")
    assert result.p_wait == pytest.approx(load, abs=0.01)  # PASTA: P(wait) = P(busy) = rho


def test_little_law_holds_in_the_multiserver_job_model():
    # L = lambda W for any policy: the time average of jobs in system against lambda * mean response.
    wl = Workload(
        8, [JobClass(1, Exponential(1.0), 2 / 3, "a"), JobClass(8, Exponential(1.0), 1 / 3, "b")], load=0.7
    )
    result = Simulator(wl, make_policy("server-filling"), seed=7, num_arrivals=300_000).run()
    little = wl.arrival_rate * result.mean_response_time
    assert result.mean_jobs_in_system == pytest.approx(little, rel=0.03)
