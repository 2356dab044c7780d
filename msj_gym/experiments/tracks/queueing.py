"""The MSJ queue's track: the multiserver-job model's scenarios (built-ins, scenario files, SWF logs
``swf:FILE`` and GPU traces ``FORMAT:PATH``) at a sweep of loads, every policy registered on the queueing
engine and policies of the user's own (``module:attr``), agents through ``MSJ-v0`` /
``MSJPreemptive-v0``.

It ranks by any of :data:`METRICS` (the mean response time by default; the bounded slowdown, waiting
time, response-time percentiles, makespan, P(wait), utilisation). Its reference rows are the exact
optima of the point's Markov decision process over class counts, preemptive and not, where it is small
enough to solve (:func:`exact_optima`): each entrant is held to the optimum of what it may do, and
its gap to it is the "gap to optimum" column. Its standings bracket each entrant's empirical stability
limit over the load sweep next to the theoretical limit where its policy declares one
(:func:`msj_gym.registry.stability_limit`). Runs are the runner's queueing runs
(:func:`~msj_gym.experiments.runner.run_point`), keyed by the scenario's content.
"""

from __future__ import annotations

import math
import sys
import textwrap
from pathlib import Path
from typing import Any, ClassVar

from ...analysis.limits import DEFAULT_MAX_STATES
from ..report import fmt, render_table
from .base import Entrant, Metric, Row, Track, standings_title

__all__ = [
    "METRICS",
    "OPTIMUM_MAX_STATES",
    "TRACK",
    "QueueingTrack",
    "check_metric",
    "exact_optima",
    "is_trace_spec",
    "trace_jobs",
]

#: The metrics a leaderboard of the queue ranks by: label, whether higher is better, the run's own 95 %
#: half-width field (shown when there is one seed). Lower is better for all but the utilisation.
METRICS: dict[str, Metric] = {
    "mean_response_time": Metric("mean T", False, "ci95_half_width"),
    "weighted_mean_response_time": Metric("weighted T", False, "weighted_ci95_half_width"),
    "mean_waiting_time": Metric("mean wait", False, "waiting_ci95_half_width"),
    "mean_bounded_slowdown": Metric("bounded slowdown", False, "bounded_slowdown_ci95_half_width"),
    "response_time_p50": Metric("T p50", False, "response_time_p50_ci95_half_width"),
    "response_time_p95": Metric("T p95", False, "response_time_p95_ci95_half_width"),
    "response_time_p99": Metric("T p99", False, "response_time_p99_ci95_half_width"),
    "makespan": Metric("makespan", False),
    "p_wait": Metric("P(wait)", False),
    "utilization": Metric("utilisation", True),
}


def check_metric(metric: str) -> str:
    """``metric`` if the queue's leaderboard can rank by it, else a one-line error listing :data:`METRICS`."""
    if metric not in METRICS:
        raise ValueError(f"--metric: expected one of {', '.join(METRICS)}, got {metric!r}")
    return metric


def metric_of(run: dict[str, Any], metric: str) -> float:
    """A run's value of ``metric`` (NaN where the run has none: a row from before it was recorded, or
    a percentile without per-job records)."""
    value = run.get(metric)
    return float(value) if isinstance(value, int | float) and value is not None else math.nan


def is_trace_spec(scenario: str) -> bool:
    """Whether ``scenario`` names a trace replay: an SWF log ``swf:FILE`` or a GPU trace ``FORMAT:PATH``."""
    from ...workloads.gpu_traces import is_gpu_trace_spec
    from ...workloads.swf import is_swf_spec

    return is_gpu_trace_spec(scenario) or is_swf_spec(scenario)


_TRACE_JOBS: dict[str, int | None] = {}


def trace_jobs(scenario: str) -> int | None:
    """How many jobs the trace replay ``scenario`` (``swf:FILE``, ``FORMAT:PATH``) holds, None for a synthetic
    scenario. Read once per process (the trace itself is cached by :mod:`msj_gym.workloads.gpu_traces`)."""
    if scenario not in _TRACE_JOBS:
        if not is_trace_spec(scenario):
            return None
        from ...workloads.trace import replay_length
        from ..runner import resolve_scenario

        _TRACE_JOBS[scenario] = replay_length(resolve_scenario(scenario).build())
    return _TRACE_JOBS[scenario]


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
    from ...analysis.solutions import known_optimum, solved_table
    from ..runner import resolve_scenario

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
#: leaderboard.csv's columns, after the point and the entrant: each run metric's mean (and interval)
_CSV_VALUES = (
    ("mean_response_time", "mean_response_time"),
    ("ci95", "mean_response_time"),
    ("weighted_mean_response_time", "weighted_mean_response_time"),
    ("weighted_ci95", "weighted_mean_response_time"),
    ("p_wait", "p_wait"),
    ("utilization", "utilization"),
)
_CSV_MORE = (
    "mean_waiting_time",
    "mean_bounded_slowdown",
    "response_time_p50",
    "response_time_p95",
    "response_time_p99",
    "makespan",
)


