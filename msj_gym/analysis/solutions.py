"""The disk cache of solved exact optima, shared by every process that needs one.

A solve of :func:`msj_gym.analysis.optimal.solve_optimal` can take minutes; the ``mdp-optimal`` policies,
the leaderboard's optimum row and ``msj-gym optimal`` all ask :func:`solved_table`, which keys a solution
by the content of the problem and the solver's source, so that every worker reuses one solve and a changed
problem or solver is never served a stale table. The cache lives in ``$MSJ_GYM_CACHE/optimal`` (else
``$XDG_CACHE_HOME/msj_gym/optimal``, else ``~/.cache/msj_gym/optimal``).

An entry is checked, not believed: it holds a SHA-256 of its content beside its key (an entry edited or
damaged since it was written does not match), and its stored policy is checked against the problem
(:func:`msj_gym.analysis.optimal.check_solution`: policy iteration from it, a fraction of a solve,
must give back the stored optimum). An entry that fails either is solved again, with a one-line note,
so that a shared cache folder (a team's, a cluster's) cannot change an optimum row or the
``mdp-optimal`` policy. A solve no entry answers honours the time limit of ``msj-gym optimal``
(:data:`~msj_gym.analysis.limits.DEFAULT_SOLVE_MINUTES`, from the solver's own estimate): a larger one
is refused at once in one line that says how to solve it on purpose.
"""

from __future__ import annotations

import contextlib
import hashlib
import inspect
import json
import math
import os
import sys
import time
from functools import cache
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from ..workloads.workload import Workload
from .limits import DEFAULT_SOLVE_MINUTES
from .optimal import DEFAULT_MAX_STATES

__all__ = [
    "KNOWN_OPTIMA",
    "KNOWN_POINTS",
    "known_optimum",
    "problem_digest",
    "remember_solution",
    "solved_table",
    "solver_version",
    "write_known_optima",
]


def _cache_dir() -> Path:
    from msj_gym.atomic import cache_folder

    return cache_folder("optimal")


@cache
def solver_version() -> str:
    """A hash of the solver's source: a solution (or a failure) cached under another is not reused."""
    from msj_gym.analysis import optimal

    return hashlib.sha256(inspect.getsource(optimal).encode()).hexdigest()[:16]


def solved_table(
    workload: Workload,
    preemptive: bool,
    blocking_target: float = 1e-6,
    max_states: int = DEFAULT_MAX_STATES,
    max_minutes: float = DEFAULT_SOLVE_MINUTES,
) -> dict[str, Any]:
    """The solved optimal policy of ``workload`` as arrays (``table``, ``configs``, ``up``,
    ``buffers``) plus its ``value`` (``mean_response_time``, ``blocked``, ...); a ``ValueError`` where the
    chain would exceed ``max_states`` or the workload is not exponential. Cached on disk by the
    content of the problem and the solver's source, so that every worker of a leaderboard reuses one
    solve and a changed problem or solver is never served a stale table. A solve that fails within
    ``max_states`` is remembered on disk too (keyed also on ``max_states`` and the versions of the
    libraries it ran on): it fails again without the minute it took, and a larger limit tries anew.
    A solve that takes more than a moment says on stderr where it is; one estimated to take more than
    ``max_minutes`` (:func:`~msj_gym.analysis.optimal.estimate_solve`) is a ``ValueError`` at once,
    as ``msj-gym optimal`` refuses it, unless the cache holds it (``msj-gym optimal --max-minutes``
    puts it there). A cached entry is checked before use (see the module docstring)."""
    key, key_doc = _cache_key(workload, preemptive, blocking_target)
    solved = _SOLVED.get((key, max_states, max_minutes))
    if solved is None:
        try:
            solved = _solved(
                _Request(key, key_doc, workload, preemptive, blocking_target, max_states), max_minutes
            )
        except ValueError as exc:
            solved = exc  # a problem too large stays too large: do not try again in this process
        _SOLVED[(key, max_states, max_minutes)] = solved
    if isinstance(solved, ValueError):
        raise solved
    return solved


