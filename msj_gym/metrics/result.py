"""Frozen result records and their construction from the simulator's per-job arrays."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from .stats import Estimate, batch_ratio, exact_dot, jain_index, quantiles_sectioning, student_t_quantile

__all__ = [
    "PERCENTILES",
    "ClassResult",
    "SimulationResult",
    "assess_stability",
    "default_slowdown_tau",
    "json_clean",
    "summarise",
    "unfinished_note",
]

#: The response-time percentiles every result reports (``response_time_p50`` ...).
PERCENTILES = (50, 95, 99)
#: tau of the bounded slowdown on a recorded trace, in seconds: the value the HPC scheduling papers use
#: (Feitelson et al., "Theory and practice in parallel job scheduling", JSSPP 1997).
TRACE_SLOWDOWN_TAU = 10.0
#: tau of the bounded slowdown on a synthetic workload, as a fraction of its mean service time.
SYNTHETIC_TAU_FRACTION = 0.1


def default_slowdown_tau(workload: Any) -> float:
    """The bounded slowdown's tau for ``workload`` (a :class:`~msj_gym.core.workload.WorkloadLike` the
    simulator runs), in its time unit: the workload's own ``slowdown_tau`` if it declares one (a
    recorded trace: 10 s, :data:`TRACE_SLOWDOWN_TAU`), else a tenth of its mean service time per arrival
    (sum of class probability x mean service time): a synthetic workload has no unit, and a tenth of the
    mean bounds the slowdown of the short jobs the way 10 s does on the traces, whose jobs run for
    minutes to hours."""
    # Typed Any: the metrics sit below the core and beside the workloads, and import neither.
    tau = getattr(workload, "slowdown_tau", None)
    if tau is not None:
        return float(tau)
    mean = _mean_service_time(workload)
    return SYNTHETIC_TAU_FRACTION * mean if math.isfinite(mean) and mean > 0 else float("nan")


def _mean_service_time(workload: Any) -> float:
    """The mean service time per arrival: a workload whose classes share one size law declares its
    mean (``mean_size``, the compatibility graphs' sigma), any other averages its classes' means by
    their probabilities."""
    shared = getattr(workload, "mean_size", None)
    if shared is not None:
        return float(shared)
    return float(np.sum(workload.probabilities * workload.mean_service_times))


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
    mean_bounded_slowdown: float


@dataclass(frozen=True)
class SimulationResult:
    """Everything one run measured, with its provenance. ``to_dict()`` is JSON-ready.

    The HPC and GPU-cluster metrics: ``mean_bounded_slowdown`` is the mean over the measured jobs of
    max(response / max(service, tau), 1), i.e. (wait + run) / max(run, tau) bounded below by 1, with
    tau = ``slowdown_tau`` in the workload's time unit (see :func:`default_slowdown_tau`); the
    response-time percentiles ``response_time_p50`` / ``p95`` / ``p99`` are exact order statistics of
    the measured jobs' response times with 95 % intervals by sectioning (``percentile_method`` says how
    they were obtained, or why they are NaN: they need the per-job records); ``makespan`` is the time
    from the first measured arrival to the last measured departure (a finite trace's makespan when
    every job is measured).

    A run that stopped with measured jobs still in the system (the arrival cap or the queue limit
    reached, or an environment episode that ended so) is unstable, and its job averages count those
    jobs too, each with its time in the system until the stop: their response times, waiting times
    and bounded slowdowns, and with them ``mean_response_time``, the per-class means, the weighted mean
    and the percentiles, are then **lower bounds**; ``num_measured`` counts them, and
    ``stability_note`` says how many had not left. A policy that starves a class shows that class's
    waiting in its mean, instead of the small mean of the jobs it did serve.
    """

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
    mean_bounded_slowdown: float
    bounded_slowdown_ci95_half_width: float
    slowdown_tau: float
    response_time_p50: float
    response_time_p50_ci95_half_width: float
    response_time_p95: float
    response_time_p95_ci95_half_width: float
    response_time_p99: float
    response_time_p99_ci95_half_width: float
    percentile_method: str
    makespan: float
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
            f"bounded slowdown     {self.mean_bounded_slowdown:.6g}"
            f" ± {self.bounded_slowdown_ci95_half_width:.3g}   (tau {self.slowdown_tau:.4g}){caveat}",
            "response time p50 / p95 / p99  "
            + " / ".join(
                f"{v:.5g} ± {hw:.2g}"
                for v, hw in (
                    (self.response_time_p50, self.response_time_p50_ci95_half_width),
                    (self.response_time_p95, self.response_time_p95_ci95_half_width),
                    (self.response_time_p99, self.response_time_p99_ci95_half_width),
                )
            )
            + ("" if math.isfinite(self.response_time_p50) else f"   ({self.percentile_method})"),
            f"makespan             {self.makespan:.6g}",
            f"utilization          {self.utilization:.4f}   (offered load {self.offered_load:.4f})",
            f"preemptions per job  {self.preemptions_per_job:.4f}",
            f"Jain fairness        {self.jain_fairness:.4f}",
            f"measured jobs        {self.num_measured}   ({'stable' if self.stable else 'UNSTABLE'})",
        ]
        for name, c in self.per_class.items():
            lines.append(
                f"  class {name:<10} need {c.server_need:<5} n={c.count:<8} "
                f"T={c.mean_response_time:.5g} ± {c.ci95_half_width:.3g}  P(wait)={c.p_wait:.3f}  "
                f"bsld={c.mean_bounded_slowdown:.4g}"
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


#: How :func:`assess_stability`'s note begins when the only sign of instability is the number in system
#: rising over the window (every measured job left): on a short run, often a queue still draining.
GROWING_TREND = "queue keeps growing"


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
                f"{GROWING_TREND}: jobs in system rose from {first:.0f} to {last:.0f} over the window "
                f"(Kendall tau {tau:.2f}); the mean is not a steady-state value"
            )
    return True, ""


def unfinished_note(unfinished: int, counted: int) -> str:
    """What a result's ``stability_note`` says of a run that stopped with measured jobs in the system."""
    return (
        f"{unfinished} of the {counted} measured jobs had not left when the run stopped; each counts with "
        "its time in the system until then, so the means are lower bounds"
    )


