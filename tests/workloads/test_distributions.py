import math

import numpy as np
import pytest

from msj_gym.workloads import (
    Deterministic,
    Empirical,
    Erlang,
    Exponential,
    Gamma,
    HyperExponential,
    LogNormal,
    MixedErlang,
    Pareto,
    Uniform,
    distribution_from_dict,
)

DISTRIBUTIONS = [
    Exponential(2.0),
    Deterministic(1.5),
    Uniform(0.5, 2.5),
    HyperExponential(mean=3.0, scv=5.0),
    HyperExponential([0.3, 0.7], [1.0, 4.0]),
    Erlang(3, 2.0),
    MixedErlang([0.5, 0.5], [1, 4], [1.0, 3.0]),
    Gamma(2.0, 0.25),
    Pareto(3.5, mean=2.0),
    LogNormal(10.0, 20.0),
    Empirical([1.0, 2.0, 2.0, 7.0]),
]


@pytest.mark.parametrize("dist", DISTRIBUTIONS, ids=lambda d: d.kind)
def test_sample_mean_matches_declared_mean(dist):
    x = dist.sample(np.random.default_rng(7), 400_000)
    assert np.all(x > 0) and np.all(np.isfinite(x))
    se = math.sqrt(dist.variance / x.size) if math.isfinite(dist.variance) else dist.mean / 50
    assert abs(x.mean() - dist.mean) <= 5 * se + 1e-12


@pytest.mark.parametrize("dist", DISTRIBUTIONS, ids=lambda d: d.kind)
def test_survival_matches_samples(dist):
    x = dist.sample(np.random.default_rng(11), 200_000)
    for q in (0.25, 0.5, 0.9):
        point = np.quantile(x, q)
        empirical = np.mean(x > point)
        assert abs(float(dist.survival(np.array([point]))[0]) - empirical) < 0.01


@pytest.mark.parametrize("dist", DISTRIBUTIONS, ids=lambda d: d.kind)
def test_dict_round_trip(dist):
    again = distribution_from_dict(dist.to_dict())
    assert again == dist
    assert again.mean == pytest.approx(dist.mean)


def test_same_generator_state_same_draws():
    d = HyperExponential(mean=2.0, scv=10.0)
    a = d.sample(np.random.default_rng(5), 1000)
    b = d.sample(np.random.default_rng(5), 1000)
    assert np.array_equal(a, b)


def test_two_moment_fit():
    d = HyperExponential(mean=3.0, scv=5.0)
    assert d.mean == pytest.approx(3.0)
    assert d.scv == pytest.approx(5.0)
    assert LogNormal(10519.71, 18267.03).variance == pytest.approx(18267.03**2)
    assert Gamma(2.0, 0.25).scv == pytest.approx(0.25)
    assert Pareto(1.5, scale=1.0).second_moment == math.inf


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        ({"distribution": "exponential", "mean": -1}, "exponential.mean"),
        ({"distribution": "exponential", "mean": float("nan")}, "exponential.mean"),
        ({"distribution": "erlang", "shape": 2.5, "mean": 1}, "erlang.shape"),
        ({"distribution": "hyperexponential", "mean": 1, "scv": 0.5}, "hyperexponential.scv"),
        ({"distribution": "hyperexponential", "probabilities": [0.5, 0.6], "means": [1, 2]}, "sum to 1"),
        ({"distribution": "pareto", "alpha": 0.8, "mean": 1}, "pareto.alpha"),
        ({"distribution": "empirical", "values": [1.0, -2.0]}, "empirical.values"),
        ({"distribution": "weibull", "mean": 1}, "unknown distribution 'weibull'"),
        ({"distribution": "exponential", "rate": 1}, "bad parameters"),
    ],
)
def test_bad_parameters_name_the_field(spec, field):
    with pytest.raises(ValueError, match=field.replace(".", r"\.")):
        distribution_from_dict(spec, where="classes[0].service_time")
