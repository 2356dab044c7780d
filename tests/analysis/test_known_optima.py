"""The optima shipped with the package (msj_gym/analysis/known_optima.json) are checked data: each is the
solver's answer to the problem its digest names, solved again here (a small one in the default run, all
of them behind the slow mark)."""

from __future__ import annotations

import json

import pytest

from msj_gym.analysis.solutions import KNOWN_OPTIMA, KNOWN_POINTS, known_optimum, problem_digest
from msj_gym.workloads.scenarios import load_scenario

ENTRIES = json.loads(KNOWN_OPTIMA.read_text())["optima"]


def _solve(entry: dict) -> float:
    from msj_gym.analysis.optimal import solve_optimal

    workload = load_scenario(entry["scenario"]).build(load=entry["load"])
    sol = solve_optimal(workload, preemptive=entry["preemptive"], check_buffers=False)
    return sol.value.mean_response_time


def test_every_point_ships_both_kinds_keyed_by_its_problem() -> None:
    assert {(e["scenario"], e["load"], e["preemptive"]) for e in ENTRIES} == {
        (s, x, p) for s, x in KNOWN_POINTS for p in (False, True)
    }
    for e in ENTRIES:
        workload = load_scenario(e["scenario"]).build(load=e["load"])
        assert e["problem"] == problem_digest(workload, e["preemptive"])
        assert known_optimum(workload, e["preemptive"]) == e["mean_response_time"]
    # another problem (another load, a blocking target) has no shipped value
    assert known_optimum(load_scenario("sf-fig2").build(load=0.55), False) is None
    assert known_optimum(load_scenario("sf-fig2").build(load=0.5), False, blocking_target=1e-5) is None


@pytest.mark.parametrize("preemptive", [False, True])
def test_a_small_shipped_optimum_is_the_solvers_answer(preemptive: bool) -> None:
    entry = next(
        e for e in ENTRIES if (e["scenario"], e["load"], e["preemptive"]) == ("sf-fig2", 0.5, preemptive)
    )
    assert _solve(entry) == pytest.approx(entry["mean_response_time"], rel=1e-9)


@pytest.mark.slow
@pytest.mark.parametrize(
    "entry", ENTRIES, ids=[f"{e['scenario']}@{e['load']}-{e['preemptive']}" for e in ENTRIES]
)
def test_every_shipped_optimum_is_the_solvers_answer(entry: dict) -> None:
    assert _solve(entry) == pytest.approx(entry["mean_response_time"], rel=1e-9)


def test_the_leaderboard_and_benchmark_read_them_without_a_solve(monkeypatch) -> None:
    from msj_gym.analysis import solutions
    from msj_gym.experiments.tracks.queueing import exact_optima

    def refuse(*args, **kwargs):
        raise AssertionError("solved a shipped optimum")

    monkeypatch.setattr(solutions, "solved_table", refuse)
    got = exact_optima("one-or-all", 0.9)
    want = {
        ("non-preemptive" if e["preemptive"] is False else "preemptive"): e["mean_response_time"]
        for e in ENTRIES
        if (e["scenario"], e["load"]) == ("one-or-all", 0.9)
    }
    assert got == want
