"""Workloads: service-time distributions, job classes, named scenarios and trace replay
(recorded streams, SWF logs and GPU-cluster traces)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import LazyNames
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

if TYPE_CHECKING:
    from .gpu_traces import GPUTraceScenario, gpu_trace_workload, read_gpu_trace
    from .swf import SWFLog, read_swf, swf_workload

# the trace readers are imported when first asked for (a scenario of theirs imports its own): a
# queueing scenario does not need them
_LAZY = LazyNames(
    __name__,
    globals(),
    {
        "gpu_traces": ("GPUTraceScenario", "gpu_trace_workload", "read_gpu_trace"),
        "swf": ("SWFLog", "read_swf", "swf_workload"),
    },
)
__getattr__ = _LAZY
__dir__ = _LAZY.dir

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
