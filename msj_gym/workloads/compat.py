"""Workloads of the job-server compatibility model (Bonald & Comte (2017), Sec. 2 and 5).

``S`` servers with capacities ``C_s`` (work per unit time) and ``N`` job classes. Class ``i`` arrives as
a Poisson process of rate ``lambda_i`` and may only use the servers of its compatibility set ``S_i``;
a job in service is processed in parallel by every server of ``S_i`` not busy with an earlier job, at
the sum of their capacities. A class may also stand for a *random assignment* (Bonald & Comte (2017), Sec. 5,
"Large system"): each job of the class is given ``choose = d`` servers drawn uniformly without replacement
from the class's ``servers``, fixed for its life in the system.

Job sizes (work, the papers' ``service_time`` at unit capacity) are i.i.d. from one distribution, as in
Sec. 5; the load is ``rho = sum_i lambda_i sigma / sum_s C_s`` with ``sigma`` the mean size.

The three non-exponential size distributions of Sec. 5 are available by name in
:data:`PAPER_SIZE_DISTRIBUTIONS`, and the paper's systems in :data:`COMPAT_SCENARIOS`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from .distributions import Distribution, Exponential, HyperExponential, MixedErlang, distribution_from_dict
from .workload import ArrivalChunk, draw_arrivals

__all__ = [
    "COMPAT_SCENARIOS",
    "PAPER_SIZE_DISTRIBUTIONS",
    "CompatArrivals",
    "CompatClass",
    "CompatWorkload",
    "build_compat_scenario",
    "paper_size_distribution",
    "zipf_phases",
]


def zipf_phases(max_phases: int = 200, alpha: float = 2.0, phase_mean: float = 1.0) -> MixedErlang:
    """A sum of ``K`` Exp(``phase_mean``) phases with ``P(K = k)`` proportional to ``1 / k**alpha``,
    ``k = 1..max_phases`` (Bonald & Comte (2017), Sec. 5, third distribution)."""
    k = np.arange(1, int(max_phases) + 1)
    p = 1.0 / k.astype(np.float64) ** float(alpha)
    p /= p.sum()
    return MixedErlang(p.tolist(), k.tolist(), (k * float(phase_mean)).tolist())


def paper_size_distribution(name: str) -> Distribution:
    """The job-size distributions of Bonald & Comte (2017), Sec. 5 by name: ``exponential`` (mean 1),
    ``bimodal`` (25 phases w.p. 1/6 else 1 phase, phase mean 1/5: mean 1, std ~1.84), ``hyperexponential``
    (means 5 and 1/5 w.p. 1/6 and 5/6: mean 1, std ~2.05) and ``zipf`` (Zipf(K=200, alpha=2) number of Exp(1)
    phases: mean ~3.58, std ~10.61)."""
    if name == "exponential":
        return Exponential(1.0)
    if name == "bimodal":
        return MixedErlang([1 / 6, 5 / 6], [25, 1], [25 / 5, 1 / 5])
    if name == "hyperexponential":
        return HyperExponential([1 / 6, 5 / 6], [5.0, 1 / 5])
    if name == "zipf":
        return zipf_phases(200, 2.0, 1.0)
    raise ValueError(f"distribution: expected one of {list(PAPER_SIZE_DISTRIBUTIONS)}, got {name!r}")


PAPER_SIZE_DISTRIBUTIONS = ("exponential", "bimodal", "hyperexponential", "zipf")


@dataclass(frozen=True)
class CompatClass:
    """A job class: compatibility set ``servers`` (0-based server indices) and Poisson ``arrival_rate``.
    With ``choose = d > 0`` each job instead gets ``d`` of ``servers`` uniformly at random."""

    servers: tuple[int, ...]
    arrival_rate: float
    choose: int = 0
    name: str = ""

    def __post_init__(self) -> None:
        label = f"class {self.name!r}" if self.name else "class"
        try:
            servers = tuple(int(s) for s in self.servers)
        except (TypeError, ValueError):
            raise ValueError(f"{label}.servers: expected server indices, got {self.servers!r}") from None
        if not servers or len(set(servers)) != len(servers) or min(servers) < 0:
            raise ValueError(f"{label}.servers: expected distinct non-negative indices, got {self.servers!r}")
        object.__setattr__(self, "servers", tuple(sorted(servers)))
        lam = float(self.arrival_rate)
        if not math.isfinite(lam) or lam < 0.0:
            raise ValueError(
                f"{label}.arrival_rate: expected a finite number >= 0, got {self.arrival_rate!r}"
            )
        object.__setattr__(self, "arrival_rate", lam)
        if isinstance(self.choose, bool) or int(self.choose) != self.choose or not 0 <= self.choose:
            raise ValueError(f"{label}.choose: expected an integer >= 0, got {self.choose!r}")
        if self.choose > len(servers):
            raise ValueError(f"{label}.choose: {self.choose} exceeds the {len(servers)} servers of the class")
        object.__setattr__(self, "choose", int(self.choose))

    @property
    def degree(self) -> int:
        """Number of servers a job of this class may use."""
        return self.choose or len(self.servers)

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "servers": list(self.servers),
            "arrival_rate": self.arrival_rate,
            "choose": self.choose,
        }


@dataclass(frozen=True)
class CompatWorkload:
    """Poisson arrivals on a job-server compatibility graph (Bonald & Comte (2017), Sec. 2).
    ``capacities`` are the ``C_s``; ``service_time`` is the job-size (work) distribution shared by all
    classes."""

    capacities: tuple[float, ...]
    classes: tuple[CompatClass, ...]
    service_time: Distribution = field(default_factory=Exponential)
    name: str = "compat"
    meta: Mapping[str, Any] = field(default_factory=dict)
    model: ClassVar[str] = "compatibility"  # the policies defined on it declare this model

    def __post_init__(self) -> None:
        caps = tuple(float(c) for c in self.capacities)
        if not caps or any(not math.isfinite(c) or c <= 0.0 for c in caps):
            raise ValueError(f"capacities: expected positive finite numbers, got {self.capacities!r}")
        object.__setattr__(self, "capacities", caps)
        classes = tuple(c if isinstance(c, CompatClass) else CompatClass(**c) for c in self.classes)
        if not classes:
            raise ValueError("classes: expected at least one job class, got none")
        for i, c in enumerate(classes):
            if max(c.servers) >= len(caps):
                raise ValueError(
                    f"classes[{i}] ({c.name or 'unnamed'}).servers: server {max(c.servers)} does not exist "
                    f"(num_servers = {len(caps)})"
                )
        if sum(c.arrival_rate for c in classes) <= 0.0:
            raise ValueError("classes.arrival_rate: expected a positive total arrival rate, got 0")
        object.__setattr__(self, "classes", classes)
        dist = distribution_from_dict(self.service_time)
        if not math.isfinite(dist.mean):
            raise ValueError(f"service_time: the mean must be finite, got {dist!r}")
        object.__setattr__(self, "service_time", dist)

    # ----------------------------------------------------------------------------------------------
    @property
    def num_servers(self) -> int:
        return len(self.capacities)

    @property
    def num_classes(self) -> int:
        return len(self.classes)

    @property
    def arrival_rates(self) -> np.ndarray:
        return np.array([c.arrival_rate for c in self.classes], dtype=np.float64)

    @property
    def arrival_rate(self) -> float:
        return float(self.arrival_rates.sum())

    @property
    def probabilities(self) -> np.ndarray:
        return self.arrival_rates / self.arrival_rate

    @property
    def mean_size(self) -> float:
        """sigma, the mean job size (work)."""
        return float(self.service_time.mean)

    @property
    def load(self) -> float:
        """rho = sum_i lambda_i sigma / sum_s C_s (Bonald & Comte (2017), Sec. 5)."""
        return self.arrival_rate * self.mean_size / float(sum(self.capacities))

    @property
    def server_needs(self) -> np.ndarray:
        """Per class, the number of servers a job may use (reported as the class's ``server_need``)."""
        return np.array([c.degree for c in self.classes], dtype=np.int64)

    @property
    def max_degree(self) -> int:
        return int(self.server_needs.max())

    @property
    def job_attributes(self) -> int:
        """Integers drawn with each job: its servers (``max_degree`` of them, -1 padded)."""
        return self.max_degree

    @property
    def load_weights(self) -> np.ndarray:
        """Class weights of the weighted mean response time: the arrival-rate shares."""
        return self.probabilities

    def with_load(self, load: float) -> CompatWorkload:
        """The same system with every arrival rate scaled so that ``rho = load``."""
        rho = float(load)
        if not math.isfinite(rho) or rho <= 0.0:
            raise ValueError(f"load: expected a positive finite number, got {load!r}")
        return self._scaled(rho / self.load)

    def with_arrival_rate(self, arrival_rate: float) -> CompatWorkload:
        lam = float(arrival_rate)
        if not math.isfinite(lam) or lam <= 0.0:
            raise ValueError(f"arrival_rate: expected a positive finite number, got {arrival_rate!r}")
        return self._scaled(lam / self.arrival_rate)

    def _scaled(self, f: float) -> CompatWorkload:
        classes = tuple(CompatClass(c.servers, c.arrival_rate * f, c.choose, c.name) for c in self.classes)
        return CompatWorkload(self.capacities, classes, self.service_time, self.name, self.meta)

    def arrivals(self, seed: int | np.random.SeedSequence) -> CompatArrivals:
        return CompatArrivals(self, seed)

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "model": "compatibility-graph",
            "capacities": list(self.capacities),
            "arrival_rate": self.arrival_rate,
            "load": self.load,
            "service_time": self.service_time.to_dict(),
            "classes": [c.to_dict() for c in self.classes],
        }


