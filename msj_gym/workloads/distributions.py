"""Service-time distributions.

Every distribution draws from a ``numpy.random.Generator`` passed in by the caller (never a global RNG),
knows its first two moments, and round-trips through a plain dict so that scenarios stay data::

    {"distribution": "exponential", "mean": 1.0}
    {"distribution": "hyperexponential", "mean": 10.0, "scv": 4.0}
    {"distribution": "lognormal", "mean": 10519.71, "std": 18267.03}

The survival function ``survival(x) = P(D > x)`` is what size-oblivious, distribution-aware policies
(ServerFilling-Gittins) need; distributions without a closed form estimate it from a large fixed-seed
sample.

Parameter limits (checked when a distribution is built, so a scenario fails before anything runs): a
duration parameter given by the user (a mean, value, scale, std, bound or branch mean) lies in
[MIN_DURATION, MAX_DURATION] = [1e-6, 1e9] time units, which keeps samples, their sums and the
simulation clock far from float underflow and overflow; a squared coefficient of variation is at most
MAX_SCV = 1e4 (lognormal, hyperexponential: sample means would not settle anyway) and a gamma's at most
20 (smaller shapes make NumPy's sampler return exact zeros); an Erlang has at most MAX_PHASES = 10**4
phases; a Pareto's alpha is at least 0.1 (smaller ones overflow its samples to infinity).
"""

from __future__ import annotations

import math
import reprlib
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np

__all__ = [
    "MAX_DURATION",
    "MAX_PHASES",
    "MAX_SCV",
    "MIN_DURATION",
    "Deterministic",
    "Distribution",
    "Empirical",
    "Erlang",
    "Exponential",
    "Gamma",
    "HyperExponential",
    "LogNormal",
    "MixedErlang",
    "Pareto",
    "Uniform",
    "distribution_from_dict",
]


MIN_DURATION = 1e-6
MAX_DURATION = 1e9
MAX_SCV = 1e4
MAX_GAMMA_SCV = 20.0
MIN_GAMMA_SCV = 1e-6
MAX_PHASES = 10**4
MIN_PARETO_ALPHA = 0.1


_REPR = reprlib.Repr()
_REPR.maxstring = _REPR.maxother = 80
_REPR.maxlevel = 3


def short_repr(value: Any) -> str:
    """``repr(value)`` cut short: a YAML file can alias one list into a tree of 10**8 items."""
    return _REPR.repr(value)


def _positive(name: str, value: Any) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name}: expected a positive number, got {value!r}") from None
    if isinstance(value, bool) or not math.isfinite(v) or v <= 0.0:
        raise ValueError(f"{name}: expected a positive finite number, got {value!r}")
    return v


def _within(name: str, value: Any, lo: float, hi: float) -> float:
    """``value`` as a float if it is finite and in [lo, hi], else an error naming ``name``."""
    v = _positive(name, value)
    if not lo <= v <= hi:
        raise ValueError(f"{name}: expected a number in [{lo:g}, {hi:g}], got {value!r}")
    return v


def _duration(name: str, value: Any) -> float:
    return _within(name, value, MIN_DURATION, MAX_DURATION)


def _probabilities(name: str, values: Sequence[float]) -> np.ndarray:
    p = np.asarray(values, dtype=np.float64)
    if p.ndim != 1 or p.size == 0:
        raise ValueError(f"{name}: expected a non-empty list of probabilities, got {values!r}")
    if not np.all(np.isfinite(p)) or np.any(p < 0):
        raise ValueError(f"{name}: probabilities must be finite and >= 0, got {values!r}")
    if abs(p.sum() - 1.0) > 1e-9:
        raise ValueError(f"{name}: probabilities must sum to 1, got sum {p.sum()!r} for {values!r}")
    return p


