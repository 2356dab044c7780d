"""Leaderboards: scenarios x a sweep x (policies and agents) x seeds, paired, resumable, ranked, for every
model, written once.

``msj-gym leaderboard --scenario NAME`` ranks the policies (and agents) of the scenario's own model:
the multiserver-job queue at a sweep of loads (built-in scenarios, scenario files, SWF logs, GPU
traces), the moldable loss system at a sweep of system sizes, job-server compatibility graphs at a
sweep of loads. What differs per model, its entrants, how a point runs, its metrics and their
direction, its reference rows and its columns, is its track (:mod:`msj_gym.experiments.tracks`); this
module is the pipeline every track goes through: :func:`plan`, the runs
(:func:`~msj_gym.experiments.runner.run_points`), the tables and standings, :func:`format_tables` and
the files.

Every entrant sees the same job streams for a seed (common random numbers: the job stream is drawn
from the seed alone, whatever the policy), so differences between entrants are paired comparisons:
per seed, the entrant's ranked metric minus (or divided by) the reference's, then a Student-t 95 %
interval over seeds. With one seed, each run's own batch-means interval is shown instead and paired
intervals are not available.

Ranking at a point: entrants stable on every seed first, by the ranked metric (the track's default, or
``metric``); then the unstable ones, whose finite-run averages are not steady-state values. Across the
sweep each entrant's *empirical stability limit* is bracketed between the largest x up to which it was
stable on every seed and the first at which it was not, next to the theoretical limit where a theorem
gives one (see :func:`msj_gym.registry.stability_limit`).

Outputs in ``out``: ``runs.jsonl`` (one row per run, appended as it finishes, with provenance and
the hashes of the scenario content and code it ran: a rerun after a scenario file, trace or the code
changed is refused, see :mod:`.runner`), ``leaderboard.json`` (the configuration: a rerun with another
one is refused), ``.msj-gym.lock`` (one writer at a time), ``leaderboard.md``, ``leaderboard.csv`` and
``leaderboard-<scenario>.png``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ..atomic import atomic_write_csv, atomic_write_text
from ..workloads.workload import check_load
from .report import check_out, render_table, scenario_slug
from .runner import Point, check_backend, hold_folder, provenance, run_points
from .tracks import scenario_model, track
from .tracks.base import Entrant, Row, Standing, Track, over_seeds, point_title, rank_rows, relative_gap

__all__ = [
    "DEFAULT_SCENARIO",
    "LeaderboardConfig",
    "Plan",
    "format_tables",
    "parse_loads",
    "parse_seeds",
    "plan",
    "run_leaderboard",
]

DEFAULT_SCENARIO = "sf-fig2"
POLICY_GROUPS = ("all", "non-preemptive", "preemptive")
MAX_LOADS = 1000  # loads in one sweep, and below seeds per point: bounds a typo like a step of 1e-9
MAX_SEEDS = 100_000


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
    """What a leaderboard runs: ``scenarios`` of one model (their track: :attr:`track`); ``loads`` (the
    sweep: loads, or a moldable system's sizes; None: the track's default); ``policies``: ids, groups
    (``all``, ``non-preemptive``, ``preemptive``) and, on the queue, ``module:attr`` specs of policies of
    your own (a Policy class or instance, run natively like the baselines) — a group keeps the policies
    defined on each scenario, a policy named on its own that is not defined there is an error;
    ``agents`` (specs of :mod:`.agents`; ``bare_agents`` admits checkpoints without their ``.json``);
    ``seeds``; ``arrivals`` per run (None: the track's default, a trace replay all its jobs) and
    ``warmup`` (None: a tenth of what a run replays; :meth:`arrivals_for`, :meth:`warmup_for`);
    ``reference`` (the entrant of the paired columns; None: each point's leader); ``policy_params``
    (id -> parameters) and ``metric`` (of the track's; None: its default)."""

    scenarios: tuple[str, ...] = (DEFAULT_SCENARIO,)
    loads: tuple[float, ...] | None = None
    policies: tuple[str, ...] = ("all",)
    agents: tuple[str, ...] = ()
    seeds: tuple[int, ...] = (0, 1, 2, 3, 4)
    arrivals: int | None = None
    warmup: int | None = None
    reference: str | None = None
    policy_params: dict[str, dict[str, Any]] = field(default_factory=dict)
    metric: str | None = None  # resolved in __post_init__: the track's default where None
    bare_agents: bool = False  # admit checkpoints without their .json (see experiments.agents)

    def __post_init__(self) -> None:
        if not self.scenarios:
            raise ValueError("--scenario: at least one scenario is needed")
        if len({scenario_model(s) for s in self.scenarios}) != 1:
            raise ValueError(
                f"--scenario {', '.join(self.scenarios)!r}: one leaderboard ranks one model's scenarios; "
                "run the moldable, compatibility and MSJ scenarios separately"
            )
        on = self.track
        object.__setattr__(self, "metric", on.check_metric(self.metric or on.default_metric))
        for s in self.scenarios:
            on.check_scenario(s)
        if not self.policies and not self.agents:
            raise ValueError("--policies: no policy or agent to rank; give policy ids or a group")
        if self.arrivals is not None and (
            isinstance(self.arrivals, bool) or not isinstance(self.arrivals, int) or self.arrivals < 100
        ):
            raise ValueError(f"--arrivals: expected an integer >= 100, got {self.arrivals!r}")
        if self.warmup is not None:
            # a trace's own length is checked when it is read (check_run_length)
            synthetic = not all(on.is_trace(s) for s in self.scenarios)
            most = self.arrivals if self.arrivals is not None else on.default_arrivals if synthetic else None
            if isinstance(self.warmup, bool) or not isinstance(self.warmup, int) or self.warmup < 0:
                raise ValueError(f"--warmup: expected an integer >= 0, got {self.warmup!r}")
            if most is not None and not self.warmup < most - 1:
                raise ValueError(f"--warmup: expected an integer in [0, {most - 1}), got {self.warmup!r}")
        raw = self.loads if self.loads is not None else on.default_loads
        text = raw if isinstance(raw, str) else ",".join(f"{x:g}" for x in raw)
        object.__setattr__(self, "loads", on.check_loads(parse_loads(raw), text, self.scenarios))
        object.__setattr__(self, "seeds", parse_seeds(self.seeds))

    @property
    def track(self) -> Track:
        """The track of the scenarios' model."""
        return track(scenario_model(self.scenarios[0]))

    @property
    def sweep(self) -> tuple[float, ...]:
        """The loads (or system sizes), resolved."""
        assert self.loads is not None
        return self.loads

    def arrivals_for(self, scenario: str) -> int:
        """The arrivals of each run on ``scenario``: ``arrivals``, else all the jobs of a trace replay,
        else the track's default."""
        if self.arrivals is not None:
            return self.arrivals
        jobs = self.track.trace_jobs(scenario)
        return self.track.default_arrivals if jobs is None else jobs

    def warmup_for(self, scenario: str) -> int:
        """The arrivals each run on ``scenario`` discards: ``warmup``, else a tenth of the jobs it
        replays (a trace shorter than ``arrivals`` ends early: a tenth of the trace)."""
        if self.warmup is not None:
            return self.warmup
        jobs = self.track.trace_jobs(scenario)
        n = self.arrivals_for(scenario)
        return (n if jobs is None else min(n, jobs)) // 10

    def check_run_length(self, scenario: str) -> None:
        """A one-line error if a run on ``scenario`` would measure no job: a trace replay of fewer than 2
        jobs, or with no job left after the ``warmup`` given."""
        jobs = self.track.trace_jobs(scenario)
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
        """The fields that determine the results (not how they are run or shown), as ``leaderboard.json``
        records them. The run length and warm-up are resolved: one number where every scenario has the
        same (as before traces had their own), else one per scenario."""
        d = asdict(self)
        d.pop("reference")
        d.pop("metric")  # how the same runs are ranked
        d.pop("bare_agents")  # how agents are admitted; their runs are keyed by the checkpoint itself
        for key, of in (("arrivals", self.arrivals_for), ("warmup", self.warmup_for)):
            each = {s: of(s) for s in self.scenarios}
            d[key] = next(iter(each.values())) if len(set(each.values())) == 1 else each
        return json.loads(json.dumps(self.track.identity(self, d)))


# ---------------------------------------------------------------------------------------------------------
# The plan


@dataclass
class Plan:
    """Every run of a leaderboard (``points``, with the scenario of each as the configuration names it,
    ``owner``), and per scenario its entrants, the policies of a group left out (id -> reason) and the
    scenario object its runs build from (``sources``; None where each run builds its own)."""

    points: list[Point]
    owner: list[str]
    entrants: dict[str, list[Entrant]]
    skipped: dict[str, dict[str, str]]
    sources: dict[str, Any]


def plan(config: LeaderboardConfig, workers: int = 1) -> Plan:
    """Every run of the leaderboard, and per scenario its entrants and the policies left out
    (``workers`` processes settle the load-dependent ones, solving the exact optima in parallel).
    Each scenario is resolved once, here: its entrants are settled on that object and every run
    carries it (``Point.source``); each entrant's key of what its runs depend on is worked out once,
    here, and every run of it carries it (``Point.code``)."""
    on = config.track
    out = Plan([], [], {}, {}, {})
    for scenario in config.scenarios:
        config.check_run_length(scenario)
        source = out.sources[scenario] = on.resolve(scenario)
        entrants, out.skipped[scenario] = _entrants(config, scenario, source, workers)
        out.entrants[scenario] = entrants
        for e in entrants:
            e.code = on.entrant_key(e)
            for x in config.sweep:
                for seed in config.seeds:
                    out.points.append(
                        Point(
                            series=e.label,
                            x=x,
                            scenario=on.point_scenario(scenario),
                            policy=e.policy or e.label,
                            seed=seed,
                            num_arrivals=config.arrivals_for(scenario),
                            build=on.build(scenario, x),
                            params=dict(e.params),
                            warmup=config.warmup_for(scenario),
                            agent=e.agent,
                            source=source,
                            code=e.code,
                        )
                    )
                    out.owner.append(scenario)
    return out


def _policy_ids(config: LeaderboardConfig, scenario: str) -> tuple[list[str], list[str]]:
    """The registered ids ``policies`` names (groups expanded) and the ``module:attr`` policies of the
    user's own, each once; a policy of no group the track knows is a one-line error."""
    from ..registry import policy_class, policy_ids, policy_spec

    on = config.track
    known = on.policy_ids()
    twice = next((p for p in config.policies if config.policies.count(p) > 1), None)
    if twice is not None:
        raise ValueError(f"--policies: {twice!r} is given twice")
    ids: list[str] = []
    specs: list[str] = []
    for item in config.policies:
        if item in POLICY_GROUPS:
            preemptive = item == "preemptive"
            ids += [pid for pid in known if item == "all" or preemptive == bool(policy_class(pid).preemptive)]
        elif item in known:
            ids.append(item)
        elif ":" in item and on.own_policies:
            specs.append(item)
        else:
            groups = ", ".join(POLICY_GROUPS)
            own = "; or module:Class for a policy of your own" if on.own_policies else ""
            there = f"known on the {on.model} model: {', '.join(known)} (or a group: {groups}{own})"
            if item in policy_ids():
                models = ", ".join(policy_spec(item).models)
                why = f"defined on the {models} model, not on the {on.model} model of scenario {scenario!r}"
                raise ValueError(f"--policies {item!r}: {why}; {there}")
            if ":" in item:
                raise ValueError(
                    f"--policies {item!r}: policies of your own run on the queue's leaderboard only"
                )
            raise ValueError(f"--policies: unknown policy {item!r}; {there}")
    return list(dict.fromkeys(ids)), specs


def _entrants(
    config: LeaderboardConfig, scenario: str, source: Any, workers: int = 1
) -> tuple[list[Entrant], dict[str, str]]:
    """The entrants of ``scenario`` (resolved to ``source`` by the plan) and the policies of a group left
    out (id -> reason): the policies (each checked at the sweep's points, in parallel where the track
    prepares them), the policies of the user's own, the agents (each checked against the scenario's env
    before any run)."""
    from ..registry import policy_class, policy_spec

    on = config.track
    ids, specs = _policy_ids(config, scenario)
    for key in config.policy_params:
        if key not in ids and key not in specs:
            raise ValueError(f"--policy-param: {key!r} is not an entrant here ({', '.join(ids + specs)})")

    def made(pid: str) -> Any:  # the id alone where it has no parameters: nothing to import to ask
        if pid not in config.policy_params:
            return pid
        try:
            return policy_class(pid)(**config.policy_params[pid])
        except ValueError as exc:
            raise ValueError(f"--policy-param {pid!r}: {exc}") from None

    x0, *rest = config.sweep
    by_load = [
        pid
        for pid in ids
        if on.model in policy_spec(pid).models
        and getattr(policy_class(pid), "support_depends_on_load", False)
    ]
    # the others' support is settled now; the load-dependent ones' after the track prepared them
    first = {pid: on.unsupported(made(pid), scenario, source, x0) for pid in ids if pid not in by_load}
    on.prepare(config, scenario, source, by_load, [pid for pid, why in first.items() if why is None], workers)
    out: list[Entrant] = []
    skipped: dict[str, str] = {}
    for pid in ids:
        reason = first[pid] if pid in first else on.unsupported(made(pid), scenario, source, x0)
        if reason is not None and on.names_every_point:
            reason = f"{on.where(scenario, x0)}: {reason}"
        for x in rest if reason is None and (on.checks_every_load or pid in by_load) else ():
            reason = on.unsupported(made(pid), scenario, source, x)
            if reason is not None:
                reason = f"{on.where(scenario, x)}: {reason}"
                break
        if reason is not None:
            if pid in config.policies:
                raise ValueError(f"--policies: {pid!r} is not defined on scenario {scenario!r}: {reason}")
            skipped[pid] = reason
            continue
        params = config.policy_params.get(pid, {})
        preemptive, sizes, notes = on.describe(policy_class(pid)(**params))
        out.append(Entrant(pid, pid, None, preemptive, sizes, params, notes))
    labels = {e.label for e in out}
    for spec in dict.fromkeys(specs):
        out.append(on.own_entrant(spec, scenario, source, config, labels))
        labels.add(out[-1].label)
    out += _agent_entrants(config, scenario, labels)
    if not out:
        raise ValueError(f"--policies: no policy of {', '.join(config.policies)} is defined on {scenario!r}")
    if config.reference is not None and config.reference not in {e.label for e in out}:
        names = ", ".join(sorted(e.label for e in out))
        raise ValueError(f"--reference: {config.reference!r} is not an entrant here ({names})")
    return out, skipped


def _agent_entrants(config: LeaderboardConfig, scenario: str, labels: set[str]) -> list[Entrant]:
    """The agents of ``config``, each checked against the scenario's env where the track says (its
    model, spaces and keywords) before any run: one line naming the agent otherwise."""
    if not config.agents:  # a leaderboard of policies loads nothing of the agents' machinery
        return []
    from .agents import agent_label, check_agent, load_agent

    on = config.track
    out = []
    for spec in config.agents:
        for where_scenario, build, where in on.agent_points(config, scenario):
            check_agent(spec, where_scenario, build, config.bare_agents, where=where, model=on.model)
        label = agent_label(spec)
        if label in labels:
            raise ValueError(f"--agent {spec!r}: a second entrant named {label!r}; rename the file")
        labels.add(label)
        preemptive, sizes, notes = on.agent_kind(load_agent(spec, config.bare_agents))
        out.append(Entrant(label, None, spec, preemptive, sizes, {}, notes))
    return out


# ---------------------------------------------------------------------------------------------------------
# The runs, the tables and the standings


def run_leaderboard(
    config: LeaderboardConfig,
    out: Path,
    *,
    backend: str = "local",
    workers: int | None = None,
    address: str | None = None,
    progress: bool = True,
) -> dict[str, Any]:
    """Run (or resume) the leaderboard into ``out``; write its tables and plots; return ``{"rows":
    [Row...], "references": {(scenario, x): [Row...]}, "standings": [Standing...], "skipped": {...},
    "config": config, "files": [...]}``.

    Every input is checked before anything is written. The whole command holds ``out``
    (:func:`~.runner.hold_folder`): a second writer is refused. A finished leaderboard in a folder this
    process cannot write (read-only media) is recomputed from its runs and returned without writing
    anything; its ``files`` are the ones already there."""
    workers = check_backend(backend, workers, address)  # every check before check_out creates anything
    the_plan = plan(config, workers if backend == "local" else 1)
    with hold_folder(out) as writable:
        check_out(out, config, writable)
        where = {"backend": backend, "workers": workers, "address": address}
        results = run_track_points(config.track, the_plan.points, out, progress, **where)
        report = tables(config, the_plan, results)
        if writable:
            report["files"] = _write(out, report)
        else:  # a finished folder on read-only media: print it, write nothing
            report["files"] = [f for f in _output_names(out, config) if f.exists()]
    return report


def run_track_points(
    on: Track, points: Sequence[Point], out: Path, progress: bool, **where: Any
) -> list[dict[str, Any]]:
    """Run (or resume) ``points`` of ``on``'s model into ``out/runs.jsonl`` with the track's run function
    and content key; ``where``: the ``backend``, ``workers`` and ``address`` of
    :func:`~.runner.run_points`."""
    return run_points(points, out / "runs.jsonl", progress, run=on.run, content=on.content, **where)


def tables(config: LeaderboardConfig, the_plan: Plan, results: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The ranked rows, the reference rows and the standings of a plan's finished runs."""
    grouped: dict[tuple[str, float], dict[str, dict[int, dict[str, Any]]]] = {}
    for p, scenario, r in zip(the_plan.points, the_plan.owner, results, strict=True):
        grouped.setdefault((scenario, p.x), {}).setdefault(p.series, {})[p.seed] = r
    rows: list[Row] = []
    references: dict[tuple[str, float], list[Row]] = {}
    standings: list[Standing] = []
    for scenario in config.scenarios:
        mine = []
        source = the_plan.sources.get(scenario)
        for x in config.sweep:
            at, references[(scenario, x)] = _table(
                config, scenario, x, grouped[(scenario, x)], the_plan.entrants[scenario], source
            )
            mine += at
        rows += mine
        standings += _standings(config, scenario, mine, the_plan.entrants[scenario], source)
    return {
        "config": config,
        "rows": rows,
        "references": references,
        "standings": standings,
        "skipped": the_plan.skipped,
    }


def _table(
    config: LeaderboardConfig,
    scenario: str,
    x: float,
    runs: dict[str, dict[int, dict[str, Any]]],
    entrants: list[Entrant],
    source: Any,
) -> tuple[list[Row], list[Row]]:
    """A point's ranked rows (each entrant over its seeds, with its paired columns and its gap to the
    reference rows that apply to it) and its reference rows."""
    on = config.track
    assert config.metric is not None
    per_seed = {e.label: {s: on.run_values(r) for s, r in runs[e.label].items()} for e in entrants}
    rows = []
    for e in entrants:
        seeds = sorted(runs[e.label])
        names = dict.fromkeys(m for s in seeds for m in per_seed[e.label][s])
        values = {m: over_seeds([per_seed[e.label][s].get(m) for s in seeds]) for m in names}
        if len(seeds) == 1:  # one replication: its own batch-means intervals, where the run has them
            one = runs[e.label][seeds[0]]
            for m, metric in on.metrics.items():
                if metric.own_ci is not None and m in values:
                    own = one.get(metric.own_ci)
                    values[m] = (values[m][0], float(own) if isinstance(own, int | float) else math.nan)
        unstable = [r.get("stability_note", "") for r in (runs[e.label][s] for s in seeds) if not r["stable"]]
        stable = all(bool(runs[e.label][s]["stable"]) for s in seeds)
        row = Row(scenario, x, e.label, e.kind, 0, values, stable, len(seeds), config.metric)
        row.unstable_note = unstable[0] if unstable else ""
        rows.append(row)
    rank_rows(rows, per_seed, config.reference, on.metrics[config.metric].higher_better)
    refs = on.references(config.metric, scenario, x, source)
    by_label = {e.label: e for e in entrants}
    for row in rows:
        mine = [ref for ref in refs if on.gap_against(row, by_label[row.entrant], ref)]
        row.gaps = {ref.entrant: relative_gap(row.value, ref.value) for ref in mine}
        row.gap = row.gaps[mine[0].entrant] if mine else math.nan
    on.finish(rows, scenario, x)
    return rows, refs


def _standings(
    config: LeaderboardConfig, scenario: str, rows: list[Row], entrants: list[Entrant], source: Any
) -> list[Standing]:
    """Each entrant over the sweep: its mean rank, its empirical stability bracket and the theory of its
    policy; the entrants stable furthest first, then by mean rank."""
    on = config.track
    workload = on.stability_workload(scenario, source, config.sweep[0])
    out = []
    for e in entrants:
        mine = sorted((r for r in rows if r.entrant == e.label), key=lambda r: r.x)
        up_to = None
        first_bad = None
        for r in mine:
            if not r.stable:
                first_bad = r.x
                break
            up_to = r.x
        theory = on.theory(e, workload) if workload is not None else None
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


# ---------------------------------------------------------------------------------------------------------
# The tables and the files


def format_tables(report: dict[str, Any], markdown: bool = False, wide: bool = False) -> str:
    """The ranked tables (one per scenario and point of the sweep, the reference rows first) and the
    standings, as text or Markdown. The text tables fit a terminal of 120 columns; ``wide=True`` and
    Markdown (``leaderboard.md``) have every column the track shows."""
    config: LeaderboardConfig = report["config"]
    on = config.track
    full = markdown or wide
    lines: list[str] = []
    for scenario in config.scenarios:
        if markdown:
            lines.append(f"## {scenario}\n")
        lines += on.skipped_lines(report, scenario, markdown, after=False)
        for x in config.sweep:
            table = [on.reference_cells(ref, config, full) for ref in report["references"][(scenario, x)]]
            at = (r for r in report["rows"] if r.scenario == scenario and r.x == x)
            table += [on.cells(r, config, full) for r in at]
            lines += render_table(point_title(config, scenario, x), on.head(config, full), table, markdown)
        lines += on.standings_lines(report, scenario, full, markdown)
        lines += on.skipped_lines(report, scenario, markdown, after=True)
    lines += on.closing_lines(report, full, markdown)
    return "\n".join(lines)


def _output_names(out: Path, config: LeaderboardConfig) -> list[Path]:
    """The files :func:`_write` writes for ``config``."""
    names = [out / "leaderboard.md", out / "leaderboard.csv"]
    return names + [out / f"leaderboard-{scenario_slug(s, config.scenarios)}.png" for s in config.scenarios]


def _write(out: Path, report: dict[str, Any]) -> list[Path]:
    config: LeaderboardConfig = report["config"]
    on = config.track
    md, csv_path, *pngs = _output_names(out, config)
    intro = (
        f"{on.title()}\n\n"
        f"Scenarios {', '.join(config.scenarios)}; {on.x_plural} {', '.join(f'{x:g}' for x in config.sweep)}"
        "; "
        f"seeds {', '.join(map(str, config.seeds))}; {config.run_length()}. Every entrant sees the same "
        "job streams per seed; ratios are paired per seed (Student-t 95 % CI over seeds)."
        f"{on.md_note} Code {provenance()['git_revision']}.\n\n"
    )
    atomic_write_text(md, intro + format_tables(report, markdown=True) + on.md_end)
    atomic_write_csv(csv_path, *on.csv(report))
    files = [md, csv_path]
    for scenario, path in zip(config.scenarios, pngs, strict=True):
        png = on.plot(scenario, report, path)
        if png is not None:
            files.append(png)
    return files
