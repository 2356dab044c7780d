"""MSJ-v0 / MSJPreemptive-v0: API checks, determinism, exact rewards, masks, bad input, vector envs,
and the equality of every baseline run through the env with its native run."""

from __future__ import annotations

import ast
import pathlib
import warnings

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import msj_gym
from msj_gym import PolicyAgent, RandomAgent, Simulator, rollout
from msj_gym.baselines import POLICIES, make_policy, supports
from msj_gym.metrics.result import default_slowdown_tau
from msj_gym.workloads import TraceWorkload


@pytest.mark.parametrize("env_id", msj_gym.ENV_IDS)
@pytest.mark.parametrize(
    "kwargs",
    [
        {"observation": "flat"},
        {"observation": "dict"},
        {"observation": "classes", "actions": "priority"},
        {"observation": "classes", "actions": "priority-shortest", "reveal_sizes": True},
    ],
)
def test_checkers_pass(env_id: str, kwargs: dict) -> None:
    env = gym.make(env_id, **kwargs)
    check_env(env.unwrapped, skip_render_check=False)
    sb3_checker = pytest.importorskip("stable_baselines3.common.env_checker")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # SB3's checker only warns: make any warning fail
        sb3_checker.check_env(env.unwrapped)


def _trajectory(env_id: str, seed: int, steps: int = 400, **kwargs):
    env = gym.make(env_id, **kwargs)
    obs, info = env.reset(seed=seed)
    rng = np.random.default_rng(123)  # the same action choices for both runs
    out = [obs]
    for _ in range(steps):
        valid = np.flatnonzero(info["action_mask"])
        obs, reward, term, trunc, info = env.step(int(valid[rng.integers(valid.size)]))
        out += [obs, reward, info["time"]]
        if term or trunc:
            obs, info = env.reset()
    return out


@pytest.mark.parametrize("env_id", msj_gym.ENV_IDS)
def test_deterministic_for_a_seed(env_id: str) -> None:
    a, b = _trajectory(env_id, 7), _trajectory(env_id, 7)
    assert all(np.array_equal(x, y) for x, y in zip(a, b, strict=True))
    c = _trajectory(env_id, 8)
    assert not all(np.array_equal(x, y) for x, y in zip(a, c, strict=True))


# --- every baseline through the env equals its native run ----------------------------------------------
WINDOWS = {"queue_window": 64, "preempt_window": 64}
# First-Fit SRPT picks the shortest jobs of a class wherever they wait: its window must span the queue
DEEP_WINDOWS = {"first-fit-srpt": {"queue_window": 4096, "preempt_window": 64}}


@pytest.mark.parametrize("policy_id", sorted(POLICIES))
@pytest.mark.parametrize(("scenario", "load"), [("sf-fig2", 0.7), ("four-class", 0.8)])
def test_policy_agent_equals_native_run(policy_id: str, scenario: str, load: float) -> None:
    env_id = "MSJPreemptive-v0" if POLICIES[policy_id].preemptive else "MSJ-v0"
    windows = DEEP_WINDOWS.get(policy_id, WINDOWS)
    env = gym.make(env_id, scenario=scenario, load=load, num_arrivals=2000, warmup=200, **windows)
    if supports(policy_id, env.unwrapped.workload) is not None:
        pytest.skip(f"{policy_id} is not defined on {scenario}")
    through_env = rollout(env, PolicyAgent(policy_id, env), seed=11).to_dict()
    native = (
        Simulator(
            env.unwrapped.workload,
            make_policy(policy_id),
            seed=11,
            num_arrivals=2000,
            warmup=200,
            max_arrivals=2 * 2000 + 2,
            record_jobs=False,  # as the env: no per-job records, no percentiles
        )
        .run()
        .to_dict()
    )
    for key in ("provenance", "policy_metrics"):  # who ran it; the policy's own extras (native only)
        through_env.pop(key), native.pop(key)
    assert through_env == native
    assert native["mean_response_time"] is not None and native["mean_response_time"] > 0