class Distribution(ABC):
    """A non-negative service-time distribution."""

    kind: ClassVar[str]
    _registry: ClassVar[dict[str, type[Distribution]]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        Distribution._registry[cls.kind] = cls

    @abstractmethod
    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        """Draw ``n`` i.i.d. service times with ``rng``."""

    @property
    @abstractmethod
    def mean(self) -> float:
        """E[D]."""

    @property
    @abstractmethod
    def second_moment(self) -> float:
        """E[D^2] (``inf`` when it does not exist)."""

    @property
    def variance(self) -> float:
        return self.second_moment - self.mean**2

    @property
    def scv(self) -> float:
        """Squared coefficient of variation Var[D] / E[D]^2."""
        return self.variance / self.mean**2

    def survival(self, x: np.ndarray) -> np.ndarray:
        """P(D > x), estimated from a fixed-seed sample of 2*10^5 draws unless overridden."""
        sample = np.sort(self.sample(np.random.default_rng(20240601), 200_000))
        x = np.asarray(x, dtype=np.float64)
        return 1.0 - np.searchsorted(sample, x, side="right") / sample.size

    def sample_residual(self, rng: np.random.Generator, ages: np.ndarray) -> np.ndarray:
        """Remaining durations of jobs that have run for ``ages`` already: one draw of ``D - a`` given
        ``D > a`` per age ``a`` (what a scheduler that knows the distribution but not the sizes may
        assume of a running job). Rejection sampling from :meth:`sample` unless a subclass knows the
        conditional law; an age that 64 rounds of draws never exceed (survival below about 1/64 per
        draw) falls back to the largest of those draws' residuals, floored at zero, a documented
        approximation for jobs far in the tail."""
        ages = np.asarray(ages, dtype=np.float64)
        out = np.full(ages.shape, np.nan)
        todo = np.flatnonzero(ages <= 0.0)
        if todo.size:
            out[todo] = self.sample(rng, todo.size)
        todo = np.flatnonzero(ages > 0.0)
        best = np.zeros(todo.size)
        for _ in range(64):
            if todo.size == 0:
                break
            draws = self.sample(rng, todo.size)
            hit = draws > ages[todo]
            out[todo[hit]] = draws[hit] - ages[todo[hit]]
            best = np.maximum(best, draws - ages[todo])[~hit]
            todo = todo[~hit]
        if todo.size:
            out[todo] = np.maximum(best, 0.0)
        return out

    @abstractmethod
    def params(self) -> dict[str, Any]:
        """The keyword parameters that rebuild this distribution."""

    def to_dict(self) -> dict[str, Any]:
        return {"distribution": self.kind, **self.params()}

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.params().items())
        return f"{type(self).__name__}({args})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Distribution) and self.to_dict() == other.to_dict()

    def __hash__(self) -> int:
        return hash(repr(self))


class Exponential(Distribution):
    kind = "exponential"

    def __init__(self, mean: float = 1.0) -> None:
        self._mean = _duration("exponential.mean", mean)

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        return rng.exponential(self._mean, n)

    @property
    def mean(self) -> float:
        return self._mean

    @property
    def second_moment(self) -> float:
        return 2.0 * self._mean**2

    def survival(self, x: np.ndarray) -> np.ndarray:
        return np.exp(-np.asarray(x, dtype=np.float64) / self._mean)

    def sample_residual(self, rng: np.random.Generator, ages: np.ndarray) -> np.ndarray:
        # memoryless: a running job's remaining time is a fresh draw
        return rng.exponential(self._mean, np.shape(ages))

    def params(self) -> dict[str, Any]:
        return {"mean": self._mean}


class Deterministic(Distribution):
    kind = "deterministic"

    def __init__(self, value: float = 1.0) -> None:
        self.value = _duration("deterministic.value", value)

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        return np.full(n, self.value)

    @property
    def mean(self) -> float:
        return self.value

    @property
    def second_moment(self) -> float:
        return self.value**2

    def survival(self, x: np.ndarray) -> np.ndarray:
        return (np.asarray(x, dtype=np.float64) < self.value).astype(np.float64)

    def sample_residual(self, rng: np.random.Generator, ages: np.ndarray) -> np.ndarray:
        return np.maximum(self.value - np.asarray(ages, dtype=np.float64), 0.0)

    def params(self) -> dict[str, Any]:
        return {"value": self.value}


class Uniform(Distribution):
    kind = "uniform"

    def __init__(self, low: float, high: float) -> None:
        try:
            lo, hi = float(low), float(high)
        except (TypeError, ValueError):
            lo = hi = math.nan
        if not (math.isfinite(lo) and math.isfinite(hi)) or lo < 0 or hi <= lo:
            raise ValueError(f"uniform: expected 0 <= low < high, got low={low!r}, high={high!r}")
        _duration("uniform.high", hi)
        self.low, self.high = lo, hi

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        return rng.uniform(self.low, self.high, n)

    @property
    def mean(self) -> float:
        return 0.5 * (self.low + self.high)

    @property
    def second_moment(self) -> float:
        return (self.high**3 - self.low**3) / (3.0 * (self.high - self.low))

    def survival(self, x: np.ndarray) -> np.ndarray:
        return np.clip((self.high - np.asarray(x, dtype=np.float64)) / (self.high - self.low), 0.0, 1.0)

    def sample_residual(self, rng: np.random.Generator, ages: np.ndarray) -> np.ndarray:
        ages = np.asarray(ages, dtype=np.float64)
        lo = np.clip(ages, self.low, self.high)
        return np.maximum(lo + (self.high - lo) * rng.random(ages.shape) - ages, 0.0)

    def params(self) -> dict[str, Any]:
        return {"low": self.low, "high": self.high}


