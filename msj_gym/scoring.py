"""The evaluator for policy search: ``msj-gym score`` and :func:`score`, one number per scheduling policy
on a fixed suite, as JSON of a versioned schema, for searches over policies written as code (program
search with language models, evolutionary or random search).

One call, for each policy (``FILE.py:Class``, ``module:Class``, a registered id, or a
:class:`~msj_gym.core.Policy` class or instance in Python):

1. **vets** it as :func:`msj_gym.testing.check_policy` does (its declarations; runs with bounds-checked
   kernels, every decision checked, bit-for-bit determinism, the same result through the env) on each
   system of the suite, at :data:`VET_POINTS`. The policy is imported, vetted and run in a forked
   child (:func:`msj_gym.testing.run_in_child`), each step within ``time_limit`` seconds: an import or
   syntax error, a constructor that raises, a kernel that crashes the process, never returns, writes
   out of bounds or makes an invalid decision is refused in one line naming the spec and the step,
   and the caller goes on. The child imports the file again, so an edited file is scored as it is now;
   what it prints goes to stderr (stdout carries the report). The built-in policies are not vetted
   (the tests check every one of them) and their runs are the references'.
2. **runs** it at every point of :data:`SCORE_POINTS` on every seed of :data:`SCORE_SEEDS`, the same
   job streams as the built-in policies (common random numbers), with the benchmark's run length
   (20,000 arrivals, a tenth of them warm-up). The seeds are a block that no published table uses:
   seeds of the benchmark, the leaderboard and the agents' held-out evaluations
   (:data:`PUBLISHED_SEEDS`) are refused, so that a search never tunes on a published number.
3. **scores** each run on the benchmark's scale (:mod:`msj_gym.experiments.benchmark`, whose code does
   it): on each seed, ``100 * (T_low - T) / (T_low - T_high)`` with ``T_low`` FCFS's mean response
   time (or the worst size-oblivious heuristic stable on every seed) and ``T_high`` the exact
   non-preemptive optimum where it is solved (every sf-fig2 and one-or-all point), else the best
   size-oblivious heuristic; floored at 0, and **an unstable run scores 0** (its queue grows without
   bound: whatever its mean response time says, a starving policy's can be low). A point where the
   policy is not defined scores 0 on every seed (flagged ``n/a``).

**The combined score** is the mean over every run (points x seeds), with a stratified-bootstrap 95 %
interval (the seeds resampled within each point). It is not the benchmark's interquartile mean, which
is reported beside it (``iqm``): with eight points, one point is an eighth of the runs, and a trimmed
mean drops a quarter of them, so a policy unstable at one point would score as if it were stable
everywhere. The mean counts every run, an unstable one at 0. ``p_improve`` is the benchmark's
probability of improvement on each point's best size-oblivious heuristic.

The built-in policies' runs (the references, and the rows of ``--builtin``) are made once per suite,
seeds, run length and code, and kept in the disk cache (``$MSJ_GYM_CACHE/score``, else
``~/.cache/msj_gym/score``); processes that need them at the same time make them once. A later call
runs only the policy it scores: a few seconds.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import importlib
import importlib.util
import json
import math
import os
import re
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

    from .core.policy import Policy
    from .experiments.benchmark import BenchmarkConfig
    from .experiments.runner import Point

__all__ = [
    "DEFAULT_TIME_LIMIT",
    "PUBLISHED_SEEDS",
    "SCHEMA",
    "SCORE_ARRIVALS",
    "SCORE_POINTS",
    "SCORE_SEEDS",
    "SUITE",
    "VET_POINTS",
    "PointResult",
    "PolicyRefused",
    "PolicyResult",
    "ScoreReport",
    "builtin_ids",
    "check_suite",
    "parse_score_points",
    "score",
]

SCHEMA = "msj-gym-score/1"  # a change of the output's fields or of their meaning is a new number
SUITE = "score-v1"  # a change of the points, the seeds or the run length is a new suite
#: The suite: suite v1 of the benchmark but for one-or-all at 0.8 instead of 0.9, whose exact optimum
#: takes minutes and gigabytes to solve (0.8: 18 s, once); the optimum is solved at every sf-fig2 and
#: one-or-all point, four-class is scored against its best heuristic.
SCORE_POINTS: tuple[tuple[str, float], ...] = (
    ("sf-fig2", 0.5),
    ("sf-fig2", 0.7),
    ("sf-fig2", 0.9),
    ("one-or-all", 0.5),
    ("one-or-all", 0.7),
    ("one-or-all", 0.8),
    ("four-class", 0.7),
    ("four-class", 0.912),
)
SCORE_SEEDS: tuple[int, ...] = tuple(range(5600, 5610))
SCORE_ARRIVALS = 20_000
#: The seeds of published tables, never a score's: the benchmark's and the leaderboard's defaults, the
#: held-out seeds of ``msj_gym.agents.evaluate`` and those of the agents' pages.
PUBLISHED_SEEDS: dict[str, tuple[int, ...]] = {
    "the benchmark's and the leaderboard's default seeds (0-4)": tuple(range(5)),
    "the held-out seeds of msj_gym.agents.evaluate (1000-1019)": tuple(range(1000, 1020)),
    "the held-out seeds of the agents' pages (9000-9009, 9100-9104)": (
        *range(9000, 9010),
        *range(9100, 9105),
    ),
}
#: Where a policy is vetted: each system of the suite, at a load where every sound policy is stable.
VET_POINTS: tuple[tuple[str, float], ...] = (("sf-fig2", 0.7), ("one-or-all", 0.7), ("four-class", 0.7))
SMALL_BATCH = 2_000_000  # arrivals in all: fewer are simulated in this process, without workers
DEFAULT_TIME_LIMIT = 60.0  # seconds per step of a policy's vetting and per run
_MODULE = "_msj_gym_score_candidate"  # the child's module holding the policy it scores
_LABEL = "candidate (scored)"  # its entrant name in the benchmark's scoring: no built-in id


class PolicyRefused(ValueError):
    """A policy that failed its vetting (or its runs): ``str()`` is one line naming the spec, the step
    and what went wrong."""


@dataclass(frozen=True)
class PointResult:
    """One policy at one point of the suite: the mean of its runs' scores over the seeds with a
    bootstrap 95 % interval, each seed's score, its mean response time over the seeds, and ``flag``
    (``""``; ``"unstable"``: unstable on some seed, scored 0 there; ``"n/a"``: not defined here)."""

    scenario: str
    load: float
    score: float
    score_ci95: tuple[float, float]
    scores: tuple[float, ...]
    mean_response_time: float
    flag: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "scenario": self.scenario,
            "load": self.load,
            "score": _num(self.score),
            "score_ci95": [_num(x) for x in self.score_ci95],
            "scores": [_num(x) for x in self.scores],
            "mean_response_time": _num(self.mean_response_time),
            "flag": self.flag,
        }


@dataclass(frozen=True)
class PolicyResult:
    """One policy's result: ``status`` ``"scored"`` (with the combined score and the points) or
    ``"refused"`` (with ``error``, one line, and no score)."""

    spec: str
    status: str
    policy_id: str = ""
    kind: str = ""
    params: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    score: float = math.nan
    score_ci95: tuple[float, float] = (math.nan, math.nan)
    iqm: float = math.nan
    iqm_ci95: tuple[float, float] = (math.nan, math.nan)
    p_improve: float = math.nan
    p_improve_ci95: tuple[float, float] = (math.nan, math.nan)
    points: tuple[PointResult, ...] = ()
    error: str | None = None
    seconds: float = math.nan

    @property
    def stable(self) -> bool:
        """Stable on every run where it is defined."""
        return self.status == "scored" and not any(p.flag == "unstable" for p in self.points)

    @property
    def flagged(self) -> list[str]:
        return [f"{p.scenario}@{p.load:g} ({p.flag})" for p in self.points if p.flag]

    def to_dict(self) -> dict[str, Any]:
        if self.status != "scored":
            return {"spec": self.spec, "status": self.status, "error": self.error, "score": None}
        return {
            "spec": self.spec,
            "status": self.status,
            "policy_id": self.policy_id,
            "kind": self.kind,
            "params": dict(self.params),
            "score": _num(self.score),
            "score_ci95": [_num(x) for x in self.score_ci95],
            "iqm": _num(self.iqm),
            "iqm_ci95": [_num(x) for x in self.iqm_ci95],
            "p_improve": _num(self.p_improve),
            "p_improve_ci95": [_num(x) for x in self.p_improve_ci95],
            "stable": self.stable,
            "flagged": self.flagged,
            "seconds": round(self.seconds, 2),
            "points": [p.to_dict() for p in self.points],
        }


@dataclass(frozen=True)
class ScoreReport:
    """What :func:`score` returns: the suite it ran (``points``, ``seeds``, ``arrivals``, ``warmup``),
    each point's scale (``scales``: its references and their values) and one :class:`PolicyResult`
    per policy, in the order given. :meth:`to_dict` is the ``msj-gym-score/1`` document."""

    results: tuple[PolicyResult, ...]
    points: tuple[tuple[str, float], ...]
    seeds: tuple[int, ...]
    arrivals: int
    warmup: int
    scales: tuple[dict[str, Any], ...]
    version: str
    git_revision: str

    @property
    def score(self) -> float:
        """The combined score of the one policy scored (a ``ValueError`` if there were several)."""
        if len(self.results) != 1:
            raise ValueError(f"score: the report holds {len(self.results)} policies; read .results")
        return self.results[0].score

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "suite": SUITE if self._default_suite else f"{SUITE} (modified: see points, seeds, arrivals)",
            "points": [{"scenario": sc, "load": x} for sc, x in self.points],
            "seeds": list(self.seeds),
            "arrivals": self.arrivals,
            "warmup": self.warmup,
            "scale": "per run: 100 * (T_low - T) / (T_low - T_high) against the references' runs on the "
            "same seed, floored at 0; an unstable run scores 0",
            "combined": "score: the mean over points x seeds with a stratified-bootstrap 95% interval; "
            "iqm: the benchmark's interquartile mean",
            "scales": list(self.scales),
            "msj_gym": {"version": self.version, "git_revision": self.git_revision},
            "results": [r.to_dict() for r in self.results],
        }

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent)

    @property
    def _default_suite(self) -> bool:
        return (self.points, self.seeds, self.arrivals) == (SCORE_POINTS, SCORE_SEEDS, SCORE_ARRIVALS)


def _num(x: float) -> float | None:
    """A JSON number (NaN, which JSON has not, as null), rounded for reading."""
    return round(float(x), 4) if math.isfinite(x) else None


# ----------------------------------------------------------------------------- checking the inputs


@dataclass(frozen=True)
class _Target:
    """A policy to score, as given: ``how`` is ``"builtin"``, ``"file"``, ``"module"`` or ``"object"``
    (a Policy class or instance handed over in Python)."""

    spec: str
    how: str
    params: Mapping[str, Any]
    obj: Any = None


_NAME = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*$")


def _target(policy: Any, params: Mapping[str, Any]) -> _Target:
    """Check a policy to score before any work: a registered id that exists, a file that is there, a
    module that can be found, a Policy class or instance. One-line ``ValueError`` otherwise."""
    from .core.policy import Policy
    from .registry import make_policy, policy_ids, policy_spec

    if isinstance(policy, Policy) or (isinstance(policy, type) and issubclass(policy, Policy)):
        cls = policy if isinstance(policy, type) else type(policy)
        if params and not isinstance(policy, type):
            raise ValueError(f"params: a policy instance takes no parameters, got {sorted(params)}")
        given = params if isinstance(policy, type) else policy.param_values
        shown = ", ".join(f"{k}={v!r}" for k, v in given.items())
        # module:Class(its parameters): two instances of one class are two policies
        return _Target(f"{cls.__module__}:{cls.__qualname__}({shown})", "object", params, policy)
    if not isinstance(policy, str):
        raise ValueError(
            "score: expected a policy spec (FILE.py:Class, module:Class or a registered id) or a "
            f"Policy, got {type(policy).__name__}"
        )
    spec = policy.strip()
    if ":" not in spec:
        if spec not in policy_ids():
            raise ValueError(
                f"score: unknown policy {policy!r}: expected FILE.py:Class, module:Class or a registered "
                "id (msj-gym list)"
            )
        if not _suite_models() & set(policy_spec(spec).models):
            models = ", ".join(policy_spec(spec).models)
            raise ValueError(f"score {spec!r}: a policy of the {models} model, not of the MSJ queue")
        try:
            make_policy(spec, **params)
        except ValueError as exc:
            raise ValueError(f"score {spec!r}: {exc}") from None
        return _Target(spec, "builtin", params)
    head, _, attr = spec.rpartition(":")
    if not _NAME.match(attr):
        raise ValueError(f"score {spec!r}: expected a class or object name after the colon, got {attr!r}")
    if head.endswith(".py"):
        path = Path(head)
        if not path.is_file():
            why = "is a folder" if path.is_dir() else "does not exist"
            raise ValueError(f"score {spec!r}: the file {head!r} {why}")
        try:
            _file_module(path)
        except ValueError as exc:
            raise ValueError(f"score {spec!r}: {exc}") from None
        return _Target(spec, "file", params)
    if not _NAME.match(head):
        raise ValueError(f"score {spec!r}: expected FILE.py:Class or module:Class, got module {head!r}")
    top = head.split(".")[0]
    if top not in sys.modules and importlib.util.find_spec(top) is None:
        raise ValueError(
            f"score {spec!r}: no module {top!r} on the path (run from its folder, set PYTHONPATH, or give "
            "FILE.py:Class)"
        )
    return _Target(spec, "module", params)


def _suite_models() -> set[str]:
    """The models of the score suite's points (the MSJ queue's): a registered policy of no other is
    refused before any work."""
    from .experiments.tracks import scenario_model

    return {scenario_model(scenario) for scenario, _ in SCORE_POINTS}


def parse_score_points(points: str | Sequence[tuple[str, float]] | None) -> tuple[tuple[str, float], ...]:
    """``SCENARIO@LOAD,...`` or pairs: a subset of :data:`SCORE_POINTS`, in the suite's order (None:
    all of them). A point that is not the suite's is a one-line error naming it."""
    if points is None:
        return SCORE_POINTS
    items: list[Any] = [t.strip() for t in points.split(",")] if isinstance(points, str) else list(points)
    chosen: list[tuple[str, float]] = []
    for item in items:
        point: tuple[str, float] | None = None
        try:
            if isinstance(item, str):
                name, at, x = item.rpartition("@")
                point = (name, float(x)) if at and name else None
            else:
                name, x = item
                point = (str(name), float(x))
        except (TypeError, ValueError):
            point = None
        if point is None or point not in SCORE_POINTS:
            names = ", ".join(f"{sc}@{x:g}" for sc, x in SCORE_POINTS)
            raise ValueError(f"--points {item!r}: not a point of the score suite (its points: {names})")
        chosen.append(point)
    if not chosen or len(set(chosen)) != len(chosen):
        raise ValueError(f"--points {points!r}: expected distinct points of the score suite")
    return tuple(p for p in SCORE_POINTS if p in chosen)


