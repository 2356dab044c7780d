"""The size-aware rules agents are measured against besides the papers' policies."""

from __future__ import annotations

import gymnasium as gym
import pytest

import msj_gym  # noqa: F401  (registers the envs)
from msj_gym import Simulator, load_scenario
from msj_gym.agents.rules import LsfShortest
from msj_gym.baselines import make_policy
from msj_gym.testing import check_policy


def test_lsf_shortest_passes_the_policy_checks() -> None:
    # LSF starves the need-8 class of sf-fig2 at 0.7; at 0.5 its queues stay within the window
    check_policy(LsfShortest(), load=0.5, queue_window=256)
    check_policy(LsfShortest(), scenario="four-class", load=0.6, queue_window=256)


def test_lsf_shortest_is_the_smaller_class_first_choice_of_priority_shortest_actions() -> None:
    # on two classes, "serve the need-1 class first" at every decision (the need-8 class when no
    # need-1 job can start) of actions="priority-shortest" is the rule, bit for bit
    env = gym.make("MSJ-v0", scenario="sf-fig2", load=0.5, actions="priority-shortest", num_arrivals=3000)
    _, info = env.reset(seed=5)
    done = False
    while not done:
        mask = info["action_mask"]
        action = 1 if mask[1] else (2 if mask[2] else 0)
        _, _, terminated, truncated, info = env.step(action)
        done = terminated or truncated
    through_env = env.unwrapped.result()
    native = Simulator(env.unwrapped.workload, LsfShortest(), seed=5, num_arrivals=3000, warmup=0).run()
    assert native.mean_response_time == through_env.mean_response_time
    assert native.per_class == through_env.per_class and native.events == through_env.events
    lsf = Simulator(env.unwrapped.workload, make_policy("lsf"), seed=5, num_arrivals=3000, warmup=0).run()
    assert native.mean_response_time != lsf.mean_response_time  # the sizes change the order


def test_lsf_shortest_starts_the_shortest_job_of_the_smallest_class_first() -> None:
    # bs-fig1 at k = 32: needs 1, 2, 4, 8; within a class, SJF cuts the mean response time
    workload = load_scenario("bs-fig1").build(num_servers=32)
    rule = Simulator(workload, LsfShortest(), seed=3, num_arrivals=20000, warmup=2000).run()
    lsf = Simulator(workload, make_policy("lsf"), seed=3, num_arrivals=20000, warmup=2000).run()
    assert rule.stable and rule.mean_response_time < lsf.mean_response_time - 0.2


def test_a_rule_outside_the_registry_advises_by_spec() -> None:
    # advisor="module:attr": always taking the advice is the rule's native run, bit for bit
    env = gym.make(
        "MSJ-v0",
        scenario="bs-fig1",
        num_servers=32,
        actions="priority-shortest",
        advisor="msj_gym.agents.rules:LsfShortest",
        num_arrivals=2000,
        max_arrivals=40000,
    )
    advice = env.action_space.n - 1
    env.reset(seed=2)
    done = False
    while not done:
        _, _, terminated, truncated, _ = env.step(advice)
        done = terminated or truncated
    native = Simulator(
        env.unwrapped.workload, LsfShortest(), seed=2, num_arrivals=2000, warmup=0, max_arrivals=40000
    ).run()
    assert native.stable and native.per_class == env.unwrapped.result().per_class
    with pytest.raises(ValueError, match=r"^advisor 'msj_gym.agents.rules:Nope': cannot import"):
        gym.make("MSJ-v0", actions="priority", advisor="msj_gym.agents.rules:Nope")
