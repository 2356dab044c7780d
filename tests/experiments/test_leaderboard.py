"""Leaderboards at a tiny size: ranking and stability against theory, common random numbers, resuming,
bit-identical results across backends and worker counts, agents, bad input."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from msj_gym.cli import main
from msj_gym.experiments.leaderboard import (
    LeaderboardConfig,
    format_tables,
    parse_loads,
    parse_seeds,
    run_leaderboard,
)
from msj_gym.experiments.tracks.queueing import TERMINAL_WIDTH
from msj_gym.registry import stability_limit
from msj_gym.workloads.scenarios import load_scenario

SMALL = dict(policies=("fcfs", "msf", "server-filling"), loads="0.5,0.7", seeds=2, arrivals=3000)


def _metrics(out) -> dict[str, dict]:
    rows = [json.loads(x) for x in (out / "runs.jsonl").read_text().splitlines()]
    return {r["key"]: {k: v for k, v in r.items() if k != "provenance"} for r in rows}


def test_ranking_and_stability_against_theory(tmp_path) -> None:
    report = run_leaderboard(LeaderboardConfig(**SMALL), tmp_path, workers=1, progress=False)
    at = {(r.x, r.entrant): r for r in report["rows"]}
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
    assert at["agent:msf_through_env"].mean("mean_response_time") == at["msf"].mean("mean_response_time")
    assert at["agent:msf_through_env"].diff == 0.0 or at["msf"].diff == 0.0
    assert at["agent:RandomAgent"].kind == "agent"
    # a seeded random agent is reproducible
    first = _metrics(tmp_path)
    (tmp_path / "runs.jsonl").unlink()
    (tmp_path / "leaderboard.json").unlink()
    run_leaderboard(config, tmp_path, workers=1, progress=False)
    assert _metrics(tmp_path) == first


def test_the_plan_resolves_each_entrants_key_once(monkeypatch) -> None:
    """Every run of an entrant carries the key its plan worked out once for it (a registered policy, a
    policy of the user's own, an agent), and it is the key worked out from the run alone."""
    from dataclasses import replace

    import msj_gym.experiments.runner as runner
    from msj_gym.experiments.leaderboard import plan

    config = LeaderboardConfig(
        **{**SMALL, "policies": ("msf", "msj_gym.agents.rules:LsfShortest")},
        agents=(f"{__name__}:msf_through_env",),
    )
    calls: list[tuple[str, str | None]] = []
    keyed = runner.entrant_key
    monkeypatch.setattr(runner, "entrant_key", lambda p, a=None: calls.append((p, a)) or keyed(p, a))
    the_plan = plan(config)
    points = the_plan.points
    assert len(calls) == len(the_plan.entrants["sf-fig2"]) == 3 and len(points) == 3 * 2 * 2
    for p in points:
        assert p.code == runner.code_version(replace(p, code=None))
    codes = {p.series: p.code for p in points}
    assert len(set(codes.values())) == 3  # each depends on other files
    assert replace(points[0], code="other") == points[0]  # the key is not part of the point


def test_an_agents_runs_are_keyed_by_the_code_its_network_runs() -> None:
    """A shipped network decides with code of msj_gym.agents (the class-set network's guard, gate and
    simulated selection), not only with its checkpoint: a change there must not reuse its runs."""
    from msj_gym.experiments.runner import entrant_files

    names = {Path(f).name for f in entrant_files("agent:generalist", "generalist")}
    assert {"set_policy.py", "system_model.py", "generalist.json", "generalist.zip"} <= names
    assert not {"set_policy.py", "system_model.py"} & {Path(f).name for f in entrant_files("msf")}


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
    assert agent.stable and 0 < agent.mean("mean_response_time") < 50 and agent.vs == "first-fit"


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
    with pytest.raises(ValueError, match=r"no metadata 'model\.json' beside it"):
        run_leaderboard(LeaderboardConfig(**SMALL, agents=(str(bad),)), tmp_path / "a", progress=False)
    with pytest.raises(ValueError, match="does not load"):  # admitted without its .json, it still must load
        config = LeaderboardConfig(**SMALL, agents=(str(bad),), bare_agents=True)
        run_leaderboard(config, tmp_path / "a", progress=False)
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
    tables = [line for line in out.splitlines() if not line.startswith("wrote in ")]  # a path: any length
    assert max(map(len, tables)) <= 120 and "weighted T ± CI" not in out
    # the same folder again with --wide: the finished runs reprinted with every column
    assert main([*argv, "--arrivals", "2000", "--workers", "1", "--out", str(tmp_path), "--wide"]) == 0
    wide = capsys.readouterr().out
    assert "weighted T ± CI" in wide and "P(wait)" in wide and "non-preemptive" in wide
    assert main(["leaderboard", "--policies", "bogus", "--out", str(tmp_path / "x")]) == 2
    assert "unknown policy 'bogus'" in capsys.readouterr().err
    assert main(["reproduce", "--list"]) == 0
    assert "004-fig2" in capsys.readouterr().out


def test_exact_optimum_rows_and_gap_column(tmp_path) -> None:
    from msj_gym.analysis.optimal import solve_optimal

    config = LeaderboardConfig(policies=("msf", "mdp-optimal"), loads="0.6", seeds=2, arrivals=3000)
    report = run_leaderboard(config, tmp_path, workers=1, progress=False)
    exact = solve_optimal(load_scenario("sf-fig2").build(load=0.6), check_buffers=False).mean_response_time
    optima = {ref.kind: ref.value for ref in report["references"][("sf-fig2", 0.6)]}
    assert optima["non-preemptive"] == pytest.approx(exact, rel=1e-9)
    for row in report["rows"]:
        assert row.gap == pytest.approx((row.mean("mean_response_time") - exact) / exact)
    md = (tmp_path / "leaderboard.md").read_text()
    assert "| - | optimum over size-oblivious policies (exact) | non-preemptive | " in md
    assert "gap to optimum" in md and "weighted T" in md
    # the terminal's tables fit 120 columns, the optimum rows say they are over size-oblivious policies,
    # and --wide has every column
    text = format_tables(report)
    assert max(map(len, text.splitlines())) <= TERMINAL_WIDTH, text
    assert re.search(r"^-\s+size-oblivious optimum\s+no\s+no\s+\d", text, flags=re.M), text
    assert "a size-aware entrant can beat it" in " ".join(text.split())
    assert "weighted T ±" not in text and "P(wait)  " not in text and "--wide" in text
    wide = format_tables(report, wide=True)
    assert "optimum over size-oblivious policies (exact)  non-preemptive" in wide
    assert "weighted T ± CI" in wide and "P(wait)" in wide and "theory source" in wide
    # no optimum where the chain is out of reach: the column says n/a
    big = LeaderboardConfig(scenarios=("bs-fig1",), policies=("msf",), loads="0.6", seeds=1, arrivals=500)
    rows = run_leaderboard(big, tmp_path / "big", workers=1, progress=False)["rows"]
    assert all(r.gap != r.gap for r in rows)  # NaN


def test_a_preemptive_agent_is_held_to_the_preemptive_optimum(tmp_path) -> None:
    config = LeaderboardConfig(
        policies=("msf",), loads="0.7", seeds=1, arrivals=1000, agents=("rollout-preemptive-sf-fig2-0.7",)
    )
    report = run_leaderboard(config, tmp_path, workers=1, progress=False)
    optima = {ref.kind: ref.value for ref in report["references"][("sf-fig2", 0.7)]}
    at = {r.entrant: r for r in report["rows"]}
    agent = at["agent:rollout-preemptive-sf-fig2-0.7"]
    assert agent.kind == "agent, preemptive" and at["msf"].kind == "non-preemptive"
    expected = (agent.mean("mean_response_time") - optima["preemptive"]) / optima["preemptive"]
    assert agent.gap == pytest.approx(expected)
    assert at["msf"].gap == pytest.approx(
        (at["msf"].mean("mean_response_time") - optima["non-preemptive"]) / optima["non-preemptive"]
    )


# --- issue 19: a run's identity is its content; an output folder has one writer ---------------------

TINY = dict(policies=("msf",), loads="0.5", seeds=1, arrivals=1000)


def _scenario_file(tmp_path, big_job_mean: float = 1.0):
    """sf-fig2 as a file, its need-8 jobs' mean duration set to ``big_job_mean``."""
    from importlib.resources import files

    text = (files("msj_gym.workloads") / "scenarios" / "sf-fig2.toml").read_text()
    head, sep, tail = text.rpartition("mean = 1.0")
    path = tmp_path / "mine.toml"
    path.write_text(head + sep.replace("1.0", repr(big_job_mean)) + tail)
    return path


def test_edited_scenario_file_is_refused_never_reused(tmp_path, monkeypatch, capsys) -> None:
    import msj_gym.experiments.runner as runner

    scenario = _scenario_file(tmp_path)
    config = LeaderboardConfig(**TINY, scenarios=(str(scenario),))
    out = tmp_path / "out"
    first = run_leaderboard(config, out, workers=1, progress=False)["rows"][0].mean("mean_response_time")
    kept = (out / "runs.jsonl").read_text()
    row = json.loads(kept)
    assert row["content"] and row["code"].startswith(row["provenance"]["version"] + "+")

    def no_run(point):
        raise AssertionError(f"reran {point}")

    # the same file unchanged: resumed, nothing reruns
    with monkeypatch.context() as m:
        m.setattr(runner, "run_point", no_run)
        again = run_leaderboard(config, out, workers=1, progress=False)["rows"][0].mean("mean_response_time")
    assert again == first and (out / "runs.jsonl").read_text() == kept

    # the big jobs made 10x longer in the same file: refused, nothing written, the old run not reused
    _scenario_file(tmp_path, 10.0)
    monkeypatch.setattr(runner, "_CONTENT", {})  # a new process would not have the old hash cached
    argv = ["leaderboard", "--scenario", str(scenario), "--policies", "msf", "--loads", "0.5"]
    argv += ["--seeds", "1", "--arrivals", "1000", "--workers", "1", "--out", str(out)]
    assert main(argv) == 2
    captured = capsys.readouterr()
    err = captured.err.strip()
    assert "\n" not in err and "scenario content" in err and str(out) in err and "mine.toml" in err
    assert row["content"] in err and "sf-fig2" not in captured.out
    assert (out / "runs.jsonl").read_text() == kept
    # into a new folder it runs anew, on the new system
    new = run_leaderboard(config, tmp_path / "new", workers=1, progress=False)["rows"][0]
    assert new.mean("mean_response_time") > 2 * first
    assert json.loads((tmp_path / "new" / "runs.jsonl").read_text())["content"] != row["content"]


def test_changed_code_and_rows_without_hashes_are_refused(tmp_path, monkeypatch) -> None:
    import msj_gym.experiments.runner as runner

    config = LeaderboardConfig(**TINY)
    run_leaderboard(config, tmp_path, workers=1, progress=False)
    runs = tmp_path / "runs.jsonl"
    kept = runs.read_text()
    with monkeypatch.context() as m:
        m.setattr(runner, "_CODE", {k: v + "x" for k, v in runner._CODE.items()})  # as if a module changed
        with pytest.raises(runner.StaleRuns, match=r"code \S+ there vs \S+x now"):
            run_leaderboard(config, tmp_path, workers=1, progress=False)
    # a row written before content hashes existed (keyed by the point alone)
    row = json.loads(kept)
    d = json.loads(row["key"])
    del d["content"], d["code"]
    old = {k: v for k, v in row.items() if k not in ("content", "code")}
    runs.write_text(json.dumps({**old, "key": json.dumps(d, sort_keys=True)}) + "\n")
    with pytest.raises(runner.StaleRuns, match="without content hashes"):
        run_leaderboard(config, tmp_path, workers=1, progress=False)


def test_a_second_writer_is_refused_and_writes_nothing(tmp_path, capsys) -> None:
    import subprocess
    import sys

    out = tmp_path / "out"
    out.mkdir()
    lock = out / ".msj-gym.lock"
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import fcntl, sys, time\n"
            "f = open(sys.argv[1], 'a'); fcntl.flock(f, fcntl.LOCK_EX); print('held', flush=True)\n"
            "time.sleep(120)",
            str(lock),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        argv = ["leaderboard", "--policies", "msf", "--loads", "0.5", "--seeds", "1", "--arrivals", "1000"]
        assert main([*argv, "--workers", "1", "--out", str(out)]) == 2
        err = capsys.readouterr().err.strip()
        assert "\n" not in err and str(out) in err and "another msj-gym command is writing" in err
        assert main(["figure", "004-fig2", "--arrivals", "1000", "--workers", "1", "--out", str(out)]) == 2
        assert "another msj-gym command is writing" in capsys.readouterr().err
        assert [p.name for p in out.iterdir()] == [".msj-gym.lock"] and lock.read_text() == ""
    finally:
        holder.kill()
        holder.wait()
    # the holder gone (killed: the OS released its lock), the folder is free again
    assert main([*argv, "--workers", "1", "--out", str(out)]) == 0


def _make_read_only(out, monkeypatch) -> None:
    """``chmod -R a-w out``; as root (who may write anyway) refuse every write under ``out`` instead."""
    import builtins
    import errno
    import io
    import os
    import stat

    if os.geteuid() != 0:
        for p in [out, *out.rglob("*")]:
            p.chmod(p.stat().st_mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))
        return
    real_open = io.open
    root = str(out)

    def guarded(file, mode="r", *args, **kwargs):
        if str(file).startswith(root) and any(c in mode for c in "wax+"):
            raise PermissionError(errno.EACCES, "Permission denied", str(file))
        return real_open(file, mode, *args, **kwargs)

    def no_replace(src, dst, *args, **kwargs):
        raise PermissionError(errno.EACCES, "Permission denied", str(dst))

    monkeypatch.setattr(io, "open", guarded)
    monkeypatch.setattr(builtins, "open", guarded)
    monkeypatch.setattr(os, "replace", no_replace)


