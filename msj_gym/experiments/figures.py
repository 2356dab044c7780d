"""The papers' figures as data: which runs, which metrics, which analysis curves. ``make_figure`` runs
(or reuses) the points, writes ``NAME.csv`` (mean and 95 % CI per series, x and metric) and
``NAME.png``. Chen et al. (2026), Quickswap: the sweeps of its Sec. 6 (parameters the text lost are the ones
that reproduce its figures); Anselmi & Doncel (2024), Balanced Splitting: Figs. 1-3; Bonald & Comte
(2017), balanced fairness: Figs. 1-4, one figure per job-size distribution (a, b, c as in the paper,
plus ``exp``); Ghanbarian et al. (2024), moldable jobs, has its own
registry, ``MOLDABLE_FIGURES`` in :mod:`.moldable`, served by the same ``make_figure``.
"""

from __future__ import annotations

import csv
import dataclasses
import math
import textwrap
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..atomic import atomic_path, atomic_savefig, atomic_write_csv
from .moldable import MOLDABLE_FIGURES, run_moldable_point, write_moldable_figure
from .plotting import pyplot
from .runner import Point, aggregate, hold_folder, run_points, scenario_content

__all__ = ["FIGURES", "SAMPLE_PATHS", "Figure", "all_figures", "make_figure", "sample_path"]


@dataclass(frozen=True)
class Figure:
    """A figure: its runs (``series -> (scenario, policy, params)`` over ``xs``, where x is the
    ``x_field`` workload override or a policy parameter), its panels (metric, label) and optional
    analysis curves."""

    title: str
    source: str
    scenario: str
    x_field: str
    xs: tuple[float, ...]
    series: dict[str, tuple[str, dict[str, Any]]]
    panels: tuple[tuple[str, str], ...]
    build: dict[str, Any] = field(default_factory=dict)
    xlabel: str = "arrival rate"
    logy: bool = True
    arrivals: int = 1_000_000
    options: dict[str, Any] = field(default_factory=dict)  # Simulator keywords for every run
    analysis: Callable[[str, float], dict[str, float | None]] | None = None

    def points(self, arrivals: int, seeds: int) -> list[Point]:
        pts = []
        for label, (policy, params) in self.series.items():
            for x in self.xs:
                build, prm = dict(self.build), dict(params)
                if self.x_field in ("arrival_rate", "load", "num_servers"):
                    build[self.x_field] = x
                else:
                    prm[self.x_field] = type(params.get(self.x_field, x))(x)
                for seed in range(seeds):
                    pt = Point(label, x, self.scenario, policy, seed, arrivals, build, prm)
                    pts.append(dataclasses.replace(pt, options=dict(self.options)))
        return pts


def _one_or_all(metric: str, ell: int, lam: float) -> float | None:
    from ..analysis.one_or_all import one_or_all_msfq

    try:
        a = one_or_all_msfq(32, 0.9 * lam, 0.1 * lam, ell)
    except ValueError:
        return None  # outside the analysis' domain (low load)
    return {
        "mean_response_time": a.mean_response_time,
        "weighted_mean_response_time": a.weighted_mean_response_time,
        "per_class.light": a.light_response_time,
        "per_class.heavy": a.heavy_response_time,
    }.get(metric)


def _fig2_analysis(metric: str, ell: float) -> float | None:
    return _one_or_all(metric, int(ell), 7.25)


def _fig3_analysis(metric: str, lam: float) -> dict[str, float | None]:
    return {"MSF (analysis)": _one_or_all(metric, 0, lam), "MSFQ (analysis)": _one_or_all(metric, 31, lam)}


ONE_OR_ALL_LAMBDAS = tuple(round(5.0 + 0.25 * i, 2) for i in range(12))  # 5.0 .. 7.75
QUICKSWAP_FAMILY: dict[str, tuple[str, dict[str, Any]]] = {
    "MSF": ("msf", {}),
    "First-Fit": ("first-fit", {}),
    "Static Quickswap": ("static-quickswap", {}),
    "Adaptive Quickswap": ("adaptive-quickswap", {}),
}
FOUR_CLASS_FAMILY = {**QUICKSWAP_FAMILY, "nMSR": ("nmsr", {})}
# Borg cell B: long runs, and queues of 1e5 jobs and more are the steady state of the non-preemptive
# policies near lambda* = 4.96, so the runaway guard is raised.
BORG: dict[str, Any] = {
    "scenario": "borg-cellb",
    "x_field": "arrival_rate",
    "xs": (3.0, 3.5, 4.0, 4.5, 4.8),
    "arrivals": 10_000_000,
    "options": {"max_jobs_in_system": 5_000_000},
}


