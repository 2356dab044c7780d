"""nMSR (004's competitor, spec msfq.md 2.7): the schedule chain spends the LP's time fractions in each
schedule, and the policy wastes capacity where the paper says it does."""

from __future__ import annotations

import numpy as np
import pytest

from msj_gym import Simulator, load_scenario
from msj_gym.baselines import make_policy


def test_clock_time_per_schedule_follows_alpha() -> None:
    wl = load_scenario("four-class").build(arrival_rate=3.0)
    res = Simulator(wl, make_policy("nmsr"), seed=2, num_arrivals=300_000).run()
    share = np.asarray(wl.probabilities) * np.asarray(wl.mean_service_times) / (15 // wl.server_needs)
    alpha = share / share.sum()
    got = [res.policy_metrics[f"schedule{c}_time_fraction"] for c in range(4)]
    np.testing.assert_allclose(got, alpha, atol=0.01)


def test_worse_than_msfq_in_one_or_all() -> None:
    """004 Sec. 6.2: nMSR performs poorly; MSFQ beats it by far at high load."""
    wl = load_scenario("one-or-all").build(arrival_rate=7.0)
    n = Simulator(wl, make_policy("nmsr"), seed=1, num_arrivals=200_000).run()
    q = Simulator(wl, make_policy("msfq"), seed=1, num_arrivals=200_000).run()
    assert q.stable and (not n.stable or n.mean_response_time > 5 * q.mean_response_time)


def test_backfilling_option_helps_on_four_classes() -> None:
    wl = load_scenario("four-class").build(arrival_rate=3.0)
    plain = Simulator(wl, make_policy("nmsr"), seed=3, num_arrivals=100_000).run()
    backfill = Simulator(wl, make_policy("nmsr", backfill=True), seed=3, num_arrivals=100_000).run()
    assert backfill.mean_response_time < plain.mean_response_time


def test_bad_tau() -> None:
    wl = load_scenario("four-class").build(arrival_rate=3.0)
    with pytest.raises(ValueError, match="tau"):
        Simulator(wl, make_policy("nmsr", tau=0.0), num_arrivals=100)
