"""The benchmark's tables and files: the aggregates of each model's section (entrants by IQM), the scale
of each point, the scores per point, as text or Markdown (:func:`format_benchmark`); ``benchmark.md``,
``benchmark.csv`` (aggregates), ``benchmark-points.csv`` (per point) and ``benchmark-profile.png``
(performance profiles of the MSJ section), named after the metric where it is not the default
(:func:`output_names`). The scores themselves are :mod:`.benchmark`'s."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..atomic import atomic_savefig, atomic_write_csv, atomic_write_text
from .plotting import pyplot
from .report import render_table
from .runner import provenance
from .tracks import HEADLINE_MODEL, is_headline, track

__all__ = ["DEFAULT_METRIC", "format_benchmark", "output_names", "score_matrix", "write_benchmark"]

DEFAULT_METRIC = "mean_response_time"  # the one metric with an exact optimum (the scale's 100)
BOOTSTRAP_REPS = 5_000  # resamples of the stratified bootstrap's intervals
PROFILE_MAX = 150.0  # the performance profile's right edge


def score_matrix(rows: list[Any], entrant: str, points: Sequence[tuple[str, float]]) -> np.ndarray | None:
    """The (seeds x points) score matrix of ``entrant`` over ``points``, None if it did not enter
    every one of them."""
    by = {(r.scenario, r.load): r.scores for r in rows if r.entrant == entrant}
    if any(p not in by for p in points):
        return None
    return np.array([by[p] for p in points], dtype=float).T


def _scale_cells(s: Any) -> list[str]:
    """A scale's row in the tables of scales: the point, its references and values, its best policy."""
    return [
        s.scenario,
        f"{s.load:g}",
        s.low_ref,
        f"{s.low:.4g}",
        s.high_ref,
        f"{s.high:.4g}",
        s.best_heuristic,
    ]


def _f(x: float, digits: int = 1) -> str:
    return f"{x:.{digits}f}" if math.isfinite(x) else "n/a"


def _ranked(aggregates: list[Any]) -> list[list[str]]:
    return [
        [
            str(i),
            a.entrant,
            a.kind,
            f"{_f(a.iqm)} [{_f(a.iqm_lo)}, {_f(a.iqm_hi)}]",
            _f(a.mean),
            f"{a.p_improve:.2f} [{a.p_lo:.2f}, {a.p_hi:.2f}]",
            ", ".join(a.flagged),
        ]
        for i, a in enumerate(aggregates, 1)
    ]


_AGGREGATE_HEAD = [
    "rank",
    "entrant",
    "kind",
    "IQM score [95% CI]",
    "mean score",
    "P(improve on best heuristic) [95% CI]",
    "flagged points (unstable; n/a: does not fit)",
]


def _per_point(
    report: dict[str, Any],
    points: Sequence[tuple[str, float]],
    aggregates: list[Any],
    outside: Sequence[str] = (),
) -> tuple[list[str], list[list[str]]]:
    """The per-point table of ``points``: each entrant's mean score over the seeds."""
    config = report["config"]
    wanted = set(points)
    here = [r for r in report["points"] if (r.scenario, r.load) in wanted and r.entrant not in outside]
    entrants = [a.entrant for a in aggregates]
    entrants += [e for e in dict.fromkeys(r.entrant for r in here) if e not in entrants]
    by = {(r.scenario, r.load, r.entrant): r for r in here}
    head = [
        "entrant",
        *(f"{s}@{rho:g}" + (" (train)" if config.split((s, rho)) == "train" else "") for s, rho in points),
    ]
    table = []
    for e in entrants:
        cells = []
        for s, rho in points:
            r = by.get((s, rho, e))
            if r is None:
                cells.append("-")
            else:
                cells.append(_f(r.score) + {"": "", "unstable": " (U)", "n/a": " (n/a)"}[r.flag])
        table.append([e, *cells])
    return head, table


