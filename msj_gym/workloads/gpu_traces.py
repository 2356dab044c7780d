"""GPU-cluster traces ("bring your own cluster"): public job logs of GPU clusters replayed as
multiserver-job workloads. A multi-GPU training job is gang-scheduled: it holds all of its GPUs at once
for its whole run, which is the multiserver-job model with servers = GPUs.

No trace ships with msj_gym; download the one you want (sources in each loader's docstring) and point a
loader at the file. Every format maps to the same three columns and the same :class:`TraceWorkload`
as the SWF logs (:func:`msj_gym.workloads.swf.swf_workload`):

* **arrival time**: the job's submission (or, where the trace has no submission, creation or launch)
  time, in seconds, shifted so that the first kept job arrives at 0. Date-time strings are read as ISO
  8601 (``2020-06-09 18:41:01``, ``2023-03-01 00:18:22+08:00``); without a zone they are taken as UTC,
  so durations across a daylight-saving change of the cluster's local time are off by that hour.
* **server need**: the job's GPUs. A fractional GPU count (Alibaba PAI's per-instance percentages, or
  any non-integer count) is rounded **up**, so a job that asked for any share of a GPU holds a whole
  one: need = ceil(GPUs), at least 1. Jobs with 0 GPUs (CPU-only jobs) are skipped.
* **service time**: the job's run time in seconds (its recorded duration, or end minus start).

Rows that cannot be replayed are skipped and counted by reason (``GPUTrace.skipped``, also
``workload.meta["skipped"]``): no GPU, a missing time or GPU count, an unfinished or never-scheduled
job, a zero duration. Rows that are *wrong* stop the load with a one-line ``ValueError`` naming the
file, the line (CSV) or job (JSON) and the column: a non-numeric number, an unreadable time, a negative
duration or GPU count, a row with the wrong number of fields, and every number beyond the limits a
scenario file has (:mod:`msj_gym.workloads.workload`, :mod:`msj_gym.workloads.distributions`): a GPU
count above ``MAX_SERVERS`` (2**24), a duration outside [1e-6, 1e9] s. So does a file that is cut
short (a truncated ``.gz``) or a JSON file nested too deeply.

**Cluster size.** ``num_servers`` is the number of GPUs k (at most ``MAX_SERVERS``); by default the
largest kept job's need rounded up to a power of two (the smallest power-of-two cluster that can run
every job). Real clusters are larger; pass their size (or any k you want to study). A k below the
largest need is refused, unless ``wide="drop"`` (``?wide=drop``): the jobs wider than k are then left
out and counted (``skipped["wider than num_servers"]``).

**Load.** As for SWF logs, the load is set by time dilation: ``load=rho`` multiplies every
inter-arrival gap by (the trace's own load at k) / rho, where a trace's load is sum of need x service
time / (k x span of arrival times); service times are never changed. ``time_scale`` sets the factor
directly; by default the trace's own timing is kept. ``first=N`` keeps the first N jobs by arrival.
The load given, and the trace's own when none is, must lie in [MIN_LOAD, MAX_LOAD] (1e-6 .. 1e6) as a
scenario's does; a trace whose jobs all arrive at one instant has no load and is refused.

**Classes.** Jobs are grouped into classes by server need; with ``class_by`` (a column of the trace,
e.g. Helios ``vc``, Acme ``type``, Alibaba 2023 ``qos``, PAI ``gpu_type``, Philly ``vc``) a class is
a (label, need) pair named ``"label/need-n"``. GFS traces default to ``class_by="job_type"``, their
high-priority (``HP``) vs spot (``Spot``) field; the other formats default to classes by need only.

**As a scenario.** ``FORMAT:PATH[?option=value&...]`` works wherever a scenario name does (``msj-gym
simulate --scenario``, ``msj-gym leaderboard --scenario``, ``gym.make("MSJ-v0", scenario=...)``,
:func:`msj_gym.simulate`): FORMAT is one of :data:`FORMATS` or ``gpu`` (detect it from the file),
PATH a file (a relative name not found is looked up in ``$MSJ_GYM_TRACE_DIR``, then in the shared
traces folder next to a source checkout), options ``num_servers``, ``load``, ``first``, ``class_by``
(``none`` for classes by need only), ``wide`` (``refuse`` or ``drop``), ``start`` and ``length``
(jobs start .. start + length - 1 of the dilated replay). The command line's ``--k`` and ``--load``
override them. Example: ``helios:data/Venus/cluster_log.csv?num_servers=1024``.
"""

from __future__ import annotations

import csv
import gzip
import json
import math
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any, Protocol

import numpy as np

from .distributions import MAX_DURATION, MIN_DURATION
from .swf import _is_number
from .trace import ReplayScenario, TraceWorkload
from .workload import MAX_SERVERS, check_integer, check_load

__all__ = [
    "FORMATS",
    "SOURCES",
    "GPUTrace",
    "GPUTraceScenario",
    "acme_workload",
    "detect_gpu_trace_format",
    "gfs_workload",
    "gpu_trace_scenario",
    "gpu_trace_workload",
    "helios_workload",
    "is_gpu_trace_spec",
    "openb_workload",
    "pai_workload",
    "philly_workload",
    "read_gpu_trace",
]