def test_policy_agent_equals_native_in_horizon_mode() -> None:
    env = gym.make("MSJ-v0", scenario="four-class", load=0.8, horizon=300.0, warmup_time=30.0)
    wl = env.unwrapped.workload
    a = rollout(env, PolicyAgent("first-fit", env), seed=3).to_dict()
    b = (
        Simulator(
            wl,
            make_policy("first-fit"),
            seed=3,
            horizon=300.0,
            warmup_time=30.0,
            max_arrivals=2 * int(wl.arrival_rate * 300.0) + 2,
            record_jobs=False,  # as the env: no per-job records, no percentiles
        )
        .run()
        .to_dict()
    )
    a.pop("provenance"), b.pop("provenance")
    assert a == b


def test_policy_agent_reports_a_job_outside_the_window() -> None:
    env = gym.make("MSJ-v0", scenario="four-class", load=0.95, num_arrivals=3000, queue_window=1)
    with pytest.raises(ValueError, match="queue_window"):
        rollout(env, PolicyAgent("easy-backfilling", env), seed=1)


def test_preemptive_policy_needs_the_preemptive_env() -> None:
    with pytest.raises(ValueError, match="MSJPreemptive-v0"):
        PolicyAgent("server-filling", gym.make("MSJ-v0"))


# --- rewards ---------------------------------------------------------------------------------------------
def _hand_trace() -> TraceWorkload:
    # k=2. FCFS: job0 [0,3); job1 (need 2) waits from 1 and runs [3,5); job2 waits from 2, runs [5,6).
    return TraceWorkload(2, [0.0, 1.0, 2.0], [1, 2, 1], [3.0, 2.0, 1.0])


@pytest.mark.parametrize(
    ("weighted", "reward", "expected"),
    [
        (False, "integral", -11.0),  # responses 3 + 4 + 4
        (False, "mean", -11.0 / 3),
        # load shares 1/2, 1/2 over arrival shares 2/3, 1/3: weights 0.75 (need 1) and 1.5 (need 2)
        (True, "integral", -(0.75 * (3 + 4) + 1.5 * 4)),
    ],
)
def test_return_is_minus_time_in_system(weighted: bool, reward: str, expected: float) -> None:
    env = gym.make(
        "MSJ-v0", scenario=_hand_trace(), num_arrivals=3, warmup=0, weighted=weighted, reward=reward
    )
    agent = PolicyAgent("fcfs", env)
    obs, info = env.reset(seed=0)
    total, done, times = 0.0, False, [info["time"]]
    while not done:
        obs, r, term, trunc, info = env.step(agent.predict(obs)[0])
        total += r
        times.append(info["time"])
        assert not term
        done = trunc
    assert total == pytest.approx(expected, rel=1e-12)
    assert env.unwrapped.result().mean_response_time == pytest.approx(11.0 / 3)
    assert times[-1] == 6.0


@pytest.mark.parametrize(
    ("reward", "expected"),
    [
        # tau 1.5: job0 3 / 3, job1 4 / 2, job2 4 / max(1, 1.5)
        ("slowdown", -(1.0 + 2.0 + 4.0 / 1.5)),
        ("waiting", -(0.0 + 2.0 + 3.0)),
    ],
)
def test_hpc_rewards_pay_each_job_at_its_departure(reward: str, expected: float) -> None:
    env = gym.make(
        "MSJ-v0", scenario=_hand_trace(), num_arrivals=3, warmup=0, reward=reward, slowdown_tau=1.5
    )
    agent = PolicyAgent("fcfs", env)
    obs, info = env.reset(seed=0)
    rewards, done = [], False
    while not done:
        obs, r, _, done, info = env.step(agent.predict(obs)[0])
        rewards.append((info["time"], r))
    assert sum(r for _, r in rewards) == pytest.approx(expected, rel=1e-12)
    # nothing is paid before the first departure (t = 3), unlike the time integral
    assert all(r == 0.0 for t, r in rewards if t < 3.0)
    res = env.unwrapped.result()
    assert res.slowdown_tau == 1.5 and res.mean_bounded_slowdown == pytest.approx((3 + 4 / 1.5) / 3)


