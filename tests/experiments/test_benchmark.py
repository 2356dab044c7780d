"""The benchmark score at a tiny size (2 points, 2 seeds, 2000 arrivals, four policies): the references
define the scale exactly, unstable points score 0 and are flagged, resuming reuses every run, the CLI
prints the table, and the rliable-style aggregates (SciPy's trim_mean and bootstrap) on known inputs."""

from __future__ import annotations

import dataclasses
import json
from types import SimpleNamespace

import numpy as np
import pytest

from msj_gym.cli import main
from msj_gym.experiments import benchmark as bm

TINY = (("sf-fig2", 0.5), ("sf-fig2", 0.7))
POLICIES = ["fcfs", "msf", "first-fit", "lsf", "nmsr"]


def _patch(mp: pytest.MonkeyPatch) -> None:
    real = bm.exact_optima
    mp.setattr(bm, "BENCHMARK_SUITE", TINY)
    mp.setattr(bm, "QUICK", {"seeds": 2, "arrivals": 2000})
    mp.setattr(bm, "_policy_ids", lambda preemptive: list(POLICIES))
    # an exact optimum at 0.5 (score 100 = the optimum), none at 0.7 (score 100 = the best heuristic)
    mp.setattr(bm, "exact_optima", lambda scenario, load: real(scenario, load) if load == 0.5 else {})


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    out = tmp_path_factory.mktemp("bench")
    with pytest.MonkeyPatch.context() as mp:
        _patch(mp)
        config = bm.BenchmarkConfig(seeds=2, arrivals=2000)
        report = bm.run_benchmark(config, out, workers=1, progress=False)
        yield out, config, report


def _at(report, load, entrant):
    return next(r for r in report["points"] if r.load == load and r.entrant == entrant)


def test_references_define_the_scale(tiny) -> None:
    _, _, report = tiny
    scales = {s.load: s for s in report["scales"]}
    # 0.5: FCFS is stable, the exact optimum is known
    assert scales[0.5].low_ref == "fcfs" and scales[0.5].high_ref.startswith("optimum")
    assert _at(report, 0.5, "fcfs").scores == [0.0, 0.0]
    assert 0 < _at(report, 0.5, "msf").score < 100
    # 0.7: FCFS (limit 0.595) is unstable: the worst stable heuristic (NMSR) is 0, and without an
    # optimum the best heuristic is 100, exactly, on every seed
    assert _at(report, 0.7, "fcfs").flag == "unstable"
    low, best = scales[0.7].low_ref, scales[0.7].best_heuristic
    assert low == "nmsr" and best in ("msf", "first-fit") and scales[0.7].high_ref == best
    assert _at(report, 0.7, low).scores == [0.0, 0.0]
    assert _at(report, 0.7, best).scores == [100.0, 100.0]


def test_unstable_points_score_zero_and_are_flagged(tiny) -> None:
    _, _, report = tiny
    lsf = _at(report, 0.7, "lsf")  # LSF is unstable from about 0.6 on sf-fig2
    assert lsf.flag == "unstable" and lsf.scores == [0.0, 0.0]
    agg = {a.entrant: a for a in report["aggregates"]}
    assert "sf-fig2@0.7" in agg["lsf"].flagged
    assert all(min(r.scores) >= 0 for r in report["points"])
    # P(improve) of the best heuristic: a half at 0.7 (against itself); at 0.5 its scores are compared
    # with those of that point's best heuristic, which may be another policy
    assert 0.25 <= agg[report["scales"][1].best_heuristic].p_improve <= 1.0
    assert agg["fcfs"].p_improve < 0.5
    iqms = [a.iqm for a in report["aggregates"]]
    assert iqms == sorted(iqms, reverse=True)


