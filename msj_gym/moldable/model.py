"""The moldable loss system: job classes with a concave speed-up, and the system that holds them.

Model (Ghanbarian et al. (2024), moldable jobs, Sec. 2 and 6): ``n`` unit-rate
servers, no waiting room. Class-``k`` jobs arrive as a Poisson process of rate ``n * arrival_rate_k``
(``arrival_rate`` is normalised per server); a job may run on ``1..d_k`` servers, chosen at its arrival
and held to completion; on ``i`` servers its execution time is its inherent size (drawn from the class's
``service_time`` distribution) divided by ``s_k(i)``. An arrival that finds no idle server is lost.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from ..analysis.moldable import check_speed_up, traffic
from ..workloads.distributions import Distribution, Exponential, distribution_from_dict

__all__ = ["LINEAR", "SUB_LINEAR", "MoldableClass", "MoldableSystem"]

LINEAR = (1.0, 2.0, 3.0, 4.0, 5.0)  # the paper's Sec. 7
SUB_LINEAR = (1.0, 1.8, 2.5, 3.0, 3.4)  # s(2..4) fitted to Table 1, s(5) a default


@dataclass(frozen=True)
class MoldableClass:
    """A class of moldable jobs: ``speed_up[i-1] = s(i)`` (d = len(speed_up), concave, s(1) = 1),
    normalised ``arrival_rate`` (per server) and inherent-size distribution ``service_time``."""

    speed_up: tuple[float, ...]
    arrival_rate: float
    service_time: Distribution = field(default_factory=Exponential)
    name: str = "jobs"

    def __post_init__(self) -> None:
        s = check_speed_up(self.speed_up, f"class {self.name!r} speed_up")
        object.__setattr__(self, "speed_up", tuple(float(v) for v in s))
        rate = self.arrival_rate
        if (
            isinstance(rate, bool)
            or not isinstance(rate, int | float)
            or not math.isfinite(rate)
            or rate <= 0
        ):
            raise ValueError(f"class {self.name!r} arrival_rate: expected a positive number, got {rate!r}")
        object.__setattr__(self, "arrival_rate", float(rate))
        dist = distribution_from_dict(self.service_time, where=f"class {self.name!r} service_time")
        object.__setattr__(self, "service_time", dist)
        if not math.isfinite(dist.mean):
            raise ValueError(f"class {self.name!r} service_time: needs a finite mean, got {dist!r}")

    @property
    def max_parallelism(self) -> int:
        return len(self.speed_up)

    @property
    def load(self) -> float:
        """rho_k = lam_k / mu_k (servers' worth of work per server when every job runs on one server)."""
        return self.arrival_rate * self.service_time.mean

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "speed_up": list(self.speed_up),
            "arrival_rate": self.arrival_rate,
            "service_time": self.service_time.to_dict(),
        }


@dataclass(frozen=True)
class MoldableSystem:
    """``num_servers`` servers shared by ``classes`` (names unique)."""

    model: ClassVar[str] = "moldable"  # the policies defined on it declare this model
    num_servers: int
    classes: tuple[MoldableClass, ...]

    def __post_init__(self) -> None:
        n = self.num_servers
        if isinstance(n, bool) or not isinstance(n, int | np.integer) or n < 1:
            raise ValueError(f"num_servers: expected a positive integer, got {n!r}")
        object.__setattr__(self, "num_servers", int(n))
        classes = tuple(self.classes)
        if not classes or not all(isinstance(c, MoldableClass) for c in classes):
            raise ValueError(f"classes: expected a non-empty list of MoldableClass, got {self.classes!r}")
        names = [c.name for c in classes]
        if len(set(names)) != len(names):
            raise ValueError(f"classes: names must be unique, got {names}")
        object.__setattr__(self, "classes", classes)

    @classmethod
    def single(
        cls,
        num_servers: int,
        speed_up: Sequence[float],
        arrival_rate: float | None = None,
        *,
        alpha: float | None = None,
        beta: float | None = None,
        service_time: Distribution | Mapping[str, Any] | None = None,
    ) -> MoldableSystem:
        """One class; give ``arrival_rate`` or the traffic regime ``alpha, beta``
        (``lam = 1 - beta n^-alpha``)."""
        if (arrival_rate is None) == (alpha is None or beta is None):
            raise ValueError("give either arrival_rate or both alpha and beta")
        lam = arrival_rate if arrival_rate is not None else traffic(num_servers, alpha, beta)  # type: ignore[arg-type]
        dist = Exponential() if service_time is None else distribution_from_dict(service_time)
        return cls(num_servers, (MoldableClass(tuple(speed_up), lam, dist),))

    @property
    def num_classes(self) -> int:
        return len(self.classes)

    @property
    def max_parallelism(self) -> int:
        return max(c.max_parallelism for c in self.classes)

    @property
    def arrival_rate(self) -> float:
        """Total arrival rate n * sum_k lam_k (jobs per unit time)."""
        return self.num_servers * sum(c.arrival_rate for c in self.classes)

    @property
    def load(self) -> float:
        return sum(c.load for c in self.classes)

    def speed_table(self) -> np.ndarray:
        """``table[c, i] = s_c(i)`` for ``i = 0..max_parallelism`` (0 at i = 0 and past d_c)."""
        t = np.zeros((self.num_classes, self.max_parallelism + 1))
        for c, cl in enumerate(self.classes):
            t[c, 1 : cl.max_parallelism + 1] = cl.speed_up
        return t

    def to_dict(self) -> dict[str, Any]:
        return {"num_servers": self.num_servers, "classes": [c.to_dict() for c in self.classes]}

    @classmethod
    def from_dict(cls, spec: Mapping[str, Any]) -> MoldableSystem:
        try:
            classes = tuple(
                MoldableClass(
                    tuple(c["speed_up"]),
                    c["arrival_rate"],
                    c.get("service_time", Exponential()),
                    c.get("name", "jobs"),
                )
                for c in spec["classes"]
            )
            return cls(spec["num_servers"], classes)
        except KeyError as exc:
            raise ValueError(f"moldable system: missing field {exc}") from None
