"""Experiments: resumable batches of runs and the papers' figures (CSV + PNG with confidence intervals)."""

from .figures import FIGURES, SAMPLE_PATHS, Figure, make_figure, sample_path
from .moldable import MOLDABLE_FIGURES, MoldableFigure
from .runner import Point, aggregate, run_points

__all__ = [
    "FIGURES",
    "MOLDABLE_FIGURES",
    "SAMPLE_PATHS",
    "Figure",
    "MoldableFigure",
    "Point",
    "aggregate",
    "make_figure",
    "run_points",
    "sample_path",
]
