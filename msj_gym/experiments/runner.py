"""Resumable batches of simulation runs, aggregated into tables with confidence intervals.

A *point* is one run: scenario, workload overrides, policy (or agent) and parameters, seed, run
length. Results are appended to a JSON-lines file as each run finishes, keyed by the point *and by
what it ran*: a hash of the scenario's resolved content (the built workload, a trace's jobs) and of
the code that computes the result (:func:`code_version`). An interrupted batch restarted with the same
file skips what is done and loses nothing, and figures that share points (e.g. the same runs plotted
as two metrics) share the runs; a point whose scenario file, trace or code changed since its row was
written is refused (:class:`StaleRuns`), never silently reused nor mixed with new runs.

One process writes an output folder at a time: :func:`hold_folder` takes an exclusive ``flock`` on
``FOLDER/.msj-gym.lock`` (released by the OS if the process dies).

Points are independent and each is a pure function of its fields (its seed included), so they can run
in any order on any number of processes (``backend="local"``, a process pool) or machines
(``backend="ray"``) with bit-identical results; only the parent process writes the results file.
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import hashlib
import json
import math
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any

from ..atomic import OutputError
from ..metrics.stats import replication_ci

if TYPE_CHECKING:
    from ..workloads.compat import CompatWorkload
    from ..workloads.trace import TraceWorkload
    from ..workloads.workload import Workload

__all__ = [
    "BACKENDS",
    "Point",
    "StaleRuns",
    "aggregate",
    "build_workload",
    "check_backend",
    "code_version",
    "entrant_files",
    "entrant_key",
    "files_key",
    "hold_folder",
    "provenance",
    "resolve_scenario",
    "run_point",
    "run_points",
    "scenario_content",
]

BACKENDS = ("local", "ray")


@dataclass(frozen=True)
class Point:
    """One simulation run. ``series`` and ``x`` say where it goes in a figure; ``build`` holds the
    workload overrides (``arrival_rate``, ``load``, ``num_servers``). ``policy`` is a registered id or
    ``module:attr`` naming a policy class or instance outside the registry (a string: a worker imports
    the module itself). With ``agent`` (a checkpoint path or ``module:attr``, see
    :mod:`msj_gym.experiments.agents`) the run goes through ``MSJ-v0`` driven by that agent, and
    ``policy`` is only its label. ``source`` is the scenario its plan resolved ``scenario`` to
    (:func:`resolve_scenario`): the run builds from that object, not from the name again, so every run
    of a plan simulates the scenario as the plan read it once; it is not part of the point's key.
    ``code`` is its entrant's :func:`entrant_key`, which the plan resolved once for every run of the
    entrant (None: worked out per point, :func:`code_version`)."""

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
    source: Any = field(default=None, compare=False, repr=False)
    code: str | None = field(default=None, compare=False, repr=False)

    def as_dict(self) -> dict[str, Any]:
        """The point's fields as JSON-ready data, its resolved ``source`` and ``code`` left out."""
        d = {f.name: getattr(self, f.name) for f in fields(self) if f.name not in ("source", "code")}
        return json.loads(json.dumps(d))

    def key(self) -> str:
        d = self.as_dict()
        d.pop("series")
        d.pop("x")
        if d["agent"] is None:  # keys of policy runs predate agents: keep them
            d.pop("agent")
        return json.dumps(d, sort_keys=True)


def resolve_scenario(scenario: str) -> Any:
    """The scenario object a name stands for (a built-in, a scenario file, a trace ``swf:FILE`` or
    ``FORMAT:PATH``): what a plan reads once and hands to every run of that scenario. A one-line
    ``ValueError`` for a name that is none of these."""
    from ..workloads.scenarios import load_scenario

    return load_scenario(scenario)


def build_workload(scenario: str, build: dict[str, Any], source: Any = None) -> Workload | TraceWorkload:
    """A point's workload: a scenario (a trace ``swf:FILE`` or ``FORMAT:PATH`` too) with its
    overrides, built from ``source`` where the plan resolved it (else the name is resolved now)."""
    return (resolve_scenario(scenario) if source is None else source).build(**build)


_CONTENT: dict[str, str] = {}


