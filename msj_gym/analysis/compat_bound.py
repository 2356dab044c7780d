"""A lower bound on the mean response time of every size-oblivious policy on a compatibility graph.

On the model of Bonald & Comte (2017), Sec. 2, a job is served at the sum of the capacities of the
servers that serve it. A job of a class with fixed servers can never be served faster than the total
capacity of its class's servers, ``r_i = sum_{s in S_i} C_s``; a job of a random-assignment class
(``choose = d``) never faster than its ``d`` largest pool servers together. The whole system never
serves faster than the capacity ``C`` of the servers some class may use. With exponential job sizes of
mean ``sigma`` a policy that does not know the sizes (any assignment of servers at arrival, any
scheduling, preemptive or not) sees every job in service complete at rate ``rate_j / sigma``, whatever
the past; so with ``n`` jobs in the system its departure rate is at most

    ``mu(n) = min(n r, C) / sigma``,  ``r = max_i r_i``,

which is nondecreasing in ``n``. The number of jobs is then stochastically at least that of the
birth-death chain with arrival rate ``lambda`` and death rates ``mu(n)`` (coupling), and by Little's law
its mean over ``lambda`` bounds every such policy's mean response time from below. With equal unit
servers and ``d = 1`` the chain is the M/M/S queue; with one class using every server, the M/M/1 queue of
rate ``C / sigma``.

The bound needs exponential sizes: with other size laws a size-oblivious policy can learn from the age of
a job (an age-based priority beats it under decreasing hazard rates), and a size-aware one beats it
under any law. Under every law and every policy a job still never finishes sooner than its size over
the capacity it may use, which gives the weaker :func:`service_time_bound`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..workloads.compat import CompatWorkload
from ..workloads.distributions import Exponential

__all__ = ["PooledBound", "service_time_bound", "size_oblivious_bound"]


@dataclass(frozen=True)
class PooledBound:
    """The bounding birth-death chain: ``mean_jobs`` and ``mean_response_time`` (``mean_jobs /
    arrival_rate``), from ``job_rate`` (``r``, the largest capacity one job can use) and ``capacity``
    (``C``)."""

    mean_jobs: float
    mean_response_time: float
    job_rate: float
    capacity: float


def _class_rates(workload: CompatWorkload) -> np.ndarray:
    """Per class, the largest capacity one of its jobs can be served at."""
    caps = np.asarray(workload.capacities, dtype=np.float64)
    rates = []
    for c in workload.classes:
        pool = np.sort(caps[list(c.servers)])[::-1]
        rates.append(float(pool[: c.degree].sum()))
    return np.array(rates)


def _job_rate(workload: CompatWorkload) -> float:
    return float(_class_rates(workload).max())


def service_time_bound(workload: CompatWorkload) -> float:
    """``sum_i p_i sigma / r_i``: the mean response time if every job ran alone at the largest capacity
    its class may use from its arrival on. A lower bound for every policy (size-aware too) under every
    size law, and far from tight under load."""
    return float((workload.probabilities * workload.mean_size / _class_rates(workload)).sum())


def size_oblivious_bound(workload: CompatWorkload) -> PooledBound:
    """The lower bound of the module docstring for ``workload``: no policy that does not know the job
    sizes has a smaller mean response time. Raises ``ValueError`` when the sizes are not exponential
    (the bound does not hold there) or when the load reaches the capacity of the servers the classes
    may use (every policy is unstable)."""
    if not isinstance(workload.service_time, Exponential):
        raise ValueError(
            "service_time: the size-oblivious bound holds for exponential sizes only, got "
            f"{workload.service_time!r}"
        )
    caps = np.asarray(workload.capacities, dtype=np.float64)
    used = sorted({s for c in workload.classes if c.arrival_rate > 0 for s in c.servers})
    capacity = float(caps[used].sum())
    r = _job_rate(workload)
    lam, sigma = workload.arrival_rate, workload.mean_size
    q = lam * sigma / capacity  # the chain's ratio once every usable server is busy
    if q >= 1.0:
        raise ValueError(
            f"load: {lam * sigma:.6g} units of work per unit time reach the capacity {capacity:.6g} of the "
            "servers the classes may use: every policy is unstable"
        )
    # below n0 the death rate n r / sigma grows; from n0 on it is C / sigma and the chain is geometric
    n0 = max(1, math.ceil(capacity / r - 1e-12))
    log_p = np.zeros(n0 + 1)  # unnormalised log P(n) for n = 0..n0
    for n in range(1, n0 + 1):
        log_p[n] = log_p[n - 1] + math.log(lam * sigma) - math.log(min(n * r, capacity))
    p = np.exp(log_p - log_p.max())
    head = p[:n0]
    tail_mass = p[n0] / (1.0 - q)
    tail_jobs = p[n0] * (n0 / (1.0 - q) + q / (1.0 - q) ** 2)
    mean_jobs = float(((np.arange(n0) * head).sum() + tail_jobs) / (head.sum() + tail_mass))
    return PooledBound(mean_jobs, mean_jobs / lam, r, capacity)
