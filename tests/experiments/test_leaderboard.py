"""Leaderboards at a tiny size: ranking and stability against theory, common random numbers, resuming,
bit-identical results across backends and worker counts, agents, bad input."""

from __future__ import annotations

import json

import pytest

from msj_gym.analysis import stability_limit
from msj_gym.cli import main
from msj_gym.experiments.leaderboard import LeaderboardConfig, parse_loads, parse_seeds, run_leaderboard
from msj_gym.workloads.scenarios import load_scenario

SMALL = dict(policies=("fcfs", "msf", "server-filling"), loads="0.5,0.7", seeds=2, arrivals=3000)


def _metrics(out) -> dict[str, dict]:
    rows = [json.loads(x) for x in (out / "runs.jsonl").read_text().splitlines()]
    return {r["key"]: {k: v for k, v in r.items() if k != "provenance"} for r in rows}


def test_ranking_and_stability_against_theory(tmp_path) -> None:
    report = run_leaderboard(LeaderboardConfig(**SMALL), tmp_path, workers=1, progress=False)
    at = {(r.load, r.entrant): r for r in report["rows"]}
    # FCFS on sf-fig2 is stable only below the saturated chain's limit, 0.595
    limit, _ = stability_limit("fcfs", load_scenario("sf-fig2").build())
    assert 0.5 < limit < 0.7
    assert at[(0.5, "fcfs")].stable and not at[(0.7, "fcfs")].stable
    assert at[(0.7, "fcfs")].rank == 3  # unstable entrants rank last
    assert at[(0.7, "server-filling")].rank == 1
    st = {s.entrant: s for s in report["standings"]}
    assert (st["fcfs"].stable_up_to, st["fcfs"].unstable_from) == (0.5, 0.7)
    assert st["fcfs"].stable_up_to < st["fcfs"].theory < st["fcfs"].unstable_from
    assert st["server-filling"].empirical == ">= 0.7" and st["server-filling"].theory == 1.0
    # paired ratios to the leader, with an interval over the two seeds
    sf = at[(0.7, "server-filling")]
    msf = at[(0.7, "msf")]
    assert sf.vs == "server-filling" and sf.ratio == 1.0 and msf.ratio > 1.0 and msf.ratio_ci95 > 0
    names = {p.name for p in report["files"]}
    assert {"leaderboard.md", "leaderboard.csv"} <= names
    md = (tmp_path / "leaderboard.md").read_text()
    assert "UNSTABLE" in md and "saturated FCFS chain" in md
    rows = [json.loads(x) for x in (tmp_path / "runs.jsonl").read_text().splitlines()]
    assert len(rows) == 3 * 2 * 2
    assert all(r["provenance"]["git_revision"] and r["provenance"]["version"] for r in rows)


def test_resume_skips_finished_points_and_survives_a_torn_write(tmp_path) -> None:
    config = LeaderboardConfig(**{**SMALL, "policies": ("msf",)})
    run_leaderboard(config, tmp_path, workers=1, progress=False)
    runs = tmp_path / "runs.jsonl"
    full = runs.read_text()
    lines = full.splitlines(keepends=True)
    # a killed run: two rows done, the third cut mid-write
    runs.write_text("".join(lines[:2]) + lines[2][:40])
    run_leaderboard(config, tmp_path, workers=1, progress=False)
    again = runs.read_text().splitlines()
    assert len(again) == len(lines) and len({json.loads(x)["key"] for x in again}) == len(lines)
    assert _metrics(tmp_path) == {json.loads(x)["key"]: _strip(json.loads(x)) for x in lines}
    before = runs.read_text()
    run_leaderboard(config, tmp_path, workers=1, progress=False)  # nothing left to do
    assert runs.read_text() == before


def _strip(row: dict) -> dict:
    return {k: v for k, v in row.items() if k != "provenance"}


def test_results_identical_across_workers_and_ray(tmp_path) -> None:
    config = LeaderboardConfig(**{**SMALL, "loads": "0.6", "seeds": 2})
    run_leaderboard(config, tmp_path / "one", workers=1, progress=False)
    run_leaderboard(config, tmp_path / "two", workers=2, progress=False)
    assert _metrics(tmp_path / "one") == _metrics(tmp_path / "two")
    pytest.importorskip("ray")
    run_leaderboard(config, tmp_path / "ray", backend="ray", workers=2, progress=False)
    assert _metrics(tmp_path / "one") == _metrics(tmp_path / "ray")


def msf_through_env(env):
    """An agent factory for the test: the MSF baseline acting through MSJ-v0."""
    from msj_gym import PolicyAgent

    return PolicyAgent("msf", env)


