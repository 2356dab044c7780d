"""Environment speed: steps per second of MSJ-v0 driven by a masked uniform random agent, against
``CartPole-v1`` driven by random actions, measured in the same run (ratios, since this machine is
shared and noisy), plus the aggregate rate of vectorised batches of MSJ envs.

    python benchmarks/bench_env.py [--steps N] [--repeats R] [--num-envs N]
"""

from __future__ import annotations

import argparse
import statistics
import time

import gymnasium as gym
import numpy as np

import msj_gym  # noqa: F401  (registers MSJ-v0)


def _masked_random_steps(env: gym.Env, steps: int, seed: int) -> float:
    """Steps per second; the agent samples uniformly among the valid actions of ``info``'s mask."""
    rng = np.random.default_rng(seed)
    _, info = env.reset(seed=seed)
    t0 = time.perf_counter()
    for _ in range(steps):
        valid = np.flatnonzero(info["action_mask"])
        _, _, terminated, truncated, info = env.step(int(valid[rng.integers(valid.size)]))
        if terminated or truncated:
            _, info = env.reset()
    return steps / (time.perf_counter() - t0)


def _cartpole_steps(env: gym.Env, steps: int, seed: int) -> float:
    env.reset(seed=seed)
    env.action_space.seed(seed)
    sample = env.action_space.sample
    t0 = time.perf_counter()
    for _ in range(steps):
        _, _, terminated, truncated, _ = env.step(sample())
        if terminated or truncated:
            env.reset()
    return steps / (time.perf_counter() - t0)


def _vector_steps(make, num_envs: int, steps: int, seed: int, mode: str) -> float:
    """Aggregate env steps per second of a gymnasium vector env (masked random actions)."""
    cls = gym.vector.SyncVectorEnv if mode == "sync" else gym.vector.AsyncVectorEnv
    venv = cls([make] * num_envs)
    rng = np.random.default_rng(seed)
    _, info = venv.reset(seed=seed)
    t0 = time.perf_counter()
    for _ in range(steps):
        masks = info["action_mask"]
        u = rng.random((num_envs, masks.shape[1])) * masks
        _, _, _, _, info = venv.step(u.argmax(axis=1))
    rate = steps * num_envs / (time.perf_counter() - t0)
    venv.close()
    return rate


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=200_000)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--num-envs", type=int, default=8)
    args = ap.parse_args()
    cases = {
        "sf-fig2 (k=8, load 0.7)": lambda: gym.make("MSJ-v0", scenario="sf-fig2", num_arrivals=10_000),
        "bs-fig1 (k=1024, load 0.9)": lambda: gym.make(
            "MSJ-v0", scenario="bs-fig1", num_servers=1024, load=0.9, num_arrivals=10_000
        ),
    }
    cart = gym.make("CartPole-v1")
    envs = {name: make() for name, make in cases.items()}
    for env in envs.values():  # compile / load the kernels outside the timing
        _masked_random_steps(env, 1000, 0)
    _cartpole_steps(cart, 1000, 0)
    rates: dict[str, list[float]] = {"CartPole-v1": [], **{n: [] for n in envs}}
    for r in range(args.repeats):  # interleaved, so that machine noise hits every case alike
        rates["CartPole-v1"].append(_cartpole_steps(cart, args.steps, r))
        for name, env in envs.items():
            rates[name].append(_masked_random_steps(env, args.steps, r))
    ref = statistics.median(rates["CartPole-v1"])
    print(f"{'case':<30} {'steps/s (median)':>18} {'ratio to CartPole':>18}")
    for name, values in rates.items():
        med = statistics.median(values)
        print(f"{name:<30} {med:>18,.0f} {med / ref:>18.2f}")
    print(f"\nvectorised, {args.num_envs} envs, masked random actions (aggregate env steps/s):")
    for name, make in cases.items():
        for mode in ("sync", "async"):
            rate = _vector_steps(make, args.num_envs, args.steps // (4 * args.num_envs), 0, mode)
            print(f"  {name:<30} {mode:<6} {rate:>12,.0f}")


if __name__ == "__main__":
    main()
