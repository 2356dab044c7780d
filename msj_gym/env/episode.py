"""What an MSJ environment's episode is built from: the workload (:func:`resolve_workload`), the
agent's place in the simulator (:class:`AgentSlot`), the reward kinds, the arrival cap an agent
compared with heuristics runs with (:func:`heuristic_cap`) and an ended episode's result."""

from __future__ import annotations

import dataclasses
import math
from typing import TYPE_CHECKING, Any, cast

from ..core.policy import Policy
from ..core.simulator import Simulator
from ..metrics.result import SimulationResult
from ..workloads.trace import TraceWorkload
from ..workloads.workload import Workload
from .layout import REWARD_AREA, REWARD_SLOWDOWN, REWARD_WAITING
from .options import WARM_START_ARRIVALS

if TYPE_CHECKING:
    from collections.abc import Mapping
    from pathlib import Path
    from typing import TypeAlias

    from ..workloads.gpu_traces import GPUTraceScenario
    from ..workloads.scenarios import Scenario
    from ..workloads.swf import SWFScenario

    # what the env builds its workload from: what load_scenario reads, or a ready MSJ workload
    ScenarioSource: TypeAlias = (
        str | Path | Mapping[str, Any] | Scenario | GPUTraceScenario | SWFScenario | Workload | TraceWorkload
    )

__all__ = ["DEFAULT_SCENARIO", "REWARDS", "AgentSlot", "ended_result", "heuristic_cap", "resolve_workload"]

DEFAULT_SCENARIO = "sf-fig2"

# ``reward``: what the compiled step pays (layout.REWARD_*); "mean" is "integral" on another scale
REWARDS = {
    "integral": REWARD_AREA,
    "mean": REWARD_AREA,
    "slowdown": REWARD_SLOWDOWN,
    "waiting": REWARD_WAITING,
}


def heuristic_cap(env_kwargs: dict[str, Any], num_arrivals: int) -> int:
    """The ``max_arrivals`` that holds an MSJ env episode of ``num_arrivals`` arrivals (its other
    keywords ``env_kwargs``) to the arrival cap of a simulator run of the same length
    (:meth:`Simulator.arrival_cap`), after its warm start's arrivals if it has one. An agent compared
    with heuristics runs with it, so that it is never flagged where a heuristic deciding as it does
    would not be (the env's own default, twice the arrivals, is tighter)."""
    warm = env_kwargs.get("warm_start_arrivals", WARM_START_ARRIVALS) if env_kwargs.get("warm_start") else 0
    return Simulator.arrival_cap(num_arrivals) + int(warm)


class AgentSlot(Policy):
    """Stands in the simulator for the agent that drives the environment (it has no decision rule)."""

    policy_id = "agent"
    reference = "an agent acting through the Gymnasium environment"

    def __init__(self, preemptive: bool) -> None:
        super().__init__()
        self.preemptive = preemptive  # type: ignore[misc]  # per instance: admission or preemptive env


def resolve_workload(
    scenario: ScenarioSource, num_servers: int | None, load: float | None, arrival_rate: float | None
) -> Workload | TraceWorkload:
    """A workload from a scenario name, file path, mapping, :class:`Scenario` or workload object."""
    from ..workloads.scenarios import Scenario, load_scenario

    if hasattr(scenario, "arrivals") and hasattr(scenario, "num_servers"):
        # a ready workload is told by what it has, not by its class, as the simulator tells it
        ready = cast("Workload | TraceWorkload", scenario)
        if num_servers is not None and num_servers != ready.num_servers:
            raise ValueError(
                f"num_servers: a ready workload has k={ready.num_servers}; got num_servers={num_servers!r}"
            )
        if load is not None:
            return ready.with_load(load)
        if arrival_rate is not None:
            return ready.with_arrival_rate(arrival_rate)
        return ready
    sc = scenario if isinstance(scenario, Scenario) else load_scenario(scenario)
    return sc.build(num_servers=num_servers, load=load, arrival_rate=arrival_rate)


def ended_result(result: SimulationResult, over: bool) -> SimulationResult:
    """An episode's result; one that ended without any measured job to count (none arrived, none left)
    has an unbounded mean response time, not an undefined one, and is unstable."""
    if over and result.num_measured == 0:
        return dataclasses.replace(result, mean_response_time=math.inf, stable=False)
    return result
