"""Resumable batches of simulation runs, aggregated into tables with confidence intervals.

A *point* is one run: scenario, workload overrides, policy and parameters, seed, run length. Results
are appended to a JSON-lines file as each run finishes, keyed by the point, so an interrupted batch
restarted with the same file skips what is done and loses nothing, and figures that share points
(e.g. the same runs plotted as two metrics) share the runs.
"""

from __future__ import annotations

import json
import math
import sys
import time
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ..metrics.stats import replication_ci

__all__ = ["Point", "aggregate", "build_workload", "run_points"]


@dataclass(frozen=True)
class Point:
    """One simulation run. ``series`` and ``x`` say where it goes in a figure; ``build`` holds the
    workload overrides (``arrival_rate``, ``load``, ``num_servers``)."""

    series: str
    x: float
    scenario: str
    policy: str
    seed: int
    num_arrivals: int
    build: dict[str, Any] = field(default_factory=dict)
    params: dict[str, Any] = field(default_factory=dict)
    warmup: int | None = None
    options: dict[str, Any] = field(default_factory=dict)  # more Simulator keywords

    def key(self) -> str:
        d = asdict(self)
        d.pop("series")
        d.pop("x")
        return json.dumps(d, sort_keys=True)


def build_workload(scenario: str, build: dict[str, Any]) -> Any:
    """A point's workload: a scenario with its overrides, or a trace source ``swf:FILE[?options]``
    replayed on ``build["num_servers"]`` servers at ``build["load"]`` (time scaling)."""
    if scenario.startswith("swf:"):
        from ..workloads.swf import swf_source

        unknown = set(build) - {"num_servers", "load"}
        if unknown or "num_servers" not in build:
            raise ValueError(f"trace source {scenario!r}: expected num_servers (and load), got {build}")
        return swf_source(scenario, num_servers=build["num_servers"], load=build.get("load"))
    from ..workloads.scenarios import load_scenario

    return load_scenario(scenario).build(**build)


def _run(point: Point) -> dict[str, Any]:
    from baselines import make_policy

    from ..core.simulator import Simulator

    wl = build_workload(point.scenario, point.build)
    sim = Simulator(
        wl,
        make_policy(point.policy, **point.params),
        seed=point.seed,
        num_arrivals=point.num_arrivals,
        warmup=point.warmup,
        **point.options,
    )
    res = sim.run()
    return {
        "mean_response_time": res.mean_response_time,
        "ci95_half_width": res.ci95_half_width,
        "weighted_mean_response_time": res.weighted_mean_response_time,
        "weighted_ci95_half_width": res.weighted_ci95_half_width,
        "jain_fairness": res.jain_fairness,
        "utilization": res.utilization,
        "p_wait": res.p_wait,
        "stable": bool(res.stable),
        "per_class": {name: c.mean_response_time for name, c in res.per_class.items()},
        "policy_metrics": res.policy_metrics,
        "load": res.offered_load,
    }


def run_points(points: Sequence[Point], results: Path, progress: bool = True) -> list[dict[str, Any]]:
    """Run every point not yet in ``results`` (JSON lines, appended run by run); returns the rows of
    ``points`` in order."""
    done: dict[str, dict[str, Any]] = {}
    if results.exists():
        for n, line in enumerate(results.read_text().splitlines(), 1):
            if line.strip():
                try:
                    row = json.loads(line)
                    done[row["key"]] = row
                except (json.JSONDecodeError, KeyError):
                    raise ValueError(f"{results}: line {n} is not a result row; use another --out") from None
    results.parent.mkdir(parents=True, exist_ok=True)
    todo = [p for p in points if p.key() not in done]
    t0 = time.perf_counter()
    for i, p in enumerate(todo, 1):
        row = {"key": p.key(), **asdict(p), **_run(p)}
        with results.open("a") as fh:
            fh.write(json.dumps(row) + "\n")
        done[row["key"]] = row
        if progress:
            eta = (time.perf_counter() - t0) / i * (len(todo) - i)
            print(f"\r  {i}/{len(todo)} runs  ETA {eta:6.0f} s", end="", file=sys.stderr, flush=True)
    if progress and todo:
        print(file=sys.stderr)
    out = []
    for p in points:
        row = dict(done[p.key()])
        row["series"], row["x"] = p.series, p.x
        out.append(row)
    return out


def aggregate(rows: Iterable[dict[str, Any]], metric: str) -> list[dict[str, Any]]:
    """Per (series, x): the mean of ``metric`` over seeds with a Student-t 95 % CI (a single seed keeps
    its run's own batch-means CI where the metric has one), and whether every run was stable.
    ``metric`` may name a class (``per_class.NAME``) or a policy metric (``policy_metrics.NAME``)."""
    groups: dict[tuple[str, float], list[dict[str, Any]]] = {}
    for r in rows:
        groups.setdefault((r["series"], r["x"]), []).append(r)
    out = []
    for (series, x), runs in groups.items():
        values = [_get(r, metric) for r in runs]
        finite = [v for v in values if v is not None and math.isfinite(v)]
        est = replication_ci(finite)
        hw = est.ci95_half_width
        if len(runs) == 1 and metric in ("mean_response_time", "weighted_mean_response_time"):
            hw = runs[0]["ci95_half_width" if metric == "mean_response_time" else "weighted_ci95_half_width"]
        out.append(
            {
                "series": series,
                "x": x,
                "metric": metric,
                "mean": est.mean,
                "ci95": hw,
                "seeds": len(runs),
                "stable": all(r["stable"] for r in runs),
            }
        )
    return out


def _get(row: dict[str, Any], metric: str) -> float | None:
    value: Any = row
    for part in metric.split(".", 1) if metric.startswith(("per_class.", "policy_metrics.")) else [metric]:
        value = value.get(part) if isinstance(value, dict) else None
    return float(value) if isinstance(value, int | float) else None
