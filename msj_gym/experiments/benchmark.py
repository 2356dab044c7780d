"""The benchmark score: one number (with an interval) per scheduler over a fixed, versioned suite of points.

``msj-gym benchmark`` runs every entrant (the queue's non-preemptive baselines, with ``preemptive`` its
preemptive ones too, every policy of another model at that model's points, ``--agent``s and ``module:attr``
policies of your own) on every point of the suite, planned as each point's model's leaderboard plans a
sweep of that one point (:func:`.leaderboard.plan`: the same resumable ``runs.jsonl`` keyed by content
and code, the same job streams per seed for every entrant), and scores each run against the references'
runs on the same seed (paired, common random numbers)::

    score = 100 * (T_low - T) / (T_low - T_high)

* ``T_low`` (score 0): the model's naive policy (:data:`NAIVE`: FCFS on the queue, random assignment on
  compatibility graphs) where it is stable on every seed of the point, else the worst reference stable
  on every seed.
* ``T_high`` (score 100): on a queueing point the exact non-preemptive optimum of its Markov decision
  process where it is small enough to solve (:func:`.tracks.queueing.exact_optima`), else the best
  reference heuristic over the seeds; on a trace point (RLScheduler's protocol: run ``s`` is one
  sequence of the log) and on a moldable or compatibility point, the best reference on each seed.

The references are the queue's non-preemptive size-oblivious baselines (the information of the exact
optimum and of an ``MSJ-v0`` agent), or every policy of another model. Scores are floored at 0; an
unstable run scores 0 (flagged), and so does an agent at a point whose env it does not fit (``n/a``).
Each model is a section of its own (an entrant runs on its own model's points only). ``metric``
rescores the same runs on another metric (its 100 is then the best heuristic by that metric).

Aggregates follow ``rliable`` (Agarwal et al., NeurIPS 2021), with SciPy doing the statistics: the
interquartile mean over all runs (seeds x points) with a stratified-bootstrap 95 % interval, and the
probability of improvement over the best heuristic (Mann-Whitney, ties a half). Suite ``v1``: eight
queueing points (:data:`BENCHMARK_SUITE`); ``v2``: v1's, two trace points and eight moldable and
compatibility points, with a published train/test split (:data:`TRAIN_POINTS_V2`; the score is over the
test points); ``v3``: v2's and a GPU-cluster point. The tables and files are
:mod:`.benchmark_tables`'; ``docs/leaderboard.md`` is the guide.
"""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..analysis.solutions import KNOWN_POINTS
from ..atomic import atomic_write_text
from .benchmark_tables import (
    BOOTSTRAP_REPS,
    DEFAULT_METRIC,
    format_benchmark,
    output_names,
    score_matrix,
    write_benchmark,
)
from .leaderboard import LeaderboardConfig, parse_seeds, plan, run_track_points
from .report import config_difference
from .runner import Point, check_backend, hold_folder, provenance, scenario_content
from .tracks import HEADLINE_MODEL, MODELS, scenario_model, track
from .tracks.queueing import METRICS, check_metric, exact_optima, metric_of

if TYPE_CHECKING:
    from .tracks.base import Track

__all__ = [
    "BENCHMARK_SUITE",
    "QUICK",
    "SUITE_VERSION",
    "BenchmarkConfig",
    "format_benchmark",
    "iqm",
    "probability_of_improvement",
    "run_benchmark",
    "stratified_bootstrap_ci",
]

SUITE_VERSION = "v1"  # the default suite: it runs anywhere, with no trace to find
SUITE_VERSIONS = ("v1", "v2", "v3")
# (scenario, load): sf-fig2 and one-or-all at a low, a medium and a high load, the points whose exact
# optima ship with the package, then four-class at a lower load and its default.
BENCHMARK_SUITE: tuple[tuple[str, float], ...] = (*KNOWN_POINTS, ("four-class", 0.7), ("four-class", 0.912))
DEFAULT_SEEDS = 5
DEFAULT_ARRIVALS = 20_000
QUICK = {"seeds": 2, "arrivals": 2_000}  # --quick: a smoke test of the whole suite, not a score
EXCLUDED = ("mdp-optimal", "mdp-optimal-preemptive")  # the exact optimum is the scale's 100 already


@dataclass(frozen=True)
class SequencePoint:
    """A trace point of the suite: RLScheduler's evaluation protocol (:mod:`.sequences`) on a recorded
    log (``scenario``: a Parallel Workloads Archive log, ``swf:``, or a GPU-cluster trace). Run ``s`` of
    the point schedules one sequence of ``length`` consecutive jobs from an empty machine, its start
    drawn as the protocol draws it (from the log's first ``window`` jobs, or from all of them), so that
    every entrant schedules the same sequences; it is scored on ``metric`` (the HPC field's mean bounded
    slowdown on its logs, the mean job completion time on a GPU cluster's) unless the whole benchmark is
    scored on another metric. ``starts``: ``"rlscheduler"``, run ``s`` schedules the (s + 1)-th of
    RLScheduler's own sequences for its seed 1 (runs 0 to 9: the ten of its published table, in their
    order; :func:`~.sequences.rlscheduler_starts`); ``"generator"``, the one sequence a Generator seeded
    by ``s`` draws."""

    scenario: str
    length: int = 1024
    window: int | None = 10_000
    metric: str = "mean_bounded_slowdown"
    starts: str = "generator"

    def start(self, seed: int) -> int:
        """The first job of run ``seed``'s sequence."""
        from .sequences import sequence_starts, trace_replay

        jobs = int(trace_replay(self.scenario).arrival_time.size)
        if self.starts == "rlscheduler":
            drawn = sequence_starts(jobs, self.length, int(seed) + 1, 1, self.window, starts="rlscheduler")
            return int(drawn[-1])
        return int(sequence_starts(jobs, self.length, 1, int(seed), self.window)[0])

    def run_scenario(self, seed: int) -> str:
        """The scenario of run ``seed``: the log's jobs of its sequence (``start`` and ``length``)."""
        sep = "&" if "?" in self.scenario else "?"
        return f"{self.scenario}{sep}start={self.start(seed)}&length={self.length}"


