"""Priority actions (``actions="priority"``): the agent picks the class served first and the env packs
the servers; and ``step_policy``, which lets a baseline make one decision."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import msj_gym  # noqa: F401  (registers the envs)
from msj_gym import PolicyAgent, Simulator
from msj_gym.baselines import make_policy
from msj_gym.core import state as S
from msj_gym.env import planning

ARRIVALS, WARMUP, SEED = 2000, 200, 11


def _env(env_id: str, scenario: str, load: float, **kw):
    return gym.make(env_id, scenario=scenario, load=load, num_arrivals=ARRIVALS, warmup=WARMUP, **kw)


def _native(env, policy_id: str) -> dict:
    res = Simulator(
        env.unwrapped.workload,
        make_policy(policy_id),
        seed=SEED,
        num_arrivals=ARRIVALS,
        warmup=WARMUP,
        max_arrivals=2 * ARRIVALS + 2,
        record_jobs=False,  # as the env: no per-job records, no percentiles
    ).run()
    return _comparable(res)


def _comparable(res) -> dict:
    out = res.to_dict()
    out.pop("provenance"), out.pop("policy_metrics")
    return out


def _largest_need_first(env, preemptive: bool) -> int:
    """MSF as priority actions. Non-preemptive: priority to the largest server need offered (a job
    of it waits and fits). Preemptive: priority to the largest server need with a job in the system,
    or wait where that priority would change nothing."""
    ci, mask = env.core.sim.ci, env.action_masks()
    for c in np.argsort(-ci[S.C_NEED], kind="stable"):
        if not preemptive and mask[1 + c]:
            return int(1 + c)
        if preemptive and ci[S.C_NWAIT, c] + ci[S.C_NRUN, c] > 0:
            return int(1 + c) if mask[1 + c] else 0
    return 0


@pytest.mark.parametrize(("scenario", "load"), [("sf-fig2", 0.7), ("four-class", 0.8)])
@pytest.mark.parametrize(("env_id", "policy_id"), [("MSJ-v0", "msf"), ("MSJPreemptive-v0", "msf-preemptive")])
def test_largest_need_first_is_msf(env_id: str, policy_id: str, scenario: str, load: float) -> None:
    env = _env(env_id, scenario, load, actions="priority")
    preemptive = env.unwrapped.preemptive
    env.reset(seed=SEED)
    over = False
    while not over:
        _, _, _, over, info = env.step(_largest_need_first(env.unwrapped, preemptive))
    assert info["invalid_actions"] == 0
    assert _comparable(env.unwrapped.result()) == _native(env, policy_id)


@pytest.mark.parametrize("env_id", ["MSJ-v0", "MSJPreemptive-v0"])
def test_spaces_and_masks(env_id: str) -> None:
    env = _env(env_id, "four-class", 0.8, actions="priority").unwrapped
    assert env.action_space == gym.spaces.Discrete(1 + 4)
    _, info = env.reset(seed=SEED)
    rng = np.random.default_rng(0)
    for _ in range(300):
        mask = info["action_mask"]
        assert np.array_equal(mask, env.action_masks())
        assert mask[1:].any()  # a decision offers at least one priority that changes something
        ci = env.core.sim.ci
        for c in range(4):
            if ci[S.C_NWAIT, c] == 0 and not env.preemptive:
                assert not mask[1 + c]  # nothing of class c to start
        before_running = ci[S.C_NRUN].copy()
        a = int(rng.choice(np.flatnonzero(mask)))
        _, _, _, over, info = env.step(a)
        if over:
            break
        assert info["elapsed_time"] > 0 or not np.array_equal(before_running, env.core.sim.ci[S.C_NRUN])


def test_a_priority_packs_its_class_then_the_others_by_decreasing_need() -> None:
    """Preemptive four-class (needs 1, 3, 5, 15; k = 15): priority c runs as many class-c jobs as fit,
    then the largest other classes that fit, keeping jobs in the system only."""
    env = _env("MSJPreemptive-v0", "four-class", 0.8, actions="priority").unwrapped
    _, info = env.reset(seed=SEED)
    rng = np.random.default_rng(2)
    seen = 0
    for _ in range(400):
        mask = info["action_mask"]
        ci = env.core.sim.ci
        total = ci[S.C_NWAIT] + ci[S.C_NRUN]
        for c in np.flatnonzero(mask[1:]):
            order = [c, *(d for d in (3, 2, 1, 0) if d != c)]
            expected, free = np.zeros(4, dtype=np.int64), 15
            for d in order:
                expected[d] = min(total[d], free // int(ci[S.C_NEED, d]))
                free -= expected[d] * int(ci[S.C_NEED, d])
            plan = planning.engine_words(env, 1 + int(c))
            running = ci[S.C_NRUN].copy()
            for a in plan:
                cls = env.core.sim.ji[a if a >= 0 else -a - 1, S.CLS]
                running[cls] += 1 if a >= 0 else -1
            assert np.array_equal(running, expected)
            seen += 1
        _, _, _, over, info = env.step(int(rng.choice(np.flatnonzero(mask))))
        if over:
            break
    assert seen > 100


@pytest.mark.parametrize("actions", ["jobs", "priority"])
@pytest.mark.parametrize(("env_id", "policy_id"), [("MSJ-v0", "msf"), ("MSJPreemptive-v0", "server-filling")])
def test_step_policy_is_the_native_run(env_id: str, policy_id: str, actions: str) -> None:
    env = _env(env_id, "four-class", 0.8, actions=actions)
    env.reset(seed=SEED)
    over, steps = False, 0
    while not over:
        _, _, _, over, _ = planning.step_policy(env.unwrapped, policy_id)
        steps += 1
    assert steps > 100
    assert _comparable(env.unwrapped.result()) == _native(env, policy_id)


def test_invalid_priority_is_counted_and_waits() -> None:
    env = _env("MSJ-v0", "sf-fig2", 0.7, actions="priority").unwrapped
    _, info = env.reset(seed=SEED)
    while info["action_mask"].all():
        _, _, _, _, info = env.step(0)
    bad = int(np.flatnonzero(~info["action_mask"])[0])
    t = info["time"]
    _, _, _, _, info = env.step(bad)
    assert info["invalid_action"] and info["invalid_actions"] == 1
    assert info["time"] > t


def test_refused_where_jobs_are_named() -> None:
    expected = "actions: expected one of 'jobs', 'priority', 'priority-shortest', got 'class'"
    with pytest.raises(ValueError, match=expected):
        gym.make("MSJ-v0", actions="class")
    env = _env("MSJ-v0", "sf-fig2", 0.7, actions="priority")
    env.reset(seed=SEED)
    with pytest.raises(ValueError, match="actions='jobs'"):
        PolicyAgent("msf", env).predict()
    with pytest.raises(ValueError, match="advisor: only with priority actions"):
        gym.make_vec("MSJ-v0", num_envs=2, advisor="msf")


def test_priority_shortest_starts_the_shortest_jobs_of_a_class() -> None:
    env = _env("MSJ-v0", "four-class", 0.8, actions="priority-shortest").unwrapped
    _, info = env.reset(seed=SEED)
    rng = np.random.default_rng(3)
    sim_checked = 0
    for _ in range(400):
        mask = info["action_mask"]
        sim = env.core.sim
        for c in np.flatnonzero(mask[1:]):
            plan = planning.engine_words(env, 1 + int(c))
            for d in range(4):
                started = [s for s in plan if sim.ji[s, S.CLS] == d]
                waiting, s = [], sim.ci[S.C_HEAD, d]
                while s != -1:
                    waiting.append(int(s))
                    s = sim.ji[s, S.CNEXT]
                longest_started = max((sim.js[s, S.REMAINING] for s in started), default=-1.0)
                left = [sim.js[s, S.REMAINING] for s in waiting if s not in started]
                assert all(longest_started <= x for x in left)
                sim_checked += len(started)
        _, _, _, over, info = env.step(int(rng.choice(np.flatnonzero(mask))))
        if over:
            break
    assert sim_checked > 100


@pytest.mark.parametrize("actions", ["priority", "priority-shortest"])
def test_the_advisors_action_is_its_native_run(actions: str) -> None:
    env = _env("MSJ-v0", "four-class", 0.8, actions=actions, advisor="easy-backfilling")
    assert env.action_space == gym.spaces.Discrete(1 + 4 + 1)
    _, info = env.reset(seed=SEED)
    over = False
    while not over:
        assert info["action_mask"][-1]
        _, _, _, over, info = env.step(5)
    assert info["invalid_actions"] == 0
    assert _comparable(env.unwrapped.result()) == _native(env, "easy-backfilling")


def test_advisor_errors() -> None:
    with pytest.raises(ValueError, match="advisor: only with priority actions"):
        gym.make("MSJ-v0", advisor="msf")
    with pytest.raises(ValueError, match="advisor: policy 'msfq'"):
        gym.make("MSJ-v0", scenario="four-class", actions="priority", advisor="msfq")
    with pytest.raises(ValueError, match="advisor: 'server-filling' preempts"):
        gym.make("MSJ-v0", actions="priority", advisor="server-filling")
