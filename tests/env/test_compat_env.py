"""``CompatAssign-v0``: the env contract, masks, and the paper's random assignment through it giving the
native run bit for bit."""

from __future__ import annotations

import itertools

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import msj_gym  # noqa: F401  (registers the ids)
from msj_gym.baselines import make_policy
from msj_gym.core.state import F_RUN_AREA, I_NARR
from msj_gym.env import DrawnAssignmentAgent, RandomAssignmentAgent
from msj_gym.env.compat_env import CompatAssignEnv
from msj_gym.pooled import PooledSimulator
from msj_gym.workloads.compat import CompatClass, CompatWorkload

SMALL = CompatWorkload(
    (1.0, 2.0, 1.0, 0.5, 1.0, 1.0), (CompatClass(tuple(range(6)), 3.0, choose=2, name="r2"),)
)


def _episode(env, agent, seed):
    obs, info = env.reset(seed=seed)
    total, steps, done = 0.0, 0, False
    while not done:
        assert info["action_mask"].any()
        action, _ = agent.predict(obs)
        assert info["action_mask"][action]
        obs, reward, terminated, done, info = env.step(action)
        assert not terminated and reward <= 0.0 and env.observation_space.contains(obs)
        total += reward
        steps += 1
    return total, steps, info


def test_env_checker_passes():
    env = gym.make("CompatAssign-v0", scenario=SMALL, load=0.6, num_arrivals=200)
    check_env(env.unwrapped, skip_render_check=True)


@pytest.mark.parametrize(("scheduler", "m"), [("fcfs", 5.0), ("balanced-fair", 1.0)])
def test_drawn_assignment_is_the_native_run(scheduler, m):
    env = gym.make("CompatAssign-v0", scenario=SMALL, load=0.7, num_arrivals=600, scheduler=scheduler, m=m)
    total, steps, info = _episode(env, DrawnAssignmentAgent(env), seed=7)
    policy = make_policy("compat-fcfs") if scheduler == "fcfs" else make_policy("balanced-fair", m=m)
    native_sim = PooledSimulator(SMALL.with_load(0.7), policy, seed=7, num_arrivals=600, warmup=0)
    native = native_sim.run()
    # two servers per job, one per step; arrivals go on until the 600 measured jobs have left
    assert steps == 2 * int(native_sim.sim.iv[I_NARR])
    assert info["mean_response_time"] == native.mean_response_time
    assert env.unwrapped.result().per_class["r2"].count == 600
    # the return is minus the time integral of the number of jobs in the system over the run
    assert -total == pytest.approx(float(native_sim.sim.fv[F_RUN_AREA]), rel=1e-12)


def test_random_agent_masks_and_invalid_actions():
    env = gym.make("CompatAssign-v0", scenario="003-random-3", load=0.5, num_arrivals=100)
    _, steps, info = _episode(env, RandomAssignmentAgent(env, seed=1), seed=3)
    assert steps >= 300 and info["invalid_actions"] == 0 and 0 < info["mean_response_time"] < 10
    obs, info = env.reset(seed=0)
    first = int(np.flatnonzero(info["action_mask"])[0])
    obs, _, _, _, info = env.step(first)
    assert not info["action_mask"][first] and obs[200 + first] == 1.0  # chosen block
    _, _, _, _, info = env.step(first)  # masked: replaced by the lowest allowed server, counted
    assert info["invalid_actions"] == 1
    with pytest.raises(ValueError, match="expected an integer in"):
        env.step(100)


def test_bad_arguments():
    with pytest.raises(ValueError, match="nothing to decide"):
        gym.make("CompatAssign-v0", scenario="003-tree-symmetric")
    with pytest.raises(ValueError, match="scheduler: expected 'fcfs' or 'balanced-fair', got 'msf'"):
        gym.make("CompatAssign-v0", scheduler="msf")


def _frames(env, agent, seed: int, steps: int) -> list[np.ndarray]:
    obs, _ = env.reset(seed=seed)
    frames = [env.render()]
    for _ in range(steps):
        obs, _, _, done, _ = env.step(agent.predict(obs)[0])
        frames.append(env.render())
        if done:
            break
    return frames


def test_rgb_array_frames():
    pytest.importorskip("PIL")
    env = gym.make("CompatAssign-v0", scenario=SMALL, load=0.7, num_arrivals=100, render_mode="rgb_array")
    assert env.metadata["render_modes"] == ["rgb_array"] and env.metadata["render_fps"] > 0
    blank = env.unwrapped.render()  # before reset: an empty system
    frames = _frames(env, RandomAssignmentAgent(env, seed=2), seed=4, steps=120)
    assert all(f.dtype == np.uint8 and f.ndim == 3 and f.shape == blank.shape for f in frames)
    assert blank.shape[2] == 3 and blank.shape[0] % 16 == 0
    assert np.array_equal(env.render(), frames[-1])  # the same state, the same frame
    # every step changes something: a server chosen (dot) or a new job and clock
    assert all(not np.array_equal(a, b) for a, b in itertools.pairwise(frames))
    again = gym.make("CompatAssign-v0", scenario=SMALL, load=0.7, num_arrivals=100, render_mode="rgb_array")
    frames2 = _frames(again, RandomAssignmentAgent(again, seed=2), seed=4, steps=120)
    assert all(np.array_equal(a, b) for a, b in zip(frames, frames2, strict=True))
    with pytest.raises(ValueError, match="render_mode"):
        CompatAssignEnv(render_mode="ansi")