# --- Bonald & Comte (2017): job-server compatibility graphs, balanced fairness ----------------------
BF_LABEL = "balanced fairness (analysis)"
BF_SERIES = {
    "FCFS": ("compat-fcfs", {}),
    "m=1": ("balanced-fair", {"m": 1.0}),
    "m=5": ("balanced-fair", {"m": 5.0}),
}
BF_LOADS = (0.1, 0.3, 0.5, 0.7, 0.8, 0.9)
BF_DISTRIBUTIONS = {"a": "bimodal", "b": "hyperexponential", "c": "zipf"}


def _bf_analysis(scenario: str, distribution: str) -> Callable[[str, float], dict[str, float | None]]:
    """Balanced-fair reference (exact for exponential sizes, Theorem 2) for a Bonald & Comte figure's
    metrics."""

    def analysis(metric: str, load: float) -> dict[str, float | None]:
        from ..analysis.balanced_fairness import workload_performance
        from ..workloads.compat import build_compat_scenario

        wl = build_compat_scenario(scenario, load=load, distribution=distribution)
        perf = workload_performance(wl)
        names = [c.name for c in wl.classes]
        for i, name in enumerate(names):
            if metric == f"per_class.{name}":
                return {BF_LABEL: float(perf.mean_delay[i])}
            if metric == f"policy_metrics.service_rate.{name}":
                return {BF_LABEL: float(perf.mean_service_rate[i])}
        return {}

    return analysis


# Anselmi & Doncel (2024), Balanced Splitting: the policies of its Figs. 1-3. "MSF" there is the preemptive
# Most Servers First of its Sec. 2; BS-pi runs with pi = FCFS (Sec. 6).
BS_FAMILY: dict[str, tuple[str, dict[str, Any]]] = {
    "BS-FCFS": ("bs", {}),
    "FCFS": ("fcfs", {}),
    "MSF": ("msf-preemptive", {}),
    "ServerFilling": ("server-filling", {}),
    "ServerFilling-SRPT": ("server-filling-srpt", {}),
    "First-Fit SRPT": ("first-fit-srpt", {}),
    "First-Fit": ("first-fit", {}),
}
BS_PANELS = (
    ("mean_response_time", "mean response time"),
    ("policy_metrics.p_helpers", "P_H (BS-FCFS: fraction of jobs served by the helpers)"),
)


def _bs_analysis(scenario: str, x_field: str, build: dict[str, Any]) -> Callable[[str, float], dict]:
    """ModifiedBS-pi's P_H (Anselmi & Doncel (2024), eq. (16), exact by Erlang B): Corollary 1's upper bound
    on BS-pi's."""

    def analysis(metric: str, x: float) -> dict[str, float | None]:
        if metric != "policy_metrics.p_helpers":
            return {}
        from ..analysis.balanced_splitting import helper_probabilities
        from .runner import build_workload

        b = dict(build)
        b[x_field] = int(x) if x_field == "num_servers" else x
        # for a trace, the Poisson model with the trace's rate and class table (an approximation)
        return {"P_H of ModifiedBS (analysis, eq. 16)": helper_probabilities(build_workload(scenario, b))[1]}

    return analysis


