"""The track of the moldable loss system (Ghanbarian et al. (2024)): the named systems
(``002-linear-halfin-whitt``, ...; ``NAME?sizes=LAW`` for an inherent-size law other than Exp(1)) at a
sweep of system sizes ``n``, every scheme registered on the model, agents through ``MSJMoldable-v0``.

``--loads`` are the system sizes ``n``: a named system is a traffic regime, ``lam = 1 - beta n^-alpha``,
so its load is set by ``n``, as in the paper's Fig. 2. It ranks by the cost per arrival
``(1 - P_B) E[T] + c P_B`` with ``c`` = :data:`BLOCKING_COST` execution-time units per lost job, the cost
``MSJMoldable-v0`` pays, and shows the blocking probability ``P_B`` and the mean execution time
``E[T]`` of accepted jobs beside it. The paper has two criteria, blocking first (``P_B -> 0``) and then
``E[T]``, and no single figure; one number needs a price of a lost job, and the environment's is taken
so that the leaderboard scores what agents are trained on. Reference row: the paper's optimum,
``P_B = 0`` and ``E[T] = T*`` (LP (P), Theorem 1), whose cost is ``T*``. A scheme that trades blocking
for speed can cost less than that (a negative gap): near ``lam = 1`` greedy loses a third of the jobs
but runs the others in a third of ``T*``, and at ``c = 2`` that is cheaper; the ranking by cost
depends on ``c``, the ``P_B`` column says what it is made of. Each scheme's own ``n -> infinity``
limits (Theorem 2; greedy's fluid floor) are its row's last column.
"""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path
from typing import Any, ClassVar

from ..moldable import SIZE_LAWS
from ..report import fmt
from .base import Metric, Row, SystemTrack, policy_files, split_spec

__all__ = [
    "BLOCKING_COST",
    "TRACK",
    "MoldableTrack",
    "moldable_content",
    "moldable_system",
    "run_moldable_point",
]

#: The price of a lost job, in execution-time units (``MSJMoldable-v0``'s default ``blocking_cost``).
BLOCKING_COST = 2.0
MAX_SYSTEM_SIZE = 100_000  # servers of a moldable system in a sweep
NOTE = (
    f"cost = (1 - P_B) E[T] + {BLOCKING_COST:g} P_B per arrival (MSJMoldable-v0's, a lost job "
    f"priced at {BLOCKING_COST:g} execution-time units); LP optimum: the paper's optimum, P_B = 0 "
    "and E[T] = T* of Theorem 1 (the p-scheme's n -> infinity limit); a scheme that blocks more "
    "to run faster can cost less (a negative gap: the ranking depends on the price of a lost "
    "job); limit: each scheme's own n -> infinity values (Theorem 2; greedy's fluid floor)."
)
_LIMITED = ("moldable-p-scheme", "moldable-greedy", "moldable-reserved")  # schemes with known limits


def moldable_system(scenario: str, num_servers: int, law: str) -> Any:
    """The named moldable system (``002-SPEEDUP-REGIME``) with ``num_servers`` servers and size law
    ``law`` (unit mean)."""
    from ...moldable.model import MoldableSystem
    from ...moldable.systems import MOLDABLE_SYSTEMS, REGIMES, SPEED_UPS

    speed, regime = MOLDABLE_SYSTEMS[split_spec(scenario)[0]]
    alpha, beta = REGIMES[regime]
    return MoldableSystem.single(
        num_servers, SPEED_UPS[speed], alpha=alpha, beta=beta, service_time=SIZE_LAWS[law]
    )


def env_keywords(build: dict[str, Any]) -> dict[str, Any]:
    """``MSJMoldable-v0``'s keywords of a point's ``build``: its size law by name becomes ``service_time``."""
    out = {k: v for k, v in build.items() if k != "sizes"}
    out["service_time"] = SIZE_LAWS[build.get("sizes", "exponential")]
    return out


def run_moldable_point(point: Any) -> dict[str, Any]:
    """One seeded run of a moldable scheme (:class:`~msj_gym.moldable.LossSimulator`), or of an agent
    through ``MSJMoldable-v0`` (the same simulator, the same job stream for the seed)."""
    from ..moldable import loss_row, run_loss

    system = moldable_system(point.scenario, point.build["num_servers"], point.build["sizes"])
    if point.agent is not None:
        from ..agents import run_agent

        where = f"{point.scenario} at n = {point.build['num_servers']} (seed {point.seed})"
        return loss_row(system, run_agent(point, "moldable", env_keywords(point.build), where))
    return run_loss(system, point)


def _moldable_code(point: Any) -> list[str]:
    root = Path(__file__).resolve().parents[2]
    files = [str(f) for f in (root / "moldable").glob("*.py")]
    files += [str(root / "analysis" / "moldable.py"), str(root / "experiments" / "moldable.py")]
    # an agent's checkpoint and the envs are added by the runner (runner._code_files)
    return files + ([] if point.agent is not None else policy_files(point.policy))


run_moldable_point.code_files = _moldable_code  # type: ignore[attr-defined]


def moldable_content(point: Any) -> str:
    """A hash of the moldable system a point runs (speed-up, rates, size law, n)."""
    system = moldable_system(point.scenario, point.build["num_servers"], point.build["sizes"])
    return hashlib.sha256(json.dumps(system.to_dict(), sort_keys=True).encode()).hexdigest()[:16]


def _fmt(x: float, ci: float | None = None, digits: int = 4) -> str:
    return fmt(x, ci, digits, missing_ci="")  # a model run's missing interval is left blank


