"""Metrics: result records, confidence intervals, weighted response time, fairness, stability checks."""

from .result import ClassResult, SimulationResult, assess_stability
from .stats import Estimate, batch_means, jain_index, replication_ci, student_t_quantile

__all__ = [
    "ClassResult",
    "Estimate",
    "SimulationResult",
    "assess_stability",
    "batch_means",
    "jain_index",
    "replication_ci",
    "student_t_quantile",
]
