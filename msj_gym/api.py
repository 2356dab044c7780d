"""One run by names, the shortest way in: the scenario and the policy by id."""

from __future__ import annotations

from typing import Any

from .core.policy import Policy
from .core.simulator import Simulator
from .metrics.result import SimulationResult
from .registry import make_policy
from .workloads.scenarios import Scenario, load_scenario
from .workloads.workload import Workload

__all__ = ["simulate"]


def simulate(
    scenario: Any,
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
        wl = scenario
        if load is not None:
            wl = wl.with_load(load)
        elif arrival_rate is not None:
            wl = wl.with_arrival_rate(arrival_rate)
    else:
        sc = scenario if isinstance(scenario, Scenario) else load_scenario(scenario)
        wl = sc.build(num_servers=num_servers, load=load, arrival_rate=arrival_rate)
    if isinstance(policy, str):
        rule: Policy = make_policy(policy, **(policy_params or {}))
    elif policy_params:
        raise ValueError("policy_params only apply when policy is given by id")
    else:
        rule = policy
    return Simulator(wl, rule, **kwargs).run()