class HyperExponential(Distribution):
    """Mixture of exponentials. Build from ``probabilities`` and ``means``, or from ``mean`` and ``scv``
    (scv >= 1) with the balanced-means two-moment fit p1/mu1 = p2/mu2."""

    kind = "hyperexponential"

    def __init__(
        self,
        probabilities: Sequence[float] | None = None,
        means: Sequence[float] | None = None,
        *,
        mean: float | None = None,
        scv: float | None = None,
    ) -> None:
        if mean is not None or scv is not None:
            if probabilities is not None or means is not None:
                raise ValueError("hyperexponential: give either probabilities/means or mean/scv, not both")
            m = _duration("hyperexponential.mean", mean)
            c2 = _within("hyperexponential.scv", scv, 1.0, MAX_SCV)
            p1 = 0.5 * (1.0 + math.sqrt((c2 - 1.0) / (c2 + 1.0)))
            probabilities = [p1, 1.0 - p1]
            means = [m / (2.0 * p1), m / (2.0 * (1.0 - p1))]
            check = _positive  # the fitted branch means may leave the range of the given mean
        else:
            check = _duration
        if probabilities is None or means is None:
            raise ValueError("hyperexponential: needs probabilities and means (or mean and scv)")
        self.probabilities = _probabilities("hyperexponential.probabilities", probabilities)
        self.means = np.array([check("hyperexponential.means", m) for m in means])
        if self.means.size != self.probabilities.size:
            raise ValueError(
                f"hyperexponential: {self.probabilities.size} probabilities but {self.means.size} means"
            )

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        branch = rng.choice(self.means.size, size=n, p=self.probabilities)
        return rng.exponential(1.0, n) * self.means[branch]

    @property
    def mean(self) -> float:
        return float(self.probabilities @ self.means)

    @property
    def second_moment(self) -> float:
        return float(self.probabilities @ (2.0 * self.means**2))

    def survival(self, x: np.ndarray) -> np.ndarray:
        x = np.asarray(x, dtype=np.float64)
        return np.sum(self.probabilities * np.exp(-x[..., None] / self.means), axis=-1)

    def sample_residual(self, rng: np.random.Generator, ages: np.ndarray) -> np.ndarray:
        # the branch given survival to age a has weights p_i exp(-a / m_i); each branch is memoryless
        ages = np.asarray(ages, dtype=np.float64).reshape(-1)
        logw = np.log(self.probabilities) - ages[:, None] / self.means
        w = np.exp(logw - logw.max(axis=1, keepdims=True))
        cdf = np.cumsum(w, axis=1)
        u = rng.random(ages.size) * cdf[:, -1]
        branch = np.minimum((cdf < u[:, None]).sum(axis=1), self.means.size - 1)
        return rng.exponential(1.0, ages.size) * self.means[branch]

    def params(self) -> dict[str, Any]:
        return {"probabilities": self.probabilities.tolist(), "means": self.means.tolist()}


def _erlang_survival(x: np.ndarray, shape: int, rate: float) -> np.ndarray:
    # P(Erlang(shape, rate) > x) = sum_{j<shape} e^{-rx} (rx)^j / j!, summed in log-space.
    x = np.asarray(x, dtype=np.float64)
    rx = rate * np.maximum(x, 0.0)
    out = np.zeros_like(rx)
    with np.errstate(divide="ignore"):
        log_rx = np.log(rx)
    for j in range(shape):
        term = np.where(rx > 0, np.exp(-rx + j * log_rx - math.lgamma(j + 1)), 1.0 if j == 0 else 0.0)
        out += term
    return np.minimum(out, 1.0)