FORMATS = ("philly", "helios", "acme", "pai", "openb", "gfs")
TITLES = {
    "philly": "Microsoft Philly cluster_job_log (a JSON list of jobs with submitted_time and attempts)",
    "helios": "SenseTime Helios cluster_log.csv (columns vc, gpu_num, submit_time, duration)",
    "acme": "Shanghai AI Lab Acme trace_seren.csv / trace_kalos.csv (columns type, gpu_num, submit_time, "
    "duration)",
    "pai": "Alibaba PAI 2020 pai_task_table.csv (10 headerless fields job_name, task_name, inst_num, status, "
    "start_time, end_time, plan_cpu, plan_mem, plan_gpu, gpu_type)",
    "openb": "Alibaba GPU 2023 openb_pod_list_*.csv (columns num_gpu, creation_time, scheduled_time, "
    "deletion_time)",
    "gfs": "Alibaba GFS 2026 job_info_df.csv (columns gpu_request, worker_num, submit_time, duration, "
    "job_type)",
}
#: Where each format's trace is published (no trace ships with msj_gym).
SOURCES = {
    "philly": "https://github.com/msr-fiddle/philly-traces",
    "helios": "https://github.com/S-Lab-System-Group/HeliosData",
    "acme": "https://github.com/InternLM/AcmeTrace",
    "pai": "https://github.com/alibaba/clusterdata/tree/master/cluster-trace-gpu-v2020",
    "openb": "https://github.com/alibaba/clusterdata/tree/master/cluster-trace-gpu-v2023",
    "gfs": "https://github.com/alibaba/clusterdata/tree/master/cluster-trace-v2026-spot-gpu",
}
# Columns a CSV format's header must have (PAI has no header: its published column names).
_REQUIRED = {
    "helios": ("vc", "gpu_num", "submit_time", "duration"),
    "acme": ("type", "gpu_num", "submit_time", "duration"),
    "openb": ("num_gpu", "creation_time", "scheduled_time", "deletion_time"),
    "gfs": ("gpu_request", "worker_num", "submit_time", "duration"),
}
PAI_COLUMNS = (
    "job_name",
    "task_name",
    "inst_num",
    "status",
    "start_time",
    "end_time",
    "plan_cpu",
    "plan_mem",
    "plan_gpu",
    "gpu_type",
)
_DEFAULT_CLASS_BY: dict[str, str | None] = {f: None for f in FORMATS} | {"gfs": "job_type"}
_MISSING = {"", "nan", "na", "none", "null"}
WIDE = ("refuse", "drop")  # what to do with jobs needing more GPUs than the cluster has
_CORRUPT = (EOFError, gzip.BadGzipFile, zlib.error)  # a .gz cut short or damaged


class _FormatDefault:
    """``class_by`` not given: the format's default (``job_type`` for GFS, none otherwise)."""

    def __repr__(self) -> str:
        return "<format default>"

    def __reduce__(self) -> str:
        # unpickled as the module's one instance: a scenario sent to a worker process keeps meaning
        # "not given" (its checks are by identity)
        return "_DEFAULT"


_DEFAULT: Any = _FormatDefault()


@dataclass(frozen=True)
class GPUTrace:
    """The replayable jobs of a GPU trace, in file order: ``arrival_time`` (s, first kept job at 0),
    ``server_need`` (GPUs, rounded up), ``service_time`` (s), ``job_label`` (the ``class_by`` column, or
    None), ``row`` (CSV line or Philly job index of each job), and ``skipped`` (reason -> count)."""

    path: str
    format: str
    arrival_time: np.ndarray
    server_need: np.ndarray
    service_time: np.ndarray
    row: np.ndarray
    job_label: np.ndarray | None = None
    class_by: str | None = None
    skipped: dict[str, int] = field(default_factory=dict)

    def __len__(self) -> int:
        return int(self.arrival_time.size)


# ---------------------------------------------------------------------------------------------------
# reading


def _open_text(path: Path) -> IO[str]:
    if path.suffix == ".gz":
        return gzip.open(path, "rt", encoding="utf-8", errors="replace", newline="")
    return open(path, encoding="utf-8", errors="replace", newline="")


def _head(path: Path) -> str:
    """The first non-blank line of the file ("" if it has none)."""
    try:
        with _open_text(path) as fh:
            for raw in fh:
                text = raw.strip().lstrip("\ufeff")
                if text:
                    return text
    except OSError as exc:
        raise ValueError(f"GPU trace {str(path)!r}: cannot read it: {exc.strerror or exc}") from None
    except _CORRUPT as exc:
        raise ValueError(f"GPU trace {str(path)!r}: corrupt gzip data: {exc}") from None
    return ""


def _detect(path: Path) -> str | None:
    """The format a file's first line says it is, or None; raises only for an unreadable/empty file."""
    head = _head(path)
    if not head:
        raise ValueError(f"GPU trace {str(path)!r}: the file is empty")
    if head[0] in "[{":
        return "philly"
    cells = next(csv.reader([head]))
    cols = {c.strip() for c in cells}
    for fmt in ("gfs", "openb", "acme", "helios"):
        if set(_REQUIRED[fmt]) <= cols:
            return fmt
    if tuple(c.strip() for c in cells) == PAI_COLUMNS:
        return "pai"
    # headerless PAI task table: 10 fields, inst_num and plan_cpu numbers, status a word
    if len(cells) == len(PAI_COLUMNS) and _is_number(cells[2]) and not _is_number(cells[3]):
        return "pai"
    return None


def detect_gpu_trace_format(path: str | Path) -> str:
    """The format of a GPU trace file (one of :data:`FORMATS`), from its first line: a JSON list is
    Philly; a CSV is told by its header columns (see :data:`TITLES`), a headerless 10-field CSV is PAI.
    Raises a one-line ``ValueError`` naming the file and the formats expected."""
    p = Path(path)
    fmt = _detect(p)
    if fmt is None:
        expected = "; ".join(f"{k}: {v}" for k, v in TITLES.items())
        raise ValueError(
            f"GPU trace {str(p)!r}: cannot tell its format from its first line {_head(p)[:80]!r}; "
            f"expected one of {expected}"
        )
    return fmt


def _gpus(value: float) -> int:
    # a fractional request still holds a whole GPU; the tolerance keeps 300.0000001% at 3 GPUs
    return max(1, math.ceil(value - 1e-9))


