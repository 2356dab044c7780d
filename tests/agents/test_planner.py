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


def test_an_action_is_rated_by_its_best_base_on_average_not_in_hindsight() -> None:
    """Two bases that each rate an action as the default, on average, but disagree future by future:
    the planner keeps its default. Taking the least over the bases per future would rate the action
    as better in every future and leave the default on that hindsight alone."""
    env = _env()
    while np.count_nonzero(env.action_masks()) < 2:
        planning.step_policy(env, "first-fit")
    mask = env.action_masks()
    valid = np.flatnonzero(mask)
    agent = Planner(env, PlannerConfig(futures=8, horizon=8, network=False, bases=("first-fit", "msf")))
    default = agent._default(env.unwrapped._observation(), mask)
    other = int(np.flatnonzero(valid != default)[0])
    costs = np.full((2, 8, valid.size), 10.0)
    costs[0, :, other] = np.tile([0.0, 20.0], 4)  # the same mean as the default's under each base
    costs[1, :, other] = np.tile([20.0, 0.0], 4)
    agent.player.costs = lambda actions: costs
    assert int(agent.predict(env.unwrapped._observation(), action_masks=mask)[0]) == default
    assert agent.deviations == 0
    costs[1, :, other] = np.tile([8.0, 10.0], 4)  # one base rates it better on average: the planner takes it
    assert int(agent.predict(env.unwrapped._observation(), action_masks=mask)[0]) == int(valid[other])


def test_a_second_look_decides_on_its_own_futures() -> None:
    """With ``more_futures``, a decision whose first look finds an action that may beat the default is
    judged on the second look's new futures alone: the first look's were kept for looking good."""
    env = _env()
    while np.count_nonzero(env.action_masks()) < 2:
        planning.step_policy(env, "first-fit")
    mask = env.action_masks()
    valid = np.flatnonzero(mask)
    config = PlannerConfig(
        futures=4, horizon=8, network=False, bases=("first-fit",), more_futures=6, screen=1.0
    )
    agent = Planner(env, config)
    obs = env.unwrapped._observation()
    default = agent._default(obs, mask)
    other = int(np.flatnonzero(valid != default)[0])
    looks: list[np.ndarray] = []
    confirm = False

    def costs(actions: np.ndarray, futures: int | None = None) -> np.ndarray:
        looks.append(actions.copy())
        n = futures or config.futures
        out = np.tile(np.linspace(8.0, 12.0, n)[:, None], (1, 1, actions.size))
        if futures is None:  # the first look: the other action cheaper in every future
            out[0, :, other] -= np.array([8.0, 7.0, 8.0, 7.0])
        elif confirm:  # the second look agrees
            out[0, :, list(actions).index(valid[other])] -= 1.0
        return out  # else the second look: every action costs the default's, future by future

    agent.player.costs = costs
    assert int(agent.predict(obs, action_masks=mask)[0]) == default
    assert agent.deviations == 0
    assert sorted(looks[1].tolist()) == sorted([default, int(valid[other])])  # only those two again
    confirm = True
    assert int(agent.predict(obs, action_masks=mask)[0]) == int(valid[other])
