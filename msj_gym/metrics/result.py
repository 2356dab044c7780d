"""Frozen result records and their construction from the simulator's per-job arrays."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from .stats import batch_ratio, exact_dot, jain_index, student_t_quantile

__all__ = ["ClassResult", "SimulationResult", "assess_stability", "json_clean", "summarise"]


def json_clean(x: Any) -> Any:
    """``x`` with NumPy scalars made Python ones and non-finite floats made None (JSON-ready)."""
    if isinstance(x, float | np.floating):
        return float(x) if math.isfinite(x) else None
    if isinstance(x, dict):
        return {k: json_clean(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [json_clean(v) for v in x]
    if isinstance(x, np.integer):
        return int(x)
    return x


@dataclass(frozen=True)
class ClassResult:
    name: str
    server_need: int
    count: int
    mean_response_time: float
    ci95_half_width: float
    mean_waiting_time: float
    p_wait: float
    load_weight: float


@dataclass(frozen=True)
class SimulationResult:
    """Everything one run measured, with its provenance. ``to_dict()`` is JSON-ready."""

    mean_response_time: float
    ci95_half_width: float
    mean_waiting_time: float
    waiting_ci95_half_width: float
    p_wait: float
    weighted_mean_response_time: float
    weighted_ci95_half_width: float
    jain_fairness: float
    jain_fairness_waiting: float
    utilization: float
    mean_jobs_in_system: float
    preemptions_per_job: float
    stable: bool
    stability_note: str
    per_class: dict[str, ClassResult]
    num_measured: int
    offered_load: float
    arrival_rate: float
    simulated_time: float
    events: int
    batch_lag1_autocorrelation: float
    provenance: dict[str, Any] = field(default_factory=dict)
    policy_metrics: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return json_clean(asdict(self))

    def summary(self) -> str:
        """A human-readable table. An unstable run leads with the warning, and its averages are marked
        as what they are: averages over a growing queue, not steady-state values."""
        caveat = "" if self.stable else "   <- not a steady-state value"
        lines = [] if self.stable else [f"UNSTABLE: {self.stability_note}"]
        lines += [
            f"mean response time   {self.mean_response_time:.6g}"
            f" ± {self.ci95_half_width:.3g} (95% CI){caveat}",
            f"weighted (load)      {self.weighted_mean_response_time:.6g}"
            f" ± {self.weighted_ci95_half_width:.3g}{caveat}",
            f"mean waiting time    {self.mean_waiting_time:.6g} ± {self.waiting_ci95_half_width:.3g}{caveat}",
            f"P(wait > 0)          {self.p_wait:.4f}",
            f"utilization          {self.utilization:.4f}   (offered load {self.offered_load:.4f})",
            f"preemptions per job  {self.preemptions_per_job:.4f}",
            f"Jain fairness        {self.jain_fairness:.4f}",
            f"measured jobs        {self.num_measured}   ({'stable' if self.stable else 'UNSTABLE'})",
        ]
        for name, c in self.per_class.items():
            lines.append(
                f"  class {name:<10} need {c.server_need:<5} n={c.count:<8} "
                f"T={c.mean_response_time:.5g} ± {c.ci95_half_width:.3g}  P(wait)={c.p_wait:.3f}"
            )
        for name, value in self.policy_metrics.items():
            lines.append(f"  {name:<28} {value:.6g}" if isinstance(value, float) else f"  {name:<28} {value}")
        return "\n".join(lines)


def _kendall_tau(x: np.ndarray) -> float:
    n = x.size
    if n < 3:
        return 0.0
    diff = np.sign(x[None, :] - x[:, None])
    upper = np.triu(diff, 1)
    return float(upper.sum() / (n * (n - 1) / 2))


def assess_stability(
    offered_load: float,
    capped: bool,
    checkpoints: np.ndarray,
    num_measured: int,
    overflow: int | None = None,
) -> tuple[bool, str]:
    """Is the run believable as a steady-state estimate? Unstable when the offered load is >= 1, when
    the measured jobs had not all left by the arrival cap, or when the number in system keeps growing
    over the measurement window (a rising trend whose net growth is a visible fraction of the arrivals).
    A run that measured no job is never stable: its averages are NaN, not estimates."""
    if offered_load >= 1.0:
        return False, f"offered load {offered_load:.4g} >= 1: no policy can be stable"
    if overflow is not None:
        return False, f"the queue passed {overflow} jobs and the run was stopped there (queue keeps growing)"
    if capped:
        return False, "measured jobs were still queued when the arrival cap was reached (queue keeps growing)"
    if num_measured <= 0:
        return False, "no job was measured: the averages are undefined"
    x = np.asarray(checkpoints, dtype=np.float64)
    if x.size >= 8 and num_measured > 0:
        q = max(2, x.size // 4)
        first, last = float(x[:q].mean()), float(x[-q:].mean())
        growth = (last - first) / num_measured
        tau = _kendall_tau(x)
        if tau > 0.5 and growth > 0.005 and last > 1.5 * first + 5:
            return False, (
                f"queue keeps growing: jobs in system rose from {first:.0f} to {last:.0f} over the window "
                f"(Kendall tau {tau:.2f}); the mean is not a steady-state value"
            )
    return True, ""


def summarise(
    *,
    acc_resp: np.ndarray,
    acc_wait: np.ndarray,
    acc_count: np.ndarray,
    acc_waited: np.ndarray,
    acc_preempt: np.ndarray,
    class_names: list[str],
    class_needs: np.ndarray,
    load_weights: np.ndarray,
    busy_area: float,
    sys_area: float,
    window: float,
    num_servers: int,
    offered_load: float,
    arrival_rate: float,
    capped: bool,
    checkpoints: np.ndarray,
    simulated_time: float,
    overflow: int | None = None,
    events: int,
    provenance: dict[str, Any],
) -> SimulationResult:
    """Build a result from the engine's per-(batch, class) accumulators (arrays of shape [B, C])."""
    count_b = acc_count.sum(axis=1)
    overall = batch_ratio(acc_resp.sum(axis=1), count_b)
    wait_est = batch_ratio(acc_wait.sum(axis=1), count_b)
    n = int(count_b.sum())
    per_class: dict[str, ClassResult] = {}
    nclass = len(class_names)
    means = np.full(nclass, np.nan)
    wait_means = np.full(nclass, np.nan)
    for i, name in enumerate(class_names):
        est = batch_ratio(acc_resp[:, i], acc_count[:, i])
        cnt = int(acc_count[:, i].sum())
        means[i] = est.mean
        wait_means[i] = acc_wait[:, i].sum() / cnt if cnt else float("nan")
        per_class[name] = ClassResult(
            name=name,
            server_need=int(class_needs[i]),
            count=cnt,
            mean_response_time=est.mean,
            ci95_half_width=est.ci95_half_width,
            mean_waiting_time=float(wait_means[i]),
            p_wait=float(acc_waited[:, i].sum() / cnt) if cnt else float("nan"),
            load_weight=float(load_weights[i]),
        )
    weighted, weighted_hw = _weighted(acc_resp, acc_count, np.asarray(load_weights, dtype=np.float64))
    stable, note = assess_stability(offered_load, capped, checkpoints, n, overflow)
    return SimulationResult(
        mean_response_time=overall.mean,
        ci95_half_width=overall.ci95_half_width,
        mean_waiting_time=wait_est.mean,
        waiting_ci95_half_width=wait_est.ci95_half_width,
        p_wait=float(acc_waited.sum() / n) if n else float("nan"),
        weighted_mean_response_time=weighted,
        weighted_ci95_half_width=weighted_hw,
        jain_fairness=jain_index(means.tolist()),
        jain_fairness_waiting=jain_index(wait_means.tolist()),
        utilization=busy_area / (num_servers * window) if window > 0 else float("nan"),
        mean_jobs_in_system=sys_area / window if window > 0 else float("nan"),
        preemptions_per_job=float(acc_preempt.sum() / n) if n else float("nan"),
        stable=stable,
        stability_note=note,
        per_class=per_class,
        num_measured=n,
        offered_load=offered_load,
        arrival_rate=arrival_rate,
        simulated_time=simulated_time,
        events=events,
        batch_lag1_autocorrelation=overall.lag1_autocorrelation,
        provenance=provenance,
    )


def _weighted(resp: np.ndarray, count: np.ndarray, weights: np.ndarray) -> tuple[float, float]:
    """sum_i w_i T_i over the classes that were observed (weights renormalised), with a delta-method
    batch-means CI: each batch contributes z_b = sum_i w_i (Y_bi - T_i X_bi) / Xbar_i."""
    totals = count.sum(axis=0)
    present = totals > 0
    if not present.any():
        return float("nan"), float("nan")
    w = weights[present] / weights[present].sum()
    y, x = resp[:, present], count[:, present].astype(np.float64)
    t_i = y.sum(axis=0) / x.sum(axis=0)
    value = exact_dot(w, t_i)
    b = y.shape[0]
    xbar = x.sum(axis=0) / b
    z = np.array([exact_dot(row, w) for row in (y - t_i * x) / xbar])
    hw = student_t_quantile(0.975, b - 1) * math.sqrt(exact_dot(z, z) / (b * (b - 1)))
    return value, hw
