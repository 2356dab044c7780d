"""Snapshots of an episode and play-outs by a baseline: the tools of rollout-based planning and
policy improvement (agents/improve.py)."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import msj_gym  # noqa: F401  (registers the envs)
from msj_gym import PolicyAgent, Simulator
from msj_gym.baselines import make_policy
from msj_gym.core import state as S
from msj_gym.env import planning


def _env(**kw):
    return gym.make("MSJ-v0", scenario="sf-fig2", load=0.7, num_arrivals=400, **kw).unwrapped


def _steps(env, rng, n):
    """n random valid steps; returns what they paid and saw."""
    seen = []
    for _ in range(n):
        a = int(rng.choice(np.flatnonzero(env.action_masks())))
        obs, reward, _, truncated, info = env.step(a)
        seen.append((a, reward, obs.tobytes(), info["time"]))
        if truncated:
            break
    return seen


def test_restore_replays_the_same_future() -> None:
    env = _env()
    env.reset(seed=3)
    _steps(env, np.random.default_rng(0), 50)
    snap = planning.snapshot(env)
    first = _steps(env, np.random.default_rng(1), 200)
    _, info = planning.restore(env, snap)
    assert np.array_equal(info["action_mask"], env.action_masks())
    again = _steps(env, np.random.default_rng(1), 200)
    assert again == first  # same arrivals, service times, rewards and observations, bit for bit
    planning.restore(env, snap)  # a snapshot stays usable after a restore
    assert _steps(env, np.random.default_rng(1), 200) == first
    other = _steps(_restored(env, snap), np.random.default_rng(2), 200)
    assert other != first


def _restored(env, snap):
    planning.restore(env, snap)
    return env


def test_play_out_from_the_start_is_the_native_run() -> None:
    # the whole episode's time in system, played out by MSF, equals MSF's native run with the seed
    env = _env()
    env.reset(seed=11)
    paid = planning.play_out(env, "msf")
    native = Simulator(env.workload, make_policy("msf"), seed=11, num_arrivals=400, warmup=0)
    native.run()
    assert -paid == pytest.approx(float(native.sim.fv[S.F_RUN_AREA]), rel=1e-12)
    assert env.result().mean_response_time == pytest.approx(native.result().mean_response_time, rel=1e-12)
    with pytest.raises(RuntimeError, match="episode is over"):
        env.step(0)


@pytest.mark.parametrize("policy_id", ["msf", "first-fit", "easy-backfilling"])
def test_play_out_equals_stepping_the_policy_agent(policy_id: str) -> None:
    # from a state reached by random actions: the policy's play-out pays what its steps would have paid
    env = _env(queue_window=64)
    env.reset(seed=5)
    _steps(env, np.random.default_rng(4), 80)
    snap = planning.snapshot(env)
    paid = planning.play_out(env, policy_id)
    planning.restore(env, snap)
    agent = PolicyAgent(policy_id, env)
    total, truncated = 0.0, False
    while not truncated:
        action, _ = agent.predict(None)
        _, reward, _, truncated, _ = env.step(action)
        total += reward
    assert paid == pytest.approx(total, rel=1e-9)


def test_snapshot_and_play_out_refuse_misuse() -> None:
    env = _env()
    with pytest.raises(RuntimeError, match="reset"):
        planning.snapshot(env)
    env.reset(seed=0)
    with pytest.raises(TypeError, match="EnvSnapshot"):
        planning.restore(env, "state")
    other = _env()
    other.reset(seed=0)
    with pytest.raises(ValueError, match="another environment"):
        planning.restore(env, planning.snapshot(other))
    with pytest.raises(ValueError, match="preempts"):
        planning.play_out(env, "server-filling")
    weighted = _env(weighted=True)
    weighted.reset(seed=0)
    with pytest.raises(ValueError, match="weighted"):
        planning.play_out(weighted, "msf")
