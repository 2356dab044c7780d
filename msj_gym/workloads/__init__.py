"""Workloads: service-time distributions, job classes, named scenarios and trace replay
(recorded streams, SWF logs and GPU-cluster traces)."""

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
from .gpu_traces import GPUTraceScenario, gpu_trace_workload, read_gpu_trace
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
    "GPUTraceScenario",
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
    "gpu_trace_workload",
    "list_scenarios",
    "load_scenario",
    "read_gpu_trace",
    "read_swf",
    "swf_workload",
]
