"""A CleanRL-style PPO loop for the average cost on the native vector env
``gym.make_vec("MSJ-v0", num_envs=N)`` (``examples/cleanrl_ppo.py``, shown in docs/integrations.md),
at a tiny budget; and its handling of truncation: the value of an episode's last state is
bootstrapped, never taken as zero."""

from __future__ import annotations

import math

import numpy as np
import pytest

from .conftest import example

pytest.importorskip("torch", reason="torch is not installed: pip install -e '.[rl]'")


def _tiny(cleanrl_ppo, **changes):
    base = {
        "total_timesteps": 2048, "num_envs": 8, "num_steps": 128, "num_arrivals": 60, "update_epochs": 2,
        "imitate_steps": 300, "imitate_epochs": 1, "vf_warmup": 1024, "eval_every": 1024,
        "eval_seeds": [5000, 5001], "eval_arrivals": 200,
    }  # fmt: skip
    return cleanrl_ppo.Args(**{**base, **changes})


def test_cleanrl_ppo_on_the_native_vector_env(tmp_path) -> None:
    cleanrl_ppo = example("cleanrl_ppo")
    out = cleanrl_ppo.main(_tiny(cleanrl_ppo, curve=tmp_path / "curve.jsonl"))
    assert out["steps"] == 2048
    assert out["masked_actions_taken"] == 0  # the masked logits never sample an invalid action
    assert out["episodes"] > 0  # SameStep autoreset: episodes end and restart inside the loop
    assert math.isfinite(out["mean_response_time"]) and out["mean_response_time"] > 0
    assert math.isfinite(out["value_loss"]) and math.isfinite(out["policy_loss"])
    assert 0.5 < out["imitation_accuracy"] <= 1.0  # First-Fit's decisions, cloned
    lines = (tmp_path / "curve.jsonl").read_text().splitlines()
    assert len(lines) == 3  # the start, and every 1024 steps


def test_the_saved_policy_is_the_curves_best_point(tmp_path) -> None:
    pytest.importorskip("sb3_contrib")
    import json

    from msj_gym.experiments.agents import load_agent

    cleanrl_ppo = example("cleanrl_ppo")
    # a learning rate high enough to move the policy away from its best point within 4,096 steps
    args = _tiny(
        cleanrl_ppo, total_timesteps=4096, vf_warmup=0, learning_rate=1e-2, curve=tmp_path / "curve.jsonl",
        save=tmp_path / "agent.zip",
    )  # fmt: skip
    cleanrl_ppo.main(args)
    rows = [json.loads(line)["mean_response_time"] for line in args.curve.read_text().splitlines()]
    curve = [math.inf if v is None else v for v in rows]  # None: unstable
    assert min(curve) < curve[-1]  # the last point is not the best one
    model = load_agent(str(args.save)).model

    class Saved:
        def greedy(self, obs, masks):
            return model.predict(obs, deterministic=True, action_masks=masks)[0]

    assert cleanrl_ppo.evaluate(Saved(), args) == pytest.approx(min(curve), rel=1e-9)


def test_the_saved_checkpoint_decides_as_the_policy(tmp_path) -> None:
    """``save_checkpoint`` puts the policy into msj_gym's data-only form, with its env beside it: loaded
    as ``msj-gym leaderboard --agent`` loads it, it makes the greedy policy's decisions."""
    pytest.importorskip("sb3_contrib")
    import gymnasium as gym
    import torch

    from msj_gym.experiments.agents import load_agent

    cleanrl_ppo = example("cleanrl_ppo")
    args = _tiny(cleanrl_ppo)
    env = gym.make("MSJ-v0", **cleanrl_ppo.env_kwargs(args)).unwrapped
    torch.manual_seed(3)
    agent = cleanrl_ppo.Agent(env.observation_space.shape[0], env.action_space.n)
    cleanrl_ppo.imitate(agent, args)  # First-Fit's decisions, roughly: starts as well as waits
    cleanrl_ppo.save_checkpoint(agent, args, tmp_path / "agent.zip")
    loaded = load_agent(str(tmp_path / "agent.zip"))
    assert loaded.env_kwargs == cleanrl_ppo.env_kwargs(args)
    obs, info = env.reset(seed=7)
    decisions = set()
    for _ in range(300):
        mine = int(agent.greedy(obs[None], info["action_mask"][None])[0])
        theirs, _ = loaded.model.predict(obs, deterministic=True, action_masks=info["action_mask"])
        assert int(theirs) == mine
        decisions.add(mine)
        obs, _, _, truncated, info = env.step(mine)
        if truncated:
            obs, info = env.reset()
    assert len(decisions) > 1  # not one action everywhere


def test_truncation_adds_the_discounted_value_of_the_last_state() -> None:
    import gymnasium as gym
    import torch

    cleanrl_ppo = example("cleanrl_ppo")
    envs = gym.make_vec("MSJ-v0", num_envs=4, autoreset_mode="SameStep", num_arrivals=30, reward="integral")
    envs.reset(seed=0)
    constant = 3.25

    def value(x: torch.Tensor) -> torch.Tensor:
        assert x.shape == (ended.size, envs.single_observation_space.shape[0])
        return torch.full((x.shape[0], 1), constant)

    seen = 0
    for _ in range(400):
        masks = envs.unwrapped.action_masks()
        _, reward, _, truncated, infos = envs.step(masks.argmax(axis=1))  # the first valid action
        ended = np.flatnonzero(truncated)
        out = cleanrl_ppo.bootstrap_truncated(reward, truncated, infos, value, 0.99)
        np.testing.assert_allclose(out[truncated], reward[truncated] + 0.99 * constant)
        np.testing.assert_array_equal(out[~truncated], reward[~truncated])
        seen += ended.size
    assert seen >= 4


def test_the_loop_bootstraps_every_truncation(monkeypatch) -> None:
    cleanrl_ppo = example("cleanrl_ppo")
    calls = {"steps": 0, "truncations": 0}
    original = cleanrl_ppo.bootstrap_truncated

    def counting(rewards, truncations, infos, value, gamma):
        calls["steps"] += 1
        calls["truncations"] += int(np.sum(truncations))
        return original(rewards, truncations, infos, value, gamma)

    monkeypatch.setattr(cleanrl_ppo, "bootstrap_truncated", counting)
    out = cleanrl_ppo.main(_tiny(cleanrl_ppo, imitate=None, eval_every=0))
    assert calls["steps"] == 2048 // 8  # every step of every rollout goes through it
    assert calls["truncations"] == out["episodes"] > 0
