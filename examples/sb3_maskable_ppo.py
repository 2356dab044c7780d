"""stable-baselines3: MaskablePPO (sb3-contrib) on MSJ-v0 with SB3's progress bar, then the trained
model held to MSF on the same job streams.

Run: ``python examples/sb3_maskable_ppo.py`` (needs ``pip install -e ".[rl]"`` and ``rich``, which SB3's
``progress_bar=True`` needs beside tqdm).
"""

from __future__ import annotations

import gymnasium as gym
from sb3_contrib import MaskablePPO
from stable_baselines3.common.env_util import make_vec_env

from msj_gym import PolicyAgent, rollout


def main(total_timesteps: int = 100_000, num_envs: int = 4, seeds: range = range(3)) -> dict[str, float]:
    """Train for ``total_timesteps``; the mean response times of the model and of MSF over ``seeds``."""
    env_kwargs = {"num_arrivals": 500}
    # "msj_gym:MSJ-v0" also works in SubprocVecEnv's worker processes (vec_env_cls=SubprocVecEnv)
    venv = make_vec_env("msj_gym:MSJ-v0", n_envs=num_envs, seed=0, env_kwargs=env_kwargs)
    model = MaskablePPO("MlpPolicy", venv, n_steps=256, seed=0, verbose=0)
    model.learn(total_timesteps, progress_bar=True)  # MaskablePPO reads the masks via action_masks()

    env = gym.make("msj_gym:MSJ-v0", **env_kwargs)
    learned = [rollout(env, model, seed=s).mean_response_time for s in seeds]
    msf = [rollout(env, PolicyAgent("msf", env), seed=s).mean_response_time for s in seeds]
    out = {"learned": sum(learned) / len(learned), "msf": sum(msf) / len(msf)}
    print(f"mean response time over seeds {list(seeds)}: learned {out['learned']:.3f}, msf {out['msf']:.3f}")
    return out


if __name__ == "__main__":
    main()