_SOLVED: dict[tuple[str, int, float], dict[str, Any] | ValueError] = {}


def _problem(workload: Workload, preemptive: bool, blocking_target: float) -> dict[str, Any]:
    """The problem a solve answers, exactly (rates in hexadecimal): what its value depends on."""
    from msj_gym.analysis.optimal import _parameters

    needs, k, lam, mu = _parameters(workload)
    return {
        "needs": needs,
        "k": k,
        "arrival_rates": [float.hex(x) for x in lam],
        "service_rates": [float.hex(x) for x in mu],
        "preemptive": bool(preemptive),
        "blocking_target": float.hex(float(blocking_target)),
    }


def _cache_key(workload: Workload, preemptive: bool, blocking_target: float) -> tuple[str, str]:
    doc = {**_problem(workload, preemptive, blocking_target), "solver": solver_version()}
    key_doc = json.dumps(doc, sort_keys=True)
    return hashlib.sha256(key_doc.encode()).hexdigest()[:32], key_doc


#: The optima shipped with the package (:func:`known_optimum`), written by :func:`write_known_optima`.
KNOWN_OPTIMA = Path(__file__).with_name("known_optima.json")
#: The points whose optima ship: the benchmark suite's sf-fig2 and one-or-all points, whose solves
#: take from a second to several minutes (one-or-all at 0.9), both kinds.
KNOWN_POINTS = (
    ("sf-fig2", 0.5),
    ("sf-fig2", 0.7),
    ("sf-fig2", 0.9),
    ("one-or-all", 0.5),
    ("one-or-all", 0.7),
    ("one-or-all", 0.9),
)


def problem_digest(workload: Workload, preemptive: bool, blocking_target: float = 1e-6) -> str:
    """The SHA-256 of the problem a solve answers (not of the solver): what a shipped value is for."""
    doc = json.dumps(_problem(workload, preemptive, blocking_target), sort_keys=True)
    return hashlib.sha256(doc.encode()).hexdigest()


@cache
def _known() -> dict[str, float]:
    try:
        data = json.loads(KNOWN_OPTIMA.read_text())
    except (OSError, ValueError):
        return {}
    return {e["problem"]: float(e["mean_response_time"]) for e in data.get("optima", [])}


def known_optimum(workload: Workload, preemptive: bool, blocking_target: float = 1e-6) -> float | None:
    """The optimal mean response time of ``workload`` where the package ships it (checked data: the
    tests solve every one again), else None. Only the value ships, not the policy: the leaderboard's
    optimum rows and the benchmark's scale need no solve at those points, ``mdp-optimal`` still does."""
    try:
        digest = problem_digest(workload, preemptive, blocking_target)
    except ValueError:  # not an exponential system
        return None
    return _known().get(digest)


def write_known_optima(path: Path = KNOWN_OPTIMA) -> dict[str, Any]:
    """Solve every point of :data:`KNOWN_POINTS`, both kinds (through :func:`solved_table`, without a
    time limit; minutes), and write their values to ``path``."""
    from msj_gym.workloads.scenarios import load_scenario

    from ..atomic import atomic_write_text

    optima = []
    for scenario, load in KNOWN_POINTS:
        workload = load_scenario(scenario).build(load=load)
        for preemptive in (False, True):
            value = solved_table(workload, preemptive, max_minutes=math.inf)["value"]
            optima.append(
                {
                    "scenario": scenario,
                    "load": load,
                    "preemptive": preemptive,
                    "problem": problem_digest(workload, preemptive),
                    "mean_response_time": value["mean_response_time"],
                    "states": value["states"],
                }
            )
    doc = {
        "about": "exact optimal mean response times (msj_gym.analysis.optimal, blocking target 1e-6), "
        "by the SHA-256 of the problem; written by msj_gym.analysis.solutions.write_known_optima, "
        "checked by tests/analysis/test_known_optima.py",
        "optima": optima,
    }
    atomic_write_text(path, json.dumps(doc, indent=1) + "\n")
    _known.cache_clear()
    return doc