def test_outputs_and_resume_reuse_every_run(tiny) -> None:
    out, config, report = tiny
    names = {p.name for p in report["files"]}
    assert {"benchmark.md", "benchmark.csv", "benchmark-points.csv"} <= names
    runs = (out / "runs.jsonl").read_text().splitlines()
    assert len(runs) == len(TINY) * 2 * len(POLICIES)
    assert all(json.loads(x)["provenance"]["git_revision"] for x in runs)
    with pytest.MonkeyPatch.context() as mp:
        _patch(mp)
        again = bm.run_benchmark(config, out, workers=1, progress=False)
    assert (out / "runs.jsonl").read_text().splitlines() == runs
    assert [(a.entrant, a.iqm, a.p_improve) for a in again["aggregates"]] == [
        (a.entrant, a.iqm, a.p_improve) for a in report["aggregates"]
    ]
    # a folder of another run length is refused, before any run
    with pytest.MonkeyPatch.context() as mp:
        _patch(mp)
        with pytest.raises(ValueError, match="another suite or run length"):
            bm.run_benchmark(bm.BenchmarkConfig(seeds=2, arrivals=3000), out, workers=1, progress=False)


def test_cli_prints_the_table(tiny, capsys, monkeypatch) -> None:
    out, _, _ = tiny
    _patch(monkeypatch)
    assert main(["benchmark", "--quick", "--out", str(out), "--workers", "1"]) == 0
    text = capsys.readouterr().out
    assert "IQM score [95% CI]" in text and "P(improve on best heuristic)" in text
    assert "sf-fig2@0.7" in text and "(U)" in text and "wrote" in text


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--agent", "no-such-agent"], "--agent 'no-such-agent'"),
        (["--workers", "0"], "--workers"),
        (["--metric", "slowdwn"], "--metric: expected one of mean_response_time,"),
    ],
)
def test_bad_input_is_one_line_before_any_work(tmp_path, capsys, argv, message) -> None:
    out = tmp_path / "never"
    assert main(["benchmark", "--quick", "--out", str(out), *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("msj-gym: error:") and message in err and "\n" not in err
    assert not out.exists()


def test_another_metric_rescores_the_same_runs(tiny, capsys, monkeypatch) -> None:
    """``metric``: the stored runs rescored (none rerun, the default tables untouched), the best
    heuristic by that metric as the 100 at every point (never the response-time optimum), its own
    files, and the CLI says which metric and why the optimum is no reference."""
    out, config, _ = tiny
    runs = (out / "runs.jsonl").read_text()
    default_files = {f.name: f.read_bytes() for f in bm.output_names(out) if f.exists()}
    metric = "mean_bounded_slowdown"
    with pytest.MonkeyPatch.context() as mp:
        _patch(mp)
        mp.setattr(bm, "exact_optima", lambda scenario, load: pytest.fail("solved an optimum"))
        report = bm.run_benchmark(dataclasses.replace(config, metric=metric), out, workers=1, progress=False)
    assert (out / "runs.jsonl").read_text() == runs
    assert {f.name: f.read_bytes() for f in bm.output_names(out) if f.exists()} == default_files
    rows = [json.loads(x) for x in runs.splitlines()]
    for scale in report["scales"]:
        assert scale.high_ref == scale.best_heuristic  # at 0.5 too, where the optimum of T is known
        at = {r.entrant: r for r in report["points"] if r.load == scale.load}
        assert at[scale.low_ref].scores == [0.0, 0.0] and at[scale.best_heuristic].scores == [100.0, 100.0]
        stable = [r for r in at.values() if not r.flag]
        assert scale.high == min(r.value for r in stable) == at[scale.best_heuristic].value
        mine = [x[metric] for x in rows if x["x"] == scale.load and x["series"] == "msf"]
        assert at["msf"].value == pytest.approx(float(np.mean(mine)), rel=1e-12)
    names = {f.name for f in report["files"]}
    assert {f"benchmark-{metric}.md", f"benchmark-{metric}.csv", f"benchmark-{metric}-points.csv"} <= names
    header = (out / f"benchmark-{metric}-points.csv").read_text().splitlines()[0]
    assert header.startswith(f"scenario,load,entrant,kind,{metric},score")
    _patch(monkeypatch)
    assert main(["benchmark", "--quick", "--out", str(out), "--workers", "1", "--metric", metric]) == 0
    text = capsys.readouterr().out
    assert f"scored on {metric}" in text and "the exact optimum is of the mean response time only" in text
    assert (out / "runs.jsonl").read_text() == runs


def test_a_metric_where_higher_is_better_swaps_the_references() -> None:
    """Utilisation: the 100 is the highest value, and the formula is the same."""
    config = bm.BenchmarkConfig(points=(("sf-fig2", 0.5),), seeds=2, arrivals=2000, metric="utilization")
    values = {"fcfs": (0.40, 0.42), "msf": (0.50, 0.52), "first-fit": (0.45, 0.47)}
    points, results = [], []
    for entrant, per_seed in values.items():
        for seed, v in zip(config.seeds, per_seed, strict=True):
            points.append(SimpleNamespace(scenario="sf-fig2", x=0.5, series=entrant, seed=seed))
            results.append({"utilization": v, "mean_response_time": 1.0, "stable": True})
    kinds = {("sf-fig2", 0.5): dict.fromkeys(values, "non-preemptive")}
    report = bm.score(config, points, results, kinds, {("sf-fig2", 0.5): 0.1}, {})
    (scale,) = report["scales"]
    assert (scale.low_ref, scale.high_ref) == ("fcfs", "msf")
    ff = next(r for r in report["points"] if r.entrant == "first-fit")
    assert ff.scores == pytest.approx([50.0, 50.0], rel=1e-12)


def test_a_seed_whose_lower_reference_beats_the_exact_optimum_is_scaled_by_its_mean() -> None:
    """A short run can end below the optimum, a long-run mean: its seed's 0 is the lower reference's
    mean over the seeds; a point whose lower reference is not worse on average is still refused."""
    config = bm.BenchmarkConfig(points=(("sf-fig2", 0.5),), seeds=2, arrivals=2000)
    values = {"nmsr": (4.0, 2.0), "first-fit": (3.0, 2.5)}  # nmsr, the worst on average, is 2.0 on seed 1
    points, results = [], []
    for entrant, per_seed in values.items():
        for seed, v in zip(config.seeds, per_seed, strict=True):
            points.append(SimpleNamespace(scenario="sf-fig2", x=0.5, series=entrant, seed=seed))
            results.append({"mean_response_time": v, "stable": True})
    kinds = {("sf-fig2", 0.5): dict.fromkeys(values, "non-preemptive")}
    report = bm.score(config, points, results, kinds, {("sf-fig2", 0.5): 2.2}, {})
    ff = next(r for r in report["points"] if r.entrant == "first-fit")
    # seed 0: (4 - 3) / (4 - 2.2); seed 1: nmsr's mean 3.0 is the 0, (3 - 2.5) / (3 - 2.2)
    assert ff.scores == pytest.approx([100 / 1.8, 100 * 0.5 / 0.8], rel=1e-12)
    with pytest.raises(ValueError, match="the scale is empty"):
        bm.score(config, points, results, kinds, {("sf-fig2", 0.5): 3.5}, {})


def test_aggregates_on_known_inputs() -> None:
    const = np.full((5, 4), 42.0)
    assert bm.iqm(const) == 42.0
    assert bm.stratified_bootstrap_ci(bm.iqm, const, reps=200) == (42.0, 42.0)
    assert bm.probability_of_improvement(const, const) == 0.5
    assert bm.probability_of_improvement(const + 1, const) == 1.0
    rng = np.random.default_rng(1)
    x = rng.normal(50, 20, size=(7, 5))
    lo, hi = bm.stratified_bootstrap_ci(bm.iqm, x, reps=500)
    assert lo < bm.iqm(x) < hi


@pytest.mark.parametrize("shape", [(7, 5), (5, 8), (2, 8), (4, 3)])
def test_iqm_is_scipy_trim_mean(shape) -> None:
    scipy_stats = pytest.importorskip("scipy.stats")
    x = np.random.default_rng(sum(shape)).normal(50, 20, size=shape)
    assert bm.iqm(x) == scipy_stats.trim_mean(x, 0.25, axis=None)
    # rliable's cut: int(0.25 * n) runs at each end
    flat = np.sort(x.ravel())
    cut = int(0.25 * flat.size)
    assert bm.iqm(x) == pytest.approx(flat[cut : flat.size - cut].mean())
    # a stack of matrices: one IQM each
    stack = np.stack([x, x + 1])
    assert np.allclose(bm.iqm(stack), [bm.iqm(x), bm.iqm(x) + 1])


def test_bootstrap_ci_is_reproducible_and_contains_the_estimate() -> None:
    rng = np.random.default_rng(7)
    x = rng.normal(50, 20, size=(5, 8))
    y = rng.normal(45, 20, size=(5, 8))
    ci = bm.stratified_bootstrap_ci(bm.iqm, x, seed=3)
    assert ci == bm.stratified_bootstrap_ci(bm.iqm, x, seed=3)
    assert ci != bm.stratified_bootstrap_ci(bm.iqm, x, seed=4)
    assert ci[0] < bm.iqm(x) < ci[1]
    p = bm.probability_of_improvement(x, y)
    pci = bm.stratified_bootstrap_ci(bm.probability_of_improvement, x, y, seed=3)
    assert pci == bm.stratified_bootstrap_ci(bm.probability_of_improvement, x, y, seed=3)
    assert 0 <= pci[0] < p < pci[1] <= 1
    # P(improve) is the mean over points of the Mann-Whitney probability, ties a half
    mw = np.mean([np.mean((x[:, [m]] > y[:, m]) + 0.5 * (x[:, [m]] == y[:, m])) for m in range(x.shape[1])])
    assert p == pytest.approx(mw)


def test_missing_scipy_is_one_line_naming_the_extra(tmp_path, capsys, monkeypatch) -> None:
    import sys

    out = tmp_path / "never"
    monkeypatch.setitem(sys.modules, "scipy.stats", None)  # import scipy.stats raises ImportError
    assert main(["benchmark", "--quick", "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("msj-gym: error: benchmark needs SciPy") and "pip install 'scipy" in err
    assert "\n" not in err and not out.exists()
    monkeypatch.setitem(sys.modules, "scipy.sparse.linalg", None)
    assert main(["optimal", "--scenario", "sf-fig2", "--load", "0.5"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("msj-gym: error: optimal needs SciPy") and "pip install 'scipy" in err


def msf_through_env(env):
    """An agent factory for the test: the MSF baseline acting through MSJ-v0."""
    from msj_gym import PolicyAgent

    return PolicyAgent("msf", env)


class WrongSpace:
    """An agent trained on another observation space: it fits no point."""

    import gymnasium as _gym

    observation_space = _gym.spaces.Box(0.0, 1.0, (3,))

    def predict(self, observation, state=None, episode_start=None, deterministic=False):
        return 0, state


wrong_space = WrongSpace()


def fits_at_half_load(env):
    """An agent that fits the lower load of the suite only (trained there, say): MSF through the env at
    0.5, an agent of another observation space elsewhere."""
    return msf_through_env(env) if env.unwrapped.workload.load < 0.6 else WrongSpace()


def test_agents_join_a_finished_folder(tiny, tmp_path) -> None:
    import shutil

    src, _, _ = tiny
    out = tmp_path / "bench"
    shutil.copytree(src, out)
    kept = (out / "runs.jsonl").read_text()
    before = len(kept.splitlines())
    # an agent that fits no point would only score 0 everywhere: refused, before any run
    nowhere = bm.BenchmarkConfig(seeds=2, arrivals=2000, agents=(f"{__name__}:wrong_space",))
    with pytest.MonkeyPatch.context() as mp:
        _patch(mp)
        with pytest.raises(ValueError, match=r"--agent '.*:wrong_space': fits no point of the suite"):
            bm.run_benchmark(nowhere, out, workers=1, progress=False)
    assert (out / "runs.jsonl").read_text() == kept
    config = bm.BenchmarkConfig(
        seeds=2, arrivals=2000, agents=(f"{__name__}:msf_through_env", f"{__name__}:fits_at_half_load")
    )
    with pytest.MonkeyPatch.context() as mp:
        _patch(mp)
        report = bm.run_benchmark(config, out, workers=1, progress=False)
    # only the agents' runs where they fit are new: the baselines' are reused
    assert len((out / "runs.jsonl").read_text().splitlines()) == before + len(TINY) * 2 + 2
    for load in (0.5, 0.7):
        agent = _at(report, load, "agent:msf_through_env")
        assert agent.kind == "agent" and agent.scores == _at(report, load, "msf").scores
    assert _at(report, 0.5, "agent:fits_at_half_load").scores == _at(report, 0.5, "msf").scores
    wrong = _at(report, 0.7, "agent:fits_at_half_load")
    assert wrong.flag == "n/a" and wrong.scores == [0.0, 0.0]
    agg = {a.entrant: a for a in report["aggregates"]}
    assert agg["agent:fits_at_half_load"].flagged == ["sf-fig2@0.7 (n/a)"]
    assert agg["agent:msf_through_env"].iqm == agg["msf"].iqm
    # rescored: the agent's slowdowns are MSF's; it has no percentiles (the env keeps no records)
    after = (out / "runs.jsonl").read_text()
    for metric, same in (("mean_bounded_slowdown", True), ("response_time_p95", False)):
        with pytest.MonkeyPatch.context() as mp:
            _patch(mp)
            rescored = dataclasses.replace(config, metric=metric)
            again = bm.run_benchmark(rescored, out, workers=1, progress=False)
        agent, msf = _at(again, 0.7, "agent:msf_through_env"), _at(again, 0.7, "msf")
        if same:
            assert agent.scores == msf.scores and agent.flag == ""
        else:
            assert agent.flag == "n/a" and agent.scores == [0.0, 0.0] and msf.flag == ""
    assert (out / "runs.jsonl").read_text() == after


def test_preemptive_entrants_are_scored_on_the_same_scale(tiny, tmp_path) -> None:
    import shutil

    src, _, report = tiny
    out = tmp_path / "bench"
    shutil.copytree(src, out)
    with pytest.MonkeyPatch.context() as mp:
        _patch(mp)
        mp.setattr(bm, "_policy_ids", lambda preemptive: POLICIES + ["server-filling"] * preemptive)
        again = bm.run_benchmark(
            bm.BenchmarkConfig(seeds=2, arrivals=2000, preemptive=True), out, workers=1, progress=False
        )
    # the scale is the non-preemptive one: unchanged, and a preemptive policy is no reference
    assert [(s.low_ref, s.high_ref, s.low, s.high) for s in again["scales"]] == [
        (s.low_ref, s.high_ref, s.low, s.high) for s in report["scales"]
    ]
    sf = _at(again, 0.7, "server-filling")
    assert sf.kind == "preemptive" and sf.score > 100  # beats every non-preemptive heuristic


def test_the_optima_record_is_keyed_by_solver_and_limit_and_never_read_back(tmp_path, monkeypatch) -> None:
    """``optima.json`` records the optima a score used, keyed by the solver and its state limit; it is
    never read back as a value (the optima come from the shipped data or the solver's checked cache):
    an edited record changes no score."""
    from msj_gym.experiments.tracks import queueing as lb

    asked = []

    def solve(scenario, load):
        asked.append((scenario, load))
        return {"non-preemptive": 2.5}

    monkeypatch.setattr(bm, "exact_optima", solve)
    config = bm.BenchmarkConfig(points=(("sf-fig2", 0.5),), seeds=2, arrivals=2000)
    content = bm.scenario_content(bm.Point("", 0.5, "sf-fig2", "", 0, 100, build={"load": 0.5}))
    old = f"sf-fig2@0.5#{content}"  # the key of an earlier release: no solver, no limit
    (tmp_path / "optima.json").write_text(json.dumps({old: None}))
    assert bm._optima(tmp_path, config, writable=True) == {("sf-fig2", 0.5): 2.5}
    record = json.loads((tmp_path / "optima.json").read_text())
    (key,) = [k for k in record if k != old]
    assert record[key] == 2.5 and key.endswith(f"/{lb.OPTIMUM_MAX_STATES}")
    (tmp_path / "optima.json").write_text(json.dumps({key: 0.001}))  # edited: not believed
    assert bm._optima(tmp_path, config, writable=True) == {("sf-fig2", 0.5): 2.5}
    assert asked == [("sf-fig2", 0.5)] * 2
    monkeypatch.setattr(lb, "OPTIMUM_MAX_STATES", lb.OPTIMUM_MAX_STATES * 2)
    bm._optima(tmp_path, config, writable=True)
    assert len(json.loads((tmp_path / "optima.json").read_text())) == 2  # another limit, another key
