"""The exact optimal-policy solver against closed forms, its own truncation, and simulation."""

from __future__ import annotations

import pytest

from msj_gym import Simulator, load_scenario
from msj_gym.analysis import mmk_mean_response_time
from msj_gym.analysis.optimal import evaluate_heuristic, solve_optimal
from msj_gym.baselines import make_policy
from msj_gym.workloads import JobClass, Workload
from msj_gym.workloads.distributions import Exponential


def _workload(k: int, rate: float, classes: list[tuple[int, float, float]]) -> Workload:
    """``classes``: (server need, probability, mean service time)."""
    return Workload(
        num_servers=k,
        arrival_rate=rate,
        classes=tuple(
            JobClass(server_need=n, probability=p, service_time=Exponential(mean=m), name=f"c{i}")
            for i, (n, p, m) in enumerate(classes)
        ),
    )


@pytest.mark.parametrize("preemptive", [False, True])
@pytest.mark.parametrize(("k", "rate"), [(1, 0.6), (3, 2.1), (4, 3.6)])
def test_one_class_is_mmk(k: int, rate: float, preemptive: bool) -> None:
    # one class of need 1: work conservation is optimal, the value is Erlang C's M/M/k mean
    sol = solve_optimal(
        _workload(k, rate, [(1, 1.0, 1.0)]), preemptive=preemptive, check_buffers=False, blocking_target=1e-10
    )
    assert sol.value.max_blocked < 1e-10
    assert sol.mean_response_time == pytest.approx(mmk_mean_response_time(rate, 1.0, k), rel=1e-6)


def test_two_classes_on_one_server_follow_the_c_mu_rule() -> None:
    # k = 1, exponential classes with rates 2 and 0.5: the c-mu rule (priority to the faster class) is
    # optimal; its M/G/1 priority means are closed forms (Kleinrock, Vol. 2, Sec. 3.7)
    lam1, lam2, mu1, mu2 = 0.3, 0.2, 2.0, 0.5
    wl = _workload(1, lam1 + lam2, [(1, lam1 / (lam1 + lam2), 1 / mu1), (1, lam2 / (lam1 + lam2), 1 / mu2)])
    rho1, rho2 = lam1 / mu1, lam2 / mu2
    w0 = lam1 / mu1**2 + lam2 / mu2**2  # sum lambda_i E[S_i^2] / 2 for exponentials
    # preemptive-resume priority
    t1 = 1 / mu1 + (lam1 / mu1**2) / (1 - rho1)
    t2 = (1 / mu2) / (1 - rho1) + w0 / ((1 - rho1) * (1 - rho1 - rho2))
    # a truncation that loses 1e-10 of the arrivals: exact to the tolerance below
    pre = solve_optimal(wl, preemptive=True, check_buffers=False, blocking_target=1e-10)
    expected = (lam1 * t1 + lam2 * t2) / (lam1 + lam2)
    assert pre.mean_response_time == pytest.approx(expected, rel=1e-6)
    assert pre.value.class_mean_response_times == pytest.approx((t1, t2), rel=1e-5)
    # non-preemptive priority
    n1 = 1 / mu1 + w0 / (1 - rho1)
    n2 = 1 / mu2 + w0 / ((1 - rho1) * (1 - rho1 - rho2))
    nonpre = solve_optimal(wl, check_buffers=False, blocking_target=1e-10)
    assert nonpre.mean_response_time == pytest.approx((lam1 * n1 + lam2 * n2) / (lam1 + lam2), rel=1e-6)


def test_the_answer_does_not_depend_on_the_buffer() -> None:
    # truncation losing < 1e-8 of the arrivals, policy iteration to 1e-10: the value holds to 1e-6
    sol = solve_optimal(load_scenario("sf-fig2").build(load=0.6), blocking_target=1e-8, tol=1e-10)
    assert sol.value.max_blocked < 1e-8
    assert sol.buffer_check["relative_change"] < 1e-6
    bigger = solve_optimal(
        load_scenario("sf-fig2").build(load=0.6),
        buffers=[b + 20 for b in sol.value.buffers],
        check_buffers=False,
        tol=1e-10,
    )
    assert bigger.mean_response_time == pytest.approx(sol.mean_response_time, rel=1e-6)