class _Rows:
    """Collects kept jobs and skip counts; formats one-line errors for one file."""

    def __init__(self, path: Path, fmt: str) -> None:
        self.where = f"GPU trace {str(path)!r} ({fmt})"
        self.t: list[float] = []
        self.n: list[int] = []
        self.s: list[float] = []
        self.row: list[int] = []
        self.label: list[str] = []
        self.skipped: dict[str, int] = {}

    def skip(self, reason: str) -> None:
        self.skipped[reason] = self.skipped.get(reason, 0) + 1

    def keep(self, t: float, gpus: float, s: float, row: int, label: str | None, where: str) -> None:
        """Keep a job, its GPUs and duration within the limits of a scenario file."""
        if gpus > MAX_SERVERS:
            raise ValueError(f"{where}: {gpus:g} GPUs is beyond the limit {MAX_SERVERS} (MAX_SERVERS)")
        if not MIN_DURATION <= s <= MAX_DURATION:
            raise ValueError(
                f"{where}: duration {s:g} s is outside the limits [{MIN_DURATION:g}, {MAX_DURATION:g}] s"
            )
        self.t.append(t)
        self.n.append(_gpus(gpus))
        self.s.append(s)
        self.row.append(row)
        if label is not None:
            self.label.append(label)


def _number(text: str, where: str, column: str) -> float | None:
    """A numeric field: None if missing; a one-line error if not a (finite) number."""
    if text.strip().lower() in _MISSING:
        return None
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"{where}, column {column!r}: expected a number, got {text!r}") from None
    if not math.isfinite(value):
        raise ValueError(f"{where}, column {column!r}: expected a finite number, got {text!r}")
    return value


def _time(text: str | None, where: str, column: str) -> float | None:
    """A time field (seconds, or an ISO 8601 date-time; naive ones as UTC): None if missing."""
    if text is None or str(text).strip().lower() in _MISSING:
        return None
    text = str(text).strip()
    if _is_number(text):
        return _number(text, where, column)
    try:
        dt = datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(
            f"{where}, column {column!r}: expected seconds or a date-time like '2020-06-09 18:41:01', "
            f"got {text!r}"
        ) from None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return dt.timestamp()


def _nonnegative(value: float, where: str, column: str) -> float:
    if value < 0:
        raise ValueError(f"{where}, column {column!r}: expected a value >= 0, got {value!r}")
    return value


def _read_philly(path: Path, class_by: str | None, rows: _Rows) -> None:
    try:
        with _open_text(path) as fh:
            jobs = json.load(fh)
    except json.JSONDecodeError as exc:
        raise ValueError(
            f"{rows.where}: not JSON ({exc.msg} at line {exc.lineno}); expected {TITLES['philly']}"
        ) from None
    except RecursionError:
        raise ValueError(f"{rows.where}: JSON nested too deeply; expected {TITLES['philly']}") from None
    except _CORRUPT as exc:
        raise ValueError(f"{rows.where}: corrupt gzip data: {exc}") from None
    except OSError as exc:
        raise ValueError(f"{rows.where}: cannot read it: {exc.strerror or exc}") from None
    if isinstance(jobs, dict):  # a single job
        jobs = [jobs]
    if not isinstance(jobs, list):
        raise ValueError(f"{rows.where}: expected a JSON list of jobs, got {type(jobs).__name__}")
    for i, job in enumerate(jobs):
        where = f"{rows.where} job {i}"
        if not isinstance(job, dict) or "attempts" not in job or "submitted_time" not in job:
            keys = sorted(job) if isinstance(job, dict) else type(job).__name__
            raise ValueError(
                f"{where}: expected an object with 'submitted_time' and 'attempts' (a Philly job), got {keys}"
            )
        where = f"{where} ({job.get('jobid', '?')})"
        attempts = job["attempts"]
        if not isinstance(attempts, list):
            raise ValueError(f"{where}, key 'attempts': expected a list, got {attempts!r:.60}")
        label = None
        if class_by is not None:
            if class_by not in job:
                raise ValueError(f"{where}: no key {class_by!r} (class_by); keys: {sorted(job)}")
            label = str(job[class_by])
        submit = _time(job["submitted_time"], where, "submitted_time")
        if not attempts:
            rows.skip("no attempt")
            continue
        last = attempts[-1]
        if not isinstance(last, dict):
            raise ValueError(f"{where}, key 'attempts[-1]': expected an object, got {last!r:.60}")
        start = _time(last.get("start_time"), where, "attempts[-1].start_time")
        end = _time(last.get("end_time"), where, "attempts[-1].end_time")
        if start is None or end is None:
            rows.skip("last attempt not finished")
            continue
        if submit is None:
            rows.skip("missing submitted_time")
            continue
        detail = last.get("detail", [])
        if not isinstance(detail, list) or not all(isinstance(d, dict) for d in detail):
            raise ValueError(
                f"{where}, key 'attempts[-1].detail': expected a list of machines, got {detail!r:.60}"
            )
        gpus = 0
        for d in detail:
            g = d.get("gpus", [])
            if not isinstance(g, list):
                raise ValueError(f"{where}, key 'attempts[-1].detail[].gpus': expected a list, got {g!r:.60}")
            gpus += len(g)
        duration = end - start
        if duration < 0:
            raise ValueError(
                f"{where}, column 'attempts[-1]': negative duration {duration:g} s "
                f"(end_time {last.get('end_time')!r} before start_time {last.get('start_time')!r})"
            )
        if gpus == 0:
            rows.skip("no GPU")
        elif duration == 0:
            rows.skip("zero duration")
        else:
            rows.keep(submit, gpus, duration, i, label, where)


def _csv_rows(path: Path, where: str) -> Iterator[tuple[int, list[str]]]:
    try:
        with _open_text(path) as fh:
            reader = csv.reader(fh)
            for cells in reader:
                if cells and any(c.strip() for c in cells):
                    yield reader.line_num, cells
    except _CORRUPT as exc:
        raise ValueError(f"{where}: corrupt gzip data: {exc}") from None
    except OSError as exc:
        raise ValueError(f"{where}: cannot read it: {exc.strerror or exc}") from None
    except csv.Error as exc:
        raise ValueError(f"{where}: malformed CSV: {exc}") from None