def _bf_figures() -> dict[str, Figure]:
    systems = {
        "003-fig1": (
            "003-tree-symmetric",
            "S=3, C=(1,1,1): class 1 on {1,3}, class 2 on {2,3}",
            ("class1", "class2"),
        ),
        "003-fig2": (
            "003-tree-asymmetric",
            "C=(1,0,1): class 1 on {1,3}, class 2 on {3}",
            ("class1", "class2"),
        ),
        "003-fig3": ("003-random-2", "S=100, d=2 random servers per job", ("random-2",)),
        "003-fig4": ("003-random-3", "S=100, d=3 random servers per job", ("random-3",)),
    }
    out = {}
    for fig, (scenario, text, classes) in systems.items():
        for panel, dist in {**BF_DISTRIBUTIONS, "exp": "exponential"}.items():
            panels = tuple((f"per_class.{c}", f"{c}: mean delay") for c in classes) + tuple(
                (f"policy_metrics.service_rate.{c}", f"{c}: mean service rate") for c in classes
            )
            out[f"{fig}{panel}"] = Figure(
                title=f"{text}; {dist} job sizes: mean delay and service rate vs load",
                source=f"Bonald & Comte (2017), Fig. {fig[-1]}"
                + (f"({panel})" if panel != "exp" else " (exponential: Theorem 2 check)"),
                scenario=scenario,
                x_field="load",
                xs=BF_LOADS,
                series=BF_SERIES,
                panels=panels,
                build={"distribution": dist},
                xlabel="load rho",
                logy=False,
                arrivals=200_000,
                analysis=_bf_analysis(scenario, dist),
            )
    return out


def _bs_figure(title: str, source: str, scenario: str, x_field: str, xs: tuple, **kw: Any) -> Figure:
    build = kw.pop("build", {})
    return Figure(
        title=title,
        source=source,
        scenario=scenario,
        x_field=x_field,
        xs=xs,
        series=BS_FAMILY,
        panels=BS_PANELS,
        build=build,
        xlabel={"num_servers": "servers k", "load": "load rho"}[x_field],
        analysis=_bs_analysis(scenario, x_field, build),
        **kw,
    )


BS_K = (32, 64, 128, 256, 512, 1024, 2048)
BS_FIGURES = {
    "000-fig1": _bs_figure(
        "Critical regime (bs-fig1): k grows, rho = 1 - 0.7 f_k / sqrt(k), needs f_k x (1, 2, 4, 8)",
        "Anselmi & Doncel (2024), Fig. 1, Sec. 1.3",
        "bs-fig1",
        "num_servers",
        BS_K,
    ),
    "000-fig2a": _bs_figure(
        "Heavy traffic (bs-fig2a): k = 1024 fixed, rho -> 1",
        "Anselmi & Doncel (2024), Fig. 2(a), Sec. 6.1 (k is our choice: the text does not give it)",
        "bs-fig2a",
        "load",
        (0.5, 0.6, 0.7, 0.8, 0.85, 0.9, 0.95),
    ),
    "000-fig2b": _bs_figure(
        "Subcritical regime (bs-fig2b): rho = 0.8 fixed, k grows",
        "Anselmi & Doncel (2024), Fig. 2(b), Sec. 6.1 (rho is our choice: the text does not give it)",
        "bs-fig2b",
        "num_servers",
        BS_K,
    ),
    **{
        f"000-fig3-{label}-k{k}": _bs_figure(
            f"{name} model (Table {table}, lognormal fit), k = {k}: mean response time vs load",
            f"Anselmi & Doncel (2024), Fig. 3, Sec. 6.2, Table {table}",
            scenario,
            "load",
            (0.5, 0.6, 0.7, 0.8, 0.9),
            build={"num_servers": k},
        )
        for label, name, table, scenario in (
            ("sdsc", "SDSC SP2", 2, "sdsc-sp2"),
            ("kit", "KIT FH2", 3, "kit-fh2"),
        )
        for k in (512, 1024)
    },
    # Replay of the real SDSC SP2 log (needs rounded down to powers of two up to 64, the binning that
    # reproduces Table 2), its inter-arrival gaps scaled to set the load; one run is the whole log (53,904
    # jobs).
    **{
        f"000-fig3-sdsc-trace-k{k}": _bs_figure(
            f"SDSC SP2 log replayed (53,904 jobs, round-down binning), k = {k}: mean response time vs load",
            "Anselmi & Doncel (2024), Fig. 3, Sec. 6.2 (needs rounded down to powers of two)",
            "swf:SDSC-SP2-1998-4.2-cln.swf.gz?binning=round-down&max_need=64",
            "load",
            (0.5, 0.6, 0.7, 0.8, 0.9),
            build={"num_servers": k},
            arrivals=53_904,
        )
        for k in (512, 1024)
    },
}

