"""What a track declares, and what every track shares: an entrant, a row of a ranked table, an
entrant's standing over a sweep, and the statistics over seeds (means with Student-t 95 % intervals,
paired differences and ratios to a reference, the ranking).

A :class:`Track` is the part of a leaderboard that differs per model. The pipeline
(:mod:`msj_gym.experiments.leaderboard`) asks it what a scenario's entrants are, what one point of
the sweep runs and with which run function, what a run's metrics are and which way each is better,
what the reference rows of a point are, and how its tables, files and plots read. Everything else,
the plan, the runs, the ranking and the paired columns, the standings and the files, the pipeline
does once for every model.
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from ...metrics.stats import replication_ci
from ..report import render_table

if TYPE_CHECKING:
    from ..agents import AgentSpec
    from ..runner import Point

__all__ = [
    "Entrant",
    "Metric",
    "Row",
    "Standing",
    "SystemTrack",
    "Track",
    "over_seeds",
    "point_title",
    "rank_rows",
    "split_spec",
    "standings_title",
]


@dataclass(frozen=True)
class Metric:
    """A metric a track ranks by: its label in tables, whether higher is better, and the field of a
    run that holds the run's own 95 % half-width (shown when there is one seed), if any."""

    label: str
    higher_better: bool = False
    own_ci: str | None = None


@dataclass
class Entrant:
    """A policy or an agent on a scenario: its ``label`` in the tables, ``policy`` (a registered id or
    ``module:attr``; None for an agent), ``agent`` (its spec), whether it may preempt and whether it
    knows job sizes (its kind), its ``params``, ``notes`` on how it decides (the kind column), and
    ``code``: the key of what its runs depend on, where the plan resolves it once (else None)."""

    label: str
    policy: str | None
    agent: str | None
    preemptive: bool
    size_aware: bool
    params: dict[str, Any]
    notes: tuple[str, ...] = ()
    code: str | None = None

    @property
    def kind(self) -> str:
        """The kind column: preemptive or not (an agent: whether its env lets it), size-aware, notes."""
        kind = "preemptive" if self.preemptive else "non-preemptive"
        if self.agent:
            kind = "agent, preemptive" if self.preemptive else "agent"
        if self.size_aware:
            kind += ", size-aware"
        return kind + "".join(f", {note}" for note in self.notes)


@dataclass
class Row:
    """One entrant at one point (``scenario``, ``x``: the load, or a moldable system's size), over seeds,
    or a reference row of the point (``rank`` 0). ``values``: metric -> (mean over seeds, 95 %
    half-width); ``metric`` is the ranked one, which the paired columns compare with the entrant
    ``vs`` (the reference, else the point's leader); ``gaps`` are to each reference row that applies
    to the entrant, by its label, ``gap`` to the first of them."""

    scenario: str
    x: float
    entrant: str
    kind: str
    rank: int
    values: dict[str, tuple[float, float]]
    stable: bool
    seeds: int
    metric: str
    vs: str = ""
    diff: float = math.nan
    diff_ci95: float = math.nan
    ratio: float = math.nan
    ratio_ci95: float = math.nan
    gap: float = math.nan
    gaps: dict[str, float] = field(default_factory=dict)
    note: str = ""  # what the track says of the row (a moldable scheme's limits)
    unstable_note: str = ""  # why a run was judged unstable (the first such run's note)

    def mean(self, metric: str) -> float:
        """The mean over seeds of ``metric`` (NaN where the runs have none)."""
        return self.values.get(metric, (math.nan, math.nan))[0]

    def ci(self, metric: str) -> float:
        """The 95 % half-width of ``metric``'s mean (NaN where there is none)."""
        return self.values.get(metric, (math.nan, math.nan))[1]

    @property
    def value(self) -> float:
        """The ranked metric's mean over seeds."""
        return self.mean(self.metric)

    @property
    def value_ci95(self) -> float:
        return self.ci(self.metric)

    def classes(self, prefix: str) -> dict[str, float]:
        """Per class (``prefix`` + class name in ``values``), the mean over seeds."""
        return {m[len(prefix) :]: v[0] for m, v in self.values.items() if m.startswith(prefix)}