def test_finished_folder_on_read_only_media_is_reprinted(tmp_path, monkeypatch, capsys) -> None:
    out = tmp_path / "out"
    argv = ["leaderboard", "--policies", "msf", "--loads", "0.5", "--seeds", "1", "--arrivals", "1000"]
    argv += ["--workers", "1", "--out", str(out)]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    before = {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in out.iterdir()}
    _make_read_only(out, monkeypatch)
    try:
        assert main(argv) == 0
        again = capsys.readouterr()
        assert again.out.splitlines()[:-1] == printed.splitlines()[:-1] and "msf" in again.out
        assert {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in out.iterdir()} == before
        # a run missing there cannot be made: a one-line error, nothing written
        assert main([*argv[:-4], "--seeds", "2", "--workers", "1", "--out", str(out)]) == 2
        assert "another configuration" in capsys.readouterr().err
    finally:
        monkeypatch.undo()
        for p in [out, *out.rglob("*")]:
            p.chmod(p.stat().st_mode | 0o200)


def fake_run(point) -> dict:
    """A stand-in for a simulation: the runner's bookkeeping is what is tested."""
    return {"mean_response_time": float(point.seed), "stable": True}


def test_a_swapped_trace_is_a_different_run(tmp_path, monkeypatch) -> None:
    import msj_gym.experiments.runner as runner
    import msj_gym.workloads.swf as swf
    from msj_gym.experiments.runner import Point, StaleRuns, run_points, scenario_content

    jobs = [f"{i} {10 * i} 0 {50 + i} {1 + i % 2} -1 -1 1 100 -1 1 3 1 -1 0 -1 -1 -1" for i in range(1, 30)]
    trace = tmp_path / "log.swf"
    trace.write_text("; MaxProcs: 8\n" + "\n".join(jobs) + "\n")
    point = Point("msf", 0.5, f"swf:{trace}", "msf", 0, 100, build={"num_servers": 8, "load": 0.5})
    results = tmp_path / "out" / "runs.jsonl"
    run_points([point], results, progress=False, run=fake_run, content=scenario_content)
    kept = results.read_text()
    run_points([point], results, progress=False, run=fake_run, content=scenario_content)  # resumed
    assert results.read_text() == kept
    # the same file name, one job 1 s longer: a new process reads it anew, and refuses the old run
    trace.write_text("; MaxProcs: 8\n" + "\n".join([jobs[0].replace(" 51 ", " 52 "), *jobs[1:]]) + "\n")
    monkeypatch.setattr(runner, "_CONTENT", {})
    monkeypatch.setattr(swf, "_LOGS", {})
    with pytest.raises(StaleRuns, match="scenario content"):
        run_points([point], results, progress=False, run=fake_run, content=scenario_content)
    assert results.read_text() == kept


