"""Train a learned scheduler on an MSJ environment with stable-baselines3.

    python -m agents.train --algo maskable-ppo --scenario sf-fig2 --load 0.7 \\
        --timesteps 300000 --seed 0 --out agents/checkpoints/maskable-ppo-sf-fig2-0.7.zip

Algorithms: ``ppo`` and ``dqn`` (stable-baselines3; an action the mask rules out is treated by the env
as "wait") and ``maskable-ppo`` (sb3-contrib; only valid actions are ever sampled). The command line
that produced a checkpoint is saved next to it (``<out>.json``) with the run's settings.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

ALGOS = ("ppo", "maskable-ppo", "dqn")


def make_env_kwargs(args: argparse.Namespace) -> dict[str, Any]:
    """The environment every worker gets: the same keywords at training and evaluation time."""
    kwargs: dict[str, Any] = {"scenario": args.scenario, "num_arrivals": args.episode_arrivals}
    if args.load is not None:
        kwargs["load"] = args.load
    if args.k is not None:
        kwargs["num_servers"] = args.k
    if args.queue_window != 1:
        kwargs["queue_window"] = args.queue_window
    if args.reward != "integral":
        kwargs["reward"] = args.reward
    return kwargs


def build_model(algo: str, env: Any, seed: int, args: argparse.Namespace) -> Any:
    """An untrained model with small networks: the observation is a few dozen numbers."""
    policy_kwargs = {"net_arch": [64, 64]}
    if algo == "maskable-ppo":
        from sb3_contrib import MaskablePPO

        return MaskablePPO(
            "MlpPolicy",
            env,
            seed=seed,
            gamma=args.gamma,
            n_steps=args.n_steps,
            batch_size=256,
            learning_rate=args.learning_rate,
            ent_coef=0.01,
            policy_kwargs=policy_kwargs,
            verbose=0,
        )
    if algo == "ppo":
        from stable_baselines3 import PPO

        return PPO(
            "MlpPolicy",
            env,
            seed=seed,
            gamma=args.gamma,
            n_steps=args.n_steps,
            batch_size=256,
            learning_rate=args.learning_rate,
            ent_coef=0.01,
            policy_kwargs=policy_kwargs,
            verbose=0,
        )
    from stable_baselines3 import DQN

    return DQN(
        "MlpPolicy",
        env,
        seed=seed,
        gamma=args.gamma,
        learning_rate=args.learning_rate,
        learning_starts=min(1000, args.timesteps // 10),
        buffer_size=100_000,
        policy_kwargs=policy_kwargs,
        verbose=0,
    )


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--algo", choices=ALGOS, default="maskable-ppo")
    ap.add_argument("--scenario", default="sf-fig2")
    ap.add_argument("--load", type=float, default=None)
    ap.add_argument("--k", type=int, default=None)
    ap.add_argument("--timesteps", type=int, default=300_000)
    ap.add_argument("--episode-arrivals", type=int, default=1000)
    ap.add_argument("--queue-window", type=int, default=1)
    ap.add_argument("--n-envs", type=int, default=4)
    ap.add_argument("--n-steps", type=int, default=2048, help="rollout length per env (PPO)")
    ap.add_argument("--gamma", type=float, default=0.999, help="per decision; long: starvation costs late")
    ap.add_argument("--gae-lambda", type=float, default=0.95)
    ap.add_argument("--ent-coef", type=float, default=0.0)
    ap.add_argument("--reward", choices=("integral", "mean"), default="mean", help="the env's reward form")
    ap.add_argument("--threads", type=int, default=1, help="torch threads")
    ap.add_argument("--learning-rate", type=float, default=3e-4)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, required=True, help="checkpoint path (.zip)")
    args = ap.parse_args(argv)
    if args.timesteps < 1:
        ap.error(f"--timesteps: expected a positive integer, got {args.timesteps}")
    return args


def main(argv: list[str] | None = None) -> Path:
    args = parse_args(argv)
    import gymnasium as gym
    import torch
    from stable_baselines3.common.env_util import make_vec_env

    torch.set_num_threads(args.threads)
    import msj_gym

    env_kwargs = make_env_kwargs(args)
    gym.make("MSJ-v0", **env_kwargs).close()  # bad keywords fail here, before any worker starts
    # Training seeds come from --seed; evaluation uses other seeds (agents/evaluate.py).
    venv = make_vec_env("msj_gym:MSJ-v0", n_envs=args.n_envs, seed=args.seed, env_kwargs=env_kwargs)
    model = build_model(args.algo, venv, args.seed, args)
    t0 = time.perf_counter()
    model.learn(total_timesteps=args.timesteps)
    wall = time.perf_counter() - t0
    args.out.parent.mkdir(parents=True, exist_ok=True)
    model.save(args.out)
    meta = {
        "command": "python -m agents.train " + " ".join(sys.argv[1:] if argv is None else argv),
        "algo": args.algo,
        "env_id": "MSJ-v0",
        "env_kwargs": env_kwargs,
        "timesteps": args.timesteps,
        "seed": args.seed,
        "train_wall_seconds": round(wall, 1),
        "msj_gym_version": msj_gym.__version__,
    }
    args.out.with_suffix(".json").write_text(json.dumps(meta, indent=2) + "\n")
    print(f"trained {args.algo} for {args.timesteps} steps in {wall:.0f} s -> {args.out}")
    return args.out


if __name__ == "__main__":
    main()
