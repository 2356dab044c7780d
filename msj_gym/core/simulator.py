"""The Python face of the simulator: sets up the state, feeds arrivals in chunks, runs a policy, and
turns the per-job arrays into a :class:`~msj_gym.metrics.SimulationResult`."""

from __future__ import annotations

import dataclasses
import functools
import math
from typing import Any

import numpy as np

from ..metrics.result import SimulationResult, default_slowdown_tau, summarise
from . import state as S
from .engine import advance, apply, batch_runner, check_invariants
from .feed import ArrivalError, ArrivalFeed
from .policy import Policy
from .workload import WORKLOAD_MEMBERS, WorkloadLike, is_workload

__all__ = [
    "PolicyDriver",
    "SimulationError",
    "Simulator",
    "Unfinished",
    "arrival_count",
    "unfinished_jobs",
    "with_unfinished",
]


class SimulationError(RuntimeError):
    """A policy made an invalid decision or the run could not proceed."""


@functools.cache
def _version() -> str:  # a metadata lookup reads files: once per process
    try:
        from importlib.metadata import version

        return version("msj-gym")
    except Exception:  # pragma: no cover - not installed
        return "unknown"


@dataclasses.dataclass(frozen=True)
class Unfinished:
    """The measured jobs still in the system when a run stopped, one entry each, with what they had had
    by then: their batch and class cells, their response time so far (``now - arrival``, a lower bound
    of the real one), their waiting time so far and the bounded slowdown that response time gives
    (lower bounds too), whether they had waited, their preemptions, their row in the per-job records
    and their arrival time."""

    batch: np.ndarray
    job_class: np.ndarray
    response: np.ndarray
    wait: np.ndarray
    slowdown: np.ndarray
    waited: np.ndarray
    preemptions: np.ndarray
    row: np.ndarray
    arrival: np.ndarray

    def __len__(self) -> int:
        """The number of jobs."""
        return int(self.row.size)


def unfinished_jobs(sim: S.Sim) -> Unfinished:
    """The measured jobs in the system now (see :class:`Unfinished`), batched as the engine batches its
    measured jobs (:func:`~msj_gym.core.access.measured_batch`)."""
    iv, fv, ji, jf = sim.iv, sim.fv, sim.ji, sim.jf
    lo, hi = int(iv[S.I_MEAS_LO]), int(iv[S.I_MEAS_HI])
    slots = np.flatnonzero(ji[:, S.STATE] != S.FREE_SLOT) if lo >= 0 else np.zeros(0, dtype=np.int64)
    ids = ji[slots, S.JOB_ID]
    keep = (ids >= lo) & ((hi < 0) | (ids < hi))
    slots, ids = slots[keep], ids[keep]
    nb = sim.acc_f.shape[0]
    arrival = jf[slots, S.ARRIVAL]
    if fv[S.F_HORIZON] < np.inf:
        span = fv[S.F_HORIZON] - fv[S.F_WARM_TIME]
        batch = ((arrival - fv[S.F_WARM_TIME]) / span * nb).astype(np.int64)
    else:
        batch = (ids - lo) * nb // (hi - lo)
    now = fv[S.F_NOW]
    response = now - arrival
    service = sim.js[slots, S.SERVICE]
    preemptions = ji[slots, S.NPREEMPT]
    # the waiting time a departure reports is its response minus its service; so far, a job has waited
    # at least its time in the system minus the time it has been served, where it is served at rate at
    # most 1 (every MSJ job), and at least what its whole service leaves of its time so far
    rate = jf[slots, S.RATE]
    running = ji[slots, S.STATE] == S.RUNNING
    served = jf[slots, S.ATTAINED] + np.where(running, (now - jf[slots, S.LAST_START]) * rate, 0.0)
    wait = np.maximum(response - service, 0.0)
    wait = np.where(rate <= 1.0, np.maximum(wait, response - served), wait)
    # as the engine counts a departing job: it waited unless it started on arrival and ran on
    started_on_arrival = jf[slots, S.FIRST_START] == arrival  # NaN (never started) compares False
    return Unfinished(
        batch=np.clip(batch, 0, nb - 1),
        job_class=ji[slots, S.CLS],
        response=response,
        wait=wait,
        slowdown=np.maximum(response / np.maximum(service, fv[S.F_TAU]), 1.0),
        waited=(~started_on_arrival) | (preemptions > 0),
        preemptions=preemptions,
        row=ids - lo,
        arrival=arrival,
    )


