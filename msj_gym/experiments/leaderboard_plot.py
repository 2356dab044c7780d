"""The leaderboard's pictures of a scenario (matplotlib, optional). The queue's (:func:`plot_scenario`):
the ranked metric against the load, one panel per family of entrants (non-preemptive, preemptive,
size-aware, agents) with 95 % bands, where each curve turns unstable, and per-class response times at a
high load. The other models' (:func:`plot_sweep`): a panel per metric against the sweep, the reference
rows dashed."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..atomic import atomic_savefig
from .plotting import pyplot
from .runner import provenance

if TYPE_CHECKING:
    from .tracks.base import Row

__all__ = ["FAMILIES", "plot_family", "plot_scenario", "plot_sweep"]

FAMILIES = ("non-preemptive", "preemptive", "size-aware", "agents")
_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "<", ">", "h", "*", "p")


def plot_family(entrant: str, kind: str) -> str:
    """The leaderboard plot's panel of an entrant: agents (``agent:`` entrants), size-aware policies,
    then preemptive and non-preemptive ones (the registry's ``size_aware`` / ``preemptive`` flags)."""
    from ..registry import ENGINE_MODELS, policy_class, policy_ids

    if entrant.startswith("agent:") or kind.startswith("agent"):
        return "agents"
    cls = policy_class(entrant) if entrant in policy_ids(ENGINE_MODELS) else None
    # the kind says what this entrant's parameters make of its class (e.g. estimates instead of sizes)
    size_aware = "size-aware" in kind.split(", ") if kind or cls is None else cls.size_aware
    preemptive = cls.preemptive if cls is not None else kind.startswith("preemptive")
    if size_aware:
        return "size-aware"
    return "preemptive" if preemptive else "non-preemptive"


def _plot_curve(
    ax: Any, group: list[str], rows: list[Row], color: Any, marker: str, bands: bool
) -> list[float]:
    """One legend entry's curve (the entrants of ``group`` share it) on ``ax``: the stable points with
    their 95 % band, a dotted step to the first unstable point and an x there; the values shown, which
    set the axis."""
    shown_y: list[float] = []
    pts = sorted((r for r in rows if r.entrant == group[0]), key=lambda r: r.x)
    bad = next((n for n, r in enumerate(pts) if not r.stable), None)
    ok = pts if bad is None else pts[:bad]
    name = " = ".join(group)
    if bad is None:
        status = f"stable at every load tested (to {pts[-1].x:g})" if pts else ""
    else:
        status = f"unstable from load {pts[bad].x:g}" + (" (every load)" if bad == 0 else "")
    label = f"{name}\n    {status}"
    xs = [r.x for r in ok]
    ys = [r.value for r in ok]
    shown_y += [y for y in ys if math.isfinite(y) and y > 0]
    if bad is not None and math.isfinite(pts[bad].value):
        shown_y.append(pts[bad].value)
    ax.plot(xs, ys, marker=marker, ms=5, color=color, lw=1.4, label=label)
    ci = [r.value_ci95 if math.isfinite(r.value_ci95) else 0.0 for r in ok]
    if ok and bands:
        ax.fill_between(
            xs,
            [max(y - c, 1e-9) for y, c in zip(ys, ci, strict=True)],
            [y + c for y, c in zip(ys, ci, strict=True)],
            color=color,
            alpha=0.12,
        )
    if bad is not None:
        r = pts[bad]
        if ok:  # a dotted step to the first unstable point
            ax.plot([ok[-1].x, r.x], [ok[-1].value, r.value], ls=":", color=color, lw=1.2)
        ax.plot([r.x], [r.value], marker="x", ms=11, mew=2.5, color=color, ls="none")
    return shown_y


def _legend_panel(lax: Any, ax: Any, shared: bool) -> None:
    """``ax``'s legend on an axis of its own below it; ``shared``: some entry names identical curves."""
    handles, labels = ax.get_legend_handles_labels()
    lax.axis("off")
    lax.legend(
        handles,
        labels,
        fontsize=8,
        loc="upper left",
        ncol=1,
        frameon=False,
        borderaxespad=0,
        title="a = b: identical curves (equal at every load)" if shared else None,
        title_fontsize=7.5,
    )


def _per_class_bars(ax: Any, rows: list[Row], loads: list[float]) -> None:
    """Per-class mean response times, best entrant first, at the highest load where most entrants
    are stable."""
    counts = {x: sum(r.stable for r in rows if r.x == x) for x in loads}
    at = max((x for x in loads if counts[x] >= max(counts.values()) / 2), default=loads[-1])
    shown = [r for r in sorted((r for r in rows if r.x == at), key=lambda r: r.rank)]
    classes = list(shown[0].classes("T.")) if shown else []
    width = 0.8 / max(len(classes), 1)
    for j, cname in enumerate(classes):
        ax.bar(
            [i + j * width for i in range(len(shown))],
            [r.classes("T.").get(cname, math.nan) for r in shown],
            width=width,
            label=cname,
        )
    ax.set_xticks([i + 0.4 - width / 2 for i in range(len(shown))])
    ax.set_xticklabels(
        [r.entrant + ("" if r.stable else " (unstable)") for r in shown], rotation=35, ha="right", fontsize=8
    )
    ax.set_yscale("log")
    ax.set_ylabel("mean response time")
    ax.set_title(f"per class at load {at:g}, best first", fontsize=10)
    ax.legend(fontsize=8, title="class", loc="upper left", bbox_to_anchor=(1.0, 1.0), frameon=False)
    ax.grid(True, axis="y", alpha=0.3)


def _curve_groups(rows: list[Row], entrants: list[str]) -> list[list[str]]:
    """Entrants grouped by identical curves (the same mean response time at every load), best first."""
    groups: dict[tuple, list[str]] = {}
    for e in entrants:
        key = tuple(
            (r.x, r.value, r.stable) for r in sorted((r for r in rows if r.entrant == e), key=lambda r: r.x)
        )
        groups.setdefault(key, []).append(e)
    return list(groups.values())


def plot_scenario(scenario: str, report: dict[str, Any], path: Path, metric_label: str) -> Path | None:
    """The scenario's leaderboard picture: one panel of the ranked metric (``metric_label``) against
    load per family of entrants (shared log axis; entrants with identical curves share one legend
    entry, "a = b"; a curve stops with an x at its first unstable load), then per-class response times
    at the highest load where most entrants are stable. None without matplotlib."""
    plt = pyplot()
    if plt is None:
        return None
    rows = [r for r in report["rows"] if r.scenario == scenario]
    standings = [s for s in report["standings"] if s.scenario == scenario]
    loads = sorted({r.x for r in rows})
    entrants = [s.entrant for s in sorted(standings, key=lambda s: s.mean_rank)]
    kinds = {r.entrant: r.kind for r in rows}
    by_family: dict[str, list[str]] = {f: [] for f in FAMILIES}
    for e in entrants:
        by_family[plot_family(e, kinds.get(e, ""))].append(e)
    families = [f for f in FAMILIES if by_family[f]]
    if not families:
        return None
    groups = {f: _curve_groups(rows, by_family[f]) for f in families}
    heights = [4.0, 0.2 + 0.36 * max(len(g) for g in groups.values()), 3.2]  # inches: curves, legends, bars
    top, bottom = 1.0, 1.5
    total = top + bottom + sum(heights) + 0.9
    fig = plt.figure(figsize=(5.0 * max(len(families), 2), total))
    grid = fig.add_gridspec(
        3,
        len(families),
        height_ratios=heights,
        left=0.06,
        right=0.92,
        top=1 - top / total,
        bottom=bottom / total,
        hspace=0.3,
        wspace=0.18,
    )
    first = None
    shown_y: list[float] = []
    config = report["config"]
    bands = len(config.seeds) >= 3  # a 95 % interval over two seeds is too wide to show anything
    for j, family in enumerate(families):
        ax = fig.add_subplot(grid[0, j], sharey=first)
        first = first or ax
        colors = plt.get_cmap("tab10")
        notes = []
        for i, group in enumerate(groups[family]):
            if len(group) > 1:
                notes.append(group)
            shown_y += _plot_curve(ax, group, rows, colors(i % 10), _MARKERS[i % len(_MARKERS)], bands)
        ax.set_yscale("log")
        ax.set_xlabel("load")
        if j == 0:
            ax.set_ylabel(metric_label)
        ax.set_xlim(loads[0] - 0.03, loads[-1] + 0.03)
        ax.set_xticks(loads)
        ax.grid(True, alpha=0.3)
        ax.set_title(f"{family} ({len(by_family[family])})", fontsize=10)
        _legend_panel(fig.add_subplot(grid[1, j]), ax, bool(notes))
    # the means set the axis; 95 % bands over few seeds may reach far beyond
    if shown_y and first is not None:
        first.set_ylim(min(shown_y) / 1.6, max(shown_y) * 1.6)
    # per-class bars at the highest load where most entrants are stable
    _per_class_bars(fig.add_subplot(grid[2, :]), rows, loads)
    fig.suptitle(
        f"{scenario}: {len(config.seeds)} seeds x {config.arrivals_for(scenario)} arrivals per point; "
        f"code {provenance()['git_revision'][:12]}\n"
        + ("bands: 95 % CI over seeds;  " if bands else "")
        + "x: the first unstable load (its mean is over a growing queue); the curve stops there",
        fontsize=11,
    )
    return atomic_savefig(fig, path, dpi=100)


def plot_sweep(
    scenario: str,
    report: dict[str, Any],
    rows: Sequence[Row],
    path: Path,
    panels: Sequence[tuple[str, str]],
    log_x: bool = False,
) -> Path | None:
    """Per metric of ``panels`` (metric, label) a panel against the sweep (system size n on a log scale
    with ``log_x``, else the load with a log y axis): each entrant's mean with its 95 % band (3 seeds or
    more; entrants with identical results share a curve, "a = b"), the reference rows (rank 0) as dashed
    black lines. None without matplotlib."""
    plt = pyplot()
    if plt is None:
        return None
    config = report["config"]
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
            ys = [r.mean(metric) for r in pts]
            if pts[0].rank == 0:
                ax.plot(xs, ys, ls="--", color="black", lw=1.2, label=name)
                continue
            color = colors(i % 10)
            ax.plot(xs, ys, marker="o", ms=4, color=color, lw=1.4, label=shown[name])
            ci = [r.ci(metric) for r in pts]
            if bands:
                ax.fill_between(
                    xs,
                    [y - (c if math.isfinite(c) else 0.0) for y, c in zip(ys, ci, strict=True)],
                    [y + (c if math.isfinite(c) else 0.0) for y, c in zip(ys, ci, strict=True)],
                    color=color,
                    alpha=0.15,
                )
        if log_x:
            ax.set_xscale("log")
            ax.set_xlabel("number of servers n")
        else:
            ax.set_yscale("log")
            ax.set_xlabel("load")
        ax.set_ylabel(label)
        ax.grid(True, alpha=0.3)
    axes[0][0].legend(fontsize=7)
    fig.suptitle(
        f"{scenario}: {len(config.seeds)} seeds x {config.arrivals_for(scenario)} arrivals per point; "
        f"code {provenance()['git_revision'][:12]}" + ("; bands: 95 % CI over seeds" if bands else ""),
        fontsize=10,
    )
    fig.tight_layout()
    return atomic_savefig(fig, path, dpi=100)
