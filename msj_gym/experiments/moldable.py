"""The moldable-jobs paper's experiments (Ghanbarian et al. (2024), moldable jobs, Sec. 7):
Fig. 2 (blocking probability and mean execution time of accepted jobs vs the number of servers) and
Table 1 (insensitivity to the inherent-size law at n = 4000). A registry beside ``FIGURES``
(``MOLDABLE_FIGURES``), run through the same resumable ``runner.run_points`` and the same
``make_figure`` / ``msj-gym figure NAME`` command; each writes ``NAME.csv`` (mean and 95 % CI per
point, with the asymptotic limit and, for Table 1, the paper's value beside it) and ``NAME.png``.

Runs follow the paper's protocol: every run starts empty and measures its first ``arrivals`` arrivals
(warm-up 0). Parameters not in the paper's surviving text are our fits to Table 1 or defaults.
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..analysis.moldable import lp_optimum
from ..atomic import atomic_path, atomic_savefig
from ..metrics.stats import replication_ci
from ..moldable.loss import MoldableResult
from ..moldable.model import MoldableSystem
from ..moldable.systems import REGIMES, SPEED_UPS
from .plotting import pyplot
from .runner import Point

__all__ = [
    "MOLDABLE_FIGURES",
    "PAPER_TABLE1",
    "MoldableFigure",
    "limits",
    "run_moldable_point",
    "write_moldable_figure",
]

SIZE_LAWS: dict[str, dict[str, Any]] = {  # unit mean; the paper's Mixed-Erlang / Pareto parameters are lost
    "exponential": {"distribution": "exponential", "mean": 1.0},
    "deterministic": {"distribution": "deterministic", "value": 1.0},
    "hyperexponential": {
        "distribution": "hyperexponential",
        "probabilities": [0.5, 0.5],
        "means": [0.5, 1.5],
    },
    "pareto": {"distribution": "pareto", "alpha": 5 / 3, "mean": 1.0},
}
POLICY_LABEL = {"moldable-p-scheme": "p-scheme", "moldable-greedy": "greedy"}

# Paper Table 1, E[T] / P_B, rows in the order (speed-up, regime) below; the paper's
# "Mixed-Erlang" column is set beside our hyperexponential default.
PAPER_TABLE1: dict[tuple[str, str], dict[str, tuple[float, float]]] = {
    ("linear", "mean-field"): {
        "exponential": (0.2000, 0.0),
        "deterministic": (0.2000, 0.0),
        "hyperexponential": (0.2000, 0.0),
        "pareto": (0.1973, 0.0),
    },
    ("linear", "Halfin-Whitt"): {
        "exponential": (0.2000, 0.0267),
        "deterministic": (0.2000, 0.0268),
        "hyperexponential": (0.2000, 0.0267),
        "pareto": (0.1970, 0.0209),
    },
    ("linear", "super-Halfin-Whitt"): {
        "exponential": (0.2000, 0.0274),
        "deterministic": (0.2000, 0.0274),
        "hyperexponential": (0.2000, 0.0274),
        "pareto": (0.1971, 0.0219),
    },
    ("sub-linear", "mean-field"): {
        "exponential": (0.3782, 0.0204),
        "deterministic": (0.3782, 0.0202),
        "hyperexponential": (0.3782, 0.0203),
        "pareto": (0.3708, 0.0149),
    },
    ("sub-linear", "Halfin-Whitt"): {
        "exponential": (0.9930, 0.0126),
        "deterministic": (0.9937, 0.0126),
        "hyperexponential": (0.9933, 0.0126),
        "pareto": (0.9621, 0.0041),
    },
    ("sub-linear", "super-Halfin-Whitt"): {
        "exponential": (0.9976, 0.0125),
        "deterministic": (0.9984, 0.0125),
        "hyperexponential": (0.9979, 0.0125),
        "pareto": (0.9669, 0.0041),
    },
}
METRICS = (("blocking", "blocking probability"), ("mean_execution_time", "mean execution time"))


def limits(speed: str, policy: str, lam: float) -> dict[str, float]:
    """Asymptotic (n -> infinity) values at load ``lam``: the p-scheme's (P_B -> 0, E[T] -> T*,
    Theorem 2) and greedy's fluid limit (P_B -> 1 - s(d)/(d lam), E[T] -> 1/s(d) when
    lam > s(d)/d, else those of the p-scheme, which it then is)."""
    s = SPEED_UPS[speed]
    d = len(s)
    if policy == "moldable-greedy" and lam > s[-1] / d:
        return {"blocking": 1 - s[-1] / (d * lam), "mean_execution_time": 1 / s[-1]}
    return {"blocking": 0.0, "mean_execution_time": lp_optimum(s, lam).mean_execution_time}


@dataclass(frozen=True)
class MoldableFigure:
    """A sweep over ``num_servers`` x regimes x speed-ups x policies x size laws, laid out as a
    figure vs n (``kind="vs-n"``) or as the paper's Table 1 (``kind="table"``)."""

    title: str
    source: str
    kind: str
    num_servers: tuple[int, ...]
    regimes: tuple[str, ...]
    speed_ups: tuple[str, ...]
    policies: tuple[str, ...]
    size_laws: tuple[str, ...]
    arrivals: int = 1_000_000

    def points(self, arrivals: int, seeds: int) -> list[Point]:
        pts = []
        for regime in self.regimes:
            alpha, beta = REGIMES[regime]
            for speed in self.speed_ups:
                for policy in self.policies:
                    for law in self.size_laws:
                        for n in self.num_servers:
                            build = {
                                "num_servers": n,
                                "speed_up": list(SPEED_UPS[speed]),
                                "alpha": alpha,
                                "beta": beta,
                                "service_time": SIZE_LAWS[law],
                            }
                            label = f"{regime}|{speed}|{policy}|{law}"
                            for seed in range(seeds):
                                pts.append(Point(label, n, "moldable", policy, seed, arrivals, build, {}, 0))
        return pts


