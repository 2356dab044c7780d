"""Property-based checks: random small job streams (with simultaneous events and equal durations, the
cases where tie-breaking matters) keep every invariant under every policy."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from msj_gym import Simulator
from msj_gym.baselines import POLICIES, make_policy, supports
from msj_gym.workloads import TraceWorkload


@st.composite
def job_streams(draw):
    k = draw(st.integers(1, 6))
    n = draw(st.integers(2, 40))
    # Integer-valued times and durations make ties frequent.
    gaps = draw(st.lists(st.integers(0, 3), min_size=n, max_size=n))
    needs = draw(st.lists(st.integers(1, k), min_size=n, max_size=n))
    durations = draw(st.lists(st.integers(1, 5), min_size=n, max_size=n))
    return k, np.cumsum(gaps).astype(float), needs, np.array(durations, dtype=float)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(stream=job_streams(), policy_id=st.sampled_from(sorted(POLICIES)))
def test_random_streams_keep_invariants(stream, policy_id):
    k, times, needs, durations = stream
    trace = TraceWorkload(k, times, needs, durations)
    assume(supports(policy_id, trace) is None)
    sim = Simulator(
        trace, make_policy(policy_id), seed=0, num_arrivals=len(times), warmup=0, record_jobs=True, debug=True
    )
    result = sim.run()
    rec = sim.records()
    assert result.num_measured == len(times)
    order = np.argsort(times, kind="stable")
    np.testing.assert_allclose(rec["service_time"], durations[order])
    np.testing.assert_allclose(rec["service_received"], rec["service_time"], atol=1e-9)
    assert np.all(rec["first_start"] >= rec["arrival_time"])
    # Nobody waits while enough servers for it stay idle forever: the run ended with everyone served.
    assert np.all(np.isfinite(rec["departure_time"]))
    if not POLICIES[policy_id].preemptive:
        assert np.all(rec["preemptions"] == 0)