@dataclass(frozen=True)
class CompatChunk(ArrivalChunk):
    """An :class:`ArrivalChunk` plus each job's servers (rows padded with -1)."""

    servers: np.ndarray = field(default_factory=lambda: np.zeros((0, 1), dtype=np.int64))

    @property
    def job_attributes(self) -> np.ndarray:
        """The per-job attributes the simulator hands to the policies: the servers."""
        return self.servers


class CompatArrivals:
    """The job stream of a compatibility workload for one seed, in chunks. Child streams of one
    ``SeedSequence`` as in :class:`~msj_gym.workloads.PoissonArrivals` (arrival times, classes, noise,
    [policy], one size stream per class) plus one stream for the random server assignments, so every
    scheduler sees the same jobs for the same seed."""

    ARRIVAL_STREAM, CLASS_STREAM, NOISE_STREAM, POLICY_STREAM, FIRST_SERVICE_STREAM = 0, 1, 2, 3, 4
    finite = False

    def __init__(self, workload: CompatWorkload, seed: int | np.random.SeedSequence) -> None:
        self.workload = workload
        root = seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed)
        children = root.spawn(self.FIRST_SERVICE_STREAM + workload.num_classes + 1)
        self._gen = [np.random.Generator(np.random.PCG64(s)) for s in children]
        self._assign = self._gen[-1]
        self._cdf = np.cumsum(workload.probabilities)
        self._cdf[-1] = 1.0
        self._time = 0.0
        self.produced = 0
        self.last_servers = np.zeros((0, workload.max_degree), dtype=np.int64)

    def next_chunk(self, n: int) -> CompatChunk:
        wl = self.workload
        times, cls = draw_arrivals(
            self._gen[self.ARRIVAL_STREAM],
            self._gen[self.CLASS_STREAM],
            self._time,
            wl.arrival_rate,
            self._cdf,
            n,
        )
        if n:
            self._time = float(times[-1])
        service = np.empty(n, dtype=np.float64)
        servers = np.full((n, wl.max_degree), -1, dtype=np.int64)
        for i, c in enumerate(wl.classes):
            idx = np.flatnonzero(cls == i)
            if not idx.size:
                continue
            service[idx] = wl.service_time.sample(self._gen[self.FIRST_SERVICE_STREAM + i], idx.size)
            pool = np.asarray(c.servers, dtype=np.int64)
            if c.choose:
                # d of the pool uniformly without replacement: the d smallest of i.i.d. uniform keys
                keys = self._assign.random((idx.size, pool.size))
                pick = np.sort(np.argpartition(keys, c.choose - 1, axis=1)[:, : c.choose], axis=1)
                servers[idx, : c.choose] = pool[pick]
            else:
                servers[idx, : pool.size] = pool
        noise = self._gen[self.NOISE_STREAM].random(n)
        self.produced += n
        self.last_servers = servers
        return CompatChunk(times, cls, service, noise, servers)


