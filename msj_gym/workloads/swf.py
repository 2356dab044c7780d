"""Standard Workload Format (SWF) logs of the Parallel Workloads Archive: reading, binning jobs into
power-of-two classes, per-class tables, and trace replay.

SWF (https://www.cs.huji.ac.il/labs/parallel/workload/swf.html): header lines start with ``;`` (``; Key:
value``, repeated keys such as ``Queue`` collect into lists); every other non-blank line is one job with
18 whitespace-separated numeric fields (below); -1 marks a missing value. A line with another number of
fields or a non-numeric field is reported with its line number.

Anselmi & Doncel (2024), Sec. 6.2, takes Submit Time (field 2), Run Time (4) and Number of Allocated
Processors (5), keeps power-of-two server needs up to 64 and gets C = 7 classes. Applied literally that does
not give its Table 2; the recipe that does (found by trying readings against the table) rounds needs *down* to
a power of two and takes class shares over the whole log, run-time moments over the first ~20,000 jobs.
Both binnings are offered: ``"literal"`` (drop non-powers of two) and ``"round-down"`` (n -> 2^floor(log2 n)).

**Replay as HPC batch scheduling measures it** (:func:`swf_replay`, the scenario ``swf:FILE``): every
usable job with its own processor count (no binning) on the machine's own k (the header's ``MaxProcs``,
else ``MaxNodes``), its submit time, run time and requested time (the user's estimate, carried with the
job for the heuristics and EASY). The cleaning rules, applied in this order, each dropped job counted
under the first rule it fails (``workload.meta["cleaning"]``):

1. a missing (-1) submit time: dropped;
2. a missing run time: dropped; a run time of 0 (the job ran under half a second, or never): dropped;
3. processors: the requested number (field 8), or where it is missing the allocated number (field 5)
   (``need="requested"``, the default; ``"allocated"`` the other way round; ``"max"`` the larger of the
   two); neither: dropped;
4. more processors than k: dropped (the machine could never run it);
5. a missing or zero requested time (field 9): the run time stands in for it (counted, kept);
6. every status is kept: a failed or cancelled job that ran held its processors for its run time.

A used field below -1 (-1 marks a missing value) is not a log to clean but a broken one: a one-line
error names the file, line, field and value. ``cleaning="rlscheduler"`` applies the rules of
RLScheduler's loader instead (DIR-LAB/deep-batch-scheduler, ``job.py``): processors the larger of
requested and allocated, a missing (negative) run time set to 10 s, jobs with a run time of 0 dropped,
a missing requested time replaced by the run time, and no check against k (a job without a submit
time, which that loader keeps at time -1, is dropped as well: a replay starts at time 0 or later).
"""

from __future__ import annotations

import gzip
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .trace import ReplayScenario, TraceWorkload

__all__ = [
    "BINNINGS",
    "CLEANINGS",
    "NEEDS",
    "SWF_FIELDS",
    "SWFLog",
    "SWFScenario",
    "bin_server_needs",
    "class_table",
    "find_trace",
    "header_num_servers",
    "is_swf_spec",
    "read_swf",
    "swf_jobs",
    "swf_replay",
    "swf_scenario",
    "swf_source",
    "swf_workload",
    "table_rows_as_text",
    "trace_dirs",
]

SWF_FIELDS = (
    "job_number",
    "submit_time",
    "wait_time",
    "run_time",
    "allocated_processors",
    "average_cpu_time",
    "used_memory",
    "requested_processors",
    "requested_time",
    "requested_memory",
    "status",
    "user_id",
    "group_id",
    "executable",
    "queue",
    "partition",
    "preceding_job",
    "think_time",
)
BINNINGS = ("round-down", "literal")
NEEDS = ("requested", "allocated", "max")  # which processor count is a job's server need
CLEANINGS = ("standard", "rlscheduler")
_USED = ("submit_time", "run_time", "allocated_processors", "requested_processors", "requested_time")
WIDE = ("refuse", "drop")  # what to do with jobs needing more servers than the system has


