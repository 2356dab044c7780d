"""The compatibility-model simulator against balanced fairness (003).

With exponential sizes the aggregate state of FCFS and of Algorithm 1 (any m) has exactly the
balanced-fair distribution (Theorem 2), so their per-class mean delays must match recursion (4) / the
closed forms within confidence intervals. With the non-exponential sizes of Sec. 5, FCFS must deviate
and Algorithm 1 with m = 5 must come close (approximate insensitivity, a qualitative claim in the
paper). Criteria: balanced fairness outside FCFS's 99 % CI; the distance to it shrinking from FCFS to
m = 1 to m = 5; m = 5 at most a fifth of FCFS's distance. (A first criterion, m = 5 within 5 %, fails:
at rho = 0.8 m = 5 is 8-14 % above balanced fairness, m = 20 within 2-6 %; see
docs/papers/003-balanced-fairness.md.)
"""

from __future__ import annotations

import pytest

from msj_gym.analysis.balanced_fairness import workload_performance
from msj_gym.baselines import make_policy
from msj_gym.pooled import PooledSimulator
from msj_gym.workloads.compat import CompatClass, CompatWorkload, build_compat_scenario

from ..conftest import assert_within, ci99

POLICIES = [("compat-fcfs", {}), ("balanced-fair", {"m": 1.0}), ("balanced-fair", {"m": 5.0})]


def _small_random(load: float) -> CompatWorkload:
    """S = 12 unit servers, each job on d = 2 of them at random (the symmetric reduction applies)."""
    return CompatWorkload((1.0,) * 12, (CompatClass(tuple(range(12)), 12 * load, choose=2, name="random-2"),))


def _check(wl, policy, params, arrivals, seed):
    result = PooledSimulator(wl, make_policy(policy, **params), seed=seed, num_arrivals=arrivals).run()
    assert result.stable, result.stability_note
    perf = workload_performance(wl)
    for i, (name, c) in enumerate(result.per_class.items()):
        assert_within(
            c.mean_response_time, float(perf.mean_delay[i]), c.ci95_half_width, f"{policy} {params} {name}"
        )


@pytest.mark.parametrize(("policy", "params"), POLICIES, ids=["fcfs", "m1", "m5"])
@pytest.mark.parametrize(
    "system",
    ["003-tree-symmetric", "003-tree-asymmetric", "small-random"],
)
def test_exponential_sizes_give_balanced_fair_delays(system, policy, params):
    wl = _small_random(0.7) if system == "small-random" else build_compat_scenario(system, load=0.7)
    _check(wl, policy, params, 150_000, seed=1)


@pytest.mark.slow
@pytest.mark.parametrize(("policy", "params"), POLICIES, ids=["fcfs", "m1", "m5"])
@pytest.mark.parametrize(
    "system", ["003-tree-symmetric", "003-tree-asymmetric", "003-random-2", "003-random-3"]
)
@pytest.mark.parametrize("load", [0.5, 0.9])
def test_exponential_sizes_give_balanced_fair_delays_long(system, policy, params, load):
    _check(build_compat_scenario(system, load=load), policy, params, 1_000_000, seed=2)


def _insensitivity(system, distribution, load, arrivals, seed):
    wl = build_compat_scenario(system, load=load, distribution=distribution)
    perf = workload_performance(wl)
    runs = {
        label: PooledSimulator(wl, make_policy(p, **prm), seed=seed, num_arrivals=arrivals).run()
        for label, (p, prm) in zip(("fcfs", "m1", "m5"), POLICIES, strict=True)
    }
    for i, name in enumerate(c.name for c in wl.classes):
        ref = float(perf.mean_delay[i])
        fcfs, m1, m5 = (runs[k].per_class[name] for k in ("fcfs", "m1", "m5"))
        off = {k: abs(c.mean_response_time - ref) for k, c in (("fcfs", fcfs), ("m1", m1), ("m5", m5))}
        what = (
            f"{system} {distribution} rho={load} {name}: BF {ref:.4g}, FCFS {fcfs.mean_response_time:.4g}, "
            f"m=1 {m1.mean_response_time:.4g}, m=5 {m5.mean_response_time:.4g}"
        )
        assert off["fcfs"] > ci99(fcfs.ci95_half_width), f"{what}: FCFS does not deviate"
        assert off["fcfs"] > off["m1"] > off["m5"], f"{what}: not approaching balanced fairness"
        assert off["m5"] <= 0.2 * off["fcfs"], f"{what}: m=5 not close"


def test_non_exponential_sizes_fcfs_deviates_and_m5_is_close():
    # Small default-run version: the symmetric tree at rho = 0.8, hyperexponential sizes.
    _insensitivity("003-tree-symmetric", "hyperexponential", 0.8, 200_000, seed=3)


@pytest.mark.slow
@pytest.mark.parametrize("distribution", ["bimodal", "hyperexponential", "zipf"])
@pytest.mark.parametrize("system", ["003-tree-symmetric", "003-tree-asymmetric"])
def test_non_exponential_sizes_fcfs_deviates_and_m5_is_close_long(system, distribution):
    _insensitivity(system, distribution, 0.8, 1_000_000, seed=4)