# --------------------------------------------------------------------------------------------------
# The paper's systems (Bonald & Comte (2017), Sec. 5), by name. Loads follow the paper's rho;
# lambda_1 = lambda_2.


def _tree(capacities: Sequence[float], load: float, distribution: str) -> CompatWorkload:
    """Three servers: server 0 dedicated to class 1, server 1 to class 2, server 2 shared (Fig. 1), or,
    with two capacities, class 1 on servers {0, 1} and class 2 on server 1 only (Fig. 2)."""
    dist = paper_size_distribution(distribution)
    sets: tuple[tuple[int, ...], ...]
    if len(capacities) == 3:
        sets = ((0, 2), (1, 2))
    else:
        sets = ((0, 1), (1,))
    lam = float(load) * float(sum(capacities)) / dist.mean / 2.0
    classes = tuple(CompatClass(s, lam, name=f"class{i + 1}") for i, s in enumerate(sets))
    return CompatWorkload(tuple(capacities), classes, dist)


def _random_d(num_servers: int, d: int, load: float, distribution: str) -> CompatWorkload:
    dist = paper_size_distribution(distribution)
    lam = float(load) * num_servers / dist.mean
    cls = CompatClass(tuple(range(num_servers)), lam, choose=d, name=f"random-{d}")
    return CompatWorkload(tuple([1.0] * num_servers), (cls,), dist)