def _seeds(seeds: str | int | Sequence[int] | None) -> tuple[int, ...]:
    from .experiments.leaderboard import parse_seeds

    if seeds is None:
        return SCORE_SEEDS
    try:
        chosen = parse_seeds(seeds)
    except (TypeError, ValueError) as exc:
        raise ValueError(
            str(exc) if str(exc).startswith("--seeds") else f"--seeds {seeds!r}: {exc}"
        ) from None
    if len(chosen) < 2:
        raise ValueError(f"--seeds {seeds!r}: the intervals need at least 2 seeds")
    for what, published in PUBLISHED_SEEDS.items():
        shared = sorted(set(chosen) & set(published))
        if shared:
            raise ValueError(
                f"--seeds {seeds!r}: seed {shared[0]} is one of {what}, published; a search scored on "
                f"them tunes on published numbers (the default is {SCORE_SEEDS[0]}-{SCORE_SEEDS[-1]})"
            )
    return chosen


def _config(
    points: str | Sequence[tuple[str, float]] | None,
    seeds: str | int | Sequence[int] | None,
    arrivals: int | None,
) -> BenchmarkConfig:
    from .experiments.benchmark import BenchmarkConfig

    n = SCORE_ARRIVALS if arrivals is None else arrivals
    if isinstance(n, bool) or not isinstance(n, int) or n < 100:
        raise ValueError(f"--arrivals: expected an integer >= 100, got {arrivals!r}")
    return BenchmarkConfig(points=parse_score_points(points), seeds=_seeds(seeds), arrivals=n)