def summarise(
    *,
    acc_resp: np.ndarray,
    acc_wait: np.ndarray,
    acc_count: np.ndarray,
    acc_waited: np.ndarray,
    acc_preempt: np.ndarray,
    acc_bsld: np.ndarray,
    slowdown_tau: float,
    makespan: float,
    response_times: np.ndarray | None,
    response_batches: np.ndarray | None,
    percentile_note: str = "",
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
    unfinished: int = 0,
    events: int,
    provenance: dict[str, Any],
) -> SimulationResult:
    """Build a result from the engine's per-(batch, class) accumulators (arrays of shape [B, C]) and,
    for the percentiles, the measured jobs' ``response_times`` with the batch of each
    (``response_batches``); without them (None) the percentiles are NaN and ``percentile_note`` says
    why. ``unfinished``: how many of the jobs counted had not left when the run stopped (their times
    are lower bounds, so are the means, and the run is unstable)."""
    overall, wait_est, bsld_est, n = _overall(acc_resp, acc_wait, acc_bsld, acc_count)
    per_class, means, wait_means = _per_class(
        acc_resp, acc_wait, acc_count, acc_waited, acc_bsld, class_names, class_needs, load_weights
    )
    weighted, weighted_hw = _weighted(acc_resp, acc_count, np.asarray(load_weights, dtype=np.float64))
    stable, note = _stability(offered_load, capped, checkpoints, n, overflow, unfinished)
    quantiles, method = _percentiles(response_times, response_batches, percentile_note)
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
        mean_bounded_slowdown=bsld_est.mean,
        bounded_slowdown_ci95_half_width=bsld_est.ci95_half_width,
        slowdown_tau=float(slowdown_tau),
        response_time_p50=quantiles["response_time_p50"],
        response_time_p50_ci95_half_width=quantiles["response_time_p50_ci95_half_width"],
        response_time_p95=quantiles["response_time_p95"],
        response_time_p95_ci95_half_width=quantiles["response_time_p95_ci95_half_width"],
        response_time_p99=quantiles["response_time_p99"],
        response_time_p99_ci95_half_width=quantiles["response_time_p99_ci95_half_width"],
        percentile_method=method,
        makespan=float(makespan),
        provenance=provenance,
    )


def _overall(
    acc_resp: np.ndarray, acc_wait: np.ndarray, acc_bsld: np.ndarray, acc_count: np.ndarray
) -> tuple[Estimate, Estimate, Estimate, int]:
    """The batch-means estimates over every class of the mean response time, waiting time and
    bounded slowdown, and the number of jobs measured."""
    count_b = acc_count.sum(axis=1)
    overall = batch_ratio(acc_resp.sum(axis=1), count_b)
    wait_est = batch_ratio(acc_wait.sum(axis=1), count_b)
    bsld_est = batch_ratio(acc_bsld.sum(axis=1), count_b)
    return overall, wait_est, bsld_est, int(count_b.sum())


def _per_class(
    acc_resp: np.ndarray,
    acc_wait: np.ndarray,
    acc_count: np.ndarray,
    acc_waited: np.ndarray,
    acc_bsld: np.ndarray,
    class_names: list[str],
    class_needs: np.ndarray,
    load_weights: np.ndarray,
) -> tuple[dict[str, ClassResult], np.ndarray, np.ndarray]:
    """Each class's figures from the per-(batch, class) accumulators, by name, and the classes' mean
    response and waiting times (the fairness indices' inputs)."""
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
            mean_bounded_slowdown=float(acc_bsld[:, i].sum() / cnt) if cnt else float("nan"),
        )
    return per_class, means, wait_means


def _stability(
    offered_load: float, capped: bool, checkpoints: np.ndarray, n: int, overflow: int | None, unfinished: int
) -> tuple[bool, str]:
    """Whether the run is stable and why not; a run that stopped with measured jobs inside is not."""
    stable, note = assess_stability(offered_load, capped, checkpoints, n, overflow)
    if unfinished:
        stable = False
        note = (note + "; " if note else "") + unfinished_note(unfinished, n)
    return stable, note


def _percentiles(
    values: np.ndarray | None, batches: np.ndarray | None, note: str
) -> tuple[dict[str, float], str]:
    """The result fields of :data:`PERCENTILES` and how they were obtained."""
    out: dict[str, float] = {}
    if values is None or batches is None or np.asarray(values).size == 0:
        for p in PERCENTILES:
            out[f"response_time_p{p}"] = out[f"response_time_p{p}_ci95_half_width"] = float("nan")
        return out, note or "no measured job left the system"
    b = np.asarray(batches)
    grouped = b if np.all(np.diff(b) >= 0) else np.sort(b)
    nb = int(np.count_nonzero(np.diff(grouped))) + 1
    for p, est in zip(PERCENTILES, quantiles_sectioning(values, b, PERCENTILES), strict=True):
        out[f"response_time_p{p}"] = est.mean
        out[f"response_time_p{p}_ci95_half_width"] = est.ci95_half_width
    size = np.asarray(values).size
    return out, (
        f"exact order statistics of the {size} measured jobs' response times; 95 % CI by sectioning "
        f"over {nb} batches"
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