@dataclass(frozen=True)
class SWFLog:
    """A parsed SWF log: ``header`` (``; Key: value`` lines; a repeated key maps to a list),
    ``records`` (jobs x 18 float64, in file order, -1 = missing) and each record's ``line`` number."""

    path: str
    header: dict[str, Any]
    records: np.ndarray
    line: np.ndarray
    comments: list[str] = field(default_factory=list)

    def __len__(self) -> int:
        return int(self.records.shape[0])

    def column(self, name: str, missing: float | None = None) -> np.ndarray:
        """One field by its SWF name (see ``SWF_FIELDS``); with ``missing``, -1 entries are replaced."""
        if name not in SWF_FIELDS:
            raise ValueError(f"SWF field: expected one of {', '.join(SWF_FIELDS)}, got {name!r}")
        values = self.records[:, SWF_FIELDS.index(name)].copy()
        if missing is not None:
            values[values == -1] = missing
        return values


def read_swf(path: str | Path) -> SWFLog:
    """Parse an SWF log (plain or ``.gz``). Raises ``ValueError`` naming the file and line of the first
    malformed record (wrong number of fields, a non-numeric or non-finite field)."""
    p = Path(path)
    opener = gzip.open if p.suffix == ".gz" else open
    header: dict[str, Any] = {}
    comments: list[str] = []
    rows: list[list[float]] = []
    lines: list[int] = []
    try:
        with opener(p, "rt", encoding="utf-8", errors="replace") as fh:
            for number, raw in enumerate(fh, 1):
                text = raw.strip()
                if not text:
                    continue
                if text.startswith(";"):
                    body = text[1:].strip()
                    comments.append(body)
                    key, sep, value = body.partition(":")
                    if sep and key and " " not in key.strip():
                        key, value = key.strip(), value.strip()
                        if key in header:
                            prev = header[key]
                            header[key] = [*prev, value] if isinstance(prev, list) else [prev, value]
                        else:
                            header[key] = value
                    continue
                parts = text.split()
                if len(parts) != len(SWF_FIELDS):
                    raise ValueError(
                        f"SWF file {str(p)!r} line {number}: expected {len(SWF_FIELDS)} fields, "
                        f"got {len(parts)}: {text[:80]!r}"
                    )
                try:
                    row = [float(v) for v in parts]
                except ValueError:
                    bad = next(v for v in parts if not _is_number(v))
                    raise ValueError(
                        f"SWF file {str(p)!r} line {number}: field "
                        f"{SWF_FIELDS[parts.index(bad)]!r} is not a number: {bad!r}"
                    ) from None
                if not all(math.isfinite(v) for v in row):
                    raise ValueError(f"SWF file {str(p)!r} line {number}: non-finite field in {text[:80]!r}")
                rows.append(row)
                lines.append(number)
    except OSError as exc:
        raise ValueError(f"SWF file {str(p)!r}: cannot read it: {exc.strerror or exc}") from None
    except (EOFError, gzip.BadGzipFile) as exc:
        raise ValueError(f"SWF file {str(p)!r}: corrupt gzip data: {exc}") from None
    records = np.array(rows, dtype=np.float64).reshape(-1, len(SWF_FIELDS))
    return SWFLog(str(p), header, records, np.array(lines, dtype=np.int64), comments)


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def bin_server_needs(needs: np.ndarray, binning: str, max_need: int) -> np.ndarray:
    """The class need of each job, or 0 where the job is dropped. ``"literal"``: powers of two up to
    ``max_need`` kept as is, others dropped (Anselmi & Doncel (2024), Sec. 6.2 as written); ``"round-down"``:
    needs in [1, 2 max_need) rounded down to a power of two (reproduces Table 2)."""
    if binning not in BINNINGS:
        raise ValueError(f"binning: expected one of {', '.join(BINNINGS)}, got {binning!r}")
    if isinstance(max_need, bool) or int(max_need) != max_need or max_need < 1 or max_need & (max_need - 1):
        raise ValueError(f"max_need: expected a power of two >= 1, got {max_need!r}")
    n = np.asarray(needs, dtype=np.float64)
    out = np.zeros(n.shape, dtype=np.int64)
    ok = (n >= 1) & (n == np.floor(n))
    nn = np.where(ok, n, 1).astype(np.int64)
    down = np.left_shift(1, np.floor(np.log2(nn)).astype(np.int64))
    if binning == "literal":
        keep = ok & (down == nn) & (nn <= max_need)
        out[keep] = nn[keep]
    else:
        keep = ok & (nn < 2 * max_need)
        out[keep] = down[keep]
    return out


