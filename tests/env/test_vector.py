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
from msj_gym.env.batch import sample_masked
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
    seeds = [11, 4, 11][:num_envs] + list(range(100, 100 + num_envs - 3))
    return _compare_runs(native, sync, mode, steps, seeds, masked)


def _compare_runs(native, sync, mode: str, steps: int, seeds, masked: bool = True) -> int:
    """Step ``native`` and ``sync`` (reset with ``seeds``) with the same actions and compare everything
    (see :func:`_run_pair`), and the last episodes' results. Returns the number of episodes that ended."""
    num_envs = native.num_envs
    assert isinstance(native.unwrapped, NativeVectorEnv) and isinstance(sync, gym.vector.SyncVectorEnv)
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
    for i, env in enumerate(sync.envs):
        assert native.unwrapped.result(i).to_dict() == env.unwrapped.result().to_dict(), i
    native.close()
    sync.close()
    return ends


@pytest.mark.parametrize("threads", [1, 2])
def test_observations_handed_out_stay_the_callers(threads: int) -> None:
    """With copy=True every observation returned is the caller's: a later step or partial reset leaves
    it as it was, and changing it changes nothing the env returns later (one thread writes each step
    into a new array, two copy one buffer)."""
    kwargs = {"scenario": "sf-fig2", "observation": "classes", "actions": "priority", **SMALL}
    native = gym.make_vec("MSJ-v0", num_envs=3, threads=threads, autoreset_mode="Disabled", **kwargs)
    sync = gym.make_vec(
        "MSJ-v0",
        num_envs=3,
        vectorization_mode="sync",
        vector_kwargs={"autoreset_mode": "Disabled"},
        **kwargs,
    )
    obs, _ = native.reset(seed=[5, 6, 7])
    expected, _ = sync.reset(seed=[5, 6, 7])
    rng = np.random.default_rng(0)
    resets = 0
    for _ in range(300):
        kept, kept_copy = obs, obs.copy()
        obs[:] = 7.0  # the caller's to change
        obs, _, _, trunc, _ = native.step(native.unwrapped.sample_actions(rng))
        expected, _, _, _, _ = sync.step(np.asarray(native.unwrapped._actions))
        assert obs is not kept and np.array_equal(obs, expected)
        assert (kept == 7.0).all() and not np.array_equal(kept, kept_copy)
        if trunc.any():
            obs[:] = 7.0
            obs, _ = native.reset(options={"reset_mask": trunc.copy()})
            expected, _ = sync.reset(options={"reset_mask": trunc.copy()})
            assert np.array_equal(obs, expected)
            resets += 1
    assert resets >= 2
    native.close()
    sync.close()


@pytest.mark.parametrize("mode", ["NextStep", "SameStep", "Disabled"])
def test_equals_sync_vector_env_of_single_envs(mode: str) -> None:
    """Env i with seed s follows the single env with seed s bit for bit (observations, rewards, flags,
    masks, every info), across automatic resets whose seeds each env draws from its own generator
    (env 0 and env 2 share the seed 11 and so the whole run)."""
    ends = _run_pair("MSJ-v0", mode, 500, **SMALL)
    assert ends >= 6  # several episodes ended in each env


@pytest.mark.parametrize("env_id", ["MSJ-v0", "MSJPreemptive-v0"])
@pytest.mark.parametrize(
    "kwargs",
    [
        {"actions": "priority"},
        {"actions": "priority", "observation": "classes"},
        {"actions": "priority-shortest", "observation": "classes", "reveal_sizes": True},
        # job actions preempt at random: short episodes, so that several end
        {"observation": "classes", "max_classes": 6, "num_arrivals": 15},
    ],
)
def test_priority_actions_and_class_sets_equal_single_envs(env_id: str, kwargs: dict) -> None:
    """The compiled priority actions and class-set observation: the same bit for bit in the native
    vector env as in single envs, across autoresets."""
    ends = _run_pair(env_id, "NextStep", 400, **{"scenario": "four-class", "num_arrivals": 60, **kwargs})
    assert ends >= 3


