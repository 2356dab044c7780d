"""The reward wrappers for average-cost learning (msj_gym/env/wrappers.py): Lyapunov shaping telescopes
to the episode's boundary terms, the vector wrappers equal the single ones env by env in every
autoreset mode, the cost scale divides by the system's mean service time, and the observations keep
unbounded counts bounded and ordered."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import msj_gym  # noqa: F401  registers the envs
from msj_gym.env.wrappers import (
    CostScale,
    CostScaleVector,
    LyapunovShaping,
    LyapunovShapingVector,
    lyapunov,
    work_per_job,
)

KW = {"scenario": "sf-fig2", "load": 0.7, "num_arrivals": 60}


def _act(mask: np.ndarray, t: int) -> int:
    """A valid action that varies with the step: not always the same class, sometimes wait."""
    valid = np.flatnonzero(mask)
    return int(valid[t % len(valid)])


def _episode(env: gym.Env, seed: int) -> tuple[list[float], list[dict]]:
    _obs, info = env.reset(seed=seed)
    rewards, infos = [], [info]
    t, done = 0, False
    while not done:
        _obs, reward, terminated, truncated, info = env.step(_act(info["action_mask"], t))
        rewards.append(reward)
        infos.append(info)
        done = terminated or truncated
        t += 1
    return rewards, infos


def test_jobs_by_class_counts_the_jobs_in_the_system():
    env = gym.make("MSJ-v0", **KW)
    _, infos = _episode(env, 3)
    for info in infos:
        assert info["jobs_by_class"].shape == (2,)
        assert info["jobs_by_class"].sum() == info["jobs_in_system"]
    assert max(int(i["jobs_by_class"][1]) for i in infos) > 0  # the need-8 class is counted too


@pytest.mark.parametrize(
    ("weight", "power", "of"),
    [(1.0, 2.0, "jobs"), (0.25, 3.0, "jobs"), (0.0, 2.0, "jobs"), (2.0, 2.0, "work")],
)
def test_shaping_adds_the_drift_and_telescopes(weight, power, of):
    raw, infos = _episode(gym.make("MSJ-v0", **KW), 5)
    shaped, _infos_s = _episode(LyapunovShaping(gym.make("MSJ-v0", **KW), weight, power, of), 5)
    assert len(raw) == len(shaped)
    if of == "jobs":
        phi = [float(np.sum(i["jobs_by_class"].astype(float) ** power)) for i in infos]
    else:  # sf-fig2: need 1 or 8 of k = 8, mean 1: a need-8 job is one unit of work, a need-1 an eighth
        phi = [float((i["jobs_by_class"] @ np.array([1 / 8, 1.0])) ** power) for i in infos]
    assert phi == pytest.approx(
        [
            float(
                lyapunov(
                    i["jobs_by_class"],
                    power,
                    None if of == "jobs" else work_per_job(gym.make("MSJ-v0", **KW).unwrapped.workload),
                )
            )
            for i in infos
        ]
    )
    for t, (r, s) in enumerate(zip(raw, shaped, strict=True)):
        assert s == pytest.approx(r - weight * (phi[t + 1] - phi[t]), abs=1e-9)
    # the episode's shaped return is its return minus the boundary terms: nothing else changes
    assert sum(shaped) == pytest.approx(sum(raw) - weight * (phi[-1] - phi[0]), rel=1e-9, abs=1e-9)
    assert max(phi) > phi[0]  # a queue did build up: the drift was not trivially zero


@pytest.mark.parametrize(("mode", "of"), [("SameStep", "jobs"), ("NextStep", "jobs"), ("SameStep", "work")])
def test_vector_shaping_equals_the_single_wrapper_env_by_env(mode, of):
    n, steps = 3, 400
    venv = LyapunovShapingVector(
        gym.make_vec("MSJ-v0", num_envs=n, autoreset_mode=mode, **KW), weight=0.5, power=2.0, of=of
    )
    singles = [LyapunovShaping(gym.make("MSJ-v0", **KW), 0.5, 2.0, of) for _ in range(n)]
    _obs, info = venv.reset(seed=20)
    single_info = [s.reset(seed=20 + i)[1] for i, s in enumerate(singles)]
    restart = np.zeros(n, dtype=bool)
    ended_some = False
    for t in range(steps):
        actions = np.array([_act(info["action_mask"][i], t) for i in range(n)])
        _obs, rewards, _, trunc, info = venv.step(actions)
        for i, single in enumerate(singles):
            if restart[i]:  # NextStep: this step reset env i; its reward is 0, as the env's own
                assert info["_seed"][i]
                _, si = single.reset(seed=int(info["seed"][i]))
                single_info[i] = si
                assert rewards[i] == 0.0
                continue
            _, r, _, tr, si = single.step(int(actions[i]))
            assert rewards[i] == pytest.approx(r, abs=1e-9), (t, i)
            assert bool(trunc[i]) == tr
            single_info[i] = si
            if tr and mode == "SameStep":
                _, single_info[i] = single.reset(seed=int(info["seed"][i]))
        if mode == "NextStep":
            restart = trunc.copy()
        ended_some |= bool(trunc.any())
    assert ended_some


def test_cost_scale_divides_by_the_mean_service_time():
    # bs-fig1: mean durations 1, 40, 20, 10 with 95 % of the jobs in the first class
    from msj_gym.env.msj_env import resolve_workload

    workload = resolve_workload("bs-fig1", 32, None, None)
    mean = float(np.dot(workload.probabilities, [c.service_time.mean for c in workload.classes]))
    assert mean > 1.5
    kw = {"scenario": "bs-fig1", "num_servers": 32, "num_arrivals": 60}
    raw, _ = _episode(gym.make("MSJ-v0", **kw), 1)
    scaled, _ = _episode(CostScale(gym.make("MSJ-v0", **kw)), 1)
    assert np.allclose(np.array(scaled) * mean, raw, rtol=1e-12, atol=0)
    fixed, _ = _episode(CostScale(gym.make("MSJ-v0", **kw), 4.0), 1)
    assert np.allclose(np.array(fixed) * 4.0, raw, rtol=1e-12, atol=0)
    venv = CostScaleVector(gym.make_vec("MSJ-v0", num_envs=2, **kw))
    venv.reset(seed=1)
    plain = gym.make_vec("MSJ-v0", num_envs=2, **kw)
    plain.reset(seed=1)
    for _ in range(50):
        a = np.zeros(2, dtype=np.int64)  # wait: the same actions in both
        _, r1, *_ = venv.step(a)
        _, r0, *_ = plain.step(a)
        assert np.allclose(r1 * mean, r0, rtol=1e-12, atol=0)


def test_cost_scale_follows_the_system_of_each_episode():
    from msj_gym.agents.systems_env import SystemsEnv

    systems = [{"scenario": "sf-fig2"}, {"scenario": "bs-fig1", "num_servers": 32}]
    inner = SystemsEnv(systems, "MSJ-v0", observation="classes", num_arrivals=40)
    env = CostScale(inner)
    seen = set()
    for seed in range(8):
        env.reset(seed=seed)
        workload = inner.current.workload
        mean = float(np.dot(workload.probabilities, [c.service_time.mean for c in workload.classes]))
        assert env.divisor == pytest.approx(mean, rel=1e-12)
        seen.add(round(mean, 9))
    assert len(seen) == 2  # both systems were drawn, each scaled by its own mean


@pytest.mark.parametrize(
    ("make", "needle"),
    [
        (lambda e: LyapunovShaping(e, weight=-1.0), "weight"),
        (lambda e: LyapunovShaping(e, weight=float("nan")), "weight"),
        (lambda e: LyapunovShaping(e, power=0.5), "power"),
        (lambda e: LyapunovShaping(e, power=True), "power"),
        (lambda e: LyapunovShaping(e, of="queue"), "of"),
        (lambda e: CostScale(e, scale=0.0), "scale"),
        (lambda e: CostScale(e, scale="seconds"), "scale"),
    ],
)
def test_bad_wrapper_arguments_are_refused_in_one_line(make, needle):
    with pytest.raises(ValueError) as info:
        make(gym.make("MSJ-v0", **KW))
    assert needle in str(info.value) and "\n" not in str(info.value)


@pytest.mark.parametrize("observation", ["flat", "classes"])
def test_the_observation_keeps_unbounded_queues_bounded_and_ordered(observation):
    # an agent that only waits: the queues grow without bound; the observation stays in [0, 1] and
    # the squashed queue entries keep growing (100 jobs still differ from 1000)
    env = gym.make("MSJ-v0", scenario="sf-fig2", load=0.9, num_arrivals=3000, observation=observation)
    obs, info = env.reset(seed=0)
    seen: dict[int, np.ndarray] = {}
    done = False
    while not done:
        obs, _, _, done, info = env.step(0)
        seen.setdefault(int(info["jobs_in_system"]), obs.copy())
    counts = sorted(seen)
    assert counts[-1] > 1000
    stack = np.array([seen[c] for c in counts])
    assert stack.min() >= 0.0 and stack.max() <= 1.0
    index = 1 if observation == "flat" else 2  # squash(jobs in system * mean need / k)
    column = stack[:, index]
    assert np.all(np.diff(column) > 0)  # strictly increasing in the number of jobs
    assert column[-1] < 1.0