def _read_csv(path: Path, fmt: str, class_by: str | None, rows: _Rows) -> None:
    it = _csv_rows(path, rows.where)
    first = next(it, None)
    if first is None:
        raise ValueError(f"{rows.where}: the file is empty")
    columns: tuple[str, ...]
    if fmt == "pai":
        columns = PAI_COLUMNS
        pending = None if tuple(c.strip() for c in first[1]) == PAI_COLUMNS else first
    else:
        columns = tuple(c.strip().lstrip("\ufeff") for c in first[1])
        pending = None
        missing = [c for c in _REQUIRED[fmt] if c not in columns]
        if missing:
            raise ValueError(
                f"{rows.where}: missing column(s) {', '.join(missing)} in the header "
                f"{', '.join(columns)[:120]!r}; expected {TITLES[fmt]}"
            )
    index = {c: i for i, c in enumerate(columns)}
    if class_by is not None and class_by not in index:
        raise ValueError(f"{rows.where}: class_by column {class_by!r} not in {', '.join(columns)}")
    parse = _ROW_PARSERS[fmt]

    def body() -> Iterator[tuple[int, list[str]]]:
        if pending is not None:
            yield pending
        yield from it

    for line, cells in body():
        if len(cells) != len(columns):
            raise ValueError(
                f"{rows.where} line {line}: expected {len(columns)} fields ({', '.join(columns)[:80]}), "
                f"got {len(cells)}"
            )

        def field_(name: str, _cells: list[str] = cells) -> str:
            return _cells[index[name]]

        where = f"{rows.where} line {line}"
        label = None if class_by is None else (field_(class_by).strip() or "none")
        out = parse(field_, where)
        if isinstance(out, str):
            rows.skip(out)
        else:
            t, gpus, s = out
            rows.keep(t, gpus, s, line, label, where)


_Parsed = tuple[float, float, float] | str  # (arrival, GPUs, duration) or a skip reason


def _gpu_duration(gpus: float | None, duration: float | None) -> str | None:
    """The skip reason shared by every format for a row's GPUs and duration, if any."""
    if gpus is None:
        return "missing GPU count"
    if gpus == 0:
        return "no GPU"
    if duration is None:
        return "missing duration"
    if duration == 0:
        return "zero duration"
    return None


def _submitted(submit: float | None, gpus: float | None, duration: float | None) -> _Parsed:
    """A row of a format with a submit_time column: (arrival, GPUs, duration), or why it is skipped."""
    reason = _gpu_duration(gpus, duration)
    if reason is not None:
        return reason
    if submit is None:
        return "missing submit_time"
    assert gpus is not None and duration is not None
    return submit, gpus, duration


def _parse_submit_duration(gpu_column: str) -> Callable[[Callable[[str], str], str], _Parsed]:
    """Helios and Acme: arrival submit_time, GPUs ``gpu_column``, service time ``duration``."""

    def parse(f: Callable[[str], str], where: str) -> _Parsed:
        gpus = _number(f(gpu_column), where, gpu_column)
        if gpus is not None:
            _nonnegative(gpus, where, gpu_column)
        duration = _number(f("duration"), where, "duration")
        if duration is not None:
            _nonnegative(duration, where, "duration")
        submit = _time(f("submit_time"), where, "submit_time")
        return _submitted(submit, gpus, duration)

    return parse


def _parse_pai(f: Callable[[str], str], where: str) -> _Parsed:
    inst = _number(f("inst_num"), where, "inst_num")
    plan_gpu = _number(f("plan_gpu"), where, "plan_gpu")
    for column, value in (("inst_num", inst), ("plan_gpu", plan_gpu)):
        if value is not None:
            _nonnegative(value, where, column)
    start = _time(f("start_time"), where, "start_time")
    end = _time(f("end_time"), where, "end_time")
    if start is not None and end is not None and end < start:
        raise ValueError(
            f"{where}, column 'end_time': negative duration {end - start:g} s (end_time {end:g} < start_time "
            f"{start:g})"
        )
    if plan_gpu is None or plan_gpu == 0:
        return "no GPU"
    if inst is None:
        return "missing inst_num"
    if start is None or end is None:
        return "missing start_time or end_time"
    # plan_gpu is a percentage of one GPU per instance
    reason = _gpu_duration(inst * plan_gpu / 100.0, end - start)
    return reason if reason is not None else (start, inst * plan_gpu / 100.0, end - start)


def _parse_openb(f: Callable[[str], str], where: str) -> _Parsed:
    gpus = _number(f("num_gpu"), where, "num_gpu")
    if gpus is not None:
        _nonnegative(gpus, where, "num_gpu")
    created = _time(f("creation_time"), where, "creation_time")
    scheduled = _time(f("scheduled_time"), where, "scheduled_time")
    deleted = _time(f("deletion_time"), where, "deletion_time")
    if scheduled is not None and deleted is not None and deleted < scheduled:
        raise ValueError(
            f"{where}, column 'deletion_time': negative duration {deleted - scheduled:g} s (deletion_time "
            f"{deleted:g} < scheduled_time {scheduled:g})"
        )
    if gpus == 0:
        return "no GPU"
    if scheduled is None:
        return "never scheduled"
    if created is None:
        return "missing creation_time"
    if deleted is None:
        return "missing deletion_time"
    reason = _gpu_duration(gpus, deleted - scheduled)
    assert gpus is not None
    return reason if reason is not None else (created, gpus, deleted - scheduled)


def _parse_gfs(f: Callable[[str], str], where: str) -> _Parsed:
    per_worker = _number(f("gpu_request"), where, "gpu_request")
    workers = _number(f("worker_num"), where, "worker_num")
    duration = _number(f("duration"), where, "duration")
    for column, value in (("gpu_request", per_worker), ("worker_num", workers), ("duration", duration)):
        if value is not None:
            _nonnegative(value, where, column)
    submit = _time(f("submit_time"), where, "submit_time")
    gpus = None if per_worker is None or workers is None else per_worker * workers
    return _submitted(submit, gpus, duration)


