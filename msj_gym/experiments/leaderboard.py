"""Baseline leaderboards: scenarios x loads x (policies and agents) x seeds, paired, resumable, ranked.

Every entrant sees the same job streams for a seed (common random numbers: the job stream is drawn
from the seed alone, whatever the policy), so differences between entrants are paired comparisons:
per seed, the entrant's mean response time minus (or divided by) the reference's, then a Student-t
95 % interval over seeds. With one seed, each run's own batch-means interval is shown instead and
paired intervals are not available.

Ranking at a point (scenario, load): entrants stable on every seed first, by the ranked metric
(``metric``, the mean response time by default; any of :data:`METRICS`: the bounded slowdown, waiting
time, response-time percentiles, makespan, utilisation, ...); then the unstable ones, whose finite-run
averages are not steady-state values. The paired columns compare the ranked metric. Across a load sweep each
entrant's *empirical stability limit* is bracketed between the largest load up to which it was
stable on every seed and the first load at which it was not, next to the theoretical limit where a
theorem gives one (see :func:`msj_gym.registry.stability_limit`).

Outputs in ``out``: ``runs.jsonl`` (one row per run, appended as it finishes, with provenance and
the hashes of the scenario content and code it ran: a rerun after a scenario file, trace or the code
changed is refused, see :mod:`.runner`), ``leaderboard.json`` (the configuration: a rerun with another
one is refused), ``.msj-gym.lock`` (one writer at a time), ``leaderboard.md``,
``leaderboard.csv`` and ``leaderboard-<scenario>.png`` (response time vs load with CI bands,
per-class bars, the stability region).
"""

from __future__ import annotations

import json
import math
import os
import textwrap
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ..analysis.optimal import DEFAULT_MAX_STATES
from ..atomic import atomic_write_csv, atomic_write_text
from ..metrics.stats import replication_ci
from ..workloads.trace import TraceWorkload
from ..workloads.workload import Workload, check_load
from .leaderboard_plot import plot_scenario
from .report import check_out, fmt, render_table, scenario_slug
from .runner import Point, check_backend, hold_folder, provenance, run_points

__all__ = [
    "DEFAULT_ARRIVALS",
    "DEFAULT_LOADS",
    "DEFAULT_SCENARIO",
    "METRICS",
    "LeaderboardConfig",
    "format_tables",
    "parse_loads",
    "parse_seeds",
    "run_leaderboard",
]

DEFAULT_SCENARIO = "sf-fig2"
DEFAULT_LOADS = (0.5, 0.6, 0.7, 0.8, 0.9)
DEFAULT_ARRIVALS = 20_000  # per run of a synthetic scenario; a trace replay runs all its jobs
POLICY_GROUPS = ("all", "non-preemptive", "preemptive")
MAX_LOADS = 1000  # loads in one sweep, and below seeds per point: bounds a typo like a step of 1e-9
MAX_SEEDS = 100_000

#: The metrics a leaderboard can rank by: name -> (label, higher is better, the run's own 95 % half-width
#: field, shown when there is one seed). Lower is better for all but the utilisation.
METRICS: dict[str, tuple[str, bool, str | None]] = {
    "mean_response_time": ("mean T", False, "ci95_half_width"),
    "weighted_mean_response_time": ("weighted T", False, "weighted_ci95_half_width"),
    "mean_waiting_time": ("mean wait", False, "waiting_ci95_half_width"),
    "mean_bounded_slowdown": ("bounded slowdown", False, "bounded_slowdown_ci95_half_width"),
    "response_time_p50": ("T p50", False, "response_time_p50_ci95_half_width"),
    "response_time_p95": ("T p95", False, "response_time_p95_ci95_half_width"),
    "response_time_p99": ("T p99", False, "response_time_p99_ci95_half_width"),
    "makespan": ("makespan", False, None),
    "p_wait": ("P(wait)", False, None),
    "utilization": ("utilisation", True, None),
}


def check_metric(metric: str) -> str:
    """``metric`` if a leaderboard can rank by it, else a one-line error listing :data:`METRICS`."""
    if metric not in METRICS:
        raise ValueError(f"--metric: expected one of {', '.join(METRICS)}, got {metric!r}")
    return metric


def parse_loads(text: str | Sequence[float]) -> tuple[float, ...]:
    """``"0.5,0.7,0.9"`` or an inclusive range ``"0.5:0.9:0.1"`` (start:stop:step)."""
    if not isinstance(text, str):
        loads = tuple(float(x) for x in text)
    else:
        try:
            if ":" in text:
                parts = [float(x) for x in text.split(":")]
                if len(parts) != 3 or parts[2] <= 0:
                    raise ValueError
                start, stop, step = parts
                if not all(math.isfinite(x) for x in parts):
                    raise ValueError
                n = math.floor((stop - start) / step + 1e-9) + 1
                if n > MAX_LOADS:
                    raise ValueError(f"--loads: {text!r} gives {n} loads; the limit is {MAX_LOADS}")
                loads = tuple(round(start + i * step, 10) for i in range(max(n, 0)))
            else:
                loads = tuple(float(x) for x in text.split(",") if x.strip())
        except ValueError as exc:
            if str(exc).startswith("--loads"):
                raise
            raise ValueError(
                f"--loads: expected a list '0.5,0.7' or a range 'START:STOP:STEP', got {text!r}"
            ) from None
    if not loads:
        raise ValueError(f"--loads: the load sweep {text!r} is empty")
    if len(loads) > MAX_LOADS:
        raise ValueError(f"--loads: {len(loads)} loads; the limit is {MAX_LOADS}")
    for rho in loads:
        check_load(rho, "--loads")
    if len(set(loads)) != len(loads):
        raise ValueError(f"--loads: repeated load in {text!r}")
    return tuple(sorted(loads))


