"""msj_gym: multiserver-job scheduling simulator, baseline policies and Gymnasium environments.

Importing it registers the environment ids with gymnasium (at once if gymnasium is imported, else as
soon as it is); the environment classes are imported on first use, so a run that only simulates does
not import gymnasium at all.
"""

from typing import Any

from .api import simulate
from .core import Policy, SimulationError, Simulator
from .metrics import SimulationResult
from .registration import ENV_IDS, register_when_imported
from .workloads import JobClass, Scenario, Workload, list_scenarios, load_scenario

register_when_imported()

_FROM_ENV = frozenset(
    {
        "MSJEnv",
        "MSJPreemptiveEnv",
        "MSJPreemptiveVectorEnv",
        "MSJVectorEnv",
        "PolicyAgent",
        "RandomAgent",
        "rollout",
    }
)


_FROM_SCORING = frozenset({"PolicyRefused", "ScoreReport", "score"})


def __getattr__(name: str) -> Any:
    if name in _FROM_ENV:
        from . import env

        return getattr(env, name)
    if name in _FROM_SCORING:  # the evaluator for policy search imports the benchmark: only when asked
        from . import scoring

        return getattr(scoring, name)
    raise AttributeError(f"module 'msj_gym' has no attribute {name!r}")


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
    "PolicyRefused",
    "RandomAgent",
    "Scenario",
    "ScoreReport",
    "SimulationError",
    "SimulationResult",
    "Simulator",
    "Workload",
    "__version__",
    "list_scenarios",
    "load_scenario",
    "rollout",
    "score",
    "simulate",
]
