"""The generator of training systems: seeded, within its documented ranges, and Static Quickswap's
sufficient stability condition as its load limit."""

from __future__ import annotations

import numpy as np
import pytest

from msj_gym.workloads import Exponential, JobClass, Workload
from msj_gym.workloads.generator import SystemDistribution, load_limit, sample_system, sample_systems
from msj_gym.workloads.scenarios import load_scenario


def test_same_seed_same_systems_and_system_i_does_not_depend_on_n() -> None:
    a = [w.to_dict() for w in sample_systems(7, 5)]
    b = [w.to_dict() for w in sample_systems(7, 9)]
    assert a == b[:5]
    assert a != [w.to_dict() for w in sample_systems(8, 5)]


def test_systems_lie_in_the_documented_ranges() -> None:
    space = SystemDistribution()
    seen_families = set()
    for w in sample_systems(0, 300):
        needs = w.server_needs
        assert 8 <= w.num_servers <= 256
        assert 2 <= w.num_classes <= 8
        assert len(set(needs.tolist())) == w.num_classes and needs.max() <= w.num_servers
        assert w.probabilities.sum() == pytest.approx(1.0) and w.probabilities.min() > 0.009
        assert float(w.probabilities @ w.mean_service_times) == pytest.approx(1.0)
        share = w.load / load_limit(w)
        assert space.load_share[0] - 1e-9 <= share <= space.load_share[1] + 1e-9
        seen_families.update(c.service_time.kind for c in w.classes)
    assert seen_families == {"exponential", "erlang", "hyperexponential", "uniform", "deterministic"}


def test_load_limit() -> None:
    # every need divides k: the limit is 1
    assert load_limit(load_scenario("four-class").build()) == pytest.approx(1.0)
    assert load_limit(load_scenario("sf-fig2").build()) == pytest.approx(1.0)
    # k = 10, one class of need 3: three jobs fit, 9 of 10 servers, so the limit is 0.9
    w = Workload(num_servers=10, classes=[JobClass(3, Exponential(1.0), 1.0)], load=0.5)
    assert load_limit(w) == pytest.approx(0.9)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"min_servers": 1}, "servers"),
        ({"min_servers": 64, "max_servers": 32}, "servers"),
        ({"min_classes": 0}, "classes"),
        ({"load_share": (0.5, 1.0)}, "load_share"),
    ],
)
def test_bad_ranges(kwargs: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        SystemDistribution(**kwargs)


def test_a_narrower_distribution() -> None:
    space = SystemDistribution(min_servers=16, max_servers=16, min_classes=3, max_classes=3)
    w = sample_system(np.random.default_rng(1), space)
    assert w.num_servers == 16 and w.num_classes == 3
