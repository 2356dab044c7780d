"""Suite v2: trace points of the HPC protocol beside the queueing points, each scored on its own
metric against the best heuristic on each sequence, and a published train/test split (a tiny suite on a
hand-made log: 1 queueing point, 2 trace points, 3 seeds)."""

from __future__ import annotations

import csv
import math

import numpy as np
import pytest

from msj_gym import Simulator
from msj_gym.cli import main
from msj_gym.experiments import benchmark as bm
from msj_gym.experiments.sequences import sequence_starts, sequence_workload
from msj_gym.registry import make_policy
from msj_gym.workloads.scenarios import load_scenario
from tests.experiments.test_sequences import _log

POLICIES = ["fcfs", "first-fit", "msf", "lsf", "wfp3-easy", "sjf", "easy-backfilling"]
SEEDS = (0, 1, 2)


@pytest.fixture(scope="module")
def v2(tmp_path_factory):
    folder = tmp_path_factory.mktemp("v2")
    spec = _log(folder, jobs=300)
    points = {
        "log-a": bm.SequencePoint(spec, length=40, window=None),
        "log-b": bm.SequencePoint(spec + "?tau=30", length=60, window=200),
    }
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(bm, "BENCHMARK_SUITE", (("sf-fig2", 0.5),))
        mp.setattr(bm, "SEQUENCE_POINTS", points)
        mp.setattr(bm, "TRACE_POINTS_V2", (("log-a", 40.0), ("log-b", 60.0)))
        mp.setattr(bm, "TRAIN_POINTS_V2", (("log-a", 40.0),))
        mp.setattr(bm, "MODEL_POINTS_V2", ())  # the moldable and compatibility points: test_benchmark_models
        mp.setattr(bm, "_policy_ids", lambda preemptive: list(POLICIES))
        mp.setattr(bm, "exact_optima", lambda scenario, load: {})
        config = bm.BenchmarkConfig(suite="v2", seeds=SEEDS, arrivals=2000)
        report = bm.run_benchmark(config, folder / "out", workers=1, progress=False)
        yield folder, spec, points, config, report


def _row(report, scenario, entrant):
    return next(r for r in report["points"] if r.scenario == scenario and r.entrant == entrant)


def test_suite_versions_and_the_published_split() -> None:
    assert bm.suite_points("v1") == bm.BENCHMARK_SUITE
    v2 = bm.suite_points("v2")
    assert v2[: len(bm.BENCHMARK_SUITE)] == bm.BENCHMARK_SUITE  # v1's points, unchanged
    assert {"swf-sdsc-sp2", "swf-hpc2n"} <= {sc for sc, _ in v2}
    assert set(bm.TRAIN_POINTS_V2) < set(v2)
    assert bm.point_split("v1", ("sf-fig2", 0.7)) == ""
    assert bm.point_split("v2", ("sf-fig2", 0.7)) == "train"
    assert bm.point_split("v2", ("swf-hpc2n", 1024.0)) == "test"
    config = bm.BenchmarkConfig(suite="v2")
    assert set(config.test_points) | set(config.train_points) == set(v2)
    assert not set(config.test_points) & set(config.train_points)
    assert config.metric_at("swf-hpc2n") == "mean_bounded_slowdown"
    assert config.metric_at("sf-fig2") == "mean_response_time"
    assert bm.BenchmarkConfig(suite="v2", metric="makespan").metric_at("swf-hpc2n") == "makespan"


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"suite": "v4"}, "--suite: expected one of v1, v2, v3, got 'v4'"),
        ({"suite": "v4", "points": (("sf-fig2", 0.5),)}, "--suite: expected one of v1, v2, v3, got 'v4'"),
        ({"points": (("swf-hpc2n", 512.0),)}, "a trace point's x is its sequences' length, 1024"),
    ],
)
def test_bad_suites_are_one_line_errors(kwargs, message) -> None:
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        bm.BenchmarkConfig(**kwargs)


def test_a_trace_run_is_the_protocols_sequence(v2) -> None:
    """Run s of a trace point schedules the sequence the protocol draws with seed s (as ``msj-gym
    sequences`` does), from an empty machine, and stores its bounded slowdown (tau from the spec)."""
    _, spec, points, _, report = v2
    trace = load_scenario(spec + "?tau=30").build()
    values = []
    for seed in SEEDS:
        start = int(sequence_starts(int(trace.arrival_time.size), 60, 1, seed, window=200)[0])
        assert points["log-b"].start(seed) == start
        wl = sequence_workload(trace, start, 60)
        assert wl.slowdown_tau == 30.0
        values.append(Simulator(wl, make_policy("wfp3-easy"), num_arrivals=60, warmup=0).run())
    got = _row(report, "log-b", "wfp3-easy").value
    assert got == pytest.approx(np.mean([r.mean_bounded_slowdown for r in values]), rel=1e-12)
    assert min(r.mean_bounded_slowdown for r in values) >= 1.0