@dataclass
class Standing:
    """One entrant across a scenario's sweep: its mean rank, the largest x up to which it was stable on
    every seed and the first at which it was not (its empirical stability bracket), and the theoretical
    limit where its policy declares one."""

    scenario: str
    entrant: str
    kind: str
    mean_rank: float
    stable_up_to: float | None
    unstable_from: float | None
    theory: float | None = None
    theory_source: str = ""

    @property
    def empirical(self) -> str:
        if self.unstable_from is None:
            return f">= {self.stable_up_to:g}"
        if self.stable_up_to is None:
            return f"< {self.unstable_from:g}"
        return f"in ({self.stable_up_to:g}, {self.unstable_from:g})"


def over_seeds(values: Sequence[float | None]) -> tuple[float, float]:
    """The mean of the finite ``values`` with its Student-t 95 % half-width (NaN, NaN if none)."""
    finite = [v for v in values if v is not None and math.isfinite(v)]
    if not finite:
        return math.nan, math.nan
    est = replication_ci(finite)
    return est.mean, est.ci95_half_width


def rank_rows(
    rows: list[Row], per_seed: dict[str, dict[int, dict[str, float]]], reference: str | None, higher: bool
) -> list[Row]:
    """``rows`` ranked (stable entrants first, then by the ranked metric, NaN last) with their paired
    columns: per seed the entrant's ranked metric minus and over ``reference``'s (default: the leader's),
    a Student-t 95 % interval over the seeds both ran (none with fewer than 2)."""
    sign = -1.0 if higher else 1.0
    rows.sort(key=lambda r: (not r.stable, sign * r.value if math.isfinite(r.value) else math.inf))
    for i, row in enumerate(rows, 1):
        row.rank = i
    ref = reference or rows[0].entrant
    for row in rows:
        row.vs = ref
        if row.entrant == ref:
            row.diff, row.diff_ci95, row.ratio, row.ratio_ci95 = 0.0, 0.0, 1.0, 0.0
            continue
        common = sorted(set(per_seed[row.entrant]) & set(per_seed[ref]))
        mine = [per_seed[row.entrant][s][row.metric] for s in common]
        theirs = [per_seed[ref][s][row.metric] for s in common]
        row.diff, row.diff_ci95 = over_seeds([a - b for a, b in zip(mine, theirs, strict=True)])
        row.ratio, row.ratio_ci95 = over_seeds([a / b for a, b in zip(mine, theirs, strict=True) if b > 0])
        if len(common) < 2:
            row.diff_ci95 = row.ratio_ci95 = math.nan
    return rows


def relative_gap(value: float, reference: float) -> float:
    """``(value - reference) / reference`` (NaN for a reference that is not positive)."""
    return (value - reference) / reference if reference > 0 else math.nan


