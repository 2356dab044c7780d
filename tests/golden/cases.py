"""The golden cases: small seeded runs of every policy, natively, through the Gymnasium envs and through
the native vector envs, reduced to JSON-ready records whose floats are written with ``float.hex`` so that
a comparison is bit for bit.

Shared by ``make_golden.py`` (which writes ``golden_results.json``) and ``test_golden.py`` (which
recomputes every case and compares), so the two cannot drift. Each case is a name and a function of no
arguments; all randomness comes from the seeds below.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np

import msj_gym  # noqa: F401  (registers the env ids)
from msj_gym import PolicyAgent, Simulator
from msj_gym.baselines import MOLDABLE_POLICIES, list_policies, make_policy, supports
from msj_gym.env import COMPAT_ENV_ID, MOLDABLE_ENV_ID, DrawnAssignmentAgent, MoldablePolicyAgent, planning
from msj_gym.moldable import simulate_moldable
from msj_gym.pooled import PooledSimulator
from msj_gym.workloads.compat import build_compat_scenario
from msj_gym.workloads.scenarios import load_scenario
from msj_gym.workloads.trace import TraceWorkload

Record = dict[str, Any]

SEED = 7
NUM_ARRIVALS = 3000
ENV_ARRIVALS = 1500  # episodes through the env step once per action: keep them shorter
VEC_STEPS = 2000
# The MSJ workloads of the native cases: (scenario, build kwargs). four-class has k = 15 and four classes.
MSJ_WORKLOADS: dict[str, tuple[str, dict[str, Any]]] = {
    "sf-fig2@0.6": ("sf-fig2", {"load": 0.6}),
    "four-class@0.8": ("four-class", {"load": 0.8}),
    "one-or-all-k8@0.8": ("one-or-all", {"num_servers": 8, "load": 0.8}),  # where the quickswaps are defined
}
COMPAT_WORKLOAD = ("003-random-3", 0.6)  # 100 servers, each job on 3 drawn ones (Bonald & Comte (2017))
# the env needs windows wide enough for every decision a policy makes (see tests/env/test_env.py)
WINDOWS = {"queue_window": 64, "preempt_window": 64}
ENV_POLICIES = ("fcfs", "first-fit", "msf", "easy-backfilling", "msfq", "nmsr")
PREEMPTIVE_ENV_POLICIES = ("server-filling", "server-filling-srpt")
DEBUG_POLICIES = ("fcfs", "first-fit", "msf", "server-filling", "server-filling-srpt", "msfq")
# The HPC heuristics on a trace with requested times (they are not defined on the synthetic workloads),
# EASY backfilling driven by those requested times, and the self-tuning schedulers.
HPC_POLICIES = {
    **{pid: {} for pid in ("sjf", "wfp3", "unicep", "f1", "sjf-easy", "wfp3-easy", "unicep-easy", "f1-easy")},
    "easy-backfilling": {"estimates": "requested"},
    "self-tuning": {},
    "self-tuning-easy": {},
}


# --- encoding ---------------------------------------------------------------------------------------------
def encode(x: Any) -> Any:
    """``x`` JSON-ready with every float as its ``float.hex`` string: exact, NaN and inf included."""
    if isinstance(x, bool | np.bool_):
        return bool(x)
    if isinstance(x, float | np.floating):
        return float(x).hex()
    if isinstance(x, int | np.integer):
        return int(x)
    if isinstance(x, np.ndarray):
        return encode(x.tolist())
    if isinstance(x, dict):
        return {str(k): encode(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [encode(v) for v in x]
    if x is None or isinstance(x, str):
        return x
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        return encode(dataclasses.asdict(x))
    raise TypeError(f"cannot encode {type(x).__name__}")


def result_record(result: Any) -> Record:
    """A result's metrics without its provenance (the workload's and policy's description and the package
    version: not simulation output, and free to change in a refactor)."""
    d = dataclasses.asdict(result)
    d.pop("provenance", None)
    return encode(d)


def obs_digest(obs: Any) -> str:
    """sha256 of an observation's bytes (a dict observation: its keys in sorted order)."""
    h = hashlib.sha256()
    parts = [obs[k] for k in sorted(obs)] if isinstance(obs, dict) else [obs]
    for part in parts:
        a = np.ascontiguousarray(part)
        h.update(str(a.dtype).encode() + str(a.shape).encode() + a.tobytes())
    return h.hexdigest()