def check_suite(
    *,
    seeds: str | int | Sequence[int] | None = None,
    arrivals: int | None = None,
    points: str | Sequence[tuple[str, float]] | None = None,
) -> tuple[int, ...]:
    """Check a suite's ``seeds``, ``arrivals`` and ``points`` as :func:`score` does, without any work
    (a one-line ``ValueError``); the seeds, parsed. For scripts that check their inputs first."""
    return _config(points, seeds, arrivals).seeds


def builtin_ids(points: str | Sequence[tuple[str, float]] | None = None) -> list[str]:
    """The built-in policies ``--builtin`` scores: every registered MSJ policy defined on some point of
    the suite (or of ``points``), but the exact optima (``mdp-optimal``, ``mdp-optimal-preemptive``:
    the scale's 100 where they are defined), in the registry's order."""
    from .experiments.benchmark import _policy_ids
    from .registry import supports
    from .workloads.scenarios import load_scenario

    workloads = [load_scenario(sc).build(load=x) for sc, x in parse_score_points(points)]
    # supports refuses a policy of another model first (a compatibility policy on a queue's workload)
    return [pid for pid in _policy_ids(True) if any(supports(pid, w) is None for w in workloads)]


# ----------------------------------------------------------------------------- the references


@dataclass
class _References:
    points: list[Point]
    rows: list[dict[str, Any]]
    owner: list[tuple[str, float]]
    kinds: dict[tuple[str, float], dict[str, str]]
    optima: dict[tuple[str, float], float]

    def __add__(self, other: _References) -> _References:
        kinds = {w: {**k, **other.kinds.get(w, {})} for w, k in self.kinds.items()}
        return _References(
            [*self.points, *other.points],
            [*self.rows, *other.rows],
            [*self.owner, *other.owner],
            kinds,
            {**self.optima, **other.optima},
        )


