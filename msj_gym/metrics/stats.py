"""Small statistics helpers: Student-t quantiles, batch-means and replication confidence intervals,
quantiles with sectioning intervals, Jain's fairness index. Kept free of scipy so the core depends on
numpy alone."""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__ = [
    "Estimate",
    "batch_means",
    "batch_ratio",
    "exact_dot",
    "jain_index",
    "order_statistic",
    "order_statistics",
    "quantile_sectioning",
    "quantiles_sectioning",
    "replication_ci",
    "student_t_quantile",
]


def exact_dot(a: np.ndarray, b: np.ndarray) -> float:
    """``a @ b`` for 1-D arrays, correctly rounded (``math.fsum`` of the products). A BLAS dot product
    sums in an order that depends on the CPU it runs on, and results must be the same bit for bit on
    every machine."""
    return math.fsum((np.asarray(a, dtype=np.float64) * np.asarray(b, dtype=np.float64)).tolist())


def _normal_quantile(p: float) -> float:
    """Inverse standard normal CDF (Acklam's rational approximation, relative error < 1.2e-9, refined by
    one Halley step on erfc)."""
    if not 0.0 < p < 1.0:
        raise ValueError(f"p: expected 0 < p < 1, got {p!r}")
    a = (
        -3.969683028665376e01,
        2.209460984245205e02,
        -2.759285104469687e02,
        1.383577518672690e02,
        -3.066479806614716e01,
        2.506628277459239e00,
    )
    b = (
        -5.447609879822406e01,
        1.615858368580409e02,
        -1.556989798598866e02,
        6.680131188771972e01,
        -1.328068155288572e01,
    )
    c = (
        -7.784894002430293e-03,
        -3.223964580411365e-01,
        -2.400758277161838e00,
        -2.549732539343734e00,
        4.374664141464968e00,
        2.938163982698783e00,
    )
    d = (7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e00, 3.754408661907416e00)
    lo = 0.02425
    if p < lo:
        q = math.sqrt(-2.0 * math.log(p))
        x = (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) / (
            (((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1.0
        )
    elif p <= 1.0 - lo:
        q = p - 0.5
        r = q * q
        x = (
            (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5])
            * q
            / (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1.0)
        )
    else:
        q = math.sqrt(-2.0 * math.log(1.0 - p))
        x = -(((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) / (
            (((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1.0
        )
    e = 0.5 * math.erfc(-x / math.sqrt(2.0)) - p
    u = e * math.sqrt(2.0 * math.pi) * math.exp(x * x / 2.0)
    return x - u / (1.0 + x * u / 2.0)


def _t_cdf(t: float, df: float) -> float:
    # Regularised incomplete beta by continued fraction (Lentz), enough for quantile refinement.
    x = df / (df + t * t)
    a, b = df / 2.0, 0.5
    lbeta = math.lgamma(a) + math.lgamma(b) - math.lgamma(a + b)
    front = math.exp(a * math.log(x) + b * math.log1p(-x) - lbeta) / a
    f, c, d = 1.0, 1.0, 0.0
    for i in range(400):
        m = i // 2
        if i == 0:
            num = 1.0
        elif i % 2 == 0:
            num = (m * (b - m) * x) / ((a + 2.0 * m - 1.0) * (a + 2.0 * m))
        else:
            num = -((a + m) * (a + b + m) * x) / ((a + 2.0 * m) * (a + 2.0 * m + 1.0))
        d = 1.0 + num * d
        d = 1.0 / (d if abs(d) > 1e-300 else 1e-300)
        c = 1.0 + num / (c if abs(c) > 1e-300 else 1e-300)
        f *= c * d
        if abs(1.0 - c * d) < 1e-14:
            break
    ibeta = front * (f - 1.0)
    return 1.0 - 0.5 * ibeta if t >= 0 else 0.5 * ibeta


@functools.lru_cache(maxsize=4096)
def student_t_quantile(p: float, df: float) -> float:
    """The p-quantile of Student's t with ``df`` degrees of freedom (Newton on the exact CDF).
    Remembered: every result's summary asks for the same few quantiles, and each costs a few hundred
    continued-fraction evaluations, more than simulating a short run."""
    if df <= 0:
        raise ValueError(f"df: expected > 0, got {df!r}")
    x = _normal_quantile(p)
    for _ in range(50):
        density = math.exp(
            math.lgamma((df + 1) / 2)
            - math.lgamma(df / 2)
            - 0.5 * math.log(df * math.pi)
            - (df + 1) / 2 * math.log1p(x * x / df)
        )
        step = (_t_cdf(x, df) - p) / density
        x -= step
        if abs(step) < 1e-12 * max(1.0, abs(x)):
            break
    return x


@dataclass(frozen=True)
class Estimate:
    """A point estimate with a 95 % confidence half-width and how it was obtained."""

    mean: float
    ci95_half_width: float
    n: int
    method: str
    lag1_autocorrelation: float = float("nan")

    @property
    def low(self) -> float:
        return self.mean - self.ci95_half_width

    @property
    def high(self) -> float:
        return self.mean + self.ci95_half_width


def batch_means(values: np.ndarray, num_batches: int = 30) -> Estimate:
    """Mean of ``values`` (in time order) with a batch-means 95 % CI over ``num_batches`` contiguous
    batches. ``lag1_autocorrelation`` of the batch means tells whether the batches were long enough
    (near 0 is good; above ~0.5 the half-width is too optimistic)."""
    v = np.asarray(values, dtype=np.float64)
    n = v.size
    if n == 0:
        return Estimate(float("nan"), float("nan"), 0, "batch-means")
    mean = float(v.mean())
    b = min(num_batches, n // 2)
    if b < 2:
        return Estimate(mean, float("inf"), n, "batch-means")
    edges = np.linspace(0, n, b + 1).astype(np.int64)
    sums = np.add.reduceat(v, edges[:-1])
    bm = sums / np.diff(edges)
    sd = float(bm.std(ddof=1))
    hw = student_t_quantile(0.975, b - 1) * sd / math.sqrt(b)
    centred = bm - bm.mean()
    denom = exact_dot(centred, centred)
    rho1 = exact_dot(centred[1:], centred[:-1]) / denom if denom > 0 else 0.0
    return Estimate(mean, hw, n, "batch-means", rho1)


def batch_ratio(sums: np.ndarray, counts: np.ndarray) -> Estimate:
    """Mean of per-job values from per-batch ``sums`` and ``counts`` (batches in time order, possibly
    unequal or empty): the ratio estimator sum(Y) / sum(X) with its batch-level (linearised) variance
    sum_b (Y_b - R X_b)^2 / (B (B - 1) Xbar^2) and a Student-t 95 % CI on B - 1 degrees of freedom."""
    y = np.asarray(sums, dtype=np.float64)
    x = np.asarray(counts, dtype=np.float64)
    total = x.sum()
    if total == 0:
        return Estimate(float("nan"), float("nan"), 0, "batch-means")
    r = float(y.sum() / total)
    b = y.size
    if b < 2:
        return Estimate(r, float("inf"), int(total), "batch-means")
    resid = y - r * x
    xbar = total / b
    var = exact_dot(resid, resid) / (b * (b - 1) * xbar**2)
    hw = student_t_quantile(0.975, b - 1) * math.sqrt(var)
    nonempty = x > 0
    bm = y[nonempty] / x[nonempty]
    rho1 = float("nan")
    if bm.size > 2:
        centred = bm - bm.mean()
        denom = exact_dot(centred, centred)
        rho1 = exact_dot(centred[1:], centred[:-1]) / denom if denom > 0 else 0.0
    return Estimate(r, hw, int(total), "batch-means", rho1)


def _ranks(n: int, percents: Sequence[int]) -> list[int]:
    """The 1-based ranks ``ceil(n p / 100)`` of the percents ``p``, in integers: ``n * 0.95`` in floating
    point may land on either side of a whole number."""
    for p in percents:
        if isinstance(p, bool) or not isinstance(p, int | np.integer) or not 0 < p < 100:
            raise ValueError(f"percent: expected an integer in (0, 100), got {p!r}")
    return [(n * int(p) + 99) // 100 for p in percents]


def order_statistics(values: np.ndarray, percents: Sequence[int], *, in_place: bool = False) -> list[float]:
    """The ``p``-th percentile of ``values`` for each ``p`` of ``percents``, as an order statistic: the
    ``ceil(n p / 100)``-th smallest of the n values (the inverse of the empirical distribution function,
    numpy's ``"inverted_cdf"``), so that it is one of the values and needs no interpolation. One partial
    sort for all of them (``in_place``: of ``values`` itself, a float64 array, whose order it changes);
    NaN for no value."""
    v = np.asarray(values, dtype=np.float64)
    ranks = _ranks(v.size, percents)
    if v.size == 0:
        return [float("nan")] * len(ranks)
    kth = sorted({r - 1 for r in ranks})
    if in_place:
        v.partition(kth)
        part = v
    else:
        part = np.partition(v, kth)
    return [float(part[r - 1]) for r in ranks]


def order_statistic(values: np.ndarray, percent: int) -> float:
    """The ``percent``-th percentile of ``values`` (see :func:`order_statistics`)."""
    return order_statistics(values, [percent])[0]


def quantiles_sectioning(values: np.ndarray, batch: np.ndarray, percents: Sequence[int]) -> list[Estimate]:
    """The ``p``-th percentile of ``values`` for each ``p`` of ``percents`` (:func:`order_statistics` over
    all of them), each with a 95 % interval by *sectioning* (Asmussen & Glynn (2007), Stochastic
    Simulation, Ch. III, Sec. 5a): the same order statistic within each of the batches ``batch`` (one
    batch per value; contiguous in time, so that for long batches their estimates are nearly
    independent), and a Student-t interval of half-width t(0.975, B - 1) sd(batch estimates) / sqrt(B)
    around the overall estimate, over the B non-empty batches. Batch means of a mean do not apply to a
    quantile, and an order-statistic (binomial) interval assumes independent values, which the response
    times of one queue are not."""
    v = np.array(values, dtype=np.float64)  # a copy, partially sorted in place below
    b = np.asarray(batch, dtype=np.int64)
    if v.shape != b.shape:
        raise ValueError(f"batch: expected one batch per value ({v.shape}), got {b.shape}")
    if v.size == 0:
        return [Estimate(x, float("nan"), 0, "sectioning") for x in order_statistics(v, percents)]
    if np.any(np.diff(b) < 0):  # the engine's batches come in order; others are grouped first
        order = np.argsort(b, kind="stable")
        b, v = b[order], v[order]
    # each batch's slice is reordered within itself only, so the batches stay apart for the overall step
    parts = np.split(v, np.flatnonzero(np.diff(b)) + 1)
    sections = np.array([order_statistics(part, percents, in_place=True) for part in parts])
    points = order_statistics(v, percents, in_place=True)
    m = sections.shape[0]
    out = []
    for j, point in enumerate(points):
        if m < 2:
            out.append(Estimate(point, float("inf"), int(v.size), "sectioning"))
            continue
        centred = sections[:, j] - sections[:, j].mean()
        sd = math.sqrt(exact_dot(centred, centred) / (m - 1))
        hw = student_t_quantile(0.975, m - 1) * sd / math.sqrt(m)
        out.append(Estimate(point, hw, int(v.size), "sectioning"))
    return out


def quantile_sectioning(values: np.ndarray, batch: np.ndarray, percent: int) -> Estimate:
    """The ``percent``-th percentile of ``values`` with its sectioning interval (see
    :func:`quantiles_sectioning`)."""
    return quantiles_sectioning(values, batch, [percent])[0]


def replication_ci(values: Sequence[float]) -> Estimate:
    """Mean over independent replications with a Student-t 95 % CI."""
    v = np.asarray(values, dtype=np.float64)
    if v.size == 0:
        return Estimate(float("nan"), float("nan"), 0, "replications")
    if v.size == 1:
        return Estimate(float(v[0]), float("inf"), 1, "replications")
    hw = student_t_quantile(0.975, v.size - 1) * float(v.std(ddof=1)) / math.sqrt(v.size)
    return Estimate(float(v.mean()), hw, int(v.size), "replications")


def jain_index(values: Sequence[float]) -> float:
    """Jain's fairness index (sum x)^2 / (m sum x^2) over the finite entries (Chen et al. (2026), App. C); 1
    is fair."""
    x = np.asarray([v for v in values if math.isfinite(v)], dtype=np.float64)
    if x.size == 0 or not np.any(x):
        return float("nan")
    return float(x.sum() ** 2 / (x.size * (x**2).sum()))
