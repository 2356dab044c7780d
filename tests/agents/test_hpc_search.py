"""The learned HPC scheduler: its scored rule against the heuristics it generalises, a tiny search end
to end on a generated SWF log (its log resumed, and refused when the settings change), its checkpoint
loaded through the registry's loader, and the protocol's native runs of the agent equal to its
episodes through ``MSJ-v0``."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import numpy as np
import pytest

from msj_gym import Simulator
from msj_gym.agents.hpc_search import main
from msj_gym.baselines.hpc import SCORE_FEATURES, ScoredEasy
from msj_gym.experiments.agents import load_agent, play_agent
from msj_gym.experiments.sequences import SequenceProtocol, run_sequences, sequence_workload
from msj_gym.registry import make_policy, policy_from_spec
from msj_gym.workloads.scenarios import load_scenario
from tests.experiments.test_sequences import _log

RULE = "msj_gym.baselines.hpc:ScoredEasy"


@pytest.fixture(scope="module")
def trace(tmp_path_factory) -> str:
    # a generated SWF log on 16 processors whose requests overstate run times up to four times
    return _log(tmp_path_factory.mktemp("log"), 2500)


def _weights(**w: float) -> dict[str, float]:
    return {f"w_{name}": w.get(name, 0.0) for name in SCORE_FEATURES}


def _run(trace: str, policy, start: int = 100, length: int = 400):
    wl = sequence_workload(load_scenario(trace).build(), start, length)
    sim = Simulator(wl, policy, num_arrivals=length, warmup=0, debug=True)
    return sim.run(), sim.records()["first_start"]


def test_request_weight_alone_is_sjf_with_easy(trace: str) -> None:
    # log10 r is increasing in r (every request here is at least 1 s): the same order, ties by arrival
    mine, starts = _run(trace, policy_from_spec(RULE, "policy", **_weights(request=1.0)))
    theirs, their_starts = _run(trace, make_policy("sjf-easy"))
    assert np.array_equal(starts, their_starts)
    assert mine.mean_bounded_slowdown == theirs.mean_bounded_slowdown
    # and the default (WFP3's order in logs) is another schedule of the same jobs
    _, default = _run(trace, policy_from_spec(RULE, "policy"))
    assert not np.array_equal(default, starts)


def test_a_positive_factor_changes_no_choice(trace: str) -> None:
    w = _weights(request=0.4, need=0.05, wait=-0.35, need_request=0.1, slowdown=-0.05, queue_wait=-0.05)
    _, starts = _run(trace, policy_from_spec(RULE, "policy", **w))
    _, scaled = _run(trace, policy_from_spec(RULE, "policy", **{k: 7.0 * v for k, v in w.items()}))
    assert np.array_equal(starts, scaled)


def test_the_rule_reads_requested_times_not_run_times(trace: str) -> None:
    policy = policy_from_spec(RULE, "policy")
    assert not policy.reads_sizes() and not ScoredEasy.preemptive
    assert policy_from_spec(RULE, "policy", estimates="exact").reads_sizes()


def test_a_weight_that_is_not_finite_is_refused() -> None:
    with pytest.raises(ValueError, match="w_wait"):
        policy_from_spec(RULE, "policy", w_wait=float("nan"))


TINY = ["--skip", "1000", "--length", "200", "--sequences", "2", "--population", "3", "--elite", "1"]


@pytest.fixture(scope="module")
def searched(trace: str, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("search") / "scored.zip"
    main([*TINY, "--scenario", trace, "--generations", "2", "--no-progress", "--out", str(out)])
    return out


def test_search_writes_the_checkpoint_and_its_log(searched: Path) -> None:
    meta = json.loads(searched.with_suffix(".json").read_text())
    assert meta["algo"] == "scored-hpc" and meta["env_id"] == "MSJ-v0"
    assert meta["generations"] == 2 and "hpc_search" in meta["command"]
    with zipfile.ZipFile(searched) as z:
        weights = json.loads(z.read("weights.json"))
    assert weights == meta["weights"] and set(weights) == set(SCORE_FEATURES)
    assert sum(abs(w) for w in weights.values()) == pytest.approx(1.0)  # unit L1 norm
    lines = searched.with_suffix(".log.jsonl").read_text().splitlines()
    assert len(lines) == 3 and json.loads(lines[2])["generation"] == 1
    # every training sequence starts after the held-out jobs
    assert all(s >= 1000 for line in lines[1:] for per in json.loads(line)["sequences"] for s, _ in per)


def test_search_resumes_and_refuses_other_settings(trace: str, searched: Path, tmp_path: Path) -> None:
    out = tmp_path / "again.zip"
    out.with_suffix(".log.jsonl").write_text(searched.with_suffix(".log.jsonl").read_text())
    flags = [*TINY, "--scenario", trace, "--no-progress", "--out", str(out)]
    main([*flags, "--generations", "2"])  # nothing left to run: the same weights
    assert (
        json.loads(out.with_suffix(".json").read_text())["weights"]
        == json.loads(searched.with_suffix(".json").read_text())["weights"]
    )
    main([*flags, "--generations", "3"])  # one more generation, after the two kept
    assert len(out.with_suffix(".log.jsonl").read_text().splitlines()) == 4
    with pytest.raises(ValueError, match="holds a search with other settings"):
        main([*flags, "--generations", "3", "--reference", "unicep-easy"])


def test_the_agent_runs_natively_in_the_protocol_as_through_its_env(trace: str, searched: Path) -> None:
    spec = load_agent(str(searched))
    assert spec.native is not None and spec.native[0] == RULE
    report = run_sequences(
        SequenceProtocol(trace, ("sjf-easy",), length=150, count=2, seed=3, agents=(str(searched),))
    )
    label = "agent:scored"
    assert label in report["scores"]
    start = report["starts"][0]
    wl = sequence_workload(load_scenario(trace).build(), start, 150)
    through_env = play_agent(str(searched), wl, {}, 150, 0, start, "test")
    assert report["scores"][label][0] == through_env.mean_bounded_slowdown
    native = Simulator(wl, policy_from_spec(RULE, "policy", **spec.native[1]), num_arrivals=150, warmup=0)
    assert native.run().mean_response_time == through_env.mean_response_time


def test_a_damaged_checkpoint_is_one_line(searched: Path, tmp_path: Path) -> None:
    bad = tmp_path / "bad.zip"
    bad.write_bytes(b"not a zip")
    bad.with_suffix(".json").write_text(searched.with_suffix(".json").read_text())
    with pytest.raises(ValueError, match=r"--agent '.*bad.zip': '.*bad.zip': not a scored-hpc checkpoint"):
        load_agent(str(bad))


def test_the_runner_runs_the_agent_natively_as_through_its_env(trace: str, searched: Path) -> None:
    from msj_gym.experiments.agents import run_agent
    from msj_gym.experiments.runner import Point, code_version, run_point

    scenario = f"{trace}?start=300&length=150"
    point = Point("agent", 150, scenario, "agent", 4, 150, {}, warmup=0, agent=str(searched))
    native = run_point(point)
    through_env = run_agent(point)
    assert native["mean_response_time"] == through_env.mean_response_time
    assert native["mean_bounded_slowdown"] == through_env.mean_bounded_slowdown
    # the rule's own code is part of the agent's runs' key (an edited rule never reuses their rows)
    from msj_gym.experiments.agents import agent_files

    files = agent_files(str(searched))
    assert any(f.endswith("baselines/hpc.py") for f in files)
    assert any(f.endswith("agents/hpc_search.py") for f in files)
    assert code_version(point) != code_version(Point("sjf-easy", 150, scenario, "policy", 4, 150, {}))


def test_the_shipped_agent_loads_by_name_with_its_native_twin(tmp_path: Path, monkeypatch) -> None:
    from msj_gym.experiments.agents import shipped_agents

    monkeypatch.chdir(tmp_path)
    spec = load_agent("scored-easy-hpc")
    assert spec.native is not None and spec.env_id == "MSJ-v0"
    shipped = json.loads(shipped_agents()["scored-easy-hpc"].with_suffix(".json").read_text())
    assert spec.native == (RULE, {f"w_{k}": v for k, v in shipped["weights"].items()})
    assert list(shipped["weights"]) == list(SCORE_FEATURES)
    # trained after the first 10,000 jobs of each log: the protocol's sequences are held out
    assert "--skip" not in shipped["command"] and "held_out" in shipped


def test_a_checkpoint_rewritten_within_a_process_changes_its_key_and_is_loaded_again(
    searched: Path, tmp_path: Path
) -> None:
    import shutil

    from msj_gym.experiments.runner import Point, code_version

    copy = tmp_path / "copy.zip"
    shutil.copy(searched, copy)
    shutil.copy(searched.with_suffix(".json"), copy.with_suffix(".json"))
    point = Point("agent", 150, "sf-fig2", "agent", 4, 150, {}, agent=str(copy))
    before, loaded = code_version(point), load_agent(str(copy))
    with zipfile.ZipFile(copy, "w") as z:  # other weights, in the same process
        z.writestr("weights.json", json.dumps(dict.fromkeys(SCORE_FEATURES, 0.125)))
    assert code_version(point) != before
    # and the agent is loaded again, not taken from the cache of the old file
    again = load_agent(str(copy))
    assert again.native is not None and loaded.native is not None
    assert again.native[1] == {f"w_{k}": 0.125 for k in SCORE_FEATURES} != loaded.native[1]
    assert load_agent(str(copy)) is again  # cached while the file stays the same


def test_a_fixed_gap_scale_scales_every_training_sequence(trace: str, tmp_path: Path) -> None:
    out = tmp_path / "scaled.zip"
    main(
        [
            *TINY,
            "--scenario",
            trace,
            "--gap-scale",
            "0.5,0.5",
            "--generations",
            "1",
            "--no-progress",
            "--out",
            str(out),
        ]
    )
    line = json.loads(out.with_suffix(".log.jsonl").read_text().splitlines()[1])
    assert {x for per in line["sequences"] for _, x in per} == {0.5}
