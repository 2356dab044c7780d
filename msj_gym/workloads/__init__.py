"""Workloads: service-time distributions, job classes, named scenarios and trace replay
(recorded streams and SWF logs)."""

from .distributions import (
    Deterministic,
    Distribution,
    Empirical,
    Erlang,
    Exponential,
    Gamma,
    HyperExponential,
    LogNormal,
    MixedErlang,
    Pareto,
    Uniform,
    distribution_from_dict,
)
from .scenarios import Scenario, evaluate_expression, list_scenarios, load_scenario
from .swf import SWFLog, read_swf, swf_workload
from .trace import TraceWorkload
from .workload import JobClass, PoissonArrivals, Workload

__all__ = [
    "Deterministic",
    "Distribution",
    "Empirical",
    "Erlang",
    "Exponential",
    "Gamma",
    "HyperExponential",
    "JobClass",
    "LogNormal",
    "MixedErlang",
    "Pareto",
    "PoissonArrivals",
    "SWFLog",
    "Scenario",
    "TraceWorkload",
    "Uniform",
    "Workload",
    "distribution_from_dict",
    "evaluate_expression",
    "list_scenarios",
    "load_scenario",
    "read_swf",
    "swf_workload",
]
