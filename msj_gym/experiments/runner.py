"""Resumable batches of simulation runs, aggregated into tables with confidence intervals.

A *point* is one run: scenario, workload overrides, policy (or agent) and parameters, seed, run
length. Results are appended to a JSON-lines file as each run finishes, keyed by the point, so an
interrupted batch restarted with the same file skips what is done and loses nothing, and figures that
share points (e.g. the same runs plotted as two metrics) share the runs.

Points are independent and each is a pure function of its fields (its seed included), so they can run
in any order on any number of processes (``backend="local"``, a process pool) or machines
(``backend="ray"``) with bit-identical results; only the parent process writes the results file.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ..metrics.stats import replication_ci

__all__ = [
    "BACKENDS",
    "Point",
    "aggregate",
    "build_workload",
    "check_backend",
    "provenance",
    "run_point",
    "run_points",
]

BACKENDS = ("local", "ray")


@dataclass(frozen=True)
class Point:
    """One simulation run. ``series`` and ``x`` say where it goes in a figure; ``build`` holds the
    workload overrides (``arrival_rate``, ``load``, ``num_servers``). With ``agent`` (a checkpoint path
    or ``module:attr``, see :mod:`msj_gym.experiments.agents`) the run goes through ``MSJ-v0`` driven by
    that agent, and ``policy`` is only its label."""

    series: str
    x: float
    scenario: str
    policy: str
    seed: int
    num_arrivals: int
    build: dict[str, Any] = field(default_factory=dict)
    params: dict[str, Any] = field(default_factory=dict)
    warmup: int | None = None
    options: dict[str, Any] = field(default_factory=dict)  # more Simulator keywords
    agent: str | None = None

    def key(self) -> str:
        d = asdict(self)
        d.pop("series")
        d.pop("x")
        if d["agent"] is None:  # keys of policy runs predate agents: keep them
            d.pop("agent")
        return json.dumps(d, sort_keys=True)


def build_workload(scenario: str, build: dict[str, Any]) -> Any:
    """A point's workload: a scenario with its overrides, or a trace source ``swf:FILE[?options]``
    replayed on ``build["num_servers"]`` servers at ``build["load"]`` (time scaling)."""
    if scenario.startswith("swf:"):
        from ..workloads.swf import swf_source

        unknown = set(build) - {"num_servers", "load"}
        if unknown or "num_servers" not in build:
            raise ValueError(f"trace source {scenario!r}: expected num_servers (and load), got {build}")
        return swf_source(scenario, num_servers=build["num_servers"], load=build.get("load"))
    from ..workloads.scenarios import load_scenario

    return load_scenario(scenario).build(**build)


def run_point(point: Point) -> dict[str, Any]:
    """Run one point in this process and return its metrics (a JSON-ready dict)."""
    from ..workloads.compat import COMPAT_SCENARIOS, build_compat_scenario

    if point.agent is not None:
        from .agents import run_agent

        res = run_agent(point)
    else:
        from baselines import make_policy

        from ..core.simulator import Simulator

        if point.scenario in COMPAT_SCENARIOS:  # job-server compatibility model (003)
            from ..core.pooled import PooledSimulator

            wl: Any = build_compat_scenario(point.scenario, **point.build)
            simulator: Any = PooledSimulator
        else:
            wl = build_workload(point.scenario, point.build)
            simulator = Simulator
        sim = simulator(
            wl,
            make_policy(point.policy, **point.params),
            seed=point.seed,
            num_arrivals=point.num_arrivals,
            warmup=point.warmup,
            **point.options,
        )
        res = sim.run()
    return {
        "mean_response_time": res.mean_response_time,
        "ci95_half_width": res.ci95_half_width,
        "weighted_mean_response_time": res.weighted_mean_response_time,
        "weighted_ci95_half_width": res.weighted_ci95_half_width,
        "jain_fairness": res.jain_fairness,
        "utilization": res.utilization,
        "p_wait": res.p_wait,
        "stable": bool(res.stable),
        "stability_note": res.stability_note,
        "per_class": {name: c.mean_response_time for name, c in res.per_class.items()},
        "policy_metrics": res.policy_metrics,
        "load": res.offered_load,
    }


_PROVENANCE: dict[str, Any] | None = None


def provenance() -> dict[str, Any]:
    """Package version and git revision of the code that produced a result (``+dirty`` when the
    working tree has uncommitted changes; ``unknown`` outside a git checkout)."""
    global _PROVENANCE
    if _PROVENANCE is None:
        from ..core.simulator import _version

        root = Path(__file__).resolve().parents[2]
        rev = "unknown"
        try:
            head = subprocess.run(
                ["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10
            )
            if head.returncode == 0:
                rev = head.stdout.strip()
                dirty = subprocess.run(
                    ["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
                    capture_output=True,
                    text=True,
                    timeout=10,
                )
                if dirty.stdout.strip():
                    rev += "+dirty"
        except (OSError, subprocess.SubprocessError):
            pass
        _PROVENANCE = {"version": _version(), "git_revision": rev}
    return dict(_PROVENANCE)


def _read_results(results: Path) -> dict[str, dict[str, Any]]:
    """The finished rows of ``results``. A last line cut short by a killed process is dropped from
    the file; any other unreadable line is an error."""
    done: dict[str, dict[str, Any]] = {}
    if not results.exists():
        return done
    text = results.read_text()
    if text and not text.endswith("\n"):  # a write torn by a killed process: that point reruns
        cut = text.rfind("\n") + 1
        with results.open("r+") as fh:
            fh.truncate(len(text[:cut].encode()))
        text = text[:cut]
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            done[row["key"]] = row
        except (json.JSONDecodeError, KeyError, TypeError):
            raise ValueError(f"{results}: line {n} is not a result row; use another --out") from None
    return done


Run = Callable[[Point], dict[str, Any]]


def _execute(
    todo: Sequence[Point], run: Run, backend: str, workers: int, address: str | None
) -> Iterator[tuple[Point, dict[str, Any]]]:
    """Yield ``(point, run(point))`` as runs finish, in completion order."""
    if workers > 1 and len(todo) > 1:
        # Longest first (more arrivals, then higher load or rate), so that the runs left for the end,
        # when workers fall idle, are short ones.
        todo = sorted(todo, key=lambda p: (p.num_arrivals, p.x), reverse=True)
    if backend == "ray":
        yield from _execute_ray(todo, run, workers, address)
        return
    if workers == 1 or len(todo) <= 1:
        for p in todo:
            yield p, run(p)
        return
    import concurrent.futures as cf
    import multiprocessing

    # spawn, not fork: the parent may hold numba / torch threads
    ctx = multiprocessing.get_context("spawn")
    pool = cf.ProcessPoolExecutor(max_workers=min(workers, len(todo)), mp_context=ctx)
    try:
        futures = {pool.submit(run, p): p for p in todo}
        for fut in cf.as_completed(futures):
            yield futures[fut], fut.result()
    finally:
        pool.shutdown(wait=False, cancel_futures=True)


def _execute_ray(
    todo: Sequence[Point], run: Run, workers: int, address: str | None
) -> Iterator[tuple[Point, dict[str, Any]]]:
    try:
        import ray
    except ImportError:
        raise ValueError(
            "--backend ray: ray is not installed; pip install -e '.[ray]' (or use --backend local)"
        ) from None
    started = False
    if not ray.is_initialized():
        kwargs: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False}
        if address is None:
            kwargs["num_cpus"] = workers  # a local Ray, started on demand
        else:
            kwargs["address"] = address
        # workers import msj_gym from where this process does (a checkout, not only an install)
        root = str(Path(__file__).resolve().parents[2])
        kwargs["runtime_env"] = {"env_vars": {"PYTHONPATH": root}}
        ray.init(**kwargs)
        started = True
    try:
        remote = ray.remote(num_cpus=1, max_retries=2)(run)
        pending = {remote.remote(p): p for p in todo}
        while pending:
            ready, _ = ray.wait(list(pending), num_returns=1)
            for ref in ready:
                yield pending.pop(ref), ray.get(ref)
    finally:
        if started:
            ray.shutdown()


def check_backend(backend: str, workers: int) -> None:
    """Refuse an unknown backend or a worker count that is not a positive integer (before any output
    is created: callers check this first)."""
    if backend not in BACKENDS:
        raise ValueError(f"--backend: expected one of {', '.join(BACKENDS)}, got {backend!r}")
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ValueError(f"--workers: expected a positive integer, got {workers!r}")


def run_points(
    points: Sequence[Point],
    results: Path,
    progress: bool = True,
    *,
    backend: str = "local",
    workers: int = 1,
    address: str | None = None,
    run: Run | None = None,
) -> list[dict[str, Any]]:
    """Run every point not yet in ``results`` (JSON lines, appended run by run, each row with the
    point, its metrics and :func:`provenance`); returns the rows of ``points`` in order.

    ``run`` turns a point into its metrics (default :func:`run_point`, a queueing-simulator run; the
    moldable loss system passes its own). It must be a module-level function for the pool and Ray.

    ``backend``: ``"local"`` (``workers`` processes; 1 runs in this process) or ``"ray"`` (a Ray
    cluster at ``address``, or a local one with ``workers`` CPUs started on demand). A second process
    using the same ``results`` at once is refused."""
    check_backend(backend, workers)
    results.parent.mkdir(parents=True, exist_ok=True)
    with _exclusive(results):
        done = _read_results(results)
        seen: set[str] = set()
        todo = []
        for p in points:
            k = p.key()
            if k not in done and k not in seen:
                seen.add(k)
                todo.append(p)
        prov = provenance()
        bar = _Progress(len(todo)) if progress and todo else None
        for p, metrics in _execute(todo, run or run_point, backend, workers, address):
            row = {"key": p.key(), **asdict(p), **metrics, "provenance": prov}
            with results.open("a") as fh:
                fh.write(json.dumps(row) + "\n")
            done[row["key"]] = row
            if bar is not None:
                bar.step(f"{p.scenario} {p.policy} x={p.x:g} seed={p.seed}")
        if bar is not None:
            bar.close()
    out = []
    for p in points:
        row = dict(done[p.key()])
        row["series"], row["x"] = p.series, p.x
        out.append(row)
    return out


class _exclusive:
    """An advisory lock on ``results`` (a sibling ``.lock`` file) for the duration of a batch."""

    def __init__(self, results: Path) -> None:
        self.path = results.with_name(results.name + ".lock")
        self.fh: Any = None

    def __enter__(self) -> _exclusive:
        import fcntl

        self.fh = self.path.open("w")
        try:
            fcntl.flock(self.fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self.fh.close()
            raise ValueError(f"{self.path.parent}: another run is writing there now") from None
        return self

    def __exit__(self, *exc: object) -> None:
        self.fh.close()
        self.path.unlink(missing_ok=True)


class _Progress:
    """A one-line progress bar with ETA on stderr (plain lines when stderr is not a terminal)."""

    def __init__(self, total: int) -> None:
        self.total, self.n, self.t0 = total, 0, time.perf_counter()
        self.tty = sys.stderr.isatty()
        self.last = 0.0

    def step(self, label: str) -> None:
        self.n += 1
        now = time.perf_counter()
        elapsed = now - self.t0
        eta = elapsed / self.n * (self.total - self.n)
        width = 24
        filled = int(width * self.n / self.total)
        line = (
            f"[{'#' * filled}{'.' * (width - filled)}] {self.n}/{self.total} runs"
            f"  {elapsed:5.0f} s elapsed  ETA {eta:5.0f} s  ({label})"
        )
        if self.tty:
            print(f"\r{line[:150]:<150}", end="", file=sys.stderr, flush=True)
        elif now - self.last > 10 or self.n == self.total:
            self.last = now
            print(line, file=sys.stderr, flush=True)

    def close(self) -> None:
        if self.tty:
            print(file=sys.stderr)


def aggregate(rows: Iterable[dict[str, Any]], metric: str) -> list[dict[str, Any]]:
    """Per (series, x): the mean of ``metric`` over seeds with a Student-t 95 % CI (a single seed keeps
    its run's own batch-means CI where the metric has one), and whether every run was stable.
    ``metric`` may name a class (``per_class.NAME``) or a policy metric (``policy_metrics.NAME``)."""
    groups: dict[tuple[str, float], list[dict[str, Any]]] = {}
    for r in rows:
        groups.setdefault((r["series"], r["x"]), []).append(r)
    out = []
    for (series, x), runs in groups.items():
        values = [_get(r, metric) for r in runs]
        finite = [v for v in values if v is not None and math.isfinite(v)]
        est = replication_ci(finite)
        hw = est.ci95_half_width
        if len(runs) == 1 and metric in ("mean_response_time", "weighted_mean_response_time"):
            hw = runs[0]["ci95_half_width" if metric == "mean_response_time" else "weighted_ci95_half_width"]
        out.append(
            {
                "series": series,
                "x": x,
                "metric": metric,
                "mean": est.mean,
                "ci95": hw,
                "seeds": len(runs),
                "stable": all(r["stable"] for r in runs),
            }
        )
    return out


def _get(row: dict[str, Any], metric: str) -> float | None:
    value: Any = row
    for part in metric.split(".", 1) if metric.startswith(("per_class.", "policy_metrics.")) else [metric]:
        value = value.get(part) if isinstance(value, dict) else None
    return float(value) if isinstance(value, int | float) else None
