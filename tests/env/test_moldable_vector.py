"""The native batched vector env of MSJMoldable-v0: bit-equality with single envs per seed (through every
autoreset mode, masked and unmasked actions, arrival-chunk refills), no cross-talk, the Gymnasium vector
API (shapes, dtypes, spaces, autoreset), masks, results and bad input."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode
from gymnasium.vector.utils import batch_space

from msj_gym.env import MOLDABLE_ENV_ID, MSJMoldableVectorEnv
from msj_gym.moldable import SUB_LINEAR, LossSimulator, MoldableClass, MoldableSystem
from tests.env.test_vector import _run_pair

SMALL = {"num_servers": 10, "num_arrivals": 40}  # short episodes: every run below spans several resets
TWO_CLASSES = MoldableSystem(
    12, (MoldableClass(SUB_LINEAR, 0.4, name="A"), MoldableClass((1, 1.5, 1.8), 0.3, name="B"))
)


@pytest.mark.parametrize("masked", [True, False])
@pytest.mark.parametrize("mode", ["NextStep", "SameStep", "Disabled"])
def test_equals_sync_vector_env_of_single_envs(mode: str, masked: bool) -> None:
    """Env i with seed s follows the single env with seed s bit for bit (observations, rewards, flags,
    masks, every info), across automatic resets whose seeds each env draws from its own generator;
    ``masked=False`` sends masked actions too (taken as reject, counted as invalid)."""
    ends = _run_pair(MOLDABLE_ENV_ID, mode, 250, masked=masked, **SMALL)
    assert ends >= 6


def test_two_classes_total_reward_equal_single_envs() -> None:
    kwargs = {"system": TWO_CLASSES, "num_arrivals": 30, "reward": "total", "blocking_cost": 1.5}
    ends = _run_pair(MOLDABLE_ENV_ID, "SameStep", 250, num_envs=4, masked=False, **kwargs)
    assert ends >= 8


def test_equal_across_arrival_chunk_refills(monkeypatch: pytest.MonkeyPatch) -> None:
    """With 16-arrival chunks both paths refill several times an episode (the default chunk, 32768
    arrivals, is only crossed by long episodes)."""
    monkeypatch.setattr(LossSimulator, "CHUNK", 16)
    assert MSJMoldableVectorEnv(2, num_arrivals=100)._b.at.shape == (2, 16)
    ends = _run_pair(MOLDABLE_ENV_ID, "NextStep", 300, num_servers=6, num_arrivals=70)
    assert ends >= 6


def test_no_cross_talk_between_envs() -> None:
    """Changing env 3's actions changes env 3's trajectory and leaves every other env's unchanged."""
    n = 6
    runs = []
    for other in (False, True):
        venv = MSJMoldableVectorEnv(n, **SMALL)
        obs, _ = venv.reset(seed=20)
        rng, rng3 = np.random.default_rng(5), np.random.default_rng(99)
        trace = [[obs[i]] for i in range(n)]
        for _ in range(150):
            actions = venv.sample_actions(rng)
            if other:
                valid = np.flatnonzero(venv.action_masks()[3])
                actions[3] = valid[rng3.integers(valid.size)]
            obs, reward, _, trunc, info = venv.step(actions)
            for i in range(n):
                trace[i] += [obs[i], reward[i], trunc[i], info["action_mask"][i], info["time"][i]]
        runs.append(trace)
    for i in range(n):
        same = all(np.array_equal(x, y) for x, y in zip(runs[0][i], runs[1][i], strict=True))
        assert same == (i != 3), i


def test_vector_api_shapes_dtypes_and_autoreset() -> None:
    n = 4
    venv = gym.make_vec(MOLDABLE_ENV_ID, num_envs=n, **SMALL)
    sync = gym.make_vec(MOLDABLE_ENV_ID, num_envs=n, vectorization_mode="sync", **SMALL)
    env = venv.unwrapped
    assert isinstance(env, MSJMoldableVectorEnv) and venv.spec.id == MOLDABLE_ENV_ID
    assert venv.metadata["autoreset_mode"] == AutoresetMode.NEXT_STEP
    single = gym.make(MOLDABLE_ENV_ID, **SMALL)
    assert venv.single_observation_space == single.observation_space
    assert venv.single_action_space == single.action_space == gym.spaces.Discrete(6)
    assert venv.observation_space == batch_space(single.observation_space, n)
    assert venv.action_space == batch_space(single.action_space, n)
    obs, info = venv.reset(seed=0)
    _, sync_info = sync.reset(seed=0)
    assert obs in venv.observation_space and obs.dtype == np.float32
    assert info["seed"].tolist() == list(range(n)) and info["_seed"].all()
    rng = np.random.default_rng(1)
    restarted = 0
    prev_trunc = np.zeros(n, dtype=np.bool_)
    for _ in range(200):
        actions = env.sample_actions(rng)
        assert actions in venv.action_space and env.action_masks()[np.arange(n), actions].all()
        obs, reward, term, trunc, info = venv.step(actions)
        sync_info = sync.step(actions)[4]
        for key, value in sync_info.items():  # the dtypes SyncVectorEnv gives the single env's infos
            assert info[key].dtype == value.dtype and info[key].shape == value.shape, key
        assert obs.shape == (n, *venv.single_observation_space.shape) and obs in venv.observation_space
        assert reward.dtype == np.float64 and reward.shape == (n,)
        assert term.dtype == trunc.dtype == np.bool_ and not term.any()
        assert info["_time"].all() and not info["invalid_action"].any()
        # next-step autoreset: the step after an episode's end starts the next one
        assert (reward[prev_trunc] == 0).all() and not trunc[prev_trunc].any()
        assert (info["_seed"] == prev_trunc).all() if "_seed" in info else not prev_trunc.any()
        assert (info["_blocking"] == trunc).all() if trunc.any() else "_blocking" not in info
        assert (info["job_class"][trunc] == -1).all() and (info["job_class"][~trunc] == 0).all()
        restarted += int(prev_trunc.sum())
        prev_trunc = trunc
        assert (reward <= 0).all()
    assert restarted >= 4


