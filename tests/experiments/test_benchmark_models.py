"""Suite v2's moldable and compatibility points: run by the model leaderboard's machinery, scored per
seed against the model's own policies (0: the naive one, 100: the best on that seed), aggregated in a
section per model (a tiny suite: one MSJ point, two moldable and two compatibility points, 2 seeds)."""

from __future__ import annotations

import csv
import json
import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from msj_gym.cli import main
from msj_gym.experiments import benchmark as bm
from msj_gym.experiments.leaderboard import LeaderboardConfig, plan
from msj_gym.experiments.tracks import track
from msj_gym.experiments.tracks.moldable import run_moldable_point

SEEDS = (0, 1)
POINTS = (
    ("sf-fig2", 0.5),
    ("002-sub-linear-halfin-whitt", 100.0),  # a train point of v2
    ("002-sub-linear-mean-field", 1000.0),
    ("003-random-2", 0.7),
    ("003-random-3", 0.75),  # a train point of v2
)
MOLDABLE_REPLAY = "benchmark_model_agents:p_scheme"
COMPAT_REPLAY = "msj_gym.baselines:LeastLoadedAssignmentAgent"  # compat-least-loaded's runs
MSJ_AGENT = "benchmark_model_agents:msf"
AGENTS = (MOLDABLE_REPLAY, COMPAT_REPLAY, MSJ_AGENT)

MODULE = """from msj_gym import PolicyAgent
from msj_gym.env.moldable_env import MoldablePolicyAgent


def p_scheme(env):
    return MoldablePolicyAgent("moldable-p-scheme", env)


def msf(env):
    return PolicyAgent("msf", env)
"""


@pytest.fixture(scope="module")
def suite(tmp_path_factory):
    folder = tmp_path_factory.mktemp("models")
    (folder / "benchmark_model_agents.py").write_text(MODULE)
    with pytest.MonkeyPatch.context() as mp:
        mp.syspath_prepend(str(folder))
        mp.setattr(bm, "_policy_ids", lambda preemptive: ["fcfs", "first-fit", "msf"])
        mp.setattr(bm, "exact_optima", lambda scenario, load: {})
        # moldable runs as long as the others (the default is ten times as long): a fast test
        mp.setattr(track("moldable"), "default_arrivals", bm.DEFAULT_ARRIVALS)
        config = bm.BenchmarkConfig(
            suite="v2", points=POINTS, seeds=SEEDS, arrivals=600, warmup=300, agents=AGENTS
        )
        report = bm.run_benchmark(config, folder / "out", workers=1, progress=False)
        yield folder, config, report


def _row(report, scenario, entrant):
    return next(r for r in report["points"] if r.scenario == scenario and r.entrant == entrant)


def _aggregate(aggregates, entrant):
    return next(a for a in aggregates if a.entrant == entrant)


def test_the_model_points_are_in_v2_with_their_split() -> None:
    v2 = bm.suite_points("v2")
    assert v2[: len(bm.BENCHMARK_SUITE) + len(bm.TRACE_POINTS_V2)] == (
        *bm.BENCHMARK_SUITE,
        *bm.TRACE_POINTS_V2,
    )
    assert set(bm.MODEL_POINTS_V2) <= set(v2) and not set(bm.MODEL_POINTS_V2) & set(bm.suite_points("v1"))
    models = [bm.point_model(p) for p in bm.MODEL_POINTS_V2]
    assert models.count("moldable") >= 2 and models.count("compatibility") >= 2
    config = bm.BenchmarkConfig(suite="v2")
    assert config.models == ("msj", "moldable", "compatibility")
    for model in ("moldable", "compatibility"):
        assert config.section_points(model, "test"), model  # every model has a test point
    # the systems and loads the shipped agents were trained on are train points, the others test points
    assert bm.point_split("v2", ("002-sub-linear-halfin-whitt", 100.0)) == "train"
    assert bm.point_split("v2", ("002-sub-linear-halfin-whitt", 1000.0)) == "train"
    assert bm.point_split("v2", ("002-sub-linear-halfin-whitt", 4000.0)) == "test"
    assert bm.point_split("v2", ("003-random-2", 0.9)) == "train"
    assert bm.point_split("v2", ("003-random-3", 0.75)) == "train"
    assert bm.point_split("v2", ("003-random-2", 0.7)) == "test"
    for name in ("ppo-moldable-hw", "ppo-assign-random-d"):
        meta = json.loads(
            (Path(bm.__file__).parents[1] / "agents" / "checkpoints" / f"{name}.json").read_text()
        )
        for system in meta["training_systems"]:
            x = float(system.get("num_servers", system.get("load")))
            if (system["scenario"], x) in v2:
                assert bm.point_split("v2", (system["scenario"], x)) == "train"
    # the run length of a model point: its leaderboard's default at the default budget
    assert config.model_arrivals("moldable") == 200_000 and config.model_arrivals("compatibility") == 20_000
    assert config.model_warmup("moldable") == 20_000
    assert config.metric_at("003-random-2") == "mean_response_time"
    assert bm.BenchmarkConfig(suite="v2", metric="makespan").metric_at("002-sub-linear-mean-field") == "cost"


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (
            {"points": (("002-sub-linear-mean-field", 1.5),)},
            "benchmark point 002-sub-linear-mean-field@1.5: ",
        ),
        ({"points": (("003-random-2", 1.2),)}, "benchmark point 003-random-2@1.2: --loads"),
    ],
)
def test_bad_model_points_are_one_line_errors(kwargs, message) -> None:
    with pytest.raises(ValueError, match=message) as err:
        bm.BenchmarkConfig(**kwargs)
    assert "\n" not in str(err.value)


