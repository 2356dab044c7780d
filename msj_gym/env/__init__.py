"""Gymnasium environments (``MSJ-v0``, ``MSJPreemptive-v0``) and the agents that act through them.
Importing :mod:`msj_gym` registers the ids, each with the native batched vector env as its
``vector_entry_point`` (``gym.make_vec(id, num_envs=N)``)."""

from gymnasium.envs.registration import register, registry

from .agents import PolicyAgent, RandomAgent, rollout
from .msj_env import MSJEnv, MSJPreemptiveEnv
from .vector import MSJPreemptiveVectorEnv, MSJVectorEnv

ENV_IDS = ("MSJ-v0", "MSJPreemptive-v0")


def _register() -> None:
    entries = ("msj_gym.env.msj_env:MSJEnv", "msj_gym.env.msj_env:MSJPreemptiveEnv")
    vector_entries = ("msj_gym.env.vector:MSJVectorEnv", "msj_gym.env.vector:MSJPreemptiveVectorEnv")
    for env_id, entry, vector_entry in zip(ENV_IDS, entries, vector_entries, strict=True):
        if env_id not in registry:
            register(id=env_id, entry_point=entry, vector_entry_point=vector_entry)


_register()

__all__ = [
    "ENV_IDS",
    "MSJEnv",
    "MSJPreemptiveEnv",
    "MSJPreemptiveVectorEnv",
    "MSJVectorEnv",
    "PolicyAgent",
    "RandomAgent",
    "rollout",
]
