"""The native batched vector env: bit-equality with single envs per seed (through every autoreset mode),
no cross-talk between envs, the Gymnasium vector API (shapes, dtypes, autoreset), bad input."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode
from gymnasium.vector.utils import batch_space

import msj_gym
from msj_gym import MSJVectorEnv
from msj_gym.core import state as S
from msj_gym.core.batch import sample_masked
from msj_gym.env.vector import NativeVectorEnv

SMALL = {"num_arrivals": 40}  # short episodes: every run below spans several autoresets


def _assert_same_infos(a: dict, b: dict, where: str) -> None:
    assert set(a) == set(b), (where, sorted(a), sorted(b))
    for key, value in b.items():
        if key == "final_obs":
            for x, y in zip(a[key], value, strict=True):
                assert (x is None and y is None) or np.array_equal(x, y), (where, key)
        elif isinstance(value, dict):
            _assert_same_infos(a[key], value, f"{where}/{key}")
        else:
            assert np.array_equal(a[key], value), (where, key, a[key], value)


def _equal(x, y) -> bool:
    if isinstance(y, dict):
        return set(x) == set(y) and all(_equal(x[k], y[k]) for k in y)
    return np.array_equal(x, y) and x.dtype == y.dtype


def _run_pair(env_id: str, mode: str, steps: int, num_envs: int = 3, masked: bool = True, **kwargs):
    """Step the native vector env and SyncVectorEnv of single envs with the same actions (masked
    uniform, or uniform over the whole action space with ``masked=False``) and compare everything.
    Returns the number of episodes that ended."""
    native = gym.make_vec(env_id, num_envs=num_envs, autoreset_mode=mode, **kwargs)
    sync = gym.make_vec(
        env_id, num_envs=num_envs, vectorization_mode="sync", vector_kwargs={"autoreset_mode": mode}, **kwargs
    )
    assert isinstance(native.unwrapped, NativeVectorEnv) and isinstance(sync, gym.vector.SyncVectorEnv)
    seeds = [11, 4, 11][:num_envs] + list(range(100, 100 + num_envs - 3))
    a, info_a = native.reset(seed=seeds)
    b, info_b = sync.reset(seed=seeds)
    assert _equal(a, b) and a in native.observation_space
    _assert_same_infos(info_a, info_b, "reset")
    rng = np.random.default_rng(0)
    n_actions = native.single_action_space.n

    def draw():
        return native.unwrapped.sample_actions(rng) if masked else rng.integers(n_actions, size=num_envs)

    ends = 0
    trunc = np.zeros(num_envs, dtype=np.bool_)
    for t in range(steps):
        actions = draw()
        if mode == "Disabled" and trunc.any():
            obs_a, info_a = native.reset(options={"reset_mask": trunc.copy()})
            obs_b, info_b = sync.reset(options={"reset_mask": trunc.copy()})
            assert _equal(obs_a, obs_b)
            _assert_same_infos(info_a, info_b, f"reset {t}")
            actions = draw()
        out_a, out_b = native.step(actions), sync.step(actions)
        names = ("obs", "reward", "terminated", "truncated")
        for x, y, name in zip(out_a[:4], out_b[:4], names, strict=True):
            assert _equal(x, y), (t, name, x, y)
        _assert_same_infos(out_a[4], out_b[4], f"step {t}")
        assert np.array_equal(native.unwrapped.action_masks(), out_b[4]["action_mask"])
        trunc = out_a[3]
        ends += int(trunc.sum())
    native.close()
    sync.close()
    return ends


@pytest.mark.parametrize("mode", ["NextStep", "SameStep", "Disabled"])
def test_equals_sync_vector_env_of_single_envs(mode: str) -> None:
    """Env i with seed s follows the single env with seed s bit for bit (observations, rewards, flags,
    masks, every info), across automatic resets whose seeds each env draws from its own generator
    (env 0 and env 2 share the seed 11 and so the whole run)."""
    ends = _run_pair("MSJ-v0", mode, 500, **SMALL)
    assert ends >= 6  # several episodes ended in each env


@pytest.mark.parametrize("observation", ["flat", "dict"])
def test_preemptive_variant_equals_single_envs(observation: str) -> None:
    ends = _run_pair("MSJPreemptive-v0", "NextStep", 600, observation=observation, num_arrivals=25)
    assert ends >= 3


def test_equal_through_slot_growth_and_the_arrival_cap() -> None:
    """An agent that always waits piles up every arrival: the state arrays of all envs grow past the
    initial job slots, and the episode ends at the arrival cap (truncated, unstable)."""
    kwargs = {"num_arrivals": 600, "queue_window": 2}
    native = MSJVectorEnv(2, **kwargs)
    singles = [gym.make("MSJ-v0", **kwargs) for _ in range(2)]
    slots = native._b.ji.shape[1]
    obs, _ = native.reset(seed=[3, 9])
    for i, env in enumerate(singles):
        assert np.array_equal(obs[i], env.reset(seed=[3, 9][i])[0])
    wait = np.zeros(2, dtype=np.int64)
    ends = 0
    prev_trunc = np.zeros(2, dtype=np.bool_)
    for t in range(1300):
        obs, reward, _, trunc, info = native.step(wait)
        for i, env in enumerate(singles):
            if prev_trunc[i]:
                o, inf = env.reset()
                r, tr = 0.0, False
            else:
                o, r, _, tr, inf = env.step(0)
            assert np.array_equal(obs[i], o) and reward[i] == r and trunc[i] == tr, (t, i)
            if tr:
                assert info["stable"][i] == inf["stable"] is False
                mrt = inf["mean_response_time"]  # NaN: no job ever left
                assert np.array_equal(info["mean_response_time"][i], mrt, equal_nan=True)
        prev_trunc = trunc
        ends += int(trunc.sum())
    assert native._b.ji.shape[1] > slots  # grew
    assert ends == 2  # each env once, at the arrival cap


def test_threads_give_the_same_trajectories() -> None:
    """Two and three threads (polling workers) step exactly as one, also through a slot growth (the
    workers restart on the new arrays) and autoresets; closing the env stops the workers."""
    runs = []
    for threads in (1, 2, 3):
        venv = MSJVectorEnv(5, threads=threads, num_arrivals=150)
        slots = venv._b.ji.shape[1]
        obs, _ = venv.reset(seed=1)
        rng = np.random.default_rng(2)
        trace = [obs]
        for t in range(700):
            # waiting piles up jobs (the slots grow), random actions then clear them
            actions = np.zeros(5, dtype=np.int64) if t < 100 else venv.sample_actions(rng)
            obs, reward, _, trunc, _ = venv.step(actions)
            trace += [obs, reward, trunc]
        assert venv._b.ji.shape[1] > slots
        pool = venv._pool
        if threads > 1:
            assert pool is not None and pool.alive() == [True] * (threads - 1)
        venv.close()
        assert pool is None or not any(pool.alive())
        runs.append(trace)
    assert all(np.array_equal(x, y) for x, y in zip(runs[0], runs[1], strict=True))
    assert all(np.array_equal(x, y) for x, y in zip(runs[0], runs[2], strict=True))


def test_no_cross_talk_between_envs() -> None:
    """Changing env 3's actions changes env 3's trajectory and leaves every other env's unchanged."""
    n = 6
    runs = []
    for other in (False, True):
        venv = MSJVectorEnv(n, **SMALL)
        obs, _ = venv.reset(seed=20)
        rng, rng3 = np.random.default_rng(5), np.random.default_rng(99)
        trace = [[obs[i]] for i in range(n)]
        for _ in range(200):
            actions = venv.sample_actions(rng)
            if other:
                masks = venv.action_masks()
                valid = np.flatnonzero(masks[3])
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
    venv = gym.make_vec("MSJ-v0", num_envs=n, **SMALL)
    env = venv.unwrapped
    assert venv.metadata["autoreset_mode"] == AutoresetMode.NEXT_STEP
    assert venv.num_envs == n
    assert venv.observation_space == batch_space(venv.single_observation_space, n)
    assert venv.action_space == batch_space(venv.single_action_space, n)
    single = gym.make("MSJ-v0", **SMALL)
    assert venv.single_observation_space == single.observation_space
    assert venv.single_action_space == single.action_space
    obs, info = venv.reset(seed=0)
    assert obs in venv.observation_space and obs.dtype == np.float32
    assert info["seed"].tolist() == list(range(n)) and info["_seed"].all()
    rng = np.random.default_rng(1)
    restarted = 0
    prev_trunc = np.zeros(n, dtype=np.bool_)
    for _ in range(400):
        actions = env.sample_actions(rng)
        assert actions in venv.action_space and env.action_masks()[np.arange(n), actions].all()
        obs, reward, term, trunc, info = venv.step(actions)
        assert obs.shape == (n, *venv.single_observation_space.shape) and obs in venv.observation_space
        assert reward.dtype == np.float64 and reward.shape == (n,)
        assert term.dtype == trunc.dtype == np.bool_ and not term.any()
        assert info["action_mask"].shape == (n, venv.single_action_space.n)
        assert info["_time"].all() and not info["invalid_action"].any()
        # next-step autoreset: the step after an episode's end starts the next one
        assert (reward[prev_trunc] == 0).all() and not trunc[prev_trunc].any()
        assert (info["_seed"] == prev_trunc).all() if "_seed" in info else not prev_trunc.any()
        assert (info["time"][prev_trunc] > 0).all()  # advanced to the new episode's first decision
        assert (info["_mean_response_time"] == trunc).all() if trunc.any() else "_stable" not in info
        restarted += int(prev_trunc.sum())
        prev_trunc = trunc
        assert (reward[~prev_trunc & ~trunc] <= 0).all()
    assert restarted >= 4
    same = gym.make_vec("MSJ-v0", num_envs=n, **SMALL)
    assert np.array_equal(same.reset(seed=0)[0], venv.reset(seed=0)[0])
    other, _ = same.reset(seed=None)
    assert other in venv.observation_space