FIGURES: dict[str, Figure] = {
    "004-fig2": Figure(
        title="One-or-all, k=32, lambda=7.25: MSFQ mean response time vs threshold ell",
        source="Chen et al. (2026), Fig. 2",
        scenario="one-or-all",
        x_field="ell",
        xs=(0, 1, 2, 4, 8, 16, 24, 31),
        series={"MSFQ": ("msfq", {"ell": 0})},
        panels=(("mean_response_time", "mean response time"),),
        build={"arrival_rate": 7.25},
        xlabel="threshold ell",
        arrivals=500_000,
        analysis=lambda metric, x: {"MSFQ (analysis)": _fig2_analysis(metric, x)},
    ),
    "004-fig3": Figure(
        title="One-or-all, k=32: weighted / unweighted / per-class mean response time",
        source="Chen et al. (2026), Fig. 3",
        scenario="one-or-all",
        x_field="arrival_rate",
        xs=ONE_OR_ALL_LAMBDAS,
        series={
            "MSF": ("msf", {}),
            "MSFQ": ("msfq", {}),
            "First-Fit": ("first-fit", {}),
            "nMSR": ("nmsr", {}),
        },
        panels=(
            ("weighted_mean_response_time", "weighted mean response time"),
            ("mean_response_time", "mean response time"),
            ("per_class.light", "light jobs"),
            ("per_class.heavy", "heavy jobs"),
        ),
        arrivals=500_000,
        analysis=_fig3_analysis,
    ),
    "004-fig4": Figure(
        title="One-or-all, k=32: mean phase durations, MSF (MSFQ ell=0) and MSFQ (ell=31)",
        source="Chen et al. (2026), Fig. 4",
        scenario="one-or-all",
        x_field="arrival_rate",
        xs=(6.0, 6.5, 7.0, 7.25, 7.5),
        series={"MSF": ("msfq", {"ell": 0}), "MSFQ": ("msfq", {})},
        panels=tuple((f"policy_metrics.phase{p}_mean_duration", f"phase {p}") for p in (1, 2, 3, 4)),
        arrivals=500_000,
    ),
    "004-fig5": Figure(
        title="Four classes (needs 1, 3, 5, 15; k=15): weighted mean response time",
        source="Chen et al. (2026), Fig. 5 (k and class probabilities are our reconstruction)",
        scenario="four-class",
        x_field="arrival_rate",
        xs=(2.0, 2.5, 3.0, 3.3, 3.6, 3.8),
        series=FOUR_CLASS_FAMILY,
        panels=(("weighted_mean_response_time", "weighted mean response time"),),
    ),
    "004-fig6": Figure(
        title="Google Borg cell B (k=2048): weighted mean response time",
        source="Chen et al. (2026), Fig. 6",
        **BORG,
        series=QUICKSWAP_FAMILY,
        panels=(("weighted_mean_response_time", "weighted mean response time"),),
    ),
    "004-appC": Figure(
        title="Google Borg cell B: Jain's fairness index over class mean response times",
        source="Chen et al. (2026), App. C, Fig. 7",
        **BORG,
        series=QUICKSWAP_FAMILY,
        panels=(("jain_fairness", "Jain index"), ("mean_response_time", "mean response time")),
        logy=False,
    ),
    "004-appD": Figure(
        title="Google Borg cell B: preemptive ServerFilling against the non-preemptive policies",
        source="Chen et al. (2026), App. D, Fig. 8",
        **BORG,
        series={**QUICKSWAP_FAMILY, "ServerFilling": ("server-filling", {})},
        panels=(
            ("weighted_mean_response_time", "weighted mean response time"),
            ("mean_response_time", "mean response time"),
        ),
    ),
    **_bf_figures(),
    **BS_FIGURES,
}


@dataclass(frozen=True)
class SamplePath:
    """A figure of the number of jobs in the system over time, one line per policy, recorded at every
    event by running each policy through ``MSJ-v0`` (seed 0)."""

    title: str
    source: str
    scenario: str
    build: dict[str, Any]
    series: dict[str, str]
    arrivals: int = 20_000


