"""Branch play-outs in one compiled call equal the env's own restore / step / play-out, bit for bit."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import msj_gym  # noqa: F401  (registers the envs)
from msj_gym.core.policy import Policy
from msj_gym.env import planning
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


def _compare(
    env, base: str | Policy, decisions: int, every: int = 5, seed: int = 3, persist: int = 1
) -> BranchPlayer:
    base = policy_from_spec(base, "base") if isinstance(base, str) else base
    player = BranchPlayer(env, base, persist=persist)
    _, info = env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    compared, step = 0, 0
    while compared < decisions:
        mask = info["action_mask"]
        if step % every == 0:
            actions = np.r_[np.flatnonzero(mask), BASE_DECISION]
            fast = player.costs(actions)
            slow = np.array([player._python_branch(int(a)) for a in actions])
            if persist == 1 and player.follows is None:
                np.testing.assert_array_equal(fast, slow)
            else:  # the compiled loop scales the steps' summed reward, Python each step's
                np.testing.assert_allclose(fast, slow, rtol=1e-12, atol=1e-9)
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


PERSISTENT = [
    ("one-or-all", 0.9, {"actions": "priority", "observation": "classes"}, "adaptive-quickswap"),
    ("four-class", 0.85, {"actions": "priority"}, "first-fit"),
    ("four-class", 0.85, SIZES, "easy-backfilling"),
]


@pytest.mark.parametrize(("scenario", "load", "kwargs", "base"), PERSISTENT)
def test_persistent_branches_equal_the_python_path(scenario, load, kwargs, base) -> None:
    """A branch that keeps its action for 4 decisions: the compiled loop and the env's own steps agree,
    and the costs are not the one-decision ones (the commitment is priced)."""
    env = gym.make("MSJ-v0", scenario=scenario, load=load, num_arrivals=500, **kwargs).unwrapped
    player = _compare(env, base, decisions=30, persist=4)
    assert player.compiled_branches > 0.9 * (player.compiled_branches + player.python_branches)
    one = BranchPlayer(env, policy_from_spec(base, "base"))
    _, info = env.reset(seed=11)
    differ = 0
    for _ in range(60):
        actions = np.flatnonzero(info["action_mask"])
        differ += int(not np.array_equal(player.costs(actions), one.costs(actions)))
        _, _, _, over, info = planning.step_policy(env, policy_from_spec(base, "base"))
        if over:
            break
    assert differ > 0


ADVISORS = ["first-fit", "adaptive-quickswap", "static-quickswap"]


@pytest.mark.parametrize(
    ("scenario", "load", "followed", "persist"),
    [("one-or-all", 0.7, 1, 1), ("four-class", 0.85, 2, 3), ("sf-fig2", 0.8, 0, 1)],
)
def test_following_an_advisor_equals_its_actions_to_the_end(scenario, load, followed, persist) -> None:
    """A base that is one of the env's advisors plays out as the agent following it does: from the
    advisor's data as the run has it (a Quickswap's phase), asked at every event as in the env."""
    kwargs = {"actions": "priority", "observation": "classes", "advisor": ADVISORS}
    env = gym.make("MSJ-v0", scenario=scenario, load=load, num_arrivals=400, **kwargs).unwrapped
    player = _compare(env, env.advisors[followed], decisions=12, every=7, persist=persist)
    assert player.follows == followed
    assert player.python_branches == 0


def test_a_followed_quickswap_keeps_its_phase() -> None:
    """Adaptive Quickswap holds servers for a waiting full-width job once it drains; a base prepared
    afresh at every branch forgets that it was draining, one that follows the advisor does not."""
    kwargs = {"actions": "priority", "observation": "classes", "advisor": ADVISORS}
    env = gym.make("MSJ-v0", scenario="one-or-all", load=0.7, num_arrivals=600, **kwargs).unwrapped
    follows = BranchPlayer(env, env.advisors[1])
    fresh = BranchPlayer(env, policy_from_spec("adaptive-quickswap", "base"))
    _, info = env.reset(seed=4)
    differ = 0
    for _ in range(150):
        actions = np.flatnonzero(info["action_mask"])
        differ += int(not np.array_equal(follows.costs(actions), fresh.costs(actions)))
        _, _, _, over, info = env.step(env.action_space.n - 2)  # follow Adaptive Quickswap
        if over:
            break
    assert differ > 0


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
    for bad in (0, -2, 1.5, True, "2"):
        with pytest.raises(ValueError, match="persist: expected a positive integer"):
            BranchPlayer(env, policy_from_spec("msf", "base"), persist=bad)
    with pytest.raises(ValueError, match="base: 'server-filling' preempts"):
        BranchPlayer(env, policy_from_spec("server-filling", "base"))