def test_plot_has_a_panel_per_family_and_merges_identical_curves(tmp_path, monkeypatch) -> None:
    pytest.importorskip("matplotlib")
    import matplotlib.figure

    from msj_gym.experiments.leaderboard_plot import plot_scenario
    from msj_gym.experiments.tracks.base import Row, Standing

    curves = {  # entrant -> (kind, mean response time per load, first unstable load index or None)
        "fcfs": ("non-preemptive", [2.0, 9.0, 80.0], 1),
        "bs": ("non-preemptive", [2.0, 9.0, 80.0], 1),
        "msf": ("non-preemptive", [1.5, 3.0, 6.0], None),
        "server-filling": ("preemptive", [1.2, 2.0, 4.0], None),
        "server-filling-srpt": ("preemptive, size-aware", [1.0, 1.5, 2.5], None),
        "agent:ppo": ("agent", [1.3, 2.5, 5.0], 2),
    }
    loads = [0.5, 0.7, 0.9]
    rows, standings = [], []
    for e, (kind, ys, bad) in curves.items():
        for i, (x, y) in enumerate(zip(loads, ys, strict=True)):
            stable = bad is None or i < bad
            values = {"mean_response_time": (y, 0.1), "T.need-1": (y, 0.0), "T.need-8": (2 * y, 0.0)}
            rows.append(Row("sf-fig2", x, e, kind, 1, values, stable, 3, "mean_response_time", "msf"))
        standings.append(
            Standing(
                "sf-fig2",
                e,
                kind,
                1.0,
                loads[bad - 1] if bad else (None if bad == 0 else 0.9),
                None if bad is None else loads[bad],
                None,
                "",
            )
        )
    report = {"rows": rows, "standings": standings, "config": LeaderboardConfig(**{**SMALL, "seeds": 3})}
    figures = []
    save = matplotlib.figure.Figure.savefig
    monkeypatch.setattr(
        matplotlib.figure.Figure, "savefig", lambda fig, *a, **k: (figures.append(fig), save(fig, *a, **k))
    )
    path = plot_scenario("sf-fig2", report, tmp_path / "plot.png", "mean response time")
    assert path is not None and path.stat().st_size > 20_000
    (fig,) = figures
    panels = [ax for ax in fig.axes if ax.axison]
    assert [ax.get_title().split(" (")[0] for ax in panels[:4]] == [
        "non-preemptive",
        "preemptive",
        "size-aware",
        "agents",
    ]
    assert len(panels) == 5  # four families and the per-class bars
    legends = [t.get_text() for ax in fig.axes if ax.get_legend() for t in ax.get_legend().get_texts()]
    assert any(t.startswith("fcfs = bs\n") and "unstable from load 0.7" in t for t in legends)
    assert any(t.startswith("msf\n") and "stable at every load tested" in t for t in legends)
    assert not any(t.startswith("bs") for t in legends)