def test_parse_points_picks_a_subset_of_the_suite() -> None:
    got = bm.parse_points("003-random-2@0.7, 002-sub-linear-halfin-whitt@4000", "v2")
    assert got == (("002-sub-linear-halfin-whitt", 4000.0), ("003-random-2", 0.7))  # the suite's order
    for text, message in [
        ("003-random-2@0.65", "--points '003-random-2@0.65': not a point of suite v2"),
        ("003-random-2", "--points '003-random-2': not a point of suite v2"),
        ("003-random-2@0.7", "--points '003-random-2@0.7': not a point of suite v1"),
        ("sf-fig2@0.5,sf-fig2@0.5", "the same point given twice"),
    ]:
        with pytest.raises(ValueError, match=message.replace("(", r"\(")):
            bm.parse_points(text, "v1" if "suite v1" in message else "v2")


def test_cli_points_errors_in_one_line(tmp_path, capsys) -> None:
    out = tmp_path / "b"
    assert main(["benchmark", "--suite", "v2", "--points", "003-random-2@0.66", "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--points '003-random-2@0.66': not a point of suite v2" in err[0]
    assert not out.exists()


def test_a_model_point_runs_the_model_leaderboards_runs(suite) -> None:
    """A moldable point's runs are the model leaderboard's (the same points, keys and values)."""
    folder, _, report = suite
    lb = LeaderboardConfig(
        scenarios=("002-sub-linear-mean-field",), loads=(1000.0,), seeds=SEEDS, arrivals=600, warmup=300
    )
    points = plan(lb).points
    stored = [json.loads(line) for line in (folder / "out" / "runs.jsonl").read_text().splitlines()]
    keys = {r["key"] for r in stored}
    for p in points:
        assert any(json.loads(k).items() >= json.loads(p.key()).items() for k in keys)
    greedy = next(p for p in points if p.policy == "moldable-greedy" and p.seed == 1)
    run = run_moldable_point(greedy)
    cost = (1 - run["blocking"]) * run["mean_execution_time"] + 2.0 * run["blocking"]
    assert _row(report, "002-sub-linear-mean-field", "moldable-greedy").value == pytest.approx(
        np.mean([_value(stored, "moldable-greedy", s) for s in SEEDS])
    )
    assert _value(stored, "moldable-greedy", 1) == pytest.approx(cost, rel=1e-12)


def _value(stored, series, seed):
    row = next(
        r
        for r in stored
        if r["series"] == series
        and r["seed"] == seed
        and r["scenario"].startswith("002-sub")
        and r["x"] == 1000.0
    )
    return (1 - row["blocking"]) * row["mean_execution_time"] + 2.0 * row["blocking"]


def test_references_score_exactly_0_and_100_on_every_seed(suite) -> None:
    _, _, report = suite
    scales = {(s.scenario, s.load): s for s in report["scales"]}
    for point in POINTS[1:]:
        scale = scales[point]
        model = bm.point_model(point)
        assert scale.metric == ("cost" if model == "moldable" else "mean_response_time")
        assert scale.high_ref == f"best {model} policy per seed"
        refs = [r for r in report["points"] if (r.scenario, r.load) == point and r.kind != "agent"]
        assert _row(report, point[0], scale.low_ref).scores == [0.0] * len(SEEDS)
        for i in range(len(SEEDS)):
            assert max(r.scores[i] for r in refs) == 100.0
        # the model's reference row is reported beside the scale, not as its 100
        assert scale.bound_ref and math.isfinite(scale.bound)
    # compatibility: random assignment is the 0; moldable: the weakest scheme by cost at the point
    assert scales[("003-random-2", 0.7)].low_ref == "compat-fcfs"
    assert scales[("003-random-2", 0.7)].best_heuristic == "compat-least-loaded"
    assert scales[("002-sub-linear-mean-field", 1000.0)].low_ref == "moldable-greedy"
    assert scales[("002-sub-linear-halfin-whitt", 100.0)].low_ref == "moldable-p-scheme"  # greedy is cheaper
    assert scales[("002-sub-linear-halfin-whitt", 100.0)].bound_ref == "LP optimum (n -> infinity)"
    # compatibility: the size-oblivious bound, below the best policy (least-loaded) as a bound must be
    compat = scales[("003-random-2", 0.7)]
    assert compat.bound_ref == "size-oblivious bound (exact)" and compat.bound < compat.high


def test_agents_that_replay_a_policy_score_exactly_its_score(suite) -> None:
    _, _, report = suite
    for point in (("002-sub-linear-halfin-whitt", 100.0), ("002-sub-linear-mean-field", 1000.0)):
        assert (
            _row(report, point[0], "agent:p_scheme").scores
            == _row(report, point[0], "moldable-p-scheme").scores
        )
    for point in (("003-random-2", 0.7), ("003-random-3", 0.75)):
        least = _row(report, point[0], "agent:LeastLoadedAssignmentAgent")
        assert least.scores == _row(report, point[0], "compat-least-loaded").scores
        assert least.value == _row(report, point[0], "compat-least-loaded").value


def test_each_model_is_a_section_of_its_own(suite) -> None:
    folder, _, report = suite
    sections = report["sections"]
    assert set(sections) == {"msj", "moldable", "compatibility"}
    # an entrant has an aggregate only in its own model's section
    assert {a.entrant for a in report["aggregates"]} == {"fcfs", "first-fit", "msf", "agent:msf"}
    moldable = sections["moldable"]
    assert {a.entrant for a in moldable["aggregates"]} == {
        "moldable-p-scheme",
        "moldable-greedy",
        "moldable-reserved",
        "agent:p_scheme",
    }
    p = _aggregate(moldable["aggregates"], "agent:p_scheme")
    assert p.iqm == _aggregate(moldable["aggregates"], "moldable-p-scheme").iqm
    assert p.mean == pytest.approx(_row(report, "002-sub-linear-mean-field", "agent:p_scheme").score)
    train = _aggregate(moldable["train_aggregates"], "agent:p_scheme")
    assert train.mean == pytest.approx(_row(report, "002-sub-linear-halfin-whitt", "agent:p_scheme").score)
    assert set(moldable["outside"]) == {"agent:LeastLoadedAssignmentAgent", "agent:msf"}
    compat = sections["compatibility"]
    assert _aggregate(compat["aggregates"], "compat-fcfs").iqm == 0.0
    assert _aggregate(compat["aggregates"], "compat-least-loaded").iqm == pytest.approx(
        _row(report, "003-random-2", "compat-least-loaded").score
    )
    assert set(compat["outside"]) == {"agent:msf", "agent:p_scheme"}
    assert set(sections["msj"]["outside"]) == {"agent:p_scheme", "agent:LeastLoadedAssignmentAgent"}
    # the MSJ agent and the model agents are n/a at one another's points, scored 0 and flagged there
    assert _row(report, "003-random-2", "agent:msf").flag == "n/a"
    assert _row(report, "sf-fig2", "agent:p_scheme").flag == "n/a"
    with open(folder / "out" / "benchmark.csv") as f:
        rows = list(csv.DictReader(f))
    assert {(r["model"], r["split"]) for r in rows} == {
        ("msj", "test"),
        ("moldable", "test"),
        ("moldable", "train"),
        ("compatibility", "test"),
        ("compatibility", "train"),
    }
    with open(folder / "out" / "benchmark-points.csv") as f:
        points = {(r["scenario"], r["entrant"]): r for r in csv.DictReader(f)}
    row = points[("002-sub-linear-mean-field", "moldable-greedy")]
    assert row["model"] == "moldable" and row["metric"] == "cost" and row["split"] == "test"
    assert row["bound_ref"] == "LP optimum (n -> infinity)" and float(row["bound"]) == pytest.approx(0.375)
    assert points[("sf-fig2", "msf")]["model"] == "msj"
    text = (folder / "out" / "benchmark.md").read_text()
    assert "## the moldable points" in text and "## the compatibility points" in text
    assert "n/a at every compatibility point" in text and "agent:msf" in text
    assert (folder / "out" / "benchmark-profile.png").exists() or not _has_matplotlib()


def _has_matplotlib() -> bool:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def test_a_rerun_resumes_every_run(suite, monkeypatch) -> None:
    folder, config, report = suite
    before = (folder / "out" / "runs.jsonl").read_text()
    monkeypatch.syspath_prepend(str(folder))
    monkeypatch.setattr(bm, "_policy_ids", lambda preemptive: ["fcfs", "first-fit", "msf"])
    monkeypatch.setattr(bm, "exact_optima", lambda scenario, load: {})
    monkeypatch.setattr(track("moldable"), "default_arrivals", bm.DEFAULT_ARRIVALS)
    again = bm.run_benchmark(config, folder / "out", workers=1, progress=False)
    assert (folder / "out" / "runs.jsonl").read_text() == before  # nothing run again
    assert [r.scores for r in again["points"]] == [r.scores for r in report["points"]]


def test_a_model_agent_that_fits_no_point_is_refused(tmp_path) -> None:
    config = bm.BenchmarkConfig(points=(("sf-fig2", 0.5),), seeds=(0, 1), agents=(MOLDABLE_REPLAY,))
    with pytest.MonkeyPatch.context() as mp:
        mp.syspath_prepend(str(tmp_path))
        (tmp_path / "benchmark_model_agents.py").write_text(MODULE)
        with pytest.raises(ValueError, match="making the agent failed") as err:
            bm.run_benchmark(config, tmp_path / "out", workers=1, progress=False)
    assert "\n" not in str(err.value) and not (tmp_path / "out").exists()


def test_v1_has_one_section_and_its_files_as_before(tmp_path, monkeypatch) -> None:
    """v1 is the MSJ queue alone: no model section, and its tables and CSV columns as they were."""
    monkeypatch.setattr(bm, "_policy_ids", lambda preemptive: ["fcfs", "first-fit", "msf"])
    monkeypatch.setattr(bm, "exact_optima", lambda scenario, load: {})
    config = bm.BenchmarkConfig(points=(("sf-fig2", 0.5),), seeds=(0, 1), arrivals=300)
    assert config.models == ("msj",) and config.split(("sf-fig2", 0.5)) == ""
    report = bm.run_benchmark(config, tmp_path / "out", workers=1, progress=False)
    assert set(report["sections"]) == {"msj"}
    assert report["aggregates"] is report["sections"]["msj"]["aggregates"]
    text = bm.format_benchmark(report)
    assert text.startswith("benchmark suite v1: 1 points x 2 seeds x 300 arrivals (30 warm-up); score 0")
    assert "moldable" not in text and "MSJ" not in text
    with open(tmp_path / "out" / "benchmark.csv") as f:
        assert next(csv.reader(f)) == [
            "rank", "entrant", "kind", "iqm", "iqm_lo", "iqm_hi", "mean", "p_improve", "p_lo", "p_hi",
            "flagged",
        ]  # fmt: skip
    with open(tmp_path / "out" / "benchmark-points.csv") as f:
        assert next(csv.reader(f)) == [
            "scenario", "load", "entrant", "kind", "mean_response_time", "score", "scores_per_seed", "flag",
            "low_ref", "t_low", "high_ref", "t_high",
        ]  # fmt: skip


def test_a_model_run_of_other_code_is_refused(suite, monkeypatch) -> None:
    """The model points' runs are stale-safe as the others: an edited agent module is other code, and a
    rerun into the folder is refused in one line before any run."""
    from msj_gym.experiments import runner

    folder, config, _ = suite
    module = folder / "benchmark_model_agents.py"
    before = (folder / "out" / "runs.jsonl").read_text()
    monkeypatch.syspath_prepend(str(folder))
    monkeypatch.setattr(bm, "_policy_ids", lambda preemptive: ["fcfs", "first-fit", "msf"])
    monkeypatch.setattr(bm, "exact_optima", lambda scenario, load: {})
    monkeypatch.setattr(track("moldable"), "default_arrivals", bm.DEFAULT_ARRIVALS)
    monkeypatch.setattr(runner, "_FILE_HASHES", {})  # a new process reads the files afresh
    monkeypatch.setattr(runner, "_CODE", {})
    module.write_text(MODULE + "# edited\n")
    try:
        with pytest.raises(runner.StaleRuns) as err:  # the moldable agent alone: the MSJ runs are reused
            bm.run_benchmark(
                replace(config, agents=(MOLDABLE_REPLAY,)), folder / "out", workers=1, progress=False
            )
    finally:
        module.write_text(MODULE)
    assert "\n" not in str(err.value) and "code" in str(err.value) and "p_scheme" in str(err.value)
    assert (folder / "out" / "runs.jsonl").read_text() == before
