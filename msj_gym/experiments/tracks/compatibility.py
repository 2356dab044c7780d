"""The track of job-server compatibility graphs (Bonald & Comte (2017)): the named systems
(``003-random-2``, ...; ``NAME?sizes=LAW`` for a size law of the paper other than Exp(1)) at a sweep of
loads ``rho`` in (0, 1), every policy registered on the model, agents choosing the servers through
``CompatAssign-v0``.

It ranks by the mean response time (shown overall; per class in the CSV). Its reference rows: the
size-oblivious bound (exact, exponential sizes only: no policy that does not know the job sizes,
whatever servers it assigns, does better; :mod:`msj_gym.analysis.compat_bound`; under other size laws
the weaker service-time bound, valid for every policy) and balanced fairness (exact; for exponential
sizes it is FCFS's and Algorithm 1's, Theorem 2), with each entrant's gap to both. A load at which a
system is unstable (Theorem 1) is refused before any run.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, ClassVar

from ...workloads.compat import PAPER_SIZE_DISTRIBUTIONS
from ..report import fmt
from ..runner import scenario_content
from .base import Metric, Row, SystemTrack, policy_files, split_spec

__all__ = [
    "BOUND_LABELS",
    "TRACK",
    "CompatibilityTrack",
    "compat_workload",
    "reference_rows",
    "run_compat_point",
]

#: The lower-bound rows: with exponential sizes, and under any size law.
BOUND_LABELS = ("size-oblivious bound (exact)", "service-time bound (any policy)")
NOTE = (
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


def compat_workload(scenario: str, load: float, law: str) -> Any:
    """The named compatibility system at load ``rho`` with size law ``law``."""
    from ...workloads.compat import build_compat_scenario

    return build_compat_scenario(split_spec(scenario)[0], load=load, distribution=law)


def run_compat_point(point: Any) -> dict[str, Any]:
    """One seeded run of a compatibility-model scheduler (the runner's own queueing run), or of an
    agent choosing the servers through ``CompatAssign-v0`` (the same job stream for the seed)."""
    from ..runner import result_row, run_point

    if point.agent is not None:
        from ..agents import load_agent, run_agent

        if load_agent(point.agent, bare=True).native is None:
            return result_row(run_agent(point, model="compatibility"))
    # an agent with a native twin runs as that policy there (run_point's own rule)
    return run_point(point)


def _compat_code(point: Any) -> list[str]:
    root = Path(__file__).resolve().parents[2]
    files = [str(root / "pooled.py"), str(root / "analysis" / "balanced_fairness.py")]
    # an agent's own files (its native twin's among them) are in every agent run's key already
    return files + ([] if point.agent is not None else policy_files(point.policy))


run_compat_point.code_files = _compat_code  # type: ignore[attr-defined]


def reference_rows(scenario: str, x: float, law: str, metric: str = "mean_response_time") -> list[Row]:
    """The reference rows of a point: the lower bound (:data:`BOUND_LABELS`) and balanced fairness
    (exact), where it can be computed."""
    from ...analysis.balanced_fairness import workload_performance
    from ...analysis.compat_bound import service_time_bound, size_oblivious_bound

    wl = compat_workload(scenario, x, law)
    try:
        # both bound every size-oblivious policy; the chain's is the tighter one unless classes differ
        chain = size_oblivious_bound(wl).mean_response_time
        bound, label = max(chain, service_time_bound(wl)), BOUND_LABELS[0]
    except ValueError:  # sizes not exponential (or beyond every policy's capacity: refused before)
        bound, label = service_time_bound(wl), BOUND_LABELS[1]
    values = {"mean_response_time": (bound, math.nan)}
    refs = [Row(scenario, x, label, "reference", 0, values, True, 0, metric)]
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
    return [*refs, Row(scenario, x, label, "reference", 0, values, True, 0, metric)]


def _gap_cell(row: Row, references: tuple[str, ...]) -> str:
    """``row``'s gap to the reference row whose label starts with one of ``references`` ("n/a" if none)."""
    gap = next((g for label, g in row.gaps.items() if label.startswith(references)), math.nan)
    return f"{100 * gap:+.1f} %" if math.isfinite(gap) else "n/a"


def _fmt(x: float, ci: float | None = None, digits: int = 4) -> str:
    return fmt(x, ci, digits, missing_ci="")  # a model run's missing interval is left blank


class CompatibilityTrack(SystemTrack):
    """Job-server compatibility graphs: see the module docstring."""

    model = "compatibility"
    metrics: ClassVar[dict[str, Metric]] = {
        "mean_response_time": Metric("the mean response time", False, "ci95_half_width")
    }
    size_laws = tuple(PAPER_SIZE_DISTRIBUTIONS)
    run = staticmethod(run_compat_point)
    content = staticmethod(scenario_content)
    note = NOTE

    def check_loads(self, loads: tuple[float, ...], text: str, scenarios: Any) -> tuple[float, ...]:
        from ...analysis.balanced_fairness import stability_violation

        for rho in loads:
            if not 0 < rho < 1:
                raise ValueError(f"--loads {text!r}: a compatibility system's load is in (0, 1), got {rho:g}")
            for s in scenarios:
                why = stability_violation(compat_workload(s, rho, self.law(s)))
                if why is not None:
                    raise ValueError(
                        f"--loads {text!r}: {s} is unstable at load {rho:g} (Bonald & Comte 2017, "
                        f"Theorem 1): {why}"
                    )
        return loads

    def build(self, scenario: str, x: float) -> dict[str, Any]:
        return {"load": x, "distribution": self.law(scenario)}

    def unsupported(self, policy: Any, scenario: str, source: Any, x: float) -> str | None:
        from ...registry import supports

        return supports(policy, compat_workload(scenario, x, self.law(scenario)))

    def agent_kind(self, loaded: Any) -> tuple[bool, bool, tuple[str, ...]]:
        return loaded.env_kwargs.get("scheduler") == "balanced-fair", False, ()  # Algorithm 1 preempts

    def references(self, metric: str, scenario: str, x: float, source: Any) -> list[Row]:
        return reference_rows(scenario, x, self.law(scenario), metric)

    def head(self, config: Any, full: bool) -> list[str]:
        ref_word = "ratio to reference" if config.reference else "ratio to leader"
        return ["rank", "entrant", "preempt", "mean T ± 95% CI", ref_word, "above the bound", *self._last]

    _last = ("vs balanced fairness", "stable")

    def reference_cells(self, ref: Row, config: Any, full: bool) -> list[str]:
        return ["-", ref.entrant, "", _fmt(*ref.values["mean_response_time"]), "", "", "", ""]

    def cells(self, r: Row, config: Any, full: bool) -> list[str]:
        preempt = "yes" if "preemptive" in r.kind.split(", ") else "no"
        ratio = _fmt(r.ratio, r.ratio_ci95, 3) + (" (ref)" if r.entrant == r.vs else "")
        gaps = [_gap_cell(r, BOUND_LABELS), _gap_cell(r, ("balanced fairness",))]
        stable = "yes" if r.stable else "UNSTABLE"
        return [str(r.rank), r.entrant, preempt, _fmt(*r.values["mean_response_time"]), ratio, *gaps, stable]

    def plot(self, scenario: str, report: dict[str, Any], path: Path) -> Path | None:
        from ..leaderboard_plot import plot_sweep

        rows = self.reference_rows_first(report, scenario)
        return plot_sweep(scenario, report, rows, path, [("mean_response_time", "mean response time")])


TRACK = CompatibilityTrack()