class _Request(NamedTuple):
    """A solve asked for: the problem, its cache key and the key's document, and the state limit."""

    key: str
    key_doc: str
    workload: Workload
    preemptive: bool
    blocking_target: float
    max_states: int

    def cached(self, path: Path) -> dict[str, Any] | None:
        """The entry at ``path`` if it holds this problem's solution, checked (see :func:`_checked`)."""
        return _checked(_load(path, self.key_doc), path, self.workload, self.preemptive, self.max_states)


def _solved(request: _Request, max_minutes: float) -> dict[str, Any]:
    path = _cache_dir() / f"{request.key}.npz"
    seen = _stamp(path)
    out = request.cached(path)
    if out is not None:
        return out
    workload, preemptive = request.workload, request.preemptive
    _refuse_long(workload, preemptive, request.max_states, max_minutes)
    from msj_gym.atomic import computed_once

    kind = "preemptive" if preemptive else "non-preemptive"
    name = getattr(workload, "name", "the workload")
    # a built Workload's load is a float: set in __post_init__, though declared optional
    load = float(workload.load)  # type: ignore[arg-type]
    what = f"solving the exact {kind} optimum of {name} at load {load:.4g}"
    # workers needing the same optimum at once solve it once: a solve takes minutes and gigabytes
    with computed_once(path, what):
        out = None
        if _stamp(path) != seen:  # written while this one waited
            out = request.cached(path)
        if out is None:
            out = _solve(request, what)
    return out


MAX_STATES_CHECKED = 10**8  # `msj-gym optimal --max-states`'s largest: an entry beyond is refused


_VERIFIED: set[str] = set()  # digests of entries whose solution this process checked (or its parent did)


def verified_now() -> tuple[str, ...]:
    """The digests of the cache entries checked in this process, to hand to its worker processes: an
    entry they read with the same content (the same digest) is not checked again there."""
    return tuple(sorted(_VERIFIED))


def take_verified(digests: tuple[str, ...]) -> None:
    """A worker's side of :func:`verified_now`."""
    _VERIFIED.update(digests)


def _refuse_long(workload: Workload, preemptive: bool, max_states: int, max_minutes: float) -> None:
    """A one-line ``ValueError`` for a solve estimated to take longer than ``max_minutes``, before
    anything is built (the estimate of ``msj-gym optimal``, good to a factor of about 3)."""
    from msj_gym.analysis.optimal import estimate_solve

    estimate = estimate_solve(workload, max_states=max_states)
    if estimate.states <= max_states and estimate.seconds > 60 * max_minutes:
        kind = "preemptive" if preemptive else "non-preemptive"
        name = getattr(workload, "name", "the workload")
        load = float(workload.load)  # type: ignore[arg-type]
        raise ValueError(
            f"the exact {kind} optimum of {name} at load {load:.4g}: {estimate.describe()}, over the "
            f"limit of {max_minutes:g} min; solve it once on purpose with msj-gym optimal (--max-minutes, "
            "--preemptive as needed), which keeps it in the cache every command reads"
        )


def _digest(key_doc: str, arrays: dict[str, np.ndarray], value: str, charged: bool) -> str:
    """The SHA-256 of an entry's content: its key, its arrays (dtype, shape, bytes) and its value."""
    h = hashlib.sha256(key_doc.encode())
    for name in sorted(arrays):
        a = np.ascontiguousarray(arrays[name])
        h.update(f"|{name}|{a.dtype.str}|{a.shape}|".encode() + a.tobytes())
    h.update(f"|value|{value}|charged|{bool(charged)}".encode())
    return h.hexdigest()


