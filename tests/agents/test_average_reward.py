"""Differential rewards (agents/average_reward.py): ``r - g * dt`` with ``g`` the reward rate,
one rate for one system, one per system across systems."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("stable_baselines3", reason="stable-baselines3 is not installed: pip install -e '.[rl]'")

from stable_baselines3.common.env_util import make_vec_env

from msj_gym.agents.average_reward import DifferentialReward
from msj_gym.agents.systems_env import SystemsEnv

SYSTEMS = [{"scenario": "sf-fig2", "load": 0.5}, {"scenario": "one-or-all", "load": 0.8}]


def _venv():
    kw = {"observation": "classes", "actions": "priority", "num_arrivals": 40, "reward": "integral"}
    return make_vec_env(lambda: SystemsEnv(SYSTEMS, "MSJ-v0", **kw), n_envs=3, seed=4)


def _run(wrapped, steps: int):
    """Steps with the last valid action; per step the raw rewards, elapsed times, systems and the
    differential rewards."""
    wrapped.reset()
    inner = wrapped.venv
    rows = []
    for _ in range(steps):
        systems = wrapped._system.copy() if wrapped.per_system else None
        masks = np.array(inner.env_method("action_masks"))
        actions = np.array([np.flatnonzero(m)[-1] for m in masks])
        wrapped.step_async(actions)
        _, shaped, _, infos = wrapped.step_wait()
        raw = np.array([float(i.get("_raw", 0.0)) for i in infos])
        dt = np.array([float(i["elapsed_time"]) for i in infos])
        rows.append((raw, dt, systems, np.asarray(shaped, dtype=np.float64)))
    return rows


def test_per_system_rates_are_each_systems_own():
    from stable_baselines3.common.vec_env import VecEnvWrapper

    class Keep(VecEnvWrapper):
        def reset(self):
            return self.venv.reset()

        def step_wait(self):
            obs, rewards, dones, infos = self.venv.step_wait()
            for i, info in enumerate(infos):
                info["_raw"] = float(rewards[i])
            return obs, rewards, dones, infos

    wrapped = DifferentialReward(Keep(_venv()), scale=1.0, decay=0.0, per_system=True)
    rows = _run(wrapped, 600)
    sums = {0: np.zeros(2), 1: np.zeros(2)}
    for raw, dt, systems, shaped in rows:
        for i in range(3):
            sums[int(systems[i])] += (raw[i], dt[i])
            rate = sums[int(systems[i])][0] / sums[int(systems[i])][1] if sums[int(systems[i])][1] else 0.0
            assert shaped[i] == pytest.approx(raw[i] - rate * dt[i], rel=1e-5, abs=1e-5)
    rates = {s: v[0] / v[1] for s, v in sums.items()}
    assert rates[1] < 2 * rates[0]  # one-or-all (k = 32) holds far more jobs than sf-fig2 at 0.5


def test_per_system_needs_systems_that_say_which():
    venv = make_vec_env("msj_gym:MSJ-v0", n_envs=2, seed=0, env_kwargs={"num_arrivals": 40})
    with pytest.raises(ValueError, match="per_system"):
        DifferentialReward(venv, per_system=True).reset()
