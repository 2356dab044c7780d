"""Leaderboards of the other two models: the moldable loss system and job-server compatibility graphs.

``msj-gym leaderboard --scenario NAME`` with a moldable system (``002-linear-halfin-whitt``, ...) or a
compatibility system (``003-random-2``, ...) ranks the policies registered on that model
(:func:`msj_gym.registry.policy_ids`) with the model's own metrics, as the MSJ leaderboard
(:mod:`.leaderboard`) ranks queueing policies:

- **moldable** (Ghanbarian et al. (2024)): the blocking probability ``P_B``, the mean execution time
  ``E[T]`` of accepted jobs, and, ranked by, the cost per arrival ``(1 - P_B) E[T] + c P_B`` with
  ``c`` = :data:`BLOCKING_COST` execution-time units per lost job, the cost ``MSJMoldable-v0`` pays. The
  paper has two criteria, blocking first (``P_B -> 0``) and then ``E[T]``, and no single figure; one
  number needs a price of a lost job, and the environment's is taken so that the leaderboard scores
  what agents are trained on. Reference row: the paper's optimum, ``P_B = 0`` and ``E[T] = T*`` (LP (P),
  Theorem 1), whose cost is ``T*``. A scheme that trades blocking for speed can cost less than that
  (a negative gap): near ``lam = 1`` greedy loses a third of the jobs but runs the others in a third of
  ``T*``, and at ``c = 2`` that is cheaper; the ranking by cost depends on ``c``, the ``P_B`` column
  says what it is made of.
  ``--loads`` are the system sizes ``n``: a named system is a traffic regime, ``lam = 1 - beta
  n^-alpha``, so its load is set by ``n``, as in the paper's Fig. 2.
- **compatibility** (Bonald & Comte (2017)): the mean response time, overall and per class; reference
  rows: the size-oblivious bound (exact, exponential sizes only: no policy that does not know the job
  sizes, whatever servers it assigns, does better; :mod:`msj_gym.analysis.compat_bound`; under other
  size laws the weaker service-time bound, valid for every policy) and balanced
  fairness (exact; for exponential sizes it is FCFS's and Algorithm 1's, Theorem 2), with each
  entrant's gap to both. ``--loads`` are the system's load ``rho``.

A size law other than the scenario's default (Exp(1)) is asked for with ``NAME?sizes=LAW``.

Runs are paired across entrants (a seed fixes every arrival, size and random draw of the job stream,
whatever the policy: common random numbers), stored in ``runs.jsonl`` through
:func:`~msj_gym.experiments.runner.run_points` and keyed by their point, the system's content and the
code of the model, the policy and this module: a rerun resumes, and a changed input or code is refused
(:class:`~msj_gym.experiments.runner.StaleRuns`). Intervals: Student-t 95 % over seeds; paired ratios to
each point's leader, per seed.

Agents (``--agent SPEC``, :mod:`.agents`: a shipped name, a checkpoint trained on ``MSJMoldable-v0`` or
``CompatAssign-v0``, or ``module:attr``) run beside the policies through the model's env, on the same
seeds: a seed fixes the job stream in the env as in the native run (a registered policy played
through the env gives exactly its native values), so they are paired with the policies. Their runs
are keyed by their checkpoint's bytes and metadata as a policy's by its code; an agent whose env is
of another model, or whose spaces do not fit the scenario's env, is refused in one line before any run.
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

from ..atomic import atomic_savefig, atomic_write_csv, atomic_write_text
from ..metrics.stats import replication_ci
from .report import fmt, render_table
from .runner import Point, check_backend, hold_folder, provenance, run_points, scenario_content

__all__ = [
    "BLOCKING_COST",
    "MODEL_DEFAULTS",
    "ModelLeaderboardConfig",
    "format_model_tables",
    "run_model_leaderboard",
    "scenario_model",
]

#: The price of a lost job, in execution-time units (``MSJMoldable-v0``'s default ``blocking_cost``).
BLOCKING_COST = 2.0
#: The compatibility model's lower-bound rows: with exponential sizes, and under any size law.
BOUND_LABELS = ("size-oblivious bound (exact)", "service-time bound (any policy)")
MAX_SYSTEM_SIZE = 100_000  # servers of a moldable system in a sweep

#: Per model: the default sweep, run length (arrivals per run) and what ``--loads`` means.
MODEL_DEFAULTS: dict[str, dict[str, Any]] = {
    "moldable": {"loads": (250.0, 1000.0, 4000.0), "arrivals": 200_000, "x": "n"},
    "compatibility": {"loads": (0.5, 0.6, 0.7, 0.8, 0.9), "arrivals": 20_000, "x": "load"},
}
POLICY_GROUPS = ("all", "non-preemptive", "preemptive")


def split_spec(scenario: str) -> tuple[str, str | None]:
    """``NAME`` or ``NAME?sizes=LAW`` as (name, law or None)."""
    name, sep, query = scenario.partition("?")
    if not sep:
        return name, None
    key, eq, law = query.partition("=")
    if key != "sizes" or not eq or not law:
        raise ValueError(f"--scenario {scenario!r}: expected NAME or NAME?sizes=LAW")
    return name, law


def scenario_model(scenario: str) -> str:
    """``"moldable"``, ``"compatibility"`` or ``"msj"`` (anything else: a name, file or trace)."""
    from ..moldable.systems import MOLDABLE_SYSTEMS
    from ..workloads.compat import COMPAT_SCENARIOS

    name = scenario.partition("?")[0]
    if name in MOLDABLE_SYSTEMS:
        return "moldable"
    if name in COMPAT_SCENARIOS:
        return "compatibility"
    return "msj"


def _size_laws(model: str) -> tuple[str, ...]:
    from ..workloads.compat import PAPER_SIZE_DISTRIBUTIONS
    from .moldable import SIZE_LAWS

    return tuple(SIZE_LAWS) if model == "moldable" else PAPER_SIZE_DISTRIBUTIONS


def _law(scenario: str, model: str) -> str:
    law = split_spec(scenario)[1] or "exponential"
    if law not in _size_laws(model):
        raise ValueError(
            f"--scenario {scenario!r}: unknown size law {law!r}; known on the {model} model: "
            f"{', '.join(_size_laws(model))}"
        )
    return law


def moldable_system(scenario: str, num_servers: int, law: str) -> Any:
    """The named moldable system (``002-SPEEDUP-REGIME``) with ``num_servers`` servers and size law
    ``law`` (unit mean)."""
    from ..moldable.model import MoldableSystem
    from ..moldable.systems import MOLDABLE_SYSTEMS, REGIMES, SPEED_UPS
    from .moldable import SIZE_LAWS

    speed, regime = MOLDABLE_SYSTEMS[split_spec(scenario)[0]]
    alpha, beta = REGIMES[regime]
    return MoldableSystem.single(
        num_servers, SPEED_UPS[speed], alpha=alpha, beta=beta, service_time=SIZE_LAWS[law]
    )


def compat_workload(scenario: str, load: float, law: str) -> Any:
    """The named compatibility system at load ``rho`` with size law ``law``."""
    from ..workloads.compat import build_compat_scenario

    return build_compat_scenario(split_spec(scenario)[0], load=load, distribution=law)


@dataclass(frozen=True)
class ModelLeaderboardConfig:
    """What a moldable or compatibility leaderboard runs: ``scenarios`` of one model (``NAME`` or
    ``NAME?sizes=LAW``), ``agents`` (specs of :mod:`.agents`, run through the model's env;
    ``bare_agents`` admits checkpoints without metadata), ``loads`` (the system sizes ``n`` of a
    moldable system, the load ``rho`` of a compatibility one; None: the model's default,
    :data:`MODEL_DEFAULTS`), ``policies`` (ids of that model, or a group ``all`` / ``non-preemptive`` /
    ``preemptive``), ``seeds``, ``arrivals`` per run (None: the model's default) and ``warmup`` (None:
    a tenth), ``reference`` (the entrant of the paired columns; None: each point's leader) and
    ``policy_params`` (id -> parameters)."""

    scenarios: tuple[str, ...]
    loads: tuple[float, ...] | None = None
    policies: tuple[str, ...] = ("all",)
    seeds: tuple[int, ...] = (0, 1, 2, 3, 4)
    arrivals: int | None = None
    warmup: int | None = None
    reference: str | None = None
    policy_params: dict[str, dict[str, Any]] = field(default_factory=dict)
    agents: tuple[str, ...] = ()
    bare_agents: bool = False  # admit checkpoints without their .json (see experiments.agents)

    def __post_init__(self) -> None:
        from .leaderboard import parse_seeds

        if not self.scenarios:
            raise ValueError("--scenario: at least one scenario is needed")
        models = {scenario_model(s) for s in self.scenarios}
        if len(models) != 1 or "msj" in models:
            raise ValueError(
                f"--scenario {', '.join(self.scenarios)!r}: one leaderboard ranks one model's scenarios; "
                "run the moldable, compatibility and MSJ scenarios separately"
            )
        for s in self.scenarios:
            _law(s, self.model)
        if not self.policies and not self.agents:
            raise ValueError("--policies: no policy to rank; give policy ids or a group")
        if self.arrivals is not None and (
            isinstance(self.arrivals, bool) or not isinstance(self.arrivals, int) or self.arrivals < 100
        ):
            raise ValueError(f"--arrivals: expected an integer >= 100, got {self.arrivals!r}")
        n = self.num_arrivals
        if self.warmup is not None and (
            isinstance(self.warmup, bool) or not isinstance(self.warmup, int) or not 0 <= self.warmup < n - 1
        ):
            raise ValueError(f"--warmup: expected an integer in [0, {n - 1}), got {self.warmup!r}")
        object.__setattr__(self, "loads", self._check_loads())
        object.__setattr__(self, "seeds", parse_seeds(self.seeds))

    @property
    def model(self) -> str:
        """``"moldable"`` or ``"compatibility"``."""
        return scenario_model(self.scenarios[0])

    @property
    def num_arrivals(self) -> int:
        return self.arrivals if self.arrivals is not None else int(MODEL_DEFAULTS[self.model]["arrivals"])

    @property
    def num_warmup(self) -> int:
        return self.warmup if self.warmup is not None else self.num_arrivals // 10

    def _check_loads(self) -> tuple[float, ...]:
        from .leaderboard import parse_loads

        raw = self.loads if self.loads is not None else MODEL_DEFAULTS[self.model]["loads"]
        loads = parse_loads(raw)
        text = raw if isinstance(raw, str) else ",".join(f"{x:g}" for x in raw)
        if self.model == "moldable":
            for n in loads:
                if n != int(n) or not 2 <= n <= MAX_SYSTEM_SIZE:
                    raise ValueError(
                        f"--loads {text!r}: a moldable system sweeps its number of servers n (integers "
                        f"from 2 to {MAX_SYSTEM_SIZE}; its regime sets the load, lam = 1 - beta n^-alpha), "
                        f"got {n:g}"
                    )
            return tuple(float(int(n)) for n in loads)
        from ..analysis.balanced_fairness import stability_violation

        for rho in loads:
            if not 0 < rho < 1:
                raise ValueError(f"--loads {text!r}: a compatibility system's load is in (0, 1), got {rho:g}")
            for s in self.scenarios:
                why = stability_violation(compat_workload(s, rho, _law(s, self.model)))
                if why is not None:
                    raise ValueError(
                        f"--loads {text!r}: {s} is unstable at load {rho:g} (Bonald & Comte 2017, "
                        f"Theorem 1): {why}"
                    )
        return loads

    def identity(self) -> dict[str, Any]:
        """The fields that determine the results (the folder's ``leaderboard.json`` records them)."""
        d = asdict(self)
        d.pop("reference")
        d.pop("bare_agents")  # how agents are admitted; their runs are keyed by the checkpoint itself
        if not self.agents:  # a folder of policies only keeps its identity from before agents
            d.pop("agents")
        d["model"] = self.model
        d["arrivals"], d["warmup"] = self.num_arrivals, self.num_warmup
        if self.model == "moldable":
            d["blocking_cost"] = BLOCKING_COST
        return json.loads(json.dumps(d))


@dataclass
class ModelEntrant:
    label: str
    policy: str
    preemptive: bool
    size_aware: bool
    params: dict[str, Any]
    agent: str | None = None  # an agent's spec; ``policy`` is then its label


def _entrants(config: ModelLeaderboardConfig, scenario: str) -> tuple[list[ModelEntrant], dict[str, str]]:
    """The entrants of ``scenario`` and the policies of a group left out (id -> reason)."""
    from ..registry import policy_class, policy_ids, policy_spec, supports

    model = config.model
    known = policy_ids(model)
    ids: list[str] = []
    for item in config.policies:
        if item in POLICY_GROUPS:
            ids += [
                pid
                for pid in known
                if item == "all" or (item == "preemptive") == bool(policy_class(pid).preemptive)
            ]
        elif item in known:
            ids.append(item)
        elif item in policy_ids():
            on = ", ".join(policy_spec(item).models)
            raise ValueError(
                f"--policies {item!r}: defined on the {on} model, not on the {model} model of "
                f"scenario {scenario!r}; known there: {', '.join(known)}"
            )
        elif ":" in item:
            raise ValueError(
                f"--policies {item!r}: policies of your own run on the MSJ leaderboard only; known on the "
                f"{model} model: {', '.join(known)}"
            )
        else:
            raise ValueError(
                f"--policies {item!r}: unknown policy; known on the {model} model: {', '.join(known)} "
                f"(or a group: {', '.join(POLICY_GROUPS)})"
            )
    unique = list(dict.fromkeys(ids))
    if not unique and config.agents:
        return _agent_entrants(config, scenario, []), {}
    for key in config.policy_params:
        if key not in unique:
            raise ValueError(f"--policy-param: {key!r} is not an entrant here ({', '.join(unique)})")
    law = _law(scenario, model)
    out: list[ModelEntrant] = []
    skipped: dict[str, str] = {}
    for pid in unique:
        params = dict(config.policy_params.get(pid, {}))
        try:
            policy = policy_class(pid)(**params)
        except ValueError as exc:
            raise ValueError(f"--policy-param {pid!r}: {exc}") from None
        reason = None
        for x in config.loads or ():
            if model == "moldable":
                try:
                    policy.prepare(moldable_system(scenario, int(x), law))
                except ValueError as exc:
                    reason = f"at n = {x:g}: {exc}"
            else:
                why = supports(policy, compat_workload(scenario, x, law))
                reason = None if why is None else f"at load {x:g}: {why}"
            if reason is not None:
                break
        if reason is not None:
            if pid in config.policies:
                raise ValueError(f"--policies {pid!r}: not defined on scenario {scenario!r} {reason}")
            skipped[pid] = reason
            continue
        out.append(ModelEntrant(pid, pid, bool(policy.preemptive), bool(policy.size_aware), params))
    if not out:
        raise ValueError(f"--policies: no policy of {', '.join(config.policies)} is defined on {scenario!r}")
    out = _agent_entrants(config, scenario, out)
    if config.reference is not None and config.reference not in {e.label for e in out}:
        raise ValueError(
            f"--reference {config.reference!r}: not an entrant here ({', '.join(e.label for e in out)})"
        )
    return out, skipped


def _agent_entrants(
    config: ModelLeaderboardConfig, scenario: str, out: list[ModelEntrant]
) -> list[ModelEntrant]:
    """``out`` and the agents of ``config``, each checked against the scenario's env at every point of
    the sweep (its model, spaces and keywords) before any run: one line naming the agent otherwise."""
    from .agents import agent_label, check_agent, env_build, load_agent

    model = config.model
    labels = {e.label for e in out}
    for spec in config.agents:
        for x in config.loads or ():
            build = env_build(model, point_build(model, scenario, x))
            where = f"scenario {scenario!r} at {'n = ' if model == 'moldable' else 'load '}{x:g}"
            check_agent(spec, split_spec(scenario)[0], build, config.bare_agents, where=where, model=model)
        label = agent_label(spec)
        if label in labels:
            raise ValueError(f"--agent {spec!r}: a second entrant named {label!r}; rename the file")
        labels.add(label)
        loaded = load_agent(spec, config.bare_agents)
        preempts = loaded.env_kwargs.get("scheduler") == "balanced-fair"  # CompatAssign-v0's Algorithm 1
        out.append(ModelEntrant(label, label, preempts, False, {}, agent=spec))
    return out


def point_build(model: str, scenario: str, x: float) -> dict[str, Any]:
    """A point's overrides: the system size and size law (moldable), the load and size law."""
    law = _law(scenario, model)
    if model == "moldable":
        return {"num_servers": int(x), "sizes": law}
    return {"load": x, "distribution": law}


def plan(
    config: ModelLeaderboardConfig,
) -> tuple[list[Point], dict[str, list[ModelEntrant]], dict[str, dict[str, str]]]:
    """Every run of the leaderboard, and per scenario its entrants and the policies left out."""
    points: list[Point] = []
    entrants: dict[str, list[ModelEntrant]] = {}
    skipped: dict[str, dict[str, str]] = {}
    for scenario in config.scenarios:
        entrants[scenario], skipped[scenario] = _entrants(config, scenario)
        for e in entrants[scenario]:
            for x in config.loads or ():
                build = point_build(config.model, scenario, x)
                for seed in config.seeds:
                    points.append(
                        Point(
                            series=e.label,
                            x=x,
                            scenario=split_spec(scenario)[0],
                            policy=e.policy,
                            seed=seed,
                            num_arrivals=config.num_arrivals,
                            build=build,
                            params=dict(e.params),
                            warmup=config.num_warmup,
                            agent=e.agent,
                        )
                    )
    return points, entrants, skipped


# ---------------------------------------------------------------------------------------------------------
# The runs (module-level for the process pool and Ray)


def _policy_files(policy: str) -> list[str]:
    import inspect

    from ..registry import policy_class, spec_source_files

    root = Path(__file__).resolve().parents[1]
    if ":" in policy:  # a policy reached by its entry point (an agent's native twin)
        return [*spec_source_files(policy), str(root / "registry.py")]
    module = Path(inspect.getsourcefile(policy_class(policy)) or "")
    return [
        str(module),
        str(module.parent / "__init__.py"),
        str(module.parent / "_kit.py"),
        str(root / "registry.py"),
    ]


def run_moldable_point(point: Point) -> dict[str, Any]:
    """One seeded run of a moldable scheme (:class:`~msj_gym.moldable.LossSimulator`), or of an agent
    through ``MSJMoldable-v0`` (the same simulator, the same job stream for the seed)."""
    from .moldable import loss_row, run_loss

    system = moldable_system(point.scenario, point.build["num_servers"], point.build["sizes"])
    if point.agent is not None:
        from .agents import run_agent

        return loss_row(system, run_agent(point, model="moldable"))
    return run_loss(system, point)


def _moldable_code(point: Point) -> list[str]:
    root = Path(__file__).resolve().parents[1]
    files = [str(f) for f in (root / "moldable").glob("*.py")]
    files += [str(root / "analysis" / "moldable.py"), str(root / "experiments" / "moldable.py")]
    # an agent's checkpoint and the envs are added by the runner (runner._code_files)
    return files + ([] if point.agent is not None else _policy_files(point.policy))


run_moldable_point.code_files = _moldable_code  # type: ignore[attr-defined]


def moldable_content(point: Point) -> str:
    """A hash of the moldable system a point runs (speed-up, rates, size law, n)."""
    import hashlib

    system = moldable_system(point.scenario, point.build["num_servers"], point.build["sizes"])
    return hashlib.sha256(json.dumps(system.to_dict(), sort_keys=True).encode()).hexdigest()[:16]


def run_compat_point(point: Point) -> dict[str, Any]:
    """One seeded run of a compatibility-model scheduler (the runner's own queueing run), or of an
    agent choosing the servers through ``CompatAssign-v0`` (the same job stream for the seed)."""
    from .runner import result_row, run_point

    if point.agent is not None:
        from .agents import load_agent, run_agent

        if load_agent(point.agent, bare=True).native is None:
            return result_row(run_agent(point, model="compatibility"))
    # an agent with a native twin runs as that policy there (run_point's own rule)
    return run_point(point)


def _compat_code(point: Point) -> list[str]:
    root = Path(__file__).resolve().parents[1]
    files = [str(root / "pooled.py"), str(root / "analysis" / "balanced_fairness.py")]
    # an agent's own files (its native twin's among them) are in every agent run's key already
    return files + ([] if point.agent is not None else _policy_files(point.policy))


run_compat_point.code_files = _compat_code  # type: ignore[attr-defined]


# ---------------------------------------------------------------------------------------------------------
# Tables


@dataclass
class ModelRow:
    """One entrant (or a reference, ``rank`` 0) at one point, over seeds: ``values`` metric -> (mean,
    95 % half-width); ``ratio`` the paired ratio of the ranked metric to ``vs``'s."""

    scenario: str
    x: float
    entrant: str
    kind: str
    rank: int
    values: dict[str, tuple[float, float]]
    stable: bool
    seeds: int
    vs: str = ""
    ratio: float = math.nan
    ratio_ci95: float = math.nan
    diff: float = math.nan
    diff_ci95: float = math.nan
    gap: float = math.nan  # of the ranked metric, against the first reference row
    gaps: dict[str, float] = field(default_factory=dict)  # against each reference row, by its label
    note: str = ""


def _ci(values: Sequence[float]) -> tuple[float, float]:
    finite = [v for v in values if v is not None and math.isfinite(v)]
    if not finite:
        return math.nan, math.nan
    est = replication_ci(finite)
    return est.mean, est.ci95_half_width


def ranked_metric(model: str) -> str:
    return "cost" if model == "moldable" else "mean_response_time"


def run_values(model: str, run: dict[str, Any]) -> dict[str, float]:
    """A run's metrics, as the tables show them."""
    if model == "moldable":
        pb, et = float(run["blocking"]), float(run["mean_execution_time"])
        return {"blocking": pb, "mean_execution_time": et, "cost": (1 - pb) * et + BLOCKING_COST * pb}
    out = {"mean_response_time": float(run["mean_response_time"])}
    out.update({f"T.{k}": float(v) for k, v in run["per_class"].items()})
    return out


def reference_rows(model: str, scenario: str, x: float) -> list[ModelRow]:
    """The reference rows of a point: the LP optimum (moldable, n -> infinity) or balanced fairness
    (compatibility, exact)."""
    if model == "moldable":
        from ..analysis.moldable import lp_optimum

        system = moldable_system(scenario, int(x), "exponential")
        c = system.classes[0]
        t_star = lp_optimum(c.speed_up, c.load).mean_execution_time
        values = {
            "blocking": (0.0, math.nan),
            "mean_execution_time": (t_star, math.nan),
            "cost": (t_star, math.nan),
        }
        return [ModelRow(scenario, x, "LP optimum (n -> infinity)", "reference", 0, values, True, 0)]
    from ..analysis.balanced_fairness import workload_performance
    from ..analysis.compat_bound import service_time_bound, size_oblivious_bound

    wl = compat_workload(scenario, x, _law(scenario, model))
    try:
        # both bound every size-oblivious policy; the chain's is the tighter one unless classes differ
        chain = size_oblivious_bound(wl).mean_response_time
        bound, label = max(chain, service_time_bound(wl)), BOUND_LABELS[0]
    except ValueError:  # sizes not exponential (or beyond every policy's capacity: refused before)
        bound, label = service_time_bound(wl), BOUND_LABELS[1]
    refs = [ModelRow(scenario, x, label, "reference", 0, {"mean_response_time": (bound, math.nan)}, True, 0)]
    try:
        perf = workload_performance(wl)
    except (NotImplementedError, ValueError):
        return refs
    lam = wl.arrival_rates
    overall = float((lam * perf.mean_delay).sum() / lam.sum())
    values = {"mean_response_time": (overall, math.nan)}
    values.update(
        {f"T.{c.name}": (float(d), math.nan) for c, d in zip(wl.classes, perf.mean_delay, strict=True)}
    )
    label = "balanced fairness (exact)"
    if any(c.choose for c in wl.classes):
        label = "balanced fairness, random assignment (exact)"
    return [*refs, ModelRow(scenario, x, label, "reference", 0, values, True, 0)]


def _table(
    model: str,
    scenario: str,
    x: float,
    runs: dict[str, dict[int, dict[str, Any]]],
    entrants: list[ModelEntrant],
    reference: str | None,
) -> list[ModelRow]:
    metric = ranked_metric(model)
    per_seed = {e.label: {s: run_values(model, r) for s, r in runs[e.label].items()} for e in entrants}
    rows = []
    for e in entrants:
        seeds = sorted(per_seed[e.label])
        names = list(per_seed[e.label][seeds[0]])
        values = {m: _ci([per_seed[e.label][s][m] for s in seeds]) for m in names}
        if len(seeds) == 1 and model == "moldable":  # one run: its own batch-means intervals
            one = runs[e.label][seeds[0]]
            values["blocking"] = (values["blocking"][0], float(one["blocking_ci95"]))
            values["mean_execution_time"] = (values["mean_execution_time"][0], float(one["execution_ci95"]))
        elif len(seeds) == 1:
            values[metric] = (values[metric][0], float(runs[e.label][seeds[0]]["ci95_half_width"]))
        kind = ("preemptive" if e.preemptive else "non-preemptive") + (", size-aware" if e.size_aware else "")
        if e.agent is not None:
            kind = "agent, preemptive" if e.preemptive else "agent"
        stable = all(bool(r["stable"]) for r in runs[e.label].values())
        rows.append(ModelRow(scenario, x, e.label, kind, 0, values, stable, len(seeds)))
    rows.sort(
        key=lambda r: (not r.stable, r.values[metric][0] if math.isfinite(r.values[metric][0]) else math.inf)
    )
    for i, row in enumerate(rows, 1):
        row.rank = i
    ref = reference or rows[0].entrant
    for row in rows:
        row.vs = ref
        if row.entrant == ref:
            row.ratio, row.ratio_ci95, row.diff, row.diff_ci95 = 1.0, 0.0, 0.0, 0.0
            continue
        common = sorted(set(per_seed[row.entrant]) & set(per_seed[ref]))
        mine = [per_seed[row.entrant][s][metric] for s in common]
        theirs = [per_seed[ref][s][metric] for s in common]
        row.diff, row.diff_ci95 = _ci([a - b for a, b in zip(mine, theirs, strict=True)])
        row.ratio, row.ratio_ci95 = _ci([a / b for a, b in zip(mine, theirs, strict=True) if b > 0])
        if len(common) < 2:
            row.diff_ci95 = row.ratio_ci95 = math.nan
    refs = reference_rows(model, scenario, x)
    if refs:
        for row in rows:
            row.gaps = {ref.entrant: _gap(row.values[metric][0], ref.values[metric][0]) for ref in refs}
            row.gap = row.gaps[refs[0].entrant]
    if model == "moldable":
        from .moldable import limits

        speed = _speed(scenario)
        lam = moldable_system(scenario, int(x), "exponential").classes[0].arrival_rate
        for row in rows:
            if row.entrant in ("moldable-p-scheme", "moldable-greedy", "moldable-reserved"):
                lim = limits(speed, row.entrant, lam)
                row.note = f"{lim['blocking']:.3g} / {lim['mean_execution_time']:.4g}"
    return refs + rows


def _gap(value: float, reference: float) -> float:
    return (value - reference) / reference if reference > 0 else math.nan


def _speed(scenario: str) -> str:
    from ..moldable.systems import MOLDABLE_SYSTEMS

    return MOLDABLE_SYSTEMS[split_spec(scenario)[0]][0]


def _report(
    config: ModelLeaderboardConfig,
    points: list[Point],
    results: list[dict[str, Any]],
    entrants: dict[str, list[ModelEntrant]],
    skipped: dict[str, dict[str, str]],
) -> dict[str, Any]:
    grouped: dict[tuple[str, str, float], dict[str, dict[int, dict[str, Any]]]] = {}
    for p, r in zip(points, results, strict=True):  # a scenario is its name and size law (in build)
        key = (p.scenario, json.dumps(p.build, sort_keys=True), p.x)
        grouped.setdefault(key, {}).setdefault(p.series, {})[p.seed] = r
    rows: list[ModelRow] = []
    standings: dict[str, list[tuple[str, float]]] = {}
    for scenario in config.scenarios:
        name = split_spec(scenario)[0]
        mine = []
        for x in config.loads or ():
            key = (name, json.dumps(point_build(config.model, scenario, x), sort_keys=True), x)
            mine += _table(config.model, scenario, x, grouped[key], entrants[scenario], config.reference)
        rows += mine
        ranks: dict[str, list[int]] = {}
        for row in mine:
            if row.rank:
                ranks.setdefault(row.entrant, []).append(row.rank)
        standings[scenario] = sorted(((e, sum(v) / len(v)) for e, v in ranks.items()), key=lambda t: t[1])
    return {"config": config, "rows": rows, "standings": standings, "skipped": skipped}


def _fmt(x: float, ci: float | None = None, digits: int = 4) -> str:
    return fmt(x, ci, digits, missing_ci="")  # a model run's missing interval is left blank


def _gap_cell(row: ModelRow, references: tuple[str, ...]) -> str:
    """``row``'s gap to the reference row whose label starts with one of ``references`` ("n/a" if
    none)."""
    if row.rank == 0:
        return ""
    gap = next((g for label, g in row.gaps.items() if label.startswith(references)), math.nan)
    return f"{100 * gap:+.1f} %" if math.isfinite(gap) else "n/a"


def _x_title(model: str, scenario: str, x: float) -> str:
    if model == "moldable":
        lam = moldable_system(scenario, int(x), "exponential").classes[0].arrival_rate
        return f"n = {int(x)} (lam = {lam:.5g})"
    return f"load {x:g}"


def format_model_tables(report: dict[str, Any], markdown: bool = False) -> str:
    """The ranked tables (one per scenario and load or system size) and the standings."""
    config: ModelLeaderboardConfig = report["config"]
    model = config.model
    ref_word = "ratio to reference" if config.reference else "ratio to leader"
    lines: list[str] = []
    for scenario in config.scenarios:
        rows = [r for r in report["rows"] if r.scenario == scenario]
        if markdown:
            lines.append(f"## {scenario}\n")
        classes = [m for m in rows[0].values if m.startswith("T.")] if rows else []
        if len(classes) < 2:
            classes = []
        for x in config.loads or ():
            at = [r for r in rows if r.x == x]
            if model == "moldable":
                head = ["rank", "entrant", "P_B ± 95% CI", "E[T] ± 95% CI", "cost ± 95% CI", ref_word]
                head += ["gap to T*", "limit n->inf (P_B / E[T])"]
            else:
                head = ["rank", "entrant", "preempt", "mean T ± 95% CI", *[f"T {c[2:]}" for c in classes]]
                head += [ref_word, "above the bound", "vs balanced fairness", "stable"]
            table = []
            for r in at:
                rank = "-" if r.rank == 0 else str(r.rank)
                ratio = (
                    ""
                    if r.rank == 0
                    else _fmt(r.ratio, r.ratio_ci95, 3) + (" (ref)" if r.entrant == r.vs else "")
                )
                gap = "" if r.rank == 0 else (f"{100 * r.gap:+.1f} %" if math.isfinite(r.gap) else "n/a")
                if model == "moldable":
                    cells = [_fmt(*r.values[m]) for m in ("blocking", "mean_execution_time", "cost")]
                    table.append([rank, r.entrant, *cells, ratio, gap, r.note])
                else:
                    cells = [
                        _fmt(*r.values["mean_response_time"]),
                        *[_fmt(*r.values.get(c, (math.nan, math.nan))) for c in classes],
                    ]
                    preempt = "" if r.rank == 0 else ("yes" if "preemptive" in r.kind.split(", ") else "no")
                    stable = "" if r.rank == 0 else ("yes" if r.stable else "UNSTABLE")
                    gaps = [_gap_cell(r, BOUND_LABELS), _gap_cell(r, ("balanced fairness",))]
                    table.append([rank, r.entrant, preempt, *cells, ratio, *gaps, stable])
            title = (
                f"{scenario}  {_x_title(model, scenario, x)}  ({len(config.seeds)} seeds x "
                f"{config.num_arrivals} arrivals, {config.num_warmup} warm-up)"
                + ("  ranked by cost" if model == "moldable" else "")
            )
            lines += render_table(title, head, table, markdown)
        st = report["standings"][scenario]
        xs = ", ".join(f"{x:g}" for x in config.loads or ())
        lines += render_table(
            f"{scenario}: standings over {'n' if model == 'moldable' else 'loads'} {xs}",
            ["entrant", "mean rank"],
            [[e, f"{r:.2f}"] for e, r in st],
            markdown,
        )
        if report["skipped"].get(scenario):
            left = "; ".join(f"{p}: {why}" for p, why in report["skipped"][scenario].items())
            left = f"left out (not defined on {scenario}): {left}"
            lines.append(textwrap.fill(left, 120, break_on_hyphens=False) + "\n")
    if model == "moldable":
        note = (
            f"cost = (1 - P_B) E[T] + {BLOCKING_COST:g} P_B per arrival (MSJMoldable-v0's, a lost job "
            f"priced at {BLOCKING_COST:g} execution-time units); LP optimum: the paper's optimum, P_B = 0 "
            "and E[T] = T* of Theorem 1 (the p-scheme's n -> infinity limit); a scheme that blocks more "
            "to run faster can cost less (a negative gap: the ranking depends on the price of a lost "
            "job); limit: each scheme's own n -> infinity values (Theorem 2; greedy's fluid floor)."
        )
    else:
        note = (
            "size-oblivious bound: with exponential sizes no policy that does not know the job sizes "
            "(whatever servers it assigns and however it schedules) has a smaller mean response time; "
            "a job never runs faster than the servers it may use, nor the system faster than all of "
            "them (msj_gym.analysis.compat_bound). Under other size laws the bound row is the service "
            "time over the largest capacity a job may use, a bound for every policy. Balanced "
            "fairness: exact mean response times of the "
            "paper's ideal allocation (Bonald & Comte 2017, eq. 9; with random assignment, of the servers "
            "the workload draws), insensitive to the size law; with exponential sizes FCFS and Algorithm 1 "
            "equal it (Theorem 2). A policy that chooses the servers itself (compat-least-loaded) may "
            "beat it."
        )
    lines.append(note if markdown else textwrap.fill(note, 120, break_on_hyphens=False))
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------------------
# Running and writing


def run_model_points(
    model: str,
    points: Sequence[Point],
    path: Path,
    progress: bool,
    *,
    backend: str,
    workers: int,
    address: str | None,
) -> list[dict[str, Any]]:
    """Run (or resume) ``points`` of ``model`` (``"moldable"`` or ``"compatibility"``) into the run file
    ``path`` with that model's runner and content key (the leaderboard's and the benchmark's alike)."""
    moldable = model == "moldable"
    return run_points(
        points,
        path,
        progress,
        backend=backend,
        workers=workers,
        address=address,
        run=run_moldable_point if moldable else run_compat_point,
        content=moldable_content if moldable else scenario_content,
    )


def run_model_leaderboard(
    config: ModelLeaderboardConfig,
    out: Path,
    *,
    backend: str = "local",
    workers: int | None = None,
    address: str | None = None,
    progress: bool = True,
) -> dict[str, Any]:
    """Run (or resume) a moldable or compatibility leaderboard into ``out`` and write its tables, CSV
    and plots; return ``{"rows", "standings", "skipped", "config", "files"}``. Every input is checked
    before anything is written; a folder of another configuration, or with runs of other content or
    code, is refused."""
    from .report import check_out, scenario_slug

    workers = workers if workers is not None else (os.cpu_count() or 1)
    check_backend(backend, workers, address)
    points, entrants, skipped = plan(config)
    with hold_folder(out) as writable:
        check_out(out, config, writable)
        results = run_model_points(
            config.model,
            points,
            out / "runs.jsonl",
            progress,
            backend=backend,
            workers=workers,
            address=address,
        )
        report = _report(config, points, results, entrants, skipped)
        names = [out / "leaderboard.md", out / "leaderboard.csv"]
        names += [
            out / f"leaderboard-{scenario_slug(s.replace('?', '-').replace('=', '-'))}.png"
            for s in config.scenarios
        ]
        if writable:
            report["files"] = _write(out, report, names)
        else:
            report["files"] = [f for f in names if f.exists()]
    return report


def _write(out: Path, report: dict[str, Any], names: list[Path]) -> list[Path]:
    config: ModelLeaderboardConfig = report["config"]
    what = "system sizes n" if config.model == "moldable" else "loads"
    intro = (
        f"# msj_gym leaderboard: the {config.model} model\n\n"
        f"Scenarios {', '.join(config.scenarios)}; {what} {', '.join(f'{x:g}' for x in config.loads or ())}; "
        f"seeds {', '.join(map(str, config.seeds))}; {config.num_arrivals} arrivals per run "
        f"({config.num_warmup} warm-up). Every entrant sees the same job streams per seed; ratios are paired "
        f"per seed (Student-t 95 % CI over seeds). Code {provenance()['git_revision']}.\n\n"
    )
    atomic_write_text(names[0], intro + format_model_tables(report, markdown=True) + "\n")
    metrics = sorted({m for r in report["rows"] for m in r.values})
    head = ["scenario", "x", "entrant", "kind", "rank", "seeds", "stable"]
    head += [f"{m}{s}" for m in metrics for s in ("", "_ci95")]
    head += ["vs", "ratio", "ratio_ci95", "diff", "diff_ci95", "gap", "gap_to", "limit"]
    rows = []
    for r in report["rows"]:
        cells = [r.scenario, r.x, r.entrant, r.kind, r.rank, r.seeds, r.stable]
        for m in metrics:
            cells += list(r.values.get(m, (math.nan, math.nan)))
        gap_to = next(iter(r.gaps), "")  # the first reference row, which "gap" is measured against
        cells += [r.vs, r.ratio, r.ratio_ci95, r.diff, r.diff_ci95, r.gap, gap_to, r.note]
        rows.append(cells)
    atomic_write_csv(names[1], head, rows)
    files = names[:2]
    for scenario, path in zip(config.scenarios, names[2:], strict=True):
        png = _plot(scenario, report, path)
        if png is not None:
            files.append(png)
    return files


def _plot(scenario: str, report: dict[str, Any], path: Path) -> Path | None:
    """Per metric a panel against the sweep (system size n, log scale; or load): each entrant's mean
    with its 95 % band (3 seeds or more), the reference as a dashed black line."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    config: ModelLeaderboardConfig = report["config"]
    model = config.model
    rows = [r for r in report["rows"] if r.scenario == scenario]
    if model == "moldable":
        panels = [
            ("cost", "cost per arrival"),
            ("blocking", "blocking probability P_B"),
            ("mean_execution_time", "E[T] of accepted jobs"),
        ]
    else:
        classes = [m for m in rows[0].values if m.startswith("T.")]
        panels = [("mean_response_time", "mean response time")]
        if len(classes) > 1:
            panels += [(c, f"mean response time, {c[2:]}") for c in classes]
    fig, axes = plt.subplots(1, len(panels), figsize=(5.0 * len(panels), 4.4), squeeze=False)
    bands = len(config.seeds) >= 3
    groups: dict[str, list[str]] = {}  # entrants with identical results share a curve, "a = b"
    for name in dict.fromkeys(r.entrant for r in rows):
        key = json.dumps(sorted((r.x, sorted(r.values.items())) for r in rows if r.entrant == name))
        groups.setdefault(key, []).append(name)
    names = [g[0] for g in groups.values()]
    shown = {g[0]: " = ".join(g) for g in groups.values()}
    colors = plt.get_cmap("tab10")
    for ax, (metric, label) in zip(axes[0], panels, strict=True):
        for i, name in enumerate(names):
            pts = sorted((r for r in rows if r.entrant == name), key=lambda r: r.x)
            xs = [r.x for r in pts]
            ys = [r.values.get(metric, (math.nan, math.nan))[0] for r in pts]
            if pts[0].rank == 0:
                ax.plot(xs, ys, ls="--", color="black", lw=1.2, label=name)
                continue
            color = colors(i % 10)
            ax.plot(xs, ys, marker="o", ms=4, color=color, lw=1.4, label=shown[name])
            ci = [r.values.get(metric, (math.nan, math.nan))[1] for r in pts]
            if bands:
                ax.fill_between(
                    xs,
                    [y - (c if math.isfinite(c) else 0.0) for y, c in zip(ys, ci, strict=True)],
                    [y + (c if math.isfinite(c) else 0.0) for y, c in zip(ys, ci, strict=True)],
                    color=color,
                    alpha=0.15,
                )
        if model == "moldable":
            ax.set_xscale("log")
            ax.set_xlabel("number of servers n")
        else:
            ax.set_yscale("log")
            ax.set_xlabel("load")
        ax.set_ylabel(label)
        ax.grid(True, alpha=0.3)
    axes[0][0].legend(fontsize=7)
    fig.suptitle(
        f"{scenario}: {len(config.seeds)} seeds x {config.num_arrivals} arrivals per point; "
        f"code {provenance()['git_revision'][:12]}" + ("; bands: 95 % CI over seeds" if bands else ""),
        fontsize=10,
    )
    fig.tight_layout()
    return atomic_savefig(fig, path, dpi=100)
