"""Experiments: resumable batches of runs and the papers' figures (CSV + PNG with confidence intervals)."""

from .figures import FIGURES, Figure, make_figure
from .runner import Point, aggregate, run_points

__all__ = ["FIGURES", "Figure", "Point", "aggregate", "make_figure", "run_points"]