def scenario_content(point: Point) -> str:
    """A hash of what ``point`` simulates: its built workload's ``to_dict()`` (the scenario document
    after evaluation, at the point's overrides) and, for a trace, every job's arrival, class, need and
    size, so an edited scenario file or a swapped trace is a different run. Cached per process, by
    the name, the overrides and the resolved scenario's own description (a scenario file edited
    between two plans of one process is hashed anew)."""
    own = None if point.source is None else repr(point.source)
    cache_key = json.dumps([point.scenario, point.build, own], sort_keys=True)
    if cache_key not in _CONTENT:
        import numpy as np

        from ..workloads.compat import COMPAT_SCENARIOS, build_compat_scenario

        if point.scenario in COMPAT_SCENARIOS:
            wl: CompatWorkload | Workload | TraceWorkload = build_compat_scenario(
                point.scenario, **point.build
            )
        else:
            wl = build_workload(point.scenario, point.build, point.source)
        h = hashlib.sha256(json.dumps(wl.to_dict(), sort_keys=True, default=repr).encode())
        for name in (
            "arrival_time",
            "job_class",
            "server_need_per_job",
            "service_time_per_job",
            "requested_time_per_job",
        ):
            arr = getattr(wl, name, None)  # a trace's jobs: its to_dict() only counts them
            if arr is not None:
                h.update(name.encode() + np.ascontiguousarray(arr).tobytes())
        _CONTENT[cache_key] = h.hexdigest()[:16]
    return _CONTENT[cache_key]


def _point_content(point: Point) -> str:
    """The content of a point that is its own description (no scenario to resolve)."""
    return "point"


_FILE_HASHES: dict[str, str] = {}
_CODE: dict[tuple[tuple[str, ...], tuple[str, ...]], str] = {}
# the modules every simulated result depends on (the policy's and the run's own are added per point)
_CODE_GLOBS = ("core/*.py", "workloads/*.py", "metrics/*.py", "experiments/runner.py")


def _file_hash(path: str) -> str:
    # keyed by the file's size and time too: a checkpoint rewritten within a process is hashed anew
    st = os.stat(path)
    key = f"{path}:{st.st_size}:{st.st_mtime_ns}"
    if key not in _FILE_HASHES:
        _FILE_HASHES[key] = hashlib.sha256(Path(path).read_bytes()).hexdigest()
    return _FILE_HASHES[key]


_BASE_FILES: frozenset[str] | None = None


def _base_files() -> frozenset[str]:
    """The source files of :data:`_CODE_GLOBS` (listed once per process)."""
    global _BASE_FILES
    if _BASE_FILES is None:
        root = Path(__file__).resolve().parents[1]
        _BASE_FILES = frozenset(str(f) for g in _CODE_GLOBS for f in root.glob(g))
    return _BASE_FILES


def entrant_files(policy: str, agent: str | None = None) -> frozenset[str]:
    """The files an entrant's runs depend on beyond the simulator's own: an agent's checkpoint, its
    loader and rule, and the envs it acts through; a registered policy's module, the helpers every
    policy shares and the registry; a ``module:attr`` policy's own files, whatever their names."""
    root = Path(__file__).resolve().parents[1]
    files: set[str] = set()
    if agent is not None:
        from .agents import agent_files

        files |= {str(f) for f in (root / "env").glob("*.py")} | {str(root / "experiments" / "agents.py")}
        # a checkpoint (a path or a shipped name): its weights and metadata are part of the code
        files |= set(agent_files(agent))
    else:
        from ..registry import policy_ids, policy_source_files, spec_source_files

        if ":" in policy:
            files |= set(spec_source_files(policy))
        elif policy in policy_ids():
            files |= set(policy_source_files(policy))
    return frozenset(f for f in files if f and Path(f).is_file())


def entrant_key(policy: str, agent: str | None = None) -> str:
    """The key of what an entrant's simulated runs depend on (:func:`files_key` of the simulator and
    :func:`entrant_files`): what a plan resolves once per entrant and every run of it carries
    (``Point.code``); the same as :func:`code_version` of any of its points."""
    return files_key(entrant_files(policy, agent), simulator=True)


