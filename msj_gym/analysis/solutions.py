"""The disk cache of solved exact optima, shared by every process that needs one.

A solve of :func:`msj_gym.analysis.optimal.solve_optimal` can take minutes; the ``mdp-optimal`` policies,
the leaderboard's optimum row and ``msj-gym optimal`` all ask :func:`solved_table`, which keys a solution
by the content of the problem and the solver's source, so that every worker reuses one solve and a changed
problem or solver is never served a stale table. The cache lives in ``$MSJ_GYM_CACHE/optimal`` (else
``$XDG_CACHE_HOME/msj_gym/optimal``, else ``~/.cache/msj_gym/optimal``).
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
from typing import Any

import numpy as np

from ..workloads.workload import Workload
from .optimal import DEFAULT_MAX_STATES

__all__ = ["remember_solution", "solved_table", "solver_version"]


def _cache_dir() -> Path:
    from msj_gym.atomic import cache_folder

    return cache_folder("optimal")


@cache
def solver_version() -> str:
    """A hash of the solver's source: a solution (or a failure) cached under another is not reused."""
    from msj_gym.analysis import optimal

    return hashlib.sha256(inspect.getsource(optimal).encode()).hexdigest()[:16]


def solved_table(
    workload: Workload, preemptive: bool, blocking_target: float = 1e-6, max_states: int = DEFAULT_MAX_STATES
) -> dict[str, Any]:
    """The solved optimal policy of ``workload`` as arrays (``table``, ``configs``, ``up``,
    ``buffers``) plus its ``value`` (``mean_response_time``, ``blocked``, ...); a ``ValueError`` where the
    chain would exceed ``max_states`` or the workload is not exponential. Cached on disk by the
    content of the problem and the solver's source, so that every worker of a leaderboard reuses one
    solve and a changed problem or solver is never served a stale table. A solve that fails within
    ``max_states`` is remembered on disk too (keyed also on ``max_states`` and the versions of the
    libraries it ran on): it fails again without the minute it took, and a larger limit tries anew.
    A solve that takes more than a moment says on stderr where it is."""
    key, key_doc = _cache_key(workload, preemptive, blocking_target)
    solved = _SOLVED.get((key, max_states))
    if solved is None:
        try:
            solved = _solved(key, key_doc, workload, preemptive, blocking_target, max_states)
        except ValueError as exc:
            solved = exc  # a problem too large stays too large: do not try again in this process
        _SOLVED[(key, max_states)] = solved
    if isinstance(solved, ValueError):
        raise solved
    return solved


_SOLVED: dict[tuple[str, int], dict[str, Any] | ValueError] = {}


def _cache_key(workload: Workload, preemptive: bool, blocking_target: float) -> tuple[str, str]:
    from msj_gym.analysis.optimal import _parameters

    needs, k, lam, mu = _parameters(workload)
    key_doc = json.dumps(
        {
            "needs": needs,
            "k": k,
            "arrival_rates": [float.hex(x) for x in lam],
            "service_rates": [float.hex(x) for x in mu],
            "preemptive": bool(preemptive),
            "blocking_target": float.hex(float(blocking_target)),
            "solver": solver_version(),
        },
        sort_keys=True,
    )
    return hashlib.sha256(key_doc.encode()).hexdigest()[:32], key_doc


def _solved(
    key: str, key_doc: str, workload: Workload, preemptive: bool, blocking_target: float, max_states: int
) -> dict[str, Any]:
    path = _cache_dir() / f"{key}.npz"
    seen = _stamp(path)
    out = _load(path, key_doc)
    if out is not None:
        return out
    from msj_gym.atomic import computed_once

    kind = "preemptive" if preemptive else "non-preemptive"
    name = getattr(workload, "name", "the workload")
    # a built Workload's load is a float: set in __post_init__, though declared optional
    load = float(workload.load)  # type: ignore[arg-type]
    what = f"solving the exact {kind} optimum of {name} at load {load:.4g}"
    # workers needing the same optimum at once solve it once: a solve takes minutes and gigabytes
    with computed_once(path, what):
        out = _load(path, key_doc) if _stamp(path) != seen else None  # written while this one waited
        if out is None:
            out = _solve(key, key_doc, workload, preemptive, blocking_target, max_states, what)
    return out


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
                out = {
                    "table": z["table"],
                    "configs": z["configs"],
                    "up": z["up"],
                    "buffers": z["buffers"],
                    "value": json.loads(str(z["value"])),
                }
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


def _solve(
    key: str,
    key_doc: str,
    workload: Workload,
    preemptive: bool,
    blocking_target: float,
    max_states: int,
    what: str,
) -> dict[str, Any]:
    failed_path, failed_doc = _failure_key(key_doc, max_states)
    refused = _remembered_failure(failed_path, failed_doc)
    if refused is not None:
        raise ValueError(refused)
    from msj_gym.analysis.optimal import estimate_solve, solve_optimal
    from msj_gym.core.jit import announce

    estimate = estimate_solve(workload, max_states=max_states)
    with announce(f"{what} ({estimate.describe()})"):
        try:
            sol = solve_optimal(
                workload,
                preemptive=preemptive,
                blocking_target=blocking_target,
                check_buffers=False,
                max_states=max_states,
                log=_Progress(what),
            )
        except ValueError as exc:
            _remember_failure(failed_path, failed_doc, str(exc))
            raise
    return _store(key, key_doc, sol)


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
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
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
    out = {
        "table": sol.table.astype(np.int64),
        "configs": sol.chain.configs,
        "up": sol.chain.up,
        "buffers": np.asarray(sol.chain.buffers, dtype=np.int64),
        "value": sol.value.to_dict(),
    }
    path = _cache_dir() / f"{key}.npz"
    tmp = path.with_suffix(f".{os.getpid()}.tmp.npz")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        np.savez_compressed(
            tmp,
            key_doc=np.array(key_doc),
            value=np.array(json.dumps(out["value"])),
            **{k: v for k, v in out.items() if k != "value"},
        )
        os.replace(tmp, path)  # atomic: a concurrent reader sees the old file or the whole new one
    except OSError:
        # a read-only or full cache only costs a solve per process; no partial file stays behind
        with contextlib.suppress(OSError):
            tmp.unlink()
    return out