class Track:
    """What a leaderboard of one model declares. A subclass sets the class attributes and overrides the
    methods its model needs; the defaults are those of a model that runs registered policies on named
    systems at a load."""

    #: The model (as :mod:`msj_gym.registry` names it) and, for headings, what ``--loads`` sweeps.
    model: str = ""
    x_name: str = "load"
    x_plural: str = "loads"
    #: The sweep and run length when a leaderboard gives none.
    default_loads: tuple[float, ...] = (0.5, 0.6, 0.7, 0.8, 0.9)
    default_arrivals: int = 20_000
    #: What a run measures, by name, and the metric ranked by default.
    metrics: ClassVar[dict[str, Metric]] = {}
    default_metric: str = "mean_response_time"
    #: Whether a point of this model has an exact optimum (the Markov decision process over class
    #: counts, where it is small enough to solve): the benchmark's 100 there, so that its references
    #: are the heuristics (the optima are the scale) and not every policy of the model.
    exact_optimum: bool = False
    #: Whether ``--policies`` takes ``module:attr`` policies of the user's own on this model.
    own_policies: bool = False
    #: Whether every policy's support is checked at every point of the sweep (else at the first, and
    #: at the others only for a policy whose support depends on the load), and whether a reason it is
    #: not defined names its point at the first point too.
    checks_every_load: bool = True
    names_every_point: bool = True
    #: A sentence of ``leaderboard.md``'s introduction, after the pairing's, and what ends the file.
    md_note: str = ""
    md_end: str = ""
    #: How one point runs and what its content key is (None: the runner's queueing run and its
    #: scenario content, :func:`~msj_gym.experiments.runner.run_point`).
    run: Callable[[Point], dict[str, Any]] | None = None
    content: Callable[[Point], str] | None = None

    def check_metric(self, metric: str) -> str:
        """``metric`` if this track ranks by it, else a one-line error."""
        if metric not in self.metrics:
            raise ValueError(f"--metric: expected one of {', '.join(self.metrics)}, got {metric!r}")
        return metric

    def check_scenario(self, scenario: str) -> None:
        """A one-line error for a scenario spec this track cannot read (before any work)."""

    def is_trace(self, scenario: str) -> bool:
        """Whether ``scenario`` replays a trace (its runs end with it): no run length is its own."""
        return False

    def check_loads(self, loads: tuple[float, ...], text: str, scenarios: Sequence[str]) -> tuple[float, ...]:
        """The sweep ``loads`` (parsed from ``text``) as this model reads it, or a one-line error."""
        return loads

    def resolve(self, scenario: str) -> Any:
        """The scenario object every run of ``scenario`` builds from (None: each run builds it itself)."""
        return None

    def trace_jobs(self, scenario: str) -> int | None:
        """How many jobs a trace replay holds (None: a synthetic scenario, runs of any length)."""
        return None

    def point_scenario(self, scenario: str) -> str:
        """The scenario a point of ``scenario`` names (a run key's part)."""
        return scenario

    def build(self, scenario: str, x: float) -> dict[str, Any]:
        """The overrides of the point of ``scenario`` at ``x``."""
        return {"load": x}

    def policy_ids(self) -> list[str]:
        """The registered policies a group (``all``, ``preemptive``, ...) draws from."""
        from ...registry import policy_ids

        return policy_ids(self.model)

    def unsupported(self, policy: Any, scenario: str, source: Any, x: float) -> str | None:
        """Why ``policy`` (an id, or made with its parameters) is not defined at the point, or None."""
        from ...registry import supports

        return supports(policy, source.build(load=x))

    def describe(self, policy: Any) -> tuple[bool, bool, tuple[str, ...]]:
        """Whether a policy (made with its parameters) may preempt and knows job sizes, and its notes."""
        return bool(policy.preemptive), bool(policy.size_aware), ()

    def where(self, scenario: str, x: float) -> str:
        """A point in words, for messages (``at load 0.7``)."""
        return f"at load {x:g}"

    def prepare(
        self, config: Any, scenario: str, source: Any, by_load: list[str], ready: list[str], workers: int
    ) -> None:
        """Work the entrants' checks need, done before them (in ``workers`` processes): nothing here."""

    def own_entrant(self, spec: str, scenario: str, source: Any, config: Any, labels: set[str]) -> Entrant:
        """The entrant of a policy of the user's own, ``module:attr`` (where :attr:`own_policies`)."""
        raise NotImplementedError

    def agent_points(self, config: Any, scenario: str) -> list[tuple[str, dict[str, Any], str | None]]:
        """Where an agent is checked before any run: (scenario, env keywords, where in words) per point."""
        return [
            (
                self.point_scenario(scenario),
                self.env_build(self.build(scenario, x)),
                f"scenario {scenario!r} {self.where(scenario, x)}",
            )
            for x in config.loads
        ]

    def env_build(self, build: dict[str, Any]) -> dict[str, Any]:
        """The env keywords of a point's ``build`` (an agent's run replaces its training ones by them)."""
        return dict(build)

    def agent_kind(self, loaded: AgentSpec) -> tuple[bool, bool, tuple[str, ...]]:
        """Whether an agent may preempt and knows job sizes, and its notes."""
        return False, False, ()

    def identity(self, config: Any, identity: dict[str, Any]) -> dict[str, Any]:
        """What an output folder records of a configuration (``leaderboard.json``): the pipeline's
        ``identity``, with what this model adds."""
        return identity

    def entrant_key(self, entrant: Entrant) -> str | None:
        """The key of what an entrant's runs depend on, resolved once by the plan (None: per point)."""
        return None

    def run_values(self, run: dict[str, Any]) -> dict[str, float]:
        """A stored run's metrics, by name (per class as ``T.NAME``)."""
        out = {"mean_response_time": float(run["mean_response_time"])}
        out.update({f"T.{k}": float(v) for k, v in run["per_class"].items()})
        return out

    def references(self, metric: str, scenario: str, x: float, source: Any) -> list[Row]:
        """The reference rows of a point (rank 0) for a table ranked by ``metric``, the first one the
        gaps' reference."""
        return []

    def gap_against(self, row: Row, entrant: Entrant, ref: Row) -> bool:
        """Whether ``row``'s gap is measured against reference ``ref``: by default every reference."""
        return True

    def finish(self, rows: list[Row], scenario: str, x: float) -> None:
        """What the track adds to a point's ranked rows (notes)."""

    def theory(self, entrant: Entrant, workload: Any) -> tuple[float, str] | None:
        """The theoretical stability limit the entrant's policy declares, with its source."""
        return None

    def stability_workload(self, scenario: str, source: Any, x: float) -> Any:
        """The workload the theory of the standings is asked about (None: no theory)."""
        return None

    # ------------------------------------------------------------------------------------ presentation

    def x_title(self, scenario: str, x: float) -> str:
        """The point in a table's title (``load 0.7``)."""
        return f"load {x:g}"

    def standings_axis(self) -> str:
        """What the standings are over (``loads``)."""
        return "loads"

    def head(self, config: Any, full: bool) -> list[str]:
        """The columns of a point's ranked table (``full``: every column, else what fits a terminal)."""
        raise NotImplementedError

    def cells(self, row: Row, config: Any, full: bool) -> list[str]:
        """An entrant's row of a point's table."""
        raise NotImplementedError

    def reference_cells(self, ref: Row, config: Any, full: bool) -> list[str]:
        """A reference row of a point's table (above the entrants)."""
        raise NotImplementedError

    def standings_lines(self, report: dict[str, Any], scenario: str, full: bool, markdown: bool) -> list[str]:
        """The standings of a scenario over the sweep."""
        raise NotImplementedError

    def skipped_lines(self, report: dict[str, Any], scenario: str, markdown: bool, after: bool) -> list[str]:
        """The policies of a group left out of a scenario, before its tables (``after`` False) or after."""
        return []

    def closing_lines(self, report: dict[str, Any], full: bool, markdown: bool) -> list[str]:
        """The notes under every table."""
        return []

    def title(self) -> str:
        """The heading of ``leaderboard.md``."""
        return f"# msj_gym leaderboard: the {self.model} model"

    def csv(self, report: dict[str, Any]) -> tuple[list[str], list[list[Any]]]:
        """``leaderboard.csv``: its header and rows."""
        raise NotImplementedError

    def plot(self, scenario: str, report: dict[str, Any], path: Path) -> Path | None:
        """The scenario's picture (None without matplotlib)."""
        return None