def agent_sees_sizes(env_kwargs: dict[str, Any]) -> bool:
    """Whether an agent's decisions depend on job sizes: it observes them, its actions pack by them,
    or it may delegate to a size-aware advisor."""
    advisor = env_kwargs.get("advisor")
    if isinstance(advisor, str):
        from ...registry import make_policy

        advisor = make_policy(advisor)
    return (
        bool(env_kwargs.get("reveal_sizes", False))
        or env_kwargs.get("actions") == "priority-shortest"
        or bool(getattr(advisor, "size_aware", False))
    )


def _support_reason(pid: str, source: Any, load: float) -> str | None:
    """Why policy ``pid`` is not defined on the resolved scenario ``source`` at ``load`` (None if it
    is); module-level for the process pool of :meth:`QueueingTrack.prepare`."""
    from ...registry import supports

    return supports(pid, source.build(load=load))


def _warm_policy(pid: str, scenario: str, source: Any, load: float, params: dict[str, Any]) -> None:
    """Compile ``pid``'s decision rule (and, the first time, the engine loop) with a tiny run."""
    from ..runner import Point, warm_point

    warm_point(Point(pid, load, scenario, pid, 0, 50, build={"load": load}, params=params, source=source))


def _yes(flag: bool) -> str:
    return "yes" if flag else "no"


def _preempts(kind: str) -> bool:
    return "preemptive" in kind.split(", ")  # "preemptive", "agent, preemptive", "..., size-aware"


