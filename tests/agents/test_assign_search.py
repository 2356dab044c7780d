"""The cross-entropy search of an assignment agent: a tiny search end to end, its log resumed and
refused when the settings change, its checkpoint loaded by name through the registry's loader, and
the leaderboard's native runs of the agent equal to its episodes through ``CompatAssign-v0``."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest

from msj_gym.agents.assign_search import main
from msj_gym.experiments.agents import load_agent, play_agent
from msj_gym.experiments.runner import Point
from msj_gym.experiments.tracks.compatibility import run_compat_point

TINY = ["--arrivals", "1500", "--episodes", "1", "--population", "3", "--elite", "1", "--no-progress"]


@pytest.fixture(scope="module")
def searched(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("search") / "scored.zip"
    main([*TINY, "--generations", "2", "--out", str(out)])
    return out


def test_search_writes_the_checkpoint_and_its_log(searched: Path) -> None:
    meta = json.loads(searched.with_suffix(".json").read_text())
    assert meta["algo"] == "scored-assignment" and meta["env_id"] == "CompatAssign-v0"
    assert meta["generations"] == 2 and "assign_search" in meta["command"]
    with zipfile.ZipFile(searched) as z:
        weights = json.loads(z.read("weights.json"))
    assert weights == meta["weights"]
    assert sum(abs(w) for w in weights.values()) == pytest.approx(1.0)  # unit L1 norm
    lines = searched.with_suffix(".log.jsonl").read_text().splitlines()
    assert len(lines) == 3 and json.loads(lines[2])["generation"] == 1
    # the run seeds are drawn far from the evaluation seeds
    assert all(s >= 10**7 for line in lines[1:] for s in json.loads(line)["seeds"])


def test_search_resumes_and_refuses_other_settings(searched: Path, tmp_path: Path) -> None:
    out = tmp_path / "again.zip"
    log = searched.with_suffix(".log.jsonl")
    out.with_suffix(".log.jsonl").write_text(log.read_text())
    main([*TINY, "--generations", "2", "--out", str(out)])  # nothing left to run: the same weights
    assert (
        json.loads(out.with_suffix(".json").read_text())["weights"]
        == json.loads(searched.with_suffix(".json").read_text())["weights"]
    )
    main([*TINY, "--generations", "3", "--out", str(out)])  # one more generation, after the two kept
    assert len(out.with_suffix(".log.jsonl").read_text().splitlines()) == 4
    with pytest.raises(ValueError, match="holds a search with other settings"):
        main([*TINY, "--generations", "3", "--seed", "5", "--out", str(out)])


def test_the_agent_runs_natively_as_through_its_env(searched: Path) -> None:
    spec = load_agent(str(searched))
    assert spec.env_id == "CompatAssign-v0" and spec.native is not None
    policy, params = spec.native
    assert policy.endswith(":CompatScoredAssignment") and set(params) == {
        "w_jobs",
        "w_clearing_time",
        "w_serving_time",
        "w_slowness",
    }
    point = Point(
        "agent", 0.85, "003-random-3", "agent", 7, 2000, {"load": 0.85}, warmup=200, agent=str(searched)
    )
    native = run_compat_point(point)
    through_env = play_agent(
        str(searched), "003-random-3", {"load": 0.85}, 2000, 200, 7, "test", model="compatibility"
    )
    assert native["mean_response_time"] == through_env.mean_response_time


def test_a_damaged_checkpoint_is_one_line(searched: Path, tmp_path: Path) -> None:
    bad = tmp_path / "bad.zip"
    bad.write_bytes(b"not a zip")
    bad.with_suffix(".json").write_text(searched.with_suffix(".json").read_text())
    with pytest.raises(
        ValueError, match=r"--agent '.*bad.zip': '.*bad.zip': not a scored-assignment checkpoint"
    ):
        load_agent(str(bad))


def test_the_shipped_agent_loads_by_name_with_its_native_twin(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    spec = load_agent("scored-assign-random-d")
    assert spec.native is not None and spec.env_id == "CompatAssign-v0"
    from msj_gym.experiments.agents import shipped_agents

    shipped = json.loads(shipped_agents()["scored-assign-random-d"].with_suffix(".json").read_text())
    assert spec.native[1] == {f"w_{k}": v for k, v in shipped["weights"].items()}
    assert shipped["systems"] == [
        {"scenario": "003-random-3", "load": 0.75},
        {"scenario": "003-random-2", "load": 0.9},
    ]
