"""Branch play-outs in one compiled call equal the env's own restore / step / play-out, bit for bit."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import msj_gym  # noqa: F401  (registers the envs)
from msj_gym.env.branches import BASE_DECISION, BranchPlayer
from msj_gym.registry import policy_from_spec
from msj_gym.workloads.generator import sample_systems

SIZES = {"actions": "priority-shortest", "reveal_sizes": True}
CASES = [
    ("MSJ-v0", "four-class", 0.85, {}, "msf"),
    ("MSJ-v0", "four-class", 0.85, {"actions": "priority"}, "first-fit"),
    ("MSJ-v0", "one-or-all", 0.9, {"actions": "priority", "observation": "classes"}, "adaptive-quickswap"),
    ("MSJ-v0", "four-class", 0.85, SIZES, "easy-backfilling"),
    ("MSJPreemptive-v0", "four-class", 0.85, {"actions": "priority"}, "server-filling"),
    ("MSJPreemptive-v0", "sf-fig2", 0.8, {}, "server-filling-srpt"),
    # the play-out pays the measured jobs' slowdowns (waits) as the steps do
    ("MSJ-v0", "four-class", 0.85, {"actions": "priority", "reward": "slowdown"}, "first-fit"),
    ("MSJPreemptive-v0", "four-class", 0.85, {"reward": "waiting", "warmup": 20}, "server-filling"),
]


def _compare(env, base: str, decisions: int, every: int = 5, seed: int = 3) -> BranchPlayer:
    player = BranchPlayer(env, policy_from_spec(base, "base"))
    _, info = env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    compared, step = 0, 0
    while compared < decisions:
        mask = info["action_mask"]
        if step % every == 0:
            actions = np.r_[np.flatnonzero(mask), BASE_DECISION]
            fast = player.costs(actions)
            slow = np.array([player._python_branch(int(a)) for a in actions])
            np.testing.assert_array_equal(fast, slow)
            compared += 1
        _, _, _, over, info = env.step(int(rng.choice(np.flatnonzero(mask))))
        step += 1
        if over:
            _, info = env.reset()
    return player


@pytest.mark.parametrize(("env_id", "scenario", "load", "kwargs", "base"), CASES)
def test_compiled_branches_equal_the_python_path(env_id, scenario, load, kwargs, base) -> None:
    env = gym.make(env_id, scenario=scenario, load=load, num_arrivals=500, **kwargs).unwrapped
    player = _compare(env, base, decisions=40)
    assert player.compiled_branches > 0.9 * (player.compiled_branches + player.python_branches)


def test_a_base_that_runs_away_ends_at_the_arrival_cap_in_compiled_code() -> None:
    """First-Fit starves the full-width jobs of a one-or-all system: its play-outs reach the arrival
    cap (the run is cut short there, as natively), still in the compiled loop and still exact."""
    wl = sample_systems(0, 1)[0]  # k = 210, needs 1 and 210
    assert sorted(wl.server_needs.tolist()) == [1, wl.num_servers]
    env = gym.make("MSJ-v0", scenario=wl, num_arrivals=300, actions="priority").unwrapped
    player = _compare(env, "first-fit", decisions=15, seed=1)
    assert player.python_branches == 0


def test_refusals() -> None:
    env = gym.make("MSJ-v0", weighted=True).unwrapped
    with pytest.raises(ValueError, match="weighted=True"):
        BranchPlayer(env, policy_from_spec("msf", "base"))
    env = gym.make("MSJ-v0").unwrapped
    player = BranchPlayer(env, policy_from_spec("msf", "base"))
    with pytest.raises(RuntimeError, match="no decision due"):
        player.costs(np.array([0]))
    with pytest.raises(ValueError, match="base: 'server-filling' preempts"):
        BranchPlayer(env, policy_from_spec("server-filling", "base"))
