"""The class-set policies: equivariance in the classes, padding never chosen, SB3 save and load."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

pytest.importorskip("sb3_contrib", reason="the class-set policies need the rl extra (sb3-contrib, torch)")

import torch as th
from sb3_contrib import MaskablePPO
from stable_baselines3 import PPO

import msj_gym  # noqa: F401  (registers the envs)
from msj_gym.agents.set_policy import ClassSetMaskablePolicy, ClassSetPolicy, class_logits, set_layout
from msj_gym.env.layout import SET_SYSTEM_FEATURES

SLOTS = 6


def _env(**kw):
    kw = {
        "scenario": "four-class",
        "observation": "classes",
        "actions": "priority",
        "max_classes": SLOTS,
        **kw,
    }
    return gym.make("MSJ-v0", **kw)


def _states(env, n: int, seed: int = 0) -> np.ndarray:
    obs, info = env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        out.append(obs)
        obs, _, _, over, info = env.step(int(rng.choice(np.flatnonzero(info["action_mask"]))))
        if over:
            obs, info = env.reset()
    return np.array(out)


def _permute_rows(obs: np.ndarray, perm: np.ndarray, width: int) -> np.ndarray:
    rows = obs[:, SET_SYSTEM_FEATURES:].reshape(len(obs), -1, width)
    return np.concatenate([obs[:, :SET_SYSTEM_FEATURES], rows[:, perm].reshape(len(obs), -1)], axis=1)


@pytest.mark.parametrize("algo", ["maskable-ppo", "ppo"])
@pytest.mark.parametrize("advisor", [None, "first-fit"])
def test_permuting_the_classes_permutes_the_action_distribution(algo: str, advisor: str | None) -> None:
    env = _env(advisor=advisor)
    slots, width, extra = set_layout(env.observation_space, env.action_space)
    assert (slots, extra) == (SLOTS, int(advisor is not None))
    cls, policy_cls = (
        (MaskablePPO, ClassSetMaskablePolicy) if algo == "maskable-ppo" else (PPO, ClassSetPolicy)
    )
    model = cls(policy_cls, env, seed=3, n_steps=64, batch_size=32, policy_kwargs={"hidden": 32})
    model.learn(64)  # weights away from their initialisation
    obs = _states(env, 200)
    # a permutation of the slots that moves the real classes among all six slots (padding included)
    perm = np.array([4, 0, 5, 1, 3, 2])
    moved = _permute_rows(obs, perm, width)
    a, b = class_logits(model.policy, obs), class_logits(model.policy, moved)
    np.testing.assert_allclose(b[:, 1 : 1 + SLOTS], a[:, 1 : 1 + SLOTS][:, perm], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(b[:, 0], a[:, 0], rtol=1e-5, atol=1e-5)  # wait
    np.testing.assert_allclose(b[:, 1 + SLOTS :], a[:, 1 + SLOTS :], rtol=1e-5, atol=1e-5)  # advisor
    with th.no_grad():
        va = model.policy.predict_values(th.as_tensor(obs)).numpy()
        vb = model.policy.predict_values(th.as_tensor(moved)).numpy()
    np.testing.assert_allclose(vb, va, rtol=1e-5, atol=1e-5)
    assert np.ptp(a[:, 1:5], axis=1).max() > 0  # the scores do depend on the class


def test_padding_slots_never_get_probability() -> None:
    env = _env()
    model = MaskablePPO(ClassSetMaskablePolicy, env, seed=1, n_steps=64, batch_size=32)
    obs = _states(env, 100, seed=2)
    everything = np.ones((len(obs), env.action_space.n), dtype=bool)  # even if a mask allowed them
    with th.no_grad():
        dist = model.policy.get_distribution(th.as_tensor(obs), action_masks=everything)
        probs = dist.distribution.probs.numpy()
    assert (probs[:, 5:] == 0).all()  # four real classes: slots 4 and 5 are padding
    assert np.allclose(probs.sum(axis=1), 1.0)
    # the plain PPO policy, which gets no mask at all
    ppo = PPO(ClassSetPolicy, env, seed=1, n_steps=64, batch_size=32)
    with th.no_grad():
        probs = ppo.policy.get_distribution(th.as_tensor(obs)).distribution.probs.numpy()
    assert (probs[:, 5:] == 0).all()


def test_a_checkpoint_saves_loads_and_acts_like_any_sb3_model(tmp_path) -> None:
    env = _env(max_classes=8)
    model = MaskablePPO(
        ClassSetMaskablePolicy, env, seed=0, n_steps=64, batch_size=32, policy_kwargs={"heads": 2}
    )
    model.learn(64)
    model.save(tmp_path / "set.zip")
    loaded = MaskablePPO.load(tmp_path / "set.zip")
    assert loaded.policy.mlp_extractor.attention[0].num_heads == 2
    obs, info = env.reset(seed=5)
    over, steps = False, 0
    while not over and steps < 500:
        a1 = model.predict(obs, action_masks=info["action_mask"], deterministic=True)[0]
        a2 = loaded.predict(obs, action_masks=info["action_mask"], deterministic=True)[0]
        assert a1 == a2 and info["action_mask"][a1]
        obs, _, _, over, info = env.step(int(a1))
        steps += 1


def test_refuses_spaces_that_are_not_a_class_set() -> None:
    with pytest.raises(ValueError, match="not the class-set layout"):
        MaskablePPO(ClassSetMaskablePolicy, gym.make("MSJ-v0", scenario="four-class", queue_window=3))