def format_benchmark(report: dict[str, Any], markdown: bool = False) -> str:
    """The aggregate table (entrants by IQM), the scales and the per-point scores; with points of the
    other models (suite v2), a section of the same tables per model after the MSJ queue's."""
    config = report["config"]
    assert config.points is not None
    lines: list[str] = []
    head = _AGGREGATE_HEAD
    ranked = _ranked
    # the default model's points (the queue's) are the headline; every other model has a section
    msj_points = [p for p in config.points if is_headline(config.model_of(p))]
    msj_test = config.section_points(HEADLINE_MODEL, "test")
    msj_train = config.section_points(HEADLINE_MODEL, "train")
    others = [m for m in config.models if not is_headline(m)]
    what = f"{len(msj_points)} points" if not others else f"{len(msj_points)} MSJ points"
    title = (
        f"benchmark suite {config.suite}: {what} x {len(config.seeds)} seeds x "
        f"{config.arrivals} arrivals ({config.warmup_arrivals} warm-up); score 0 = FCFS (or the lower "
        "reference), 100 = the exact non-preemptive optimum (or the best size-oblivious heuristic)"
    )
    if not config.by_default_metric:
        title = (
            f"benchmark suite {config.suite}: {what} x {len(config.seeds)} seeds x "
            f"{config.arrivals} arrivals ({config.warmup_arrivals} warm-up), scored on {config.metric}; "
            "score 0 = FCFS (or the lower reference), 100 = the best size-oblivious heuristic by "
            f"{config.metric} (the exact optimum is of the mean response time only)"
        )
    traces = [p for p in msj_points if config.is_trace(p)]
    if traces:
        title += (
            f"; at the trace points ({', '.join(p[0] for p in traces)}) a run is one sequence of the "
            "log (RLScheduler's protocol), scored on its own metric (see the scales)"
        )
    if msj_train:
        title += (
            f"; the score is over the {len(msj_test)} test points of the published split "
            f"(train points: {', '.join(f'{sc}@{x:g}' for sc, x in msj_train)})"
        )
    if others:
        title += f"; the {' and '.join(others)} points are scored in sections of their own below"
    msj = report["sections"].get(HEADLINE_MODEL)
    if msj_points:
        lines += render_table(title, head, ranked(report["aggregates"]), markdown)
        if msj_train:
            lines += render_table(
                "the train points, which agents may be tuned on (not the score)",
                head,
                ranked(report["train_aggregates"]),
                markdown,
            )
        if msj and msj["outside"]:
            lines.append(_outside_note(msj["outside"], "MSJ"))
        scales = [s for s in report["scales"] if (s.scenario, s.load) in set(msj_points)]
        mixed = len({s.metric for s in scales}) > 1
        head = [
            "scenario",
            "load" if not traces else "load (trace: jobs per sequence)",
            "score 0 (lower reference)",
            "T_low" if config.by_default_metric else f"{config.metric} low",
            "score 100 (upper reference)",
            "T_high" if config.by_default_metric else f"{config.metric} high",
            "best heuristic",
        ]
        table = [_scale_cells(s) + ([s.metric] if mixed else []) for s in scales]
        if mixed:
            head.append("metric")
        lines += render_table("the scale of each point", head, table, markdown)
        head, table = _per_point(report, msj_points, report["aggregates"], msj["outside"] if msj else ())
        no_value = "" if config.by_default_metric else f", or its runs have no value of {config.metric}"
        lines += render_table(
            "mean score per point over seeds ((U): unstable on some seed, scored 0 there; (n/a): the agent "
            f"does not fit this point's environment{no_value}; -: the policy is not defined there)",
            head,
            table,
            markdown,
        )
    for model in others:
        lines += _format_section(report, model, markdown)
    return "\n".join(lines)


def _outside_note(outside: Sequence[str], model: str) -> str:
    return (
        f"n/a at every {model} point (their env acts on another model; no score here): "
        + ", ".join(outside)
        + "\n"
    )


#: What a model section's metric is, in its title.
_MODEL_METRIC = {
    "moldable": "the cost per arrival (1 - P_B) E[T] + 2 P_B (the model leaderboard's ranking)",
    "compatibility": "the mean response time (the model leaderboard's ranking)",
}
_MODEL_LOW = {
    "moldable": "the weakest scheme by cost at the point (over the seeds)",
    "compatibility": "random assignment (compat-fcfs)",
}