def test_disabled_mode_needs_explicit_resets() -> None:
    venv = MSJVectorEnv(2, autoreset_mode="Disabled", **SMALL)
    venv.reset(seed=0)
    rng = np.random.default_rng(0)
    for _ in range(500):
        _, _, _, trunc, _ = venv.step(venv.sample_actions(rng))
        if trunc.any():
            break
    assert trunc.any()
    with pytest.raises(RuntimeError, match="reset them first"):
        venv.step(venv.sample_actions(rng))
    time_before = venv._b.fv[:, S.F_NOW].copy()
    venv.reset(options={"reset_mask": trunc})
    after = venv._b.fv[:, S.F_NOW]
    assert np.array_equal(after[~trunc], time_before[~trunc])  # the other env is untouched
    venv.step(venv.sample_actions(rng))


def test_result_is_the_single_envs_result() -> None:
    venv = MSJVectorEnv(2, **SMALL)
    env = gym.make("MSJ-v0", **SMALL)
    venv.reset(seed=[0, 7])
    env.reset(seed=7)
    rng = np.random.default_rng(0)
    while True:
        actions = venv.sample_actions(rng)
        _, _, _, trunc, _ = venv.step(actions)
        env.step(int(actions[1]))
        if trunc[1]:
            break
    a, b = venv.result(1), env.unwrapped.result()
    assert a.to_dict() == b.to_dict()


