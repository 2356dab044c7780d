"""The class-set network as data: one compiled forward pass, the same decisions natively and through the
env, equivariant in the classes, weights that load without unpickling; its torch twin for training."""

from __future__ import annotations

import json
import pickle

import gymnasium as gym
import numpy as np
import pytest

import msj_gym
from msj_gym import Simulator
from msj_gym.agents.network import (
    ENV_KWARGS,
    NetworkAgent,
    NetworkPolicy,
    NetworkWeights,
    scores,
    work_floats,
)
from msj_gym.env import planning
from msj_gym.workloads import Exponential, JobClass, Workload
from msj_gym.workloads.scenarios import load_scenario


def _episode(weights: NetworkWeights, wl: Workload, seed: int, arrivals: int = 1500) -> float:
    env = gym.make(
        "MSJ-v0",
        scenario=wl,
        num_arrivals=arrivals,
        warmup=arrivals // 10,
        max_arrivals=Simulator.arrival_cap(arrivals),
        **ENV_KWARGS,
    ).unwrapped
    agent = NetworkAgent(weights, wl.num_classes)
    obs, info = env.reset(seed=seed)
    over = False
    while not over:
        action, _ = agent.predict(obs, action_masks=info["action_mask"])
        obs, _, _, over, info = env.step(int(action))
    return env.result().mean_response_time


@pytest.mark.parametrize("scenario", ["sf-fig2", "four-class"])
def test_the_native_policy_runs_the_agents_episodes(scenario: str) -> None:
    """Native runs of :class:`NetworkPolicy` equal the agent's episodes through the env, bit for bit:
    the policy computes the observation the env would show before each of its starts."""
    wl = load_scenario(scenario).build(load=0.6)
    for seed in (1, 2):
        weights = NetworkWeights.initial(hidden=16, code=8, seed=seed)
        weights.arrays["wait2_b"][:] = -3.0  # never waiting forever: a result with jobs measured
        native = msj_gym.simulate(wl, NetworkPolicy(weights), num_arrivals=1500, warmup=150, seed=seed)
        assert np.isfinite(native.mean_response_time)
        assert native.mean_response_time == _episode(weights, wl, seed)


def test_permuting_the_classes_permutes_the_scores() -> None:
    wl = load_scenario("four-class").build(load=0.8)
    env = gym.make("MSJ-v0", scenario=wl, num_arrivals=500, **ENV_KWARGS).unwrapped
    obs, _ = env.reset(seed=0)
    for _ in range(60):
        obs, *_ = planning.step_policy(env, "first-fit")
    weights = NetworkWeights.initial(hidden=16, code=8, seed=3)
    c = wl.num_classes
    out = np.zeros(1 + c)
    scores(weights.packed(), obs.astype(np.float64), c, np.zeros(work_floats(c, 16, 8)), out)
    perm = np.array([2, 0, 3, 1])
    rows = obs[8 : 8 + 14 * c].reshape(c, 14)
    permuted = obs.astype(np.float64).copy()
    permuted[8 : 8 + 14 * c] = rows[perm].reshape(-1)
    again = np.zeros(1 + c)
    scores(weights.packed(), permuted, c, np.zeros(work_floats(c, 16, 8)), again)
    assert again[0] == pytest.approx(out[0], abs=1e-12)
    assert again[1:] == pytest.approx(out[1:][perm], abs=1e-12)


def test_the_torch_twin_computes_the_same_scores() -> None:
    torch = pytest.importorskip("torch", reason="the training twin needs the rl extra")
    from msj_gym.agents.expert import from_torch, to_torch, torch_network

    weights = NetworkWeights.initial(hidden=16, code=8, seed=5)
    module = torch_network(16, 8)
    to_torch(weights, module)
    back = from_torch(module)
    assert all(np.array_equal(back.arrays[k], weights.arrays[k]) for k in weights.arrays)
    wl = load_scenario("four-class").build(load=0.8)
    env = gym.make("MSJ-v0", scenario=wl, num_arrivals=500, **ENV_KWARGS).unwrapped
    obs, _ = env.reset(seed=1)
    for _ in range(40):
        obs, *_ = planning.step_policy(env, "first-fit")
    out = np.zeros(5)
    scores(weights.packed(), obs.astype(np.float64), 4, np.zeros(work_floats(4, 16, 8)), out)
    with torch.no_grad():
        z = module(torch.as_tensor(obs[None].astype(np.float64)))[0].numpy()
    assert z[:5] == pytest.approx(out, abs=1e-12)
    assert (z[5:] == -1e9).all()  # padding slots never win


def test_weights_round_trip_and_refuse_what_needs_unpickling(tmp_path) -> None:
    weights = NetworkWeights.initial(hidden=8, code=4, seed=0)
    path = tmp_path / "w.npz"
    weights.save(path)
    back = NetworkWeights.load(path)
    assert back.digest() == weights.digest()
    # a file holding a pickled object is refused, and never unpickled
    hostile = tmp_path / "hostile.npz"
    np.savez(hostile, format=np.array([{"a": 1}], dtype=object))
    with pytest.raises(ValueError, match="without unpickling"):
        NetworkWeights.load(hostile)
    wrong = tmp_path / "wrong.npz"
    np.savez(wrong, format=np.array("something-else"))
    with pytest.raises(ValueError, match="format 'something-else'"):
        NetworkWeights.load(wrong)
    bad = dict(weights.arrays, enc1_b=np.full(8, np.nan))
    NetworkWeights(8, 4, bad).save(tmp_path / "nan.npz")
    with pytest.raises(ValueError, match="not finite"):
        NetworkWeights.load(tmp_path / "nan.npz")
    (tmp_path / "pickle.npz").write_bytes(pickle.dumps({"x": 1}))
    with pytest.raises(ValueError, match="cannot be read"):
        NetworkWeights.load(tmp_path / "pickle.npz")


def test_a_network_checkpoint_enters_the_leaderboard_natively(tmp_path) -> None:
    from msj_gym.experiments.agents import load_agent

    weights = NetworkWeights.initial(hidden=8, code=4, seed=2)
    path = tmp_path / "net.npz"
    weights.save(path)
    meta = {"algo": "class-set-network", "env_id": "MSJ-v0", "env_kwargs": ENV_KWARGS}
    path.with_suffix(".json").write_text(json.dumps(meta))
    loaded = load_agent(str(path))
    assert loaded.native is not None and loaded.native[0].endswith(":NetworkPolicy")
    wl = Workload(8, [JobClass(1, Exponential(1.0), 0.7), JobClass(8, Exponential(1.0), 0.3)], load=0.5)
    env = loaded.make_env(wl, {}, 300, 30)
    assert isinstance(loaded.agent_for(env), NetworkAgent)


def test_a_network_refuses_more_classes_than_it_reads() -> None:
    classes = [JobClass(1, Exponential(1.0), 1 / 33) for _ in range(33)]
    wl = Workload(64, classes, load=0.5)
    with pytest.raises(ValueError, match="at most 32 classes"):
        msj_gym.simulate(wl, NetworkPolicy(NetworkWeights.initial(8, 4)), num_arrivals=100)