def _code_files(point: Point, run: Run | None) -> tuple[str, ...]:
    import inspect

    files = set(_base_files())
    if run is not None:
        files.add(inspect.getsourcefile(run) or "")
        more = getattr(run, "code_files", None)  # what the run reaches beyond its own module
        if more is not None:
            files |= {str(f) for f in more(point)}
    if point.agent is not None or run is None:
        files |= entrant_files(point.policy, point.agent)
    return tuple(sorted(f for f in files if f and Path(f).is_file()))


def code_version(point: Point | None = None, run: Run | None = None) -> str:
    """``VERSION+HASH``: the package version and a hash of the source of the modules that compute a
    result (msj_gym's core, workloads and metrics, the runner, and for ``point`` its policy's module
    or its agent's checkpoint, or the ``run`` function's module), by :func:`files_key`."""
    return files_key(_code_files(point, run) if point is not None else _base_files())


def files_key(files: Iterable[str], *, simulator: bool = False) -> str:
    """``VERSION+HASH``: the package version and a hash of the names and bytes of ``files`` (each read
    once per process while its size and time stay the same), with ``simulator`` also of the modules
    every simulated result depends on (msj_gym's core, workloads and metrics, and this runner): the
    one key of what a result depends on, for the runs' stores (:func:`code_version`) and the agents'
    scripts alike (``msj_gym.agents.evaluate``)."""
    from ..core.simulator import _version

    names = tuple(sorted(set(files) | (_base_files() if simulator else set())))
    hashes = tuple(_file_hash(f) for f in names)
    if (names, hashes) not in _CODE:
        h = hashlib.sha256()
        for f, digest in zip(names, hashes, strict=True):
            h.update(Path(f).name.encode() + digest.encode())
        _CODE[names, hashes] = f"{_version()}+{h.hexdigest()[:12]}"
    return _CODE[names, hashes]


class StaleRuns(ValueError):
    """A results file holds runs of the same points made from other content or code."""


def run_point(point: Point) -> dict[str, Any]:
    """Run one point in this process and return its metrics (a JSON-ready dict)."""
    from ..workloads.compat import COMPAT_SCENARIOS, build_compat_scenario

    native = None
    if point.agent is not None:
        from .agents import load_agent

        native = load_agent(point.agent, bare=True).native
    if point.agent is not None and native is None:
        from .agents import run_agent

        res = run_agent(point)
    else:
        if native is not None:
            # its episodes through its env are this policy's native runs, run for run (tested)
            point = replace(point, agent=None, policy=native[0], params=native[1])
        from ..core.simulator import Simulator
        from ..registry import policy_from_spec

        if point.scenario in COMPAT_SCENARIOS:  # job-server compatibility model (Bonald & Comte 2017)
            from ..pooled import PooledSimulator

            wl: CompatWorkload | Workload | TraceWorkload = build_compat_scenario(
                point.scenario, **point.build
            )
            simulator: Any = PooledSimulator
        else:
            wl = build_workload(point.scenario, point.build, point.source)
            simulator = Simulator
        sim = simulator(
            wl,
            policy_from_spec(point.policy, "policy", **point.params),
            seed=point.seed,
            num_arrivals=point.num_arrivals,
            warmup=point.warmup,
            **point.options,
        )
        res = sim.run()
    return result_row(res)


def result_row(res: Any) -> dict[str, Any]:
    """The metrics a run store keeps of a :class:`~msj_gym.metrics.result.SimulationResult`."""
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
        "mean_waiting_time": res.mean_waiting_time,
        "waiting_ci95_half_width": res.waiting_ci95_half_width,
        "mean_bounded_slowdown": res.mean_bounded_slowdown,
        "bounded_slowdown_ci95_half_width": res.bounded_slowdown_ci95_half_width,
        **{
            f"response_time_p{p}{part}": getattr(res, f"response_time_p{p}{part}")
            for p in (50, 95, 99)
            for part in ("", "_ci95_half_width")
        },
        "makespan": res.makespan,
        "per_class": {name: c.mean_response_time for name, c in res.per_class.items()},
        "per_class_bounded_slowdown": {name: c.mean_bounded_slowdown for name, c in res.per_class.items()},
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