def _format_section(report: dict[str, Any], model: str, markdown: bool) -> list[str]:
    """The tables of a moldable or compatibility section: aggregates over its test points (and its
    train points apart), its scales with the model's reference row, and the scores per point."""
    config = report["config"]
    assert config.points is not None
    section = report["sections"][model]
    points = [p for p in config.points if config.model_of(p) == model]
    test, train = config.section_points(model, "test"), config.section_points(model, "train")
    x = track(model).x_name
    title = (
        f"{model} points of suite {config.suite}: {len(points)} points ({x}) x {len(config.seeds)} seeds x "
        f"{config.model_arrivals(model)} arrivals ({config.model_warmup(model)} warm-up), scored on "
        f"{_MODEL_METRIC[model]}; score 0 = {_MODEL_LOW[model]}, 100 = the best {model} policy on each "
        f"seed; the score is over the {len(test)} test points"
    )
    if train:
        title += f" (train points: {', '.join(f'{sc}@{v:g}' for sc, v in train)})"
    lines = ["## the " + model + " points\n"] if markdown else []
    head = [*_AGGREGATE_HEAD]
    head[5] = f"P(improve on best {model} policy) [95% CI]"
    lines += render_table(title, head, _ranked(section["aggregates"]), markdown)
    if train:
        lines += render_table(
            f"the {model} train points, which agents may be tuned on (not the score)",
            head,
            _ranked(section["train_aggregates"]),
            markdown,
        )
    if section["outside"]:
        lines.append(_outside_note(section["outside"], model))
    scales = [s for s in report["scales"] if (s.scenario, s.load) in set(points)]
    metric = scales[0].metric if scales else ""
    head = [
        "scenario",
        x,
        "score 0 (lower reference)",
        f"{metric} low",
        "score 100 (upper reference)",
        f"{metric} high (mean over seeds)",
        f"best {model} policy",
        "model reference (not the scale)",
        f"its {metric}",
    ]
    table = [
        [*_scale_cells(s), s.bound_ref, f"{s.bound:.4g}" if math.isfinite(s.bound) else "n/a"] for s in scales
    ]
    lines += render_table(f"the scale of each {model} point", head, table, markdown)
    head, table = _per_point(report, points, section["aggregates"], section["outside"])
    lines += render_table(
        f"mean score per {model} point over seeds ((U): unstable on some seed, scored 0 there; (n/a): the "
        "agent does not fit this point's environment)",
        head,
        table,
        markdown,
    )
    return lines


def output_names(out: Path, metric: str = DEFAULT_METRIC) -> list[Path]:
    """The tables and plot of a score on ``metric``: another metric's beside the default ones, named
    after it, so that no file of one metric is taken for the other's."""
    tag = "" if metric == DEFAULT_METRIC else f"-{metric}"
    return [out / f"benchmark{tag}{n}" for n in (".md", ".csv", "-points.csv", "-profile.png")]


def write_benchmark(out: Path, report: dict[str, Any]) -> list[Path]:
    config = report["config"]
    md, agg_csv, pts_csv, png = output_names(out, config.metric)
    atomic_write_text(md, _intro(config) + format_benchmark(report, markdown=True))
    _write_aggregates(agg_csv, report)
    _write_points(pts_csv, report)
    files = [md, agg_csv, pts_csv]
    if _plot(report, png) is not None:
        files.append(png)
    return files


def _intro(config: Any) -> str:
    """The Markdown table's heading: the suite, seeds, arrivals, code and how intervals are made."""
    on = "" if config.by_default_metric else f" on {config.metric}"
    intro = (
        f"# msj_gym benchmark{on} (suite {config.suite})\n\n"
        f"Seeds {', '.join(map(str, config.seeds))}; {config.arrivals} arrivals per run"
        + "".join(f" ({m} runs: {config.model_arrivals(m)})" for m in config.models if not is_headline(m))
        + "; code "
        f"{provenance()['git_revision']}. IQM and P(improve) with stratified-bootstrap 95 % intervals "
        f"({BOOTSTRAP_REPS} resamples of the seeds within each point).\n\n"
    )
    if not config.by_default_metric:
        intro += (
            f"Scored on {config.metric}: 100 is the best size-oblivious heuristic by it at every point "
            "(the exact optimum is of the mean response time only).\n\n"
        )
    return intro


def _write_aggregates(path: Path, report: dict[str, Any]) -> None:
    """The aggregates' CSV: one row per entrant and section."""
    config = report["config"]
    # a suite with a published split (v2) says of each row which part it is over, and one with points of
    # several models which model's section; v1's files are as they were
    split = bool(config.train_points)
    several = len(config.models) > 1
    parts = [
        (model, part, report["sections"][model][key])
        for model in config.models
        for part, key in [("test", "aggregates")] + ([("train", "train_aggregates")] if split else [])
    ]
    atomic_write_csv(
        path,
        [
            "rank",
            "entrant",
            "kind",
            "iqm",
            "iqm_lo",
            "iqm_hi",
            "mean",
            "p_improve",
            "p_lo",
            "p_hi",
            "flagged",
        ]
        + (["split"] if split else [])
        + (["model"] if several else []),
        (
            [
                i,
                a.entrant,
                a.kind,
                a.iqm,
                a.iqm_lo,
                a.iqm_hi,
                a.mean,
                a.p_improve,
                a.p_lo,
                a.p_hi,
                "; ".join(a.flagged),
            ]
            + ([part] if split else [])
            + ([model] if several else [])
            for model, part, aggregates in parts
            for i, a in enumerate(aggregates, 1)
        ),
    )