class Erlang(Distribution):
    kind = "erlang"

    def __init__(self, shape: int, mean: float = 1.0) -> None:
        ok = not isinstance(shape, bool) and isinstance(shape, int | float | np.integer | np.floating)
        if not (ok and math.isfinite(shape) and shape == int(shape) and 1 <= shape <= MAX_PHASES):
            raise ValueError(f"erlang.shape: expected an integer in [1, {MAX_PHASES}], got {shape!r}")
        self.shape = int(shape)
        self._mean = _duration("erlang.mean", mean)

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        return rng.gamma(self.shape, self._mean / self.shape, n)

    @property
    def mean(self) -> float:
        return self._mean

    @property
    def second_moment(self) -> float:
        return self._mean**2 * (1.0 + 1.0 / self.shape)

    def survival(self, x: np.ndarray) -> np.ndarray:
        return _erlang_survival(x, self.shape, self.shape / self._mean)

    def params(self) -> dict[str, Any]:
        return {"shape": self.shape, "mean": self._mean}


class MixedErlang(Distribution):
    """Mixture of Erlang distributions: with probability ``probabilities[i]`` an Erlang with
    ``shapes[i]`` phases and mean ``means[i]``."""

    kind = "mixed-erlang"

    def __init__(self, probabilities: Sequence[float], shapes: Sequence[int], means: Sequence[float]) -> None:
        self.probabilities = _probabilities("mixed-erlang.probabilities", probabilities)
        self.components = [Erlang(s, m) for s, m in zip(shapes, means, strict=True)]
        if len(self.components) != self.probabilities.size:
            raise ValueError("mixed-erlang: probabilities, shapes and means must have the same length")

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        branch = rng.choice(len(self.components), size=n, p=self.probabilities)
        shapes = np.array([c.shape for c in self.components])[branch]
        scales = np.array([c.mean / c.shape for c in self.components])[branch]
        return rng.gamma(shapes, scales)

    @property
    def mean(self) -> float:
        return float(sum(p * c.mean for p, c in zip(self.probabilities, self.components, strict=True)))

    @property
    def second_moment(self) -> float:
        pairs = zip(self.probabilities, self.components, strict=True)
        return float(sum(p * c.second_moment for p, c in pairs))

    def survival(self, x: np.ndarray) -> np.ndarray:
        pairs = zip(self.probabilities, self.components, strict=True)
        return sum(p * c.survival(x) for p, c in pairs)

    def params(self) -> dict[str, Any]:
        return {
            "probabilities": self.probabilities.tolist(),
            "shapes": [c.shape for c in self.components],
            "means": [c.mean for c in self.components],
        }


class Gamma(Distribution):
    """Gamma distribution given by its mean and squared coefficient of variation (any scv > 0)."""

    kind = "gamma"

    def __init__(self, mean: float, scv: float) -> None:
        self._mean = _duration("gamma.mean", mean)
        self._scv = _within("gamma.scv", scv, MIN_GAMMA_SCV, MAX_GAMMA_SCV)

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        shape = 1.0 / self._scv
        return rng.gamma(shape, self._mean / shape, n)

    @property
    def mean(self) -> float:
        return self._mean

    @property
    def second_moment(self) -> float:
        return self._mean**2 * (1.0 + self._scv)

    def params(self) -> dict[str, Any]:
        return {"mean": self._mean, "scv": self._scv}


class Pareto(Distribution):
    """Pareto type I: P(D > x) = (scale / x)^alpha for x >= scale. Give ``scale`` or ``mean`` (alpha > 1)."""

    kind = "pareto"

    def __init__(self, alpha: float, scale: float | None = None, *, mean: float | None = None) -> None:
        self.alpha = _within("pareto.alpha", alpha, MIN_PARETO_ALPHA, math.inf)
        if (scale is None) == (mean is None):
            raise ValueError("pareto: give exactly one of scale and mean")
        if mean is not None:
            if self.alpha <= 1.0:
                raise ValueError(f"pareto.alpha: a finite mean needs alpha > 1, got {alpha!r}")
            scale = _duration("pareto.mean", mean) * (self.alpha - 1.0) / self.alpha
            self.scale = _positive("pareto.scale", scale)
        else:
            self.scale = _duration("pareto.scale", scale)

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        # Inverse transform on 1 - U, which lies in (0, 1].
        return self.scale * (1.0 - rng.random(n)) ** (-1.0 / self.alpha)

    @property
    def mean(self) -> float:
        return self.alpha * self.scale / (self.alpha - 1.0) if self.alpha > 1.0 else math.inf

    @property
    def second_moment(self) -> float:
        return self.alpha * self.scale**2 / (self.alpha - 2.0) if self.alpha > 2.0 else math.inf

    def survival(self, x: np.ndarray) -> np.ndarray:
        x = np.asarray(x, dtype=np.float64)
        return np.where(x < self.scale, 1.0, (self.scale / np.maximum(x, self.scale)) ** self.alpha)

    def sample_residual(self, rng: np.random.Generator, ages: np.ndarray) -> np.ndarray:
        # given D > a >= scale, D is Pareto(alpha, a): inverse transform from max(a, scale)
        ages = np.asarray(ages, dtype=np.float64)
        start = np.maximum(ages, self.scale)
        return start * (1.0 - rng.random(ages.shape)) ** (-1.0 / self.alpha) - ages

    def params(self) -> dict[str, Any]:
        return {"alpha": self.alpha, "scale": self.scale}