def parse_seeds(text: str | int | Sequence[int]) -> tuple[int, ...]:
    """A count ``"5"`` (seeds 0..4), a range ``"100-119"`` or a list ``"1,4,9"``."""
    if isinstance(text, bool):  # an int to Python, but no count of seeds (nor a list of them)
        raise TypeError(f"--seeds: expected a count, 'LO-HI' or a list, got {text!r}")
    if isinstance(text, int):
        text = str(text)
    if not isinstance(text, str):
        seeds = tuple(int(s) for s in text)
    else:
        try:
            if "-" in text:
                lo, hi = (int(x) for x in text.split("-", 1))
                count = hi + 1 - lo
            elif "," in text:
                seeds = tuple(int(x) for x in text.split(",") if x.strip())
                count = len(seeds)
            else:
                lo, count = 0, int(text)
        except ValueError:
            raise ValueError(f"--seeds: expected a count, 'LO-HI' or a list, got {text!r}") from None
        if count > MAX_SEEDS:  # checked before building the range
            raise ValueError(f"--seeds: {text!r} gives {count} seeds; the limit is {MAX_SEEDS}")
        if "," not in text:
            seeds = tuple(range(lo, lo + max(count, 0)))
    if not seeds or min(seeds) < 0 or len(set(seeds)) != len(seeds):
        raise ValueError(f"--seeds: expected distinct non-negative seeds, got {text!r}")
    return seeds


@dataclass(frozen=True)
class LeaderboardConfig:
    """What a leaderboard runs, and by which ``metric`` (of :data:`METRICS`) it ranks. ``policies``
    holds ids, groups (``all``, ``non-preemptive``, ``preemptive``) and ``module:attr`` specs of
    policies of your own (a Policy class or instance, run natively like the baselines); a group keeps
    the policies defined on each scenario's workload, a policy named on its own that is not defined
    there is an error. ``loads`` of None takes :data:`DEFAULT_LOADS`. ``arrivals`` of None runs
    :data:`DEFAULT_ARRIVALS` per run, and a trace replay all its jobs; ``warmup`` of None discards a
    tenth of what a run replays (:meth:`arrivals_for`, :meth:`warmup_for`)."""

    scenarios: tuple[str, ...] = (DEFAULT_SCENARIO,)
    loads: tuple[float, ...] = DEFAULT_LOADS
    policies: tuple[str, ...] = ("all",)
    agents: tuple[str, ...] = ()
    seeds: tuple[int, ...] = (0, 1, 2, 3, 4)
    arrivals: int | None = None
    warmup: int | None = None
    reference: str | None = None
    policy_params: dict[str, dict[str, Any]] = field(default_factory=dict)
    metric: str = "mean_response_time"
    bare_agents: bool = False  # admit checkpoints without their .json (see experiments.agents)

    def __post_init__(self) -> None:
        check_metric(self.metric)
        if not self.scenarios:
            raise ValueError("--scenario: at least one scenario is needed")
        if not self.policies and not self.agents:
            raise ValueError("--policies: no policy or agent to rank; give policy ids or a group")
        if self.arrivals is not None and (
            isinstance(self.arrivals, bool) or not isinstance(self.arrivals, int) or self.arrivals < 100
        ):
            raise ValueError(f"--arrivals: expected an integer >= 100, got {self.arrivals!r}")
        if self.warmup is not None:
            # a trace's own length is checked when it is read (check_run_length)
            synthetic = not all(is_trace_spec(s) for s in self.scenarios)
            most = self.arrivals if self.arrivals is not None else DEFAULT_ARRIVALS if synthetic else None
            if isinstance(self.warmup, bool) or not isinstance(self.warmup, int) or self.warmup < 0:
                raise ValueError(f"--warmup: expected an integer >= 0, got {self.warmup!r}")
            if most is not None and not self.warmup < most - 1:
                raise ValueError(f"--warmup: expected an integer in [0, {most - 1}), got {self.warmup!r}")
        object.__setattr__(self, "loads", parse_loads(self.loads))
        object.__setattr__(self, "seeds", parse_seeds(self.seeds))

    def arrivals_for(self, scenario: str) -> int:
        """The arrivals of each run on ``scenario``: ``arrivals``, else all the jobs of a trace replay,
        else :data:`DEFAULT_ARRIVALS`."""
        if self.arrivals is not None:
            return self.arrivals
        jobs = trace_jobs(scenario)
        return DEFAULT_ARRIVALS if jobs is None else jobs

    def warmup_for(self, scenario: str) -> int:
        """The arrivals each run on ``scenario`` discards: ``warmup``, else a tenth of the jobs it
        replays (a trace shorter than ``arrivals`` ends early: a tenth of the trace)."""
        if self.warmup is not None:
            return self.warmup
        jobs = trace_jobs(scenario)
        n = self.arrivals_for(scenario)
        return (n if jobs is None else min(n, jobs)) // 10

    def check_run_length(self, scenario: str) -> None:
        """A one-line error if a run on ``scenario`` would measure no job: a trace replay of fewer than 2
        jobs, or with no job left after the ``warmup`` given."""
        jobs = trace_jobs(scenario)
        if jobs is None:
            return
        if jobs < 2:
            raise ValueError(f"--scenario {scenario!r}: a trace replay needs 2 jobs or more, got {jobs}")
        if self.warmup is not None and not self.warmup < min(self.arrivals_for(scenario), jobs) - 1:
            raise ValueError(
                f"--warmup: {self.warmup} arrivals discarded leave no job of trace {scenario!r} to measure "
                f"({jobs} jobs); expected an integer in [0, {min(self.arrivals_for(scenario), jobs) - 1})"
            )

    def run_length(self) -> str:
        """The run length and warm-up in words (one clause if every scenario has the same)."""
        each = {s: (self.arrivals_for(s), self.warmup_for(s)) for s in self.scenarios}
        if len(set(each.values())) == 1:
            n, w = next(iter(each.values()))
            return f"{n} arrivals per run ({w} warm-up)"
        return "arrivals per run: " + "; ".join(f"{s} {n} ({w} warm-up)" for s, (n, w) in each.items())

    def identity(self) -> dict[str, Any]:
        """The fields that determine the results (not how they are run or shown). The run length and
        warm-up are resolved: one number where every scenario has the same (as before traces had
        their own), else one per scenario."""
        d = asdict(self)
        d.pop("reference")
        d.pop("metric")  # how the same runs are ranked
        d.pop("bare_agents")  # how agents are admitted; their runs are keyed by the checkpoint itself
        for key, of in (("arrivals", self.arrivals_for), ("warmup", self.warmup_for)):
            each = {s: of(s) for s in self.scenarios}
            d[key] = next(iter(each.values())) if len(set(each.values())) == 1 else each
        return json.loads(json.dumps(d))