def _write_points(path: Path, report: dict[str, Any]) -> None:
    """The per-point CSV: one row per entrant and point, with the point's scale."""
    config = report["config"]
    split = bool(config.train_points)
    several = len(config.models) > 1
    scales = {(s.scenario, s.load): s for s in report["scales"]}

    def point_row(r: Any) -> list[Any]:
        sc = scales[(r.scenario, r.load)]
        scores = " ".join(f"{x:.6g}" for x in r.scores)
        head = [r.scenario, r.load, r.entrant, r.kind, r.value, r.score, scores, r.flag]
        more = [sc.metric, config.split((r.scenario, r.load))] if split else []
        if several:
            more += [config.model_of((r.scenario, r.load)), sc.bound_ref, sc.bound]
        return [*head, sc.low_ref, sc.low, sc.high_ref, sc.high, *more]

    # the value column is named after the metric (mean_response_time by default); with trace points
    # (v2) it holds each point's own metric, named in the metric column
    value = "value" if split else config.metric
    header = ["scenario", "load", "entrant", "kind", value, "score", "scores_per_seed", "flag"]
    atomic_write_csv(
        path,
        [
            *header,
            "low_ref",
            "t_low",
            "high_ref",
            "t_high",
            *(["metric", "split"] if split else []),
            *(["model", "bound_ref", "bound"] if several else []),
        ],
        map(point_row, report["points"]),
    )


def _plot(report: dict[str, Any], path: Path) -> Path | None:
    """Performance profiles: per entrant, the fraction of runs (seeds x points) scoring at least tau."""
    plt = pyplot()
    if plt is None:
        return None
    config = report["config"]
    assert config.points is not None
    aggs = report["aggregates"]  # the MSJ section's: the other models' entrants have sections of their own
    if not aggs:
        return None
    test = config.section_points(HEADLINE_MODEL, "test")
    msj_count = sum(is_headline(config.model_of(p)) for p in config.points)
    mats: dict[str, np.ndarray] = {}
    for a in aggs:
        m = score_matrix(report["points"], a.entrant, test)
        assert m is not None  # an aggregate's entrant entered every test point (_aggregate skips the others)
        mats[a.entrant] = m
    top = max([100.0] + [float(m.max()) for m in mats.values()])
    right = min(top * 1.02, PROFILE_MAX)  # a few runs far above 100 (a narrow scale) would squash the rest
    taus = np.linspace(0, right, 400)
    fig, ax = plt.subplots(figsize=(11, 6.5))
    cmap = plt.get_cmap("tab10")
    styles = ("-", "--", "-.", ":")
    for i, a in enumerate(aggs):
        m = mats[a.entrant].ravel()
        frac = (m[None, :] >= taus[:, None]).mean(axis=1)
        ax.step(
            taus,
            frac,
            where="post",
            color=cmap(i % 10),
            ls=styles[(i // 10) % len(styles)],
            lw=2.4 if a.kind == "agent" else 1.5,
            label=f"{a.entrant}  (IQM {_f(a.iqm)})",
        )
    ax.axvline(100, color="grey", lw=0.8, ls=":")
    ax.set_xlabel(
        "score τ (0 = FCFS or the lower reference, 100 = exact optimum or best heuristic)"
        if config.by_default_metric
        else f"score τ on {config.metric} (0 = FCFS or the lower reference, 100 = best heuristic)"
    )
    ax.set_ylabel("fraction of runs with score ≥ τ")
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlim(0, right)
    if top > right:
        above = {a.entrant: int((mats[a.entrant] > right).sum()) for a in aggs}
        note = ", ".join(f"{e} {n}" for e, n in above.items() if n)
        ax.text(
            0.99,
            0.98,
            f"runs scoring above {right:g} (off the axis): {note}",
            transform=ax.transAxes,
            ha="right",
            va="top",
            fontsize=8,
        )
    ax.grid(True, alpha=0.3)
    ax.legend(
        fontsize=8.5,
        loc="upper left",
        bbox_to_anchor=(1.01, 1.0),
        frameon=False,
        title="entrant, best IQM first",
    )
    ax.set_title(
        f"msj-gym benchmark suite {config.suite}"
        + ("" if config.by_default_metric else f" on {config.metric}")
        + f": performance profiles over {msj_count} {'MSJ ' if len(config.models) > 1 else ''}points x "
        f"{len(config.seeds)} seeds ({config.arrivals} arrivals); code {provenance()['git_revision'][:12]}",
        fontsize=10,
    )
    fig.tight_layout()
    return atomic_savefig(fig, path, dpi=110)