def swf_jobs(
    log: SWFLog, *, binning: str = "round-down", max_need: int = 64, first: int | None = None
) -> dict[str, Any]:
    """The jobs of ``log`` usable as multiserver jobs: run time > 0 and allocated processors > 0 (missing
    values, -1, drop a job), binned by :func:`bin_server_needs`; in file order, optionally only the
    ``first`` of them. Returns ``submit_time``, ``server_need``, ``run_time``, ``line`` and
    ``skipped`` (the jobs left out, by reason).

    A value that is neither missing (-1) nor usable is an error naming its line: a negative submit
    time, run time or processor count, and a run time outside the limits a scenario file has
    ([MIN_DURATION, MAX_DURATION], 1e-6 .. 1e9 s)."""
    from .distributions import MAX_DURATION, MIN_DURATION

    submit = log.column("submit_time")
    run = log.column("run_time")
    procs = log.column("allocated_processors")
    for name, values, bad in (
        ("submit_time", submit, (submit < 0) & (submit != -1)),
        (
            "run_time",
            run,
            ((run < 0) & (run != -1)) | ((run > 0) & ((run < MIN_DURATION) | (run > MAX_DURATION))),
        ),
        ("allocated_processors", procs, (procs < 0) & (procs != -1)),
    ):
        idx = np.flatnonzero(bad)
        if idx.size:
            limits = (
                f" (limits [{MIN_DURATION:g}, {MAX_DURATION:g}] s; -1 = missing)"
                if name == "run_time"
                else ""
            )
            raise ValueError(
                f"SWF file {log.path!r} line {int(log.line[idx[0]])}: field {name!r} "
                f"{values[idx[0]]:g} is not usable{limits}"
            )
    need = bin_server_needs(procs, binning, max_need)
    reasons = (
        ("missing submit_time", submit < 0),
        ("missing or zero run_time", run <= 0),
        ("missing or zero allocated_processors", procs <= 0),
        (f"need outside the {binning} binning (max_need={max_need})", need == 0),
    )
    keep = np.ones(submit.shape, dtype=bool)
    skipped: dict[str, int] = {}
    for reason, out in reasons:
        n = int((keep & out).sum())
        if n:
            skipped[reason] = n
        keep &= ~out
    idx = np.flatnonzero(keep)
    if first is not None:
        if isinstance(first, bool) or int(first) != first or first < 1:
            raise ValueError(f"first: expected a positive integer, got {first!r}")
        idx = idx[: int(first)]
    return {
        "submit_time": submit[idx],
        "server_need": need[idx],
        "run_time": run[idx],
        "line": log.line[idx],
        "skipped": skipped,
    }


def class_table(server_need: np.ndarray, run_time: np.ndarray) -> list[dict[str, float]]:
    """Per distinct need (ascending): ``server_need``, ``count``, share ``alpha``, ``mean`` and sample
    ``std`` (ddof = 1) of the run time: the columns of Anselmi & Doncel (2024), Tables 2-3."""
    need = np.asarray(server_need)
    run = np.asarray(run_time, dtype=np.float64)
    rows = []
    for n in np.unique(need):
        r = run[need == n]
        rows.append(
            {
                "server_need": int(n),
                "count": int(r.size),
                "alpha": r.size / need.size,
                "mean": float(r.mean()),
                "std": float(r.std(ddof=1)) if r.size > 1 else float("nan"),
            }
        )
    return rows