#: The trace points by name. Suite v2's, each the protocol of RLScheduler's table (sequences of 1,024
#: jobs from the first 10,000 of the log, cleaned as its loader cleans them). Suite v3 adds a GPU
#: cluster's: sequences of 1,024 jobs of Alibaba's 2023 GPU trace (the ``openb_pod_list_default.csv``
#: of its cluster-trace-gpu-v2023, 6,203 GPU jobs of 1 to 8 GPUs once the CPU-only and never-scheduled
#: pods are left out) on 32 GPUs, the whole trace time-dilated to load 0.9, each sequence from anywhere
#: in the trace, scored on the mean job completion time.
SEQUENCE_POINTS: dict[str, SequencePoint] = {
    "swf-sdsc-sp2": SequencePoint(
        "swf:SDSC-SP2-1998-4.2-cln.swf.gz?need=max&cleaning=rlscheduler", starts="rlscheduler"
    ),
    "swf-hpc2n": SequencePoint(
        "swf:HPC2N-2002-2.2-cln.swf.gz?need=max&cleaning=rlscheduler", starts="rlscheduler"
    ),
    "gpu-alibaba-2023": SequencePoint(
        "openb:openb_pod_list_default.csv?num_servers=32&load=0.9",
        window=None,
        metric="mean_response_time",
    ),
}
# a trace point's "load" is its sequences' length in jobs (the log keeps its own timing)
TRACE_POINTS_V2: tuple[tuple[str, float], ...] = tuple(
    (n, float(SEQUENCE_POINTS[n].length)) for n in ("swf-sdsc-sp2", "swf-hpc2n")
)
#: Suite v3's GPU-cluster point (its trace is downloaded by the user: no GPU trace ships).
GPU_POINTS_V3: tuple[tuple[str, float], ...] = (
    ("gpu-alibaba-2023", float(SEQUENCE_POINTS["gpu-alibaba-2023"].length)),
)
#: Suite v2's points of the other two models the project simulates, each run by the model leaderboard's
#: machinery (its track, :mod:`.tracks`) and scored against that model's own policies. A moldable
#: point's x is its number of servers n (its regime sets the load), a compatibility point's its load.
#: Moldable: the sub-linear speed-up in the Halfin-Whitt regime at n = 100 and 1000 (the systems
#: ``ppo-moldable-hw`` was trained on: train points), at n = 4000 (the paper's size, never trained on)
#: and in the mean-field regime at n = 1000 (lam = 0.8, another regime; both test points).
#: Compatibility: random assignment to d = 2 or 3 of 100 servers (``ppo-assign-random-d`` was trained
#: on both at loads 0.6, 0.75 and 0.9): 003-random-3 at 0.75 and 003-random-2 at 0.9 (trained on: train
#: points), 003-random-2 at 0.7 (moderate) and 003-random-3 at 0.85 (heavy), loads it never saw (test).
MODEL_POINTS_V2: tuple[tuple[str, float], ...] = (
    ("002-sub-linear-halfin-whitt", 100.0),
    ("002-sub-linear-halfin-whitt", 1000.0),
    ("002-sub-linear-halfin-whitt", 4000.0),
    ("002-sub-linear-mean-field", 1000.0),
    ("003-random-2", 0.7),
    ("003-random-3", 0.75),
    ("003-random-2", 0.9),
    ("003-random-3", 0.85),
)
#: Suite v2's published split: the points an agent may be trained, tuned or selected on. Every other
#: point of v2 is a test point, and the score is the test points' (Procgen's and rliable's convention).
#: A point on a system and load a shipped agent was trained on is a train point.
TRAIN_POINTS_V2: tuple[tuple[str, float], ...] = (
    ("sf-fig2", 0.7),
    ("one-or-all", 0.7),
    ("four-class", 0.7),
    ("swf-sdsc-sp2", 1024.0),
    ("002-sub-linear-halfin-whitt", 100.0),
    ("002-sub-linear-halfin-whitt", 1000.0),
    ("003-random-3", 0.75),
    ("003-random-2", 0.9),
)
#: Per model, its policy of score 0 where it is stable on every seed: FCFS on the queue, the paper's
#: random assignment on compatibility graphs (FCFS over the servers each job draws). Elsewhere (and on
#: the moldable system, whose paper has no naive scheme) the worst reference stable on every seed.
NAIVE = {"msj": "fcfs", "compatibility": "compat-fcfs"}


def suite_points(suite: str) -> tuple[tuple[str, float], ...]:
    """The points of a suite version: v1's eight queueing points; v2's are v1's, the trace points and
    the moldable and compatibility points; v3's are v2's and the GPU-cluster point (a test point:
    v3's split is v2's)."""
    if suite not in SUITE_VERSIONS:
        raise ValueError(f"--suite: expected one of {', '.join(SUITE_VERSIONS)}, got {suite!r}")
    if suite == "v1":
        return BENCHMARK_SUITE
    gpu = GPU_POINTS_V3 if suite == "v3" else ()
    return (*BENCHMARK_SUITE, *TRACE_POINTS_V2, *gpu, *MODEL_POINTS_V2)


def point_model(point: tuple[str, float]) -> str:
    """The model a suite point is of (a trace point's is the queue's: it replays its log on it)."""
    return scenario_model(SEQUENCE_POINTS[point[0]].scenario if point[0] in SEQUENCE_POINTS else point[0])


def parse_points(text: str, suite: str) -> tuple[tuple[str, float], ...]:
    """``SCENARIO@X,...`` (``msj-gym benchmark --points``): a subset of ``suite``'s points, in the
    suite's order; a point that is not the suite's is a one-line error naming it."""
    known = suite_points(suite)
    chosen: list[tuple[str, float]] = []
    for item in (t.strip() for t in text.split(",")):
        name, at, x = item.rpartition("@")
        try:
            point = (name, float(x)) if at and name else None
        except ValueError:
            point = None
        if point is None or point not in known:
            names = ", ".join(f"{sc}@{v:g}" for sc, v in known)
            raise ValueError(f"--points {item!r}: not a point of suite {suite} (its points: {names})")
        chosen.append(point)
    if len(set(chosen)) != len(chosen):
        raise ValueError(f"--points {text!r}: the same point given twice")
    return tuple(p for p in known if p in chosen)


def point_split(suite: str, point: tuple[str, float]) -> str:
    """``"train"`` or ``"test"`` in a suite with a published split (v2, v3), ``""`` in one without
    (v1)."""
    if suite == "v1":
        return ""
    return "train" if (point[0], float(point[1])) in TRAIN_POINTS_V2 else "test"


