"""The simulator core: compiled event engine, state layout, policy protocol. It imports nothing above
it (policies, workloads, analysis, environments, experiments) and not gymnasium; a test enforces it."""

from .policy import Param, Policy
from .simulator import PolicyDriver, SimulationError, Simulator
from .state import PolicyData, Sizes, View

__all__ = ["Param", "Policy", "PolicyData", "PolicyDriver", "SimulationError", "Simulator", "Sizes", "View"]