_TRACE_JOBS: dict[str, int | None] = {}


def is_trace_spec(scenario: str) -> bool:
    """Whether ``scenario`` names a trace replay: an SWF log ``swf:FILE`` or a GPU trace ``FORMAT:PATH``."""
    from ..workloads.gpu_traces import is_gpu_trace_spec
    from ..workloads.swf import is_swf_spec

    return is_gpu_trace_spec(scenario) or is_swf_spec(scenario)


def trace_jobs(scenario: str) -> int | None:
    """How many jobs the trace replay ``scenario`` (``swf:FILE``, ``FORMAT:PATH``) holds, None for a synthetic
    scenario. Read once per process (the trace itself is cached by :mod:`msj_gym.workloads.gpu_traces`)."""
    if scenario not in _TRACE_JOBS:
        if not is_trace_spec(scenario):
            return None
        from ..workloads.trace import replay_length
        from .runner import resolve_scenario

        _TRACE_JOBS[scenario] = replay_length(resolve_scenario(scenario).build())
    return _TRACE_JOBS[scenario]


@dataclass
class Entrant:
    label: str
    policy: str | None  # policy id or module:attr, or None for an agent
    agent: str | None
    preemptive: bool
    size_aware: bool
    params: dict[str, Any]
    notes: tuple[str, ...] = ()  # how it decides, for the kind column (e.g. its run-time estimates)
    code: str = ""  # the key of what its runs depend on (runner.entrant_key), resolved once by the plan


def _agent_sees_sizes(env_kwargs: dict[str, Any]) -> bool:
    """Whether an agent's decisions depend on job sizes: it observes them, its actions pack by them,
    or it may delegate to a size-aware advisor."""
    advisor = env_kwargs.get("advisor")
    if isinstance(advisor, str):
        from ..registry import make_policy

        advisor = make_policy(advisor)
    return (
        bool(env_kwargs.get("reveal_sizes", False))
        or env_kwargs.get("actions") == "priority-shortest"
        or bool(getattr(advisor, "size_aware", False))
    )


def _support_reason(pid: str, source: Any, load: float) -> str | None:
    """Why policy ``pid`` is not defined on the resolved scenario ``source`` at ``load`` (None if it
    is); module-level for the process pool of :func:`_prepare`."""
    from ..registry import supports

    return supports(pid, source.build(load=load))


def _warm_policy(pid: str, scenario: str, source: Any, load: float, params: dict[str, Any]) -> None:
    """Compile ``pid``'s decision rule (and, the first time, the engine loop) with a tiny run."""
    from .runner import Point, warm_point

    warm_point(Point(pid, load, scenario, pid, 0, 50, build={"load": load}, params=params, source=source))


def _prepare(
    solve: list[str],
    compile_: list[str],
    scenario: str,
    source: Any,
    config: LeaderboardConfig,
    workers: int,
) -> None:
    """Settle the policies whose support depends on the load (the exact optimum: solving it is what
    says whether it fits) at every load, and compile the other policies meanwhile, in ``workers``
    processes: the largest solve takes tens of seconds on one core, time in which the other cores
    compile. Solves land in the solver's disk cache and compiled code in numba's, from which the
    checks and runs that follow read them."""
    from .runner import process_pool

    solves = sorted(((pid, source, rho) for pid in solve for rho in config.loads), key=lambda j: -j[2])
    if workers < 2 or not solves:
        return
    rho = config.loads[0]
    with process_pool(min(workers, len(solves) + len(compile_))) as pool:
        futures = [pool.submit(_support_reason, *job) for job in solves]  # largest first
        futures += [
            pool.submit(_warm_policy, pid, scenario, source, rho, dict(config.policy_params.get(pid, {})))
            for pid in compile_
        ]
        for fut in futures:
            fut.result()