_ROW_PARSERS: dict[str, Callable[[Callable[[str], str], str], _Parsed]] = {
    "helios": _parse_submit_duration("gpu_num"),
    "acme": _parse_submit_duration("gpu_num"),
    "pai": _parse_pai,
    "openb": _parse_openb,
    "gfs": _parse_gfs,
}


def _check_format(fmt: Any) -> str:
    if fmt not in FORMATS:
        raise ValueError(f"format: expected one of {', '.join(FORMATS)}, got {fmt!r}")
    return str(fmt)


def read_gpu_trace(path: str | Path, format: str | None = None, *, class_by: Any = _DEFAULT) -> GPUTrace:
    """Read a GPU trace file (plain or ``.gz``) of ``format`` (one of :data:`FORMATS`; None: detect it,
    see :func:`detect_gpu_trace_format`). ``class_by`` names the column (Philly: the job key) whose
    value labels each job's class; by default ``job_type`` for GFS and none for the others. A file of
    another format than the one given is refused with a one-line ``ValueError`` saying what it looks
    like; so are malformed rows (see the module docstring)."""
    p = Path(path)
    if format is not None:
        _check_format(format)
    detected = _detect(p)
    if format is None:
        fmt = detect_gpu_trace_format(p)
    else:
        fmt = format
        if detected is not None and detected != fmt:
            raise ValueError(
                f"GPU trace {str(p)!r}: given as format {fmt!r} ({TITLES[fmt]}) but it looks like "
                f"{detected!r} ({TITLES[detected]}); pass format={detected!r}"
            )
    label_by = _DEFAULT_CLASS_BY[fmt] if class_by is _DEFAULT else class_by
    if label_by is not None and not isinstance(label_by, str):
        raise ValueError(f"class_by: expected a column name or None, got {label_by!r}")
    rows = _Rows(p, fmt)
    if fmt == "philly":
        _read_philly(p, label_by, rows)
    else:
        _read_csv(p, fmt, label_by, rows)
    t = np.asarray(rows.t, dtype=np.float64)
    if t.size:
        t = t - t.min()
    return GPUTrace(
        path=str(p),
        format=fmt,
        arrival_time=t,
        server_need=np.asarray(rows.n, dtype=np.int64),
        service_time=np.asarray(rows.s, dtype=np.float64),
        row=np.asarray(rows.row, dtype=np.int64),
        job_label=np.asarray(rows.label, dtype=object) if label_by is not None else None,
        class_by=label_by,
        skipped=dict(sorted(rows.skipped.items())),
    )


# ---------------------------------------------------------------------------------------------------
# workloads


def _default_num_servers(max_need: int) -> int:
    return 1 << max(0, math.ceil(math.log2(max_need)))


def _positive_int(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 1:
        raise ValueError(f"{name}: expected a positive integer, got {value!r}")
    return int(value)


def _positive(name: str, value: Any) -> float:
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or value <= 0
    ):
        raise ValueError(f"{name}: expected a positive number, got {value!r}")
    return float(value)


def gpu_trace_workload(
    path: str | Path | GPUTrace,
    format: str | None = None,
    num_servers: int | None = None,
    *,
    load: float | None = None,
    time_scale: float | None = None,
    arrival_rate: float | None = None,
    first: int | None = None,
    class_by: Any = _DEFAULT,
    name: str | None = None,
    wide: str = "refuse",
) -> TraceWorkload:
    """Replay of a GPU trace (any of :data:`FORMATS`; ``format=None`` detects it) on ``num_servers``
    GPUs (default: the largest job's need rounded up to a power of two). Give at most one of ``load``
    (the time dilation that gives this offered load), ``arrival_rate`` (likewise for the mean arrival
    rate) and ``time_scale`` (multiplies every inter-arrival gap); by default the trace's own timing.
    ``first`` keeps the first N jobs by arrival. ``wide``: a job needing more than ``num_servers``
    GPUs is refused (``"refuse"``) or left out and counted (``"drop"``). ``workload.meta`` records the
    file, format, skipped rows by reason and the time scale."""
    _check_replay_options(load, time_scale, arrival_rate, wide, num_servers, first)
    if isinstance(path, GPUTrace):
        if format is not None and format != path.format:
            raise ValueError(f"format: the trace given is {path.format!r}, not {format!r}")
        if class_by is not _DEFAULT and class_by != path.class_by:
            raise ValueError(f"class_by: the trace given was read with class_by={path.class_by!r}")
        trace = path
    else:
        trace = read_gpu_trace(path, format, class_by=class_by)
    order, skipped = _replayed_jobs(trace, first, num_servers, wide)
    need = trace.server_need[order]
    biggest = int(np.argmax(need))
    k = _default_num_servers(int(need.max())) if num_servers is None else int(num_servers)
    if need[biggest] > k:
        where = "job" if trace.format == "philly" else "line"
        raise ValueError(
            f"num_servers: {k} GPUs is below the largest job's need {int(need[biggest])} "
            f"({trace.path!r} {where} {int(trace.row[order][biggest])}); give a larger num_servers, "
            "or wide=drop to leave such jobs out"
        )
    label = name or f"{trace.format}:{Path(trace.path).name}"
    labels = None if trace.job_label is None else trace.job_label[order]
    times = trace.arrival_time[order] - trace.arrival_time[order][0]
    out = TraceWorkload(k, times, need, trace.service_time[order], name=label, job_label=labels)
    if not math.isfinite(out.load):
        raise ValueError(
            f"GPU trace {trace.path!r} ({trace.format}): all {order.size} jobs arrive at one instant; "
            "a replay needs arrivals spread in time (no load, no arrival rate)"
        )
    if load is None and arrival_rate is None and (time_scale is None or time_scale == 1.0):
        check_load(out.load, f"GPU trace {trace.path!r} ({trace.format}): its own load at {k} GPUs")
    if load is not None:
        out = out.with_load(load)
    elif arrival_rate is not None:
        out = out.with_arrival_rate(arrival_rate)
    elif time_scale is not None and time_scale != 1.0:
        out = out.with_time_scale(time_scale)
    out.meta.update(
        {
            "gpu_trace": trace.path,
            "format": trace.format,
            "skipped": skipped,
            "class_by": trace.class_by,
            "first": first,
        }
    )
    return out