def _checked(
    out: dict[str, Any] | None, path: Path, workload: Workload, preemptive: bool, max_states: int
) -> dict[str, Any] | None:
    """``out`` (a loaded entry) if its stored policy gives its stored optimum back
    (:func:`~msj_gym.analysis.optimal.check_solution`), else None with a one-line note."""
    if out is None:
        return None
    if out["digest"] in _VERIFIED:  # this content was checked in this process, or in its parent
        return out
    from msj_gym.analysis.optimal import check_solution

    stored = float(out["value"]["mean_response_time"])
    try:
        got = check_solution(
            workload,
            preemptive=preemptive,
            table=out["table"],
            buffers=[int(b) for b in out["buffers"]],
            lost_arrivals_charged=bool(out.get("lost_arrivals_charged", False)),
            # a solve kept by `msj-gym optimal` serves beyond the caller's own limit, up to its own
            max_states=max(max_states, min(int(np.asarray(out["table"]).size), MAX_STATES_CHECKED)),
            configs=out["configs"],
            up=out["up"],
        )
        why = None
        if not abs(got.mean_response_time - stored) <= 1e-6 * stored:
            why = f"its stored policy gives {got.mean_response_time:.6g}, not the stored {stored:.6g}"
    except ValueError as exc:
        why = " ".join(str(exc).split())[:120]
    if why is None:
        _VERIFIED.add(out["digest"])
        return out
    print(
        f"msj-gym: note: cached solve {str(path)!r} does not check out ({why}); solving again",
        file=sys.stderr,
        flush=True,
    )
    return None


def _stamp(path: Path) -> tuple[int, int] | None:
    """When ``path`` was last written and its size (None: not there)."""
    try:
        st = path.stat()
    except OSError:
        return None
    return st.st_mtime_ns, st.st_size


def _load(path: Path, key_doc: str) -> dict[str, Any] | None:
    """The cached solve at ``path`` if it is the one of ``key_doc``, else None."""
    if not path.exists():
        return None
    try:
        with np.load(path, allow_pickle=False) as z:
            if str(z["key_doc"]) == key_doc:
                arrays = {name: z[name] for name in ("table", "configs", "up", "buffers")}
                value, charged = str(z["value"]), bool(z["lost_arrivals_charged"])
                digest = _digest(key_doc, arrays, value, charged)
                if str(z["digest"]) != digest:
                    raise ValueError("its content does not match its digest: damaged or edited")
                out = {**arrays, "value": json.loads(value), "lost_arrivals_charged": charged}
                out["digest"] = digest
                float(out["value"]["mean_response_time"])
                return out
    except Exception as exc:
        # a cache entry cut short (a killed writer, a full disk) or damaged is a miss: solve again
        why = " ".join(str(exc).split())[:80] or "unreadable"
        print(
            f"msj-gym: note: cached solve {str(path)!r} is unreadable ({type(exc).__name__}: {why}); "
            "solving again",
            file=sys.stderr,
            flush=True,
        )
    return None


def _solve(request: _Request, what: str) -> dict[str, Any]:
    failed_path, failed_doc = _failure_key(request.key_doc, request.max_states)
    refused = _remembered_failure(failed_path, failed_doc)
    if refused is not None:
        raise ValueError(refused)
    from msj_gym.analysis.optimal import estimate_solve, solve_optimal
    from msj_gym.core.jit import announce

    estimate = estimate_solve(request.workload, max_states=request.max_states)
    with announce(f"{what} ({estimate.describe()})"):
        try:
            sol = solve_optimal(
                request.workload,
                preemptive=request.preemptive,
                blocking_target=request.blocking_target,
                check_buffers=False,
                max_states=request.max_states,
                log=_Progress(what),
            )
        except ValueError as exc:
            _remember_failure(failed_path, failed_doc, str(exc))
            raise
    return _store(request.key, request.key_doc, sol)


