"""Named systems of the moldable loss system: the paper's speed-ups in its traffic regimes (Ghanbarian et
al. (2024), moldable jobs, Sec. 7), one class of unit-mean exponential jobs, as ``msj-gym simulate
--scenario`` and ``msj-gym list`` name them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..workloads.distributions import Distribution
from .model import LINEAR, SUB_LINEAR, MoldableSystem

__all__ = ["MOLDABLE_SYSTEMS", "REGIMES", "SPEED_UPS", "build_moldable_system", "describe_moldable_system"]

REGIMES: dict[str, tuple[float, float]] = {  # (alpha, beta) of lam_n = 1 - beta n^-alpha, fitted
    "mean-field": (0.0, 0.2),
    "Halfin-Whitt": (0.5, 0.1),
    "super-Halfin-Whitt": (0.65, 0.1),
}
SPEED_UPS: dict[str, tuple[float, ...]] = {"linear": LINEAR, "sub-linear": SUB_LINEAR}

#: name -> (speed-up, regime): ``002-SPEEDUP-REGIME``, lower case.
MOLDABLE_SYSTEMS: dict[str, tuple[str, str]] = {
    f"002-{speed}-{regime.lower()}": (speed, regime) for speed in SPEED_UPS for regime in REGIMES
}


def describe_moldable_system(name: str) -> str:
    """One line on the named system."""
    speed, regime = MOLDABLE_SYSTEMS[name]
    alpha, beta = REGIMES[regime]
    s = ", ".join(f"{v:g}" for v in SPEED_UPS[speed])
    return (
        f"one class, {speed} speed-up s = ({s}), {regime} traffic lam = 1 - {beta:g} n^-{alpha:g}, "
        "Exp(1) sizes (Ghanbarian et al. (2024), Sec. 7)"
    )


def build_moldable_system(
    name: str,
    *,
    num_servers: int = 100,
    arrival_rate: float | None = None,
    service_time: Distribution | Mapping[str, Any] | None = None,
) -> MoldableSystem:
    """The named system with ``num_servers`` servers; ``arrival_rate`` (per server, = the load with unit
    mean sizes) replaces the regime's ``lam_n`` if given; ``service_time``: the size law (Exp(1))."""
    entry = MOLDABLE_SYSTEMS.get(name) if isinstance(name, str) else None
    if entry is None:
        raise ValueError(f"scenario: expected one of {list(MOLDABLE_SYSTEMS)}, got {name!r}")
    speed, regime = entry
    if arrival_rate is not None:
        return MoldableSystem.single(num_servers, SPEED_UPS[speed], arrival_rate, service_time=service_time)
    alpha, beta = REGIMES[regime]
    return MoldableSystem.single(
        num_servers, SPEED_UPS[speed], alpha=alpha, beta=beta, service_time=service_time
    )