def _check_replay_options(
    load: float | None,
    time_scale: float | None,
    arrival_rate: float | None,
    wide: str,
    num_servers: int | None,
    first: int | None,
) -> None:
    """:func:`gpu_trace_workload`'s options checked before the trace is read."""
    if sum(x is not None for x in (load, time_scale, arrival_rate)) > 1:
        raise ValueError("give at most one of load, time_scale and arrival_rate")
    for label, value in (("time_scale", time_scale), ("arrival_rate", arrival_rate)):
        if value is not None:
            _positive(label, value)
    if load is not None:
        check_load(load)
    if wide not in WIDE:
        raise ValueError(f"wide: expected one of {', '.join(WIDE)}, got {wide!r}")
    if num_servers is not None:
        check_integer("num_servers", num_servers, 1, MAX_SERVERS)
    if first is not None:
        _positive_int("first", first)


def _replayed_jobs(
    trace: GPUTrace, first: int | None, num_servers: int | None, wide: str
) -> tuple[np.ndarray, dict[str, int]]:
    """The trace's rows a replay keeps, in order of arrival (the first ``first``, without those
    wider than ``num_servers`` with ``wide="drop"``), and the rows skipped by reason."""
    order = np.argsort(trace.arrival_time, kind="stable")
    if first is not None:
        order = order[:first]
    skipped = dict(trace.skipped)
    if num_servers is not None and wide == "drop":
        narrow = trace.server_need[order] <= num_servers
        if not narrow.all():
            skipped["wider than num_servers"] = int((~narrow).sum())
            order = order[narrow]
    if order.size < 2:
        shown = ", ".join(f"{k}: {v}" for k, v in skipped.items()) or "none"
        raise ValueError(
            f"GPU trace {trace.path!r} ({trace.format}): fewer than 2 replayable jobs "
            f"({order.size}; skipped {shown})"
        )
    return order, skipped


class FormatLoader(Protocol):
    """A per-format loader: :func:`gpu_trace_workload` with the format fixed (and, for GFS, its
    default ``class_by``)."""

    def __call__(
        self,
        path: str | Path,
        num_servers: int | None = None,
        *,
        load: float | None = None,
        time_scale: float | None = None,
        first: int | None = None,
        class_by: str | None = None,
        name: str | None = None,
    ) -> TraceWorkload: ...


def _format_loader(fmt: str, doc: str, default_class_by: str | None = None) -> FormatLoader:
    """The loader of one format, named ``<fmt>_workload`` and documented by ``doc``."""

    # the keywords are FormatLoader's, which states them for type checkers and the docs
    def loader(
        path: str | Path,
        num_servers: int | None = None,
        *,
        class_by: str | None = default_class_by,
        **kw: Any,
    ) -> TraceWorkload:
        return gpu_trace_workload(path, fmt, num_servers, class_by=class_by, **kw)

    loader.__name__ = loader.__qualname__ = f"{fmt}_workload"
    loader.__doc__ = doc
    return loader


philly_workload = _format_loader(
    "philly",
    """Microsoft Philly (ATC '19), file ``cluster_job_log`` of https://github.com/msr-fiddle/philly-traces.

    Schema (that repository's README, "cluster_job_log"): a JSON list of jobs, each an object with
    ``status`` (Pass, Killed, Failed), ``vc``, ``jobid``, ``user``, ``submitted_time``
    (``"2017-10-07 01:11:39"``) and ``attempts``, a list of scheduling attempts, each with
    ``start_time``, ``end_time`` and ``detail``: a list of machines, each with ``ip`` and ``gpus`` (a
    list of GPU names). The README notes that a job may have no attempt, an attempt may lack its times,
    and a last attempt without ``end_time`` was still running.

    Mapping: arrival = ``submitted_time``; GPUs = the number of GPUs over the **last** attempt's
    machines; service time = the last attempt's ``end_time`` - ``start_time`` (earlier, failed
    attempts are not replayed); every ``status`` (Pass, Killed, Failed) is kept, since each held its
    GPUs. Skipped and counted: no attempt, a last attempt without both times, no GPU, zero duration.
    ``class_by``: a job key, e.g. ``"vc"`` or ``"status"``. The times carry no zone (the same
    release's utilization logs are in US Pacific time) and are read as UTC: a last attempt across the
    2017-11-05 fall-back hour is off by an hour, and one that appears to end before it starts is
    refused. Other arguments: :func:`gpu_trace_workload`.
    """,
)

helios_workload = _format_loader(
    "helios",
    """SenseTime Helios (SC '21), ``data/<cluster>/cluster_log.csv`` of
    https://github.com/S-Lab-System-Group/HeliosData (only Venus is public).

    Schema (that repository's README, "cluster_log.csv"): CSV with a header, columns ``job_id, user,
    vc, gpu_num, cpu_num, node_num, state, submit_time, start_time, end_time, duration, queue``; times
    as ``2020-06-09 18:41:01``; ``duration`` = end - start in seconds; ``state`` COMPLETED, CANCELLED,
    FAILED, TIMEOUT or NODE_FAIL.

    Mapping: arrival = ``submit_time``, GPUs = ``gpu_num``, service time = ``duration``; every state
    is kept (a cancelled or failed job held its GPUs for its duration). CPU-only jobs (``gpu_num`` 0)
    are skipped. Required columns: ``vc, gpu_num, submit_time, duration``. ``class_by``: e.g. ``"vc"``.
    Other arguments: :func:`gpu_trace_workload`.
    """,
)