def swf_workload(
    path: str | Path | SWFLog,
    num_servers: int,
    *,
    binning: str = "round-down",
    max_need: int = 64,
    first: int | None = None,
    time_scale: float | None = None,
    load: float | None = None,
    name: str | None = None,
    wide: str = "refuse",
) -> TraceWorkload:
    """Replay of an SWF log's jobs (see :func:`swf_jobs`) on ``num_servers`` servers: submit times as
    arrival times, binned needs, run times as service times. The load is set either by ``time_scale``
    (multiplies every inter-arrival gap) or by ``load`` (the time scale that gives that offered load,
    sum of need x run time / (k x span)); by default the log's own timing. ``wide``: a job whose
    binned need exceeds ``num_servers`` is refused (``"refuse"``) or left out and counted
    (``"drop"``). ``workload.meta["skipped"]`` counts the jobs left out by reason. ``num_servers``
    and ``load`` are held to the limits of a scenario file; a log whose kept jobs all arrive at one
    instant is refused (it has no load)."""
    from .workload import MAX_SERVERS, check_integer, check_load

    check_integer("num_servers", num_servers, 1, MAX_SERVERS)
    if load is not None:
        check_load(load)
    if wide not in WIDE:
        raise ValueError(f"wide: expected one of {', '.join(WIDE)}, got {wide!r}")
    log = path if isinstance(path, SWFLog) else read_swf(path)
    jobs = swf_jobs(log, binning=binning, max_need=max_need, first=first)
    skipped = dict(jobs.pop("skipped"))
    if wide == "drop" and jobs["server_need"].size and jobs["server_need"].max() > num_servers:
        narrow = jobs["server_need"] <= num_servers
        skipped["wider than num_servers"] = int((~narrow).sum())
        jobs = {key: value[narrow] for key, value in jobs.items()}
    if jobs["run_time"].size < 2:
        raise ValueError(f"SWF file {log.path!r}: fewer than 2 usable jobs after filtering ({skipped})")
    need = jobs["server_need"]
    if need.max() > num_servers:
        line = int(jobs["line"][int(np.argmax(need))])
        raise ValueError(
            f"num_servers: {num_servers} is below the largest binned server need {int(need.max())} "
            f"(SWF file {log.path!r} line {line}); lower max_need, or wide='drop' to leave such jobs out"
        )
    if time_scale is not None and load is not None:
        raise ValueError("give at most one of time_scale and load")
    label = name or Path(log.path).name
    base = TraceWorkload(num_servers, jobs["submit_time"], need, jobs["run_time"], name=label)
    if not math.isfinite(base.load):
        raise ValueError(
            f"SWF file {log.path!r}: all {need.size} kept jobs arrive at one instant; a replay needs "
            "arrivals spread in time (no load, no arrival rate)"
        )
    if load is not None:
        time_scale = base.load / load
    if time_scale is None or time_scale == 1.0:
        out = base
    else:
        out = TraceWorkload(
            num_servers, jobs["submit_time"], need, jobs["run_time"], name=label, time_scale=time_scale
        )
    out.meta.update(
        {"swf": log.path, "binning": binning, "max_need": max_need, "first": first, "skipped": skipped}
    )
    return out


def table_rows_as_text(rows: Sequence[dict[str, float]]) -> str:
    """The class table as aligned text (for the CLI and the docs)."""
    lines = [f"{'n_i':>4} {'count':>7} {'alpha':>7} {'E[D]':>10} {'std(D)':>10}"]
    for r in rows:
        lines.append(
            f"{r['server_need']:>4} {r['count']:>7} {r['alpha']:>7.4f} {r['mean']:>10.2f} {r['std']:>10.2f}"
        )
    return "\n".join(lines)


