"""A distribution of multiserver-job systems, for training one scheduler across systems and loads.

:func:`sample_system` draws a Poisson workload from :class:`SystemDistribution` with a
``numpy.random.Generator``; :func:`sample_systems` draws ``n`` of them from one seed (each from its own
child of the seed, so system ``i`` does not depend on ``n``). Same seed, same systems, bit for bit.

What a system is made of (the defaults; every range is a field of :class:`SystemDistribution`):

* ``k`` servers, log-uniform on the integers of ``[8, 256]``;
* ``2..8`` classes with distinct server needs: a need of 1 with probability 0.7 and a need of ``k``
  (full-width jobs, as in one-or-all and ``sf-fig2``) with probability 0.35, the others from one of
  three families: powers of two, divisors of ``k`` (which pack ``k`` exactly), or any integer
  (log-uniform in ``[1, k]``, which packs badly);
* arrival shares from a Dirichlet(1) draw tilted towards the narrow classes (weight
  ``need ** -beta``, ``beta`` uniform in ``[0, 1.5]``), each at least 1 %;
* mean durations ``need ** gamma * u`` (``gamma`` uniform in ``[-0.5, 0.5]``, ``u`` log-uniform in
  ``[1/4, 4]``), scaled so that the mean over arrivals is 1;
* per class a duration family: exponential (half of the classes), Erlang with 2 to 4 phases
  (squared coefficient of variation below 1), a balanced hyperexponential with squared coefficient
  of variation in ``[2, 10]``, uniform, or deterministic;
* the load: a share of :func:`load_limit`, uniform in ``[0.3, 0.97]``.

:func:`load_limit` is the largest load at which Static Quickswap is known to be stable, by the
sufficient condition of Chen et al. (Quickswap, Sec. 5.1, Remark 1): ``lambda * sum_i alpha_i E[S_i] /
floor(k / n_i) < 1``, which is 1 when every need divides ``k`` and below 1 where needs pack ``k``
badly. Loads near it are where the heuristics part ways. The built-in scenarios ``bs-fig1`` (mean
durations 40 times apart) and ``borg-cellb`` (26 classes on 2,048 servers) lie outside this
distribution.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .distributions import Deterministic, Distribution, Erlang, Exponential, HyperExponential, Uniform
from .workload import ClassTable, JobClass, Workload

__all__ = ["SystemDistribution", "load_limit", "sample_system", "sample_systems"]


@dataclass(frozen=True)
class SystemDistribution:
    """The ranges systems are drawn from (see the module docstring)."""

    min_servers: int = 8
    max_servers: int = 256
    min_classes: int = 2
    max_classes: int = 8
    p_need_one: float = 0.7
    p_full_width: float = 0.35
    tilt: tuple[float, float] = (0.0, 1.5)
    need_exponent: tuple[float, float] = (-0.5, 0.5)
    duration_spread: float = 4.0
    p_exponential: float = 0.5
    load_share: tuple[float, float] = (0.3, 0.97)
    min_share: float = 0.01

    def __post_init__(self) -> None:
        if not 2 <= self.min_servers <= self.max_servers:
            raise ValueError(
                f"servers: expected 2 <= min_servers <= max_servers, "
                f"got {self.min_servers}, {self.max_servers}"
            )
        if not 1 <= self.min_classes <= self.max_classes:
            raise ValueError(
                f"classes: expected 1 <= min_classes <= max_classes, "
                f"got {self.min_classes}, {self.max_classes}"
            )
        lo, hi = self.load_share
        if not 0 < lo <= hi < 1:
            raise ValueError(f"load_share: expected 0 < low <= high < 1, got {self.load_share}")


def load_limit(workload: ClassTable) -> float:
    """The load below which Static Quickswap is stable by Chen et al.'s sufficient condition
    (Sec. 5.1, Remark 1), as a load: ``sum_i alpha_i E[S_i] n_i / k / sum_i alpha_i E[S_i] /
    floor(k / n_i)``."""
    a = np.asarray(workload.probabilities, dtype=np.float64)
    m = np.asarray(workload.mean_service_times, dtype=np.float64)
    n = np.asarray(workload.server_needs, dtype=np.int64)
    k = int(workload.num_servers)
    return float(np.sum(a * m * n) / k / np.sum(a * m / (k // n)))


def _needs(rng: np.random.Generator, k: int, count: int, space: SystemDistribution) -> list[int]:
    needs: set[int] = set()
    if rng.random() < space.p_need_one:
        needs.add(1)
    if rng.random() < space.p_full_width and len(needs) < count:
        needs.add(k)
    family = int(rng.integers(3))
    if family == 0:
        pool = [2**i for i in range(int(math.log2(k)) + 1)]
    elif family == 1:
        pool = [d for d in range(1, k + 1) if k % d == 0]
    else:
        pool = list(range(1, k + 1))
    pool = [x for x in pool if x not in needs]
    if len(pool) + len(needs) < count:  # too few powers or divisors: any integer then
        pool = [x for x in range(1, k + 1) if x not in needs]
    if count > len(needs):
        weights = 1.0 / np.asarray(pool, dtype=np.float64)  # log-uniform over the pool
        picks = rng.choice(len(pool), size=count - len(needs), replace=False, p=weights / weights.sum())
        needs.update(pool[i] for i in picks)
    return sorted(needs)


def _duration(rng: np.random.Generator, mean: float, space: SystemDistribution) -> Distribution:
    if rng.random() < space.p_exponential:
        return Exponential(mean)
    family = int(rng.integers(4))
    if family == 0:
        return Erlang(int(rng.integers(2, 5)), mean)
    if family == 1:
        return HyperExponential(mean=mean, scv=float(rng.uniform(2.0, 10.0)))
    if family == 2:
        return Uniform(0.0, 2.0 * mean)
    return Deterministic(mean)


def sample_system(rng: np.random.Generator, space: SystemDistribution | None = None) -> Workload:
    """One system drawn from ``space`` (default :class:`SystemDistribution`) with ``rng``."""
    space = space or SystemDistribution()
    lo, hi = math.log(space.min_servers), math.log(space.max_servers + 1)
    k = min(int(math.exp(rng.uniform(lo, hi))), space.max_servers)
    count = int(rng.integers(space.min_classes, min(space.max_classes, k) + 1))
    needs = np.asarray(_needs(rng, k, count, space), dtype=np.float64)
    beta = rng.uniform(*space.tilt)
    shares = rng.dirichlet(np.ones(count)) * needs**-beta
    shares = np.maximum(shares / shares.sum(), space.min_share)
    shares /= shares.sum()
    gamma = rng.uniform(*space.need_exponent)
    spread = math.log(space.duration_spread)
    means = needs**gamma * np.exp(rng.uniform(-spread, spread, count))
    means /= float(shares @ means)
    classes = [
        JobClass(int(n), _duration(rng, float(m), space), float(p), f"need-{int(n)}")
        for n, m, p in zip(needs, means, shares, strict=True)
    ]
    system = Workload(num_servers=k, classes=classes, load=0.5, name="generated")
    share = rng.uniform(*space.load_share)
    return system.with_load(share * load_limit(system))


def sample_systems(seed: int, n: int, space: SystemDistribution | None = None) -> list[Workload]:
    """``n`` systems from ``seed``: system ``i`` is drawn with its own child generator, so the first
    systems do not depend on ``n``."""
    children = np.random.SeedSequence(seed).spawn(n)
    return [sample_system(np.random.default_rng(child), space) for child in children]
