"""msj_gym: multiserver-job scheduling simulator, baseline policies and Gymnasium environments."""

from .core import Policy, SimulationError, Simulator, simulate
from .env import (
    ENV_IDS,
    MSJEnv,
    MSJPreemptiveEnv,
    MSJPreemptiveVectorEnv,
    MSJVectorEnv,
    PolicyAgent,
    RandomAgent,
    rollout,
)
from .metrics import SimulationResult
from .workloads import JobClass, Scenario, Workload, list_scenarios, load_scenario

__version__ = "0.1.0"

__all__ = [
    "ENV_IDS",
    "JobClass",
    "MSJEnv",
    "MSJPreemptiveEnv",
    "MSJPreemptiveVectorEnv",
    "MSJVectorEnv",
    "Policy",
    "PolicyAgent",
    "RandomAgent",
    "Scenario",
    "SimulationError",
    "SimulationResult",
    "Simulator",
    "Workload",
    "__version__",
    "list_scenarios",
    "load_scenario",
    "rollout",
    "simulate",
]