def _read_results(results: Path, writable: bool = True) -> dict[str, dict[str, Any]]:
    """The finished rows of ``results``. A last line cut short by a killed process is dropped (from
    the file too when ``writable``); any other unreadable line is an error."""
    done: dict[str, dict[str, Any]] = {}
    if not results.exists():
        return done
    text = results.read_text()
    if text and not text.endswith("\n"):  # a write torn by a killed process: that point reruns
        cut = text.rfind("\n") + 1
        if writable:
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


def warm_point(point: Point) -> None:
    """Compile (or load from the cache) what ``point``'s run needs, with a run of a few arrivals.
    A failure is left to the real run, which reports it."""
    tiny = dataclasses.replace(
        point, num_arrivals=50, warmup=0, options={k: v for k, v in point.options.items() if k != "horizon"}
    )
    with contextlib.suppress(Exception):
        run_point(tiny)


def _warm_up(todo: Sequence[Point], run: Run, pool: Any) -> None:
    """Compile each policy's decision rule once before the runs start, so that two workers never
    compile the same thing and the progress bar's ETA is not skewed by compilation: the engine loop
    (and the first policy) in this process, the other policies in parallel in ``pool`` (or here)."""
    if run is not run_point:
        return
    first: dict[str, Point] = {}
    for p in todo:
        if p.agent is None:
            first.setdefault(p.policy, p)
    points = list(first.values())
    if not points:
        return
    warm_point(points[0])
    if pool is None:
        for p in points[1:]:
            warm_point(p)
    else:
        list(pool.map(warm_point, points[1:]))


def _die_with_parent(parent: int, grants: tuple[str, ...] = (), verified: tuple[str, ...] = ()) -> None:
    """Pool initializer: take the parent's trust grants (:mod:`msj_gym.trust`: what its command was told
    to trust, and nothing more) and the exact optima it checked (their digests: a worker reading the
    same entry does not check it again), and ask the kernel to kill this worker when the process that
    started it dies, even by ``kill -9`` (Linux ``PR_SET_PDEATHSIG``), so that no worker outlives a
    killed command."""
    if grants:
        from ..trust import grant_for_life

        grant_for_life(grants)
    if verified:
        from ..analysis.solutions import take_verified

        take_verified(verified)
    if not sys.platform.startswith("linux"):
        return
    import ctypes
    import os
    import signal

    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # 1: PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:  # the parent died before the request took effect
        os._exit(1)


_STARTED = time.time()  # about when this process started (this module loads early)


def unguarded_script() -> str | None:
    """The script this process runs if the current call comes from its top level outside an
    ``if __name__ == "__main__":`` block, else None. A spawned worker imports the main script again
    before it does anything, so such a script would start the whole run again in every worker (and
    multiprocessing kills those workers: the pool breaks). A notebook, ``python -c`` or stdin has no
    script to import again, and a guarded call is not run again."""
    import ast

    main = sys.modules.get("__main__")
    path = getattr(main, "__file__", None)
    if path is None:
        return None
    script = os.path.realpath(path)
    frame: FrameType | None = sys._getframe(1)
    # the script's own top-level frame: code run in its namespace from elsewhere (a notebook cell, exec)
    # has another file name, and is not what a worker would run again
    while frame is not None and not (
        frame.f_code.co_name == "<module>" and os.path.realpath(frame.f_code.co_filename) == script
    ):
        frame = frame.f_back
    if frame is None:
        return None
    try:
        if os.stat(path).st_mtime > _STARTED:  # edited since: its lines are not the running code's
            return None
        tree = ast.parse(Path(path).read_text())
    except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
        return None
    line = frame.f_lineno
    for stmt in tree.body:
        if stmt.lineno <= line <= (stmt.end_lineno or stmt.lineno):
            guarded = (
                isinstance(stmt, ast.If)
                and any(b.lineno <= line <= (b.end_lineno or b.lineno) for b in stmt.body)
                and "__name__" in ast.unparse(stmt.test)
                and "__main__" in ast.unparse(stmt.test)
            )
            return None if guarded else str(path)
    return None


_SAID_UNGUARDED: set[str] = set()