def run_moldable_point(point: Point) -> dict[str, Any]:
    """One seeded run of a moldable figure's point (its system in ``point.build``)."""
    from ..moldable.model import MoldableSystem

    b = point.build
    system = MoldableSystem.single(
        b["num_servers"], b["speed_up"], alpha=b["alpha"], beta=b["beta"], service_time=b["service_time"]
    )
    return run_loss(system, point)


def run_loss(system: MoldableSystem, point: Point) -> dict[str, Any]:
    """One seeded run of ``point.policy`` (a moldable scheme's id, with ``point.params``) on ``system``
    (a :class:`~msj_gym.moldable.MoldableSystem`): the row the run store keeps."""
    from ..moldable.loss import LossSimulator
    from ..registry import make_moldable_policy

    policy = make_moldable_policy(point.policy, **point.params)
    res = LossSimulator(
        system, policy, seed=point.seed, num_arrivals=point.num_arrivals, warmup=point.warmup
    ).run()
    return loss_row(system, res)


def loss_row(system: MoldableSystem, res: MoldableResult) -> dict[str, Any]:
    """The row the run store keeps of a :class:`~msj_gym.moldable.MoldableResult` on ``system``."""
    return {
        "blocking": res.blocking,
        "blocking_ci95": res.blocking_ci95,
        "mean_execution_time": res.mean_execution_time,
        "execution_ci95": res.execution_ci95,
        "busy_fraction": res.busy_fraction,
        "lam": system.classes[0].arrival_rate,
        "stable": True,  # a loss system: nothing grows
    }


MOLDABLE_FIGURES: dict[str, MoldableFigure] = {
    "002-fig2": MoldableFigure(
        title="Moldable jobs, loss system: blocking and mean execution time vs n, p-scheme vs greedy",
        source="Ghanbarian et al. (2024), Fig. 2 (n grid our default)",
        kind="vs-n",
        num_servers=(250, 500, 1000, 2000, 4000),
        regimes=tuple(REGIMES),
        speed_ups=tuple(SPEED_UPS),
        policies=("moldable-p-scheme", "moldable-greedy"),
        size_laws=("exponential",),
    ),
    "002-table1": MoldableFigure(
        title="Moldable jobs, n = 4000, p-scheme: insensitivity to the inherent-size law",
        source="Ghanbarian et al. (2024), Table 1 (n and regimes fitted to it)",
        kind="table",
        num_servers=(4000,),
        regimes=tuple(REGIMES),
        speed_ups=tuple(SPEED_UPS),
        policies=("moldable-p-scheme",),
        size_laws=tuple(SIZE_LAWS),
    ),
}


def _aggregate(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    groups: dict[tuple[str, float], list[dict[str, Any]]] = {}
    for r in rows:
        groups.setdefault((r["series"], r["x"]), []).append(r)
    out = []
    for (series, n), runs in groups.items():
        regime, speed, policy, law = series.split("|")
        lam = runs[0]["lam"]
        lim = limits(speed, policy, lam)
        for metric, _ in METRICS:
            values = [r[metric] for r in runs if r[metric] is not None and math.isfinite(r[metric])]
            est = replication_ci(values)
            hw = est.ci95_half_width
            if len(runs) == 1:  # a single run keeps its own batch-means interval
                hw = runs[0]["blocking_ci95" if metric == "blocking" else "execution_ci95"]
            paper = PAPER_TABLE1.get((speed, regime), {}).get(law)
            out.append(
                {
                    "regime": regime,
                    "speed_up": speed,
                    "policy": policy,
                    "size_law": law,
                    "num_servers": int(n),
                    "lam": lam,
                    "metric": metric,
                    "mean": est.mean,
                    "ci95": hw,
                    "seeds": len(runs),
                    "limit": lim[metric],
                    "paper": ""
                    if paper is None or int(n) != 4000
                    else paper[0 if metric != "blocking" else 1],
                }
            )
    return out


def write_moldable_figure(name: str, out: Path, rows: list[dict[str, Any]]) -> tuple[Path, Path | None]:
    """``out/NAME.csv`` of the runs of ``MOLDABLE_FIGURES[name]`` (their means with intervals, the
    schemes' limits and the paper's values) and, with matplotlib, ``out/NAME.png``; both paths (the
    PNG's is None without it)."""
    fig = MOLDABLE_FIGURES[name]
    table = _aggregate(rows)
    csv_path = out / f"{name}.csv"
    with atomic_path(csv_path) as tmp, tmp.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(table[0]))
        writer.writeheader()
        writer.writerows(table)
    plot = _plot_vs_n if fig.kind == "vs-n" else _plot_table
    return csv_path, plot(fig, table, out / f"{name}.png")