TRACE_DIR_ENV = "MSJ_GYM_TRACE_DIR"


def trace_dirs() -> list[Path]:
    """Where a trace's relative file name is looked up, in order: ``$MSJ_GYM_TRACE_DIR`` (if set), then
    the project's shared traces folder next to a source checkout (``../shared/data/traces``)."""
    import os

    dirs = [Path(os.environ[TRACE_DIR_ENV])] if os.environ.get(TRACE_DIR_ENV) else []
    return [*dirs, Path(__file__).resolve().parents[3] / "shared" / "data" / "traces"]


def find_trace(target: str | Path) -> Path:
    """The file a trace spec names: ``target`` itself if it is a file or an absolute path, else the first
    of :func:`trace_dirs` that holds it, else ``target`` as given (not a file: the caller refuses it)."""
    path = Path(target).expanduser()
    if path.is_file() or path.is_absolute():
        return path
    return next((d / path for d in trace_dirs() if (d / path).is_file()), path)


_LOGS: dict[str, SWFLog] = {}


def swf_source(spec: str, *, num_servers: int, load: float | None = None) -> TraceWorkload:
    """The workload of a trace source ``"swf:FILE[?binning=B&max_need=M&first=N&wide=W]"`` (as figures name
    their scenario): FILE is a path, or a file name looked up in ``$MSJ_GYM_TRACE_DIR`` and then in the
    shared traces folder; the load is set by time scaling (see :func:`swf_workload`)."""
    if not spec.startswith("swf:"):
        raise ValueError(f"trace source: expected 'swf:FILE[?options]', got {spec!r}")
    name, _, query = spec[4:].partition("?")
    options: dict[str, Any] = {}
    for item in filter(None, query.split("&")):
        key, _, value = item.partition("=")
        if key in options:  # a second value would silently win over the first
            raise ValueError(f"trace source {spec!r}: option {key!r} is given twice")
        if key in ("binning", "wide"):
            options[key] = value
        elif key in ("max_need", "first"):
            try:
                options[key] = int(value)
            except ValueError:
                raise ValueError(f"trace source {spec!r}: {key} expects an integer, got {value!r}") from None
        else:
            raise ValueError(
                f"trace source {spec!r}: unknown option {key!r}; known: binning, max_need, first, wide"
            )
    path = Path(name)
    if not path.is_absolute():
        found = [d / name for d in trace_dirs() if (d / name).exists()]
        if not found:
            where = ", ".join(str(d) for d in trace_dirs())
            raise ValueError(f"trace source {spec!r}: {name!r} not found in {where} (set ${TRACE_DIR_ENV})")
        path = found[0]
    key = str(path)
    if key not in _LOGS:
        _LOGS[key] = read_swf(path)
    return swf_workload(_LOGS[key], num_servers, load=load, **options)


# ---------------------------------------------------------------------------------------------------
# replay as HPC batch scheduling measures it: swf:FILE


def header_num_servers(log: SWFLog) -> int | None:
    """The machine's processors from the log's header: ``MaxProcs``, else ``MaxNodes`` (the leading
    integer of the value: CTC's reads ``338 (batch partition; 512 total)``), or None."""
    for key in ("MaxProcs", "MaxNodes"):
        value = log.header.get(key)
        if isinstance(value, list):
            value = value[0]
        match = re.match(r"\s*(\d+)", str(value)) if value is not None else None
        if match and int(match.group(1)) > 0:
            return int(match.group(1))
    return None


def _check_used_fields(log: SWFLog) -> None:
    """A used field below -1 (-1 marks a missing value) is a broken log: one line naming the place."""
    for name in _USED:
        col = log.records[:, SWF_FIELDS.index(name)]
        bad = np.flatnonzero(col < -1)
        if bad.size:
            i = bad[0]
            raise ValueError(
                f"SWF file {log.path!r} line {int(log.line[i])}: field {name!r} is negative: "
                f"{col[i]:g} (-1 marks a missing value)"
            )