def local_workers(workers: int) -> int:
    """``workers``, or 1 when worker processes would run the calling script again
    (:func:`unguarded_script`): the runs then go on in this process, and stderr says why once."""
    if workers < 2:
        return workers
    script = unguarded_script()
    if script is None:
        return workers
    if script not in _SAID_UNGUARDED:
        _SAID_UNGUARDED.add(script)
        print(
            f'msj-gym: {script} runs this outside `if __name__ == "__main__":`, so worker processes '
            "would start it again: running in this process only (put the call under that guard to use "
            f"{workers} processes)",
            file=sys.stderr,
            flush=True,
        )
    return 1


class _InProcess:
    """The part of an executor :func:`process_pool`'s callers use, running each call at once here."""

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
        import concurrent.futures as cf

        fut: cf.Future[Any] = cf.Future()
        try:
            fut.set_result(fn(*args, **kwargs))
        except Exception as exc:
            fut.set_exception(exc)
        return fut

    def map(self, fn: Callable[..., Any], *iterables: Any) -> Iterator[Any]:
        return iter([fn(*args) for args in zip(*iterables, strict=False)])

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        return None

    def __enter__(self) -> _InProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        return None


def process_pool(workers: int) -> Any:
    """A pool of ``workers`` fresh processes (spawn, not fork: the parent may hold numba or torch
    threads) that do not outlive this one; an executor running in this process instead when the
    workers would run the calling script again (:func:`local_workers`)."""
    import concurrent.futures as cf
    import multiprocessing
    import os

    from ..analysis.solutions import verified_now
    from ..trust import granted_now

    if local_workers(workers) < 2:
        return _InProcess()
    return cf.ProcessPoolExecutor(
        max_workers=workers,
        mp_context=multiprocessing.get_context("spawn"),
        initializer=_die_with_parent,
        initargs=(os.getpid(), granted_now(), verified_now()),
    )


def _execute(
    todo: Sequence[Point],
    run: Run,
    backend: str,
    workers: int,
    address: str | None,
    on_ready: Callable[[], None],
) -> Iterator[tuple[Point, dict[str, Any]]]:
    """Yield ``(point, run(point))`` as runs finish, in completion order; ``on_ready`` is called once
    the compiled code is ready and the runs start."""
    if workers > 1 and len(todo) > 1:
        # Longest first (more arrivals, then higher load or rate), so that the runs left for the end,
        # when workers fall idle, are short ones.
        todo = sorted(todo, key=lambda p: (p.num_arrivals, p.x), reverse=True)
    if backend == "ray":
        on_ready()
        yield from _execute_ray(todo, run, workers, address)
        return
    if len(todo) > 1:
        workers = local_workers(workers)
    if workers == 1 or len(todo) <= 1:
        _warm_up(todo, run, None)
        on_ready()
        for p in todo:
            yield p, run(p)
        return
    import concurrent.futures as cf

    pool = process_pool(min(workers, len(todo)))
    finished = False
    try:
        _warm_up(todo, run, pool)
        on_ready()
        futures = {pool.submit(run, p): p for p in todo}
        for fut in cf.as_completed(futures):
            yield futures[fut], fut.result()
        finished = True
    finally:
        # done: wait for the workers to exit (none is left behind); interrupted or failed: do not wait
        # for the runs still queued
        pool.shutdown(wait=finished, cancel_futures=not finished)


def _execute_ray(
    todo: Sequence[Point], run: Run, workers: int, address: str | None
) -> Iterator[tuple[Point, dict[str, Any]]]:
    try:
        import ray
    except ImportError:
        from ..extras import install_hint

        raise ValueError(
            f"--backend ray: ray is not installed; {install_hint('ray')} (or use --backend local)"
        ) from None
    started = False
    if not ray.is_initialized():
        kwargs: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False}
        if address is None:
            kwargs["num_cpus"] = workers  # a local Ray, started on demand
        else:
            kwargs["address"] = address
        # workers import msj_gym from where this process does (a checkout, not only an install), and
        # the modules that ``module:attr`` policies and agents name from where this process found them
        roots = [str(Path(__file__).resolve().parents[2]), *_spec_roots(todo)]
        kwargs["runtime_env"] = {"env_vars": {"PYTHONPATH": os.pathsep.join(dict.fromkeys(roots))}}
        ray.init(**kwargs)
        started = True
    try:
        from ..trust import call_with, granted_now

        # a task runs under the grants of this process's command (msj_gym.trust), as a local worker does
        remote = ray.remote(num_cpus=1, max_retries=2)(call_with)
        grants = granted_now()
        pending = {remote.remote(grants, run, p): p for p in todo}
        while pending:
            ready, _ = ray.wait(list(pending), num_returns=1)
            for ref in ready:
                yield pending.pop(ref), ray.get(ref)
    finally:
        if started:
            ray.shutdown()