def _references(
    config: BenchmarkConfig, workers: int, progress: bool, preemptive: bool = False
) -> _References:
    """The built-in policies' runs on the suite and the exact optima, from the disk cache or made now
    (once for every process that needs them): the benchmark's entrants, the non-preemptive baselines
    (among them the references of the scale), or with ``preemptive`` the preemptive baselines alone (no
    reference; ``--builtin`` scores them, and some are slow where they are unstable)."""
    from .analysis.solutions import solver_version
    from .atomic import atomic_write_text, cache_folder, computed_once
    from .experiments.benchmark import _optima, _plan
    from .experiments.runner import run_points, scenario_content
    from .experiments.tracks.queueing import OPTIMUM_MAX_STATES

    points, kinds, owner = _plan(dataclasses.replace(config, preemptive=preemptive), {})
    if preemptive:
        chosen = [i for i, p in enumerate(points) if "preemptive" in kinds[owner[i]][p.series].split(", ")]
        points, owner = [points[i] for i in chosen], [owner[i] for i in chosen]
        kinds = {w: {e: k for e, k in by.items() if "preemptive" in k.split(", ")} for w, by in kinds.items()}
    identity = {
        "schema": SCHEMA,
        "config": config.identity(),
        "entrants": sorted({p.series for p in points}),
        "code": sorted({str(p.code) for p in points}),
        "content": sorted({scenario_content(p) for p in points}),
        "solver": f"{solver_version()}/{OPTIMUM_MAX_STATES}",
    }
    key = hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()[:16]
    folder = cache_folder("score")
    entry = folder / f"{'preemptive' if preemptive else 'references'}-{key}.json"
    data = _read_references(entry, points)
    if data is None:
        with computed_once(entry, "running the built-in policies on the score suite"):
            data = _read_references(entry, points)
            if data is None:
                what = "preemptive " if preemptive else ""
                kept = _writable(folder)
                later = (
                    f"later calls read them from {folder}" if kept else f"{folder} is not writable: not kept"
                )
                print(
                    f"msj-gym score: running the {len({p.series for p in points})} {what}built-in policies "
                    f"on the suite once ({len(points)} runs; {later})",
                    file=sys.stderr,
                    flush=True,
                )
                with tempfile.TemporaryDirectory(prefix="msj-gym-score-") as scratch:
                    runs = folder / key if kept else Path(scratch)
                    # a few short runs go faster here than in worker processes, which start by importing
                    many = len(points) * config.arrivals >= SMALL_BATCH
                    rows = run_points(points, runs / "runs.jsonl", progress, workers=workers if many else 1)
                    optima = {} if preemptive else _optima(runs, config, True)
                drop = ("key", "provenance", "content", "code", "options", "build", "params", "agent")
                data = {
                    "identity": identity,
                    "rows": [{k: v for k, v in r.items() if k not in drop} for r in rows],
                    "optima": [[sc, x, v] for (sc, x), v in optima.items()],
                }
                if kept:
                    atomic_write_text(entry, json.dumps(data))
                    shutil.rmtree(runs, ignore_errors=True)  # the entry holds what the scores need
    optima = {(str(sc), float(x)): float(v) for sc, x, v in data["optima"]}
    return _References(points, data["rows"], owner, kinds, optima)


