"""Job classes, workloads and the seeded arrival streams that feed the simulator.

Vocabulary of the papers: ``num_servers`` (k), ``server_need`` (n_i), ``service_time`` (D_i, a
duration), ``arrival_rate`` (lambda), class ``probability`` (alpha_i), ``load``
rho = lambda * sum_i alpha_i E[D_i] n_i / k.

Input limits, checked where a workload is built (once, before anything runs): ``num_servers`` is an
integer in [1, MAX_SERVERS] (2**24: the analysis of the many-server limits of Ghanbarian et al. (2024)
evaluates systems up to k = 2**22, while the engine allocates per-server and per-slot arrays, so larger values
would only be a typo or a memory bomb); a ``server_need`` is an integer in [1, num_servers];
a class ``probability`` is finite and in (0, 1]; the ``load`` is finite and in [MIN_LOAD, MAX_LOAD]
(1e-6 .. 1e6), and an ``arrival_rate`` must be finite, positive and give a load in that range (below
1e-6 the arrival times grow so large that durations lose their precision next to them; above 1e6 the
queue can only explode, and rates near the float limit overflow the clock).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, cast

import numpy as np

from .distributions import Distribution, distribution_from_dict

__all__ = [
    "MAX_LOAD",
    "MAX_SERVERS",
    "MIN_LOAD",
    "ArrivalChunk",
    "ClassTable",
    "JobClass",
    "PoissonArrivals",
    "Workload",
    "check_integer",
    "check_load",
    "check_probability",
]

MAX_SERVERS = 2**24
MIN_LOAD = 1e-6
MAX_LOAD = 1e6


def check_integer(name: str, value: Any, lo: int, hi: int) -> int:
    """``value`` as an int if it is a whole number in [lo, hi] (an integral float is fine), else a
    one-line ``ValueError`` naming ``name`` and the value."""
    ok = not isinstance(value, bool) and isinstance(value, int | float | np.integer | np.floating)
    if ok and not (math.isfinite(value) and value == int(value) and lo <= value <= hi):
        ok = False
    if not ok:
        bound = "a positive integer" if lo == 1 else "an integer"
        raise ValueError(f"{name}: expected {bound}, got {value!r} (allowed: {lo} to {hi})")
    return int(value)


def check_load(value: Any, name: str = "load") -> float:
    """``value`` as a float if it is a usable load, finite and in [MIN_LOAD, MAX_LOAD]."""
    try:
        rho = float(value)
    except (TypeError, ValueError):
        rho = math.nan
    if isinstance(value, bool) or not (math.isfinite(rho) and MIN_LOAD <= rho <= MAX_LOAD):
        raise ValueError(
            f"{name}: expected a positive finite number in [{MIN_LOAD:g}, {MAX_LOAD:g}], got {value!r}"
        )
    return rho


def check_probability(value: Any, name: str = "probability") -> float:
    """``value`` as a float if it is a class probability: finite and in (0, 1]."""
    try:
        p = float(value)
    except (TypeError, ValueError):
        p = math.nan
    if isinstance(value, bool) or not (math.isfinite(p) and 0.0 < p <= 1.0):
        raise ValueError(f"{name}: expected a number in (0, 1], got {value!r}")
    return p


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
        need = check_integer(f"{label}.server_need", self.server_need, 1, MAX_SERVERS)
        object.__setattr__(self, "server_need", need)
        if not isinstance(self.service_time, Distribution):
            object.__setattr__(
                self, "service_time", distribution_from_dict(self.service_time, where=f"{label}.service_time")
            )
        p = check_probability(self.probability, f"{label}.probability")
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

    model: ClassVar[str] = "msj"  # the multiserver-job queue (see msj_gym.core.workload.WorkloadLike)
    num_servers: int
    classes: Sequence[JobClass]

    if TYPE_CHECKING:
        # every concrete table documents itself (a workload's results are keyed by it); declared for the
        # type checker only, so that a table lacking it still fails the runtime WorkloadLike check
        def to_dict(self) -> dict[str, Any]: ...

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
        self.num_servers = check_integer("num_servers", self.num_servers, 1, MAX_SERVERS)
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
            rho = check_load(self.load, "load")
            self.load = rho
            self.arrival_rate = rho * self.num_servers / demand
        else:
            raw: Any = self.arrival_rate  # the caller's value, unchecked: float() may reject it
            try:
                lam = float(raw)
            except (TypeError, ValueError):
                lam = math.nan
            if isinstance(self.arrival_rate, bool) or not math.isfinite(lam) or lam <= 0.0:
                raise ValueError(
                    f"arrival_rate: expected a positive finite number, got {self.arrival_rate!r}"
                )
            rho = lam * demand / self.num_servers
            if not MIN_LOAD <= rho <= MAX_LOAD:  # also catches a rate whose load overflows to inf
                raise ValueError(
                    f"arrival_rate: {self.arrival_rate!r} gives the load {rho:.3g}, outside "
                    f"[{MIN_LOAD:g}, {MAX_LOAD:g}]"
                )
            self.arrival_rate = lam
            self.load = rho

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
        """rho_i / rho: the class weights of the weighted mean response time (Chen et al. (2026), Sec.
        6.1)."""
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


def draw_arrivals(
    arrival_stream: np.random.Generator,
    class_stream: np.random.Generator,
    start: float,
    rate: float,
    cdf: np.ndarray,
    n: int,
) -> tuple[np.ndarray, np.ndarray]:
    """``n`` Poisson arrival times at ``rate`` after time ``start``, and their classes drawn by the
    cumulative class probabilities ``cdf`` (its last entry 1), each from its own stream."""
    gaps = arrival_stream.exponential(1.0 / rate, n)
    # Accumulate from the last time (not last + cumsum): bit-identical whatever the chunk sizes.
    times = np.cumsum(np.concatenate(([start], gaps)))[1:]
    u = class_stream.random(n)
    cls = np.minimum(np.searchsorted(cdf, u, side="right"), cdf.size - 1).astype(np.int64)
    return times, cls


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
        rate = cast(float, wl.arrival_rate)  # __post_init__ always sets it
        times, cls = draw_arrivals(
            self._gen[self.ARRIVAL_STREAM], self._gen[self.CLASS_STREAM], self._time, rate, self._cdf, n
        )
        if n:
            self._time = float(times[-1])
        service = np.empty(n, dtype=np.float64)
        for i, c in enumerate(wl.classes):
            idx = np.flatnonzero(cls == i)
            if idx.size:
                service[idx] = c.service_time.sample(self._gen[self.FIRST_SERVICE_STREAM + i], idx.size)
        noise = self._gen[self.NOISE_STREAM].random(n)
        self.produced += n
        return ArrivalChunk(times, cls, service, noise)
