"""The exact optimum's disk cache: a failed solve is remembered under everything it depends on (the
problem, the state limit, the solver's code), and a long solve says where it is."""

from __future__ import annotations

import pytest

import msj_gym.analysis.solutions as solved_tables
from msj_gym import load_scenario


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("MSJ_GYM_CACHE", str(tmp_path))
    monkeypatch.setattr(solved_tables, "_SOLVED", {})  # no memo of this process
    return tmp_path


def _forbid_solving(monkeypatch) -> None:
    def solve_again(*_args: object, **_kw: object) -> None:
        raise AssertionError("solved again")

    monkeypatch.setattr("msj_gym.analysis.optimal.solve_optimal", solve_again)


def test_a_failed_solve_is_remembered_and_a_changed_limit_or_solver_retries(cache, monkeypatch) -> None:
    workload = load_scenario("sf-fig2").build(load=0.5)
    with pytest.raises(ValueError, match="exceed max_states=10") as first:
        solved_tables.solved_table(workload, False, max_states=10)
    assert len(list((cache / "optimal").glob("*.failed.json"))) == 1
    # a new process (no memo) with the same problem and limit: the failure without the solve
    monkeypatch.setattr(solved_tables, "_SOLVED", {})
    _forbid_solving(monkeypatch)
    with pytest.raises(ValueError) as again:
        solved_tables.solved_table(workload, False, max_states=10)
    assert str(again.value) == str(first.value)  # word for word: golden files record the reason
    # a larger limit, another blocking target, the other kind, a changed solver: each is solved anew
    for call in (
        lambda: solved_tables.solved_table(workload, False, max_states=11),
        lambda: solved_tables.solved_table(workload, False, blocking_target=1e-5, max_states=10),
        lambda: solved_tables.solved_table(workload, True, max_states=10),
    ):
        with pytest.raises(AssertionError, match="solved again"):
            call()
    monkeypatch.setattr(solved_tables, "_SOLVED", {})
    monkeypatch.setattr(solved_tables, "solver_version", lambda: "another solver")
    with pytest.raises(AssertionError, match="solved again"):
        solved_tables.solved_table(workload, False, max_states=10)


def test_a_success_at_a_larger_limit_wins_over_a_remembered_failure(cache, monkeypatch) -> None:
    from msj_gym.analysis.optimal import solve_optimal

    workload = load_scenario("sf-fig2").build(load=0.5)
    with pytest.raises(ValueError):
        solved_tables.solved_table(workload, False, max_states=10)
    sol = solve_optimal(workload, check_buffers=False)
    solved_tables.remember_solution(workload, sol, 1e-6)  # what `msj-gym optimal` does
    table = solved_tables.solved_table(workload, False, max_states=10)
    assert table["value"]["mean_response_time"] == sol.mean_response_time


def test_a_torn_or_foreign_failure_record_is_ignored(cache, monkeypatch) -> None:
    from msj_gym.analysis import optimal

    workload = load_scenario("sf-fig2").build(load=0.5)
    with pytest.raises(ValueError):
        solved_tables.solved_table(workload, False, max_states=10)
    (record,) = (cache / "optimal").glob("*.failed.json")
    solves = []
    real = optimal.solve_optimal

    def counted(*args: object, **kw: object) -> object:
        solves.append(1)
        return real(*args, **kw)

    monkeypatch.setattr(optimal, "solve_optimal", counted)
    for text in ('{"key_doc": "another problem", "error": "x"}', '{"key_doc": '):
        record.write_text(text)
        monkeypatch.setattr(solved_tables, "_SOLVED", {})
        with pytest.raises(ValueError, match="exceed max_states"):
            solved_tables.solved_table(workload, False, max_states=10)
    assert len(solves) == 2  # neither record was taken for this problem's failure: solved each time


def test_a_long_solve_prints_its_progress(cache, monkeypatch, capsys) -> None:
    monkeypatch.setattr("msj_gym.core.jit.ANNOUNCE_AFTER", 0.0)  # every solve counts as long
    solved_tables.solved_table(load_scenario("sf-fig2").build(load=0.5), False)
    err = capsys.readouterr().err
    lines = [x for x in err.splitlines() if "solving the exact non-preemptive optimum of sf-fig2" in x]
    assert any(" s] buffers [" in x for x in lines), err
    assert any(" s] blocked fractions" in x for x in lines), err
    # from the cache: silent
    monkeypatch.setattr(solved_tables, "_SOLVED", {})
    solved_tables.solved_table(load_scenario("sf-fig2").build(load=0.5), False)
    assert "solving" not in capsys.readouterr().err


def test_a_cached_optimum_is_checked_once_per_content_and_its_check_handed_to_workers(tmp_path, monkeypatch):
    from msj_gym.analysis import optimal, solutions
    from msj_gym.workloads.scenarios import load_scenario

    monkeypatch.setenv("MSJ_GYM_CACHE", str(tmp_path))
    workload = load_scenario("sf-fig2").build(load=0.52)
    solutions.solved_table(workload, False)  # solved here: nothing to check
    checks = []
    real = optimal.check_solution
    monkeypatch.setattr(optimal, "check_solution", lambda *a, **k: checks.append(1) or real(*a, **k))
    handed = solutions.verified_now()
    for fresh in (True, False):  # a new process reading the entry; then one given its parent's checks
        monkeypatch.setattr(solutions, "_VERIFIED", set())
        solutions._SOLVED.clear()
        if not fresh:
            solutions.take_verified(handed)
        solutions.solved_table(workload, False)
    assert checks == [1]
