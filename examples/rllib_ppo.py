"""RLlib PPO on MSJ-v0: the env runners make the env from the id ``"msj_gym:MSJ-v0"`` (each runner
process imports msj_gym, which registers the ids), as msj_gym's native vector env through gymnasium's
vector entry point.

Run: ``python examples/rllib_ppo.py`` (needs ``pip install "ray[rllib]==2.60.0"`` beside msj-gym; that
brings pandas, pyarrow and dm-tree, and pins gymnasium to 1.2.2 where msj-gym has 1.4).
"""

from __future__ import annotations

import gymnasium as gym
import ray
from ray.rllib.algorithms.ppo import PPOConfig


def make_config(
    env_id: str = "msj_gym:MSJ-v0", num_envs: int = 8, native_vector: bool = True, num_arrivals: int = 100
) -> PPOConfig:
    """PPO with one env runner of ``num_envs`` envs: one ``MSJVectorEnv`` (``native_vector``, gymnasium's
    ``VectorizeMode.VECTOR_ENTRY_POINT``) or gymnasium's ``SyncVectorEnv`` of single envs."""
    mode = gym.VectorizeMode.VECTOR_ENTRY_POINT if native_vector else gym.VectorizeMode.SYNC
    return (
        PPOConfig()
        .environment(env_id, env_config={"num_arrivals": num_arrivals})
        .env_runners(num_env_runners=1, num_envs_per_env_runner=num_envs, gym_env_vectorize_mode=mode)
        .training(train_batch_size_per_learner=2000, minibatch_size=250, num_epochs=2, lr=3e-4)
    )


def main(iterations: int = 20, **config_kwargs: object) -> list[float]:
    """Train for ``iterations``; the mean episode return after each (NaN while no episode has ended)."""
    algo = make_config(**config_kwargs).build_algo()  # type: ignore[arg-type]
    returns = []
    try:
        for i in range(iterations):
            mean = float(algo.train()["env_runners"].get("episode_return_mean", float("nan")))
            returns.append(mean)
            print(f"iteration {i + 1}: mean episode return {mean:.4g}")
    finally:
        algo.stop()
    return returns


if __name__ == "__main__":
    ray.init(num_cpus=2, include_dashboard=False)
    main()