@dataclass(frozen=True)
class BenchmarkConfig:
    """What a benchmark runs: the suite (``points``: the suite version's, or a subset such as
    :func:`parse_points` picks; a moldable or compatibility point is checked as its model leaderboard
    checks its sweep), seeds and run length, whether the preemptive baselines enter, the agent specs
    (shipped name, ``.zip`` path or ``module:attr``) and ``policies`` of your own (``module:attr``
    naming a Policy class or instance: scored, never a reference), and the ``metric`` the runs are
    scored on (not part of :meth:`identity`: it only rescores the runs)."""

    points: tuple[tuple[str, float], ...] | None = None  # None: the suite's (suite_points)
    seeds: tuple[int, ...] = tuple(range(DEFAULT_SEEDS))
    arrivals: int = DEFAULT_ARRIVALS
    warmup: int | None = None
    preemptive: bool = False
    agents: tuple[str, ...] = ()
    suite: str = SUITE_VERSION
    policies: tuple[str, ...] = ()
    bare_agents: bool = False  # admit checkpoints without their .json (see experiments.agents)
    metric: str = DEFAULT_METRIC

    def __post_init__(self) -> None:
        check_metric(self.metric)
        if isinstance(self.arrivals, bool) or not isinstance(self.arrivals, int) or self.arrivals < 100:
            raise ValueError(f"--arrivals: expected an integer >= 100, got {self.arrivals!r}")
        if self.points is None:
            object.__setattr__(self, "points", suite_points(self.suite))
        elif self.suite not in SUITE_VERSIONS:
            suite_points(self.suite)  # the one-line error
        assert self.points is not None
        object.__setattr__(self, "points", tuple((str(sc), float(rho)) for sc, rho in self.points))
        for sc, length in self.points:
            if sc in SEQUENCE_POINTS and length != SEQUENCE_POINTS[sc].length:
                raise ValueError(
                    f"benchmark point {sc}@{length:g}: a trace point's x is its sequences' length, "
                    f"{SEQUENCE_POINTS[sc].length}"
                )
            if sc not in SEQUENCE_POINTS:
                self._check_point(sc, length)
        object.__setattr__(self, "seeds", parse_seeds(self.seeds))
        if len(self.seeds) < 2:
            raise ValueError("--seeds: the bootstrap needs at least 2 seeds per point")
        if not self.points or len(set(self.points)) != len(self.points):
            raise ValueError("benchmark suite: expected distinct (scenario, load) points")
        if len(set(self.agents)) != len(self.agents):
            raise ValueError("--agent: the same agent given twice")
        object.__setattr__(self, "policies", tuple(self.policies))
        for spec in self.policies:
            if ":" not in spec:
                raise ValueError(
                    f"--policies: expected module:Class for a policy of your own (the baselines enter "
                    f"anyway), got {spec!r}"
                )
        if len(set(self.policies)) != len(self.policies):
            raise ValueError("--policies: the same policy given twice")

    def _check_point(self, scenario: str, x: float) -> None:
        """A point's x, checked as its model's leaderboard checks its sweep."""
        try:
            LeaderboardConfig(scenarios=(scenario,), loads=(x,), seeds=(0,), arrivals=100)
        except ValueError as exc:
            raise ValueError(f"benchmark point {scenario}@{x:g}: {exc}") from None

    def model_arrivals(self, model: str) -> int:
        """The run length at a point of ``model``: the same multiple of that model's leaderboard default
        as ``arrivals`` is of the queue's (the queue's ``arrivals``, the moldable system's 200,000 and the
        compatibility graphs' 20,000 at the default 20,000)."""
        return self.arrivals * track(model).default_arrivals // DEFAULT_ARRIVALS

    def model_warmup(self, model: str) -> int:
        """The warm-up at a point of ``model``, scaled as :meth:`model_arrivals`."""
        return self.warmup_arrivals * self.model_arrivals(model) // self.arrivals

    def section_points(self, model: str, part: str = "test") -> tuple[tuple[str, float], ...]:
        """The points of ``model`` in ``part`` of the split (``"test"``: every point not a train
        point, all of them in v1; ``"train"``)."""
        assert self.points is not None
        mine = [p for p in self.points if point_model(p) == model]
        if part == "train":
            return tuple(p for p in mine if self.split(p) == "train")
        return tuple(p for p in mine if self.split(p) != "train")

    @property
    def models(self) -> tuple[str, ...]:
        """The models of the suite's points, in :data:`MODELS` order."""
        assert self.points is not None
        present = {point_model(p) for p in self.points}
        return tuple(m for m in MODELS if m in present)

    @property
    def by_default_metric(self) -> bool:
        """Scored on the mean response time, the one metric whose exact optimum is known."""
        return self.metric == DEFAULT_METRIC

    def metric_at(self, scenario: str) -> str:
        """The metric a point is scored on: ``metric``, or a trace point's own (the mean bounded
        slowdown) where the benchmark is scored on the default metric; a moldable or compatibility
        point's is always its model leaderboard's ranked metric (the cost, the mean response time)."""
        if scenario in SEQUENCE_POINTS and self.by_default_metric:
            return SEQUENCE_POINTS[scenario].metric
        # a moldable or compatibility run has its model's metrics only: its leaderboard's ranked one
        on = track(point_model((scenario, 0.0)))
        return self.metric if self.metric in on.metrics else on.default_metric

    def model_of(self, point: tuple[str, float]) -> str:
        """The model a point of the suite is of (:func:`point_model`)."""
        return point_model(point)

    def is_trace(self, point: tuple[str, float]) -> bool:
        """Whether a point of the suite is a trace point (its runs are sequences of a log)."""
        return point[0] in SEQUENCE_POINTS

    def split(self, point: tuple[str, float]) -> str:
        """The point's part of the published split (``"train"``, ``"test"``; ``""`` in v1)."""
        return point_split(self.suite, point)

    @property
    def test_points(self) -> tuple[tuple[str, float], ...]:
        """The points the score is over: the test points of a suite with a split, else all."""
        assert self.points is not None
        return tuple(p for p in self.points if self.split(p) != "train")

    @property
    def train_points(self) -> tuple[tuple[str, float], ...]:
        assert self.points is not None
        return tuple(p for p in self.points if self.split(p) == "train")

    @property
    def warmup_arrivals(self) -> int:
        return self.warmup if self.warmup is not None else self.arrivals // 10

    def identity(self) -> dict[str, Any]:
        """What a folder's runs are comparable on (entrants may be added later)."""
        assert self.points is not None
        return {
            "suite": self.suite,
            "points": [[s, rho] for s, rho in self.points],
            "seeds": list(self.seeds),
            "arrivals": self.arrivals,
            "warmup": self.warmup_arrivals,
        }