def _entrants(
    config: LeaderboardConfig, scenario: str, workers: int = 1, source: Any = None
) -> tuple[list[Entrant], dict[str, str]]:
    """The entrants of ``scenario`` (resolved to ``source`` by the plan, else now) and the policies of a
    group left out (id -> reason)."""
    from ..registry import ENGINE_MODELS, list_policies, supports
    from .agents import agent_label, check_agent, load_agent
    from .runner import resolve_scenario

    known = list_policies(ENGINE_MODELS)
    source = resolve_scenario(scenario) if source is None else source
    workload = source.build(load=config.loads[0])
    jobs = getattr(workload, "arrival_time", None)
    if (
        getattr(workload, "finite", False)
        and jobs is not None
        and config.arrivals is not None
        and len(jobs) < config.arrivals
    ):
        import sys

        print(
            f"msj-gym: note: scenario {scenario!r} holds {len(jobs)} jobs, fewer than --arrivals "
            f"{config.arrivals}: its runs end with the trace",
            file=sys.stderr,
        )
    ids: list[str] = []
    specs: list[str] = []  # module:attr, policies of the user's own
    twice = next((p for p in config.policies if config.policies.count(p) > 1), None)
    if twice is not None:
        raise ValueError(f"--policies: {twice!r} is given twice")
    for item in config.policies:
        if item in POLICY_GROUPS:
            ids += [
                pid
                for pid, cls in known.items()
                if item == "all" or (item == "preemptive") == bool(cls.preemptive)
            ]
        elif item in known:
            ids.append(item)
        elif ":" in item:
            specs.append(item)
        else:
            raise ValueError(
                f"--policies: unknown policy {item!r}; known: {', '.join(known)} "
                f"(or a group: {', '.join(POLICY_GROUPS)}; or module:Class for a policy of your own)"
            )
    skipped: dict[str, str] = {}
    out: list[Entrant] = []
    unique = list(dict.fromkeys(ids))
    for key in config.policy_params:
        if key not in unique and key not in specs:
            raise ValueError(f"--policy-param: {key!r} is not an entrant here ({', '.join(unique + specs)})")
    by_load = [pid for pid in unique if getattr(known[pid], "support_depends_on_load", False)]
    # the others' support is settled now; the load-dependent ones' after _prepare has solved them
    first = {
        pid: supports(
            known[pid](**config.policy_params[pid]) if pid in config.policy_params else pid, workload
        )
        for pid in unique
        if pid not in by_load
    }
    _prepare(by_load, [pid for pid, why in first.items() if why is None], scenario, source, config, workers)
    for pid in unique:
        reason = first[pid] if pid in first else supports(pid, workload)
        if reason is None and pid in by_load:
            for rho in config.loads[1:]:
                reason = supports(pid, source.build(load=rho))
                if reason is not None:
                    reason = f"at load {rho:g}: {reason}"
                    break
        if reason is not None:
            if pid in config.policies:
                raise ValueError(f"--policies: {pid!r} is not defined on scenario {scenario!r}: {reason}")
            skipped[pid] = reason
            continue
        params = config.policy_params.get(pid, {})
        policy = known[pid](**params)  # its parameters may say how it decides (estimates, sizes)
        out.append(
            Entrant(
                pid, pid, None, bool(policy.preemptive), policy.reads_sizes(), params, policy.kind_notes()
            )
        )
    labels = {e.label for e in out}
    for spec in dict.fromkeys(specs):
        out.append(_own_entrant(spec, scenario, workload, config.policy_params.get(spec, {}), labels))
        labels.add(out[-1].label)
    for spec in config.agents:
        check_agent(spec, scenario, {"load": config.loads[0]}, bare=config.bare_agents)
        label = agent_label(spec)
        if label in labels:
            raise ValueError(f"--agent {spec!r}: a second entrant named {label!r}; rename the file")
        labels.add(label)
        loaded = load_agent(spec, config.bare_agents)
        # an agent is held to the optimum of what its env lets it do (preempt; see sizes)
        preempts = loaded.env_id == "MSJPreemptive-v0"
        sees_sizes = _agent_sees_sizes(loaded.env_kwargs)
        out.append(Entrant(label, None, spec, preempts, sees_sizes, {}, loaded.notes))
    if config.reference is not None and config.reference not in labels:
        raise ValueError(
            f"--reference: {config.reference!r} is not an entrant here ({', '.join(sorted(labels))})"
        )
    return out, skipped


def _own_entrant(
    spec: str, scenario: str, workload: Workload | TraceWorkload, params: dict[str, Any], labels: set[str]
) -> Entrant:
    """The entrant of a policy of the user's own, ``module:attr`` (checked here: it imports, is a
    Policy, is defined on the workload, its id is not taken). Its runs carry the spec, and each worker
    imports the module itself."""
    from ..guard import vet_policy
    from ..registry import policy_from_spec, supports

    vet_policy(spec, "--policies", workload, params)  # in a child process, before it is imported here
    policy = policy_from_spec(spec, "--policies", **params)
    reason = supports(policy, workload)
    if reason is not None:
        raise ValueError(f"--policies: {spec!r} is not defined on scenario {scenario!r}: {reason}")
    label = policy.policy_id or spec
    if label in labels:
        raise ValueError(
            f"--policies: {spec!r} has the policy_id {label!r} of another entrant; give it an id of its own"
        )
    return Entrant(
        label, spec, None, bool(policy.preemptive), policy.reads_sizes(), dict(params), policy.kind_notes()
    )