def with_unfinished(
    acc_f: np.ndarray, acc_i: np.ndarray, left: Unfinished | None
) -> tuple[np.ndarray, np.ndarray]:
    """The run's accumulators (``Sim.acc_f``, ``Sim.acc_i``, indexed [batch, class, field]) with the
    ``left`` jobs added to their cells, as the engine adds a departing job (copies; the arrays
    themselves when there is none)."""
    if left is None or not len(left):
        return acc_f, acc_i
    acc_f, acc_i = acc_f.copy(), acc_i.copy()
    # each job's (batch, class) cell as one flat index into a field's [batch, class] plane (a view)
    cell = np.ravel_multi_index((left.batch, left.job_class), acc_f.shape[:2])
    for acc, fields in (
        (acc_f, ((S.A_RESP, left.response), (S.A_WAIT, left.wait), (S.A_BSLD, left.slowdown))),
        (
            acc_i,
            ((S.A_COUNT, 1), (S.A_WAITED, left.waited.astype(np.int64)), (S.A_PREEMPT, left.preemptions)),
        ),
    ):
        for column, values in fields:
            plane = acc[:, :, column].reshape(-1)  # a copy if not contiguous: written back below
            np.add.at(plane, cell, values)
            acc[:, :, column] = plane.reshape(acc.shape[:2])
    return acc_f, acc_i


def arrival_count(num_arrivals: int, warmup: int | None) -> tuple[int, int]:
    """A run of ``num_arrivals`` arrivals checked (an integer >= 2), with its ``warmup`` (an integer in
    ``[0, num_arrivals - 1)``, default a tenth): both as ints."""
    if isinstance(num_arrivals, bool) or int(num_arrivals) != num_arrivals or num_arrivals < 2:
        raise ValueError(f"num_arrivals: expected an integer >= 2, got {num_arrivals!r}")
    num_arrivals = int(num_arrivals)
    if warmup is None:
        warmup = num_arrivals // 10
    if isinstance(warmup, bool) or int(warmup) != warmup or not 0 <= warmup < num_arrivals - 1:
        raise ValueError(f"warmup: expected an integer in [0, {num_arrivals - 1}), got {warmup!r}")
    return num_arrivals, int(warmup)


def _run_length(
    num_arrivals: int | None, warmup: int | None, horizon: float | None, warmup_time: float
) -> tuple[int | None, int | None]:
    """A run's length checked: ``num_arrivals`` (default 100,000 when no ``horizon``) with its
    ``warmup`` (default a tenth), or ``horizon`` with ``warmup_time``."""
    if horizon is None and num_arrivals is None:
        num_arrivals = 100_000
    if horizon is not None and num_arrivals is not None:
        raise ValueError("give at most one of num_arrivals and horizon")
    if num_arrivals is not None:
        num_arrivals, warmup = arrival_count(num_arrivals, warmup)
    else:
        assert horizon is not None
        if not math.isfinite(horizon) or horizon <= 0:
            raise ValueError(f"horizon: expected a positive finite time, got {horizon!r}")
        if not math.isfinite(warmup_time) or not 0 <= warmup_time < horizon:
            raise ValueError(f"warmup_time: expected a time in [0, horizon), got {warmup_time!r}")
    return num_arrivals, warmup


