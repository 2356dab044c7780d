"""The env class takes what changes the system, the episode and the reward; the options are one
frozen object (EnvOptions), the variant ids are keyword defaults of the two MSJ ids, and gym.make
still takes every keyword flat: each way of asking for an env gives the same env, bit for bit."""

from __future__ import annotations

import inspect
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

import msj_gym
from msj_gym.env.make import ENV_KEYWORDS
from msj_gym.env.msj_env import MSJEnv
from msj_gym.env.options import OPTION_KEYWORDS, EnvOptions
from msj_gym.registration import VARIANTS


def _episode(env, seed: int = 7, steps: int = 300):
    """Observations, rewards, masks and the result of an episode under masked random actions."""
    rng = np.random.default_rng(0)
    obs, info = env.reset(seed=seed)
    trace = [(np.asarray(obs).copy(), 0.0, info["action_mask"].copy())]
    for _ in range(steps):
        action = int(rng.choice(np.flatnonzero(info["action_mask"])))
        obs, reward, _, over, info = env.step(action)
        trace.append((np.asarray(obs).copy(), reward, info["action_mask"].copy()))
        if over:
            break
    return trace, env.unwrapped.result().to_dict()


def _same(a, b) -> None:
    (ta, ra), (tb, rb) = a, b
    assert len(ta) == len(tb) and ra == rb
    for (oa, wa, ma), (ob, wb, mb) in zip(ta, tb, strict=True):
        assert np.array_equal(oa, ob) and wa == wb and np.array_equal(ma, mb)


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_each_variant_id_is_its_base_id_with_its_keywords(variant: str) -> None:
    (entry, _), defaults = VARIANTS[variant]
    base = "MSJPreemptive-v0" if entry.endswith("preemptive") else "MSJ-v0"
    kwargs = {"scenario": "four-class", "num_arrivals": 60}
    if "warm_start" in defaults:
        kwargs["warm_start_arrivals"] = 50
    _same(_episode(gym.make(variant, **kwargs)), _episode(gym.make(base, **kwargs, **defaults)))
    venv = gym.make_vec(variant, num_envs=2, **kwargs)
    assert venv.single_action_space == gym.make(base, **kwargs, **defaults).action_space


def test_the_class_with_options_is_the_registered_id_with_flat_keywords() -> None:
    opts = EnvOptions(actions="priority", observation="classes", advisor="first-fit")
    direct = MSJEnv("four-class", num_arrivals=60, weighted=True, options=opts)
    flat = gym.make(
        "MSJ-v0", scenario="four-class", num_arrivals=60, weighted=True, actions="priority",
        observation="classes", advisor="first-fit",
    )  # fmt: skip
    _same(_episode(direct), _episode(flat))
    # a horizon's warm-up is a time: the class's warmup, gym.make's warmup_time
    timed = MSJEnv("four-class", horizon=40.0, warmup=4.0)
    _same(_episode(timed), _episode(gym.make("MSJ-v0", scenario="four-class", horizon=40.0, warmup_time=4.0)))


def test_options_compose_and_refuse_unknown_names() -> None:
    base = EnvOptions(actions="priority")
    more = base.replace(observation="classes")
    assert (more.actions, more.observation, base.observation) == ("priority", "classes", "flat")
    with pytest.raises(TypeError, match="unknown option 'action'"):
        base.replace(action="jobs")


def test_the_class_keeps_to_the_system_the_episode_and_the_reward() -> None:
    params = [p for p in inspect.signature(MSJEnv.__init__).parameters.values() if p.name != "self"]
    named = [p.name for p in params if p.kind is not p.VAR_KEYWORD]
    assert len(named) <= 12, named
    assert not set(named) & set(OPTION_KEYWORDS)
    for tool in ("snapshot", "restore", "step_policy", "play_out"):
        assert not hasattr(MSJEnv, tool)  # the planning tools are msj_gym.env.planning's
    # every keyword gym.make takes is the class's or an option (warmup_time: the class's warmup)
    assert set(ENV_KEYWORDS) == {*named, *OPTION_KEYWORDS, "warmup_time"} - {"options"}
    lines = len((Path(msj_gym.__file__).parent / "env" / "msj_env.py").read_text().splitlines())
    assert lines <= 400, lines  # a thin adapter: what it is made of lives in modules beside it