SAMPLE_PATHS: dict[str, SamplePath] = {
    "004-fig1": SamplePath(
        title="One-or-all, k=32, lambda=7.25: number of jobs in the system, MSF vs MSFQ",
        source="Chen et al. (2026), Fig. 1",
        scenario="one-or-all",
        build={"arrival_rate": 7.25},
        series={"MSF": "msf", "MSFQ": "msfq"},
    )
}


def sample_path(name: str, out: Path, arrivals: int | None = None) -> tuple[Path, Path | None]:
    """Write ``out/NAME.csv`` (series, time, jobs in system after each event) and ``out/NAME.png``."""
    import gymnasium as gym

    from ..env import MSJEnv, PolicyAgent

    spec = SAMPLE_PATHS[name]
    rows: list[tuple[str, float, int]] = []
    for label, policy in spec.series.items():
        env = gym.make(
            "MSJ-v0", scenario=spec.scenario, num_arrivals=arrivals or spec.arrivals, warmup=0, **spec.build
        )
        agent = PolicyAgent(policy, env)
        core = env.unwrapped
        assert isinstance(core, MSJEnv)  # what MSJ-v0 makes
        core.decide_every_event(True)  # a point per event, whatever the policy
        obs, info = env.reset(seed=0)
        truncated = False
        while not truncated:
            obs, _, _, truncated, info = env.step(agent.predict(obs)[0])
            rows.append((label, info["time"], info["jobs_in_system"]))
    out.mkdir(parents=True, exist_ok=True)
    csv_path = out / f"{name}.csv"
    atomic_write_csv(csv_path, ["series", "time", "jobs_in_system"], rows)
    plt = pyplot()
    if plt is None:
        return csv_path, None
    figure, ax = plt.subplots(figsize=(10, 4))
    for label in spec.series:
        pts = [(t, n) for s, t, n in rows if s == label]
        ax.step([t for t, _ in pts], [n for _, n in pts], where="post", label=label, lw=0.8)
    ax.set_xlabel("time")
    ax.set_ylabel("jobs in system")
    ax.legend()
    ax.set_title(f"{spec.title}\n{spec.source}; seed 0", fontsize=9)
    figure.tight_layout()
    return csv_path, atomic_savefig(figure, out / f"{name}.png", dpi=110)


def all_figures() -> dict[str, Any]:
    """Every figure and table ``make_figure`` (``msj-gym reproduce``) knows, by name; each value has
    ``title`` and ``source``."""
    return {**SAMPLE_PATHS, **FIGURES, **MOLDABLE_FIGURES}


def make_figure(
    name: str,
    out: Path,
    *,
    arrivals: int | None = None,
    seeds: int = 1,
    progress: bool = True,
    backend: str = "local",
    workers: int = 1,
    address: str | None = None,
) -> tuple[Path, Path | None]:
    """Run (or reuse, from ``out/runs.jsonl``) the figure's points; write ``out/NAME.csv`` and, if
    matplotlib is installed, ``out/NAME.png``. Returns both paths (the PNG's is None without it).
    ``backend``, ``workers``, ``address``: where the runs go (see :func:`run_points`). The command
    holds ``out`` (:func:`~.runner.hold_folder`): a second writer is refused. Each CSV row carries
    the ``content`` hash of the scenario it was computed on (runs and analysis curves alike), and runs
    of an older scenario content are refused, so a figure never mixes two versions of a trace."""
    if arrivals is not None and (isinstance(arrivals, bool) or arrivals < 100):
        raise ValueError(f"arrivals: expected an integer >= 100, got {arrivals!r}")
    if name not in SAMPLE_PATHS and name not in MOLDABLE_FIGURES and name not in FIGURES:
        known = ", ".join([*SAMPLE_PATHS, *FIGURES, *MOLDABLE_FIGURES])
        raise ValueError(f"unknown figure {name!r}; known: {known}")
    if name not in SAMPLE_PATHS and (isinstance(seeds, bool) or seeds < 1):  # checked before ``out`` is made
        raise ValueError(f"seeds: expected a positive integer, got {seeds!r}")
    where = {"backend": backend, "workers": workers, "address": address}
    with hold_folder(out) as writable:
        if not writable:
            raise ValueError(f"--out {str(out)!r}: not writable; a figure writes {name}.csv there")
        return _make_figure(name, out, arrivals, seeds, progress, where)


