"""Experiments: resumable batches of runs on a process pool or Ray, the papers' figures (CSV + PNG with
confidence intervals), leaderboards over every model and the benchmark score.

Its names are imported when first asked for, so that a command that needs one part (``msj-gym
simulate`` asks the tracks which model a scenario is of) imports that part alone."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import LazyNames

if TYPE_CHECKING:
    from .benchmark import BENCHMARK_SUITE, BenchmarkConfig, run_benchmark
    from .benchmark_tables import format_benchmark
    from .figures import FIGURES, SAMPLE_PATHS, Figure, make_figure, sample_path
    from .leaderboard import LeaderboardConfig, format_tables, run_leaderboard
    from .moldable import MOLDABLE_FIGURES, MoldableFigure
    from .runner import BACKENDS, Point, aggregate, run_points

_LAZY = LazyNames(
    __name__,
    globals(),
    {
        "benchmark": ("BENCHMARK_SUITE", "BenchmarkConfig", "run_benchmark"),
        "benchmark_tables": ("format_benchmark",),
        "figures": ("FIGURES", "SAMPLE_PATHS", "Figure", "make_figure", "sample_path"),
        "leaderboard": ("LeaderboardConfig", "format_tables", "run_leaderboard"),
        "moldable": ("MOLDABLE_FIGURES", "MoldableFigure"),
        "runner": ("BACKENDS", "Point", "aggregate", "run_points"),
    },
)
__getattr__ = _LAZY
__dir__ = _LAZY.dir

__all__ = [
    "BACKENDS",
    "BENCHMARK_SUITE",
    "FIGURES",
    "MOLDABLE_FIGURES",
    "SAMPLE_PATHS",
    "BenchmarkConfig",
    "Figure",
    "LeaderboardConfig",
    "MoldableFigure",
    "Point",
    "aggregate",
    "format_benchmark",
    "format_tables",
    "make_figure",
    "run_benchmark",
    "run_leaderboard",
    "run_points",
    "sample_path",
]
