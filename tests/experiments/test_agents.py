"""An agent's run at a leaderboard point (``msj_gym.experiments.agents``) is held to the arrival cap of
a heuristic's run at the same point: an agent that decides as a heuristic does gets its result."""

from __future__ import annotations

import pytest

from msj_gym import Simulator
from msj_gym.env.agents import rollout
from msj_gym.env.msj_env import DEFAULT_MAX_CLASSES
from msj_gym.experiments.agents import AgentSpec
from msj_gym.registry import policy_from_spec
from msj_gym.workloads.distributions import Exponential
from msj_gym.workloads.workload import JobClass, Workload

KWARGS = {"observation": "classes", "actions": "priority", "advisor": ["first-fit"]}


class _Follow:
    """Always the advisor's own decision (the action after the wait and the class slots)."""

    def predict(self, observation, state=None, episode_start=None, deterministic=False):
        return 1 + DEFAULT_MAX_CLASSES, state


def _starved() -> Workload:
    # one job in 100 needs all 16 servers: First-Fit lets the narrow jobs pass it, and a wide job
    # can wait well past twice the run's arrivals before the servers drain
    return Workload(
        num_servers=16,
        classes=[JobClass(1, Exponential(1.0), 0.99, "narrow"), JobClass(16, Exponential(1.0), 0.01, "wide")],
        load=0.5,
        name="starved",
    )


@pytest.mark.parametrize("seed", [0, 3])
def test_an_agent_that_follows_a_heuristic_gets_the_heuristics_result(seed: int) -> None:
    spec = AgentSpec("follow", _Follow(), "MSJ-v0", dict(KWARGS), factory=False)
    env = spec.make_env(_starved(), {}, num_arrivals=400, warmup=40)
    through_env = rollout(env, spec.model, seed=seed)
    run = Simulator(_starved(), policy_from_spec("first-fit"), seed=seed, num_arrivals=400, warmup=40).run()
    assert run.stable and through_env.stable
    assert through_env.mean_response_time == run.mean_response_time
    assert through_env.num_measured == run.num_measured
    # the env's own default cap (twice the arrivals) stops the same run early and flags it
    cut = Simulator(
        _starved(), policy_from_spec("first-fit"), seed=seed, num_arrivals=400, warmup=40, max_arrivals=802
    ).run()
    assert not cut.stable


def test_the_cap_counts_a_warm_start_and_an_agents_own_cap_is_kept() -> None:
    plain = AgentSpec("follow", _Follow(), "MSJ-v0", dict(KWARGS), factory=False)
    env = plain.make_env("sf-fig2", {"load": 0.7}, num_arrivals=500, warmup=50)
    assert env.unwrapped.max_arrivals == Simulator.arrival_cap(500)
    warmed = {**KWARGS, "warm_start": "first-fit", "warm_start_arrivals": 300}
    warm = AgentSpec("follow", _Follow(), "MSJ-v0", warmed, factory=False)
    env = warm.make_env("sf-fig2", {"load": 0.7}, num_arrivals=500, warmup=50)
    assert env.unwrapped.max_arrivals == Simulator.arrival_cap(500) + 300
    own = AgentSpec("follow", _Follow(), "MSJ-v0", {**KWARGS, "max_arrivals": 1200}, factory=False)
    assert own.make_env("sf-fig2", {"load": 0.7}, num_arrivals=500, warmup=50).unwrapped.max_arrivals == 1200


def test_a_network_agent_is_keyed_by_the_code_its_config_declares(tmp_path) -> None:
    """An MLP checkpoint's runs depend on how msj_gym reads it and on the heuristics its env keywords
    name, not on every module of the agents; a class-set network, whose selection simulates
    heuristics, on the agents' and the policies' code."""
    import inspect
    import json
    import shutil
    from pathlib import Path

    import msj_gym
    from msj_gym.experiments.agents import agent_files, shipped_agents
    from msj_gym.registry import policy_class

    package = Path(msj_gym.__file__).resolve().parent

    def code(spec: str) -> set[Path]:
        return {Path(f) for f in agent_files(spec)[2:]}

    assert code("ppo-sf-fig2-0.7") == {package / "agents" / "checkpoint.py"}
    src = shipped_agents()["ppo-sf-fig2-0.7"]
    copy = tmp_path / "advised.zip"
    shutil.copy(src, copy)
    meta = json.loads(src.with_suffix(".json").read_text())
    meta["env_kwargs"]["advisor"] = ["first-fit", "adaptive-quickswap"]
    copy.with_suffix(".json").write_text(json.dumps(meta))
    advised = code(str(copy))
    # the same file, whichever name it has (msj_gym/baselines is a link to the top-level baselines/)
    resolved = {p.resolve() for p in advised}
    for pid in ("first-fit", "adaptive-quickswap"):
        assert Path(inspect.getsourcefile(policy_class(pid)) or "").resolve() in resolved
    assert package / "agents" / "generalist.py" not in advised
    simulating = code("generalist")
    assert {package / "agents" / "system_model.py", package / "baselines" / "quickswap.py"} <= simulating