def test_masked_sampler_is_uniform_over_valid_actions() -> None:
    n = 200_000
    masks = np.zeros((n, 4), dtype=np.bool_)
    masks[:, [0, 2, 3]] = True
    masks[-1] = False  # no valid action: -1
    actions = np.empty(n, dtype=np.int64)
    sample_masked(masks, np.random.default_rng(0).random(n), actions)
    assert actions[-1] == -1
    counts = np.bincount(actions[:-1], minlength=4)
    assert counts[1] == 0
    expected = (n - 1) / 3
    chi2 = float(((counts[[0, 2, 3]] - expected) ** 2 / expected).sum())
    assert chi2 < 13.82, counts  # 99.9 % quantile of chi-square with 2 degrees of freedom


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"num_envs": 0}, "num_envs"),
        ({"num_envs": 2, "autoreset_mode": "sometimes"}, "autoreset_mode"),
        ({"num_envs": 2, "warm_start": "fcfs"}, "warm_start"),
        ({"num_envs": 2, "threads": 0}, "threads"),
        ({"num_envs": 2, "queue_window": 0}, "queue_window"),
    ],
)
def test_bad_construction(kwargs: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        MSJVectorEnv(**kwargs)


def test_bad_actions_and_seeds() -> None:
    venv = MSJVectorEnv(2, **SMALL)
    with pytest.raises(RuntimeError, match="reset"):
        venv.step(np.zeros(2, dtype=np.int64))
    venv.reset(seed=0)
    for bad in (np.zeros(3, dtype=np.int64), np.zeros(2), np.array([0, 3]), np.array([-1, 0]), [True, False]):
        with pytest.raises(ValueError, match="actions"):
            venv.step(bad)
    for seed in (-1, [1], [1, "a"], 1.5):
        with pytest.raises(ValueError, match="seed"):
            venv.reset(seed=seed)
    with pytest.raises(ValueError, match="reset_mask"):
        venv.reset(options={"reset_mask": np.zeros(2, dtype=np.bool_)})
    with pytest.raises(ValueError, match="options"):
        venv.reset(options={"foo": 1})


def test_registered_vector_entry_points() -> None:
    for env_id in msj_gym.ENV_IDS:
        venv = gym.make_vec(env_id, num_envs=2)
        assert isinstance(venv, MSJVectorEnv) and venv.spec.id == env_id
        assert venv.single_env.preemptive == (env_id == "MSJPreemptive-v0")
