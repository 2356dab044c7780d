"""Trace replay: a finite, recorded job stream (submit time, server need, service time)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .distributions import Empirical
from .workload import ArrivalChunk, ClassTable, JobClass

__all__ = ["TraceWorkload"]


class TraceWorkload(ClassTable):
    """A recorded job stream replayed as is. Jobs are grouped into classes by server need (one class per
    distinct need, ascending), each with the empirical distribution of its service times, so policies and
    metrics see the same class structure as for a synthetic workload.

    ``time_scale`` multiplies every inter-arrival gap (values < 1 compress time and raise the load).
    """

    finite = True

    def __init__(
        self,
        num_servers: int,
        arrival_time: Sequence[float],
        server_need: Sequence[int],
        service_time: Sequence[float],
        *,
        name: str = "trace",
        time_scale: float = 1.0,
    ) -> None:
        t = np.asarray(arrival_time, dtype=np.float64)
        n = np.asarray(server_need)
        s = np.asarray(service_time, dtype=np.float64)
        if not (t.ndim == n.ndim == s.ndim == 1) or not (t.size == n.size == s.size) or t.size == 0:
            raise ValueError(
                f"trace {name!r}: arrival_time, server_need and service_time must be 1-D of one non-zero "
                f"length, got {t.shape}, {n.shape}, {s.shape}"
            )
        if not np.isfinite(time_scale) or time_scale <= 0:
            raise ValueError(f"trace {name!r}.time_scale: expected a positive number, got {time_scale!r}")
        for label, arr, bad in (
            ("arrival_time", t, ~np.isfinite(t) | (t < 0)),
            ("service_time", s, ~np.isfinite(s) | (s <= 0)),
            ("server_need", n, (n < 1) | (n > num_servers) | (n != np.round(n))),
        ):
            idx = np.flatnonzero(bad)
            if idx.size:
                raise ValueError(
                    f"trace {name!r}.{label}: invalid value {arr[idx[0]].item()!r} for job {idx[0]} "
                    f"(num_servers = {num_servers})"
                )
        order = np.argsort(t, kind="stable")
        t0 = t[order][0]
        self.arrival_time = t0 + (t[order] - t0) * time_scale
        self.server_need_per_job = n[order].astype(np.int64)
        self.service_time_per_job = s[order]
        self.num_servers = int(num_servers)
        self.name = name
        needs, inverse = np.unique(self.server_need_per_job, return_inverse=True)
        self.job_class = inverse.astype(np.int64)
        counts = np.bincount(self.job_class, minlength=needs.size)
        self.classes = tuple(
            JobClass(
                server_need=int(need),
                service_time=Empirical(self.service_time_per_job[self.job_class == i]),
                probability=counts[i] / counts.sum(),
                name=f"need-{int(need)}",
            )
            for i, need in enumerate(needs)
        )
        span = float(self.arrival_time[-1] - self.arrival_time[0])
        self.arrival_rate = (t.size - 1) / span if span > 0 else float("inf")
        work = float(np.sum(self.server_need_per_job * self.service_time_per_job))
        self.load = work / (self.num_servers * span) if span > 0 else float("inf")
        self.meta: dict[str, Any] = {"trace_jobs": int(t.size), "time_scale": time_scale}

    @property
    def load_weights(self) -> np.ndarray:
        work = np.bincount(self.job_class, weights=self.server_need_per_job * self.service_time_per_job)
        return work / work.sum()

    def arrivals(self, seed: int | np.random.SeedSequence) -> _TraceArrivals:
        return _TraceArrivals(self, seed)

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "num_servers": self.num_servers,
            "jobs": int(self.arrival_time.size),
            "arrival_rate": self.arrival_rate,
            "load": self.load,
        }


class _TraceArrivals:
    finite = True

    def __init__(self, trace: TraceWorkload, seed: int | np.random.SeedSequence) -> None:
        self.trace = trace
        root = seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed)
        self._noise = np.random.Generator(np.random.PCG64(root.spawn(3)[2]))
        self.produced = 0

    def next_chunk(self, n: int) -> ArrivalChunk:
        tr = self.trace
        lo, hi = self.produced, min(self.produced + n, tr.arrival_time.size)
        self.produced = hi
        return ArrivalChunk(
            tr.arrival_time[lo:hi],
            tr.job_class[lo:hi],
            tr.service_time_per_job[lo:hi],
            self._noise.random(hi - lo),
        )
