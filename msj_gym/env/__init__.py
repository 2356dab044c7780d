"""Gymnasium environments (``MSJ-v0``, ``MSJPreemptive-v0``, ``MSJMoldable-v0``) and the agents that
act through them. Importing :mod:`msj_gym` registers the ids."""

from gymnasium.envs.registration import register, registry

from .agents import PolicyAgent, RandomAgent, rollout
from .moldable_env import MoldablePolicyAgent, MSJMoldableEnv
from .msj_env import MSJEnv, MSJPreemptiveEnv

ENV_IDS = ("MSJ-v0", "MSJPreemptive-v0")  # the queueing MSJ envs (same arguments)
MOLDABLE_ENV_ID = "MSJMoldable-v0"  # the moldable loss system: its own arguments


def _register() -> None:
    entries = (
        "msj_gym.env.msj_env:MSJEnv",
        "msj_gym.env.msj_env:MSJPreemptiveEnv",
        "msj_gym.env.moldable_env:MSJMoldableEnv",
    )
    for env_id, entry in zip((*ENV_IDS, MOLDABLE_ENV_ID), entries, strict=True):
        if env_id not in registry:
            register(id=env_id, entry_point=entry)


_register()

__all__ = [
    "ENV_IDS",
    "MOLDABLE_ENV_ID",
    "MSJEnv",
    "MSJMoldableEnv",
    "MSJPreemptiveEnv",
    "MoldablePolicyAgent",
    "PolicyAgent",
    "RandomAgent",
    "rollout",
]