def plan(
    config: LeaderboardConfig, workers: int = 1
) -> tuple[list[Point], dict[str, list[Entrant]], dict[str, dict[str, str]]]:
    """Every run of the leaderboard, and per scenario its entrants and the policies left out
    (``workers`` processes settle the load-dependent ones, solving the exact optima in parallel).
    Each scenario is resolved once, here: its entrants are settled on that object and every run
    carries it (``Point.source``); each entrant's key of what its runs depend on is worked out once,
    here, and every run of it carries it (``Point.code``)."""
    from .runner import entrant_key, resolve_scenario

    points: list[Point] = []
    entrants: dict[str, list[Entrant]] = {}
    skipped: dict[str, dict[str, str]] = {}
    for scenario in config.scenarios:
        config.check_run_length(scenario)
        source = resolve_scenario(scenario)
        entrants[scenario], skipped[scenario] = _entrants(config, scenario, workers, source)
        for e in entrants[scenario]:
            e.code = entrant_key(e.policy or e.label, e.agent)
            for rho in config.loads:
                for seed in config.seeds:
                    points.append(
                        Point(
                            series=e.label,
                            x=rho,
                            scenario=scenario,
                            policy=e.policy or e.label,
                            seed=seed,
                            num_arrivals=config.arrivals_for(scenario),
                            build={"load": rho},
                            params=dict(e.params),
                            warmup=config.warmup_for(scenario),
                            agent=e.agent,
                            source=source,
                            code=e.code,
                        )
                    )
    return points, entrants, skipped