def _children(pid: int) -> set[int]:
    try:
        return {int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()}
    except OSError:
        return set()


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"  # a zombie has exited (its new parent has not reaped it yet)


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="needs Linux /proc")
def test_kill_9_leaves_no_worker_behind(tmp_path: Path) -> None:
    cmd = [
        sys.executable,
        "-m",
        "msj_gym.cli",
        "leaderboard",
        "--out",
        str(tmp_path / "lb"),
        "--workers",
        "2",
    ]
    cmd += ["--policies", "first-fit,msf", "--loads", "0.5", "--seeds", "8", "--arrivals", "3000000"]
    main = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        workers: set[int] = set()
        while len(workers) < 2 and time.monotonic() < deadline and main.poll() is None:
            time.sleep(0.2)
            workers = _children(main.pid)
        assert len(workers) >= 2, "the leaderboard never started its workers"
        time.sleep(1.0)
        workers |= _children(main.pid)
        main.kill()
        main.wait()
        deadline = time.monotonic() + 10
        while any(_alive(w) for w in workers) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not [w for w in workers if _alive(w)], "workers outlived their killed leaderboard"
    finally:
        if main.poll() is None:
            main.kill()


def test_a_ray_address_nothing_answers_at_is_refused_at_once(tmp_path: Path, capsys) -> None:
    import socket

    with socket.socket() as s:  # a port nothing listens on: bound, never listening
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        out = tmp_path / "lb"
        t0 = time.monotonic()
        code = main(["leaderboard", "--out", str(out), "--backend", "ray", "--address", f"127.0.0.1:{port}"])
    assert code != 0 and time.monotonic() - t0 < 10
    err = capsys.readouterr().err
    assert f"--address: no Ray cluster answers at '127.0.0.1:{port}'" in err
    assert len(err.strip().splitlines()) == 1
    assert not out.exists()  # refused before anything was written