# --- native runs -----------------------------------------------------------------------------------------
def _msj_workload(key: str) -> Any:
    name, kwargs = MSJ_WORKLOADS[key]
    return load_scenario(name).build(**kwargs)


def _native(wl_key: str, pid: str, debug: bool = False) -> Record:
    wl = _msj_workload(wl_key)
    reason = supports(pid, wl)
    if reason is not None:  # e.g. a compatibility-model policy on an MSJ workload
        return {"skipped": reason}
    sim = Simulator(wl, make_policy(pid), num_arrivals=NUM_ARRIVALS, seed=SEED, debug=debug)
    return result_record(sim.run())


def _hpc_trace() -> TraceWorkload:
    """A seeded trace of HPC-like jobs on 64 servers (log-normal run times, requests 1 to 4 times the
    run, rounded up to whole seconds), at a load near 0.9."""
    rng = np.random.default_rng(SEED)
    n = NUM_ARRIVALS
    arrival = np.cumsum(rng.exponential(12.0, n))
    need = rng.choice(np.array([1, 2, 4, 8, 16, 32]), n)
    run = rng.lognormal(3.0, 1.5, n) + 1.0
    requested = np.ceil(run * (1.0 + 3.0 * rng.random(n)))
    return TraceWorkload(64, arrival, need, run, requested_time=requested, name="hpc-golden")


def _hpc_native(pid: str, params: dict[str, Any]) -> Record:
    sim = Simulator(_hpc_trace(), make_policy(pid, **params), num_arrivals=NUM_ARRIVALS, seed=SEED)
    return result_record(sim.run())


def _compat_workload() -> Any:
    name, load = COMPAT_WORKLOAD
    return build_compat_scenario(name, load=load)


def _compat_native(pid: str, params: dict[str, Any], debug: bool = False) -> Record:
    wl = _compat_workload()
    reason = supports(pid, wl)
    if reason is not None:
        return {"skipped": reason}
    sim = PooledSimulator(wl, make_policy(pid, **params), num_arrivals=NUM_ARRIVALS, seed=SEED, debug=debug)
    return result_record(sim.run())


def _moldable_system(kind: str) -> Any:
    # the env builds the system from its arguments exactly as a user would
    kwargs: dict[str, Any] = {"num_servers": 30} if kind == "single" else {"num_servers": 40}
    return gym.make(MOLDABLE_ENV_ID, num_arrivals=10, **kwargs).unwrapped.system


def _moldable_native(kind: str, pid: str) -> Record:
    try:
        res = simulate_moldable(_moldable_system(kind), pid, seed=SEED, num_arrivals=NUM_ARRIVALS)
    except ValueError as exc:  # a scheme not defined at that load
        return {"skipped": str(exc)}
    return result_record(res)


# --- through the envs ------------------------------------------------------------------------------------
def _episode(env: Any, act: Callable[[Any, dict[str, Any]], Any], seed: int) -> Record:
    """One episode from ``reset(seed=seed)``: the total reward, the steps, the final info and result."""
    obs, info = env.reset(seed=seed)
    total, steps, done = 0.0, 0, False
    while not done:
        obs, reward, terminated, truncated, info = env.step(act(obs, info))
        total += float(reward)
        steps += 1
        done = terminated or truncated
    return {
        "total_reward": encode(total),
        "steps": steps,
        "final_obs_sha256": obs_digest(obs),
        "final_info": encode(info),
        "result": result_record(env.unwrapped.result()),
    }


def _env_policy(env_id: str, pid: str, scenario: str, load: float) -> Record:
    env = gym.make(env_id, scenario=scenario, load=load, num_arrivals=ENV_ARRIVALS, **WINDOWS)
    reason = supports(pid, env.unwrapped.workload)
    if reason is not None:
        return {"skipped": reason}
    agent = PolicyAgent(pid, env)
    out = _episode(env, lambda obs, info: agent.predict(obs, deterministic=True)[0], seed=SEED)
    env.close()
    return out