def test_the_swf_trace_points_schedule_rlschedulers_own_sequences(tmp_path) -> None:
    """Runs 0 to 9 of a point with RLScheduler's starts are the ten sequences of its table for seed 1,
    in their order; further runs continue its draws."""
    spec = _log(tmp_path, jobs=300)
    point = bm.SequencePoint(spec, length=40, window=200, starts="rlscheduler")
    drawn = sequence_starts(300, 40, 12, 1, window=200, starts="rlscheduler").tolist()
    assert [point.start(seed) for seed in range(12)] == drawn
    assert [point.start(seed) for seed in range(12)] != [
        bm.SequencePoint(spec, length=40, window=200).start(seed) for seed in range(12)
    ]


def test_trace_points_are_scored_per_sequence(v2) -> None:
    _, _, _, _, report = v2
    scales = {s.scenario: s for s in report["scales"]}
    for name in ("log-a", "log-b"):
        scale = scales[name]
        assert scale.metric == "mean_bounded_slowdown"
        assert scale.low_ref == "fcfs" and scale.high_ref == "best heuristic per sequence"
        assert _row(report, name, "fcfs").scores == [0.0] * len(SEEDS)
        # on every sequence one reference heuristic (a size-oblivious one, or one that reads requested
        # times) scores 100 and none more; EASY on exact run times is no reference and may exceed it
        refs = [r for r in report["points"] if r.scenario == name and r.kind == "non-preemptive"]
        assert {"wfp3-easy", "sjf", "first-fit"} <= {r.entrant for r in refs}
        for i in range(len(SEEDS)):
            assert max(r.scores[i] for r in refs) == pytest.approx(100.0)
        assert _row(report, name, "easy-backfilling").kind == "non-preemptive, size-aware"
        # a finished sequence has no steady state to miss: nothing is flagged unstable there
        assert all(r.flag == "" for r in report["points"] if r.scenario == name)
    assert scales["sf-fig2"].metric == "mean_response_time"


def test_the_score_is_over_the_test_points(v2) -> None:
    folder, _, _, config, report = v2
    assert config.train_points == (("log-a", 40.0),)
    assert set(config.test_points) == {("sf-fig2", 0.5), ("log-b", 60.0)}
    fcfs = next(a for a in report["aggregates"] if a.entrant == "fcfs")
    msf = next(a for a in report["aggregates"] if a.entrant == "msf")
    msf_rows = [_row(report, p[0], "msf") for p in config.test_points]
    assert msf.mean == pytest.approx(np.mean([r.scores for r in msf_rows]))
    train = next(a for a in report["train_aggregates"] if a.entrant == "msf")
    assert train.mean == pytest.approx(_row(report, "log-a", "msf").score)
    assert fcfs.iqm == 0.0
    # policies that run on traces only (requested times) get per-point scores, no aggregate
    assert "wfp3-easy" not in {a.entrant for a in report["aggregates"]}
    with open(folder / "out" / "benchmark.csv") as f:
        rows = list(csv.DictReader(f))
    assert {r["split"] for r in rows} == {"test", "train"}
    with open(folder / "out" / "benchmark-points.csv") as f:
        points = list(csv.DictReader(f))
    by = {(r["scenario"], r["entrant"]): r for r in points}
    assert by[("log-b", "msf")]["metric"] == "mean_bounded_slowdown"
    assert by[("log-a", "msf")]["split"] == "train"
    assert math.isclose(float(by[("log-b", "msf")]["value"]), _row(report, "log-b", "msf").value)
    text = (folder / "out" / "benchmark.md").read_text()
    assert "the train points" in text and "log-a@40 (train)" in text


def test_cli_suite_flag_errors_in_one_line(tmp_path, capsys) -> None:
    assert main(["benchmark", "--suite", "v9", "--out", str(tmp_path / "b")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--suite: expected one of v1, v2, v3, got 'v9'" in err[0]
    assert not (tmp_path / "b").exists()