def point_title(config: Any, scenario: str, x: float) -> str:
    """A point's table title: the point and the run length (and the metric ranked by, if another than
    the mean response time)."""
    by_t = config.metric == "mean_response_time"
    return (
        f"{scenario}  {config.track.x_title(scenario, x)}  ({len(config.seeds)} seeds x "
        f"{config.arrivals_for(scenario)} arrivals, {config.warmup_for(scenario)} warm-up)"
        + ("" if by_t else f"  ranked by {config.metric}")
    )


def standings_title(config: Any, scenario: str) -> str:
    """A scenario's standings' title: the sweep they are over."""
    xs = ", ".join(f"{x:g}" for x in config.loads)
    return f"{scenario}: standings over {config.track.standings_axis()} {xs}"


def split_spec(scenario: str) -> tuple[str, str | None]:
    """``NAME`` or ``NAME?sizes=LAW`` as (name, law or None)."""
    name, sep, query = scenario.partition("?")
    if not sep:
        return name, None
    key, eq, law = query.partition("=")
    if key != "sizes" or not eq or not law:
        raise ValueError(f"--scenario {scenario!r}: expected NAME or NAME?sizes=LAW")
    return name, law


def policy_files(policy: str) -> list[str]:
    """The source files a registered policy's runs depend on (its module, its package's ``__init__`` and
    ``_kit``, the registry), or a ``module:attr`` policy's own and the registry."""
    import inspect

    from ...registry import policy_class, spec_source_files

    root = Path(__file__).resolve().parents[2]
    if ":" in policy:  # a policy reached by its entry point (an agent's native twin)
        return [*spec_source_files(policy), str(root / "registry.py")]
    module = Path(inspect.getsourcefile(policy_class(policy)) or "")
    return [
        str(module),
        str(module.parent / "__init__.py"),
        str(module.parent / "_kit.py"),
        str(root / "registry.py"),
    ]