def _env_random(env_id: str, scenario: str = "four-class", load: float = 0.8, **kwargs: Any) -> Record:
    """Uniformly random valid actions (seeded numpy Generator) through a single env (job actions with
    the wide windows, or the env keywords ``kwargs``, e.g. priority actions)."""
    kwargs = kwargs or WINDOWS
    env = gym.make(env_id, scenario=scenario, load=load, num_arrivals=500, **kwargs)
    rng = np.random.default_rng(0)

    def act(obs: Any, info: dict[str, Any]) -> int:
        valid = np.flatnonzero(info["action_mask"])
        return int(valid[rng.integers(valid.size)])

    out = _episode(env, act, seed=SEED)
    env.close()
    return out


def _vector(env_id: str, observation: str, **kwargs: Any) -> Record:
    """The native vector env stepped with uniformly random valid actions, over several autoresets (job
    actions with the wide windows, or the env keywords ``kwargs``)."""
    kwargs = kwargs or WINDOWS
    venv = gym.make_vec(
        env_id, num_envs=4, scenario="sf-fig2", load=0.7, num_arrivals=200, observation=observation, **kwargs
    )
    obs, info = venv.reset(seed=[3, 4, 5, 3])  # envs 0 and 3 share a seed: they must stay equal
    rng = np.random.default_rng(0)
    rewards = np.zeros(venv.num_envs)
    ends = np.zeros(venv.num_envs, dtype=np.int64)
    digest = hashlib.sha256()  # of every observation on the way, not only the last
    for _ in range(VEC_STEPS):
        mask = info["action_mask"]
        actions = np.array([np.flatnonzero(m)[rng.integers(int(m.sum()))] for m in mask], dtype=np.int64)
        obs, reward, terminated, truncated, info = venv.step(actions)
        rewards += reward  # one float64 addition per step, in step order
        ends += terminated | truncated
        digest.update(obs_digest(obs).encode())
    out = {
        "reward_sums": encode(rewards),
        "episode_ends": encode(ends),
        "final_obs_sha256": obs_digest(obs),
        "all_obs_sha256": digest.hexdigest(),
        "results": [result_record(venv.unwrapped.result(i)) for i in range(venv.num_envs)],
    }
    venv.close()
    return out


def _play_out(pid: str, random_steps: int) -> Record:
    """``MSJEnv.play_out`` from the start, or from a state reached by seeded random actions."""
    env = gym.make("MSJ-v0", scenario="sf-fig2", load=0.7, num_arrivals=400, queue_window=64).unwrapped
    env.reset(seed=5)
    rng = np.random.default_rng(4)
    paid = 0.0
    for _ in range(random_steps):
        valid = np.flatnonzero(env.action_masks())
        _, reward, _, truncated, _ = env.step(int(valid[rng.integers(valid.size)]))
        paid += float(reward)
        if truncated:
            break
    out = {"random_part": encode(paid), "play_out": encode(planning.play_out(env, pid))}
    out["result"] = result_record(env.result())
    return out


def _compat_env(scheduler: str, m: float) -> Record:
    env = gym.make(
        COMPAT_ENV_ID, scenario="003-random-3", load=0.6, num_arrivals=600, scheduler=scheduler, m=m
    )
    agent = DrawnAssignmentAgent(env)
    out = _episode(env, lambda obs, info: agent.predict(obs)[0], seed=SEED)
    env.close()
    return out


def _moldable_env(kind: str, pid: str) -> Record:
    kwargs: dict[str, Any] = {"num_servers": 30} if kind == "single" else {"num_servers": 40}
    env = gym.make(MOLDABLE_ENV_ID, num_arrivals=NUM_ARRIVALS, **kwargs)
    agent = MoldablePolicyAgent(pid, env)
    out = _episode(env, lambda obs, info: agent.predict(obs)[0], seed=SEED)
    env.close()
    return out