def swf_replay(
    log: str | Path | SWFLog,
    num_servers: int | None = None,
    *,
    need: str = "requested",
    cleaning: str = "standard",
    first: int | None = None,
    name: str | None = None,
) -> TraceWorkload:
    """An SWF log replayed as HPC batch scheduling measures it (see the module docstring): every job
    kept by the cleaning rules, with its own processor count as its server need, its run time as its
    service time, its submit time as its arrival time and its requested time carried with it, on
    ``num_servers`` servers (default: the header's k). ``first`` keeps the first N kept jobs.
    ``workload.meta["cleaning"]`` counts the jobs dropped (and the requested times filled) by rule."""
    log = log if isinstance(log, SWFLog) else read_swf(log)
    k = _replay_servers(log, num_servers, need, cleaning, first)
    keep, procs, run, counts = _clean(log, k, need, cleaning)
    requested = log.column("requested_time")
    filled = keep & (requested <= 0)
    if filled.any():
        counts["requested time from the run time"] = int(filled.sum())
    requested = np.where(requested > 0, requested, run)
    idx = np.flatnonzero(keep)
    if first is not None:
        idx = idx[:first]
    _check_kept(log, idx, procs, k, counts)
    out = TraceWorkload(
        int(k),
        log.column("submit_time")[idx],
        procs[idx].astype(np.int64),
        run[idx],
        name=name or Path(log.path).name,
        requested_time=requested[idx],
    )
    out.meta.update(
        {"swf": log.path, "need": need, "cleaning_rules": cleaning, "first": first, "cleaning": counts}
    )
    return out


def _replay_servers(log: SWFLog, num_servers: int | None, need: str, cleaning: str, first: int | None) -> int:
    """:func:`swf_replay`'s arguments checked, and the servers it replays on (default: the header's)."""
    if need not in NEEDS:
        raise ValueError(f"need: expected one of {', '.join(NEEDS)}, got {need!r}")
    if cleaning not in CLEANINGS:
        raise ValueError(f"cleaning: expected one of {', '.join(CLEANINGS)}, got {cleaning!r}")
    if first is not None and (isinstance(first, bool) or not isinstance(first, int) or first < 1):
        raise ValueError(f"first: expected a positive integer, got {first!r}")
    _check_used_fields(log)
    k = header_num_servers(log) if num_servers is None else num_servers
    if k is None:
        raise ValueError(
            f"SWF file {log.path!r}: its header gives no MaxProcs or MaxNodes; give num_servers (or --k)"
        )
    if isinstance(k, bool) or not isinstance(k, int | np.integer) or k < 1:
        raise ValueError(f"num_servers: expected a positive integer, got {k!r}")
    return k


def _clean(
    log: SWFLog, k: int, need: str, cleaning: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict[str, int]]:
    """The cleaning rules: which jobs are kept, every job's processor count and run time (as the
    rules read them), and the count of jobs each rule dropped."""
    submit = log.column("submit_time")
    run = log.column("run_time")
    alloc = log.column("allocated_processors")
    req = log.column("requested_processors")
    counts: dict[str, int] = {}

    def drop(mask: np.ndarray, reason: str, keep: np.ndarray) -> np.ndarray:
        hit = keep & mask
        if hit.any():
            counts[reason] = int(hit.sum())
        return keep & ~mask

    keep = drop(submit < 0, "missing submit time", np.ones(len(log), dtype=bool))
    if cleaning == "rlscheduler":
        procs = np.maximum(alloc, req)
        run = np.where(run < 0, 10.0, run)
        keep = drop(run <= 0, "zero run time", keep)
        keep = drop(procs <= 0, "no processor count", keep)
    else:
        if need == "requested":
            procs = np.where(req > 0, req, alloc)
        elif need == "allocated":
            procs = np.where(alloc > 0, alloc, req)
        else:
            procs = np.maximum(alloc, req)
        keep = drop(run < 0, "missing run time", keep)
        keep = drop(run == 0, "zero run time", keep)
        keep = drop(procs <= 0, "no processor count", keep)
        keep = drop(procs > k, f"more processors than k = {k}", keep)
    return keep, procs, run, counts