@dataclass
class PointScore:
    """One entrant at one suite point."""

    scenario: str
    load: float
    entrant: str
    kind: str
    value: float  # the scored metric's mean over the seeds (the mean response time by default)
    scores: list[float]  # per seed
    flag: str = ""  # "", "unstable" (some seed), "n/a" (the agent does not run here, or no value)

    @property
    def score(self) -> float:
        return float(np.mean(self.scores))


@dataclass
class Scale:
    scenario: str
    load: float
    low: float
    low_ref: str
    high: float
    high_ref: str
    best_heuristic: str
    metric: str = DEFAULT_METRIC
    # a moldable or compatibility point: its model's reference row (the LP optimum, balanced fairness),
    # a bound or an expectation reported beside the scale, never its 100
    bound_ref: str = ""
    bound: float = math.nan


@dataclass
class Aggregate:
    entrant: str
    kind: str
    iqm: float
    iqm_lo: float
    iqm_hi: float
    mean: float
    p_improve: float
    p_lo: float
    p_hi: float
    flagged: list[str] = field(default_factory=list)  # "scenario@load: flag"


# ----------------------------------------------------------------------------- statistics (rliable)


def _stats() -> Any:
    """``scipy.stats``, or an ImportError saying how to install it."""
    try:
        from scipy import stats
    except ImportError:
        raise ImportError("the benchmark statistics need SciPy: pip install 'scipy>=1.11'") from None
    return stats


def iqm(scores: np.ndarray) -> Any:
    """Interquartile mean of all runs of a (runs x points) matrix: ``scipy.stats.trim_mean(x, 0.25,
    axis=None)`` (rliable's convention: ``int(0.25 * n)`` runs cut at each end). A stack of matrices
    (``..., runs, points``) gives one IQM per matrix."""
    x = np.asarray(scores, dtype=float)
    if x.ndim <= 2:
        return float(_stats().trim_mean(x, 0.25, axis=None))
    return _stats().trim_mean(x.reshape(*x.shape[:-2], -1), 0.25, axis=-1)


def probability_of_improvement(x: np.ndarray, y: np.ndarray) -> Any:
    """P(X > Y) of two (runs x points) matrices: the mean over points of the Mann-Whitney probability
    that a run of X beats a run of Y, ties a half (rliable's ``probability_of_improvement``). Stacks
    (``..., runs, points``) give one probability per pair of matrices."""
    a = np.asarray(x, dtype=float)[..., :, None, :]
    b = np.asarray(y, dtype=float)[..., None, :, :]
    p = ((a > b) + 0.5 * (a == b)).mean(axis=(-3, -2, -1))
    return float(p) if np.ndim(p) == 0 else p


def stratified_bootstrap_ci(
    statistic: Any, *matrices: np.ndarray, reps: int = BOOTSTRAP_REPS, seed: int = 0
) -> tuple[float, float]:
    """The 95 % percentile interval of ``statistic(*matrices)`` under the stratified bootstrap
    (rliable's ``StratifiedBootstrap``: each matrix's runs resampled within each point, independently).

    ``scipy.stats.bootstrap`` does the resampling, with every column (point) of every matrix as a
    sample of its own. ``statistic`` must take stacks of matrices (``..., runs, points``), as
    :func:`iqm` and :func:`probability_of_improvement` do, so that all resamples go in one call."""
    stats = _stats()
    mats = [np.asarray(m, dtype=float) for m in matrices]
    samples = [m[:, j] for m in mats for j in range(m.shape[1])]
    widths = np.cumsum([0] + [m.shape[1] for m in mats])

    def vectorised(*cols: np.ndarray, axis: int = -1) -> np.ndarray:
        stacked = np.stack([np.moveaxis(c, axis, -1) for c in cols], axis=-1)  # (..., runs, columns)
        return statistic(*(stacked[..., lo:hi] for lo, hi in itertools.pairwise(widths)))

    res = stats.bootstrap(
        samples,
        vectorised,
        n_resamples=reps,
        confidence_level=0.95,
        method="percentile",
        vectorized=True,
        **{_rng_keyword(): np.random.default_rng(seed)},
    )
    return float(res.confidence_interval.low), float(res.confidence_interval.high)


def _rng_keyword() -> str:
    """``rng`` since SciPy 1.15, ``random_state`` before."""
    import inspect

    return "rng" if "rng" in inspect.signature(_stats().bootstrap).parameters else "random_state"


# ----------------------------------------------------------------------------- running


def _policy_ids(preemptive: bool) -> list[str]:
    """The queue's baselines that enter (``--builtin`` of :mod:`msj_gym.scoring` too): the non-preemptive
    ones (and with ``preemptive`` the preemptive ones: the scale stays the non-preemptive one) but the
    exact optima, which are the scale's 100 already."""
    from ..registry import ENGINE_MODELS, policy_ids

    ids = policy_ids(ENGINE_MODELS, preemptive=None if preemptive else False)
    return [pid for pid in ids if pid not in EXCLUDED]


def _entrant_ids(on: Track, preemptive: bool) -> list[str]:
    """The registered policies that enter at a point of ``on``'s model: where its points have an exact
    optimum (the queue's), the heuristics (:func:`_policy_ids`: the optimum is the scale's 100), else
    every policy of the model."""
    return _policy_ids(preemptive) if on.exact_optimum else on.policy_ids()