# --- the registry of cases -------------------------------------------------------------------------------
def all_cases() -> dict[str, Callable[[], Record]]:
    """Every case by name. A case whose policy is not defined on its workload records why (``skipped``),
    so that a policy becoming defined (or undefined) there also shows as a change."""
    cases: dict[str, Callable[[], Record]] = {}
    policies = sorted(list_policies())
    for wl_key in MSJ_WORKLOADS:
        for pid in policies:
            cases[f"native/{wl_key}/{pid}"] = lambda w=wl_key, p=pid: _native(w, p)
    compat = f"{COMPAT_WORKLOAD[0]}@{COMPAT_WORKLOAD[1]}"
    for pid in policies:
        cases[f"native-compat/{compat}/{pid}"] = lambda p=pid: _compat_native(p, {})
    cases[f"native-compat/{compat}/balanced-fair(m=1)"] = lambda: _compat_native("balanced-fair", {"m": 1.0})
    for kind in ("single", "default-40"):
        for pid in sorted(MOLDABLE_POLICIES):
            cases[f"native-moldable/{kind}/{pid}"] = lambda k=kind, p=pid: _moldable_native(k, p)
    for pid in DEBUG_POLICIES:
        cases[f"debug/sf-fig2@0.6/{pid}"] = lambda p=pid: _native("sf-fig2@0.6", p, debug=True)
    for pid, params in HPC_POLICIES.items():
        cases[f"native-trace/hpc/{pid}"] = lambda p=pid, x=params: _hpc_native(p, x)
    cases[f"debug-compat/{compat}/balanced-fair"] = lambda: _compat_native("balanced-fair", {}, debug=True)
    cases[f"debug-compat/{compat}/fcfs"] = lambda: _compat_native("compat-fcfs", {}, debug=True)
    for scenario, load in (("sf-fig2", 0.7), ("four-class", 0.8)):
        for pid in ENV_POLICIES:
            cases[f"env/MSJ-v0/{scenario}@{load}/{pid}"] = lambda s=scenario, x=load, p=pid: _env_policy(
                "MSJ-v0", p, s, x
            )
        for pid in PREEMPTIVE_ENV_POLICIES:
            cases[f"env/MSJPreemptive-v0/{scenario}@{load}/{pid}"] = lambda s=scenario, x=load, p=pid: (
                _env_policy("MSJPreemptive-v0", p, s, x)
            )
    for env_id in ("MSJ-v0", "MSJPreemptive-v0"):
        cases[f"env-random/{env_id}/four-class@0.8"] = lambda e=env_id: _env_random(e)
        for actions in ("priority", "priority-shortest"):
            for scenario, load in (("sf-fig2", 0.7), ("four-class", 0.8)):
                cases[f"env-random/{env_id}/{scenario}@{load}/{actions}"] = (
                    lambda e=env_id, s=scenario, x=load, a=actions: _env_random(e, s, x, actions=a)
                )
        for observation in ("flat", "dict"):
            cases[f"vector/{env_id}/{observation}"] = lambda e=env_id, o=observation: _vector(e, o)
        cases[f"vector/{env_id}/classes/priority"] = lambda e=env_id: _vector(
            e, "classes", actions="priority"
        )
        cases[f"vector/{env_id}/classes/priority-shortest"] = lambda e=env_id: _vector(
            e, "classes", actions="priority-shortest", reveal_sizes=True
        )
    for pid, steps in (("msf", 0), ("msf", 80), ("first-fit", 80), ("easy-backfilling", 80)):
        cases[f"play_out/{pid}/after-{steps}-random-steps"] = lambda p=pid, n=steps: _play_out(p, n)
    for scheduler, m in (("fcfs", 5.0), ("balanced-fair", 1.0)):
        cases[f"env-compat/{scheduler}(m={m:g})"] = lambda s=scheduler, x=m: _compat_env(s, x)
    for kind in ("single", "default-40"):
        for pid in sorted(MOLDABLE_POLICIES):
            cases[f"env-moldable/{kind}/{pid}"] = lambda k=kind, p=pid: _moldable_env(k, p)
    return cases