@pytest.mark.parametrize("address", ["nonsense", "host:port"])
def test_a_malformed_ray_address_is_refused(address: str, tmp_path: Path, capsys) -> None:
    assert main(["leaderboard", "--out", str(tmp_path / "lb"), "--backend", "ray", "--address", address]) != 0
    assert "--address: expected HOST:PORT" in capsys.readouterr().err


_CRASH_ARGS = ["--policies", "first-fit,msf,easy-backfilling", "--loads", "0.5,0.7", "--seeds", "3"]
_CRASH_ARGS += ["--arrivals", "50000", "--workers", "2"]


def _leaderboard_cmd(out: Path) -> list[str]:
    return [sys.executable, "-m", "msj_gym.cli", "leaderboard", "--out", str(out), *_CRASH_ARGS]


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="needs Linux /proc")
@pytest.mark.parametrize("kills", [2, pytest.param(4, marks=pytest.mark.slow)])
def test_killed_at_random_points_then_rerun_equals_an_uninterrupted_run(tmp_path: Path, kills: int) -> None:
    """Each kill is a run and a rerun of the leaderboard command: two in the default run, four slow."""
    import numpy as np

    t0 = time.monotonic()
    subprocess.run(_leaderboard_cmd(tmp_path / "ref"), check=True, capture_output=True)
    took = time.monotonic() - t0
    reference = _metrics(tmp_path / "ref")
    table = (tmp_path / "ref" / "leaderboard.csv").read_text()
    rng = np.random.default_rng(2026)
    # kill points: one at a random time in the start-up, the others after a random number of runs
    points = [("time", rng.uniform(0.1, 0.5) * took)]
    points += [("runs", int(r)) for r in rng.integers(1, len(reference), size=3)][: kills - 1]
    for i, (kind, at) in enumerate(points):
        out = tmp_path / f"killed-{i}"
        rows = out / "runs.jsonl"
        proc = subprocess.Popen(_leaderboard_cmd(out), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if kind == "time":
            time.sleep(at)
        else:
            deadline = time.monotonic() + 120
            while proc.poll() is None and time.monotonic() < deadline:
                if rows.exists() and len(rows.read_text().splitlines()) >= at:
                    break
                time.sleep(0.01)
        proc.kill()
        proc.wait()
        done = len(rows.read_text().splitlines()) if rows.exists() else 0
        if kind == "runs":
            assert 0 < done < len(reference), f"the kill after {at} runs fell at {done} runs"
        subprocess.run(_leaderboard_cmd(out), check=True, capture_output=True)  # resumes
        assert _metrics(out) == reference, f"killed at {done} runs done: the rerun differs"
        assert (out / "leaderboard.csv").read_text() == table


@pytest.mark.parametrize("damage", ["deleted", "corrupt", "not a dict"])
def test_a_lost_leaderboard_json_is_written_anew_and_the_runs_reused(
    tmp_path, monkeypatch, capsys, damage
) -> None:
    import msj_gym.experiments.runner as runner

    out = tmp_path / "out"
    config = LeaderboardConfig(**TINY)
    first = run_leaderboard(config, out, workers=1, progress=False)["rows"][0].mean("mean_response_time")
    kept = (out / "runs.jsonl").read_text()
    path = out / "leaderboard.json"
    if damage == "deleted":
        path.unlink()
    else:
        path.write_bytes(b"\xff{ not json" if damage == "corrupt" else b"[1, 2]")

    def no_run(point):
        raise AssertionError(f"reran {point}")

    monkeypatch.setattr(runner, "run_point", no_run)
    again = run_leaderboard(config, out, workers=1, progress=False)["rows"][0].mean("mean_response_time")
    assert again == first and (out / "runs.jsonl").read_text() == kept
    assert "written anew for this configuration" in capsys.readouterr().err
    assert json.loads(path.read_text())["config"] == config.identity()


def test_two_scenario_files_of_one_name_get_two_plots(tmp_path) -> None:
    pytest.importorskip("matplotlib")
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir(), b.mkdir()
    files = [_scenario_file(a), _scenario_file(b, 3.0)]
    config = LeaderboardConfig(**TINY, scenarios=tuple(str(f) for f in files))
    run_leaderboard(config, tmp_path / "out", workers=1, progress=False)
    plots = sorted(p.name for p in (tmp_path / "out").glob("leaderboard-mine*.png"))
    assert len(plots) == 2 and all(p.startswith("leaderboard-mine-") for p in plots)


_BROKEN_AGENT = """
class Broken:
    def predict(self, observation, state=None, episode_start=None, deterministic=True):
        raise RuntimeError("my network is not loaded")


agent = Broken()
"""


def test_an_agent_that_raises_is_named(tmp_path, monkeypatch) -> None:
    (tmp_path / "my_broken_agent.py").write_text(_BROKEN_AGENT)
    monkeypatch.syspath_prepend(str(tmp_path))
    config = LeaderboardConfig(**TINY, agents=("my_broken_agent:agent",))
    with pytest.raises(
        ValueError, match=r"--agent 'my_broken_agent:agent' failed .*RuntimeError: my network"
    ):
        run_leaderboard(config, tmp_path / "out", workers=1, progress=False)


def test_an_agent_is_size_aware_if_its_env_hands_it_sizes() -> None:
    from msj_gym.experiments.tracks.queueing import agent_sees_sizes

    assert not agent_sees_sizes({"scenario": "sf-fig2", "actions": "priority", "advisor": "msf"})
    assert agent_sees_sizes({"reveal_sizes": True})
    assert agent_sees_sizes({"actions": "priority-shortest"})
    assert agent_sees_sizes({"actions": "priority", "advisor": "easy-backfilling"})


def test_ranked_by_another_metric_over_the_same_runs(tmp_path, capsys) -> None:
    config = LeaderboardConfig(**{**SMALL, "loads": "0.5", "policies": ("fcfs", "msf", "lsf")})
    by_t = run_leaderboard(config, tmp_path, workers=1, progress=False)
    runs = (tmp_path / "runs.jsonl").read_text()
    by_p99 = run_leaderboard(
        LeaderboardConfig(
            **{**SMALL, "loads": "0.5", "policies": ("fcfs", "msf", "lsf"), "metric": "response_time_p99"}
        ),
        tmp_path,
        workers=1,
        progress=False,
    )
    assert (tmp_path / "runs.jsonl").read_text() == runs  # the same runs, ranked again: nothing reran
    rows = sorted(by_p99["rows"], key=lambda r: r.rank)
    assert [r.metric for r in rows] == ["response_time_p99"] * 3
    values = [r.value for r in rows]
    assert values == sorted(values) and values == [r.mean("response_time_p99") for r in rows]
    # each value is the mean over seeds of the runs' p99; the paired ratio is of the p99 too
    per_run = {}
    for line in runs.splitlines():
        row = json.loads(line)
        per_run.setdefault(row["policy"], []).append(row["response_time_p99"])
    for r in rows:
        assert r.value == pytest.approx(sum(per_run[r.entrant]) / 2)
    leader = rows[0]
    assert all(r.vs == leader.entrant for r in rows) and rows[-1].ratio >= 1.0
    assert all(r.mean("mean_bounded_slowdown") >= 1.0 and r.mean("makespan") > 0 for r in rows)
    assert {r.entrant: r.mean("mean_response_time") for r in by_t["rows"]} == {
        r.entrant: r.mean("mean_response_time") for r in by_p99["rows"]
    }
    text = format_tables(by_p99)
    assert "T p99 ± 95% CI" in text and "ranked by response_time_p99" in text
    # utilisation: higher is better
    util = run_leaderboard(
        LeaderboardConfig(
            **{**SMALL, "loads": "0.5", "policies": ("fcfs", "msf", "lsf"), "metric": "utilization"}
        ),
        tmp_path,
        workers=1,
        progress=False,
    )
    ranked = sorted(util["rows"], key=lambda r: r.rank)
    assert [r.value for r in ranked] == sorted((r.value for r in ranked), reverse=True)


def test_an_unknown_metric_is_refused(tmp_path, capsys) -> None:
    with pytest.raises(ValueError, match=r"--metric: expected one of mean_response_time, .*got 'p99'"):
        LeaderboardConfig(metric="p99")
    assert main(["leaderboard", "--metric", "slowdown", "--out", str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err
    assert "--metric: expected one of" in err and "'slowdown'" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "x").exists()


def test_a_leaderboard_imports_only_the_policies_it_runs(tmp_path) -> None:
    code = (
        "import sys; from msj_gym.cli import main; "
        "main(['leaderboard', '--policies', 'fcfs', '--loads', '0.5', '--seeds', '1', '--arrivals', '200', "
        "'--workers', '1', '--out', 'out']); "
        "print(sorted(m for m in sys.modules if m.startswith('msj_gym.baselines.')))"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "['msj_gym.baselines.fcfs']"
