"""The public read-only view of an env's state (msj_gym.env.view): per-class counts as the info
reports them, and the starts of a decision as the planning tools count them."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import msj_gym  # noqa: F401  (registers the envs)
from msj_gym.env import planning, view


def test_counts_and_starts_agree_with_the_info_and_the_planning_tools() -> None:
    env = gym.make("MSJ-v0", scenario="four-class", num_arrivals=80, actions="priority")
    with pytest.raises(RuntimeError, match="reset"):
        view.jobs_by_class(env)
    _, info = env.reset(seed=3)
    rng = np.random.default_rng(0)
    over, started = False, 0
    while not over:
        waiting, running = view.jobs_by_class(env)
        assert np.array_equal(waiting + running, info["jobs_by_class"])
        for a in np.flatnonzero(info["action_mask"]).tolist():
            words = planning.engine_words(env, a)
            assert np.array_equal(view.starts_by_class_of(env, words), planning.starts_by_class(env, a))
            started += int(view.starts_by_class_of(env, words).sum())
        decision = planning.decision_now(env, "msf")
        # MSF's decision starts jobs of waiting classes only, never more than wait
        assert (view.starts_by_class_of(env, decision) <= waiting).all()
        _, _, _, over, info = env.step(int(rng.choice(np.flatnonzero(info["action_mask"]))))
    assert started > 0
