"""Stability limits: the saturated FCFS chain against simulation of an overloaded FCFS queue (whose
queue never empties, so it runs at the saturated throughput), and the theorem-given limits."""

from __future__ import annotations

import pytest

from msj_gym import Simulator
from msj_gym.analysis import fcfs_saturated
from msj_gym.baselines import make_policy
from msj_gym.metrics.stats import replication_ci
from msj_gym.registry import stability_limit
from msj_gym.workloads import JobClass, Workload
from msj_gym.workloads.distributions import Exponential
from msj_gym.workloads.scenarios import load_scenario

from ..conftest import assert_within


def test_two_server_chain_by_hand() -> None:
    # k = 2, needs 1 and 2 w.p. 1/2, Exp(1). States (in service; head of line): A = (two small;
    # small), B = (two small; big), C = (one small; big), D = (big; small), E = (big; big).
    # Rates: A->B 1 (A->A 1), B->C 2, C->D 1/2, C->E 1/2, D->A 1/4, D->B 1/4, D->C 1/2, E->D 1/2.
    # Balance: pi = (1/4, 1/4, 1, 1, 1) * 2/7, throughput 2/14 + 2/14 + 6/7 = 8/7 jobs per unit time.
    wl = Workload(
        num_servers=2,
        classes=[JobClass(1, Exponential(1.0), 0.5, "small"), JobClass(2, Exponential(1.0), 0.5, "big")],
        load=0.5,
    )
    sat = fcfs_saturated(wl)
    assert sat is not None and sat.throughput == pytest.approx(8 / 7, rel=1e-12)
    assert sat.load_limit == pytest.approx(8 / 7 * (0.5 * 1 + 0.5 * 2) / 2, rel=1e-12)


@pytest.mark.parametrize("scenario", ["sf-fig2", "four-class"])
def test_overloaded_fcfs_runs_at_the_saturated_rate(scenario: str) -> None:
    # far enough in overload that the queue never empties after the warm-up
    wl = load_scenario(scenario).build(load=2.0)
    sat = fcfs_saturated(wl)
    assert sat is not None
    runs = [
        Simulator(wl, make_policy("fcfs"), seed=s, num_arrivals=30_000, max_jobs_in_system=10**6)
        for s in range(6)
    ]
    util = [sim.run().utilization for sim in runs]
    est = replication_ci(util)
    assert_within(est.mean, sat.utilization, est.ci95_half_width, f"{scenario} saturated FCFS utilisation")
    assert sat.utilization < 0.7  # FCFS wastes capacity here: the limit is well below 1


def test_theorem_limits() -> None:
    sf = load_scenario("sf-fig2").build()
    assert stability_limit("server-filling", sf)[0] == 1.0
    assert stability_limit("msf", sf)[0] == 1.0  # one-or-all
    assert stability_limit("first-fit", sf) is None
    borg = load_scenario("borg-cellb").build()
    value, source = stability_limit("static-quickswap", borg)
    assert 0.9 < value < 1.0 and "sufficient" in source
    assert stability_limit("server-filling", borg) is None  # needs are not all powers of two
    assert fcfs_saturated(load_scenario("bs-fig1").build()) is None  # too many states: no answer
    assert stability_limit("msfq", sf)[0] == 1.0  # at every threshold
    assert stability_limit("adaptive-quickswap", sf) is None  # the paper claims none


def test_a_policy_declares_its_own_theory() -> None:
    """The registry asks the policy: an instance, a registered id and a policy outside the registry
    alike; one that declares nothing has no limit."""
    from msj_gym.core import Policy

    sf = load_scenario("sf-fig2").build()
    assert stability_limit(make_policy("static-quickswap"), sf) == stability_limit("static-quickswap", sf)

    class Declared(Policy):
        policy_id = "declared"

        def stability_limit(self, workload):
            return 0.5, "a theorem of its own"

    assert stability_limit(Declared(), sf) == (0.5, "a theorem of its own")
    assert Policy.stability_limit(make_policy("first-fit"), sf) is None


def test_saturated_fcfs_on_one_or_all_with_many_servers() -> None:
    # k = 512 need-1 jobs fit at once: the admission cascade is 512 deep (it once exceeded Python's
    # recursion limit, after a whole leaderboard had run). With k that large the cap on the need-1 jobs
    # admitted after a need-k job is never reached (p^512), so the cycle is one need-k job, then N ~
    # Geometric need-1 jobs started together and drained: throughput (1 + E[N]) / (1 + E[H_N]) =
    # (1 / (1 - p)) / (1 + ln(1 / (1 - p))) with unit mean durations
    import math

    from msj_gym import load_scenario

    wl = load_scenario("one-or-all").build(num_servers=512, load=0.5)
    p = float(wl.probabilities[0])
    sat = fcfs_saturated(wl)
    assert sat is not None and sat.states == 515
    assert sat.throughput == pytest.approx((1 / (1 - p)) / (1 + math.log(1 / (1 - p))), rel=1e-9)