def test_rgb_array_list_and_record_video(tmp_path):
    pytest.importorskip("PIL")
    env = gym.make("CompatAssign-v0", scenario=SMALL, num_arrivals=50, render_mode="rgb_array_list")
    env.reset(seed=0)
    env.step(int(np.flatnonzero(env.unwrapped.action_masks())[0]))
    frames = env.render()
    assert isinstance(frames, list) and len(frames) == 2 and frames[0].dtype == np.uint8
    pytest.importorskip("moviepy")
    env = gym.wrappers.RecordVideo(
        gym.make("CompatAssign-v0", scenario=SMALL, num_arrivals=20, render_mode="rgb_array"),
        str(tmp_path / "video"),
        disable_logger=True,
    )
    _episode(env, DrawnAssignmentAgent(env), seed=0)
    env.close()
    assert list((tmp_path / "video").glob("*.mp4"))


@pytest.mark.parametrize(("scenario", "load", "seed"), [(SMALL, 0.7, 7), ("003-random-3", 0.85, 2)])
def test_least_loaded_assignment_is_the_native_run(scenario, load, seed):
    """``compat-least-loaded`` natively and its agent through the env: the same jobs, the same servers,
    the same results bit for bit."""
    from msj_gym.baselines import LeastLoadedAssignmentAgent

    env = gym.make("CompatAssign-v0", scenario=scenario, load=load, num_arrivals=600)
    _, steps, info = _episode(env, LeastLoadedAssignmentAgent(env), seed=seed)
    wl = env.unwrapped.workload
    policy = make_policy("compat-least-loaded")
    native_sim = PooledSimulator(wl, policy, seed=seed, num_arrivals=600, warmup=0)
    native = native_sim.run()
    d = wl.classes[0].choose
    assert steps == d * int(native_sim.sim.iv[I_NARR])
    assert info["mean_response_time"] == native.mean_response_time
    # it is not the random assignment: the same seed gives another (shorter) mean response time
    drawn = PooledSimulator(wl, make_policy("compat-fcfs"), seed=seed, num_arrivals=600, warmup=0).run()
    assert native.mean_response_time < drawn.mean_response_time


def test_least_loaded_is_not_defined_without_random_assignment():
    from msj_gym.registry import supports
    from msj_gym.workloads.compat import build_compat_scenario

    # the kernel's allocation invariant, after every event, on the servers it chose
    wl = build_compat_scenario("003-random-3", load=0.9, distribution="bimodal")
    PooledSimulator(wl, make_policy("compat-least-loaded"), seed=4, num_arrivals=2000, debug=True).run()
    why = supports("compat-least-loaded", build_compat_scenario("003-tree-symmetric", load=0.5))
    assert why is not None and "nothing to assign" in why
    assert supports("compat-least-loaded", build_compat_scenario("003-random-2", load=0.5)) is None


@pytest.mark.parametrize(
    ("scenario", "load", "seed", "weights"),
    [
        (SMALL, 0.8, 3, (0.4, 0.3, 0.1, 0.2)),  # unequal capacities: every feature counts
        (SMALL, 0.6, 4, (0.0, -0.5, 1.0, 0.3)),
        ("003-random-3", 0.85, 2, (0.5, 0.4, 0.1, 0.0)),
    ],
)
def test_scored_assignment_is_the_native_run(scenario, load, seed, weights):
    """The scored rule natively and its agent through the env: the same results bit for bit."""
    from msj_gym.baselines import CompatScoredAssignment, ScoredAssignmentAgent
    from msj_gym.baselines.balanced_fair import SCORE_FEATURES

    env = gym.make("CompatAssign-v0", scenario=scenario, load=load, num_arrivals=800)
    _, _, info = _episode(env, ScoredAssignmentAgent(env, weights), seed=seed)
    params = {f"w_{n}": w for n, w in zip(SCORE_FEATURES, weights, strict=True)}
    wl = env.unwrapped.workload
    native = PooledSimulator(wl, CompatScoredAssignment(**params), seed=seed, num_arrivals=800, warmup=0)
    res = native.run()
    assert info["mean_response_time"] == res.mean_response_time
    least = PooledSimulator(
        wl, make_policy("compat-least-loaded"), seed=seed, num_arrivals=800, warmup=0
    ).run()
    assert res.mean_response_time != least.mean_response_time  # the weights choose other servers


def test_scored_assignment_with_the_count_alone_is_least_loaded():
    from msj_gym.baselines import CompatScoredAssignment

    for scenario, load in ((SMALL, 0.8), (SMALL.with_load(0.5), None)):
        wl = scenario.with_load(load) if load else scenario
        runs = [
            PooledSimulator(wl, p, seed=11, num_arrivals=3000, warmup=300, debug=True)
            .run()
            .mean_response_time
            for p in (CompatScoredAssignment(), make_policy("compat-least-loaded"))
        ]
        assert runs[0] == runs[1]


def test_scored_agent_refuses_bad_weights():
    from msj_gym.baselines import ScoredAssignmentAgent

    env = gym.make("CompatAssign-v0", scenario=SMALL, load=0.5, num_arrivals=50)
    for bad in ((1.0, 0.0), (1.0, 0.0, float("nan"), 0.0)):
        with pytest.raises(ValueError, match="weights: expected 4 finite numbers"):
            ScoredAssignmentAgent(env, bad)