class QueueingTrack(Track):
    """The multiserver-job queue (and its trace replays): see the module docstring."""

    model = "msj"
    metrics: ClassVar[dict[str, Metric]] = METRICS
    exact_optimum = True
    own_policies = True
    checks_every_load = False  # a policy's support depends on the load only where it says so
    names_every_point = False
    md_note = " Unstable entrants rank last: their averages are over a growing queue."

    def check_metric(self, metric: str) -> str:
        return check_metric(metric)

    def is_trace(self, scenario: str) -> bool:
        return is_trace_spec(scenario)

    def trace_jobs(self, scenario: str) -> int | None:
        return trace_jobs(scenario)

    def resolve(self, scenario: str) -> Any:
        from ..runner import resolve_scenario

        return resolve_scenario(scenario)

    def policy_ids(self) -> list[str]:
        # the compatibility policies too: a group lists them as left out, not defined on this model
        from ...registry import ENGINE_MODELS, policy_ids

        return policy_ids(ENGINE_MODELS)

    def describe(self, policy: Any) -> tuple[bool, bool, tuple[str, ...]]:
        # its parameters may say how it decides (estimates, sizes)
        return bool(policy.preemptive), policy.reads_sizes(), policy.kind_notes()

    def prepare(
        self, config: Any, scenario: str, source: Any, by_load: list[str], ready: list[str], workers: int
    ) -> None:
        """Settle the policies whose support depends on the load (the exact optimum: solving it is what
        says whether it fits) at every load, and compile the other policies meanwhile, in ``workers``
        processes: the largest solve takes tens of seconds on one core, time in which the other cores
        compile. Solves land in the solver's disk cache and compiled code in numba's, from which the
        checks and runs that follow read them."""
        from ..runner import process_pool

        workload = source.build(load=config.loads[0])
        jobs = getattr(workload, "arrival_time", None)
        if getattr(workload, "finite", False) and jobs is not None and config.arrivals is not None:
            if len(jobs) < config.arrivals:
                print(
                    f"msj-gym: note: scenario {scenario!r} holds {len(jobs)} jobs, fewer than --arrivals "
                    f"{config.arrivals}: its runs end with the trace",
                    file=sys.stderr,
                )
        solves = sorted(((pid, source, rho) for pid in by_load for rho in config.loads), key=lambda j: -j[2])
        if workers < 2 or not solves:
            return
        rho = config.loads[0]
        with process_pool(min(workers, len(solves) + len(ready))) as pool:
            futures = [pool.submit(_support_reason, *job) for job in solves]  # largest first
            futures += [
                pool.submit(_warm_policy, pid, scenario, source, rho, dict(config.policy_params.get(pid, {})))
                for pid in ready
            ]
            for fut in futures:
                fut.result()

    def own_entrant(self, spec: str, scenario: str, source: Any, config: Any, labels: set[str]) -> Entrant:
        """The entrant of a policy of the user's own, ``module:attr`` (checked here: it imports, is a
        Policy, is defined on the workload, its id is not taken). Its runs carry the spec, and each worker
        imports the module itself."""
        from ...guard import vet_policy
        from ...registry import policy_from_spec, supports

        params = config.policy_params.get(spec, {})
        workload = source.build(load=config.loads[0])
        vet_policy(spec, "--policies", workload, params)  # in a child process, before it is imported here
        policy = policy_from_spec(spec, "--policies", **params)
        reason = supports(policy, workload)
        if reason is not None:
            raise ValueError(f"--policies: {spec!r} is not defined on scenario {scenario!r}: {reason}")
        label = policy.policy_id or spec
        if label in labels:
            raise ValueError(
                f"--policies: {spec!r} has the policy_id {label!r} of another entrant; "
                "give it an id of its own"
            )
        preemptive, sizes, notes = self.describe(policy)
        return Entrant(label, spec, None, preemptive, sizes, dict(params), notes)

    def agent_points(self, config: Any, scenario: str) -> list[tuple[str, dict[str, Any], str | None]]:
        # an agent's spaces do not change with the load: it is checked at the first
        return [(scenario, {"load": config.loads[0]}, None)]

    def agent_kind(self, loaded: Any) -> tuple[bool, bool, tuple[str, ...]]:
        # an agent is held to the optimum of what its env lets it do (preempt; see sizes)
        return loaded.env_id == "MSJPreemptive-v0", agent_sees_sizes(loaded.env_kwargs), loaded.notes

    def entrant_key(self, entrant: Entrant) -> str | None:
        from ..runner import entrant_key

        return entrant_key(entrant.policy or entrant.label, entrant.agent)

    def run_values(self, run: dict[str, Any]) -> dict[str, float]:
        out = {m: metric_of(run, m) for m in METRICS}
        out.update({f"T.{k}": v for k, v in run["per_class"].items()})
        out.update({f"slowdown.{k}": v for k, v in run.get("per_class_bounded_slowdown", {}).items()})
        return out

    def references(self, metric: str, scenario: str, x: float, source: Any) -> list[Row]:
        # the exact optimum is of the mean response time: a reference for that metric alone
        if metric != "mean_response_time":
            return []
        optima = exact_optima(scenario, x, source=source)
        # the preemptive row first, as the tables show them
        return [
            Row(scenario, x, OPTIMUM_LABEL, kind, 0, {"mean_response_time": (v, math.nan)}, True, 0, metric)
            for kind, v in reversed(optima.items())
        ]

    def gap_against(self, row: Row, entrant: Entrant, ref: Row) -> bool:
        # each entrant is held to the optimum of what it may do (an agent: what its env lets it do)
        return ref.kind == ("preemptive" if entrant.preemptive else "non-preemptive")

    def stability_workload(self, scenario: str, source: Any, x: float) -> Any:
        return source.build(load=x)

    def theory(self, entrant: Entrant, workload: Any) -> tuple[float, str] | None:
        # the theory a policy declares for itself (its parameters included)
        if not entrant.policy:
            return None
        from ...registry import policy_from_spec, stability_limit

        return stability_limit(policy_from_spec(entrant.policy, "policy", **entrant.params), workload)

    # ------------------------------------------------------------------------------------ presentation

    def head(self, config: Any, full: bool) -> list[str]:
        """The text tables fit :data:`TERMINAL_WIDTH` columns (for entrant names up to about 36
        characters): the kind as two columns (preempts, knows sizes), the weighted response time, P(wait)
        and the utilisation left to ``full``."""
        by_t = config.metric == "mean_response_time"
        ranked = f"{METRICS[config.metric].label} ± 95% CI"  # another metric: its column, ranked by it
        if full:
            head = ["rank", "entrant", "kind", *([] if by_t else [ranked])]
            head += ["mean T ± 95% CI", "weighted T ± CI", "P(wait)", "util"]
        else:
            head = ["rank", "entrant", "preempt", "sizes", "mean T ± 95% CI" if by_t else ranked]
        return [
            *head,
            "ratio to reference" if config.reference else "ratio to leader",
            "gap to optimum",
            "stable",
        ]

    def reference_cells(self, ref: Row, config: Any, full: bool) -> list[str]:
        # the exact optimum of the Markov decision process: a reference, not a simulated entrant
        if full:
            what = [OPTIMUM_LABEL, ref.kind, f"{ref.value:.4g}", "", "", ""]
        else:
            what = [OPTIMUM_SHORT, _yes(ref.kind == "preemptive"), "no", f"{ref.value:.4g}"]
        return ["-", *what, "", "+0.0 %", ""]

    def cells(self, r: Row, config: Any, full: bool) -> list[str]:
        if full:
            what = [
                r.kind,
                *([] if config.metric == "mean_response_time" else [fmt(r.value, r.value_ci95)]),
                fmt(r.mean("mean_response_time"), r.ci("mean_response_time")),
                fmt(r.mean("weighted_mean_response_time"), r.ci("weighted_mean_response_time")),
                f"{r.mean('p_wait'):.3f}",
                f"{r.mean('utilization'):.3f}",
            ]
        else:
            sizes = "size-aware" in r.kind.split(", ")
            what = [_yes(_preempts(r.kind)), _yes(sizes), fmt(r.value, r.value_ci95)]
        return [
            str(r.rank),
            r.entrant,
            *what,
            fmt(r.ratio, r.ratio_ci95, 3) + ("" if r.entrant != r.vs else " (ref)"),
            f"{100 * r.gap:+.1f} %" if math.isfinite(r.gap) else "n/a",
            "yes" if r.stable else "UNSTABLE",
        ]

    def standings_lines(self, report: dict[str, Any], scenario: str, full: bool, markdown: bool) -> list[str]:
        """A scenario's standings over the loads; in the narrow text form the theory sources are numbered
        notes under the table."""
        config = report["config"]
        st = [s for s in report["standings"] if s.scenario == scenario]
        title = standings_title(config, scenario)
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
        head = [
            "entrant",
            "preempt",
            "sizes",
            "mean rank",
            "stable load (empirical)",
            "limit (theory)",
            "source",
        ]
        out = render_table(title, head, table, markdown)
        notes = [f"[{i}] {source}" for i, source in enumerate(sources, 1)]
        return [*out[:-1], *notes, ""] if notes else out

    def skipped_lines(self, report: dict[str, Any], scenario: str, markdown: bool, after: bool) -> list[str]:
        skipped = report["skipped"].get(scenario)
        if not skipped or after == markdown:
            return []
        if markdown:
            return [
                "Not defined on this workload, left out:\n",
                *[f"- `{p}`: {why}" for p, why in skipped.items()],
                "",
            ]
        left_out = f"left out (not defined on {scenario}): {', '.join(skipped)}"
        return [textwrap.fill(left_out, TERMINAL_WIDTH, break_on_hyphens=False) + "\n"]

    def closing_lines(self, report: dict[str, Any], full: bool, markdown: bool) -> list[str]:
        lines = []
        if any(report["references"].values()):
            note = OPTIMUM_NOTE.replace(OPTIMUM_SHORT, OPTIMUM_LABEL) if full else OPTIMUM_NOTE
            lines.append(note if markdown else textwrap.fill(note, TERMINAL_WIDTH, break_on_hyphens=False))
        if not full:
            lines.append(
                "--wide: every column (kind, weighted T, P(wait), utilisation, theory sources in full)"
            )
        return lines

    def title(self) -> str:
        return "# msj_gym leaderboard"

    def csv(self, report: dict[str, Any]) -> tuple[list[str], list[list[Any]]]:
        head = ["scenario", "load", "entrant", "kind", "rank", *(c for c, _ in _CSV_VALUES)]
        head += ["stable", "seeds", "vs", "diff", "diff_ci95", "ratio", "ratio_ci95", "unstable_note", "gap"]
        head += ["metric", "value", "value_ci95", *_CSV_MORE, "per_class_bounded_slowdown"]
        rows = []
        for r in report["rows"]:
            values = [r.ci(m) if c.endswith("ci95") else r.mean(m) for c, m in _CSV_VALUES]
            paired = [r.vs, r.diff, r.diff_ci95, r.ratio, r.ratio_ci95, r.unstable_note, r.gap]
            ranked = [r.metric, r.value, r.value_ci95, *(r.mean(m) for m in _CSV_MORE)]
            point = [r.scenario, r.x, r.entrant, r.kind, r.rank]
            rows.append([*point, *values, r.stable, r.seeds, *paired, *ranked, r.classes("slowdown.")])
        return head, rows

    def plot(self, scenario: str, report: dict[str, Any], path: Path) -> Path | None:
        from ..leaderboard_plot import plot_scenario

        metric = report["config"].metric
        label = METRICS[metric].label if metric != "mean_response_time" else "mean response time"
        return plot_scenario(scenario, report, path, label)


TRACK = QueueingTrack()