def _make_figure(
    name: str, out: Path, arrivals: int | None, seeds: int, progress: bool, where: dict[str, Any]
) -> tuple[Path, Path | None]:
    if name in SAMPLE_PATHS:
        return sample_path(name, out, arrivals)
    if name in MOLDABLE_FIGURES:
        moldable = MOLDABLE_FIGURES[name]
        points = moldable.points(arrivals or moldable.arrivals, seeds)
        rows = run_points(points, out / "runs.jsonl", progress=progress, run=run_moldable_point, **where)
        return write_moldable_figure(name, out, rows)
    fig = FIGURES[name]
    rows = run_points(fig.points(arrivals or fig.arrivals, seeds), out / "runs.jsonl", progress, **where)
    # the content hash of each (series, x)'s runs, and of the scenario an analysis curve is computed on
    content: dict[tuple[str, float], str] = {}
    for r in rows:
        content[(r["series"], r["x"])] = r["content"]
    at_x = {x: scenario_content(_analysis_point(fig, x)) for x in fig.xs} if fig.analysis else {}
    table = []
    for metric, _ in fig.panels:
        for r in aggregate(rows, metric):
            if r["seeds"] and not math.isnan(r["mean"]):
                table.append({**r, "content": content[(r["series"], r["x"])]})
        if fig.analysis is not None:
            for x in fig.xs:
                for label, value in (fig.analysis(metric, x) or {}).items():
                    if value is not None:
                        table.append(
                            {
                                "series": label,
                                "x": x,
                                "metric": metric,
                                "mean": value,
                                "ci95": "",
                                "seeds": "",
                                "stable": True,
                                "content": at_x[x],
                            }
                        )
    csv_path = out / f"{name}.csv"
    with atomic_path(csv_path) as tmp, tmp.open("w", newline="") as fh:
        fields = ["series", "x", "metric", "mean", "ci95", "seeds", "stable", "content"]
        writer = csv.DictWriter(fh, fieldnames=fields)
        writer.writeheader()
        writer.writerows(table)
    return csv_path, _plot(fig, table, out / f"{name}.png")


def _analysis_point(fig: Figure, x: float) -> Point:
    """A point of ``fig`` at ``x`` (its first series, seed 0): what its analysis curve models there."""
    return next(p for p in fig.points(fig.arrivals, 1) if p.x == x)


def _plot(fig: Figure, table: list[dict[str, Any]], path: Path) -> Path | None:
    plt = pyplot()
    if plt is None:
        return None
    n = len(fig.panels)
    cols = min(n, 2)
    rows = math.ceil(n / cols)
    figure, axes = plt.subplots(rows, cols, figsize=(6 * cols, 4 * rows), squeeze=False)
    for ax, (metric, label) in zip(axes.flat, fig.panels, strict=False):
        series: dict[str, list[dict[str, Any]]] = {}
        for r in table:
            if r["metric"] == metric:
                series.setdefault(r["series"], []).append(r)
        for name, pts in series.items():
            pts.sort(key=lambda r: r["x"])
            xs = [r["x"] for r in pts]
            ys = [r["mean"] for r in pts]
            if "analysis" in name:
                ax.plot(xs, ys, "--", label=name)
                continue
            err = [r["ci95"] if isinstance(r["ci95"], float) and math.isfinite(r["ci95"]) else 0 for r in pts]
            line = ax.errorbar(xs, ys, yerr=err, marker="o", capsize=3, label=name)
            bad = [(x, y) for x, y, r in zip(xs, ys, pts, strict=True) if not r["stable"]]
            if bad:  # unstable points: hollow red rings
                ax.plot(*zip(*bad, strict=True), "o", mfc="none", mec="red", ms=11, color=line[0].get_color())
        ax.set_xlabel(fig.xlabel)
        ax.set_ylabel(textwrap.fill(label, 36))  # a long label would run into the title
        if fig.logy:
            ax.set_yscale("log")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
    for ax in list(axes.flat)[n:]:
        ax.set_visible(False)
    lines = (fig.title, f"{fig.source}; 95 % CIs; red rings: unstable")
    figure.suptitle("\n".join(textwrap.fill(s, 90 * cols) for s in lines), fontsize=9)  # no clipping
    figure.tight_layout()
    return atomic_savefig(figure, path, dpi=110)
