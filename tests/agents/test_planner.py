"""The decision-time planner and the expert iteration that trains its network, at tiny budgets."""

from __future__ import annotations

import json

import gymnasium as gym
import numpy as np
import pytest

import msj_gym  # noqa: F401  (registers the envs)
from msj_gym.agents.network import ENV_KWARGS, NetworkWeights
from msj_gym.agents.planner import Planner, PlannerConfig
from msj_gym.core import state as S
from msj_gym.env import planning


def _env(seed: int = 4) -> gym.Env:
    env = gym.make("MSJ-v0", scenario="sf-fig2", load=0.8, num_arrivals=2000, **ENV_KWARGS).unwrapped
    env.reset(seed=seed)
    return env


def _weights() -> NetworkWeights:
    w = NetworkWeights.initial(hidden=8, code=4, seed=1)
    w.arrays["wait2_b"][:] = -3.0
    return w


def test_the_planner_decides_without_the_future_or_the_sizes() -> None:
    """At the same state, the planner's decisions stay the same, bit for bit, when the episode's future
    arrivals and its jobs' sizes change: it reads neither."""
    env = _env()
    for _ in range(200):
        planning.step_policy(env, "first-fit")
    while np.count_nonzero(env.action_masks()) < 2:
        planning.step_policy(env, "first-fit")
    config = PlannerConfig(futures=6, horizon=24, bases=("msf",), gate=0.0)
    obs = env.unwrapped._observation()
    mask = env.action_masks()
    first = [
        int(Planner(env, config, _weights(), seed=s).predict(obs, action_masks=mask)[0]) for s in range(8)
    ]
    sim = env.core.sim
    live = sim.ji[:, S.STATE] != S.FREE_SLOT
    sim.js[live, S.REMAINING] *= 7.0
    idx = np.arange(sim.iv[S.I_NARR], sim.iv[S.I_NGEN]) & (sim.ring_t.size - 1)
    sim.ring_s[idx] *= 5.0
    sim.ring_c[idx] = 1 - sim.ring_c[idx]
    again = [
        int(Planner(env, config, _weights(), seed=s).predict(obs, action_masks=mask)[0]) for s in range(8)
    ]
    assert first == again


def test_a_planner_episode_is_reproducible_and_counts_its_work() -> None:
    config = PlannerConfig(futures=2, horizon=16, gate=1.0)
    results = []
    for _ in range(2):
        env = _env(seed=7)
        agent = Planner(env, config, _weights(), seed=7)
        obs, info = env.reset(seed=7)
        over = False
        while not over:
            action, _ = agent.predict(obs, action_masks=info["action_mask"])
            obs, _, _, over, info = env.step(int(action))
        results.append(env.result().mean_response_time)
        assert agent.decisions > 0 and agent.planning_seconds > 0
    assert results[0] == results[1]


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"futures": 0}, "planner.futures: expected an integer"),
        ({"horizon": 1.5}, "planner.horizon: expected an integer"),
        ({"gate": -1}, "planner.gate: expected a number >= 0"),
        ({"network": "yes"}, "planner.network: expected true or false"),
        ({"bases": "msf"}, "planner.bases: expected a list"),
        ({"network": False}, "needs a base"),
        ({"budget": 3}, "unknown settings \\['budget'\\]"),
    ],
)
def test_bad_settings_are_refused_in_one_line(settings: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        PlannerConfig.from_dict(settings)


def test_a_planner_checkpoint_loads_as_an_agent(tmp_path) -> None:
    from msj_gym.experiments.agents import agent_files, load_agent

    path = tmp_path / "p.npz"
    _weights().save(path)
    meta = {
        "algo": "planner",
        "env_id": "MSJ-v0",
        "env_kwargs": ENV_KWARGS,
        "planner": {"futures": 2, "horizon": 8, "bases": ["first-fit"]},
    }
    path.with_suffix(".json").write_text(json.dumps(meta))
    loaded = load_agent(str(path))
    assert loaded.native is None
    env = loaded.make_env("sf-fig2", {"load": 0.5}, 200, 20)
    assert isinstance(loaded.agent_for(env, seed=3), Planner)
    files = agent_files(str(path))  # keyed by its files and the code it runs, not the agents folder
    assert any(f.endswith("futures.py") for f in files) and not any(f.endswith("train.py") for f in files)


def test_expert_iteration_at_a_tiny_budget(tmp_path) -> None:
    pytest.importorskip("torch", reason="the fit needs the rl extra (torch)")
    from msj_gym.agents import expert
    from msj_gym.experiments.agents import load_agent

    out = tmp_path / "net.npz"
    argv = [
        "--systems", "2", "--decisions", "24", "--rounds", "2", "--futures", "1", "--horizon", "12",
        "--episode-arrivals", "300", "--skip", "30", "--sample-every", "2", "--hidden", "8", "--code", "4",
        "--epochs", "1", "--select-systems", "1", "--select-arrivals", "300", "--out", str(out),
        "--data", str(tmp_path / "data.npz"),
    ]  # fmt: skip
    expert.main(argv)
    meta = json.loads(out.with_suffix(".json").read_text())
    assert meta["algo"] == "class-set-network" and len(meta["rounds"]) == 2
    assert load_agent(str(out)).native is not None
    first = NetworkWeights.load(out).digest()
    expert.main(argv)  # resumes from the kept decisions: the same network
    assert NetworkWeights.load(out).digest() == first
