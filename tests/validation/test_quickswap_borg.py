"""004's Borg cell B claims (Fig. 6, App. D) at the run length of ``msj-gym reproduce 004-appD``:
10^7 arrivals per point. Slow (several minutes): ``python3 -m pytest -m slow``. Short runs cannot check
these claims: the classes that carry most of the load (needs 200, 256, 2000) are 0.03 % of the jobs,
so a run of 10^5-10^6 arrivals measures almost none of them."""

from __future__ import annotations

import pytest

from msj_gym import Simulator
from msj_gym.baselines import make_policy
from msj_gym.workloads.scenarios import load_scenario

pytestmark = pytest.mark.slow


def _weighted(policy: str, lam: float) -> float:
    wl = load_scenario("borg-cellb").build(arrival_rate=lam)
    sim = Simulator(wl, make_policy(policy), seed=0, num_arrivals=10_000_000, max_jobs_in_system=5_000_000)
    return sim.run().weighted_mean_response_time


def test_adaptive_below_static_below_msf_at_high_load() -> None:
    aqs, sqs, msf = (_weighted(p, 4.5) for p in ("adaptive-quickswap", "static-quickswap", "msf"))
    assert aqs < sqs < msf, (aqs, sqs, msf)


def test_preemptive_server_filling_below_every_non_preemptive_policy() -> None:
    sf = _weighted("server-filling", 3.5)
    others = {p: _weighted(p, 3.5) for p in ("adaptive-quickswap", "static-quickswap", "msf", "first-fit")}
    assert all(sf < v for v in others.values()), (sf, others)
