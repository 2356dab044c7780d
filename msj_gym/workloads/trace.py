"""Trace replay: a finite, recorded job stream (submit time, server need, service time)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np

from .distributions import MAX_DURATION, MIN_DURATION, Empirical
from .workload import MAX_SERVERS, ArrivalChunk, ClassTable, JobClass, check_integer, check_load

__all__ = ["REQUESTED_TIME", "ReplayScenario", "TraceWorkload", "replay_length", "requested_time_attribute"]

#: The name of the per-job attribute that carries a job's requested time (its user's runtime estimate).
REQUESTED_TIME = "requested_time"


def requested_time_attribute(workload: ClassTable) -> int | None:
    """The index of the per-job attribute holding the requested time (its float64 bits), or None if
    ``workload`` carries no requested times (a synthetic workload, a GPU trace)."""
    names = tuple(getattr(workload, "job_attribute_names", ()))
    return names.index(REQUESTED_TIME) if REQUESTED_TIME in names else None


def replay_length(workload: ClassTable) -> int | None:
    """How many jobs a finite workload (a trace replay) holds, which is also its default run length;
    None for an endless (synthetic) one."""
    if not getattr(workload, "finite", False):
        return None
    return int(np.asarray(cast(TraceWorkload, workload).arrival_time).size)  # only a replay is finite


class TraceWorkload(ClassTable):
    """A recorded job stream replayed as is, its numbers within the limits a scenario file has
    (``num_servers`` at most ``MAX_SERVERS``, service times in [MIN_DURATION, MAX_DURATION], a load
    given in [MIN_LOAD, MAX_LOAD]). Jobs are grouped into classes by server need (one class per
    distinct need, ascending), each with the empirical distribution of its service times, so policies and
    metrics see the same class structure as for a synthetic workload. With ``job_label`` (one label per
    job, e.g. a trace's priority or queue) a class is a distinct (label, need) pair, named
    ``"label/need-n"``, sorted by label and then need: a class keeps a single server need, as the
    model requires.

    ``time_scale`` multiplies every inter-arrival gap (values < 1 compress time and raise the load).

    ``slowdown_tau``: the bounded slowdown's tau, in the trace's time unit; 10 by default, the 10 seconds
    of the HPC scheduling papers (every loader of msj_gym reads times in seconds).

    ``requested_time`` (one per job, positive): the time each job's user requested, the runtime estimate
    of batch schedulers (SWF field 9). It travels with the job as its per-job attribute
    ``"requested_time"`` (``job_attribute_names``; the float64's bits in the int64 attribute column), which
    every policy may read (:func:`msj_gym.core.access.requested_time`): an estimate the scheduler is
    given, not the job's size.
    """

    finite = True
    slowdown_tau = 10.0

    def __init__(
        self,
        num_servers: int,
        arrival_time: Sequence[float] | np.ndarray,
        server_need: Sequence[int] | np.ndarray,
        service_time: Sequence[float] | np.ndarray,
        *,
        name: str = "trace",
        time_scale: float = 1.0,
        job_label: Sequence[str] | np.ndarray | None = None,
        requested_time: Sequence[float] | np.ndarray | None = None,
    ) -> None:
        t, n, s = _checked_jobs(name, num_servers, arrival_time, server_need, service_time, time_scale)
        requested, labels = _checked_extras(name, t.shape, requested_time, job_label)
        order = np.argsort(t, kind="stable")
        t0 = t[order][0]
        self.arrival_time = t0 + (t[order] - t0) * time_scale
        self.server_need_per_job = n[order].astype(np.int64)
        self.service_time_per_job = s[order]
        self.num_servers = int(num_servers)
        self.name = name
        self.job_label = None if labels is None else labels[order]
        self.requested_time_per_job = None if requested is None else requested[order]
        self.job_class, self.classes = _trace_classes(
            self.num_servers, self.server_need_per_job, self.service_time_per_job, self.job_label
        )
        span = float(self.arrival_time[-1] - self.arrival_time[0])
        self.arrival_rate = (t.size - 1) / span if span > 0 else float("inf")
        work = float(np.sum(self.server_need_per_job * self.service_time_per_job))
        self.load = work / (self.num_servers * span) if span > 0 else float("inf")
        self.meta: dict[str, Any] = {"trace_jobs": int(t.size), "time_scale": time_scale}

    def with_time_scale(self, factor: float) -> TraceWorkload:
        """The same jobs with every inter-arrival gap further multiplied by ``factor``."""
        out = TraceWorkload(
            self.num_servers,
            self.arrival_time,
            self.server_need_per_job,
            self.service_time_per_job,
            name=self.name,
            time_scale=factor,
            job_label=self.job_label,
            requested_time=self.requested_time_per_job,
        )
        out.slowdown_tau = self.slowdown_tau
        out.meta = {**self.meta, "time_scale": self.meta.get("time_scale", 1.0) * factor}
        return out

    def jobs(self, start: int, length: int) -> TraceWorkload:
        """Jobs ``start .. start + length - 1`` (in submit order) as a replay of their own, their submit
        times, labels and requested times kept: a sequence of the HPC evaluation protocol
        (:mod:`msj_gym.experiments.sequences`), scheduled from an empty machine."""
        for label, value, least in (("start", start, 0), ("length", length, 1)):
            if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < least:
                raise ValueError(f"trace {self.name!r}: {label} expects an integer >= {least}, got {value!r}")
        total = int(self.arrival_time.size)
        if start + length > total:
            raise ValueError(
                f"trace {self.name!r}: jobs {start}..{start + length - 1} run past its {total} jobs"
            )
        part = slice(int(start), int(start) + int(length))
        out = TraceWorkload(
            self.num_servers,
            self.arrival_time[part],
            self.server_need_per_job[part],
            self.service_time_per_job[part],
            name=f"{self.name}[{part.start}:{part.stop}]",
            job_label=None if self.job_label is None else self.job_label[part],
            requested_time=None if self.requested_time_per_job is None else self.requested_time_per_job[part],
        )
        out.slowdown_tau = self.slowdown_tau
        return out

    def with_load(self, load: float) -> TraceWorkload:
        """The same jobs at offered load ``load``, by time dilation (inter-arrival gaps scaled by
        current load / ``load``; service times unchanged)."""
        if isinstance(load, bool) or not isinstance(load, int | float):
            raise ValueError(f"load: expected a positive number, got {load!r}")
        check_load(load)
        if not math.isfinite(self.load):
            raise ValueError(
                f"trace {self.name!r}: all jobs arrive at one instant; no time scale gives load {load}"
            )
        return self.with_time_scale(self.load / load)

    def with_arrival_rate(self, arrival_rate: float) -> TraceWorkload:
        """The same jobs at mean arrival rate ``arrival_rate``, by time dilation."""
        if (
            isinstance(arrival_rate, bool)
            or not isinstance(arrival_rate, int | float)
            or not math.isfinite(arrival_rate)
            or arrival_rate <= 0
        ):
            raise ValueError(f"arrival_rate: expected a positive number, got {arrival_rate!r}")
        if not math.isfinite(self.arrival_rate):
            raise ValueError(
                f"trace {self.name!r}: all jobs arrive at one instant; no time scale gives arrival rate "
                f"{arrival_rate}"
            )
        return self.with_time_scale(self.arrival_rate / arrival_rate)

    @property
    def job_attribute_names(self) -> tuple[str, ...]:
        """The per-job attributes each job carries: ``("requested_time",)`` when the trace has requested
        times, else none."""
        return () if self.requested_time_per_job is None else (REQUESTED_TIME,)

    @property
    def job_attributes(self) -> int:
        """How many per-job attributes each job carries (see :attr:`job_attribute_names`)."""
        return len(self.job_attribute_names)

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


class ReplayScenario:
    """What the scenarios of a recorded trace (a GPU trace, an SWF log) share: :meth:`build` with the
    arguments of :meth:`msj_gym.workloads.scenarios.Scenario.build`, the timing chosen as every such
    scenario chooses it, and the replay itself left to :meth:`replay`."""

    name: str
    load: float | None

    def build(
        self,
        *,
        num_servers: int | None = None,
        load: float | None = None,
        arrival_rate: float | None = None,
    ) -> TraceWorkload:
        """The replay; ``num_servers``, ``load`` or ``arrival_rate`` override the scenario's own (load and
        arrival rate by time dilation); with neither, the spec's load or else the trace's own timing."""
        if load is not None and arrival_rate is not None:
            raise ValueError("give at most one of load and arrival_rate")
        if load is None and arrival_rate is None:
            load = self.load
        wl = self.replay(num_servers, load, arrival_rate)
        wl.meta["scenario"] = self.name
        return wl

    def replay(
        self, num_servers: int | None, load: float | None, arrival_rate: float | None
    ) -> TraceWorkload:
        """The replay at ``load`` or ``arrival_rate`` (at most one given; neither: the trace's timing)."""
        raise NotImplementedError


@dataclass(frozen=True)
class TraceChunk(ArrivalChunk):
    """An :class:`ArrivalChunk` plus each job's per-job attributes (one row per job): a trace's
    requested times, as float64 bits."""

    job_attributes: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), dtype=np.int64))


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
        chunk = (tr.arrival_time[lo:hi], tr.job_class[lo:hi], tr.service_time_per_job[lo:hi])
        noise = self._noise.random(hi - lo)
        if tr.requested_time_per_job is None:
            return ArrivalChunk(*chunk, noise)
        # the float64's bits in the int64 attribute column: exact, read back by job_attribute_float
        bits = tr.requested_time_per_job[lo:hi].view(np.int64).reshape(-1, 1)
        return TraceChunk(*chunk, noise, bits)