@pytest.mark.parametrize(
    ("env_id", "policy_id", "kwargs"),
    [
        ("MSJ-v0", "first-fit", {"num_arrivals": 800, "warmup": 80}),
        ("MSJ-v0", "msf", {"num_arrivals": 600, "warmup": 60, "slowdown_tau": 0.35}),
        ("MSJ-v0", "first-fit", {"horizon": 120.0, "warmup_time": 15.0}),
        ("MSJPreemptive-v0", "server-filling", {"num_arrivals": 600, "warmup": 60, "preempt_window": 64}),
    ],
)
@pytest.mark.parametrize("reward", ["slowdown", "waiting"])
def test_hpc_return_is_minus_the_measured_metric(
    env_id: str, policy_id: str, kwargs: dict, reward: str
) -> None:
    """The return is minus the sum of the measured jobs' bounded slowdowns (waiting times): the
    result's mean times its measured jobs, the warm-up jobs left out; the result is the native run's."""
    env = gym.make(env_id, scenario="four-class", load=0.85, queue_window=64, reward=reward, **kwargs)
    total = 0.0
    agent = PolicyAgent(policy_id, env)
    obs, _ = env.reset(seed=4)
    done = False
    while not done:
        obs, r, _, done, _ = env.step(agent.predict(obs)[0])
        total += r
    res = env.unwrapped.result()
    mean = res.mean_bounded_slowdown if reward == "slowdown" else res.mean_waiting_time
    assert res.num_measured > 100 and mean > 0
    assert -total == pytest.approx(mean * res.num_measured, rel=1e-9)
    tau = kwargs.get("slowdown_tau")
    wl = env.unwrapped.workload
    horizon = {k: kwargs[k] for k in ("horizon", "warmup_time") if k in kwargs}
    length = horizon or {k: kwargs[k] for k in ("num_arrivals", "warmup")}
    cap = 2 * int(wl.arrival_rate * horizon["horizon"] if horizon else kwargs["num_arrivals"]) + 2
    native = Simulator(
        wl, make_policy(policy_id), seed=4, max_arrivals=cap, record_jobs=False, slowdown_tau=tau, **length
    ).run()
    assert native.mean_bounded_slowdown == res.mean_bounded_slowdown
    assert native.mean_waiting_time == res.mean_waiting_time
    assert native.slowdown_tau == res.slowdown_tau == (tau if tau is not None else default_slowdown_tau(wl))


def test_default_reward_is_unchanged_by_slowdown_tau() -> None:
    """tau changes the result's slowdown, never the default reward nor the run."""
    runs = []
    for tau in (None, 2.5):
        env = gym.make("MSJ-v0", scenario="four-class", load=0.85, num_arrivals=300, slowdown_tau=tau)
        agent = PolicyAgent("msf", env)
        obs, _ = env.reset(seed=2)
        rewards, done = [], False
        while not done:
            obs, r, _, done, _ = env.step(agent.predict(obs)[0])
            rewards.append(r)
        runs.append((rewards, env.unwrapped.result()))
    assert runs[0][0] == runs[1][0]
    assert runs[0][1].mean_response_time == runs[1][1].mean_response_time
    assert runs[1][1].slowdown_tau == 2.5 != runs[0][1].slowdown_tau


def test_decision_epochs_only_where_a_job_fits() -> None:
    env = gym.make("MSJ-v0", scenario=_hand_trace(), num_arrivals=3, warmup=0)
    _, info = env.reset(seed=0)
    assert info["time"] == 0.0 and info["action_mask"].tolist() == [True, True, False]
    _, r, _, _, info = env.step(1)  # start job0: nothing else waits, so on to t=1
    # t=1: job1 (need 2) waits, one server idle: no decision; t=2: job2 (need 1) fits
    assert info["time"] == 2.0 and info["elapsed_time"] == 2.0 and r == -(1 * 1 + 2 * 1)
    assert info["action_mask"].tolist() == [True, True, False]
    _, r, _, _, info = env.step(1)  # start job2 (First-Fit style)
    # nothing fits after that (job1 needs 2), so the env runs on to t=3, when job0 and job2 end
    assert info["time"] == 3.0 and r == -3.0
    # all idle, no arrival to come: waiting would lead nowhere, so only starting job1 is valid
    assert info["action_mask"].tolist() == [False, False, True]


def test_invalid_action_is_a_counted_wait() -> None:
    env = gym.make("MSJ-v0", scenario=_hand_trace(), num_arrivals=3, warmup=0)
    twin = gym.make("MSJ-v0", scenario=_hand_trace(), num_arrivals=3, warmup=0)
    env.reset(seed=0), twin.reset(seed=0)
    env.step(1), twin.step(1)
    o1, r1, _, _, i1 = env.step(2)  # class 1 (need 2) cannot start: masked out
    o2, r2, _, _, i2 = twin.step(0)
    assert i1["invalid_action"] and i1["invalid_actions"] == 1 and not i2["invalid_action"]
    assert np.array_equal(o1, o2) and r1 == r2 and i1["time"] == i2["time"]


