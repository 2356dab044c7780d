"""A CleanRL-style PPO loop on the native vector env ``gym.make_vec("MSJ-v0", num_envs=N)``
(``examples/cleanrl_ppo.py``, shown in docs/integrations.md), at a tiny budget."""

from __future__ import annotations

import math

import pytest

from .conftest import example

pytest.importorskip("torch", reason="torch is not installed: pip install -e '.[rl]'")


def test_cleanrl_ppo_on_the_native_vector_env() -> None:
    cleanrl_ppo = example("cleanrl_ppo")
    args = cleanrl_ppo.Args(total_timesteps=2048, num_envs=8, num_steps=128, num_arrivals=60, update_epochs=2)
    out = cleanrl_ppo.main(args)
    assert out["steps"] == 2048
    assert out["masked_actions_taken"] == 0  # the masked logits never sample an invalid action
    assert out["episodes"] > 0  # SameStep autoreset: episodes end and restart inside the loop
    assert math.isfinite(out["mean_response_time"]) and out["mean_response_time"] > 0
    assert math.isfinite(out["value_loss"]) and math.isfinite(out["policy_loss"])