@pytest.mark.parametrize(
    ("env_id", "kwargs"),
    [
        ("MSJ-v0", {"actions": "priority", "advisor": "first-fit"}),
        # Quickswap follows every event: the envs stop at each one and move on where nothing is decided
        ("MSJ-v0", {"actions": "priority", "observation": "classes", "advisor": ["msf", "static-quickswap"]}),
        ("MSJPreemptive-v0", {"actions": "priority", "advisor": "server-filling"}),
        ("MSJ-v0", {"warm_start": "fcfs", "warm_start_arrivals": 30}),
        (
            "MSJ-v0",
            {"warm_start": "msf", "warm_start_arrivals": 200, "actions": "priority", "advisor": "msf"},
        ),
    ],
)
def test_advisors_and_warm_starts_equal_single_envs(env_id: str, kwargs: dict) -> None:
    """Advisors (their decision is an action) and warm starts run a baseline from Python inside the
    episode: the native vector env runs them on each env's row and equals the single envs bit for bit
    (observations, rewards, masks, infos, results), across autoresets."""
    ends = _run_pair(env_id, "NextStep", 300, **{"scenario": "four-class", "num_arrivals": 40, **kwargs})
    assert ends >= 3


def test_warm_start_through_slot_growth_in_the_vector_env() -> None:
    """A warm start that leaves more jobs than the vector env's ring and job slots hold (FCFS at load
    0.95 for 3000 arrivals): the state it hands over grows every env's slots, the stream goes on from
    the first job not arrived, and the envs still equal the single envs."""
    kwargs = {"scenario": "sf-fig2", "load": 0.95, "num_arrivals": 30, "warm_start": "fcfs"}
    kwargs["warm_start_arrivals"] = 3000
    native = gym.make_vec("MSJ-v0", num_envs=2, autoreset_mode="SameStep", **kwargs)
    sync = gym.make_vec(
        "MSJ-v0",
        num_envs=2,
        vectorization_mode="sync",
        vector_kwargs={"autoreset_mode": "SameStep"},
        **kwargs,
    )
    native.reset(seed=0)
    assert native.unwrapped._b.ji.shape[1] > 64  # grown past the vector env's first slots
    _compare_runs(native, sync, "SameStep", 100, [3, 4])


@pytest.mark.parametrize("observation", ["flat", "dict"])
def test_preemptive_variant_equals_single_envs(observation: str) -> None:
    ends = _run_pair("MSJPreemptive-v0", "NextStep", 600, observation=observation, num_arrivals=25)
    assert ends >= 3


@pytest.mark.parametrize(
    ("env_id", "kwargs"),
    [
        ("MSJ-v0", {**SMALL, "reward": "slowdown"}),
        ("MSJ-v0", {**SMALL, "reward": "waiting", "warmup": 5, "actions": "priority"}),
        ("MSJPreemptive-v0", {"num_arrivals": 25, "reward": "slowdown", "slowdown_tau": 0.4}),
    ],
)
def test_hpc_rewards_equal_single_envs(env_id: str, kwargs: dict) -> None:
    """``reward="slowdown"`` / ``"waiting"``: each env's rewards are the single env's bit for bit, and
    each episode's return is minus its result's measured sum; an episode stopped with measured jobs
    in the system paid nothing for them, which its result counts (so its sum is larger)."""
    ends = _run_pair(env_id, "SameStep", 400, **kwargs)
    assert ends >= 3
    venv = gym.make_vec(env_id, num_envs=2, vectorization_mode="vector_entry_point", **kwargs).unwrapped
    venv.reset(seed=[3, 9])
    rng = np.random.default_rng(1)
    totals, done = np.zeros(2), np.zeros(2, dtype=np.bool_)
    while not done.all():
        _, reward, _, trunc, _ = venv.step(venv.sample_actions(rng))
        totals += np.where(done, 0.0, reward)
        for i in np.flatnonzero(trunc & ~done):
            res = venv.result(i)  # NextStep: the ended episode's until the next step resets it
            metric = res.mean_bounded_slowdown if kwargs["reward"] == "slowdown" else res.mean_waiting_time
            if "had not left" in res.stability_note:
                assert -totals[i] < metric * res.num_measured, i
            else:
                assert -totals[i] == pytest.approx(metric * res.num_measured, rel=1e-9), i
        done |= trunc
    assert (totals < 0).all()


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


