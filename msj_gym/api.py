"""One run by names, the shortest way in: the scenario and the policy by id."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .core.policy import Policy
from .core.simulator import Simulator
from .metrics.result import SimulationResult
from .registry import make_policy
from .workloads.scenarios import Scenario, load_scenario
from .workloads.workload import Workload

if TYPE_CHECKING:
    from collections.abc import Mapping
    from pathlib import Path

    from .core.workload import WorkloadLike
    from .workloads.gpu_traces import GPUTraceScenario
    from .workloads.swf import SWFScenario

__all__ = ["simulate"]


def simulate(
    scenario: str | Path | Mapping[str, Any] | Scenario | GPUTraceScenario | SWFScenario | WorkloadLike,
    policy: str | Policy,
    *,
    load: float | None = None,
    arrival_rate: float | None = None,
    num_servers: int | None = None,
    policy_params: dict[str, Any] | None = None,
    **kwargs: Any,
) -> SimulationResult:
    """One run by names: ``simulate("sf-fig2", "server-filling", load=0.9, num_arrivals=10**5, seed=1)``."""
    if isinstance(scenario, Workload) or hasattr(scenario, "arrivals"):
        wl: Any = scenario  # a ready workload, of any model: its load setters are its model's own
        if load is not None:
            wl = wl.with_load(load)
        elif arrival_rate is not None:
            wl = wl.with_arrival_rate(arrival_rate)
    else:
        # a workload without an arrival stream lands here too, and load_scenario refuses it by name
        sc = scenario if isinstance(scenario, Scenario) else load_scenario(scenario)  # type: ignore[arg-type]
        wl = sc.build(num_servers=num_servers, load=load, arrival_rate=arrival_rate)
    if isinstance(policy, str):
        rule: Policy = make_policy(policy, **(policy_params or {}))
    elif policy_params:
        raise ValueError("policy_params only apply when policy is given by id")
    else:
        rule = policy
    return Simulator(wl, rule, **kwargs).run()
