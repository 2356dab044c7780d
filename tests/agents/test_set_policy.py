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
from msj_gym.agents.set_policy import (
    ClassSetMaskablePolicy,
    ClassSetPolicy,
    class_logits,
    fit_head,
    set_layout,
)
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


def test_the_simulated_pick_does_not_depend_on_the_classes_order() -> None:
    advisors = ["first-fit", "adaptive-quickswap"]
    env = _env(advisor=advisors)
    _, width, _ = set_layout(env.observation_space, env.action_space)
    config = {"bases": advisors, "safest": 1, "arrivals": 1000}
    model = MaskablePPO(
        ClassSetMaskablePolicy, env, seed=3, policy_kwargs={"hidden": 16, "simulated_selection": config}
    )
    obs = _states(env, 20)
    moved = _permute_rows(obs, np.array([4, 0, 5, 1, 3, 2]), width)
    net = model.policy.mlp_extractor
    with th.no_grad():
        a, b = net.selected(th.as_tensor(obs)), net.selected(th.as_tensor(moved))
    assert th.equal(a, b)
    np.testing.assert_allclose(
        class_logits(model.policy, moved)[:, 1 + SLOTS :], class_logits(model.policy, obs)[:, 1 + SLOTS :]
    )


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
    model.save(tmp_path / "set.zip")  # stable-baselines3's own format: the class-set policy pickles too
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


@pytest.mark.parametrize("algo", [MaskablePPO, PPO])
def test_the_training_mode_reaches_every_module_and_is_not_set_again_unchanged(algo, monkeypatch) -> None:
    env = _env()
    policy = ClassSetMaskablePolicy if algo is MaskablePPO else ClassSetPolicy
    model = algo(policy, env, seed=0, n_steps=64, batch_size=32)
    obs, info = env.reset(seed=1)
    masks = {"action_masks": info["action_mask"]} if algo is MaskablePPO else {}
    for mode in (True, False, True):
        model.policy.set_training_mode(mode)
        assert all(m.training == mode for m in model.policy.modules())
    first = model.predict(obs, deterministic=True, **masks)[0]  # sets eval mode everywhere
    assert not any(m.training for m in model.policy.modules())
    walked = []
    monkeypatch.setattr(th.nn.Module, "train", lambda self, mode=True: walked.append(mode) or self)
    again = model.predict(obs, deterministic=True, **masks)[0]
    assert walked == [] and again == first


def test_the_gate_follows_the_selected_advisor_throughout_or_leaves_the_network_as_it_is(tmp_path) -> None:
    env = _env(advisor=["first-fit", "adaptive-quickswap"])
    plain = MaskablePPO(ClassSetMaskablePolicy, env, seed=4, n_steps=64, batch_size=32)
    plain.learn(64)
    gated = MaskablePPO(ClassSetMaskablePolicy, env, seed=4, policy_kwargs={"gate": True})
    missing, unexpected = gated.policy.load_state_dict(plain.policy.state_dict(), strict=False)
    assert not unexpected and missing and all(".gate" in k for k in missing)
    obs = _states(env, 150, seed=6)
    net = gated.policy.mlp_extractor
    with th.no_grad():
        chosen = net.selector_logits(th.as_tensor(obs)).argmax(dim=1).numpy()
    # trusted (the gate's bias on the network's side): the plain network's logits, exactly
    net.gate_bias.copy_(th.tensor([1e3, 0.0]))
    np.testing.assert_array_equal(class_logits(gated.policy, obs), class_logits(plain.policy, obs))
    # not trusted: the selected advisor's action wins at every decision, whatever the network scores
    net.gate_bias.copy_(th.tensor([0.0, 1e3]))
    logits = class_logits(gated.policy, obs)
    assert (logits.argmax(axis=1) == 1 + SLOTS + chosen).all()
    # where the plan is settled already (here a rehearsal's forced runs: the network trusted), the gate
    # is not asked, and the network's logits are the plain network's
    net._forced = th.as_tensor(chosen)
    net.gate_logits = lambda o: pytest.fail("the gate was asked where the plan is settled")
    np.testing.assert_array_equal(class_logits(gated.policy, obs), class_logits(plain.policy, obs))
    del net.gate_logits
    net._forced = None
    # the gate is a static head: it reads what the system is, so it decides once per system
    fitted = fit_head(gated.policy, "gate", obs[:1], np.array([[0.0, 0.5]]), epochs=50, seed=0)
    assert fitted == 0.0  # the column with no excess is chosen on the system it was fitted on
    with pytest.raises(ValueError, match="head: expected one of"):
        fit_head(gated.policy, "gates", obs[:1], np.array([[0.0, 0.5]]))
    net.gate_bias.zero_()
    with th.no_grad():
        picks = net.gate_logits(th.as_tensor(obs)).argmax(dim=1).numpy()
    assert (picks == 0).all()  # every state of the same system: the same choice
    from msj_gym.agents.checkpoint import load_model, save_model

    save_model(gated, tmp_path / "gated.zip")  # msj_gym's data-only form
    loaded = load_model(tmp_path / "gated.zip")
    assert loaded.policy.mlp_extractor.gated
    np.testing.assert_array_equal(class_logits(loaded.policy, obs), class_logits(gated.policy, obs))


