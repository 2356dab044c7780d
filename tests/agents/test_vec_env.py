"""The SB3 VecEnv adapter over the native vector env: equal to SB3's DummyVecEnv of single envs for the
same seeds, and PPO / MaskablePPO / msj_gym.agents.train run on it."""

from __future__ import annotations

import json
import pathlib

import numpy as np
import pytest

pytest.importorskip("stable_baselines3")
pytest.importorskip("sb3_contrib")

from sb3_contrib import MaskablePPO
from sb3_contrib.common.maskable.utils import get_action_masks, is_masking_supported
from stable_baselines3 import PPO
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.vec_env import DummyVecEnv

from msj_gym.agents import train
from msj_gym.agents.vec_env import MSJSB3VecEnv


@pytest.mark.parametrize("env_id", ["MSJ-v0", "MSJPreemptive-v0", "MSJMoldable-v0"])
def test_equals_dummy_vec_env(env_id: str) -> None:
    kwargs = {"num_arrivals": 30}
    if env_id == "MSJMoldable-v0":
        kwargs["num_servers"] = 10
    native = MSJSB3VecEnv(3, env_id=env_id, **kwargs)
    final_keys = native.venv.final_info_keys
    dummy = make_vec_env(f"msj_gym:{env_id}", n_envs=3, seed=4, env_kwargs=kwargs, vec_env_cls=DummyVecEnv)
    native.seed(4)
    assert np.array_equal(native.reset(), dummy.reset())
    assert is_masking_supported(native)
    rng = np.random.default_rng(0)
    episodes = 0
    for t in range(400):
        masks = get_action_masks(native)
        assert np.array_equal(masks, get_action_masks(dummy))
        actions = (rng.random(masks.shape) * masks).argmax(axis=1)
        obs_a, rew_a, done_a, info_a = native.step(actions)
        obs_b, rew_b, done_b, info_b = dummy.step(actions)
        assert np.array_equal(obs_a, obs_b) and np.array_equal(done_a, done_b), t
        assert np.array_equal(rew_a, rew_b) and rew_a.dtype == rew_b.dtype, t
        for a, b in zip(info_a, info_b, strict=True):
            if "terminal_observation" in b:
                episodes += 1
                assert np.array_equal(a["terminal_observation"], b["terminal_observation"])
                assert a["TimeLimit.truncated"] == b["TimeLimit.truncated"] is True
                assert a["episode"]["l"] == b["episode"]["l"]
                assert a["episode"]["r"] == b["episode"]["r"]
                for key in final_keys:
                    assert np.array_equal(a[key], b[key], equal_nan=True) and type(a[key]) is type(b[key])
            else:
                assert "terminal_observation" not in a
    assert episodes >= 3


def test_preemptive_flag_and_bad_env_id() -> None:
    assert MSJSB3VecEnv(2, preemptive=True).env_id == "MSJPreemptive-v0"
    with pytest.raises(ValueError, match="env_id"):
        MSJSB3VecEnv(2, env_id="CompatAssign-v0")
    with pytest.raises(ValueError, match="preemptive"):
        MSJSB3VecEnv(2, env_id="MSJMoldable-v0", preemptive=True)


@pytest.mark.parametrize(
    ("algo", "env_id"), [(PPO, "MSJ-v0"), (MaskablePPO, "MSJ-v0"), (MaskablePPO, "MSJMoldable-v0")]
)
def test_sb3_algorithms_learn_on_it(algo: type, env_id: str) -> None:
    venv = MSJSB3VecEnv(8, env_id=env_id, num_arrivals=20)
    venv.seed(0)
    model = algo("MlpPolicy", venv, n_steps=32, batch_size=64, n_epochs=1, seed=0, verbose=0)
    model.learn(total_timesteps=512)
    assert model.num_timesteps == 512 and len(model.ep_info_buffer) > 0


def test_train_script_with_the_native_vec_env(tmp_path: pathlib.Path) -> None:
    out = tmp_path / "agent.zip"
    argv = ["--timesteps", "256", "--n-envs", "4", "--n-steps", "32", "--episode-arrivals", "50"]
    train.main([*argv, "--vec-env", "native", "--out", str(out)])
    meta = json.loads(out.with_suffix(".json").read_text())
    assert meta["vec_env"] == "native" and out.exists()