def map_unordered(
    fn: Callable[[Any], Any],
    tasks: Sequence[Any],
    backend: str = "local",
    workers: int = 1,
    address: str | None = None,
) -> Iterator[tuple[Any, Any]]:
    """Yield ``(task, fn(task))`` as tasks finish, in completion order: in this process
    (``workers=1``), in ``workers`` local processes, or on Ray (a cluster at ``address``, or a local
    one with ``workers`` CPUs), as the leaderboard runs its points. ``fn`` must be a module-level
    function and the tasks picklable."""
    check_backend(backend, workers, address)
    if backend == "ray":
        yield from _execute_ray(tasks, fn, workers, address)
        return
    if workers == 1 or len(tasks) <= 1:
        for task in tasks:
            yield task, fn(task)
        return
    import concurrent.futures as cf

    pool = process_pool(min(workers, len(tasks)))
    finished = False
    try:
        futures = {pool.submit(fn, task): task for task in tasks}
        for fut in cf.as_completed(futures):
            yield futures[fut], fut.result()
        finished = True
    finally:
        pool.shutdown(wait=finished, cancel_futures=not finished)


def _spec_roots(points: Sequence[Any]) -> list[str]:
    """The folders from which this process imported the modules that the points' ``module:attr``
    policies and agents name (the folder of the top-level package)."""
    roots = []
    for p in points:  # map_unordered's tasks need not be points: they have no spec
        spec = getattr(p, "agent", None) or getattr(p, "policy", None)
        name = spec.rpartition(":")[0] if isinstance(spec, str) and ":" in spec else ""
        module = sys.modules.get(name)
        path = getattr(module, "__file__", None) if module is not None else None
        if path is None:
            continue
        root = Path(path).resolve().parent
        for _ in range(name.count(".") + (Path(path).name == "__init__.py")):
            root = root.parent
        roots.append(str(root))
    return roots


def check_backend(backend: str, workers: int | None, address: str | None = None) -> int:
    """Refuse an unknown backend, a worker count that is not a positive integer, or a Ray ``address``
    where no cluster answers (before any output is created: callers check this first); the worker count
    (None: one per core)."""
    workers = workers if workers is not None else (os.cpu_count() or 1)
    if backend not in BACKENDS:
        raise ValueError(f"--backend: expected one of {', '.join(BACKENDS)}, got {backend!r}")
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ValueError(f"--workers: expected a positive integer, got {workers!r}")
    if address is not None:
        if backend != "ray":
            raise ValueError(f"--address: only used with --backend ray, got {address!r}")
        check_address(address)
    return workers


ADDRESS_TIMEOUT = 5.0  # seconds to wait for a Ray cluster to answer before saying it does not


def check_address(address: str) -> None:
    """Refuse a Ray cluster address that nothing answers at, after one connection attempt of
    :data:`ADDRESS_TIMEOUT` seconds (``ray.init`` would retry for minutes, silently). ``auto`` (a
    cluster started on this machine) is left to Ray."""
    import socket

    if address == "auto":
        return
    host, sep, port = address.split("://", 1)[-1].rpartition(":")
    if not sep or not host or not port.isdigit():
        raise ValueError(f"--address: expected HOST:PORT, ray://HOST:PORT or auto, got {address!r}")
    try:
        with socket.create_connection((host, int(port)), timeout=ADDRESS_TIMEOUT):
            pass
    except OSError as exc:
        why = "timed out" if isinstance(exc, TimeoutError) else (exc.strerror or str(exc)).lower()
        raise ValueError(
            f"--address: no Ray cluster answers at {address!r} ({why}); start one there "
            "(ray start --head) or leave --address out to run a local Ray"
        ) from None