class Simulator:
    """One seeded run of ``policy`` on ``workload``.

    Measurement. In arrival-count mode (``num_arrivals``) the jobs with ids ``warmup .. num_arrivals-1``
    are measured; in horizon mode (``horizon``) the jobs arriving in ``[warmup_time, horizon)``. The
    arrival stream keeps running after the last measured arrival until every measured job has left, so
    the last jobs do not see an artificially emptying system. Arrivals stop at ``max_arrivals``
    (default: twice the measured range plus slack); a run that hits it stops there and is reported
    unstable. Time averages (utilisation, jobs in system) are taken between the first and last measured
    arrival.

    A run whose number of jobs in the system passes ``max_jobs_in_system`` is stopped there and reported
    unstable: a runaway queue says all there is to say, and policies whose decisions scan the queue would
    otherwise slow down without bound. The averages of a stopped run count the measured jobs still in
    the system with their time in it until the stop, lower bounds of their response times (see
    :meth:`result`).

    Per-job records (``record_jobs``, see :meth:`records`) give the result its response-time
    percentiles, which need every measured job's response time; the other metrics are accumulated
    online. By default (``record_jobs=None``) they are kept when the run measures at most
    :attr:`RECORD_LIMIT` jobs (56 bytes each), so that memory stays bounded however long the run;
    beyond that the percentiles are NaN unless ``record_jobs=True``. ``record_jobs=False`` never keeps
    them.

    ``slowdown_tau``: the threshold tau of the bounded slowdown max(response / max(service, tau), 1),
    in the workload's time unit; by default the workload's (10 s on a recorded trace, a tenth of the
    mean service time on a synthetic workload: see :func:`~msj_gym.metrics.result.default_slowdown_tau`).

    ``debug=True`` checks the state invariants after every event instant and raises on a violation.

    ``slots``: the job slots allocated at the start; they double whenever the system holds more jobs, so
    this only trades memory for the rare regrowth (results do not depend on it). Batches of many small
    simulators (the vector envs) start small to keep each one's state in few cache lines.
    """

    def __init__(
        self,
        workload: WorkloadLike,
        policy: Policy,
        *,
        seed: int = 0,
        num_arrivals: int | None = None,
        warmup: int | None = None,
        horizon: float | None = None,
        warmup_time: float = 0.0,
        max_arrivals: int | None = None,
        num_batches: int = 30,
        record_jobs: bool | None = None,
        max_jobs_in_system: int = 100_000,
        debug: bool = False,
        slots: int = 1024,
        slowdown_tau: float | None = None,
    ) -> None:
        if not is_workload(workload):
            raise TypeError(
                "workload: expected a workload (a Workload, a trace replay, a CompatWorkload, or an object "
                f"declaring {', '.join(WORKLOAD_MEMBERS)}), got {type(workload).__name__}"
            )
        if not isinstance(policy, Policy):
            raise TypeError(f"policy: expected a msj_gym Policy, got {type(policy).__name__}")
        if isinstance(slots, bool) or not isinstance(slots, int | np.integer) or slots < 1:
            raise ValueError(f"slots: expected a positive integer, got {slots!r}")
        self.initial_slots = int(slots)
        if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
            raise ValueError(f"seed: expected a non-negative integer, got {seed!r}")
        num_arrivals, warmup = _run_length(num_arrivals, warmup, horizon, warmup_time)
        if int(num_batches) < 2:
            raise ValueError(f"num_batches: expected an integer >= 2, got {num_batches!r}")
        # What the run reads of its workload beyond the protocol (its arrival stream, classes, rates and
        # loads) is each model's own, the MSJ and compatibility models' alike: not a type to name here.
        wl: Any = workload
        self.workload = wl
        self.policy = policy.for_workload(workload)
        self.seed = int(seed)
        self.num_arrivals = num_arrivals
        self.warmup = warmup
        self.horizon = horizon
        self.warmup_time = float(warmup_time)
        self.num_batches = int(num_batches)
        self.debug = bool(debug)
        if record_jobs is not None and not isinstance(record_jobs, bool | np.bool_):
            raise ValueError(f"record_jobs: expected True, False or None, got {record_jobs!r}")
        tau = default_slowdown_tau(workload) if slowdown_tau is None else slowdown_tau
        if isinstance(tau, bool) or not isinstance(tau, int | float) or not (math.isfinite(tau) and tau > 0):
            what = "slowdown_tau" if slowdown_tau is not None else "the workload's slowdown_tau"
            raise ValueError(f"{what}: expected a positive finite time, got {tau!r}")
        self.slowdown_tau = float(tau)
        if isinstance(max_jobs_in_system, bool) or int(max_jobs_in_system) < 1:
            raise ValueError(f"max_jobs_in_system: expected a positive integer, got {max_jobs_in_system!r}")
        self.max_jobs_in_system = int(max_jobs_in_system)
        expected_f = num_arrivals if num_arrivals is not None else wl.arrival_rate * horizon
        if expected_f > self.MAX_ARRIVALS:  # a typo such as --horizon 1e308 would never finish
            what = "num_arrivals" if num_arrivals is not None else "horizon"
            value = num_arrivals if num_arrivals is not None else horizon
            raise ValueError(
                f"{what}: {value!r} means about {expected_f:.3g} arrivals; the limit is {self.MAX_ARRIVALS:g}"
            )
        expected = num_arrivals if num_arrivals is not None else int(wl.arrival_rate * horizon) + 1
        self._expected = expected
        if record_jobs is None:
            if num_arrivals is not None:
                assert warmup is not None  # set above whenever num_arrivals is
                measured = num_arrivals - warmup
            else:
                measured = expected
            record_jobs = measured <= self.RECORD_LIMIT
            self._no_records = f"per-job records off: more than {self.RECORD_LIMIT} measured jobs"
        else:
            self._no_records = "per-job records off (record_jobs=False)"
        self.record_jobs = bool(record_jobs)
        self.max_arrivals = int(max_arrivals) if max_arrivals is not None else self.arrival_cap(expected)
        if self.max_arrivals < expected:
            raise ValueError(f"max_arrivals: expected >= {expected}, got {max_arrivals!r}")
        self._setup()

    @classmethod
    def arrival_cap(cls, expected: int) -> int:
        """The default ``max_arrivals`` of a run expecting ``expected`` arrivals (``num_arrivals``, or
        the horizon's): twice that plus a refill of slack."""
        return 2 * int(expected) + cls.CHUNK

    MAX_ARRIVALS = 10**12  # arrivals one run may ask for: more is a typo, not an experiment
    RECORD_LIMIT = 250_000  # measured jobs up to which per-job records are kept by default (14 MB)

    # ------------------------------------------------------------------------------------------------
    CHUNK = 1 << 15  # arrivals generated per refill; fixed so that a seed gives one job stream
    FEED_LIMIT: int | None = None  # jobs written into the ring per refill (None: as many as fit)

    def _setup(self) -> None:
        wl = self.workload
        root = np.random.SeedSequence(self.seed)
        self.source = wl.arrivals(root)
        self.arrivals = ArrivalFeed(self.source, self.max_arrivals, self.CHUNK)
        self._class_needs = wl.server_needs
        self._generated = 0
        n_ck = 41
        if self.num_arrivals is not None:
            assert self.warmup is not None  # __init__ sets it whenever num_arrivals is
            lo, hi = self.warmup, self.num_arrivals
            records = (hi - lo) if self.record_jobs else 0
        else:
            records = int(1.2 * self._expected) + 1024 if self.record_jobs else 0
        self.sim = S.allocate(
            wl.num_servers,
            self._class_needs,
            slots=self.initial_slots,
            ring=2 * self.CHUNK,
            num_batches=self.num_batches,
            num_checkpoints=n_ck,
            records=records,
            job_attributes=int(getattr(wl, "job_attributes", 0)),
        )
        iv, fv = self.sim.iv, self.sim.fv
        if self.num_arrivals is not None:
            iv[S.I_MEAS_LO] = lo
            iv[S.I_MEAS_HI] = hi
            self.sim.ck_key[:] = np.round(np.linspace(lo, hi - 1, n_ck))
        else:
            assert self.horizon is not None  # __init__ requires one of num_arrivals and horizon
            fv[S.F_HORIZON] = self.horizon
            fv[S.F_WARM_TIME] = self.warmup_time
            fv[S.F_WIN_LO] = self.warmup_time
            fv[S.F_WIN_HI] = self.horizon
            self.sim.ck_key[:] = np.linspace(self.warmup_time, self.horizon, n_ck)
        fv[S.F_TAU] = self.slowdown_tau
        iv[S.I_PREEMPTIVE] = 1 if self.policy.preemptive else 0
        iv[S.I_MAX_SYS] = self.max_jobs_in_system
        self.capped = False
        self.overflowed = False
        self._feed()
        self.policy_seed = root.spawn(4)[3]  # the policy's own child stream (random tie-breaks etc.)
        self.pdata = self.prepare_policy(self.policy)  # scratch already sized for the slots
        self.actions = np.zeros(self.policy.action_words(wl.num_servers), dtype=np.int64)
        self._views()

    def prepare_policy(self, policy: Policy) -> Any:
        """``policy``'s kernel data for this run, drawn from the run's policy stream: the same arrays
        whichever path (batch loop or an agent through the environment) then drives the policy."""
        rng = np.random.Generator(np.random.PCG64(self.policy_seed))
        pdata = policy.prepare(self.workload, rng)
        return policy.with_work(
            pdata, self.sim.ji.shape[0], self.workload.num_servers, self.workload.num_classes
        )

    def _resize_work(self) -> None:
        wl = self.workload
        self.pdata = self.policy.with_work(self.pdata, self.sim.ji.shape[0], wl.num_servers, wl.num_classes)

    def _views(self) -> None:
        self.view = S.make_view(self.sim)
        self.sizes = S.make_sizes(self.sim)

    def _feed(self) -> None:
        """Refill the arrival ring with the next chunk of the stream (or mark it exhausted)."""
        try:
            self.arrivals.feed(self.sim, self.FEED_LIMIT)
        except ArrivalError as exc:
            raise SimulationError(str(exc)) from None
        self.capped = self.arrivals.capped

    def _raise(self) -> None:
        code, job = int(self.sim.iv[S.I_ERR]), int(self.sim.iv[S.I_ERR_JOB])
        msg = S.ERROR_MESSAGES.get(code, "unknown error {job}").format(job=job)
        raise SimulationError(f"policy {self.policy.policy_id!r} at t={self.sim.fv[S.F_NOW]:.6g}: {msg}")

    def handle(self, status: int) -> bool:
        """Serve an engine request (more arrivals, slots or record rows); False once the run is over.
        Raises :class:`SimulationError` on an engine error."""
        if status == S.ST_NEED_ARRIVALS:
            self._feed()
            return not self.capped  # at the arrival cap the run stops: it is unstable, draining adds nothing
        elif status == S.ST_NEED_SLOTS:
            self.sim = S.grow_slots(self.sim)
            self._views()
            self._resize_work()
        elif status == S.ST_NEED_RECORDS:
            self.sim = S.grow_records(self.sim, int(self.sim.rec.shape[0] * 1.5) + 1024)
        elif status == S.ST_ERROR:
            self._raise()
        elif status == S.ST_OVERFLOW:
            self.overflowed = True
            return False
        elif status == S.ST_FINISHED:
            return False
        return True

    # ------------------------------------------------------------------------------------------------
    def run(self) -> SimulationResult:
        """Run to the end of the measurement and return the result.

        Raises ``ValueError`` when the measurement held no job although the run was not stopped (a
        horizon or a trace too short for the warm-up): its averages would be NaN, so there is no result.
        A run stopped by the arrival cap or the queue limit returns an unstable result instead, its
        measured jobs still in the system counted with their time so far (``num_measured == 0`` only
        when it stopped before the first measured arrival)."""
        self.pdata = self.drive(self.policy, self.pdata)
        result = self.result()
        if result.num_measured == 0 and not (self.capped or self.overflowed):
            raise ValueError(self._no_measurement())
        return result

    def drive(self, policy: Policy, pdata: Any) -> Any:
        """Run ``policy`` (with its kernel data ``pdata``) from the current state to the end of the
        run, natively: its compiled rule in the engine loop, or its ``decide`` from Python (asked at
        every event). Returns its data, grown with the job slots. The environments hand an episode's
        rest to a baseline with it."""
        rule = policy.decision_rule() if type(policy).kernel is not None else None
        wl = self.workload
        while True:
            if rule is not None:
                status = batch_runner(rule, self.sim, self.view, self.sizes, pdata, self.actions, self.debug)
            else:
                status = self.run_policy_python(policy, pdata)
            if not self.handle(status):
                return pdata
            pdata = policy.with_work(pdata, self.sim.ji.shape[0], wl.num_servers, wl.num_classes)

    def _no_measurement(self) -> str:
        """Why a run that ended normally measured no job, and what to change."""
        arrived = int(self.sim.iv[S.I_NGEN])
        if self.num_arrivals is not None:
            return (
                f"no job was measured: the arrival stream ended after {arrived} arrivals, before the "
                f"first measured one (warmup = {self.warmup} of num_arrivals = {self.num_arrivals}); "
                "use a shorter warm-up or a longer stream"
            )
        assert self.horizon is not None  # __init__ requires one of num_arrivals and horizon
        expected = self.workload.arrival_rate * (self.horizon - self.warmup_time)
        return (
            f"no job was measured: no job arrived in the window [warmup_time, horizon) = "
            f"[{self.warmup_time:g}, {self.horizon:g}) (about {expected:.3g} expected at arrival rate "
            f"{self.workload.arrival_rate:.4g}); use a longer horizon or a shorter warm-up"
        )

    def run_policy_python(self, policy: Policy, pdata: Any, until_arrivals: int | None = None) -> int:
        """Drive ``policy`` (with its kernel data ``pdata``) from Python through ``advance`` / ``decide``
        / ``apply`` until the engine needs something (its status is returned) or, with
        ``until_arrivals``, until that many jobs have arrived (``ST_EVENT`` is returned)."""
        sizes = self.sizes if policy.size_aware else None
        actions = self.actions
        while until_arrivals is None or self.sim.iv[S.I_NARR] < until_arrivals:
            status = advance(self.sim)
            if status != S.ST_EVENT:
                return status
            n = policy.decide(self.view, sizes, pdata, actions)
            if n > 0 and apply(self.sim, actions, n) != S.E_NONE:
                return S.ST_ERROR
            if self.debug:
                detail = check_invariants(self.sim)
                if detail != 0:
                    self.sim.iv[S.I_ERR] = S.E_INVARIANT
                    self.sim.iv[S.I_ERR_JOB] = detail
                    return S.ST_ERROR
                detail = policy.check(self.view, pdata)
                if detail != 0:
                    self.sim.iv[S.I_ERR] = S.E_POLICY_INVARIANT
                    self.sim.iv[S.I_ERR_JOB] = detail
                    return S.ST_ERROR
        return S.ST_EVENT

    def records(self) -> dict[str, np.ndarray]:
        """Per-job records of the measured jobs (needs ``record_jobs=True``), in arrival order. A job
        that had not left when the run stopped (an unstable run) has NaN times and class -1."""
        if not self.record_jobs:
            raise ValueError("records: construct the Simulator with record_jobs=True")
        iv = self.sim.iv
        n = int(iv[S.I_MEAS_HI] - iv[S.I_MEAS_LO]) if iv[S.I_MEAS_HI] >= 0 else 0
        rec = self.sim.rec[:n]
        return {
            "arrival_time": rec[:, S.R_ARRIVAL].copy(),
            "first_start": rec[:, S.R_FIRST_START].copy(),
            "departure_time": rec[:, S.R_DEPARTURE].copy(),
            "service_time": rec[:, S.R_SERVICE].copy(),
            "job_class": np.nan_to_num(rec[:, S.R_CLASS], nan=-1).astype(np.int64),
            "preemptions": np.nan_to_num(rec[:, S.R_NPREEMPT], nan=-1).astype(np.int64),
            "service_received": rec[:, S.R_ATTAINED].copy(),
        }

    def _response_times(self, unfinished: Unfinished | None) -> tuple[np.ndarray | None, np.ndarray | None]:
        """The response times of the measured jobs that left (in arrival order), and of the
        ``unfinished`` ones so far, and the batch the engine counted each in (as
        :func:`~msj_gym.core.access.measured_batch` does), or (None, None) without per-job records."""
        sim = self.sim
        iv, fv = sim.iv, sim.fv
        if iv[S.I_RECORD] == 0 or iv[S.I_MEAS_LO] < 0:
            return None, None
        hi = iv[S.I_MEAS_HI] if iv[S.I_MEAS_HI] >= 0 else iv[S.I_NARR]  # a run stopped before it was known
        n = min(int(hi - iv[S.I_MEAS_LO]), sim.rec.shape[0])
        rec = sim.rec[:n]
        response = rec[:, S.R_DEPARTURE] - rec[:, S.R_ARRIVAL]
        arrivals = rec[:, S.R_ARRIVAL]
        if unfinished is not None and len(unfinished):
            inside = unfinished.row < n
            response, arrivals = response.copy(), arrivals.copy()
            response[unfinished.row[inside]] = unfinished.response[inside]
            arrivals[unfinished.row[inside]] = unfinished.arrival[inside]
        left = ~np.isnan(response)  # jobs still in the system when a run was stopped
        every = bool(left.all())
        nb = sim.acc_f.shape[0]
        if fv[S.F_HORIZON] < np.inf:
            span = fv[S.F_HORIZON] - fv[S.F_WARM_TIME]
            arrival = arrivals if every else arrivals[left]
            batch = ((arrival - fv[S.F_WARM_TIME]) / span * nb).astype(np.int64)
        else:
            rows = np.arange(n, dtype=np.int64) if every else np.flatnonzero(left)
            batch = rows * nb // max(n, 1)
        return (response if every else response[left]), np.clip(batch, 0, nb - 1)

    def result(self, ended: bool | None = None) -> SimulationResult:
        """The run's metrics. Once the run has ended (``ended``; by default: when it was stopped by the
        arrival cap or the queue limit), the measured jobs still in the system count too, each with its
        response time up to the stop, a lower bound of the real one: the averages are then lower bounds,
        and the run is unstable (its ``stability_note`` says how many jobs had not left). A run that
        ended normally has no such job, and its result is what the departures alone give."""
        sim, wl = self.sim, self.workload
        iv, fv = sim.iv, sim.fv
        if ended is None:
            ended = self.capped or self.overflowed
        left = unfinished_jobs(sim) if ended else None
        acc_f, acc_i = with_unfinished(sim.acc_f, sim.acc_i, left)
        win_hi = min(fv[S.F_WIN_HI], fv[S.F_LAST])
        window = max(win_hi - fv[S.F_WIN_LO], 0.0) if np.isfinite(fv[S.F_WIN_LO]) else 0.0
        names = [c.name or f"class{i}" for i, c in enumerate(wl.classes)]
        provenance = {
            "workload": wl.to_dict(),
            "scenario": getattr(wl, "meta", {}).get("scenario", getattr(wl, "name", "")),
            "policy": self.policy.to_dict(),
            "seed": self.seed,
            "num_arrivals": self.num_arrivals,
            "warmup": self.warmup,
            "horizon": self.horizon,
            "warmup_time": self.warmup_time if self.horizon is not None else None,
            "max_arrivals": self.max_arrivals,
            "max_jobs_in_system": self.max_jobs_in_system,
            "msj_gym_version": _version(),
        }
        times, batches = self._response_times(left)
        result = summarise(
            acc_resp=acc_f[:, :, S.A_RESP],
            acc_wait=acc_f[:, :, S.A_WAIT],
            acc_count=acc_i[:, :, S.A_COUNT],
            acc_waited=acc_i[:, :, S.A_WAITED],
            acc_preempt=acc_i[:, :, S.A_PREEMPT],
            acc_bsld=acc_f[:, :, S.A_BSLD],
            slowdown_tau=float(fv[S.F_TAU]),
            makespan=float(fv[S.F_LAST_MEASURED] - fv[S.F_FIRST_MEASURED])
            if np.isfinite(fv[S.F_FIRST_MEASURED])
            else float("nan"),
            response_times=times,
            response_batches=batches,
            percentile_note="" if self.record_jobs else f"not computed: {self._no_records}",
            class_names=names,
            class_needs=self._class_needs,
            load_weights=np.asarray(wl.load_weights, dtype=np.float64),
            busy_area=float(fv[S.F_BUSY_AREA]),
            sys_area=float(fv[S.F_SYS_AREA]),
            window=float(window),
            num_servers=wl.num_servers,
            offered_load=float(wl.load),
            arrival_rate=float(wl.arrival_rate),
            capped=self.capped,
            overflow=self.max_jobs_in_system if self.overflowed else None,
            unfinished=0 if left is None else len(left),
            checkpoints=sim.ck_nsys[: int(iv[S.I_NCHECK])],
            simulated_time=float(fv[S.F_NOW]),
            events=int(iv[S.I_EVENTS]),
            provenance=provenance,
        )
        return dataclasses.replace(result, policy_metrics=self.policy.report(self.pdata))


class PolicyDriver:
    """A policy bound to one run: its data drawn from the run's policy stream (as the native run draws
    it, so that its decisions are the native run's), grown with the job slots, and its decision in the
    current state. The one place where a decision is asked of a policy from Python: the environments
    (an advisor, ``step_policy``, ``play_out``), :class:`~msj_gym.PolicyAgent` and the training
    scripts all use it; the batch loop calls the same compiled kernel with the same data."""

    def __init__(self, policy: Policy, core: Simulator, pdata: Any = None) -> None:
        """``pdata``: the policy's data to go on with (a copy taken earlier in the run); by default
        prepared afresh."""
        self.policy, self.core = policy, core
        self.pdata = core.prepare_policy(policy) if pdata is None else pdata
        self.actions = np.zeros(policy.action_words(core.workload.num_servers), dtype=np.int64)

    def decide(self) -> np.ndarray:
        """The policy's decision now: engine words (a view into the driver's buffer)."""
        core, policy, wl = self.core, self.policy, self.core.workload
        self.pdata = policy.with_work(self.pdata, core.sim.ji.shape[0], wl.num_servers, wl.num_classes)
        n = policy.decide(core.view, core.sizes if policy.size_aware else None, self.pdata, self.actions)
        return self.actions[:n]