def test_masks_follow_class_parallelism_and_idle_servers() -> None:
    """Reject is always valid, ``k >= 1`` iff ``k <= min(d_c, idle)`` for the arriving class ``c``; at an
    episode's end only reject is."""
    venv = MSJMoldableVectorEnv(5, system=TWO_CLASSES, num_arrivals=60)
    _, info = venv.reset(seed=3)
    rng = np.random.default_rng(4)
    d = np.array([5, 3])
    partial = 0
    for _ in range(200):
        masks = venv.action_masks()
        assert np.array_equal(masks, info["action_mask"]) and masks.shape == (5, 6) and masks[:, 0].all()
        c = info["job_class"]
        limit = np.where(c >= 0, np.minimum(d[np.maximum(c, 0)], info["idle"]), 0)
        assert np.array_equal(masks[:, 1:].sum(axis=1), limit)
        assert all(masks[i, 1 : limit[i] + 1].all() for i in range(5))
        partial += int((limit < d[np.maximum(c, 0)]).sum())
        _, _, _, _, info = venv.step(rng.integers(6, size=5))
    assert partial > 0 and (info["invalid_actions"] > 0).any()


def test_threads_give_the_same_trajectories() -> None:
    runs = []
    for threads in (1, 2):
        venv = MSJMoldableVectorEnv(5, threads=threads, **SMALL)
        obs, _ = venv.reset(seed=1)
        rng = np.random.default_rng(2)
        trace = [obs]
        for _ in range(100):
            obs, reward, _, trunc, _ = venv.step(venv.sample_actions(rng))
            trace += [obs, reward, trunc]
        venv.close()
        runs.append(trace)
    assert all(np.array_equal(x, y) for x, y in zip(*runs, strict=True))


def test_result_is_the_single_envs_result() -> None:
    venv = MSJMoldableVectorEnv(2, **SMALL)
    env = gym.make(MOLDABLE_ENV_ID, **SMALL)
    venv.reset(seed=[0, 7])
    env.reset(seed=7)
    rng = np.random.default_rng(0)
    while True:
        actions = venv.sample_actions(rng)
        _, _, _, trunc, info = venv.step(actions)
        *_, single_info = env.step(int(actions[1]))
        if trunc[1]:
            break
    a, b = venv.result(1), env.unwrapped.result()
    assert a.to_dict() == b.to_dict() and a.arrivals == 40
    assert info["blocking"][1] == single_info["blocking"] == a.blocking


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"num_envs": 0}, "num_envs"),
        ({"num_envs": 2, "autoreset_mode": "sometimes"}, "autoreset_mode"),
        ({"num_envs": 2, "threads": 0}, "threads"),
        ({"num_envs": 2, "blocking_cost": -1.0}, "blocking_cost"),
        ({"num_envs": 2, "reward": "sum"}, "reward"),
        ({"num_envs": 2, "num_arrivals": 1}, "num_arrivals"),
        ({"num_envs": 2, "render_mode": "ansi"}, "render_mode"),
    ],
)
def test_bad_construction(kwargs: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        MSJMoldableVectorEnv(**kwargs)


def test_bad_actions_and_seeds() -> None:
    venv = MSJMoldableVectorEnv(2, **SMALL)
    with pytest.raises(RuntimeError, match="reset"):
        venv.step(np.zeros(2, dtype=np.int64))
    venv.reset(seed=0)
    for bad in (np.zeros(3, dtype=np.int64), np.zeros(2), np.array([0, 6]), np.array([-1, 0]), [True, False]):
        with pytest.raises(ValueError, match="actions"):
            venv.step(bad)
    for seed in (-1, [1], [1, "a"], 1.5):
        with pytest.raises(ValueError, match="seed"):
            venv.reset(seed=seed)
    with pytest.raises(ValueError, match="reset_mask"):
        venv.reset(options={"reset_mask": np.zeros(2, dtype=np.bool_)})
    with pytest.raises(ValueError, match="options"):
        venv.reset(options={"foo": 1})