def _plot_vs_n(fig: MoldableFigure, table: list[dict[str, Any]], path: Path) -> Path | None:
    plt = pyplot()
    if plt is None:
        return None
    figure, axes = plt.subplots(2, len(fig.regimes), figsize=(5 * len(fig.regimes), 8), squeeze=False)
    for col, regime in enumerate(fig.regimes):
        for row, (metric, label) in enumerate(METRICS):
            ax = axes[row, col]
            for speed in fig.speed_ups:
                for policy in fig.policies:
                    pts = sorted(
                        (
                            r
                            for r in table
                            if (r["regime"], r["speed_up"], r["policy"], r["metric"])
                            == (regime, speed, policy, metric)
                        ),
                        key=lambda r: r["num_servers"],
                    )
                    xs = [r["num_servers"] for r in pts]
                    err = [r["ci95"] if math.isfinite(r["ci95"]) else 0 for r in pts]
                    greedy = policy == "moldable-greedy"
                    line = ax.errorbar(
                        xs,
                        [r["mean"] for r in pts],
                        yerr=err,
                        marker="s" if greedy else "o",
                        ms=4 if greedy else 7,
                        ls="--" if greedy else "-",
                        capsize=3,
                        label=f"{speed}, {POLICY_LABEL.get(policy, policy)}",
                    )
                    ax.plot(xs, [r["limit"] for r in pts], ":", color=line[0].get_color(), lw=1)
            ax.set_xscale("log")
            ax.set_xticks(fig.num_servers)
            ax.set_xticklabels([str(n) for n in fig.num_servers], fontsize=7)
            ax.minorticks_off()
            ax.set_xlabel("number of servers n")
            ax.set_ylabel(label)
            ax.set_title(regime, fontsize=9)
            ax.grid(True, alpha=0.3)
            if row == 0 and col == 0:
                ax.legend(fontsize=7)
    figure.suptitle(
        f"{fig.title}\n{fig.source}; 95 % CIs; dotted: n -> infinity limits (T*, greedy's fluid floor); "
        "linear speed-up: greedy is the p-scheme (same runs)",
        fontsize=9,
    )
    figure.tight_layout()
    return atomic_savefig(figure, path, dpi=110)


def _plot_table(fig: MoldableFigure, table: list[dict[str, Any]], path: Path) -> Path | None:
    plt = pyplot()
    if plt is None:
        return None
    rows = [(s, r) for s in fig.speed_ups for r in fig.regimes]
    figure, axes = plt.subplots(1, 2, figsize=(13, 4.5))
    for ax, (metric, label) in zip(axes, METRICS, strict=True):
        for j, law in enumerate(fig.size_laws):
            xs, ys, es, ps = [], [], [], []
            for i, (speed, regime) in enumerate(rows):
                r = next(
                    r
                    for r in table
                    if (r["speed_up"], r["regime"], r["size_law"], r["metric"])
                    == (speed, regime, law, metric)
                )
                xs.append(i + 0.15 * (j - 1.5))
                ys.append(r["mean"])
                es.append(r["ci95"] if math.isfinite(r["ci95"]) else 0)
                ps.append(r["paper"] if r["paper"] != "" else math.nan)
            line = ax.errorbar(xs, ys, yerr=es, fmt="o", capsize=3, label=f"{law} (sim)")
            ax.plot(xs, ps, "x", color=line[0].get_color(), ms=8)
        ax.set_xticks(range(len(rows)))
        ax.set_xticklabels([f"{s}\n{r}" for s, r in rows], fontsize=7)
        ax.set_ylabel(label)
        ax.set_yscale("log" if metric == "mean_execution_time" else "linear")
        ax.grid(True, alpha=0.3)
    axes[0].legend(fontsize=7)
    figure.suptitle(f"{fig.title}\n{fig.source}; dots: simulated (95 % CI), crosses: paper", fontsize=9)
    figure.tight_layout()
    return atomic_savefig(figure, path, dpi=110)