@pytest.mark.parametrize("bad", [1.5, "1", None, True, np.array([1, 0]), np.array(1.0), -1, 3, [1]])
def test_bad_actions_raise(bad) -> None:
    env = gym.make("MSJ-v0")
    env.reset(seed=0)
    with pytest.raises(ValueError, match="action: expected an integer in"):
        env.step(bad)


def test_numpy_integer_actions_are_accepted() -> None:
    env = gym.make("MSJ-v0")
    env.reset(seed=0)
    env.step(np.int64(0))
    env.step(np.array(0))


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"scenario": "no-such"}, "no-such"),
        ({"queue_window": 0}, "queue_window"),
        ({"observation": "pixels"}, "observation"),
        ({"reward": "profit"}, "reward"),
        ({"reward": "slowdwn"}, "reward: expected 'integral', 'mean', 'slowdown' or 'waiting', got 'slo"),
        ({"slowdown_tau": 0}, "slowdown_tau: expected a positive finite time .*got 0$"),
        ({"slowdown_tau": -1.0}, "slowdown_tau: .*got -1.0$"),
        ({"slowdown_tau": float("nan")}, "slowdown_tau: .*got nan$"),
        ({"slowdown_tau": True}, "slowdown_tau: .*got True$"),
        ({"slowdown_tau": "10"}, "slowdown_tau: .*got '10'$"),
        ({"reward": "slowdown", "weighted": True}, "weighted: .*weighted=True with reward='slowdown'"),
        ({"load": -0.5}, "load"),
        ({"num_servers": 0}, "num_servers"),
        ({"num_arrivals": 1}, "num_arrivals"),
        ({"horizon": -3.0}, "horizon"),
        ({"horizon": 10.0, "warmup_time": 10.0}, "warmup_time"),
        ({"num_arrivals": 100, "warmup": 99}, "warmup"),
        ({"max_arrivals": 0}, "max_arrivals"),
        ({"warm_start": "server-filling"}, "warm_start"),
        ({"render_mode": "movie"}, "render_mode"),
        ({"weighted": "yes"}, "weighted"),
        ({"max_classes": 0}, "max_classes"),
        ({"scenario": "four-class", "max_classes": 3}, "max_classes: the workload has 4 classes"),
        ({"observation": "classes", "obs_jobs": 4}, "obs_jobs: observation='classes' shows no single jobs"),
    ],
)
def test_bad_keywords_raise_at_make(kwargs, match) -> None:
    with pytest.raises(ValueError, match=match):
        gym.make("MSJ-v0", **kwargs)


def test_unknown_keyword_lists_the_known_ones() -> None:
    """Python's own wording (wrappers such as TorchRL's retry without an argument on it), then the
    known keywords."""
    with pytest.raises(TypeError, match=r"unexpected keyword argument 'queue_windw'; known: .*queue_window"):
        gym.make("MSJ-v0", queue_windw=2)


def test_bad_reset_arguments() -> None:
    env = gym.make("MSJ-v0")
    with pytest.raises(ValueError, match="seed"):
        env.reset(seed=-1)
    with pytest.raises(ValueError, match="options"):
        env.reset(seed=0, options={"load": 0.5})


# --- episodes, observations ------------------------------------------------------------------------------
def test_episode_truncates_and_reports_the_result() -> None:
    env = gym.make("MSJ-v0", num_arrivals=300)
    agent = PolicyAgent("msf", env)
    obs, info = env.reset(seed=2)
    steps, trunc = 0, False
    while not trunc:
        obs, _, term, trunc, info = env.step(agent.predict(obs)[0])
        assert not term
        steps += 1
    assert info["stable"] in (True, False) and info["mean_response_time"] > 0
    assert env.unwrapped.result().num_measured == 300
    with pytest.raises(RuntimeError, match="reset"):
        env.step(0)