acme_workload = _format_loader(
    "acme",
    """Shanghai AI Lab Acme (NSDI '24), ``data/job_trace/trace_seren.csv`` and ``trace_kalos.csv`` of
    https://github.com/InternLM/AcmeTrace.

    Schema (that repository's README, "Job Trace"): CSV with a header, columns ``job_id, user,
    node_num, gpu_num, cpu_num, type, state, submit_time, start_time, end_time, duration, queue,
    gpu_time`` (Kalos adds ``mem_per_pod_GB, shared_mem_per_pod, fail_time, stop_time``); times as
    ``2023-03-01 00:18:22+08:00``; ``duration`` = end - start in seconds; ``type`` is the workload
    type in LLM development (e.g. ``Other``).

    Mapping: arrival = ``submit_time``, GPUs = ``gpu_num``, service time = ``duration``; every state
    is kept; CPU-only jobs are skipped. Required columns: ``type, gpu_num, submit_time, duration``.
    ``class_by``: e.g. ``"type"``. Other arguments: :func:`gpu_trace_workload`.
    """,
)

pai_workload = _format_loader(
    "pai",
    """Alibaba PAI 2020 (NSDI '22), ``pai_task_table.csv`` (from ``pai_task_table.tar.gz``) of
    https://github.com/alibaba/clusterdata/tree/master/cluster-trace-gpu-v2020.

    Schema (``data/pai_task_table.header`` and the README's "pai_task_table"): CSV **without** a
    header (a header line equal to the published names is accepted too), columns ``job_name,
    task_name, inst_num, status, start_time, end_time, plan_cpu, plan_mem, plan_gpu, gpu_type``; one
    row per task (a job's roles, e.g. ``ps`` and ``worker``, are separate rows); times in seconds
    (shifted by a constant); ``plan_gpu`` is a percentage of one GPU **per instance** (100 = one GPU,
    50 = half of one); ``gpu_type`` e.g. V100, P100, T4, MISC.

    Mapping: one job per task row; arrival = ``start_time`` (task launch), service time =
    ``end_time - start_time``; GPUs = ``inst_num * plan_gpu / 100`` rounded **up**, at least 1 (two
    half-GPU instances hold one GPU, three hold two: fractional instances are packed, and a share of a
    GPU holds all of it). Every ``status`` is kept; rows without GPUs (``plan_gpu`` empty or 0) or
    without both times (e.g. tasks still running or waiting) are skipped. ``class_by``: e.g.
    ``"gpu_type"``, ``"task_name"`` or ``"status"``. Other arguments: :func:`gpu_trace_workload`.
    """,
)

openb_workload = _format_loader(
    "openb",
    """Alibaba GPU 2023 (ATC '23, "Beware of Fragmentation"), ``csv/openb_pod_list_*.csv`` of
    https://github.com/alibaba/clusterdata/tree/master/cluster-trace-gpu-v2023.

    Schema (that folder's README and ``openb_pod_list_default.csv``): CSV with a header, columns
    ``name, cpu_milli, memory_mib, num_gpu, gpu_milli, gpu_spec, qos, pod_phase, creation_time,
    deletion_time, scheduled_time``; times in seconds; ``num_gpu`` 0..8; ``gpu_milli`` the share of
    one GPU (in thousandths) a GPU-sharing pod (``num_gpu`` 1) asks for; ``qos`` LS, BE, Burstable,
    Guaranteed; pods never scheduled (``pod_phase`` Pending) have an empty ``scheduled_time``.

    Mapping: arrival = ``creation_time``; GPUs = ``num_gpu`` (a GPU-sharing pod holds one whole GPU:
    ``gpu_milli`` is ignored); service time = ``deletion_time - scheduled_time``, the time the pod
    held its GPUs. Pods never scheduled are **skipped** (they never ran, so their creation-to-deletion
    time is waiting, not service); CPU-only pods are skipped. Pods still ``Running`` at the end of the
    trace carry the trace's end as their deletion time and are kept as recorded. ``class_by``: e.g.
    ``"qos"``. Other arguments: :func:`gpu_trace_workload`.
    """,
)

gfs_workload = _format_loader(
    "gfs",
    """Alibaba GFS 2026 (ASPLOS '26, spot GPU jobs), ``job_info_df.csv`` of
    https://github.com/alibaba/clusterdata/tree/master/cluster-trace-v2026-spot-gpu.

    Schema (that folder's README, the workload dataset): CSV with a header, columns ``job_name,
    organization, gpu_model, cpu_request, gpu_request, worker_num, submit_time, duration, job_type``;
    ``gpu_request`` GPUs per worker, ``worker_num`` instances; ``submit_time`` seconds after the first
    submitted job; ``duration`` seconds; ``job_type`` ``HP`` (high-priority, strict SLOs) or ``Spot``
    (runs on spot instances).

    Mapping: arrival = ``submit_time``, GPUs = ``gpu_request * worker_num`` (rounded up if
    fractional), service time = ``duration``. Classes: by default (label, need) pairs of ``job_type``,
    so high-priority and spot jobs are separate classes (``"HP/need-8"``, ``"Spot/need-8"``);
    ``class_by=None`` groups by need only. Required columns: ``gpu_request, worker_num, submit_time,
    duration``. Other arguments: :func:`gpu_trace_workload`.
    """,
    default_class_by="job_type",
)


# ---------------------------------------------------------------------------------------------------
# scenarios: FORMAT:PATH[?options]

_SPEC_PREFIXES = (*FORMATS, "gpu")
_CACHE: dict[tuple[Any, ...], GPUTrace] = {}


def is_gpu_trace_spec(text: str) -> bool:
    """Whether ``text`` is a GPU-trace scenario ``FORMAT:PATH[?options]`` (FORMAT in :data:`FORMATS`
    or ``gpu``)."""
    head, sep, rest = str(text).partition(":")
    return bool(sep) and head in _SPEC_PREFIXES and bool(rest)