def _checked_jobs(
    name: str,
    num_servers: int,
    arrival_time: Sequence[float] | np.ndarray,
    server_need: Sequence[int] | np.ndarray,
    service_time: Sequence[float] | np.ndarray,
    time_scale: float,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A trace's jobs as arrays, each value checked: one line naming the first bad one."""
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
    # the limits of a scenario file: no per-server array of a typo's size, no duration that loses
    # its precision next to the clock
    check_integer(f"trace {name!r}.num_servers", num_servers, 1, MAX_SERVERS)
    for label, arr, bad in (
        ("arrival_time", t, ~np.isfinite(t) | (t < 0)),
        ("service_time", s, ~np.isfinite(s) | (s < MIN_DURATION) | (s > MAX_DURATION)),
        ("server_need", n, (n < 1) | (n > num_servers) | (n != np.round(n))),
    ):
        idx = np.flatnonzero(bad)
        if idx.size:
            raise ValueError(
                f"trace {name!r}.{label}: invalid value {arr[idx[0]].item()!r} for job {idx[0]} "
                f"(num_servers = {num_servers})"
            )
    return t, n, s


def _checked_extras(
    name: str,
    shape: tuple[int, ...],
    requested_time: Sequence[float] | np.ndarray | None,
    job_label: Sequence[str] | np.ndarray | None,
) -> tuple[np.ndarray | None, np.ndarray | None]:
    """A trace's optional per-job requested times and labels as arrays, checked (one per job)."""
    requested = None
    if requested_time is not None:
        requested = np.asarray(requested_time, dtype=np.float64)
        if requested.shape != shape:
            raise ValueError(
                f"trace {name!r}.requested_time: expected one per job ({shape[0]}), got {requested.shape}"
            )
        bad = np.flatnonzero(~np.isfinite(requested) | (requested <= 0))
        if bad.size:
            raise ValueError(
                f"trace {name!r}.requested_time: invalid value {requested[bad[0]].item()!r} for job "
                f"{bad[0]}; requested times must be positive and finite"
            )
    labels = None
    if job_label is not None:
        labels = np.asarray([str(v) for v in job_label], dtype=object)
        if labels.shape != shape:
            raise ValueError(
                f"trace {name!r}.job_label: expected one label per job ({shape[0]}), got {labels.shape}"
            )
    return requested, labels


def _trace_classes(
    num_servers: int, server_need: np.ndarray, service_time: np.ndarray, job_label: np.ndarray | None
) -> tuple[np.ndarray, tuple[JobClass, ...]]:
    """Each job's class and the classes: one per need, or per (label, need) pair with labels, ordered
    by label and then need, each with its jobs' empirical service time and share of the jobs."""
    span_need = num_servers + 1
    if job_label is None:
        label_names = np.array([""], dtype=object)
        keys = server_need
    else:
        label_names, label_code = np.unique(job_label.astype(str), return_inverse=True)
        # one integer per (label, need) pair, ordered by label and then need
        keys = label_code.astype(np.int64) * span_need + server_need
    uniq, inverse = np.unique(keys, return_inverse=True)
    job_class = inverse.astype(np.int64)
    counts = np.bincount(job_class, minlength=uniq.size)
    classes = []
    for i, key in enumerate(uniq):
        need, label = int(key) % span_need, str(label_names[int(key) // span_need])
        classes.append(
            JobClass(
                server_need=need,
                service_time=Empirical(service_time[job_class == i]),
                probability=counts[i] / counts.sum(),
                name=f"{label}/need-{need}" if label else f"need-{need}",
            )
        )
    return job_class, tuple(classes)