@pytest.mark.parametrize("guard", ["age", "queue"])
def test_a_guard_follows_the_selected_advisor_exactly_where_it_trips(guard: str) -> None:
    from msj_gym.env.layout import SET_AGE, SET_QUEUE
    from msj_gym.env.observe import squash

    env = _env(scenario="four-class", load=0.95, advisor=["first-fit", "adaptive-quickswap"])
    model = MaskablePPO(ClassSetMaskablePolicy, env, seed=2, n_steps=64, batch_size=32)
    model.learn(64)
    obs = _states(env, 400, seed=3)
    net = model.policy.mlp_extractor
    free = class_logits(model.policy, obs)
    with th.no_grad():
        chosen = net.selector_logits(th.as_tensor(obs)).argmax(dim=1).numpy()
    _, width, _ = set_layout(env.observation_space, env.action_space)
    rows = obs[:, SET_SYSTEM_FEATURES:].reshape(len(obs), SLOTS, width)
    if guard == "age":
        net.follow_when_age.fill_(squash.py_func(1.0))
        tripped = rows[:, :, SET_AGE].max(axis=1) > squash.py_func(1.0)
    else:
        net.follow_when_queue.fill_(squash.py_func(1.0))
        tripped = obs[:, SET_QUEUE] > squash.py_func(1.0)
    assert 0 < tripped.sum() < len(obs)  # both kinds of state are among the sampled ones
    logits = class_logits(model.policy, obs)
    assert (logits[tripped].argmax(axis=1) == 1 + SLOTS + chosen[tripped]).all()
    np.testing.assert_array_equal(logits[~tripped], free[~tripped])


def test_refuses_spaces_that_are_not_a_class_set() -> None:
    with pytest.raises(ValueError, match="not the class-set layout"):
        MaskablePPO(ClassSetMaskablePolicy, gym.make("MSJ-v0", scenario="four-class", queue_window=3))


@pytest.mark.parametrize("rescue", ["base", "alone"])
def test_a_guard_hands_a_trusted_network_over_to_its_rescue(rescue: str) -> None:
    from types import SimpleNamespace

    from msj_gym.env.layout import SET_AGE
    from msj_gym.env.observe import squash

    env = _env(scenario="four-class", load=0.95, advisor=["first-fit", "adaptive-quickswap", "lsf"])
    model = MaskablePPO(ClassSetMaskablePolicy, env, seed=2)  # untrained: the guard alone decides
    obs = _states(env, 400, seed=3)
    net = model.policy.mlp_extractor
    free = class_logits(model.policy, obs)
    # a selector that trusts the network beside first-fit (0) and simulates lsf (2) best alone
    n = len(obs)

    def plan(batch, *args):
        m = len(batch)
        return np.zeros(m, dtype=np.int64), np.zeros(m, dtype=np.int64), np.full(m, 2, dtype=np.int64)

    net.simulated = SimpleNamespace(rescue=rescue, rehearse=0, plan=plan)
    _, width, _ = set_layout(env.observation_space, env.action_space)
    rows = obs[:, SET_SYSTEM_FEATURES:].reshape(n, SLOTS, width)
    net.follow_when_age.fill_(squash.py_func(1.0))
    tripped = rows[:, :, SET_AGE].max(axis=1) > squash.py_func(1.0)
    assert 0 < tripped.sum() < n
    logits = class_logits(model.policy, obs)
    helper = 2 if rescue == "alone" else 0
    assert (logits[tripped].argmax(axis=1) == 1 + SLOTS + helper).all()
    # untripped: the network's own choice, only its base's follow action offered (lsf's is not)
    untripped = logits[~tripped]
    np.testing.assert_array_equal(untripped[:, : 1 + SLOTS], free[~tripped][:, : 1 + SLOTS])
    assert (untripped[:, 1 + SLOTS + 1 :] < -1e8).all()
