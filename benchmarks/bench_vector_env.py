"""Native batched vector env speed: aggregate env steps per second of ``MSJVectorEnv`` (``gym.make_vec
("MSJ-v0", num_envs=N)``) and ``MSJMoldableVectorEnv`` (``gym.make_vec("MSJMoldable-v0", ...)``) with
masked uniform random actions, against ``SyncVectorEnv`` of ``N`` single envs driven by the same
actions, measured in the same run (ratios, since this machine is shared and noisy); then the wall-clock
time of a fixed MaskablePPO budget on either.

    PYTHONPATH=. python benchmarks/bench_vector_env.py [--steps S] [--repeats R] [--num-envs 256 1024]
        [--train-timesteps T] [--train-envs E] [--threads n] [--cases sf-fig2 moldable]

Random actions are batched and compiled: one uniform per env from a seeded ``numpy`` Generator, mapped
to a valid action by ``msj_gym.env.batch.sample_masked`` (the same sampler for both vector envs).
Episodes are the env's defaults (1000 measured arrivals; 1000 arrivals for the moldable env), so
resets are part of the timing.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from typing import Any

import gymnasium as gym
import numpy as np

import msj_gym  # noqa: F401  (registers the env ids)
from msj_gym.env.batch import sample_masked

CASES: dict[str, tuple[str, dict[str, Any]]] = {  # name: (env id, keywords)
    "sf-fig2 (k=8, load 0.7)": ("MSJ-v0", {"scenario": "sf-fig2"}),
    # the class-set observation (32 slots) and priority actions: what a generalist agent acts with
    "sf-fig2 class set, priority": (
        "MSJ-v0",
        {"scenario": "sf-fig2", "observation": "classes", "actions": "priority"},
    ),
    # the same with the generalist's advisors (its oblivious bases): the native env runs no policy in
    # its step and refuses them, so only SyncVectorEnv is measured
    "sf-fig2 class set, priority, advisors": (
        "MSJ-v0",
        {
            "scenario": "sf-fig2",
            "observation": "classes",
            "actions": "priority",
            "advisor": ["first-fit", "adaptive-quickswap", "static-quickswap"],
        },
    ),
    "bs-fig1 (k=1024, load 0.78)": ("MSJ-v0", {"scenario": "bs-fig1", "num_servers": 1024}),
    # the paper's sub-linear speed-up, n = 100 servers, lambda = 0.8 (the env's defaults)
    "moldable (n=100, lambda=0.8)": ("MSJMoldable-v0", {}),
}


def _native_rate(venv: Any, steps: int, seed: int) -> tuple[float, float]:
    """(wall, CPU) aggregate steps per second of the native vector env."""
    rng = np.random.default_rng(seed)
    n = venv.num_envs
    w0, c0 = time.perf_counter(), time.process_time()
    for _ in range(steps):
        venv.step(venv.sample_actions(rng))
    return steps * n / (time.perf_counter() - w0), steps * n / (time.process_time() - c0)


def _sync_rate(venv: Any, steps: int, seed: int, info: dict[str, Any]) -> tuple[float, float, dict]:
    rng = np.random.default_rng(seed)
    n = venv.num_envs
    actions = np.empty(n, dtype=np.int64)
    w0, c0 = time.perf_counter(), time.process_time()
    for _ in range(steps):
        sample_masked(info["action_mask"], rng.random(n), actions)
        _, _, _, _, info = venv.step(np.maximum(actions, 0))
    rate = steps * n / (time.perf_counter() - w0), steps * n / (time.process_time() - c0)
    return *rate, info


def bench_steps(args: argparse.Namespace) -> None:
    print(f"load average before: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    print(
        f"{'case':<38} {'N':>5} {'native steps/s':>15} {'(CPU time)':>12} {'sync steps/s':>13} "
        f"{'(CPU time)':>12} {'ratio':>7}"
    )
    for name, (env_id, kwargs) in CASES.items():
        if args.cases and not any(c in name for c in args.cases):
            continue
        for n in args.num_envs:
            try:
                native = gym.make_vec(env_id, num_envs=n, threads=args.threads, **kwargs)
            except ValueError as exc:  # a keyword the native env refuses (advisor)
                native = None
                print(f"{name:<38} {n:>5}  native env: {str(exc).split(';')[0]}", flush=True)
            sync = gym.make_vec(env_id, num_envs=n, vectorization_mode="sync", **kwargs)
            _, sync_info = sync.reset(seed=0)
            *_, sync_info = _sync_rate(sync, 2, 0, sync_info)
            native_steps = max(args.steps // n, 10)
            sync_steps = max(native_steps // 20, 2)
            if native is None:
                syn_w, syn_c = [], []
                for r in range(args.repeats):
                    w, c, sync_info = _sync_rate(sync, sync_steps, r, sync_info)
                    syn_w.append(w)
                    syn_c.append(c)
                print(
                    f"{name:<38} {n:>5} {'-':>15} {'-':>12} {statistics.median(syn_w):>13,.0f} "
                    f"{statistics.median(syn_c):>12,.0f}",
                    flush=True,
                )
                sync.close()
                continue
            native.reset(seed=0)
            _native_rate(native, 20, 0)  # compile / load the kernels, fill the caches
            nat_w, nat_c, syn_w, syn_c = [], [], [], []
            for r in range(args.repeats):  # interleaved: machine noise hits both alike
                w, c = _native_rate(native, native_steps, r)
                nat_w.append(w)
                nat_c.append(c)
                w, c, sync_info = _sync_rate(sync, sync_steps, r, sync_info)
                syn_w.append(w)
                syn_c.append(c)
            nw, sw = statistics.median(nat_w), statistics.median(syn_w)
            print(
                f"{name:<38} {n:>5} {nw:>15,.0f} {statistics.median(nat_c):>12,.0f} {sw:>13,.0f} "
                f"{statistics.median(syn_c):>12,.0f} {nw / sw:>7.1f}",
                flush=True,
            )
            native.close()
            sync.close()
    print(f"load average after: {os.getloadavg()[0]:.2f}")


def bench_training(args: argparse.Namespace) -> None:
    """Wall-clock of one MaskablePPO budget on SB3's DummyVecEnv of single envs and on the native env."""
    import torch
    from sb3_contrib import MaskablePPO
    from stable_baselines3.common.env_util import make_vec_env

    from msj_gym.agents.vec_env import MSJSB3VecEnv

    torch.set_num_threads(1)
    env_kwargs = {"scenario": "sf-fig2", "num_arrivals": 1000}
    n = args.train_envs
    settings = {"n_steps": 128, "batch_size": 1024, "n_epochs": 4, "seed": 0, "verbose": 0}
    print(
        f"\nMaskablePPO, {args.train_timesteps} timesteps, {n} envs, n_steps=128, batch 1024, 4 epochs, "
        f"sf-fig2 (k=8, load 0.7), MlpPolicy 64x64, 1 torch thread, native env threads={args.threads}:"
    )
    times = {}
    for label in ("DummyVecEnv", "native"):
        if label == "native":
            venv = MSJSB3VecEnv(n, threads=args.threads, **env_kwargs)
            venv.seed(0)
        else:
            venv = make_vec_env("msj_gym:MSJ-v0", n_envs=n, seed=0, env_kwargs=env_kwargs)
        model = MaskablePPO("MlpPolicy", venv, policy_kwargs={"net_arch": [64, 64]}, **settings)
        t0 = time.perf_counter()
        model.learn(total_timesteps=args.train_timesteps)
        times[label] = time.perf_counter() - t0
        venv.close()
        print(f"  {label:<12} {times[label]:8.1f} s", flush=True)
    print(f"  speed-up     {times['DummyVecEnv'] / times['native']:8.2f} x")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=2_000_000, help="env steps per native measurement")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--num-envs", type=int, nargs="+", default=[256, 1024])
    ap.add_argument("--threads", type=int, default=1, help="threads of the native env's compiled step")
    ap.add_argument("--train-timesteps", type=int, default=131_072, help="0: skip the training benchmark")
    ap.add_argument("--train-envs", type=int, default=64)
    ap.add_argument(
        "--cases", nargs="+", default=None, help="only the cases whose names contain one of these"
    )
    args = ap.parse_args()
    bench_steps(args)
    if args.train_timesteps > 0:
        bench_training(args)


if __name__ == "__main__":
    main()