class SystemTrack(Track):
    """A model of named systems (``NAME`` or ``NAME?sizes=LAW``: a size law other than the system's
    default, Exp(1)) whose runs are keyed by the point's own fields: the moldable and compatibility
    models."""

    #: The size laws ``?sizes=`` may name.
    size_laws: tuple[str, ...] = ()
    md_end = "\n"

    def check_metric(self, metric: str) -> str:
        if metric != self.default_metric:
            ranked = self.metrics[self.default_metric].label
            raise ValueError(f"--metric {metric!r}: the {self.model} model's leaderboard ranks by {ranked}")
        return metric

    def law(self, scenario: str) -> str:
        """The size law of ``scenario`` (exponential unless it names one), or a one-line error."""
        law = split_spec(scenario)[1] or "exponential"
        if law not in self.size_laws:
            raise ValueError(
                f"--scenario {scenario!r}: unknown size law {law!r}; known on the {self.model} model: "
                f"{', '.join(self.size_laws)}"
            )
        return law

    def check_scenario(self, scenario: str) -> None:
        self.law(scenario)

    def point_scenario(self, scenario: str) -> str:
        return split_spec(scenario)[0]

    def identity(self, config: Any, identity: dict[str, Any]) -> dict[str, Any]:
        if not config.agents:  # a folder of policies only keeps its identity from before agents
            identity.pop("agents")
        return {**identity, "model": self.model}

    def title(self) -> str:
        return f"# msj_gym leaderboard: the {self.model} model"

    def reference_rows_first(self, report: dict[str, Any], scenario: str) -> list[Row]:
        """The scenario's rows point by point, each point's reference rows first (as the tables, the
        CSV and the plot list them)."""
        out: list[Row] = []
        for x in report["config"].loads:
            out += report["references"][(scenario, x)]
            out += [r for r in report["rows"] if r.scenario == scenario and r.x == x]
        return out

    def standings_lines(self, report: dict[str, Any], scenario: str, full: bool, markdown: bool) -> list[str]:
        # by mean rank, entrants of equal mean rank in the order they first rank
        rows = [r for r in report["rows"] if r.scenario == scenario]
        first = {r.entrant: i for i, r in reversed(list(enumerate(rows)))}
        st = sorted(
            (s for s in report["standings"] if s.scenario == scenario),
            key=lambda s: (s.mean_rank, first[s.entrant]),
        )
        table = [[s.entrant, f"{s.mean_rank:.2f}"] for s in st]
        return render_table(
            standings_title(report["config"], scenario), ["entrant", "mean rank"], table, markdown
        )

    def skipped_lines(self, report: dict[str, Any], scenario: str, markdown: bool, after: bool) -> list[str]:
        skipped = report["skipped"].get(scenario)
        if not skipped or not after:
            return []
        left = "; ".join(f"{p}: {why}" for p, why in skipped.items())
        return [
            textwrap.fill(f"left out (not defined on {scenario}): {left}", 120, break_on_hyphens=False) + "\n"
        ]

    def closing_lines(self, report: dict[str, Any], full: bool, markdown: bool) -> list[str]:
        note = self.note
        return [note if markdown else textwrap.fill(note, 120, break_on_hyphens=False)]

    #: The note under every table (what the reference rows are).
    note: str = ""

    def csv(self, report: dict[str, Any]) -> tuple[list[str], list[list[Any]]]:
        rows = [r for s in report["config"].scenarios for r in self.reference_rows_first(report, s)]
        metrics = sorted({m for r in rows for m in r.values})
        head = ["scenario", "x", "entrant", "kind", "rank", "seeds", "stable"]
        head += [f"{m}{s}" for m in metrics for s in ("", "_ci95")]
        head += ["vs", "ratio", "ratio_ci95", "diff", "diff_ci95", "gap", "gap_to", "limit"]
        out = []
        for r in rows:
            cells: list[Any] = [r.scenario, r.x, r.entrant, r.kind, r.rank, r.seeds, r.stable]
            for m in metrics:
                cells += list(r.values.get(m, (math.nan, math.nan)))
            gap_to = next(iter(r.gaps), "")  # the first reference row, which "gap" is measured against
            out.append([*cells, r.vs, r.ratio, r.ratio_ci95, r.diff, r.diff_ci95, r.gap, gap_to, r.note])
        return head, out