def test_optimum_is_below_every_heuristic() -> None:
    # on one truncated chain the optimum's mean number of jobs is below every policy's
    wl = load_scenario("sf-fig2").build(load=0.6)
    for preemptive, heuristics in ((False, ("msf", "lsf")), (True, ("msf-preemptive", "lsf-preemptive"))):
        opt = solve_optimal(wl, preemptive=preemptive, check_buffers=False)
        for h in heuristics:
            value = evaluate_heuristic(wl, h, buffers=opt.value.buffers)
            assert opt.value.mean_jobs <= value.mean_jobs * (1 + 1e-9), h
    # preempting can only help
    assert (
        solve_optimal(wl, preemptive=True, check_buffers=False).mean_response_time
        < solve_optimal(wl, check_buffers=False).mean_response_time
    )


def test_exact_msf_equals_its_simulated_mean() -> None:
    wl = load_scenario("sf-fig2").build(load=0.5)
    exact = evaluate_heuristic(wl, "msf")
    assert exact.max_blocked < 1e-6
    sim = Simulator(wl, make_policy("msf"), seed=2, num_arrivals=400_000).run()
    z99 = 2.576 / 1.96  # the result carries a 95 % half width
    assert abs(sim.mean_response_time - exact.mean_response_time) < z99 * sim.ci95_half_width


def test_mdp_optimal_simulates_to_its_exact_value() -> None:
    wl = load_scenario("sf-fig2").build(load=0.7)
    exact = solve_optimal(wl, check_buffers=False).mean_response_time
    sim = Simulator(wl, make_policy("mdp-optimal"), seed=4, num_arrivals=400_000).run()
    assert abs(sim.mean_response_time - exact) < (2.576 / 1.96) * sim.ci95_half_width


def test_bad_input_is_refused() -> None:
    hyper = load_scenario("bs-fig1").build()
    with pytest.raises(ValueError, match=r"exponential|max_states"):
        solve_optimal(hyper)
    with pytest.raises(ValueError, match="load"):
        solve_optimal(load_scenario("sf-fig2").build(load=1.0))
    with pytest.raises(ValueError, match="max_states"):
        solve_optimal(load_scenario("four-class").build(load=0.9), max_states=10_000)
    with pytest.raises(ValueError, match="policy"):
        evaluate_heuristic(load_scenario("sf-fig2").build(), "first-fit")


def test_a_class_given_up_at_a_small_buffer_is_charged_back(monkeypatch: pytest.MonkeyPatch) -> None:
    # one-or-all with k = 8: at a heavy buffer of 3 the truncated optimum never serves the heavy jobs
    # (their lost arrivals cost nothing); the search then charges lost arrivals, and the final buffers
    # are solved without the charge to the same value as from the default start
    import msj_gym.analysis.optimal as optimal

    wl = _workload(8, 3.0, [(1, 0.9, 1.0), (8, 0.1, 1.0)])
    reference = solve_optimal(wl, check_buffers=False)
    monkeypatch.setattr(optimal, "_initial_buffers", lambda *_args: [30, 3])
    said: list[str] = []
    sol = solve_optimal(wl, check_buffers=False, log=said.append)
    assert any("charging lost arrivals" in line for line in said)
    assert any("without the charge" in line for line in said)
    assert sol.value.max_blocked <= 1e-6
    assert sol.mean_response_time == pytest.approx(reference.mean_response_time, rel=1e-5)


def test_a_problem_that_profits_from_losing_arrivals_keeps_the_charge() -> None:
    # one-or-all with k = 8 at load 0.85: at the buffers where the charged search blocks < 1e-6, the
    # problem without the charge learns to let the heavy jobs pile up at their buffer and be lost; the
    # charged solution is then the answer, and a larger buffer does not move it
    wl = _workload(8, 4.0, [(1, 0.9, 1.0), (8, 0.1, 1.0)])
    said: list[str] = []
    sol = solve_optimal(wl, log=said.append)
    assert any("learns to lose arrivals" in line for line in said)
    assert sol.lost_arrivals_charged and sol.to_dict()["lost_arrivals_charged"]
    assert sol.value.max_blocked <= 1e-6
    assert sol.buffer_check["relative_change"] < 1e-5
    # below every class-level heuristic (MSF blocks < 1e-6 at its buffers; LSF, unstable here, keeps
    # blocking, and even its truncated value, a lower bound, is far above)
    for h in ("msf", "lsf"):
        value = evaluate_heuristic(wl, h, max_states=400_000)
        assert sol.mean_response_time < value.mean_response_time, h