def run_points(
    points: Sequence[Point],
    results: Path,
    progress: bool = True,
    *,
    backend: str = "local",
    workers: int = 1,
    address: str | None = None,
    run: Run | None = None,
    content: Callable[[Point], str] | None = None,
) -> list[dict[str, Any]]:
    """Run every point not yet in ``results`` (JSON lines, appended run by run, each row with the
    point, its metrics, its ``content`` and ``code`` hashes and :func:`provenance`); returns the rows
    of ``points`` in order.

    ``run`` turns a point into its metrics (default :func:`run_point`, a queueing-simulator run; the
    moldable loss system passes its own). It must be a module-level function for the pool and Ray; its
    module is part of the runs' ``code`` hash, and so are the files its attribute ``code_files(point)``
    names, if it has one (the model and policy modules it runs).
    ``content`` hashes what a point simulates (default :func:`scenario_content` for simulator runs;
    with another ``run``, the point's fields alone describe it). A row of the same point made from
    other content or code is refused (:class:`StaleRuns`), never reused.

    ``backend``: ``"local"`` (``workers`` processes; 1 runs in this process) or ``"ray"`` (a Ray
    cluster at ``address``, or a local one with ``workers`` CPUs started on demand). A second process
    writing the same folder at once is refused (:func:`hold_folder`); a folder this process cannot
    write is read, and is enough when every point is done."""
    check_backend(backend, workers, address)
    content_of = content or (scenario_content if run is None else _point_content)
    with hold_folder(results.parent) as writable:
        done = _read_results(results, writable)
        keys = _full_keys(points, run, content_of)
        todo = _missing(points, keys, done)
        if todo:
            _refuse_stale(results, done, todo, keys)
        if todo and not writable:
            raise ValueError(
                f"--out {str(results.parent)!r}: not writable, and {len(todo)} of its runs are missing; "
                "use a writable --out"
            )
        prov = provenance()
        bar: list[Any] = []

        def start_bar() -> None:
            if progress and todo:
                bar.append(_progress_bar(len(todo)))

        for p, metrics in _execute(todo, run or run_point, backend, workers, address, start_bar):
            full, c, v = keys[p.key()]
            row = {"key": full, **p.as_dict(), **metrics, "content": c, "code": v, "provenance": prov}
            try:
                with results.open("a") as fh:
                    fh.write(json.dumps(row) + "\n")
            except OSError as exc:  # a full disk: a torn last line, dropped (and rerun) on resume
                raise OutputError(exc.errno or errno.EIO, exc.strerror or str(exc), str(results)) from None
            done[full] = row
            if bar:
                bar[0].set_postfix_str(f"{p.scenario} {p.policy} x={p.x:g} seed={p.seed}", refresh=False)
                bar[0].update()
        if bar:
            bar[0].close()
    out = []
    for p in points:
        row = dict(done[keys[p.key()][0]])
        row["series"], row["x"] = p.series, p.x
        out.append(row)
    return out


def _full_keys(
    points: Sequence[Point], run: Run | None, content_of: Callable[[Point], str]
) -> dict[str, tuple[str, str, str]]:
    """Each point's key -> (its full key, its content hash, its code hash): a row is reused only for
    the same point made from the same content and code."""
    keys: dict[str, tuple[str, str, str]] = {}
    for p in points:
        pk = p.key()
        if pk not in keys:
            # the plan's key of the entrant holds for the simulator's own runs, not another run's
            v = p.code if p.code is not None and run is None else code_version(p, run)
            c = content_of(p)
            keys[pk] = (json.dumps({**json.loads(pk), "content": c, "code": v}, sort_keys=True), c, v)
    return keys


def _missing(
    points: Sequence[Point], keys: dict[str, tuple[str, str, str]], done: dict[str, Any]
) -> list[Point]:
    """The points whose runs are not in ``done``, each once, in order."""
    todo = []
    seen: set[str] = set()
    for p in points:
        full = keys[p.key()][0]
        if full not in done and full not in seen:
            seen.add(full)
            todo.append(p)
    return todo