def _check_agents(config: BenchmarkConfig) -> dict[str, dict[tuple[str, float], str]]:
    """Load every agent (an error if one does not load at all, its metadata is missing or wrong, or
    making it fails) and, per point, why it does not fit that point's environment (it then scores 0
    there). An agent that fits no point at all is refused: it would only score 0 everywhere."""
    from .agents import AgentError, agent_label, check_agent, load_agent

    assert config.points is not None
    unfit: dict[str, dict[tuple[str, float], str]] = {}
    labels: set[str] = set()
    several = len(config.models) > 1  # a module:attr agent may build on another model's env: asked to act
    for spec in config.agents:
        load_agent(spec, config.bare_agents)
        label = agent_label(spec)
        if label in labels:
            raise ValueError(f"--agent {spec!r}: a second entrant named {label!r}; rename the file")
        labels.add(label)
        unfit[spec] = {}
        failed: dict[str, AgentError] = {}  # model -> the agent's own failure on its env
        for point in config.points:
            model = point_model(point)
            try:
                for scenario, build, where, n in _agent_checks(config, point):
                    check_agent(
                        spec,
                        scenario,
                        build,
                        config.bare_agents,
                        num_arrivals=n,
                        where=where,
                        model=model,
                        probe=several,
                    )
            except AgentError as exc:
                failed.setdefault(model, exc)
                unfit[spec][point] = str(exc)
            except ValueError as exc:
                unfit[spec][point] = str(exc)
        fits = {point_model(p) for p in config.points if p not in unfit[spec]}
        for model, error in failed.items():
            # an agent that cannot be made on a model's env is broken, unless it is another model's
            # agent (a module:attr agent has no env of its own): it then only misfits that model
            if model in fits or not fits:
                raise error
        if len(unfit[spec]) == len(config.points):
            first = next(iter(unfit[spec].values())).removeprefix(f"--agent {spec!r}: ")
            raise ValueError(f"--agent {spec!r}: fits no point of the suite (e.g. {first})")
    return unfit


def _agent_checks(
    config: BenchmarkConfig, point: tuple[str, float]
) -> list[tuple[str, dict[str, Any], str, int]]:
    """Where an agent is checked at a suite point: (scenario, env keywords, where in words, arrivals).
    At a trace point every sequence (a class-set agent has room for 32 needs), elsewhere as the point's
    model's leaderboard checks it."""
    scenario, x = point
    if scenario in SEQUENCE_POINTS:
        sp = SEQUENCE_POINTS[scenario]
        runs = ((seed, sp.run_scenario(seed)) for seed in config.seeds)
        return [
            (run, {}, f"{scenario}, the sequence of seed {seed} ({run})", sp.length) for seed, run in runs
        ]
    lb = LeaderboardConfig(scenarios=(scenario,), loads=(x,), seeds=(0,), arrivals=100)
    where = f"benchmark point {scenario}@{x:g}"
    return [(s, build, where, 100) for s, build, _ in lb.track.agent_points(lb, scenario)]


def _kind(preemptive: bool, size_aware: bool, own: bool) -> str:
    """A policy's kind column: preemptive or not, and size-aware if it reads job sizes (a heuristic on
    a trace's requested times reads estimates it is given, not sizes)."""
    kind = ("preemptive" if preemptive else "non-preemptive") + (", size-aware" if size_aware else "")
    # a policy of the user's own is scored, never a reference: the scale must not depend on entrants
    return "user, " + kind if own else kind


def _plan(
    config: BenchmarkConfig, unfit: dict[str, dict[tuple[str, float], str]]
) -> tuple[list[Point], dict[tuple[str, float], dict[str, str]], list[tuple[str, float]]]:
    """Every run, per point the kind of each entrant (label -> kind), and the point of each run, the
    models in :data:`MODELS` order: a trace point's runs are its sequences; any other point is planned
    as its model's leaderboard plans a sweep of that one point (:func:`.leaderboard.plan`), with the
    benchmark's entrants and seeds, so that every entrant sees the same job streams (common random
    numbers)."""
    assert config.points is not None
    planner = _Planner(config)
    points: list[Point] = []
    owner: list[tuple[str, float]] = []
    kinds: dict[tuple[str, float], dict[str, str]] = {}
    for model in config.models:
        for point in (p for p in config.points if point_model(p) == model):
            agents = [a for a in config.agents if point not in unfit[a]]
            plan_point = planner.sequences if point[0] in SEQUENCE_POINTS else planner.point
            pts, kinds[point] = plan_point(point, agents)
            points += pts
            owner += [point] * len(pts)
    return points, kinds, owner


class _Planner:
    """The runs of each point of a benchmark: its ``config`` and the policies of the user's own, made
    once, each vetted where it first enters."""

    def __init__(self, config: BenchmarkConfig) -> None:
        from ..guard import vet_policy
        from ..registry import policy_from_spec

        for spec in config.policies:  # imported and made in a child process before this one imports it
            vet_policy(spec, "--policies")
        self.config = config
        self.own = {spec: policy_from_spec(spec, "--policies") for spec in config.policies}
        self.vetted: set[str] = set()

    def own_here(self, workload: Any) -> list[str]:
        """The policies of the user's own defined on ``workload`` (elsewhere they have no score, like a
        baseline), each vetted with a short bounds-checked run where it first enters."""
        from ..guard import vet_policy
        from ..registry import supports

        here = [spec for spec in self.config.policies if supports(self.own[spec], workload) is None]
        for spec in here:
            if spec not in self.vetted:
                vet_policy(spec, "--policies", workload)
                self.vetted.add(spec)
        return here

    def point(self, point: tuple[str, float], agents: list[str]) -> tuple[list[Point], dict[str, str]]:
        """The runs of a point of the queue or of another model: its model's leaderboard plan of the
        entrants defined there."""
        config = self.config
        scenario, x = point
        on = track(point_model(point))
        source = on.resolve(scenario)
        ids = _entrant_ids(on, config.preemptive)
        here = [pid for pid in ids if on.unsupported(pid, scenario, source, x) is None]
        if on.own_policies:
            here += self.own_here(source.build(load=x))
        lb = LeaderboardConfig(
            scenarios=(scenario,),
            loads=(x,),
            policies=tuple(here),
            agents=tuple(dict.fromkeys(agents)),
            seeds=config.seeds,
            arrivals=config.model_arrivals(on.model),
            warmup=config.model_warmup(on.model),
            bare_agents=True,  # admitted by _check_agents already
        )
        the_plan = plan(lb)
        kinds = {
            e.label: "agent" if e.agent else _kind(e.preemptive, e.size_aware, e.policy in self.own)
            for e in the_plan.entrants[scenario]
        }
        return the_plan.points, kinds

    def sequences(self, point: tuple[str, float], agents: list[str]) -> tuple[list[Point], dict[str, str]]:
        """The runs of a trace point: every entrant on the sequence of each seed."""
        from ..registry import make_policy, supports
        from .agents import agent_label
        from .runner import entrant_key
        from .sequences import trace_replay

        config, own = self.config, self.own
        scenario, rho = point
        sp = SEQUENCE_POINTS[scenario]
        workload = trace_replay(sp.scenario)
        here = [pid for pid in _policy_ids(config.preemptive) if supports(pid, workload) is None]
        here += self.own_here(workload)
        kinds: dict[str, str] = {}
        runs: list[tuple[str, str, str | None]] = []
        for pid in here:
            policy = own[pid] if pid in own else make_policy(pid)
            label = (policy.policy_id or pid) if pid in own else pid
            kinds[label] = _kind(policy.preemptive, policy.reads_sizes(), pid in own)
            runs.append((label, pid, None))
        for spec in agents:
            runs.append((agent_label(spec), agent_label(spec), spec))
            kinds[agent_label(spec)] = "agent"
        if len({label for label, *_ in runs}) < len(runs):
            raise ValueError(
                f"benchmark point {scenario}: two entrants share a name; give them ids of their own"
            )
        sequence = {seed: sp.run_scenario(seed) for seed in config.seeds}  # the same for every entrant
        points = []
        for label, policy_spec, agent in runs:
            code = entrant_key(policy_spec, agent)  # resolved once per entrant
            for seed in config.seeds:
                points.append(
                    Point(
                        series=label,
                        x=rho,
                        scenario=sequence[seed],
                        policy=policy_spec,
                        seed=seed,
                        num_arrivals=sp.length,
                        warmup=0,
                        agent=agent,
                        code=code,
                    )
                )
        return points, kinds


