"""Gymnasium environments (``MSJ-v0``, ``MSJPreemptive-v0``; ``MSJMoldable-v0`` on the moldable loss
system; ``CompatAssign-v0`` on job-server compatibility graphs) and the agents that act through them.
Importing :mod:`msj_gym` registers the ids; the two MSJ ids and the moldable one have a native batched
vector env as their ``vector_entry_point`` (``gym.make_vec(id, num_envs=N)``)."""

from gymnasium.envs.registration import register, registry

from .agents import PolicyAgent, RandomAgent, rollout
from .compat_env import CompatAssignEnv, DrawnAssignmentAgent, RandomAssignmentAgent
from .moldable_env import MoldablePolicyAgent, MSJMoldableEnv
from .moldable_vector import MSJMoldableVectorEnv
from .msj_env import MSJEnv, MSJPreemptiveEnv
from .vector import MSJPreemptiveVectorEnv, MSJVectorEnv

ENV_IDS = ("MSJ-v0", "MSJPreemptive-v0")  # the queueing MSJ envs (same arguments)
MOLDABLE_ENV_ID = "MSJMoldable-v0"  # the moldable loss system: its own arguments
COMPAT_ENV_ID = "CompatAssign-v0"  # job-server compatibility graphs (Bonald & Comte 2017): its own arguments


def _register() -> None:
    env, vec, mvec = "msj_gym.env.msj_env", "msj_gym.env.vector", "msj_gym.env.moldable_vector"
    entries = {
        "MSJ-v0": (f"{env}:MSJEnv", f"{vec}:MSJVectorEnv"),
        "MSJPreemptive-v0": (f"{env}:MSJPreemptiveEnv", f"{vec}:MSJPreemptiveVectorEnv"),
        MOLDABLE_ENV_ID: ("msj_gym.env.moldable_env:MSJMoldableEnv", f"{mvec}:MSJMoldableVectorEnv"),
        COMPAT_ENV_ID: ("msj_gym.env.compat_env:CompatAssignEnv", None),
    }
    for env_id, (entry, vector_entry) in entries.items():
        if env_id not in registry:
            register(id=env_id, entry_point=entry, vector_entry_point=vector_entry)


_register()

__all__ = [
    "COMPAT_ENV_ID",
    "ENV_IDS",
    "MOLDABLE_ENV_ID",
    "CompatAssignEnv",
    "DrawnAssignmentAgent",
    "MSJEnv",
    "MSJMoldableEnv",
    "MSJMoldableVectorEnv",
    "MSJPreemptiveEnv",
    "MSJPreemptiveVectorEnv",
    "MSJVectorEnv",
    "MoldablePolicyAgent",
    "PolicyAgent",
    "RandomAgent",
    "RandomAssignmentAgent",
    "rollout",
]
