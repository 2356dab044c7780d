"""Gymnasium environments (``MSJ-v0``, ``MSJPreemptive-v0``; ``CompatAssign-v0`` on job-server
compatibility graphs) and the agents that act through them. Importing :mod:`msj_gym` registers the ids."""

from gymnasium.envs.registration import register, registry

from .agents import PolicyAgent, RandomAgent, rollout
from .compat_env import CompatAssignEnv, DrawnAssignmentAgent, RandomAssignmentAgent
from .msj_env import MSJEnv, MSJPreemptiveEnv

ENV_IDS = ("MSJ-v0", "MSJPreemptive-v0")


def _register() -> None:
    entries = ("msj_gym.env.msj_env:MSJEnv", "msj_gym.env.msj_env:MSJPreemptiveEnv")
    for env_id, entry in zip(ENV_IDS, entries, strict=True):
        if env_id not in registry:
            register(id=env_id, entry_point=entry)
    if "CompatAssign-v0" not in registry:  # job-server compatibility graphs (003), not in ENV_IDS
        register(id="CompatAssign-v0", entry_point="msj_gym.env.compat_env:CompatAssignEnv")


_register()

__all__ = [
    "ENV_IDS",
    "CompatAssignEnv",
    "DrawnAssignmentAgent",
    "MSJEnv",
    "MSJPreemptiveEnv",
    "PolicyAgent",
    "RandomAgent",
    "RandomAssignmentAgent",
    "rollout",
]
