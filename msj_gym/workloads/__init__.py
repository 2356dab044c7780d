"""Workloads: service-time distributions, job classes, named scenarios and trace replay."""

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
    "Scenario",
    "TraceWorkload",
    "Uniform",
    "Workload",
    "distribution_from_dict",
    "evaluate_expression",
    "list_scenarios",
    "load_scenario",
]
