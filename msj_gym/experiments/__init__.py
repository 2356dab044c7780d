"""Experiments: resumable batches of runs on a process pool or Ray, the papers' figures (CSV + PNG with
confidence intervals), baseline leaderboards and the benchmark score."""

from .benchmark import BENCHMARK_SUITE, BenchmarkConfig, format_benchmark, run_benchmark
from .figures import FIGURES, SAMPLE_PATHS, Figure, make_figure, sample_path
from .leaderboard import LeaderboardConfig, format_tables, run_leaderboard
from .moldable import MOLDABLE_FIGURES, MoldableFigure
from .runner import BACKENDS, Point, aggregate, run_points

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
