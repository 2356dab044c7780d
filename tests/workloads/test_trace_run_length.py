"""A trace replay runs all its jobs by default, and discards a tenth of them (not the tenth of 100,000
arrivals an endless stream would): ``simulate`` and ``leaderboard`` on the GPU trace fixtures, and on a
longer trace written here in Helios's schema."""

from __future__ import annotations

import json
import pathlib

import pytest

from msj_gym.cli import main
from msj_gym.experiments.leaderboard import LeaderboardConfig, plan
from msj_gym.experiments.tracks.queueing import trace_jobs
from msj_gym.workloads.scenarios import load_scenario
from msj_gym.workloads.trace import replay_length

FIXTURES = pathlib.Path(__file__).parent / "fixtures" / "gpu_traces"
# one file of each format (acme's two files share a schema)
FILES = (
    "cluster_log.csv",
    "job_info_df.csv",
    "trace_seren.csv",
    "pai_task_table.csv",
    "openb_pod_list_default.csv",
)


def _helios(path: pathlib.Path, jobs: int) -> str:
    """A Helios ``cluster_log.csv`` of ``jobs`` jobs, one a minute, 1 to 8 GPUs; its scenario spec."""
    rows = ["job_id,user,vc,gpu_num,cpu_num,node_num,state,submit_time,start_time,end_time,duration,queue"]
    for i in range(jobs):
        h, m = divmod(i, 60)
        t = f"2020-06-{10 + h // 24:02d} {h % 24:02d}:{m:02d}:00"
        rows.append(f"{i},u,vc,{1 + i % 8},1,1,COMPLETED,{t},{t},{t},{30 + 7 * (i % 5)},0")
    path.write_text("\n".join(rows) + "\n")
    return f"helios:{path}?num_servers=16"


def _simulate(capsys: pytest.CaptureFixture[str], *args: str) -> dict:
    assert main(["simulate", "--policy", "first-fit", "--json", *args]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("name", FILES)
def test_simulate_replays_a_short_trace_whole(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    spec = f"gpu:{FIXTURES / name}"
    jobs = replay_length(load_scenario(spec).build())
    assert jobs is not None and 2 <= jobs < 10
    out = _simulate(capsys, "--scenario", spec)
    assert (out["provenance"]["num_arrivals"], out["provenance"]["warmup"]) == (jobs, 0)
    assert out["num_measured"] == jobs


def test_simulate_discards_a_tenth_of_the_trace(tmp_path: pathlib.Path, capsys) -> None:
    spec = _helios(tmp_path / "cluster_log.csv", 250)
    out = _simulate(capsys, "--scenario", spec, "--load", "0.5")
    assert (out["provenance"]["num_arrivals"], out["provenance"]["warmup"]) == (250, 25)
    assert out["num_measured"] == 225
    # more arrivals asked than the trace holds: the warm-up is a tenth of what it replays
    out = _simulate(capsys, "--scenario", spec, "--load", "0.5", "--arrivals", "100000")
    assert (out["provenance"]["num_arrivals"], out["provenance"]["warmup"]) == (100_000, 25)
    assert out["num_measured"] == 225
    out = _simulate(capsys, "--scenario", spec, "--load", "0.5", "--arrivals", "100", "--warmup", "5")
    assert out["num_measured"] == 95  # what is given is kept
    # a synthetic scenario keeps the defaults of an endless stream
    assert replay_length(load_scenario("sf-fig2").build()) is None


def test_leaderboard_runs_a_trace_whole_and_a_scenario_as_before(tmp_path: pathlib.Path) -> None:
    spec = _helios(tmp_path / "cluster_log.csv", 250)
    short = f"helios:{FIXTURES / 'cluster_log.csv'}"
    config = LeaderboardConfig(scenarios=(spec, short, "sf-fig2"), policies=("fcfs",), loads="0.5", seeds=1)
    assert (trace_jobs(spec), trace_jobs(short), trace_jobs("sf-fig2")) == (250, 3, None)
    points = plan(config).points
    lengths = {p.scenario: (p.num_arrivals, p.warmup) for p in points}
    assert lengths == {spec: (250, 25), short: (3, 0), "sf-fig2": (20_000, 2_000)}
    assert config.identity()["arrivals"] == {spec: 250, short: 3, "sf-fig2": 20_000}
    # a configuration without traces keeps the identity its folders were written with
    plain = LeaderboardConfig(policies=("fcfs",), loads="0.5", seeds=1).identity()
    assert (plain["arrivals"], plain["warmup"]) == (20_000, 2_000)


def test_leaderboard_cli_on_a_short_trace(tmp_path: pathlib.Path, capsys) -> None:
    spec = f"helios:{FIXTURES / 'cluster_log.csv'}"
    args = ["leaderboard", "--scenario", spec, "--loads", "0.5", "--seeds", "1", "--policies", "fcfs,msf"]
    assert main([*args, "--workers", "1", "--out", str(tmp_path / "lb")]) == 0
    assert "(1 seeds x 3 arrivals, 0 warm-up)" in capsys.readouterr().out
    rows = [json.loads(line) for line in (tmp_path / "lb" / "runs.jsonl").read_text().splitlines()]
    assert len(rows) == 2 and all(r["num_arrivals"] == 3 and r["stable"] for r in rows)
    # a warm-up that leaves nothing to measure: refused before anything is written
    assert main([*args, "--warmup", "2", "--out", str(tmp_path / "bad")]) == 2
    err = capsys.readouterr().err
    assert "--warmup" in err and "3 jobs" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "bad").exists()
