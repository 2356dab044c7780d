"""Gymnasium environments (``MSJ-v0``, ``MSJPreemptive-v0``; ``MSJMoldable-v0`` on the moldable loss
system; ``CompatAssign-v0`` on job-server compatibility graphs) and the agents that act through them.
Importing :mod:`msj_gym` registers the ids; the two MSJ ids and the moldable one have a native batched
vector env as their ``vector_entry_point`` (``gym.make_vec(id, num_envs=N)``)."""

from ..registration import COMPAT_ENV_ID, ENV_IDS, MOLDABLE_ENV_ID, register_envs
from .agents import PolicyAgent, RandomAgent, rollout
from .compat_env import CompatAssignEnv, DrawnAssignmentAgent, RandomAssignmentAgent
from .moldable_env import MoldablePolicyAgent, MSJMoldableEnv
from .moldable_vector import MSJMoldableVectorEnv
from .msj_env import MSJEnv, MSJPreemptiveEnv
from .vector import MSJPreemptiveVectorEnv, MSJVectorEnv

register_envs()

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