class MoldableTrack(SystemTrack):
    """The moldable loss system: see the module docstring."""

    model = "moldable"
    x_name = "n"
    x_plural = "system sizes n"
    default_loads = (250.0, 1000.0, 4000.0)
    default_arrivals = 200_000
    metrics: ClassVar[dict[str, Metric]] = {
        "blocking": Metric("P_B", False, "blocking_ci95"),
        "mean_execution_time": Metric("E[T]", False, "execution_ci95"),
        "cost": Metric("its cost per arrival"),
    }
    default_metric = "cost"
    size_laws = tuple(SIZE_LAWS)
    run = staticmethod(run_moldable_point)
    content = staticmethod(moldable_content)
    note = NOTE

    def check_loads(self, loads: tuple[float, ...], text: str, scenarios: Any) -> tuple[float, ...]:
        for n in loads:
            if n != int(n) or not 2 <= n <= MAX_SYSTEM_SIZE:
                raise ValueError(
                    f"--loads {text!r}: a moldable system sweeps its number of servers n (integers "
                    f"from 2 to {MAX_SYSTEM_SIZE}; its regime sets the load, lam = 1 - beta n^-alpha), "
                    f"got {n:g}"
                )
        return tuple(float(int(n)) for n in loads)

    def build(self, scenario: str, x: float) -> dict[str, Any]:
        return {"num_servers": int(x), "sizes": self.law(scenario)}

    def env_build(self, build: dict[str, Any]) -> dict[str, Any]:
        return env_keywords(build)

    def where(self, scenario: str, x: float) -> str:
        return f"at n = {x:g}"

    def unsupported(self, policy: Any, scenario: str, source: Any, x: float) -> str | None:
        from ...registry import make_moldable_policy

        made = make_moldable_policy(policy) if isinstance(policy, str) else policy
        try:
            made.prepare(moldable_system(scenario, int(x), self.law(scenario)))
        except ValueError as exc:
            return str(exc)
        return None

    def identity(self, config: Any, identity: dict[str, Any]) -> dict[str, Any]:
        return {**super().identity(config, identity), "blocking_cost": BLOCKING_COST}

    def run_values(self, run: dict[str, Any]) -> dict[str, float]:
        pb, et = float(run["blocking"]), float(run["mean_execution_time"])
        return {"blocking": pb, "mean_execution_time": et, "cost": (1 - pb) * et + BLOCKING_COST * pb}

    def references(self, metric: str, scenario: str, x: float, source: Any) -> list[Row]:
        return [reference_row(scenario, x, metric)]

    def finish(self, rows: list[Row], scenario: str, x: float) -> None:
        from ...moldable.systems import MOLDABLE_SYSTEMS
        from ..moldable import limits

        speed = MOLDABLE_SYSTEMS[split_spec(scenario)[0]][0]
        lam = moldable_system(scenario, int(x), "exponential").classes[0].arrival_rate
        for row in rows:
            if row.entrant in _LIMITED:
                lim = limits(speed, row.entrant, lam)
                row.note = f"{lim['blocking']:.3g} / {lim['mean_execution_time']:.4g}"

    def x_title(self, scenario: str, x: float) -> str:
        lam = moldable_system(scenario, int(x), "exponential").classes[0].arrival_rate
        return f"n = {int(x)} (lam = {lam:.5g})"

    def standings_axis(self) -> str:
        return "n"

    def head(self, config: Any, full: bool) -> list[str]:
        ref_word = "ratio to reference" if config.reference else "ratio to leader"
        head = ["rank", "entrant", "P_B ± 95% CI", "E[T] ± 95% CI", "cost ± 95% CI", ref_word]
        return [*head, "gap to T*", "limit n->inf (P_B / E[T])"]

    def reference_cells(self, ref: Row, config: Any, full: bool) -> list[str]:
        return ["-", ref.entrant, *self._values(ref), "", "", ref.note]

    def cells(self, r: Row, config: Any, full: bool) -> list[str]:
        ratio = _fmt(r.ratio, r.ratio_ci95, 3) + (" (ref)" if r.entrant == r.vs else "")
        gap = f"{100 * r.gap:+.1f} %" if math.isfinite(r.gap) else "n/a"
        return [str(r.rank), r.entrant, *self._values(r), ratio, gap, r.note]

    def _values(self, r: Row) -> list[str]:
        return [_fmt(*r.values[m]) for m in ("blocking", "mean_execution_time", "cost")]

    def plot(self, scenario: str, report: dict[str, Any], path: Path) -> Path | None:
        from ..leaderboard_plot import plot_sweep

        panels = [
            ("cost", "cost per arrival"),
            ("blocking", "blocking probability P_B"),
            ("mean_execution_time", "E[T] of accepted jobs"),
        ]
        return plot_sweep(
            scenario, report, self.reference_rows_first(report, scenario), path, panels, log_x=True
        )


def reference_row(scenario: str, x: float, metric: str = "cost") -> Row:
    """The reference row of a point: the LP optimum (the ``n -> infinity`` limit: ``P_B = 0``,
    ``E[T] = T*``, cost ``T*``)."""
    from ...analysis.moldable import lp_optimum

    c = moldable_system(scenario, int(x), "exponential").classes[0]
    t_star = lp_optimum(c.speed_up, c.load).mean_execution_time
    values = {
        "blocking": (0.0, math.nan),
        "mean_execution_time": (t_star, math.nan),
        "cost": (t_star, math.nan),
    }
    return Row(scenario, x, "LP optimum (n -> infinity)", "reference", 0, values, True, 0, metric)


TRACK = MoldableTrack()