def _cached_trace(path: Path, fmt: str | None, class_by: Any) -> GPUTrace:
    """Read once per process: leaderboards build the same scenario for every load and seed."""
    st = path.stat()
    key = (str(path.resolve()), fmt, repr(class_by), st.st_mtime_ns, st.st_size)
    if key not in _CACHE:
        if len(_CACHE) >= 4:
            _CACHE.clear()
        _CACHE[key] = read_gpu_trace(path, fmt, class_by=class_by)
    return _CACHE[key]


@dataclass(frozen=True)
class GPUTraceScenario(ReplayScenario):
    """A GPU trace as a scenario: :meth:`build` gives its :class:`TraceWorkload` for a cluster size and
    load, like :meth:`msj_gym.workloads.scenarios.Scenario.build`. Made by :func:`gpu_trace_scenario`."""

    name: str
    path: str
    format: str | None = None
    num_servers: int | None = None
    load: float | None = None
    first: int | None = None
    class_by: Any = _DEFAULT
    description: str = ""
    source: str = ""
    wide: str = "refuse"
    start: int | None = None
    length: int | None = None

    def trace(self) -> GPUTrace:
        """The parsed trace (read once per process)."""
        return _cached_trace(Path(self.path), self.format, self.class_by)

    def replay(
        self, num_servers: int | None, load: float | None, arrival_rate: float | None
    ) -> TraceWorkload:
        """The workload (see :meth:`ReplayScenario.build`)."""
        wl = gpu_trace_workload(
            self.trace(),
            num_servers=num_servers if num_servers is not None else self.num_servers,
            load=load,
            arrival_rate=arrival_rate,
            first=self.first,
            name=self.name,
            wide=self.wide,
        )
        if self.start is not None and self.length is not None:
            # after the dilation: a sequence keeps the whole trace's timing at that load, as the
            # sequences of the evaluation protocol (msj_gym.experiments.sequences) are cut from it
            wl = wl.jobs(self.start, self.length)
        return wl


def gpu_trace_scenario(spec: str) -> GPUTraceScenario:
    """The scenario of a spec ``FORMAT:PATH[?num_servers=K&load=RHO&first=N&class_by=COLUMN&wide=W]``:
    FORMAT one of :data:`FORMATS`, or ``gpu`` to detect it; PATH a file, or a name looked up in
    ``$MSJ_GYM_TRACE_DIR``; ``class_by=none`` for classes by need only; ``wide`` ``refuse`` (default)
    or ``drop`` for jobs wider than ``num_servers``; ``start`` and ``length`` (together) keep jobs
    start .. start + length - 1 of the replay, after its time dilation (a sequence of the evaluation
    protocol). Every option is checked, and the file (exists, is
    of that format), now; the file is read at the first :meth:`GPUTraceScenario.build`."""
    if not is_gpu_trace_spec(spec):
        raise ValueError(
            f"GPU trace scenario: expected 'FORMAT:PATH[?options]' with FORMAT in "
            f"{', '.join(_SPEC_PREFIXES)}, got {spec!r}"
        )
    head, _, rest = spec.partition(":")
    where = f"GPU trace scenario {spec!r}"
    target, _, query = rest.partition("?")
    options: dict[str, Any] = {}
    for item in filter(None, query.split("&")):
        key, sep, value = item.partition("=")
        if not sep:
            raise ValueError(f"{where}: expected option=value, got {item!r}")
        if key in options:  # a second value would silently win over the first
            raise ValueError(f"{where}: option {key!r} is given twice")
        if key == "class_by":
            options[key] = None if value.lower() == "none" else value
        elif key == "wide":
            if value not in WIDE:
                raise ValueError(f"{where}: wide {value!r}: expected one of {', '.join(WIDE)}")
            options[key] = value
        elif key in ("num_servers", "first", "load", "start", "length"):
            try:
                options[key] = float(value) if key == "load" else int(value)
            except ValueError:
                raise ValueError(f"{where}: {key} expects a number, got {value!r}") from None
        else:
            raise ValueError(
                f"{where}: unknown option {key!r}; known: num_servers, load, first, class_by, wide, start, "
                "length"
            )
    if "num_servers" in options:
        check_integer(f"{where}: num_servers", options["num_servers"], 1, MAX_SERVERS)
    if "first" in options:
        _positive_int(f"{where}: first", options["first"])
    if ("start" in options) != ("length" in options):
        raise ValueError(f"{where}: start and length go together (jobs start .. start + length - 1)")
    if "start" in options:
        check_integer(f"{where}: start", options["start"], 0, 10**12)
        _positive_int(f"{where}: length", options["length"])
    if "load" in options:
        check_load(options["load"], f"{where}: load")
    from .swf import find_trace, trace_dirs  # one lookup for every trace

    path = find_trace(target)
    if not path.is_file():
        source = f"; the {head} traces are published at {SOURCES[head]}" if head in SOURCES else ""
        dirs = ", ".join(str(d) for d in trace_dirs())
        raise ValueError(
            f"{where}: no such file {target!r} (relative names are also looked up in {dirs}){source}"
        )
    fmt = None if head == "gpu" else head
    detected = detect_gpu_trace_format(path) if fmt is None else _detect(path)
    if fmt is not None and detected is not None and detected != fmt:
        raise ValueError(
            f"{where}: {str(path)!r} looks like {detected!r} ({TITLES[detected]}), not {fmt!r}; "
            f"write {detected}:{target}"
        )
    return GPUTraceScenario(
        name=spec,
        path=str(path),
        format=fmt or detected,
        num_servers=options.get("num_servers"),
        load=options.get("load"),
        first=options.get("first"),
        class_by=options.get("class_by", _DEFAULT),
        wide=options.get("wide", "refuse"),
        start=options.get("start"),
        length=options.get("length"),
        description=f"GPU trace replay: {TITLES[fmt or str(detected)]}",
        source=str(path),
    )