def test_agents_see_the_same_jobs_as_policies(tmp_path) -> None:
    config = LeaderboardConfig(
        **{**SMALL, "policies": ("msf",), "loads": "0.6"},
        agents=(f"{__name__}:msf_through_env", "msj_gym.env:RandomAgent"),
    )
    report = run_leaderboard(config, tmp_path, workers=1, progress=False)
    at = {r.entrant: r for r in report["rows"]}
    # the same decision rule through the env, on the same job streams: the same numbers exactly
    assert at["agent:msf_through_env"].mean_response_time == at["msf"].mean_response_time
    assert at["agent:msf_through_env"].diff == 0.0 or at["msf"].diff == 0.0
    assert at["agent:RandomAgent"].kind == "agent"
    # a seeded random agent is reproducible
    first = _metrics(tmp_path)
    (tmp_path / "runs.jsonl").unlink()
    (tmp_path / "leaderboard.json").unlink()
    run_leaderboard(config, tmp_path, workers=1, progress=False)
    assert _metrics(tmp_path) == first


def test_trained_checkpoint_runs_as_an_entrant(tmp_path) -> None:
    pytest.importorskip("sb3_contrib")
    from pathlib import Path

    ckpt = Path(__file__).resolve().parents[2] / "agents" / "checkpoints" / "maskable-ppo-sf-fig2-0.7.zip"
    config = LeaderboardConfig(
        policies=("first-fit",),
        loads="0.7",
        seeds=1,
        arrivals=1000,
        agents=(str(ckpt),),
        reference="first-fit",
    )
    report = run_leaderboard(config, tmp_path, workers=1, progress=False)
    agent = next(r for r in report["rows"] if r.entrant == "agent:maskable-ppo-sf-fig2-0.7")
    assert agent.stable and 0 < agent.mean_response_time < 50 and agent.vs == "first-fit"


def test_bad_input(tmp_path) -> None:
    with pytest.raises(ValueError, match="unknown policy 'nope'"):
        run_leaderboard(LeaderboardConfig(**{**SMALL, "policies": ("nope",)}), tmp_path, progress=False)
    with pytest.raises(ValueError, match="empty"):
        parse_loads("0.9:0.5:0.1")
    with pytest.raises(ValueError, match="--loads"):
        parse_loads("0.5,abc")
    with pytest.raises(ValueError, match="--seeds"):
        parse_seeds("3-x")
    with pytest.raises(ValueError, match="not defined on scenario"):  # MSFQ needs a one-or-all workload
        config = LeaderboardConfig(**{**SMALL, "policies": ("msfq",)}, scenarios=("bs-fig1",))
        run_leaderboard(config, tmp_path, progress=False)
    bad = tmp_path / "model.zip"
    bad.write_text("not a checkpoint")
    with pytest.raises(ValueError, match="does not load"):
        run_leaderboard(LeaderboardConfig(**SMALL, agents=(str(bad),)), tmp_path / "a", progress=False)
    with pytest.raises(ValueError, match="no such file"):
        run_leaderboard(LeaderboardConfig(**SMALL, agents=("missing.zip",)), tmp_path / "a", progress=False)
    out = tmp_path / "b"
    run_leaderboard(LeaderboardConfig(**{**SMALL, "policies": ("msf",), "loads": "0.5"}), out, progress=False)
    kept = (out / "runs.jsonl").read_text()
    with pytest.raises(ValueError, match=r"another configuration.*loads"):
        run_leaderboard(
            LeaderboardConfig(**{**SMALL, "policies": ("msf",), "loads": "0.6"}), out, progress=False
        )
    assert (out / "runs.jsonl").read_text() == kept  # never overwritten


def test_cli_leaderboard(tmp_path, capsys) -> None:
    argv = ["leaderboard", "--policies", "msf,first-fit", "--loads", "0.5:0.6:0.1", "--seeds", "2"]
    assert main([*argv, "--arrivals", "2000", "--workers", "1", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "sf-fig2  load 0.6" in out and "standings" in out and "first-fit" in out
    assert main(["leaderboard", "--policies", "bogus", "--out", str(tmp_path / "x")]) == 2
    assert "unknown policy 'bogus'" in capsys.readouterr().err
    assert main(["reproduce", "--list"]) == 0
    assert "004-fig2" in capsys.readouterr().out


def test_exact_optimum_rows_and_gap_column(tmp_path) -> None:
    from msj_gym.analysis.optimal import solve_optimal

    config = LeaderboardConfig(policies=("msf", "mdp-optimal"), loads="0.6", seeds=2, arrivals=3000)
    report = run_leaderboard(config, tmp_path, workers=1, progress=False)
    exact = solve_optimal(load_scenario("sf-fig2").build(load=0.6), check_buffers=False).mean_response_time
    assert report["optima"][("sf-fig2", 0.6)]["non-preemptive"] == pytest.approx(exact, rel=1e-9)
    for row in report["rows"]:
        assert row.gap == pytest.approx((row.mean_response_time - exact) / exact)
    md = (tmp_path / "leaderboard.md").read_text()
    assert "optimum (non-preemptive, exact)" in md and "gap to optimum" in md
    # no optimum where the chain is out of reach: the column says n/a
    big = LeaderboardConfig(scenarios=("bs-fig1",), policies=("msf",), loads="0.6", seeds=1, arrivals=500)
    rows = run_leaderboard(big, tmp_path / "big", workers=1, progress=False)["rows"]
    assert all(r.gap != r.gap for r in rows)  # NaN
