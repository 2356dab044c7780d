"""The class-set observation (``observation="classes"``) and padded class slots (``max_classes``): the
features against the state, padding, equivariance under a permutation of the classes, invariance under
a change of time unit, and priority actions over padded slots."""

from __future__ import annotations

import copy

import gymnasium as gym
import numpy as np
import pytest

import msj_gym  # noqa: F401  (registers the envs)
from msj_gym.core import state as S
from msj_gym.env import planning
from msj_gym.env.layout import SET_CLASS_FEATURES, SET_SIZE_FEATURES, SET_SYSTEM_FEATURES
from msj_gym.env.observe import squash
from msj_gym.workloads import Exponential, JobClass, Workload
from msj_gym.workloads.scenarios import load_scenario

squash_py = squash.py_func


def _rows(obs: np.ndarray, width: int) -> tuple[np.ndarray, np.ndarray]:
    return obs[:SET_SYSTEM_FEATURES], obs[SET_SYSTEM_FEATURES:].reshape(-1, width)


def test_features_of_a_known_state() -> None:
    """sf-fig2 at load 0.7 (k = 8; need 1 w.p. 2/3, need 8 w.p. 1/3; Exp(1)): the static features
    from the workload, the dynamic ones from the state, the padding rows zero."""
    env = gym.make("MSJ-v0", scenario="sf-fig2", load=0.7, observation="classes", actions="priority")
    assert env.observation_space.shape == (SET_SYSTEM_FEATURES + 32 * SET_CLASS_FEATURES,)
    assert env.action_space == gym.spaces.Discrete(1 + 32)
    obs, info = env.reset(seed=3)
    rng = np.random.default_rng(1)
    for _ in range(200):  # a state with jobs waiting and running
        obs, _, _, _, info = env.step(int(rng.choice(np.flatnonzero(info["action_mask"]))))
    sim = env.unwrapped.core.sim
    system, rows = _rows(obs, SET_CLASS_FEATURES)
    k, free, ci = 8, int(sim.iv[S.I_FREE]), sim.ci
    demand = [2 / 3 * 1, 1 / 3 * 8]  # per arrival, by class: p * need * mean
    np.testing.assert_allclose(
        system,
        [
            0.7,
            free / k,
            squash_py(int(sim.iv[S.I_NSYS]) * (2 / 3 + 8 / 3) / k),
            squash_py((ci[S.C_NWAIT, 0] * 1 + ci[S.C_NWAIT, 1] * 8) / k),
            3 / 16,
            2 / 32,
            squash_py(1 / 0.3),
            (2 / 3 + 8 / 3) / k,
        ],
        rtol=1e-6,
    )
    now = sim.fv[S.F_NOW]
    for c, need in enumerate((1, 8)):
        head = ci[S.C_HEAD, c]
        waiting, running = int(ci[S.C_NWAIT, c]), int(ci[S.C_NRUN, c])
        share = demand[c] / sum(demand)
        expected = [
            1.0,
            need / k,
            squash_py(k / need),
            (2 / 3, 1 / 3)[c],
            share,
            0.7 * share,
            squash_py(1.0),  # mean duration / the system's
            squash_py(1.0),  # squared coefficient of variation of Exp
            squash_py(waiting),
            squash_py(waiting * need / k),
            running * need / k,
            squash_py(now - sim.jf[head, S.ARRIVAL]) if head != -1 else 0.0,
            1.0 if head != -1 and need <= free else 0.0,
            min(waiting, free // need) * need / k,
        ]
        np.testing.assert_allclose(rows[c], expected, rtol=1e-6, err_msg=f"class {c}")
    assert not rows[2:].any()  # padding
    assert env.observation_space.contains(obs)
    # a priority over a padding slot is never valid
    assert not info["action_mask"][3:].any()


def test_size_features_against_the_jobs() -> None:
    env = gym.make(
        "MSJ-v0",
        scenario="four-class",
        load=0.85,
        observation="classes",
        actions="priority-shortest",
        reveal_sizes=True,
        max_classes=5,
    )
    width = SET_CLASS_FEATURES + SET_SIZE_FEATURES
    obs, info = env.reset(seed=4)
    rng = np.random.default_rng(2)
    checked = 0
    for _ in range(300):
        obs, _, _, over, info = env.step(int(rng.choice(np.flatnonzero(info["action_mask"]))))
        if over:
            break
        sim = env.unwrapped.core.sim
        means = env.unwrapped.workload.mean_service_times
        now = sim.fv[S.F_NOW]
        _, rows = _rows(obs, width)
        assert rows.shape == (5, width) and not rows[4].any()
        for c in range(4):
            waiting, s = [], sim.ci[S.C_HEAD, c]
            while s != -1:
                waiting.append(sim.js[s, S.REMAINING])
                s = sim.ji[s, S.CNEXT]
            running = [
                sim.js[s, S.REMAINING] - (now - sim.jf[s, S.LAST_START])
                for s in sim.run_list[: sim.iv[S.I_NRUN]]
                if sim.ji[s, S.CLS] == c
            ]
            size = rows[c, SET_CLASS_FEATURES:]
            want = [
                squash_py(min(waiting) / means[c]) if waiting else 0.0,
                squash_py(np.mean(waiting) / means[c]) if waiting else 0.0,
                squash_py(min(running) / means[c]) if running else 0.0,
            ]
            np.testing.assert_allclose(size, want, rtol=1e-5, atol=1e-7)
            checked += bool(waiting) + bool(running)
    assert checked > 200


def _workload(order: list[int], time_unit: float = 1.0) -> Workload:
    """four-class at load 0.8 with its classes in ``order`` and durations in units of ``time_unit``."""
    base = load_scenario("four-class").build(load=0.8)
    classes = [
        JobClass(c.server_need, Exponential(c.service_time.mean * time_unit), c.probability, c.name)
        for c in (base.classes[i] for i in order)
    ]
    return Workload(num_servers=base.num_servers, classes=classes, load=0.8)


def _relabelled(core, perm: list[int]):
    """``core`` with class ``perm[i]`` renamed ``i`` (the state the permuted workload would be in)."""
    core = copy.deepcopy(core)
    sim = core.sim
    inverse = np.argsort(perm)
    sim.ci[:] = sim.ci[:, perm]
    in_system = sim.ji[:, S.STATE] != S.FREE_SLOT
    sim.ji[in_system, S.CLS] = inverse[sim.ji[in_system, S.CLS]]
    return core


@pytest.mark.parametrize("env_id", ["MSJ-v0", "MSJPreemptive-v0"])
@pytest.mark.parametrize("reveal", [False, True])
def test_permuting_the_classes_permutes_the_observation_and_the_priorities(env_id: str, reveal: bool) -> None:
    """The same state with the classes listed in another order: the system features are the same,
    the class rows and the priority mask are permuted, and priority ``c`` is the same decision as
    priority ``perm[c]`` was."""
    perm = [2, 0, 3, 1]
    kw = {"observation": "classes", "actions": "priority", "reveal_sizes": reveal, "max_classes": 6}
    a = gym.make(env_id, scenario=_workload([0, 1, 2, 3]), **kw).unwrapped
    b = gym.make(env_id, scenario=_workload(perm), **kw).unwrapped
    width = SET_CLASS_FEATURES + (SET_SIZE_FEATURES if reveal else 0)
    obs, info = a.reset(seed=9)
    b.reset(seed=9)
    rng = np.random.default_rng(5)
    compared = 0
    for _ in range(150):
        obs, _, _, over, info = a.step(int(rng.choice(np.flatnonzero(info["action_mask"]))))
        if over:
            break
        b.core = _relabelled(a.core, perm)
        b.core._views()
        b._bind()
        b._observe()
        sys_a, rows_a = _rows(obs, width)
        sys_b, rows_b = _rows(b._obs, width)
        np.testing.assert_array_equal(sys_b, sys_a)
        np.testing.assert_array_equal(rows_b[:4], rows_a[perm])
        mask_a, mask_b = info["action_mask"], b.action_masks()
        assert mask_b[0] == mask_a[0]
        np.testing.assert_array_equal(mask_b[1:5], mask_a[1:5][perm])
        for c in range(4):
            if mask_b[1 + c]:
                # the same starts and preemptions (listed in class order, so in another order)
                np.testing.assert_array_equal(
                    np.sort(planning.engine_words(b, 1 + c)), np.sort(planning.engine_words(a, 1 + perm[c]))
                )
        compared += 1
    assert compared > 100


def test_the_time_unit_does_not_change_the_observation() -> None:
    """Durations in another unit (and the arrival rate with them, at the same load): the same job
    stream up to the unit, and the same observations (ages and durations enter as ratios)."""
    kw = {"observation": "classes", "actions": "priority", "reveal_sizes": True, "num_arrivals": 300}
    one = gym.make("MSJ-v0", scenario=_workload([0, 1, 2, 3]), **kw)
    ten = gym.make("MSJ-v0", scenario=_workload([0, 1, 2, 3], time_unit=10.0), **kw)
    obs1, info1 = one.reset(seed=2)
    obs10, info10 = ten.reset(seed=2)
    rng = np.random.default_rng(0)
    steps = 0
    over = False
    while not over:
        np.testing.assert_allclose(obs10, obs1, rtol=1e-9, atol=1e-12)
        np.testing.assert_array_equal(info10["action_mask"], info1["action_mask"])
        a = int(rng.choice(np.flatnonzero(info1["action_mask"])))
        obs1, r1, _, over, info1 = one.step(a)
        obs10, r10, _, _, info10 = ten.step(a)
        # a reward is a difference of clock readings: its rounding error scales with the clock
        assert r10 == pytest.approx(10 * r1, rel=1e-9, abs=1e-12 * info10["time"])
        steps += 1
    assert steps > 300


def test_padded_slots_in_the_flat_observation_and_job_actions() -> None:
    """``max_classes`` pads every class-indexed part: the flat observation's class block and the job
    actions, whose padding entries are zero and never valid; the run is that of the unpadded env."""
    plain = gym.make("MSJPreemptive-v0", scenario="sf-fig2", num_arrivals=200)
    padded = gym.make("MSJPreemptive-v0", scenario="sf-fig2", num_arrivals=200, max_classes=4)
    assert padded.action_space.n == 1 + 4 * 1 + 4 * 4
    _, info_p = padded.reset(seed=1)
    _, info_u = plain.reset(seed=1)
    rng = np.random.default_rng(3)
    over = False
    to_padded = np.r_[0, 1, 2, 5:13]  # wait, starts of classes 0 and 1, preempts of classes 0 and 1
    while not over:
        mask_u = info_u["action_mask"]
        np.testing.assert_array_equal(info_p["action_mask"][to_padded], mask_u)
        assert info_p["action_mask"].sum() == mask_u.sum()
        a = int(rng.choice(np.flatnonzero(mask_u)))
        _, r_u, _, over, info_u = plain.step(a)
        _, r_p, _, _, info_p = padded.step(int(to_padded[a]))
        assert r_p == r_u
    assert plain.unwrapped.result().to_dict() == padded.unwrapped.result().to_dict()
