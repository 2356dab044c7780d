"""MSJ episodes end by truncation only (the system has no natural end), so a learner must bootstrap the
value of the last state instead of treating it as terminal. stable-baselines3's PPO and sb3-contrib's
MaskablePPO do so from ``info["TimeLimit.truncated"]`` and ``info["terminal_observation"]``: with a
critic that says ``C`` everywhere, the reward stored for the step that ends an episode is the env's
reward plus ``gamma * C``, and every other step's is the env's own. Checked on the native vector env
(``MSJSB3VecEnv``, with and without the differential reward) and on SB3's ``DummyVecEnv`` of single
envs."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("sb3_contrib", reason="sb3-contrib is not installed: pip install -e '.[rl]'")

import torch
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.vec_env import VecEnvWrapper

C = 7.5
GAMMA = 0.9
KW = {"scenario": "sf-fig2", "load": 0.7, "num_arrivals": 30, "reward": "integral"}


class Recorder(VecEnvWrapper):
    """Keeps the rewards and dones the algorithm receives, step by step."""

    def __init__(self, venv):
        super().__init__(venv)
        self.rewards: list[np.ndarray] = []
        self.dones: list[np.ndarray] = []

    def reset(self):
        return self.venv.reset()

    def step_wait(self):
        obs, rewards, dones, infos = self.venv.step_wait()
        self.rewards.append(np.asarray(rewards, dtype=np.float64).copy())
        self.dones.append(np.asarray(dones).copy())
        for i in np.flatnonzero(dones):
            assert infos[i]["TimeLimit.truncated"] is True
            assert infos[i]["terminal_observation"] is not None
        return obs, rewards, dones, infos


class _Nothing(BaseCallback):
    def _on_step(self) -> bool:
        return True


def _constant_critic(model) -> None:
    with torch.no_grad():
        for p in model.policy.value_net.parameters():
            p.zero_()
        model.policy.value_net.bias.fill_(C)


def _venv(kind: str):
    if kind == "dummy":
        from stable_baselines3.common.env_util import make_vec_env

        return make_vec_env("msj_gym:MSJ-v0", n_envs=2, seed=3, env_kwargs=KW)
    from msj_gym.agents.vec_env import MSJSB3VecEnv

    venv = MSJSB3VecEnv(2, **KW)
    venv.seed(3)
    if kind == "native+differential":
        from msj_gym.agents.average_reward import DifferentialReward

        return DifferentialReward(venv, scale=2.0)
    return venv


@pytest.mark.parametrize("algo", ["ppo", "maskable-ppo"])
@pytest.mark.parametrize("kind", ["native", "native+differential", "dummy"])
def test_truncation_is_bootstrapped_with_the_value_of_the_last_state(algo, kind):
    if algo == "ppo":
        from stable_baselines3 import PPO as Algo
    else:
        from sb3_contrib import MaskablePPO as Algo
    recorder = Recorder(_venv(kind))
    n_steps = 150
    model = Algo("MlpPolicy", recorder, n_steps=n_steps, batch_size=50, gamma=GAMMA, seed=0, verbose=0)
    _constant_critic(model)
    _, callback = model._setup_learn(n_steps, _Nothing())  # resets the env, as learn() does
    recorder.rewards.clear()
    assert model.collect_rollouts(recorder, callback, model.rollout_buffer, n_rollout_steps=n_steps)
    stored = model.rollout_buffer.rewards  # (n_steps, n_envs)
    raw = np.array(recorder.rewards)
    done = np.array(recorder.dones)
    assert done.sum() >= 2  # episodes of 30 arrivals: several end within the rollout
    np.testing.assert_allclose(stored[done], raw[done] + GAMMA * C, rtol=1e-5)
    np.testing.assert_allclose(stored[~done], raw[~done], rtol=1e-6)
    # the stored episode starts follow the ends: the advantage does not run across a reset
    starts = model.rollout_buffer.episode_starts
    np.testing.assert_array_equal(starts[1:].astype(bool), done[:-1])