def _check_out(out: Path, config: BenchmarkConfig, writable: bool) -> None:
    path = out / "benchmark.json"
    if path.exists():
        diff = config_difference(path, config.identity())
        if diff == f"unreadable {path.name}":
            raise ValueError(
                f"--out {str(out)!r}: {path.name} there is not a benchmark's record (a JSON object with "
                "its config); delete it or use another --out"
            )
        if diff is not None:
            raise ValueError(
                f"--out {str(out)!r} holds a benchmark of another suite or run length ({diff}); "
                "use another --out, or rerun the same command to resume it"
            )
        return
    if (out / "runs.jsonl").exists() or (out / "leaderboard.json").exists():
        raise ValueError(f"--out {str(out)!r} holds runs of something else; use another --out")
    if not writable:
        raise ValueError(f"--out {str(out)!r}: not writable, and no benchmark there; use a writable --out")
    atomic_write_text(
        path, json.dumps({"config": config.identity(), "provenance": provenance()}, indent=2) + "\n"
    )


def _read_optima(path: Path, note: bool = True) -> dict[str, float | None]:
    """The record ``optima.json``: a table of point keys to a number or null. A file cut short or
    unreadable (a killed writer, a disk error) is written again, with a one-line note; valid JSON of
    another shape is someone else's file and is refused."""
    import sys

    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        why = exc.strerror if isinstance(exc, OSError) else type(exc).__name__
        if note:
            print(
                f"msj-gym: note: {str(path)!r} is unreadable ({why}); it is written again",
                file=sys.stderr,
            )
        return {}
    ok = isinstance(data, dict) and all(
        v is None or (isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v) and v > 0)
        for v in data.values()
    )
    if not ok:
        raise ValueError(
            f"{str(path)!r}: expected a table of point keys to optimal mean response times (or null), "
            f"got {type(data).__name__} {json.dumps(data)[:60]}; delete it or use another --out"
        )
    return data


def _optima(out: Path, config: BenchmarkConfig, writable: bool) -> dict[tuple[str, float], float]:
    """The exact non-preemptive optimum per point where there is one (:func:`.leaderboard.exact_optima`:
    shipped with the package at the suite's points, else from the solver's checked cache or solved),
    recorded in ``optima.json`` by the point's scenario content and the solver's code. The record is
    what the scores used; it is never read back as a value (a value edited there changes nothing: the
    folder is the user's, its files are not checked data)."""
    from ..analysis.solutions import solver_version
    from .tracks.queueing import OPTIMUM_MAX_STATES

    path = out / "optima.json"
    record = _read_optima(path)
    solver = f"{solver_version()}/{OPTIMUM_MAX_STATES}"
    result: dict[tuple[str, float], float] = {}
    assert config.points is not None
    for scenario, rho in config.points:
        if not track(point_model((scenario, rho))).exact_optimum or scenario in SEQUENCE_POINTS:
            continue  # a trace, a moldable or compatibility system: no MSJ Markov decision process
        content = scenario_content(Point("", rho, scenario, "", 0, 100, build={"load": rho}))
        optimum = exact_optima(scenario, rho).get("non-preemptive")
        record[f"{scenario}@{rho!r}#{content}#{solver}"] = optimum
        if optimum is not None:
            result[(scenario, rho)] = float(optimum)
    if writable:
        atomic_write_text(path, json.dumps(record, indent=2, sort_keys=True) + "\n")
    return result


def run_benchmark(
    config: BenchmarkConfig,
    out: Path,
    *,
    backend: str = "local",
    workers: int | None = None,
    address: str | None = None,
    progress: bool = True,
) -> dict[str, Any]:
    """Run (or resume) the benchmark into ``out``, write its tables and profile plot, and return
    ``{"scales", "points", "aggregates", "config", "files"}``."""
    workers = check_backend(backend, workers, address)
    from .sequences import trace_replay

    assert config.points is not None
    for name, x in config.points:  # a trace that is not there: named with its point, before any check
        if name in SEQUENCE_POINTS:
            try:
                trace_replay(SEQUENCE_POINTS[name].scenario)
            except ValueError as exc:
                raise ValueError(f"benchmark point {name}@{x:g}: {exc}") from None
    unfit = _check_agents(config)  # every check before anything is written
    points, kinds, owner = _plan(config, unfit)
    with hold_folder(out) as writable:
        _check_out(out, config, writable)
        _read_optima(out / "optima.json", note=False)  # another file of that name is refused before any run
        results: list[dict[str, Any]] = []
        for model in config.models:  # each model's runs with its own run function and content key
            mine = [p for p, where in zip(points, owner, strict=True) if point_model(where) == model]
            where = {"backend": backend, "workers": workers, "address": address}
            results += run_track_points(track(model), mine, out, progress, **where)
        # another metric's 100 is the best heuristic: no optimum to solve for it
        optima = _optima(out, config, writable) if config.by_default_metric else {}
        report = score(config, points, results, kinds, optima, unfit, owner)
        if writable:
            report["files"] = write_benchmark(out, report)
        else:
            report["files"] = [f for f in output_names(out, config.metric) if f.exists()]
    return report


# ----------------------------------------------------------------------------- scoring


def _heuristic(kind: str) -> bool:
    """A reference heuristic: non-preemptive and size-oblivious, the information of the exact optimum
    (a Markov decision process over class counts) and of an ``MSJ-v0`` agent."""
    return kind == "non-preemptive"