class _Progress:
    """The solver's log on stderr, once a solve has run longer than a cache load (so a cached or small
    solve stays silent): every stage (a new buffer size), and the steps within one at most every few
    seconds, each with the time so far. The solves of a leaderboard run in worker processes whose
    stderr is the terminal's, one line per message, so that lines of two solves never overwrite."""

    EVERY = 5.0  # seconds between two lines of the same stage

    def __init__(self, what: str) -> None:
        self.what = what
        self.started = time.perf_counter()
        self.last = -math.inf

    def __call__(self, message: str) -> None:
        from msj_gym.core.jit import ANNOUNCE_AFTER

        now = time.perf_counter()
        elapsed = now - self.started
        stage = message.startswith(("buffers", "blocked"))
        if elapsed < ANNOUNCE_AFTER or (not stage and now - self.last < self.EVERY):
            return
        self.last = now
        print(f"msj-gym: {self.what} [{elapsed:5.0f} s] {message}", file=sys.stderr, flush=True)


def _failure_key(key_doc: str, max_states: int) -> tuple[Path, str]:
    """Where a failed solve of ``key_doc`` (the problem, its blocking target and the solver's source)
    within ``max_states`` is remembered, and the document it is remembered under: the limit and the
    numerical libraries the solve ran on are part of it, so a changed one tries again."""
    import scipy

    doc = json.dumps(
        {
            "problem": json.loads(key_doc),
            "max_states": int(max_states),
            "check_buffers": False,
            "numpy": np.__version__,
            "scipy": scipy.__version__,
        },
        sort_keys=True,
    )
    digest = hashlib.sha256(doc.encode()).hexdigest()[:32]
    return _cache_dir() / f"{digest}.failed.json", doc


def _remembered_failure(path: Path, doc: str) -> str | None:
    """The message of a remembered failure of the solve ``doc``, or None."""
    try:
        record = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(record, dict) or record.get("key_doc") != doc or not record.get("error"):
        return None
    return str(record["error"])  # word for word: a run's recorded reason must not depend on the cache


def _remember_failure(path: Path, doc: str, error: str) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.{os.urandom(3).hex()}.tmp")
        tmp.write_text(json.dumps({"key_doc": doc, "error": error}, indent=1) + "\n")
        os.replace(tmp, path)
    except OSError:
        pass  # a read-only cache: the failure costs its solve again in the next process


def remember_solution(workload: Workload, sol: Any, blocking_target: float) -> None:
    """Put a solution of :func:`msj_gym.analysis.optimal.solve_optimal` (solved for ``workload`` with
    ``blocking_target``) in the disk cache, so that ``mdp-optimal`` and the leaderboard use it instead of
    solving again, also where their own state limit would refuse the problem."""
    key, key_doc = _cache_key(workload, sol.chain.preemptive, blocking_target)
    _store(key, key_doc, sol)
    _SOLVED.clear()  # an earlier refusal in this process no longer holds


def _store(key: str, key_doc: str, sol: Any) -> dict[str, Any]:
    arrays = {
        "table": sol.table.astype(np.int64),
        "configs": np.asarray(sol.chain.configs, dtype=np.int64),
        "up": np.asarray(sol.chain.up, dtype=np.int64),
        "buffers": np.asarray(sol.chain.buffers, dtype=np.int64),
    }
    value = json.dumps(sol.value.to_dict())
    charged = bool(sol.lost_arrivals_charged)
    digest = _digest(key_doc, arrays, value, charged)
    _VERIFIED.add(digest)  # solved here: nothing to check
    out = {**arrays, "value": sol.value.to_dict(), "lost_arrivals_charged": charged, "digest": digest}
    path = _cache_dir() / f"{key}.npz"
    # a name of its own per writer: processes on other machines sharing the folder may have this pid
    tmp = path.with_suffix(f".{os.getpid()}.{os.urandom(4).hex()}.tmp.npz")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        np.savez_compressed(
            tmp,
            key_doc=np.array(key_doc),
            value=np.array(value),
            lost_arrivals_charged=np.array(charged),
            digest=np.array(digest),
            **arrays,
        )
        os.replace(tmp, path)  # atomic: a concurrent reader sees the old file or the whole new one
    except OSError:
        # a read-only or full cache only costs a solve per process; no partial file stays behind
        with contextlib.suppress(OSError):
            tmp.unlink()
    return out
