"""MSJMoldable-v0: env contract, masks, rewards, and schemes through the env equal their native runs."""

from __future__ import annotations

import itertools
import warnings

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import msj_gym  # noqa: F401  (registers the ids)
from msj_gym.baselines import MOLDABLE_POLICIES
from msj_gym.env import MOLDABLE_ENV_ID, MoldablePolicyAgent
from msj_gym.env.moldable_env import MSJMoldableEnv
from msj_gym.moldable import SUB_LINEAR, MoldableClass, MoldableSystem, simulate_moldable

TWO_CLASSES = MoldableSystem(
    40, (MoldableClass(SUB_LINEAR, 0.4, name="A"), MoldableClass((1, 1.5, 1.8), 0.3, name="B"))
)


def test_checkers_pass() -> None:
    env = gym.make(MOLDABLE_ENV_ID, num_servers=20, render_mode="ansi")
    check_env(env.unwrapped, skip_render_check=False)
    sb3_checker = pytest.importorskip("stable_baselines3.common.env_checker")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sb3_checker.check_env(gym.make(MOLDABLE_ENV_ID, system=TWO_CLASSES).unwrapped)


def _run(env, agent, seed):
    obs, info = env.reset(seed=seed)
    total, trunc, steps = 0.0, False, 0
    while not trunc:
        obs, reward, term, trunc, info = env.step(agent.predict(obs)[0])
        assert not term and env.observation_space.contains(obs)
        total += reward
        steps += 1
    return env.unwrapped.result(), total, info, steps


@pytest.mark.parametrize("policy_id", sorted(MOLDABLE_POLICIES))
@pytest.mark.parametrize("system", ["single", "two-class"])
def test_scheme_through_env_equals_native_run(policy_id: str, system: str) -> None:
    kwargs = {"system": TWO_CLASSES} if system == "two-class" else {"num_servers": 30}
    env = gym.make(MOLDABLE_ENV_ID, num_arrivals=4000, warmup=400, **kwargs)
    res, _, info, _ = _run(env, MoldablePolicyAgent(policy_id, env), seed=21)
    native = simulate_moldable(env.unwrapped.system, policy_id, seed=21, num_arrivals=4000, warmup=400)
    a, b = res.to_dict(), native.to_dict()
    a["provenance"].pop("policy"), b["provenance"].pop("policy")
    assert a == b and info["invalid_actions"] == 0


def test_reward_is_minus_cost_of_both_criteria() -> None:
    w = 3.0
    env = gym.make(MOLDABLE_ENV_ID, num_servers=25, num_arrivals=3000, warmup=0, blocking_cost=w)
    res, total, _, _ = _run(env, MoldablePolicyAgent("moldable-greedy", env), seed=2)
    cost = (res.arrivals - res.blocked) * res.mean_execution_time + w * res.blocked
    assert res.blocked > 0 and total == pytest.approx(-cost / 3000, rel=1e-9)
    env = gym.make(
        MOLDABLE_ENV_ID, num_servers=25, num_arrivals=3000, warmup=0, reward="total", blocking_cost=w
    )
    _, total_sum, _, _ = _run(env, MoldablePolicyAgent("moldable-greedy", env), seed=2)
    assert total_sum == pytest.approx(-cost, rel=1e-9)


def test_masks_and_invalid_actions() -> None:
    env = gym.make(MOLDABLE_ENV_ID, num_servers=3, arrival_rate=0.9, num_arrivals=500)
    _, info = env.reset(seed=0)
    core = env.unwrapped
    seen_partial = False
    trunc = False
    while not trunc:
        mask = info["action_mask"]
        assert np.array_equal(mask, core.action_masks()) and mask[0]
        assert mask[1:].sum() == min(5, info["idle"]) >= 1
        seen_partial |= not mask[-1]
        _, _, _, trunc, info = env.step(5)  # ask for 5 servers: invalid unless 5 are idle (never, n=3)
        assert info["invalid_action"]
    assert seen_partial and info["invalid_actions"] > 0
    res = core.result()
    assert res.blocked == res.arrivals  # every invalid action rejected
    env.reset(seed=0)
    for bad in (-1, 6, 1.5, "x"):
        with pytest.raises(ValueError, match="action"):
            env.step(bad)


def test_bad_arguments() -> None:
    with pytest.raises(ValueError, match="blocking_cost"):
        gym.make(MOLDABLE_ENV_ID, blocking_cost=-1.0)
    with pytest.raises(ValueError, match="reward"):
        gym.make(MOLDABLE_ENV_ID, reward="sum")
    with pytest.raises(ValueError, match="not both"):
        gym.make(MOLDABLE_ENV_ID, system=TWO_CLASSES, num_servers=4)
    with pytest.raises(ValueError, match="warmup"):
        gym.make(MOLDABLE_ENV_ID, num_arrivals=10, warmup=10)


def _frames(env, agent, seed: int, steps: int) -> list[np.ndarray]:
    obs, _ = env.reset(seed=seed)
    frames = [env.render()]
    for _ in range(steps):
        obs, _, _, trunc, _ = env.step(agent.predict(obs)[0])
        frames.append(env.render())
        if trunc:
            break
    return frames


def test_rgb_array_frames() -> None:
    pytest.importorskip("PIL")
    env = gym.make(MOLDABLE_ENV_ID, system=TWO_CLASSES, num_arrivals=300, render_mode="rgb_array")
    assert {"ansi", "rgb_array"} <= set(env.metadata["render_modes"]) and env.metadata["render_fps"] > 0
    blank = env.unwrapped.render()  # before reset: an empty system
    frames = _frames(env, MoldablePolicyAgent("moldable-greedy", env), seed=1, steps=80)
    assert all(f.dtype == np.uint8 and f.ndim == 3 and f.shape == blank.shape for f in frames)
    assert blank.shape[2] == 3 and blank.shape[0] % 16 == 0
    assert np.array_equal(env.render(), frames[-1])  # the same state, the same frame
    assert sum(not np.array_equal(a, b) for a, b in itertools.pairwise(frames)) > 60
    # deterministic: a second env on the same seed draws the same pictures
    again = gym.make(MOLDABLE_ENV_ID, system=TWO_CLASSES, num_arrivals=300, render_mode="rgb_array")
    frames2 = _frames(again, MoldablePolicyAgent("moldable-greedy", again), seed=1, steps=80)
    assert all(np.array_equal(a, b) for a, b in zip(frames, frames2, strict=True))
    with pytest.raises(ValueError, match="render_mode"):
        MSJMoldableEnv(render_mode="movie")


def test_rgb_array_list_and_record_video(tmp_path) -> None:
    pytest.importorskip("PIL")
    env = gym.make(MOLDABLE_ENV_ID, num_servers=20, num_arrivals=50, render_mode="rgb_array_list")
    env.reset(seed=0)
    env.step(1)
    frames = env.render()
    assert isinstance(frames, list) and len(frames) == 2 and frames[0].dtype == np.uint8
    pytest.importorskip("moviepy")
    env = gym.wrappers.RecordVideo(
        gym.make(MOLDABLE_ENV_ID, num_servers=20, num_arrivals=40, render_mode="rgb_array"),
        str(tmp_path / "video"),
        disable_logger=True,
    )
    agent = MoldablePolicyAgent("moldable-greedy", env)
    obs, _ = env.reset(seed=0)
    trunc = False
    while not trunc:
        obs, _, _, trunc, _ = env.step(agent.predict(obs)[0])
    env.close()
    assert list((tmp_path / "video").glob("*.mp4"))