def score(
    config: BenchmarkConfig,
    points: Sequence[Point],
    results: Sequence[dict[str, Any]],
    kinds: dict[tuple[str, float], dict[str, str]],
    optima: dict[tuple[str, float], float],
    unfit: dict[str, dict[tuple[str, float], str]],
    owner: Sequence[tuple[str, float]] | None = None,
    *,
    aggregates: bool = True,
) -> dict[str, Any]:
    """Scales, per-point scores and aggregates of finished runs (see the module docstring), each point
    on its metric (:meth:`BenchmarkConfig.metric_at`); ``owner`` names the suite point of each run
    (default: its scenario and x). Without ``aggregates`` the sections' aggregates are left empty (their
    bootstrap is the costly part): the scales and the per-point scores alone."""

    owner = owner if owner is not None else [(p.scenario, p.x) for p in points]
    runs: dict[tuple[str, float], dict[str, dict[int, dict[str, Any]]]] = {}
    for p, r, where in zip(points, results, owner, strict=True):
        runs.setdefault(where, {}).setdefault(p.series, {})[p.seed] = r
    scales: list[Scale] = []
    rows: list[PointScore] = []
    assert config.points is not None
    for point in config.points:
        if track(point_model(point)).exact_optimum:
            scale, mine = _score_msj_point(config, *point, runs[point], kinds[point], optima)
        else:  # scored against its model's own policies
            scale, mine = _score_model_point(config, *point, runs[point], kinds[point])
        scales.append(scale)
        rows += mine
        rows += _unfit_rows(config, *point, unfit)
    # one section per model: an entrant runs on its own model's points only, so each model's points
    # are aggregated apart (the MSJ section is the score of v1, its numbers as before)
    sections: dict[str, dict[str, Any]] = {}
    for model in config.models:
        test, train = config.section_points(model, "test"), config.section_points(model, "train")
        outside = _outside(config, unfit, model)
        sections[model] = {
            "aggregates": _aggregate(test, rows, scales, outside) if test and aggregates else [],
            "train_aggregates": _aggregate(train, rows, scales, outside) if train and aggregates else [],
            "outside": sorted(outside),
        }
    # the headline model's section (the queue's: v1's score) is the report's headline
    msj = sections.get(HEADLINE_MODEL, {"aggregates": [], "train_aggregates": [], "outside": []})
    return {
        "config": config,
        "scales": scales,
        "points": rows,
        "aggregates": msj["aggregates"],
        "train_aggregates": msj["train_aggregates"],
        "sections": sections,
        "unfit": unfit,
    }


def _score_msj_point(
    config: BenchmarkConfig,
    scenario: str,
    rho: float,
    at: dict[str, dict[int, dict[str, Any]]],
    kind_of: dict[str, str],
    optima: dict[tuple[str, float], float],
) -> tuple[Scale, list[PointScore]]:
    """A queueing point's scale (0: FCFS or the worst stable heuristic, 100: the exact optimum or the
    best heuristic, per sequence on a sequence point) and each entrant's per-seed scores on it."""
    metric = config.metric_at(scenario)
    # lower is better but for the utilisation: rank by sign * value
    sign = -1.0 if METRICS[metric].higher_better else 1.0
    sequences = scenario in SEQUENCE_POINTS
    value = {e: {s: metric_of(r, metric) for s, r in by.items()} for e, by in at.items()}
    mean_v = {e: float(np.mean(list(v.values()))) for e, v in value.items()}
    if sequences:  # a sequence is scheduled to its last job: no steady state to reach or miss
        at = {e: {s: {**r, "stable": True} for s, r in by.items()} for e, by in at.items()}
    stable = {e: all(r["stable"] for r in by.values()) for e, by in at.items()}
    heuristics = [e for e in at if _heuristic(kind_of[e]) and stable[e] and math.isfinite(mean_v[e])]
    if not heuristics:
        raise ValueError(
            f"benchmark point {scenario}@{rho:g}: no heuristic is stable on every seed"
            + ("" if metric == DEFAULT_METRIC else f" with a value of {metric}")
        )
    best = min(heuristics, key=lambda e: sign * mean_v[e])
    if "fcfs" in heuristics:
        low_ref = "fcfs"
    else:
        low_ref = max(heuristics, key=lambda e: sign * mean_v[e])
    # the exact optimum is of the mean response time: never the 100 of another metric
    exact = optima.get((scenario, rho)) if metric == DEFAULT_METRIC else None
    lows = dict(value[low_ref])
    if sequences:
        # a sequence's jobs are few, and which heuristic is best changes from one sequence to the
        # next: its 100 is the best reference heuristic on that sequence (at or below FCFS's value)
        high_ref = "best heuristic per sequence"
        highs = {s: sign * min(sign * value[e][s] for e in heuristics) for s in config.seeds}
    else:
        high_ref = best if exact is None else "optimum (non-preemptive, exact)"
        highs = {s: value[best][s] if exact is None else exact for s in config.seeds}
    for s in config.seeds:
        empty = sequences and lows[s] == highs[s]  # every heuristic alike on it (no queue formed)
        if exact is not None and not sign * (lows[s] - highs[s]) > 0:
            # a run too short to stay above the optimum, a long-run mean (--quick at a heavy load):
            # that seed's 0 is the lower reference's mean over the seeds. Runs of the suite's
            # length never get here, so their scores are as before.
            lows[s] = mean_v[low_ref]
        if not (sign * (lows[s] - highs[s]) > 0 or empty):
            raise ValueError(
                f"benchmark point {scenario}@{rho:g}, seed {s}: the lower reference {low_ref} "
                f"({lows[s]:.4g}) is not worse than the upper one {high_ref} ({highs[s]:.4g}) by "
                f"{metric}; the scale is empty"
            )
    if sequences:
        high = float(np.mean(list(highs.values())))
    else:
        high = mean_v[best] if exact is None else exact
    scale = Scale(scenario, rho, mean_v[low_ref], low_ref, high, high_ref, best, metric)
    rows: list[PointScore] = []
    for e, by in at.items():
        scores = []
        for s in config.seeds:
            v = value[e][s]
            if e == low_ref:  # exactly, whatever the rounding
                x = 0.0
            elif e == best and exact is None and not sequences:
                x = 100.0
            elif by[s]["stable"] and math.isfinite(v):
                x = _scaled(v, lows[s], highs[s], sign)
            else:
                x = 0.0
            scores.append(max(x, 0.0))
        flag = "" if stable[e] else "unstable"
        if not flag and not all(math.isfinite(v) for v in value[e].values()):
            flag = "n/a"  # no value of the metric (an agent's percentiles: the env keeps no records)
        rows.append(PointScore(scenario, rho, e, kind_of[e], mean_v[e], scores, flag))
    return scale, rows