COMPAT_SCENARIOS: dict[str, tuple[str, Callable[..., CompatWorkload]]] = {
    "003-tree-symmetric": (
        "S=3, C=(1,1,1): class 1 on servers {1,3}, class 2 on {2,3} (Bonald & Comte (2017), Fig. 1)",
        lambda load, distribution: _tree((1.0, 1.0, 1.0), load, distribution),
    ),
    "003-tree-asymmetric": (
        "S=2, C=(1,1): class 1 on servers {1,3}, class 2 on {3} (Bonald & Comte (2017), Fig. 2, mu_2 = 0)",
        lambda load, distribution: _tree((1.0, 1.0), load, distribution),
    ),
    "003-random-2": (
        "S=100 unit servers, each job on d=2 servers chosen uniformly at random "
        "(Bonald & Comte (2017), Fig. 3)",
        lambda load, distribution: _random_d(100, 2, load, distribution),
    ),
    "003-random-3": (
        "S=100 unit servers, each job on d=3 servers chosen uniformly at random "
        "(Bonald & Comte (2017), Fig. 4)",
        lambda load, distribution: _random_d(100, 3, load, distribution),
    ),
}


def build_compat_scenario(
    name: str, *, load: float = 0.5, distribution: str = "exponential"
) -> CompatWorkload:
    """One of :data:`COMPAT_SCENARIOS` at load ``rho`` with a size distribution of
    :data:`PAPER_SIZE_DISTRIBUTIONS`."""
    entry = COMPAT_SCENARIOS.get(name)
    if entry is None:
        raise ValueError(f"scenario: expected one of {list(COMPAT_SCENARIOS)}, got {name!r}")
    wl = entry[1](load, distribution)
    return CompatWorkload(wl.capacities, wl.classes, wl.service_time, name, {"scenario": name})