def _check_kept(log: SWFLog, idx: np.ndarray, procs: np.ndarray, k: int, counts: dict[str, int]) -> None:
    """The kept jobs ``idx`` make a replay: at least two, none wider than ``k``, whole counts."""
    if idx.size < 2:
        dropped = ", ".join(f"{r}: {c}" for r, c in counts.items()) or "none"
        raise ValueError(
            f"SWF file {log.path!r}: fewer than 2 usable jobs after cleaning (dropped {dropped})"
        )
    big = procs[idx] > k
    if big.any():  # only the rlscheduler cleaning keeps them
        i = idx[np.flatnonzero(big)[0]]
        raise ValueError(
            f"num_servers: {k} is below job {int(log.records[i, 0])}'s {int(procs[i])} processors "
            f"({log.path!r} line {int(log.line[i])})"
        )
    non_integer = procs[idx] != np.round(procs[idx])
    if non_integer.any():
        i = idx[np.flatnonzero(non_integer)[0]]
        raise ValueError(
            f"SWF file {log.path!r} line {int(log.line[i])}: processor count {procs[i]:g} is not whole"
        )


def is_swf_spec(text: Any) -> bool:
    """Whether ``text`` is an SWF scenario ``swf:FILE[?options]``."""
    head, sep, rest = str(text).partition(":")
    return isinstance(text, str) and head == "swf" and bool(sep) and bool(rest)


def _cached_log(path: Path) -> SWFLog:
    """Read once per process (leaderboards build the same scenario for every load and seed); a file
    changed since is read anew."""
    st = path.stat()
    key = f"{path.resolve()}:{st.st_mtime_ns}:{st.st_size}"
    if key not in _LOGS:
        if len(_LOGS) >= 4:
            _LOGS.clear()
        _LOGS[key] = read_swf(path)
    return _LOGS[key]


@dataclass(frozen=True)
class SWFScenario(ReplayScenario):
    """An SWF log as a scenario (made by :func:`swf_scenario`): :meth:`build` gives its replay for a
    machine size and load, like :meth:`msj_gym.workloads.scenarios.Scenario.build`."""

    name: str
    path: str
    num_servers: int | None = None
    load: float | None = None
    first: int | None = None
    need: str = "requested"
    cleaning: str = "standard"
    binning: str | None = None
    max_need: int = 64
    wide: str = "refuse"
    tau: float | None = None
    start: int | None = None
    length: int | None = None
    description: str = ""
    source: str = ""

    def log(self) -> SWFLog:
        """The parsed log (read once per process)."""
        return _cached_log(Path(self.path))

    def replay(
        self, num_servers: int | None, load: float | None, arrival_rate: float | None
    ) -> TraceWorkload:
        """The replay (see :meth:`~msj_gym.workloads.trace.ReplayScenario.build`): the time dilation
        scales the gaps between submit times and keeps the run and requested times."""
        k = num_servers if num_servers is not None else self.num_servers
        if self.binning is not None:  # Anselmi & Doncel's binned replay (a figure of paper 000)
            if k is None:
                k = header_num_servers(self.log())
            if k is None:
                raise ValueError(f"swf scenario {self.name!r}: give num_servers with binning")
            # the load set inside, as the figure's runs always had it (bit for bit)
            wl = swf_workload(
                self.log(),
                k,
                binning=self.binning,
                max_need=self.max_need,
                first=self.first,
                load=load,
                wide=self.wide,
            )
            load = None
        else:
            wl = swf_replay(
                self.log(), k, need=self.need, cleaning=self.cleaning, first=self.first, name=self.name
            )
        if load is not None:
            wl = wl.with_load(load)
        elif arrival_rate is not None:
            wl = wl.with_arrival_rate(arrival_rate)
        if self.binning is None and self.start is not None and self.length is not None:
            # after the dilation, as a GPU trace's sequence: the log at that load, then its jobs
            # start .. start + length - 1 (the sequences of msj_gym.experiments.sequences are cut so)
            wl = wl.jobs(self.start, self.length)
        if self.tau is not None:
            wl.slowdown_tau = self.tau
        return wl