def test_a_lazy_agent_ends_at_the_arrival_cap() -> None:
    env = gym.make("MSJ-v0", num_arrivals=200)
    env.reset(seed=0)
    trunc, steps = False, 0
    while not trunc:
        _, _, _, trunc, info = env.step(0)
        steps += 1
    assert steps <= 2 * 200 + 2 and not info["stable"]


def test_dict_observation_is_the_flat_one_split() -> None:
    flat = gym.make("MSJPreemptive-v0", reveal_sizes=True)
    dic = gym.make("MSJPreemptive-v0", reveal_sizes=True, observation="dict")
    o1, _ = flat.reset(seed=4)
    o2, _ = dic.reset(seed=4)
    for _ in range(50):
        assert np.array_equal(o1, np.concatenate([o2[k] for k in ("system", "classes", "queue", "running")]))
        o1, *_ = flat.step(1)
        o2, *_ = dic.step(1)
    assert dic.observation_space.contains(o2)


def test_observation_features_match_the_state() -> None:
    env = gym.make("MSJ-v0", scenario=_hand_trace(), num_arrivals=3, warmup=0, obs_jobs=2)
    env.reset(seed=0)
    obs, *_ = env.step(1)  # start job0; next decision at t=2: job1 (need 2, age 1), job2 (need 1, age 0)
    k = 2
    assert obs[0] == 1 / k  # one idle server
    cls1 = obs[2 + 5 : 2 + 10]  # class 1 = need 2
    assert cls1[0] == 1.0 and cls1[2] == 0.0 and cls1[4] == 0.0  # need/k, holds nothing, does not fit
    squash = np.log1p(0.5) / (1 + np.log1p(0.5))  # squash of age 1 / mean 2
    assert cls1[3] == pytest.approx(squash)
    queue = obs[12:20].reshape(2, 4)
    assert queue[0].tolist() == [1.0, 1.0, pytest.approx(squash), 0.0]  # oldest: job1
    assert queue[1][0] == 1.0 and queue[1][1] == 0.5 and queue[1][3] == 1.0  # job2 fits


def test_warm_start_hands_over_a_loaded_system() -> None:
    env = gym.make("MSJ-v0", warm_start="msf", warm_start_arrivals=500, num_arrivals=300)
    _, info = env.reset(seed=1)
    assert info["time"] > 0 and info["jobs_in_system"] > 0
    result = rollout(env, PolicyAgent("first-fit", env), seed=1)
    assert result.num_measured == 300


def test_preempt_actions_preempt_the_youngest_running_job() -> None:
    env = gym.make("MSJPreemptive-v0", scenario=_hand_trace(), num_arrivals=3, warmup=0)
    env.reset(seed=0)
    _, _, _, _, info = env.step(1)  # start job0; at t=2 job1 and job2 wait, job0 runs
    n_q = 1 + 2 * 1
    assert info["action_mask"][n_q] and not info["action_mask"][n_q + 1]  # class 0: one running job
    env.step(n_q)  # preempt job0 (the youngest running need-1 job)
    core = env.unwrapped.core
    assert core.sim.iv[msj_gym.core.state.I_PREEMPTIONS] == 1 and core.sim.iv[msj_gym.core.state.I_FREE] == 2


# --- vector envs -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("mode", ["sync", "async"])
def test_gymnasium_vector_envs(mode: str) -> None:
    fns = [lambda: gym.make("MSJ-v0", num_arrivals=50)] * 2
    venv = gym.vector.SyncVectorEnv(fns) if mode == "sync" else gym.vector.AsyncVectorEnv(fns)
    obs, info = venv.reset(seed=[1, 2])
    rng = np.random.default_rng(0)
    for _ in range(300):  # spans several autoresets
        u = rng.random(info["action_mask"].shape) * info["action_mask"]
        obs, _, term, _, info = venv.step(u.argmax(axis=1))
        assert obs.shape == (2, *venv.single_observation_space.shape) and not term.any()
    venv.close()


def test_random_agent_only_takes_valid_actions() -> None:
    env = gym.make("MSJPreemptive-v0", num_arrivals=200)
    agent = RandomAgent(env, seed=0)
    obs, info = env.reset(seed=0)
    for _ in range(500):
        obs, _, _, trunc, info = env.step(agent.predict(obs)[0])
        assert not info["invalid_action"]
        if trunc:
            obs, info = env.reset()


