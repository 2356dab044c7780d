"""Gymnasium environments (``MSJ-v0``, ``MSJPreemptive-v0``) and the agents that act through them.
Importing :mod:`msj_gym` registers the ids."""

from gymnasium.envs.registration import register, registry

from .agents import PolicyAgent, RandomAgent, rollout
from .msj_env import MSJEnv, MSJPreemptiveEnv

ENV_IDS = ("MSJ-v0", "MSJPreemptive-v0")


def _register() -> None:
    entries = ("msj_gym.env.msj_env:MSJEnv", "msj_gym.env.msj_env:MSJPreemptiveEnv")
    for env_id, entry in zip(ENV_IDS, entries, strict=True):
        if env_id not in registry:
            register(id=env_id, entry_point=entry)


_register()

__all__ = ["ENV_IDS", "MSJEnv", "MSJPreemptiveEnv", "PolicyAgent", "RandomAgent", "rollout"]