_SPEC_OPTIONS = (
    "num_servers",
    "load",
    "first",
    "need",
    "cleaning",
    "binning",
    "max_need",
    "wide",
    "tau",
    "start",
    "length",
)


def swf_scenario(spec: str) -> SWFScenario:
    """The scenario of ``swf:FILE[?option=value&...]``: FILE a path, or a file name looked up in
    ``$MSJ_GYM_TRACE_DIR`` and then in the shared traces folder next to a source checkout; options
    ``num_servers`` (default: the header's k), ``load`` (default: the log's own timing), ``first``,
    ``need`` (requested, allocated, max), ``cleaning`` (standard, rlscheduler), ``tau`` (the bounded
    slowdown's, in seconds; default 10), ``start`` and ``length`` (jobs start .. start + length - 1 of the
    cleaned replay, their submit times kept, cut after any time dilation: one sequence of the HPC
    protocol), and ``binning`` /
    ``max_need`` / ``wide`` for Anselmi & Doncel's binned replay (:func:`swf_workload`). The file is
    checked now and read at the first build."""
    if not is_swf_spec(spec):
        raise ValueError(f"SWF scenario: expected 'swf:FILE[?options]', got {spec!r}")
    where = f"SWF scenario {spec!r}"
    target, _, query = spec[4:].partition("?")
    options: dict[str, Any] = {}
    for item in filter(None, query.split("&")):
        key, sep, value = item.partition("=")
        if not sep:
            raise ValueError(f"{where}: expected option=value, got {item!r}")
        if key not in _SPEC_OPTIONS:
            raise ValueError(f"{where}: unknown option {key!r}; known: {', '.join(_SPEC_OPTIONS)}")
        if key in options:  # a second value would silently win over the first
            raise ValueError(f"{where}: option {key!r} is given twice")
        if key in ("num_servers", "first", "max_need", "start", "length"):
            try:
                options[key] = int(value)
            except ValueError:
                raise ValueError(f"{where}: {key} expects an integer, got {value!r}") from None
            if options[key] < (0 if key == "start" else 1):
                what = "a non-negative" if key == "start" else "a positive"
                raise ValueError(f"{where}: {key} expects {what} integer, got {value!r}")
        elif key in ("load", "tau"):
            try:
                options[key] = float(value)
            except ValueError:
                raise ValueError(f"{where}: {key} expects a number, got {value!r}") from None
            if not (math.isfinite(options[key]) and options[key] > 0):
                raise ValueError(f"{where}: {key} expects a positive finite number, got {value!r}")
        else:
            choices = {"need": NEEDS, "cleaning": CLEANINGS, "binning": BINNINGS, "wide": WIDE}[key]
            if value not in choices:
                raise ValueError(f"{where}: {key} expects one of {', '.join(choices)}, got {value!r}")
            options[key] = value
    if ("start" in options) != ("length" in options):
        raise ValueError(f"{where}: start and length go together (jobs start .. start + length - 1)")
    if "start" in options and "binning" in options:
        raise ValueError(f"{where}: start and length select jobs of a replay, not of a binned one")
    path = find_trace(target)
    if not path.is_file():
        dirs = ", ".join(str(d) for d in trace_dirs())
        raise ValueError(f"{where}: no such file {target!r} (relative names are also looked up in {dirs})")
    return SWFScenario(
        name=spec,
        path=str(path),
        description="SWF log replay (Parallel Workloads Archive format)",
        source=str(path),
        **options,
    )