def _row_point_key(row: dict[str, Any]) -> str:
    """The point key of a stored row (its key without the content and code hashes; rows written
    before those hashes existed are keyed by the point alone)."""
    if "content" not in row:
        return str(row["key"])
    d = json.loads(row["key"])
    d.pop("content", None)
    d.pop("code", None)
    return json.dumps(d, sort_keys=True)


def _refuse_stale(
    results: Path,
    done: dict[str, dict[str, Any]],
    todo: Sequence[Point],
    keys: dict[str, tuple[str, str, str]],
) -> None:
    """Refuse to run a point whose row in ``results`` was made from other content or code: the folder
    would then hold (and a table could mix) runs of two different systems."""
    by_point: dict[str, dict[str, Any]] = {}
    for row in done.values():
        by_point.setdefault(_row_point_key(row), row)
    for p in todo:
        old = by_point.get(p.key())
        if old is None:
            continue
        _, c, v = keys[p.key()]
        if "content" not in old:
            what = "inputs (written by an msj_gym without content hashes)"
        else:
            changes = []
            if old["content"] != c:
                changes.append(
                    f"scenario content {old['content']} there vs {c} now: the scenario file, trace or "
                    "overrides changed"
                )
            if old.get("code") != v:
                mine = f" (the source of {p.policy} or of msj_gym changed)" if ":" in p.policy else ""
                changes.append(f"code {old.get('code')} there vs {v} now{mine}")
            what = "; ".join(changes)
        raise StaleRuns(
            f"--out {str(results.parent)!r}: {results.name} holds runs of {p.scenario!r} "
            f"({p.policy}, seed {p.seed}) made from other {what}; use another --out "
            f"(or delete {results} to rerun everything)"
        )


LOCK_NAME = ".msj-gym.lock"
_HELD: dict[str, bool] = {}  # folders this process holds (resolved path -> writable): re-entrant


@contextlib.contextmanager
def hold_folder(folder: Path) -> Iterator[bool]:
    """Hold ``folder`` (an output folder) for one writer: an exclusive ``flock`` on
    ``folder/.msj-gym.lock``, released by the OS if the process dies. Yields whether the folder is
    writable; one this process may not write (read-only media) is held with a shared lock on an
    existing lock file, or none, so a finished folder can still be read. Re-entrant in a process. A
    folder another process holds is refused with a one-line :class:`ValueError`."""
    import fcntl

    key = str(folder.resolve())
    if key in _HELD:
        yield _HELD[key]
        return
    lock = folder / LOCK_NAME
    writable = True
    fh: Any = None
    if folder.exists() and not folder.is_dir():
        raise ValueError(f"--out {str(folder)!r}: a file is there, not a folder; use another --out")
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fh = lock.open("a")  # never truncated nor removed: unlinking a lock file races with its next taker
    except OSError as exc:
        if exc.errno not in (errno.EACCES, errno.EPERM, errno.EROFS):
            why = exc.strerror or type(exc).__name__
            raise ValueError(
                f"--out {str(folder)!r}: cannot be made a folder ({why}); use another --out"
            ) from None
        writable = False
        with contextlib.suppress(OSError):
            fh = lock.open("r")
    if fh is not None:
        try:
            fcntl.flock(fh, (fcntl.LOCK_EX if writable else fcntl.LOCK_SH) | fcntl.LOCK_NB)
        except BlockingIOError:
            fh.close()
            raise ValueError(
                f"--out {str(folder)!r}: another msj-gym command is writing there now (it holds {lock}); "
                "wait for it to finish or use another --out"
            ) from None
    _HELD[key] = writable
    try:
        yield writable
    finally:
        del _HELD[key]
        if fh is not None:
            fh.close()


def _progress_bar(total: int) -> Any:
    """A progress bar of ``total`` runs on stderr; its ETA counts the runs only (compilation is done
    before it starts). Plain lines every 10 s when stderr is not a terminal (a log file)."""
    from tqdm import tqdm

    tty = sys.stderr.isatty()
    return tqdm(total=total, unit="run", file=sys.stderr, mininterval=0.2 if tty else 10.0, dynamic_ncols=tty)


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
