"""Job classes, workloads and the seeded arrival streams that feed the simulator.

Vocabulary of the papers: ``num_servers`` (k), ``server_need`` (n_i), ``service_time`` (D_i, a
duration), ``arrival_rate`` (lambda), class ``probability`` (alpha_i), ``load``
rho = lambda * sum_i alpha_i E[D_i] n_i / k.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .distributions import Distribution, distribution_from_dict

__all__ = ["ArrivalChunk", "ClassTable", "JobClass", "PoissonArrivals", "Workload"]


@dataclass(frozen=True)
class JobClass:
    """A job class: ``server_need`` servers held simultaneously for a ``service_time`` drawn from a
    distribution; an arrival belongs to this class with ``probability``."""

    server_need: int
    service_time: Distribution
    probability: float
    name: str = ""

    def __post_init__(self) -> None:
        label = f"class {self.name!r}" if self.name else "class"
        if isinstance(self.server_need, bool) or int(self.server_need) != self.server_need:
            raise ValueError(f"{label}.server_need: expected a positive integer, got {self.server_need!r}")
        if int(self.server_need) < 1:
            raise ValueError(f"{label}.server_need: expected a positive integer, got {self.server_need!r}")
        object.__setattr__(self, "server_need", int(self.server_need))
        if not isinstance(self.service_time, Distribution):
            object.__setattr__(
                self, "service_time", distribution_from_dict(self.service_time, where=f"{label}.service_time")
            )
        p = float(self.probability)
        if not math.isfinite(p) or p < 0.0 or p > 1.0:
            raise ValueError(f"{label}.probability: expected a number in [0, 1], got {self.probability!r}")
        object.__setattr__(self, "probability", p)

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "server_need": self.server_need,
            "probability": self.probability,
            "service_time": self.service_time.to_dict(),
        }


@dataclass(frozen=True)
class ArrivalChunk:
    """A block of consecutive arrivals: times, class indices, service times, and a per-job uniform
    ``estimate_noise`` in [0, 1) used by policies that model inexact user runtime estimates."""

    arrival_time: np.ndarray
    job_class: np.ndarray
    service_time: np.ndarray
    estimate_noise: np.ndarray

    def __len__(self) -> int:
        return int(self.arrival_time.size)


class ClassTable:
    """Per-class arrays derived from ``self.classes``; shared by synthetic workloads and traces."""

    classes: Sequence[JobClass]

    @property
    def num_classes(self) -> int:
        return len(self.classes)

    @property
    def server_needs(self) -> np.ndarray:
        return np.array([c.server_need for c in self.classes], dtype=np.int64)

    @property
    def probabilities(self) -> np.ndarray:
        return np.array([c.probability for c in self.classes], dtype=np.float64)

    @property
    def mean_service_times(self) -> np.ndarray:
        return np.array([c.service_time.mean for c in self.classes], dtype=np.float64)


@dataclass
class Workload(ClassTable):
    """A Poisson multiserver-job workload on ``num_servers`` servers.

    Give exactly one of ``arrival_rate`` and ``load``. ``load`` >= 1 is allowed (it is how one studies
    instability) but every result built on it is flagged unstable.
    """

    num_servers: int
    classes: Sequence[JobClass]
    arrival_rate: float | None = None
    load: float | None = None
    name: str = "custom"
    meta: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        k = self.num_servers
        if isinstance(k, bool) or int(k) != k or int(k) < 1:
            raise ValueError(f"num_servers: expected a positive integer, got {k!r}")
        self.num_servers = int(k)
        self.classes = tuple(c if isinstance(c, JobClass) else JobClass(**c) for c in self.classes)
        if not self.classes:
            raise ValueError("classes: expected at least one job class, got none")
        for i, c in enumerate(self.classes):
            if c.server_need > self.num_servers:
                raise ValueError(
                    f"classes[{i}] ({c.name or 'unnamed'}).server_need: {c.server_need} exceeds "
                    f"num_servers = {self.num_servers}"
                )
            if not math.isfinite(c.service_time.mean):
                raise ValueError(
                    f"classes[{i}] ({c.name or 'unnamed'}).service_time: the mean must be finite, "
                    f"got {c.service_time!r}"
                )
        total = sum(c.probability for c in self.classes)
        if abs(total - 1.0) > 1e-9:
            probs = [c.probability for c in self.classes]
            raise ValueError(f"classes.probability: must sum to 1, got {total!r} from {probs}")
        if (self.arrival_rate is None) == (self.load is None):
            raise ValueError(
                f"give exactly one of arrival_rate and load, got arrival_rate={self.arrival_rate!r}, "
                f"load={self.load!r}"
            )
        demand = self.demand_per_arrival
        if self.load is not None:
            rho = float(self.load)
            if not math.isfinite(rho) or rho <= 0.0:
                raise ValueError(f"load: expected a positive finite number, got {self.load!r}")
            self.load = rho
            self.arrival_rate = rho * self.num_servers / demand
        else:
            lam = float(self.arrival_rate)
            if not math.isfinite(lam) or lam <= 0.0:
                raise ValueError(
                    f"arrival_rate: expected a positive finite number, got {self.arrival_rate!r}"
                )
            self.arrival_rate = lam
            self.load = lam * demand / self.num_servers

    # ----------------------------------------------------------------------------------------------
    @property
    def demand_per_arrival(self) -> float:
        """varrho = sum_i alpha_i E[D_i] n_i: server-time brought by one arrival on average."""
        return float(np.sum(self.probabilities * self.mean_service_times * self.server_needs))

    @property
    def class_loads(self) -> np.ndarray:
        """rho_i = lambda alpha_i E[D_i] n_i / k; they sum to ``load``."""
        return (
            self.arrival_rate
            * self.probabilities
            * self.mean_service_times
            * self.server_needs
            / self.num_servers
        )

    @property
    def load_weights(self) -> np.ndarray:
        """rho_i / rho: the class weights of the weighted mean response time (004 Sec. 6.1)."""
        rho_i = self.class_loads
        return rho_i / rho_i.sum()

    def with_load(self, load: float) -> Workload:
        return Workload(self.num_servers, self.classes, load=load, name=self.name, meta=self.meta)

    def with_arrival_rate(self, arrival_rate: float) -> Workload:
        return Workload(
            self.num_servers, self.classes, arrival_rate=arrival_rate, name=self.name, meta=self.meta
        )

    def arrivals(self, seed: int | np.random.SeedSequence) -> PoissonArrivals:
        return PoissonArrivals(self, seed)

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "num_servers": self.num_servers,
            "arrival_rate": self.arrival_rate,
            "load": self.load,
            "classes": [c.to_dict() for c in self.classes],
        }


class PoissonArrivals:
    """The job stream of a workload for one seed, produced in chunks.

    Randomness comes from child streams of one ``SeedSequence``: inter-arrival times, classes, the
    estimate noise, and one service-time stream per class. The j-th job of class i therefore gets the
    same service time whatever the chunking and whatever the policy (common random numbers).
    """

    # Fixed child indices of the root SeedSequence; the policy's own stream is POLICY_STREAM.
    ARRIVAL_STREAM, CLASS_STREAM, NOISE_STREAM, POLICY_STREAM, FIRST_SERVICE_STREAM = 0, 1, 2, 3, 4

    finite = False

    def __init__(self, workload: Workload, seed: int | np.random.SeedSequence) -> None:
        self.workload = workload
        root = seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed)
        children = root.spawn(self.FIRST_SERVICE_STREAM + workload.num_classes)
        self._gen = [np.random.Generator(np.random.PCG64(s)) for s in children]
        self._cdf = np.cumsum(workload.probabilities)
        self._cdf[-1] = 1.0
        self._time = 0.0
        self.produced = 0

    def next_chunk(self, n: int) -> ArrivalChunk:
        wl = self.workload
        gaps = self._gen[self.ARRIVAL_STREAM].exponential(1.0 / wl.arrival_rate, n)
        # Accumulate from the last time (not last + cumsum): bit-identical whatever the chunk sizes.
        times = np.cumsum(np.concatenate(([self._time], gaps)))[1:]
        if n:
            self._time = float(times[-1])
        u = self._gen[self.CLASS_STREAM].random(n)
        cls = np.minimum(np.searchsorted(self._cdf, u, side="right"), wl.num_classes - 1).astype(np.int64)
        service = np.empty(n, dtype=np.float64)
        for i, c in enumerate(wl.classes):
            idx = np.flatnonzero(cls == i)
            if idx.size:
                service[idx] = c.service_time.sample(self._gen[self.FIRST_SERVICE_STREAM + i], idx.size)
        noise = self._gen[self.NOISE_STREAM].random(n)
        self.produced += n
        return ArrivalChunk(times, cls, service, noise)
