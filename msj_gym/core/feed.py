"""The one way jobs enter a simulator's arrival ring, shared by the simulator, the vector env (per
environment) and the compatibility env (one job at a time).

A stream is drawn in chunks of at most ``chunk`` jobs (and never more than the ring has room for, nor
past the run's arrival cap); a chunk may be written in parts (``limit``), the rest kept staged for the
next call. Every job's times, class, service time, estimate noise and per-job attributes are written;
each chunk is validated before anything of it is.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import state as S

__all__ = ["ArrivalError", "ArrivalFeed", "check_chunk"]


class ArrivalError(RuntimeError):
    """A job stream produced a job the simulator cannot take (raised as the simulator's error)."""


def check_chunk(chunk: Any, first_id: int, last_time: float) -> np.ndarray:
    """Refuse a chunk of arrivals with a non-positive or non-finite duration, or times that are not
    finite and non-decreasing from ``last_time``; returns its arrival times."""
    svc = chunk.service_time
    bad = np.flatnonzero(~np.isfinite(svc) | (svc <= 0))
    if bad.size:
        j = bad[0]
        raise ArrivalError(
            f"service_time: job {first_id + j} (class {int(chunk.job_class[j])}) has invalid duration "
            f"{svc[j]!r}; durations must be positive and finite"
        )
    times = chunk.arrival_time
    if not np.all(np.isfinite(times)) or np.any(np.diff(times) < 0) or times[0] < last_time:
        raise ArrivalError(
            "arrival_time: times must be finite and non-decreasing "
            f"(jobs {first_id}..{first_id + len(chunk)})"
        )
    return times


class ArrivalFeed:
    """Feeds one job stream (``source.next_chunk(n)``) into a simulator's arrival ring, up to
    ``max_arrivals`` jobs in all. ``capped`` tells whether the run reached that cap on an unending
    stream (the run is then cut short: unstable)."""

    def __init__(self, source: Any, max_arrivals: int, chunk: int) -> None:
        self.source = source
        self.max_arrivals = int(max_arrivals)
        self.chunk = int(chunk)
        self.finite = bool(getattr(source, "finite", False))
        self.capped = False
        self.last_time = -np.inf
        self._staged: Any = None
        self._pos = 0
        self._ended = False  # the source has nothing after what is staged

    def feed(self, sim: S.Sim, limit: int | None = None) -> None:
        """Write the next jobs of the stream into ``sim``'s ring (at most ``limit``), or mark the
        stream exhausted when it has no more."""
        iv = sim.iv
        ngen, narr = int(iv[S.I_NGEN]), int(iv[S.I_NARR])
        room = sim.ring_t.size - (ngen - narr)
        n = min(room, self.max_arrivals - ngen)
        if limit is not None:
            n = min(n, limit)
        if n <= 0:
            if ngen >= self.max_arrivals:
                iv[S.I_EXHAUSTED] = 1
                self.capped = not self.finite
            return
        if self._staged is None or self._pos >= len(self._staged):
            if self._ended:
                iv[S.I_EXHAUSTED] = 1
                return
            want = min(self.chunk, room, self.max_arrivals - ngen)
            chunk = self.source.next_chunk(want)
            if len(chunk) == 0:
                iv[S.I_EXHAUSTED] = 1
                return
            times = check_chunk(chunk, ngen, self.last_time)
            self.last_time = float(times[-1])
            self._staged, self._pos = chunk, 0
            self._ended = len(chunk) < want and self.finite
        c, lo = self._staged, self._pos
        m = min(n, len(c) - lo)
        part = slice(lo, lo + m)
        pos = (ngen + np.arange(m)) & (sim.ring_t.size - 1)
        sim.ring_t[pos] = c.arrival_time[part]
        sim.ring_c[pos] = c.job_class[part]
        sim.ring_s[pos] = c.service_time[part]
        sim.ring_n[pos] = c.estimate_noise[part]
        if sim.ring_a.shape[1]:
            sim.ring_a[pos] = c.job_attributes[part]
        iv[S.I_NGEN] = ngen + m
        self._pos = lo + m
        if self._ended and self._pos >= len(c):
            iv[S.I_EXHAUSTED] = 1
