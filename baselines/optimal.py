"""The exact average-cost optimal policy of a small exponential system, as a baseline.

:func:`msj_gym.analysis.optimal.solve_optimal` solves the Markov decision process of the per-class
counts; these policies read the solved table in compiled code, so that the optimum runs natively,
through ``MSJ-v0`` / ``MSJPreemptive-v0`` with :class:`~msj_gym.PolicyAgent`, and in the leaderboard
like any other baseline.
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
from typing import Any, ClassVar

import numpy as np

from msj_gym.core import Policy
from msj_gym.core.access import (
    class_running,
    class_waiting,
    field,
    first_waiting_of_class,
    int_value,
    job_class,
    job_id,
    next_waiting_of_class,
    num_running,
    preempt,
    running_job,
    start,
)
from msj_gym.core.jit import inline_jit
from msj_gym.core.policy import Param
from msj_gym.core.record import Record
from msj_gym.core.state import PolicyData

__all__ = ["MDPOptimal", "MDPOptimalPreemptive", "remember_solution", "solved_table"]

# PolicyData.params: per class the solved buffer T_c, the stride of its count in the table's flat
# index and its radix place in a configuration's code (C each); the configurations (nR of them); the
# configuration of each code, -1 if none (prod_c (k // n_c + 1)); each configuration's C counts
# (nR * C); and up[c * nR + r], the configuration r with one more class-c job
FIELDS = Record("buffers", "strides", "bases", "num_configs", "lookup", "configs", "up")
BUFFERS, STRIDES, BASES, NUM_CONFIGS, LOOKUP, CONFIGS, UP = FIELDS.ids


@inline_jit
def _mdp_optimal(view, pdata, actions):
    params = pdata.params
    buffers, strides, bases = field(params, BUFFERS), field(params, STRIDES), field(params, BASES)
    nclass = buffers.size
    nR = int_value(params, NUM_CONFIGS)
    t_flat = 0
    code = 0
    for c in range(nclass):
        running = class_running(view, c)
        t = class_waiting(view, c) + running
        cap = int(buffers[c])
        if t > cap:
            t = cap
        t_flat += t * int(strides[c])
        code += running * int(bases[c])
    cfg = int(field(params, LOOKUP)[code])
    up = field(params, UP)
    gsize = pdata.table.shape[1] // nR
    cursor = pdata.iwork
    for c in range(nclass):
        cursor[c] = first_waiting_of_class(view, c)
    n = 0
    while True:
        c = int(pdata.table[0, cfg * gsize + t_flat])
        if c < 0:
            break
        s = cursor[c]
        n = start(actions, n, s)
        cursor[c] = next_waiting_of_class(view, s)
        cfg = int(up[c * nR + cfg])
    return n


@inline_jit
def _mdp_optimal_preemptive(view, pdata, actions):
    params = pdata.params
    buffers, strides = field(params, BUFFERS), field(params, STRIDES)
    configs = field(params, CONFIGS)
    nclass = buffers.size
    t_flat = 0
    for c in range(nclass):
        t = class_waiting(view, c) + class_running(view, c)
        cap = int(buffers[c])
        if t > cap:
            t = cap
        t_flat += t * int(strides[c])
    target = int(pdata.table[0, t_flat])
    n = 0
    # preempt first: the youngest running jobs of each class above its target
    nrun = num_running(view)
    for c in range(nclass):
        excess = class_running(view, c) - int(configs[target * nclass + c])
        below = -1  # job ids already chosen are the youngest; take the next below them
        for _ in range(excess):
            best = -1
            best_id = -1
            for p in range(nrun):
                s = running_job(view, p)
                j = job_id(view, s)
                if job_class(view, s) == c and j > best_id and (below < 0 or j < below):
                    best, best_id = s, j
            n = preempt(actions, n, best)
            below = best_id
    for c in range(nclass):
        short = int(configs[target * nclass + c]) - class_running(view, c)
        s = first_waiting_of_class(view, c)
        for _ in range(short):
            n = start(actions, n, s)
            s = next_waiting_of_class(view, s)
    return n


def _cache_dir() -> Path:
    root = os.environ.get("MSJ_GYM_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "msj_gym"
    )
    return Path(root) / "optimal"


@cache
def _solver_version() -> str:
    from msj_gym.analysis import optimal

    return hashlib.sha256(inspect.getsource(optimal).encode()).hexdigest()[:16]


def solved_table(
    workload: Any, preemptive: bool, blocking_target: float = 1e-6, max_states: int = 1_000_000
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


def _cache_key(workload: Any, preemptive: bool, blocking_target: float) -> tuple[str, str]:
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
            "solver": _solver_version(),
        },
        sort_keys=True,
    )
    return hashlib.sha256(key_doc.encode()).hexdigest()[:32], key_doc


def _solved(
    key: str, key_doc: str, workload: Any, preemptive: bool, blocking_target: float, max_states: int
) -> dict[str, Any]:
    path = _cache_dir() / f"{key}.npz"
    if path.exists():
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
    failed_path, failed_doc = _failure_key(key_doc, max_states)
    refused = _remembered_failure(failed_path, failed_doc)
    if refused is not None:
        raise ValueError(refused)
    from msj_gym.analysis.optimal import estimate_solve, solve_optimal
    from msj_gym.core.jit import announce

    kind = "preemptive" if preemptive else "non-preemptive"
    name = getattr(workload, "name", "the workload")
    what = f"solving the exact {kind} optimum of {name} at load {float(workload.load):.4g}"
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


def remember_solution(workload: Any, sol: Any, blocking_target: float) -> None:
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


class _MDPOptimalBase(Policy):
    size_aware = False
    support_depends_on_load: ClassVar[bool] = True  # the chain grows with the load
    params_spec: ClassVar[dict[str, Param]] = {
        "blocking_target": Param(
            float, 1e-6, "largest fraction of arrivals the solver's truncation may lose", minimum=0.0
        )
    }

    def prepare(self, workload: Any, rng: np.random.Generator) -> PolicyData:
        solved = solved_table(workload, self.preemptive, self.param_values["blocking_target"])
        configs, up, T = solved["configs"], solved["up"], solved["buffers"]
        nR, C = configs.shape
        k = int(workload.num_servers)
        needs = [int(n) for n in workload.server_needs]
        grid = [int(b) + 1 for b in T]
        strides = [int(np.prod(grid[c + 1 :])) for c in range(C)]
        radix = [k // n + 1 for n in needs]
        bases = [int(np.prod(radix[:c])) for c in range(C)]
        lookup = np.full(int(np.prod(radix)), -1, dtype=np.int64)
        for i, r in enumerate(configs):
            lookup[int(np.dot(r, bases))] = i
        params = FIELDS.pack(
            buffers=T,
            strides=strides,
            bases=bases,
            num_configs=nR,
            lookup=lookup,
            configs=configs.ravel(),
            up=up.ravel(),
        )
        table = np.asarray(solved["table"], dtype=np.float64).reshape(1, -1)
        base = super().prepare(workload, rng)
        return base._replace(params=params, table=table)

    def work_sizes(self, num_slots: int, num_servers: int, num_classes: int) -> tuple[int, int]:
        return num_classes, 0


class MDPOptimal(_MDPOptimalBase):
    """The exact long-run average-cost optimal non-preemptive policy of an exponential system.

    Source: the Markov decision process of the per-class numbers of jobs queued and in service (no
    paper of the five solves it; the model is Grosof & Harchol-Balter (2023), Sec. 3 / Chen et al. (2026),
    Sec. 3 with Poisson arrivals and exponential service times), solved by
    :func:`msj_gym.analysis.optimal.solve_optimal` (policy iteration on the uniformised chain, buffers grown
    until less than ``blocking_target`` of the arrivals would be lost). At each decision it starts, one at a
    time, the oldest waiting job of the class the solved table names, and may leave servers idle on purpose;
    beyond the solved buffers it acts as at the buffer. Defined only on Poisson workloads with exponential
    service times whose state space is small enough (sf-fig2, one-or-all, two-class systems with k <= 64).
    Non-preemptive; size-oblivious (it knows the classes' rates, as the distributions are known).
    """

    policy_id = "mdp-optimal"
    preemptive = False
    reference = (
        "exact MDP (analysis.optimal); model of Grosof & Harchol-Balter (2023), Sec. 3, "
        "Chen et al. (2026), Sec. 3"
    )
    kernel = _mdp_optimal


class MDPOptimalPreemptive(_MDPOptimalBase):
    """The exact long-run average-cost optimal preemptive (preempt-resume) policy of an exponential
    system: the state is the number of jobs of each class in the system, and the solved table names
    the configuration to serve; jobs above it are preempted (the youngest of a class first), jobs
    below it started (the oldest first). See :class:`MDPOptimal` for the solver and where it is defined.
    Preemptive; size-oblivious.
    """

    policy_id = "mdp-optimal-preemptive"
    preemptive = True
    reference = "exact MDP (analysis.optimal); model of Grosof & Harchol-Balter (2023), Sec. 3"
    kernel = _mdp_optimal_preemptive