def test_core_does_not_import_gymnasium() -> None:
    core = pathlib.Path(msj_gym.__file__).parent / "core"
    for path in core.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            else:
                continue
            assert not any(n.split(".")[0] in ("gymnasium", "gym") for n in names), path.name


@pytest.mark.parametrize("vec", ["dummy", "subproc"])
def test_sb3_vec_envs_with_masks(vec: str) -> None:
    env_util = pytest.importorskip("stable_baselines3.common.env_util")
    from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv

    cls = DummyVecEnv if vec == "dummy" else SubprocVecEnv
    # "module:id" makes a worker process import msj_gym (which registers the ids) before gym.make
    venv = env_util.make_vec_env(
        "msj_gym:MSJ-v0", n_envs=2, seed=3, env_kwargs={"num_arrivals": 50}, vec_env_cls=cls
    )
    venv.reset()
    rng = np.random.default_rng(0)
    for _ in range(200):
        masks = np.stack(venv.env_method("action_masks"))
        actions = (rng.random(masks.shape) * masks).argmax(axis=1)
        _, _, _, infos = venv.step(actions)
        assert not any(info["invalid_action"] for info in infos)
    venv.close()


def test_an_episode_of_an_agent_that_only_waits_ends_unstable_with_a_lower_bound_not_nan() -> None:
    """An agent that only waits: the episode ends at the arrival cap with every measured job still
    waiting; each counts with its time in the system so far, so the info and the result give a finite
    lower bound of the mean response time (all of it waiting), never NaN, and stable False, in the
    single env and in the vector env alike."""
    env = gym.make("MSJ-v0", num_arrivals=100)
    env.reset(seed=0)
    over = False
    while not over:
        _, _, _, over, info = env.step(0)
    result = env.unwrapped.result()
    assert info["measured_jobs"] == result.num_measured == 100 and not info["stable"] and not result.stable
    assert info["mean_response_time"] == result.mean_response_time == result.mean_waiting_time
    assert np.isfinite(result.mean_response_time) and result.mean_response_time > 0
    assert "100 of the 100 measured jobs had not left" in result.stability_note
    venv = gym.make_vec("MSJ-v0", num_envs=2, num_arrivals=100, autoreset_mode="Disabled")
    venv.reset(seed=[0, 1])
    done = np.zeros(2, dtype=bool)
    while not done.all():
        _, _, _, trunc, info = venv.step(np.zeros(2, dtype=np.int64))
        done |= trunc
    assert (info["measured_jobs"] == 100).all() and not info["stable"].any()
    assert info["mean_response_time"][0] == result.mean_response_time  # seed 0, as the single env
    assert venv.unwrapped.result(1).mean_response_time == info["mean_response_time"][1]


def test_a_policy_that_starves_a_class_is_flagged_and_its_mean_counts_the_starved_jobs() -> None:
    """sf-fig2: an agent that starts only the need-1 jobs never serves a need-8 job. Its episode ends
    at the arrival cap with them waiting: result(), summary() and the last info say unstable, and the
    mean response time, which counts each waiting job with its time so far, is far above a stable
    policy's (MSF) on the same jobs, not the small mean of the need-1 jobs it served."""

    def episode(make_agent) -> tuple[dict, msj_gym.SimulationResult]:
        env = gym.make("MSJ-v0", num_arrivals=2000)
        act = make_agent(env)
        obs, info = env.reset(seed=0)
        over = False
        while not over:
            obs, _, _, over, info = env.step(act(obs, info))
        return info, env.unwrapped.result()

    def follow_msf(env):
        msf = PolicyAgent("msf", env)
        return lambda obs, info: msf.predict(obs)[0]

    info, starved = episode(lambda env: lambda obs, info: 1 if info["action_mask"][1] else 0)
    _, stable = episode(follow_msf)
    assert stable.stable and not starved.stable and not info["stable"]
    assert starved.summary().startswith("UNSTABLE") and "had not left" in starved.stability_note
    assert info["mean_response_time"] == starved.mean_response_time
    assert info["measured_jobs"] == starved.num_measured == stable.num_measured == 2000
    served, waited = starved.per_class["need-1"], starved.per_class["need-8"]
    assert served.mean_response_time < stable.mean_response_time  # all that the departures show
    assert starved.mean_response_time > 10 * stable.mean_response_time
    assert waited.count == stable.per_class["need-8"].count and waited.p_wait == 1.0