@pytest.mark.parametrize("more", [2, pytest.param(3, marks=pytest.mark.slow)])
def test_threads_give_the_same_trajectories(more: int) -> None:
    """Two threads (polling workers; three, slow: more threads than this machine's two cores, each
    polling) step exactly as one, also through a slot growth (the workers restart on the new arrays)
    and autoresets; closing the env stops the workers."""
    runs = []
    for threads in (1, more):
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
        ({"num_envs": 2, "warm_start": "not-a-policy"}, "warm_start"),
        ({"num_envs": 2, "advisor": "fcfs"}, "advisor"),
        ({"num_envs": 2, "threads": 0}, "threads"),
        ({"num_envs": 2, "queue_window": 0}, "queue_window"),
    ],
)
def test_bad_construction(kwargs: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        MSJVectorEnv(**kwargs)


def test_an_env_whose_construction_failed_closes_quietly() -> None:
    # gymnasium 1.2's VectorEnv.__del__ closes an env whose __init__ raised: nothing is built to close
    from msj_gym.env.moldable_vector import MSJMoldableVectorEnv

    for cls in (MSJVectorEnv, MSJMoldableVectorEnv):
        half = cls.__new__(cls)
        half.close_extras()


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


# --- per-env loads ------------------------------------------------------------------------------------
LOADS = [0.5, 0.95, 0.7]


@pytest.mark.parametrize(
    ("env_id", "mode", "kwargs"),
    [
        ("MSJ-v0", "NextStep", SMALL),
        # the class weights (in fpar) differ in their last bits between loads
        ("MSJ-v0", "SameStep", {**SMALL, "weighted": True}),
        # per-env reward scale and arrival cap: both follow the arrival rate in horizon episodes
        ("MSJ-v0", "NextStep", {"horizon": 25.0, "reward": "mean"}),
        ("MSJPreemptive-v0", "NextStep", {"num_arrivals": 25, "observation": "dict"}),
    ],
)
def test_per_env_loads_equal_single_envs_with_those_loads(env_id: str, mode: str, kwargs: dict) -> None:
    """``load=[l0, l1, l2]``: env i is bit for bit the single env made with ``load=li`` and seeded
    ``s + i`` (observations, rewards, flags, every info, results), across autoresets."""
    native = gym.make_vec(env_id, num_envs=3, autoreset_mode=mode, load=LOADS, **kwargs)
    sync = gym.vector.SyncVectorEnv(
        [lambda load=load: gym.make(env_id, load=load, **kwargs) for load in LOADS], autoreset_mode=mode
    )
    assert native.unwrapped.loads.tolist() == LOADS
    assert [wl.load for wl in native.unwrapped.workloads] == LOADS
    ends = _compare_runs(native, sync, mode, 400, 7)
    assert ends >= (6 if env_id == "MSJ-v0" else 3)  # preemptive episodes take more steps


def test_per_env_loads_change_only_the_load() -> None:
    """Envs with one seed and different loads part ways (the load reached the job stream), and a list
    of equal loads is the scalar load."""
    venv = MSJVectorEnv(3, load=[0.7, 0.7, 0.95], **SMALL)
    scalar = MSJVectorEnv(3, load=0.7, **SMALL)
    obs, _ = venv.reset(seed=[3, 3, 3])
    obs_s, _ = scalar.reset(seed=[3, 3, 3])
    assert np.array_equal(obs[:2], obs_s[:2])
    times, times_s = [], []
    for _ in range(100):
        # a deterministic policy (the first valid action, starting a job if one fits): envs 0 and 1
        # see the same states
        masks = venv.action_masks()
        _, _, _, _, info = venv.step(np.where(masks[:, 1:].any(axis=1), masks[:, 1:].argmax(axis=1) + 1, 0))
        masks = scalar.action_masks()
        _, _, _, _, info_s = scalar.step(
            np.where(masks[:, 1:].any(axis=1), masks[:, 1:].argmax(axis=1) + 1, 0)
        )
        times.append(info["time"])
        times_s.append(info_s["time"])
    times, times_s = np.array(times), np.array(times_s)
    assert np.array_equal(times[:, :2], times_s[:, :2])
    assert np.array_equal(times[:, 0], times[:, 1]) and not np.array_equal(times[:, 0], times[:, 2])


def _uniform_load(rng: np.random.Generator) -> float:
    return rng.uniform(0.5, 0.95)


def _sampled_run(threads: int, steps: int = 300) -> tuple[list, list]:
    """A run with the sampler: per env, its episodes ``(seed, load, [(action, obs, reward, trunc,
    info)...])`` with the reset's ``(obs, info)`` first; and the whole trace."""
    n = 3
    venv = MSJVectorEnv(n, load=_uniform_load, threads=threads, **SMALL)
    obs, info = venv.reset(seed=10)
    episodes: list[list] = [[] for _ in range(n)]
    for i in range(n):
        episodes[i].append((int(info["seed"][i]), venv.loads[i], [(obs[i], _env_info(info, i))]))
    rng = np.random.default_rng(3)
    trace = [obs]
    prev_trunc = np.zeros(n, dtype=np.bool_)
    for _ in range(steps):
        actions = venv.sample_actions(rng)
        obs, reward, _, trunc, info = venv.step(actions)
        trace += [obs, reward, trunc, venv.loads]
        for i in range(n):
            if prev_trunc[i]:  # autoreset: the new episode's first observation
                assert reward[i] == 0 and info["_seed"][i]
                episodes[i].append((int(info["seed"][i]), venv.loads[i], [(obs[i], _env_info(info, i))]))
            else:
                episodes[i][-1][2].append((int(actions[i]), obs[i], reward[i], trunc[i], _env_info(info, i)))
        prev_trunc = trunc
    venv.close()
    return episodes, trace


def _env_info(info: dict, i: int) -> dict:
    return {k: v[i] for k, v in info.items() if not k.startswith("_") and info["_" + k][i]}


def _same_info(a: dict, b: dict) -> bool:
    nan_ok = {"mean_response_time"}  # NaN if no measured job left
    return set(a) == set(b) and all(np.array_equal(a[k], b[k], equal_nan=k in nan_ok) for k in b)


def test_load_sampler_draws_from_each_envs_generator_and_equals_single_envs() -> None:
    """``load=callable``: each episode's load is drawn from the env's own generator right after the
    episode's seed; a seed fixes the whole run (also with worker threads); each episode is bit for bit
    the single env made with its load and reset with its seed."""
    episodes, trace = _sampled_run(threads=1)
    again, trace2 = _sampled_run(threads=2)
    assert all(np.array_equal(x, y) for x, y in zip(trace, trace2, strict=True))
    assert [[(s, x) for s, x, _ in eps] for eps in again] == [[(s, x) for s, x, _ in eps] for eps in episodes]
    for i, eps in enumerate(episodes):
        assert len(eps) >= 3, i  # several episodes, each with its own load
        gen, _ = gym.utils.seeding.np_random(10 + i)
        for j, (seed, load, steps) in enumerate(eps):
            assert seed == (10 + i if j == 0 else int(gen.integers(2**63 - 1)))
            assert load == _uniform_load(gen)
            single = gym.make("MSJ-v0", load=load, **SMALL)
            obs, info = single.reset(seed=seed)
            assert np.array_equal(obs, steps[0][0]) and _same_info(info, steps[0][1]), (i, j)
            for t, (action, obs_v, reward_v, trunc_v, info_v) in enumerate(steps[1:]):
                obs, reward, _, trunc, info = single.step(action)
                assert np.array_equal(obs, obs_v) and reward == reward_v and trunc == trunc_v, (i, j, t)
                assert _same_info(info, info_v), (i, j, t)
    loads = {load for eps in episodes for _, load, _ in eps}
    assert len(loads) == sum(len(eps) for eps in episodes) and all(0.5 <= x < 0.95 for x in loads)


def _garbage_after_the_check():
    calls = iter([0.7])
    return lambda rng: next(calls, float("nan"))


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"load": [0.5, 0.7]}, r"load: expected num_envs=3 loads \(one per env\), got 2"),
        ({"load": [0.5, float("nan"), 0.7]}, r"load: expected a positive finite number for env 1, got nan"),
        ({"load": [0.5, 0.7, 0.0]}, r"load: .* for env 2, got 0.0"),
        ({"load": np.array([0.5, -1.0, 0.7])}, r"load: .* for env 1, got -1.0"),
        ({"load": [0.5, "0.7", 0.7]}, r"load: .* for env 1, got '0.7'"),
        ({"load": "0.7"}, r"load: expected a number, .* got '0.7'"),
        ({"load": [0.5, 0.7, 0.9], "arrival_rate": 1.0}, r"load: per-env loads exclude arrival_rate"),
        ({"load": lambda rng: "high"}, r"load: .* from the load sampler, got 'high'"),
        ({"load": lambda rng: float("inf")}, r"load: .* from the load sampler, got inf"),
        ({"load": lambda rng: None}, r"load: .* from the load sampler, got None"),
    ],
)
def test_bad_per_env_loads(kwargs: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match) as err:
        MSJVectorEnv(3, **SMALL, **kwargs)
    assert "\n" not in str(err.value)


def test_a_sampler_turning_bad_fails_the_reset_before_any_episode_starts() -> None:
    venv = MSJVectorEnv(3, load=_garbage_after_the_check(), **SMALL)
    with pytest.raises(ValueError, match=r"load: .* from the load sampler for env 0, got nan"):
        venv.reset(seed=0)
    assert not venv._started.any()