def _writable(folder: Path) -> bool:
    """Whether this process can make ``folder`` and write in it (a read-only cache is not an error:
    the references are then made again on every call)."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".probe-"):
            return True
    except OSError:
        return False


def _read_references(entry: Path, points: Sequence[Point]) -> dict[str, Any] | None:
    """The cache entry, if it is there, whole, and holds one row per point of the plan, in its order
    (anything else is made again)."""
    try:
        data = json.loads(entry.read_text())
        rows = data["rows"]
        same = len(rows) == len(points) and all(
            (r["series"], r["scenario"], r["seed"]) == (p.series, p.scenario, p.seed)
            for r, p in zip(rows, points, strict=True)
        )
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return data if same else None


# ----------------------------------------------------------------------------- a policy, in a child


def _file_module(path: Path) -> str:
    """The module name ``path`` is imported by: its stem, which must not shadow a module of Python's or of
    an installed package this process has imported (a one-line ``ValueError`` before any work). A module of
    that name imported from a user's own file (another folder's ``policy.py``, an earlier edit) is replaced:
    the child imports the file named afresh."""
    name = path.stem
    old = sys.modules.get(name)
    if old is None:
        return name
    where = getattr(old, "__file__", None)
    if where is None or _installed(Path(where)):
        raise ValueError(
            f"the module name {name!r} of {str(path)!r} is taken by {where or 'a built-in module'}; rename "
            "the file"
        )
    return name


def _installed(path: Path) -> bool:
    """Whether ``path`` lies in Python's own library or an installed package's folder."""
    import sysconfig

    path = path.resolve()
    roots = {sysconfig.get_paths()[key] for key in ("stdlib", "platstdlib", "purelib", "platlib")}
    roots.add(str(Path(__file__).resolve().parent))
    return any(path.is_relative_to(Path(root).resolve()) for root in roots)


def _load(target: _Target) -> Policy:
    """Import (afresh) and make the policy ``target`` names; runs in the child."""
    from .core.policy import Policy
    from .registry import import_object, make_policy

    if target.how == "builtin":
        return make_policy(target.spec, **target.params)
    obj = target.obj
    head, _, attr = target.spec.rpartition(":")
    if target.how == "file":
        # imported by its own name from its folder, as `module:Class` run there imports it: numba's disk
        # cache of its kernel names the module, and a later process must be able to import that name
        path = Path(head).resolve()
        name = _file_module(path)
        sys.modules.pop(name, None)  # imported before, maybe edited since: import it as it is now
        folder = str(path.parent)
        if folder in sys.path:
            sys.path.remove(folder)
        sys.path.insert(0, folder)  # first: the file named, and the files beside it that it imports
        importlib.invalidate_caches()
        module = importlib.import_module(name)
        if Path(str(module.__file__)).resolve() != path:
            raise ImportError(f"the name {name!r} imports {module.__file__}, not {path}; rename the file")
        obj = import_object(f"{name}:{attr}", "policy")
    elif target.how == "module":
        old = sys.modules.get(head)
        if old is not None and not getattr(old, "__name__", "").startswith("msj_gym."):
            del sys.modules[head]  # imported before, maybe edited since: import it as it is now
        importlib.invalidate_caches()
        obj = import_object(target.spec, "policy")
    if isinstance(obj, type) and issubclass(obj, Policy):
        return obj(**target.params)
    if not isinstance(obj, Policy):
        raise TypeError(f"expected a Policy class or instance, got {type(obj).__name__}")
    if target.params:
        raise TypeError(f"an instance takes no parameters, got {sorted(target.params)}")
    return obj


def _run_candidate(
    target: _Target, config: BenchmarkConfig, refs: _References, time_limit: float
) -> dict[str, Any]:
    """Vet and run one policy in a forked child (:func:`msj_gym.testing.run_in_child`): its kind, the
    points it is not defined on, and its runs (rows aligned with the points of its runs)."""
    from .testing import run_in_child

    who = f"score {target.spec!r}"
    try:
        out: dict[str, Any] = run_in_child(
            _Candidate(target, _templates(refs), time_limit).stages(),
            who,
            hang_hint="an endless loop in its code?",
            crash_hint="an out-of-bounds read or write in its code?",
        )
    except AssertionError as exc:
        msg = " ".join(str(exc).split())
        raise PolicyRefused(msg if msg.startswith(who) else f"{who}: {msg}") from None
    return out


class _Candidate:
    """The stages of one policy's trip through the child process: imported and made, vetted as
    :func:`msj_gym.testing.check_policy` vets it (not a built-in: the tests check those), run at every
    point of ``templates`` it is defined on, and reported. The stages share this object's state in the
    child."""

    def __init__(
        self, target: _Target, templates: dict[tuple[str, float], list[Point]], time_limit: float
    ) -> None:
        self.target, self.templates, self.time_limit = target, templates, time_limit
        self.parent = os.getpid()
        self.policy: Any = None
        self.rows: list[dict[str, Any]] = []
        self.unsupported: dict[tuple[str, float], str] = {}

    def stages(self) -> list[tuple[str, Callable[[], Any], float]]:
        """(name, function, seconds) of each stage, in order."""
        limit = self.time_limit
        vet_limit = 3 * limit + 10  # check_policy's three steps, each within time_limit in a child of its own
        stages: list[tuple[str, Callable[[], Any], float]] = [("importing and making it", self.load, limit)]
        if self.target.how != "builtin":
            stages += [
                (_vetting(sc, x), functools.partial(self.vet, sc, x), vet_limit)
                for sc, x in VET_POINTS
                if any(w[0] == sc for w in self.templates)
            ]
        stages += [  # each run within the time limit: a slow policy's unstable run is not taken for a hang
            (f"its run at {sc}@{x:g}, seed {p.seed}", functools.partial(self.run, (sc, x), p), limit)
            for (sc, x), pts in self.templates.items()
            for p in pts
        ]
        stages.append(("reporting", self.report, limit))
        return stages

    def load(self) -> None:
        """Import and make the policy (named ``module:attr`` as worker runs name it), and find the
        points it is not defined on: all of them is a refusal."""
        import types

        from .experiments.runner import build_workload
        from .registry import supports

        if os.getpid() != self.parent:
            import faulthandler

            os.dup2(2, 1)  # what the policy prints goes to stderr: stdout carries the report
            faulthandler.disable()  # a crash of the policy's code is reported in one line, by the parent
        policy = _load(self.target)
        module = types.ModuleType(_MODULE)  # the runs name it module:attr, as worker runs do
        module.Candidate = type(policy)  # type: ignore[attr-defined]
        sys.modules[_MODULE] = module
        self.policy = policy
        for (sc, x), pts in self.templates.items():
            why = supports(policy, build_workload(sc, pts[0].build, pts[0].source))
            if why is not None:
                self.unsupported[(sc, x)] = why
        if len(self.unsupported) == len(self.templates):
            reason = next(iter(self.unsupported.values()))
            raise ValueError(f"defined on no point of the suite ({reason})")

    def vet(self, scenario: str, load: float) -> None:
        """:func:`~msj_gym.testing.check_policy` on ``scenario`` at ``load``, where it is defined on that
        system (at a load where sound policies are stable)."""
        from .testing import check_policy

        if any(w[0] == scenario and w not in self.unsupported for w in self.templates):
            try:
                check_policy(self.policy, scenario=scenario, load=load, time_limit=self.time_limit)
            except AssertionError as exc:
                raise AssertionError(f"{_vetting(scenario, load)}: {exc}") from None

    def run(self, where: tuple[str, float], template: Point) -> None:
        """Its run of ``template`` (a built-in entrant's run at ``where``, the policy swapped in)."""
        from .experiments.runner import run_point

        if where in self.unsupported:
            return
        mine = dataclasses.replace(
            template,
            series=_LABEL,
            policy=f"{_MODULE}:Candidate",
            params=dict(self.policy.param_values),
            code=None,
        )
        self.rows.append(run_point(mine))

    def report(self) -> dict[str, Any]:
        """What the parent scores: the policy's declarations, where it is not defined, its runs."""
        policy = self.policy
        return {
            "policy_id": str(policy.policy_id),
            "params": dict(policy.param_values),
            "preemptive": bool(policy.preemptive),
            "size_aware": bool(policy.reads_sizes()),
            "unsupported": self.unsupported,
            "rows": self.rows,
        }


def _vetting(scenario: str, load: float) -> str:
    return f"vetting it on {scenario} at load {load:g}"


def _templates(refs: _References) -> dict[tuple[str, float], list[Point]]:
    """Per suite point, the points of one built-in entrant's runs (one per seed): a policy scored here
    runs as they do, its policy swapped in (the same workload, seeds, run length and options)."""
    first: dict[tuple[str, float], str] = {}
    out: dict[tuple[str, float], list[Point]] = {}
    for p, where in zip(refs.points, refs.owner, strict=True):
        if first.setdefault(where, p.series) == p.series:
            out.setdefault(where, []).append(p)
    return out


# ----------------------------------------------------------------------------- scoring


def _scored(
    config: BenchmarkConfig, refs: _References, extra: Sequence[tuple[Point, dict[str, Any]]], kind: str
) -> dict[str, Any]:
    """The benchmark's scales and per-point scores of the references and, if ``extra`` runs are given,
    of the policy they are of (entrant :data:`_LABEL`, of ``kind``)."""
    from .experiments.benchmark import score as benchmark_score

    kinds = {w: dict(k) for w, k in refs.kinds.items()}
    owner = list(refs.owner)
    for p, _ in extra:
        kinds[(p.scenario, p.x)][_LABEL] = kind
        owner.append((p.scenario, p.x))
    return benchmark_score(
        config,
        [*refs.points, *(p for p, _ in extra)],
        [*refs.rows, *(r for _, r in extra)],
        kinds,
        refs.optima,
        {},
        owner,
        aggregates=False,
    )


def _result(
    spec: str,
    policy_id: str,
    params: Mapping[str, Any],
    entrant: str,
    config: BenchmarkConfig,
    report: dict[str, Any],
    unsupported: Mapping[tuple[str, float], str],
    seconds: float,
) -> PolicyResult:
    """One policy's :class:`PolicyResult` from the benchmark's rows of ``report``: its points (a point
    where it is not defined scores 0, ``n/a``), the mean with its interval, the IQM and P(improve)."""
    import numpy as np

    from .experiments.benchmark import iqm, probability_of_improvement, stratified_bootstrap_ci

    assert config.points is not None
    rows = {(r.scenario, r.load): r for r in report["points"] if r.entrant == entrant}
    best = {(s.scenario, s.load): s.best_heuristic for s in report["scales"]}
    heuristic = {(r.scenario, r.load, r.entrant): r.scores for r in report["points"]}
    n = len(config.seeds)
    points: list[PointResult] = []
    kind = ""
    for where in config.points:
        r = rows.get(where)
        if r is None:
            points.append(PointResult(where[0], where[1], 0.0, (0.0, 0.0), (0.0,) * n, math.nan, "n/a"))
            continue
        kind = r.kind
        column = np.array(r.scores, dtype=float)[:, None]
        ci = stratified_bootstrap_ci(_mean, column)
        points.append(
            PointResult(where[0], where[1], r.score, ci, tuple(float(x) for x in r.scores), r.value, r.flag)
        )
    m = np.array([p.scores for p in points], dtype=float).T  # seeds x points
    b = np.array([heuristic[(*w, best[w])] for w in config.points], dtype=float).T
    if kind == "" and unsupported:
        kind = "n/a"
    return PolicyResult(
        spec=spec,
        status="scored",
        policy_id=policy_id,
        kind=kind,
        params=dict(params),
        score=float(m.mean()),
        score_ci95=stratified_bootstrap_ci(_mean, m),
        iqm=iqm(m),
        iqm_ci95=stratified_bootstrap_ci(iqm, m),
        p_improve=float(probability_of_improvement(m, b)),
        p_improve_ci95=stratified_bootstrap_ci(probability_of_improvement, m, b),
        points=tuple(points),
        seconds=seconds,
    )


def _mean(m: np.ndarray) -> Any:
    """The mean of a (runs x points) matrix, one per matrix of a stack (for the bootstrap)."""
    return m.mean(axis=(-2, -1))


# ----------------------------------------------------------------------------- the entry point


def score(
    policy: Any,
    *,
    params: Mapping[str, Any] | None = None,
    seeds: str | int | Sequence[int] | None = None,
    arrivals: int | None = None,
    points: str | Sequence[tuple[str, float]] | None = None,
    time_limit: float = DEFAULT_TIME_LIMIT,
    workers: int | None = None,
    progress: bool = False,
) -> ScoreReport:
    """Score ``policy`` on the score suite (see the module docstring) and return the report.

    ``policy``: ``"FILE.py:Class"``, ``"module:Class"`` (a Policy class, made with ``params``, or an
    instance), a registered id (made with ``params``), a Policy class or instance, or a list of them.
    ``seeds`` (default :data:`SCORE_SEEDS`; at least 2, none of :data:`PUBLISHED_SEEDS`), ``arrivals``
    per run (default :data:`SCORE_ARRIVALS`) and ``points`` (a subset of :data:`SCORE_POINTS`) change
    the suite, and the report says so; ``time_limit`` bounds each step of a policy's vetting and each
    of its runs; ``workers`` processes make the built-in policies' runs the first time (default
    every core).

    Every input is checked before any work (a one-line ``ValueError``). A policy that fails its
    vetting or its runs is :class:`PolicyRefused` (a ``ValueError``, one line naming the spec and the
    step) when it is the only one; in a list, its result has ``status == "refused"`` and the others are
    scored."""
    from .experiments.runner import check_backend, provenance, warm_point
    from .registry import policy_class

    single = not isinstance(policy, list | tuple)
    targets = _targets([policy] if single else list(policy), dict(params or {}))
    if not (isinstance(time_limit, int | float) and not isinstance(time_limit, bool)) or not (
        math.isfinite(time_limit) and time_limit > 0
    ):
        raise ValueError(f"--time-limit: expected a positive number of seconds, got {time_limit!r}")
    workers = check_backend("local", workers)
    config = _config(points, seeds, arrivals)

    refs = _references(config, workers, progress)
    if any(t.how == "builtin" and not t.params and policy_class(t.spec).preemptive for t in targets):
        refs = refs + _references(config, workers, progress, preemptive=True)
    plain = _scored(config, refs, (), "")
    warm = False
    results: list[PolicyResult] = []
    for t in targets:
        start = time.perf_counter()
        if t.how == "builtin" and not t.params and any(p.series == t.spec for p in refs.points):
            results.append(_reference_result(t, config, refs, plain, start))
            continue
        if not warm:
            warm_point(refs.points[0])  # the engine loop, loaded here once: every child finds it compiled
            warm = True
        try:
            results.append(_candidate_result(t, config, refs, float(time_limit), start))
        except PolicyRefused as exc:
            if single:
                raise
            results.append(
                PolicyResult(t.spec, "refused", error=str(exc), seconds=time.perf_counter() - start)
            )
    prov = provenance()
    scales = tuple(_scale_record(s) for s in plain["scales"])
    assert config.points is not None
    return ScoreReport(
        results=tuple(results),
        points=config.points,
        seeds=config.seeds,
        arrivals=config.arrivals,
        warmup=config.warmup_arrivals,
        scales=scales,
        version=prov["version"],
        git_revision=prov["git_revision"],
    )


def _scale_record(s: Any) -> dict[str, Any]:
    """A point's scale as the report records it (its references and their values)."""
    return {
        "scenario": s.scenario,
        "load": s.load,
        "low_ref": s.low_ref,
        "t_low": _num(s.low),
        "high_ref": s.high_ref,
        "t_high": _num(s.high),
        "best_heuristic": s.best_heuristic,
    }


def _targets(items: list[Any], given: dict[str, Any]) -> list[_Target]:
    """The policies to score, each checked (:func:`_target`): at least one, none twice, ``given``
    parameters for one policy only."""
    if not items:
        raise ValueError("score: no policy given")
    if given and len(items) != 1:
        raise ValueError(f"params: apply to one policy, got {len(items)} policies")
    targets = [_target(x, given) for x in items]
    specs = [t.spec for t in targets]
    if len(set(specs)) != len(specs):
        twice = next(s for s in specs if specs.count(s) > 1)
        raise ValueError(f"score: {twice!r} given twice")
    return targets


def _reference_result(
    t: _Target, config: BenchmarkConfig, refs: _References, plain: dict[str, Any], start: float
) -> PolicyResult:
    """A built-in policy with its own parameters that the references ran already: their runs, scored."""
    from .registry import make_policy

    defined = {w for p, w in zip(refs.points, refs.owner, strict=True) if p.series == t.spec}
    missing = {w: "not defined here" for w in config.points or () if w not in defined}
    params = make_policy(t.spec).param_values
    return _result(t.spec, t.spec, params, t.spec, config, plain, missing, time.perf_counter() - start)


def _candidate_result(
    t: _Target, config: BenchmarkConfig, refs: _References, time_limit: float, start: float
) -> PolicyResult:
    """A policy vetted and run in a child (:func:`_run_candidate`), its runs scored beside the
    references' on the same scale; :class:`PolicyRefused` where it fails."""
    from .experiments.benchmark import _kind

    out = _run_candidate(t, config, refs, time_limit)
    # a policy scored is never a reference of the scale: the benchmark's kind of a policy of one's own
    kind = _kind(out["preemptive"], out["size_aware"], True)
    mine = [
        dataclasses.replace(p, series=_LABEL, code=None)
        for where, pts in _templates(refs).items()
        if where not in out["unsupported"]
        for p in pts
    ]
    report = _scored(config, refs, list(zip(mine, out["rows"], strict=True)), kind)
    seconds = time.perf_counter() - start
    result = _result(
        t.spec, out["policy_id"], out["params"], _LABEL, config, report, out["unsupported"], seconds
    )
    if t.how == "builtin":  # a built-in with parameters of its own: no user's policy
        result = dataclasses.replace(result, kind=_kind(out["preemptive"], out["size_aware"], False))
    return result