@dataclass
class Row:
    """One entrant at one point, aggregated over seeds."""

    scenario: str
    load: float
    entrant: str
    kind: str
    rank: int
    mean_response_time: float
    ci95: float
    weighted_mean_response_time: float
    weighted_ci95: float
    p_wait: float
    utilization: float
    stable: bool
    seeds: int
    vs: str  # the reference of the paired columns
    diff: float
    diff_ci95: float
    ratio: float
    ratio_ci95: float
    per_class: dict[str, float]
    unstable_note: str = ""
    gap: float = math.nan  # (T - T*) / T*, T* the exact optimum of the entrant's kind, where known
    metric: str = "mean_response_time"  # what ``rank``, ``value`` and the paired columns are about
    value: float = math.nan  # the ranked metric, mean over seeds
    value_ci95: float = math.nan
    mean_waiting_time: float = math.nan
    mean_bounded_slowdown: float = math.nan
    response_time_p50: float = math.nan
    response_time_p95: float = math.nan
    response_time_p99: float = math.nan
    makespan: float = math.nan
    per_class_bounded_slowdown: dict[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.metric == "mean_response_time" and math.isnan(self.value):
            self.value, self.value_ci95 = self.mean_response_time, self.ci95


def _mean(values: list[float]) -> tuple[float, float]:
    finite = [v for v in values if v is not None and math.isfinite(v)]
    if not finite:
        return math.nan, math.nan
    est = replication_ci(finite)
    return est.mean, est.ci95_half_width


def metric_of(run: dict[str, Any], metric: str) -> float:
    """A run's value of ``metric`` (NaN where the run has none: a row from before it was recorded, or
    a percentile without per-job records)."""
    value = run.get(metric)
    return float(value) if isinstance(value, int | float) and value is not None else math.nan


def _table(
    scenario: str,
    load: float,
    runs: dict[str, dict[int, dict[str, Any]]],
    entrants: list[Entrant],
    reference: str | None,
    metric: str = "mean_response_time",
) -> list[Row]:
    _, higher_better, own_ci = METRICS[metric]
    rows: list[Row] = []
    for e in entrants:
        by_seed = runs[e.label]
        seeds = sorted(by_seed)
        r = [by_seed[s] for s in seeds]
        t, t_ci = _mean([x["mean_response_time"] for x in r])
        w, w_ci = _mean([x["weighted_mean_response_time"] for x in r])
        if len(r) == 1:  # one replication: its own batch-means intervals
            t_ci, w_ci = r[0]["ci95_half_width"], r[0]["weighted_ci95_half_width"]
        value, value_ci = _mean([metric_of(x, metric) for x in r])
        if len(r) == 1 and own_ci is not None:
            value_ci = metric_of(r[0], own_ci)
        classes: dict[str, list[float]] = {}
        slowdowns: dict[str, list[float]] = {}
        for x in r:
            for name, v in x["per_class"].items():
                classes.setdefault(name, []).append(v)
            for name, v in x.get("per_class_bounded_slowdown", {}).items():
                slowdowns.setdefault(name, []).append(v)
        kind = "preemptive" if e.preemptive else "non-preemptive"
        if e.agent:
            kind = "agent, preemptive" if e.preemptive else "agent"
        if e.size_aware:
            kind += ", size-aware"
        kind += "".join(f", {note}" for note in e.notes)
        notes = [x.get("stability_note", "") for x in r if not x["stable"]]
        rows.append(
            Row(
                scenario=scenario,
                load=load,
                entrant=e.label,
                kind=kind,
                rank=0,
                mean_response_time=t,
                ci95=t_ci,
                weighted_mean_response_time=w,
                weighted_ci95=w_ci,
                p_wait=_mean([x["p_wait"] for x in r])[0],
                utilization=_mean([x["utilization"] for x in r])[0],
                stable=all(x["stable"] for x in r),
                seeds=len(r),
                vs="",
                diff=math.nan,
                diff_ci95=math.nan,
                ratio=math.nan,
                ratio_ci95=math.nan,
                per_class={k: _mean(v)[0] for k, v in classes.items()},
                unstable_note=notes[0] if notes else "",
                metric=metric,
                value=value,
                value_ci95=value_ci,
                mean_waiting_time=_mean([metric_of(x, "mean_waiting_time") for x in r])[0],
                mean_bounded_slowdown=_mean([metric_of(x, "mean_bounded_slowdown") for x in r])[0],
                response_time_p50=_mean([metric_of(x, "response_time_p50") for x in r])[0],
                response_time_p95=_mean([metric_of(x, "response_time_p95") for x in r])[0],
                response_time_p99=_mean([metric_of(x, "response_time_p99") for x in r])[0],
                makespan=_mean([metric_of(x, "makespan") for x in r])[0],
                per_class_bounded_slowdown={k: _mean(v)[0] for k, v in slowdowns.items()},
            )
        )
    sign = -1.0 if higher_better else 1.0
    rows.sort(key=lambda x: (not x.stable, sign * x.value if math.isfinite(x.value) else math.inf))
    for i, row in enumerate(rows, 1):
        row.rank = i
    # paired columns: against the reference, else against the leader of this point
    ref = reference or rows[0].entrant
    ref_runs = runs[ref]
    for row in rows:
        row.vs = ref
        common = sorted(set(runs[row.entrant]) & set(ref_runs))
        if row.entrant == ref:
            row.diff, row.diff_ci95, row.ratio, row.ratio_ci95 = 0.0, 0.0, 1.0, 0.0
            continue
        mine = [metric_of(runs[row.entrant][s], metric) for s in common]
        theirs = [metric_of(ref_runs[s], metric) for s in common]
        row.diff, row.diff_ci95 = _mean([a - b for a, b in zip(mine, theirs, strict=True)])
        row.ratio, row.ratio_ci95 = _mean([a / b for a, b in zip(mine, theirs, strict=True) if b > 0])
        if len(common) < 2:
            row.diff_ci95 = row.ratio_ci95 = math.nan
    return rows


@dataclass
class Standing:
    """One entrant across a scenario's load sweep."""

    scenario: str
    entrant: str
    kind: str
    mean_rank: float
    stable_up_to: float | None  # largest load up to which every point was stable
    unstable_from: float | None  # smallest load at which it was not
    theory: float | None
    theory_source: str

    @property
    def empirical(self) -> str:
        if self.unstable_from is None:
            return f">= {self.stable_up_to:g}"
        if self.stable_up_to is None:
            return f"< {self.unstable_from:g}"
        return f"in ({self.stable_up_to:g}, {self.unstable_from:g})"


def _standings(
    scenario: str, rows: list[Row], entrants: list[Entrant], loads: Sequence[float], source: Any = None
) -> list[Standing]:
    from ..registry import policy_from_spec, stability_limit
    from .runner import resolve_scenario

    workload = (resolve_scenario(scenario) if source is None else source).build(load=loads[0])
    out = []
    for e in entrants:
        mine = sorted((r for r in rows if r.entrant == e.label), key=lambda r: r.load)
        up_to = None
        first_bad = None
        for r in mine:
            if not r.stable:
                first_bad = r.load
                break
            up_to = r.load
        # the theory a policy declares for itself (its parameters included)
        theory = (
            stability_limit(policy_from_spec(e.policy, "policy", **e.params), workload) if e.policy else None
        )
        out.append(
            Standing(
                scenario=scenario,
                entrant=e.label,
                kind=mine[0].kind,
                mean_rank=sum(r.rank for r in mine) / len(mine),
                stable_up_to=up_to,
                unstable_from=first_bad,
                theory=theory[0] if theory else None,
                theory_source=theory[1] if theory else "",
            )
        )
    out.sort(key=lambda s: (-(s.unstable_from or math.inf), s.mean_rank))
    return out


def run_leaderboard(
    config: LeaderboardConfig,
    out: Path,
    *,
    backend: str = "local",
    workers: int | None = None,
    address: str | None = None,
    progress: bool = True,
) -> dict[str, Any]:
    """Run (or resume) the leaderboard into ``out``; write its tables and plots; return
    ``{"rows": [Row...], "standings": [Standing...], "skipped": {...}, "files": [...]}``.

    The whole command holds ``out`` (:func:`~.runner.hold_folder`): a second writer is refused. A
    finished leaderboard in a folder this process cannot write (read-only media) is recomputed from
    its runs and returned without writing anything; its ``files`` are the ones already there."""
    workers = workers if workers is not None else (os.cpu_count() or 1)
    check_backend(backend, workers, address)  # every check before check_out creates anything in ``out``
    points, entrants, skipped = plan(config, workers if backend == "local" else 1)
    with hold_folder(out) as writable:
        check_out(out, config, writable)
        results = run_points(
            points, out / "runs.jsonl", progress, backend=backend, workers=workers, address=address
        )
        report = _report(config, points, results, entrants, skipped)
        if writable:
            report["files"] = _write(out, report)
        else:  # a finished folder on read-only media: print it, write nothing
            report["files"] = [f for f in _output_names(out, config) if f.exists()]
    return report


def _output_names(out: Path, config: LeaderboardConfig) -> list[Path]:
    """The files :func:`_write` writes for ``config``."""
    names = [out / "leaderboard.md", out / "leaderboard.csv"]
    return names + [out / f"leaderboard-{scenario_slug(s, config.scenarios)}.png" for s in config.scenarios]


def _report(
    config: LeaderboardConfig,
    points: list[Point],
    results: list[dict[str, Any]],
    entrants: dict[str, list[Entrant]],
    skipped: dict[str, dict[str, str]],
) -> dict[str, Any]:
    """The ranked rows, standings and exact optima of a leaderboard's finished runs."""
    grouped: dict[tuple[str, float], dict[str, dict[int, dict[str, Any]]]] = {}
    sources: dict[str, Any] = {}  # each scenario as the plan resolved it
    for p, r in zip(points, results, strict=True):
        grouped.setdefault((p.scenario, p.x), {}).setdefault(p.series, {})[p.seed] = r
        sources.setdefault(p.scenario, p.source)
    rows: list[Row] = []
    standings: list[Standing] = []
    optima: dict[tuple[str, float], dict[str, float]] = {}
    for scenario in config.scenarios:
        mine = []
        # each entrant is held to the optimum of what it may do (an agent: what its env lets it do)
        preempts = {e.label: bool(e.preemptive) for e in entrants[scenario]}
        for rho in config.loads:
            at = _table(
                scenario, rho, grouped[(scenario, rho)], entrants[scenario], config.reference, config.metric
            )
            # the exact optimum is of the mean response time: a reference for that metric alone
            by_t = config.metric == "mean_response_time"
            optima[(scenario, rho)] = best = (
                exact_optima(scenario, rho, source=sources.get(scenario)) if by_t else {}
            )
            for row in at:
                exact = best.get("preemptive" if preempts[row.entrant] else "non-preemptive")
                if exact is not None:
                    row.gap = (row.mean_response_time - exact) / exact
            mine += at
        rows += mine
        standings += _standings(scenario, mine, entrants[scenario], config.loads, sources.get(scenario))
    return {"rows": rows, "standings": standings, "skipped": skipped, "config": config, "optima": optima}


#: The largest chain (states) the leaderboard and the benchmark solve for an exact optimum: the solver's
#: own default.
OPTIMUM_MAX_STATES = DEFAULT_MAX_STATES


def exact_optima(
    scenario: str, load: float, max_states: int = OPTIMUM_MAX_STATES, source: Any = None
) -> dict[str, float]:
    """The exact optimal mean response times (``"non-preemptive"``, ``"preemptive"``) of a scenario at a
    load, where the Markov decision process is small enough to solve (see
    :mod:`msj_gym.analysis.optimal`; shipped with the package at the benchmark's points, else solved once
    and cached on disk, the cache checked before use); an empty dict elsewhere. A solve estimated to
    take longer than ``msj-gym optimal``'s limit is not started: its row is left out with a one-line
    note on stderr. ``source``: the scenario as a plan resolved it (else the name is resolved now)."""
    import sys

    from ..analysis.solutions import known_optimum, solved_table
    from .runner import resolve_scenario

    workload = (resolve_scenario(scenario) if source is None else source).build(load=load)
    out: dict[str, float] = {}
    for kind, preemptive in (("non-preemptive", False), ("preemptive", True)):
        known = known_optimum(workload, preemptive)
        if known is not None:
            out[kind] = known
            continue
        try:
            out[kind] = float(
                solved_table(workload, preemptive, max_states=max_states)["value"]["mean_response_time"]
            )
        except ValueError as exc:
            if "over the limit" in str(exc):  # the rest: not exponential, or too large: no reference
                print(f"msj-gym: note: no {kind} optimum row: {exc}", file=sys.stderr, flush=True)
            continue
    return out


# The optimum of the Markov decision process over class counts: the best a scheduler that does not know
# job durations can do. A size-aware entrant may beat it (a negative gap), so its rows say so.
OPTIMUM_LABEL = "optimum over size-oblivious policies (exact)"
OPTIMUM_SHORT = "size-oblivious optimum"
OPTIMUM_NOTE = (
    f"{OPTIMUM_SHORT}: the exact optimum (Markov decision process) over the policies that do not know job "
    "durations, preemptive or not; a size-aware entrant can beat it (a negative gap)."
)
TERMINAL_WIDTH = 120  # the default text tables fit a 120-column terminal (wide=True: every column)


def _yes(flag: bool) -> str:
    return "yes" if flag else "no"


def _preempts(kind: str) -> bool:
    return "preemptive" in kind.split(", ")  # "preemptive", "agent, preemptive", "..., size-aware"


def format_tables(report: dict[str, Any], markdown: bool = False, wide: bool = False) -> str:
    """The ranked tables (one per scenario and load) and the standings, as text or Markdown.

    The text tables fit :data:`TERMINAL_WIDTH` columns (for entrant names up to about 36 characters):
    the kind as two columns (preempts, knows sizes), the weighted response time, P(wait) and the
    utilisation left to ``wide=True``, the standings' theory sources as numbered notes. ``wide=True`` and
    Markdown (``leaderboard.md``) have every column."""
    config: LeaderboardConfig = report["config"]
    full = markdown or wide
    lines: list[str] = []
    ref_word = "ratio to reference" if config.reference else "ratio to leader"
    by_t = config.metric == "mean_response_time"
    ranked = f"{METRICS[config.metric][0]} ± 95% CI"  # another metric: its column, ranked by it
    if full:
        head = ["rank", "entrant", "kind", *([] if by_t else [ranked])]
        head += ["mean T ± 95% CI", "weighted T ± CI", "P(wait)", "util"]
    else:
        head = ["rank", "entrant", "preempt", "sizes", "mean T ± 95% CI" if by_t else ranked]
    head += [ref_word, "gap to optimum", "stable"]
    any_optimum = False
    for scenario in config.scenarios:
        rows = [r for r in report["rows"] if r.scenario == scenario]
        if markdown:
            lines.append(f"## {scenario}\n")
            if report["skipped"].get(scenario):
                lines.append("Not defined on this workload, left out:\n")
                lines += [f"- `{pid}`: {why}" for pid, why in report["skipped"][scenario].items()]
                lines.append("")
        for rho in config.loads:
            at = [r for r in rows if r.load == rho]
            table = []
            for r in at:
                if full:
                    what = [
                        r.kind,
                        *([] if by_t else [fmt(r.value, r.value_ci95)]),
                        fmt(r.mean_response_time, r.ci95),
                        fmt(r.weighted_mean_response_time, r.weighted_ci95),
                        f"{r.p_wait:.3f}",
                        f"{r.utilization:.3f}",
                    ]
                else:
                    sizes = "size-aware" in r.kind.split(", ")
                    what = [_yes(_preempts(r.kind)), _yes(sizes), fmt(r.value, r.value_ci95)]
                table.append(
                    [
                        str(r.rank),
                        r.entrant,
                        *what,
                        fmt(r.ratio, r.ratio_ci95, 3) + ("" if r.entrant != r.vs else " (ref)"),
                        f"{100 * r.gap:+.1f} %" if math.isfinite(r.gap) else "n/a",
                        "yes" if r.stable else "UNSTABLE",
                    ]
                )
            for kind, value in report.get("optima", {}).get((scenario, rho), {}).items():
                # the exact optimum of the Markov decision process: a reference, not a simulated entrant
                any_optimum = True
                if full:
                    what = [OPTIMUM_LABEL, kind, f"{value:.4g}", "", "", ""]
                else:
                    what = [OPTIMUM_SHORT, _yes(kind == "preemptive"), "no", f"{value:.4g}"]
                table.insert(0, ["-", *what, "", "+0.0 %", ""])
            title = (
                f"{scenario}  load {rho:g}  ({len(config.seeds)} seeds x {config.arrivals_for(scenario)} "
                f"arrivals, {config.warmup_for(scenario)} warm-up)"
                + ("" if by_t else f"  ranked by {config.metric}")
            )
            lines += render_table(title, head, table, markdown)
        lines += _standings_table(report, scenario, full, markdown)
        if not markdown and report["skipped"].get(scenario):
            left_out = f"left out (not defined on {scenario}): {', '.join(report['skipped'][scenario])}"
            lines.append(textwrap.fill(left_out, TERMINAL_WIDTH, break_on_hyphens=False) + "\n")
    if any_optimum:
        note = OPTIMUM_NOTE.replace(OPTIMUM_SHORT, OPTIMUM_LABEL) if full else OPTIMUM_NOTE
        lines.append(note if markdown else textwrap.fill(note, TERMINAL_WIDTH, break_on_hyphens=False))
    if not full:
        lines.append("--wide: every column (kind, weighted T, P(wait), utilisation, theory sources in full)")
    return "\n".join(lines)


def _standings_table(report: dict[str, Any], scenario: str, full: bool, markdown: bool) -> list[str]:
    """A scenario's standings over the loads; in the narrow text form the theory sources are numbered
    notes under the table."""
    config: LeaderboardConfig = report["config"]
    st = [s for s in report["standings"] if s.scenario == scenario]
    title = f"{scenario}: standings over loads {', '.join(f'{x:g}' for x in config.loads)}"
    theory = ["n/a" if s.theory is None else f"{s.theory:.4g}" for s in st]
    if full:
        head = ["entrant", "kind", "mean rank", "stable load (empirical)", "stability limit (theory)"]
        table = [
            [s.entrant, s.kind, f"{s.mean_rank:.2f}", s.empirical, t, s.theory_source]
            for s, t in zip(st, theory, strict=True)
        ]
        return render_table(title, [*head, "theory source"], table, markdown)
    sources = list(dict.fromkeys(s.theory_source for s in st if s.theory_source))
    table = [
        [
            s.entrant,
            _yes(_preempts(s.kind)),
            _yes("size-aware" in s.kind.split(", ")),
            f"{s.mean_rank:.2f}",
            s.empirical,
            t,
            f"[{sources.index(s.theory_source) + 1}]" if s.theory_source else "",
        ]
        for s, t in zip(st, theory, strict=True)
    ]
    head = ["entrant", "preempt", "sizes", "mean rank", "stable load (empirical)", "limit (theory)", "source"]
    out = render_table(title, head, table, markdown)
    notes = [f"[{i}] {source}" for i, source in enumerate(sources, 1)]
    return [*out[:-1], *notes, ""] if notes else out


def _write(out: Path, report: dict[str, Any]) -> list[Path]:
    config: LeaderboardConfig = report["config"]
    files = []
    md = out / "leaderboard.md"
    intro = (
        "# msj_gym leaderboard\n\n"
        f"Scenarios {', '.join(config.scenarios)}; loads {', '.join(f'{x:g}' for x in config.loads)}; "
        f"seeds {', '.join(map(str, config.seeds))}; {config.run_length()}. Every entrant sees the same "
        "job streams per seed; ratios are "
        "paired per seed (Student-t 95 % CI over seeds). Unstable entrants rank last: their averages are "
        f"over a growing queue. Code {provenance()['git_revision']}.\n\n"
    )
    atomic_write_text(md, intro + format_tables(report, markdown=True))
    files.append(md)
    csv_path = out / "leaderboard.csv"
    fields = [f for f in Row.__dataclass_fields__ if f != "per_class"]
    atomic_write_csv(csv_path, fields, ([getattr(r, f) for f in fields] for r in report["rows"]))
    files.append(csv_path)
    for scenario in config.scenarios:
        label = METRICS[config.metric][0] if config.metric != "mean_response_time" else "mean response time"
        png = plot_scenario(
            scenario, report, out / f"leaderboard-{scenario_slug(scenario, config.scenarios)}.png", label
        )
        if png is not None:
            files.append(png)
    return files
