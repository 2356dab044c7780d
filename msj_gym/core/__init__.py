"""The simulator core: compiled event engine, state layout, policy protocol. Does not import gymnasium."""

from .policy import Param, Policy
from .simulator import SimulationError, Simulator, simulate
from .state import PolicyData, Sizes, View

__all__ = ["Param", "Policy", "PolicyData", "SimulationError", "Simulator", "Sizes", "View", "simulate"]