class LogNormal(Distribution):
    """Lognormal given by the mean and standard deviation of D itself (not of log D)."""

    kind = "lognormal"

    def __init__(self, mean: float, std: float) -> None:
        self._mean = _duration("lognormal.mean", mean)
        self.std = _positive("lognormal.std", std)
        if (self.std / self._mean) ** 2 > MAX_SCV:
            raise ValueError(
                f"lognormal.std: {std!r} is more than {math.sqrt(MAX_SCV):g} times the mean {mean!r} "
                f"(squared coefficient of variation above {MAX_SCV:g})"
            )
        self.sigma2 = math.log1p((self.std / self._mean) ** 2)
        self.mu = math.log(self._mean) - 0.5 * self.sigma2

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        return rng.lognormal(self.mu, math.sqrt(self.sigma2), n)

    @property
    def mean(self) -> float:
        return self._mean

    @property
    def second_moment(self) -> float:
        return self.std**2 + self._mean**2

    def survival(self, x: np.ndarray) -> np.ndarray:
        x = np.asarray(x, dtype=np.float64)
        with np.errstate(divide="ignore"):
            z = (np.log(np.maximum(x, 0.0)) - self.mu) / math.sqrt(2.0 * self.sigma2)
        return 0.5 * np.vectorize(math.erfc, otypes=[np.float64])(z)

    def params(self) -> dict[str, Any]:
        return {"mean": self._mean, "std": self.std}


class Empirical(Distribution):
    """Resamples (with replacement) from observed service times, e.g. the run times of a trace."""

    kind = "empirical"

    def __init__(self, values: Sequence[float]) -> None:
        v = np.asarray(values, dtype=np.float64)
        if v.ndim != 1 or v.size == 0:
            raise ValueError("empirical.values: expected a non-empty list of service times")
        bad = np.flatnonzero(~np.isfinite(v) | (v <= 0))
        if bad.size:
            raise ValueError(
                f"empirical.values: service times must be positive and finite, got {v[bad[0]]!r} "
                f"at index {bad[0]}"
            )
        self.values = v

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        return self.values[rng.integers(0, self.values.size, n)]

    @property
    def mean(self) -> float:
        return float(self.values.mean())

    @property
    def second_moment(self) -> float:
        return float(np.mean(self.values**2))

    def survival(self, x: np.ndarray) -> np.ndarray:
        s = np.sort(self.values)
        return 1.0 - np.searchsorted(s, np.asarray(x, dtype=np.float64), side="right") / s.size

    def params(self) -> dict[str, Any]:
        return {"values": self.values.tolist()}


def distribution_from_dict(
    spec: Mapping[str, Any] | Distribution, *, where: str = "service_time"
) -> Distribution:
    """Build a distribution from ``{"distribution": KIND, **params}``; errors name ``where``."""
    if isinstance(spec, Distribution):
        return spec
    if not isinstance(spec, Mapping):
        raise ValueError(
            f"{where}: expected a table like {{distribution = 'exponential', mean = 1}}, "
            f"got {short_repr(spec)}"
        )
    params = dict(spec)
    kind = params.pop("distribution", None)
    if not isinstance(kind, str) or kind not in Distribution._registry:
        known = ", ".join(sorted(Distribution._registry))
        raise ValueError(f"{where}.distribution: unknown distribution {short_repr(kind)}; known: {known}")
    if not all(isinstance(key, str) for key in params):
        raise ValueError(f"{where}: parameter names must be text, got {short_repr(list(params))}")
    try:
        return Distribution._registry[kind](**params)
    except (TypeError, OverflowError) as exc:
        raise ValueError(f"{where}: bad parameters for {kind!r}: {exc}") from None
    except ValueError as exc:
        raise ValueError(f"{where}: {exc}") from None