def _unfit_rows(
    config: BenchmarkConfig, scenario: str, x: float, unfit: dict[str, dict[tuple[str, float], str]]
) -> list[PointScore]:
    """An agent that does not fit a point scores 0 there, flagged ``n/a``."""
    from .agents import agent_label

    return [
        PointScore(scenario, x, agent_label(spec), "agent", math.nan, [0.0] * len(config.seeds), "n/a")
        for spec, where in unfit.items()
        if (scenario, x) in where
    ]


def _outside(config: BenchmarkConfig, unfit: dict[str, dict[tuple[str, float], str]], model: str) -> set[str]:
    """The agents that fit no point of ``model``'s section (another model's agents): they have no
    aggregate there, and are named as ``n/a`` beside it."""
    from .agents import agent_label

    assert config.points is not None
    mine = [p for p in config.points if point_model(p) == model]
    return {agent_label(spec) for spec, where in unfit.items() if all(p in where for p in mine)}


def _score_model_point(
    config: BenchmarkConfig,
    scenario: str,
    x: float,
    at: dict[str, dict[int, dict[str, Any]]],
    kind_of: dict[str, str],
) -> tuple[Scale, list[PointScore]]:
    """The scale and scores of a moldable or compatibility point, on its model's ranked metric
    (its track's ranked metric, lower is better). The references are the model's
    registered policies stable on every seed; score 0 is the naive one (compatibility: random assignment,
    ``compat-fcfs``; moldable: the weakest scheme by cost at the point, over the seeds), score 100 the
    best reference on each seed (attainable, as on the trace points); the model's reference row
    (its track's reference rows) is reported as ``bound``."""
    model = point_model((scenario, x))
    on = track(model)
    metric = on.default_metric
    value = {e: {s: on.run_values(r)[metric] for s, r in by.items()} for e, by in at.items()}
    mean_v = {e: float(np.mean(list(v.values()))) for e, v in value.items()}
    stable = {e: all(bool(r["stable"]) for r in by.values()) for e, by in at.items()}
    refs = [e for e in at if kind_of[e] != "agent" and stable[e] and math.isfinite(mean_v[e])]
    if not refs:
        raise ValueError(f"benchmark point {scenario}@{x:g}: no {model} policy is stable on every seed")
    best = min(refs, key=lambda e: mean_v[e])
    naive = NAIVE.get(model)
    low_ref = naive if naive in refs else max(refs, key=lambda e: mean_v[e])
    lows = value[low_ref]
    highs = {s: min(value[e][s] for e in refs) for s in config.seeds}
    bound = on.references(metric, scenario, x, None)
    scale = Scale(
        scenario,
        x,
        mean_v[low_ref],
        low_ref,
        float(np.mean(list(highs.values()))),
        f"best {model} policy per seed",
        best,
        metric,
        bound[0].entrant if bound else "",
        bound[0].value if bound else math.nan,
    )
    rows = []
    for e, by in at.items():
        scores = []
        for s in config.seeds:
            v = value[e][s]
            if e == low_ref:  # exactly, whatever the rounding
                sc = 0.0
            elif by[s]["stable"] and v == highs[s]:  # the best on this seed: exactly 100 (or 0 if naive)
                sc = 0.0 if lows[s] == highs[s] else 100.0
            elif by[s]["stable"] and math.isfinite(v):
                sc = _scaled(v, lows[s], highs[s], 1.0)  # lower is better on every model's metric
            else:
                sc = 0.0
            scores.append(max(sc, 0.0))
        rows.append(
            PointScore(scenario, x, e, kind_of[e], mean_v[e], scores, "" if stable[e] else "unstable")
        )
    return scale, rows


def _aggregate(
    points: Sequence[tuple[str, float]],
    rows: list[PointScore],
    scales: list[Scale],
    outside: set[str] | frozenset[str] = frozenset(),
) -> list[Aggregate]:
    """IQM, mean and P(improve on the best heuristic) per entrant over ``points``, best IQM first;
    the entrants ``outside`` (agents of another model) have none."""
    wanted = set(points)
    rows = [r for r in rows if (r.scenario, r.load) in wanted and r.entrant not in outside]
    by_point = {(s.scenario, s.load): s for s in scales}
    best = np.array(
        [
            next(
                r.scores
                for r in rows
                if (r.scenario, r.load, r.entrant) == (p[0], p[1], by_point[p].best_heuristic)
            )
            for p in points
        ],
        dtype=float,
    ).T
    out: list[Aggregate] = []
    for entrant in dict.fromkeys(r.entrant for r in rows):
        m = score_matrix(rows, entrant, points)
        mine = [r for r in rows if r.entrant == entrant]
        if m is None:  # not defined on every point (e.g. MSFQ needs one-or-all): no aggregate
            continue
        lo, hi = stratified_bootstrap_ci(iqm, m)
        p = probability_of_improvement(m, best)
        plo, phi = stratified_bootstrap_ci(probability_of_improvement, m, best)
        kinds = {r.kind for r in mine}
        out.append(
            Aggregate(
                entrant,
                mine[0].kind if len(kinds) == 1 else "/".join(sorted(kinds)),
                iqm(m),
                lo,
                hi,
                float(m.mean()),
                p,
                plo,
                phi,
                [f"{r.scenario}@{r.load:g}" + (" (n/a)" if r.flag == "n/a" else "") for r in mine if r.flag],
            )
        )
    out.sort(key=lambda a: (-a.iqm, -a.mean, a.entrant))
    return out


# ----------------------------------------------------------------------------- output


def _scaled(v: float, low: float, high: float, sign: float) -> float:
    """A stable run's value ``v`` on the seed's scale from ``low`` (0) to ``high`` (100), before the
    clamp at 0; ``sign`` -1 where higher is better. An empty scale (``low == high``, the naive policy as
    good as the best on that seed): 100 if ``v`` is as good as the best, else 0."""
    if low == high:
        return 100.0 if sign * (v - high) <= 0 else 0.0
    # (low - v) / (low - high) rises towards the high reference in either direction
    return 100 * (low - v) / (low - high)
