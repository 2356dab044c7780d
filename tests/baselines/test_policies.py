"""Each policy's decision rule on small hand-made job streams, where the right schedule is known."""

from __future__ import annotations

import numpy as np
import pytest

from msj_gym.baselines import make_policy
from msj_gym.baselines.server_filling import gittins_rank_table
from msj_gym.workloads import Deterministic, Exponential, HyperExponential, Uniform

from ..conftest import trace_records


def _schedule(policy_id, k, times, needs, durations, **params):
    return trace_records(make_policy(policy_id, **params), k, times, needs, durations)


def test_fcfs_blocks_first_fit_skips_msf_and_lsf_rank():
    # k = 4. t=0: A needs 3 (runs to 10). t=1: B needs 4. t=2: C needs 1. t=3: D needs 1.
    times, needs, durs = [0, 1, 2, 3], [3, 4, 1, 1], [10, 5, 5, 20]
    fcfs = _schedule("fcfs", 4, times, needs, durs)["first_start"]
    np.testing.assert_allclose(fcfs, [0, 10, 15, 15])  # C waits behind B
    ff = _schedule("first-fit", 4, times, needs, durs)["first_start"]
    np.testing.assert_allclose(ff, [0, 27, 2, 7])  # C and D backfill; B waits until D ends at 27
    # MSF and LSF at t=10 with B (4), D (1) waiting and 4 idle servers... differ on who goes first.
    times2, needs2, durs2 = [0, 1, 2], [4, 1, 3], [2, 1, 1]
    msf = _schedule("msf", 4, times2, needs2, durs2)["first_start"]
    lsf = _schedule("lsf", 4, times2, needs2, durs2)["first_start"]
    np.testing.assert_allclose(msf, [0, 2, 2])  # at t=2 both fit (1 + 3 = 4)
    times3, needs3, durs3 = [0, 1, 1.5], [4, 2, 3], [2, 1, 1]
    np.testing.assert_allclose(_schedule("msf", 4, times3, needs3, durs3)["first_start"], [0, 3, 2])
    np.testing.assert_allclose(_schedule("lsf", 4, times3, needs3, durs3)["first_start"], [0, 2, 3])
    assert lsf.size == 3


def test_easy_backfills_only_without_delaying_the_reservation():
    # k = 4. A (3 servers, 10 s) runs; B (4) is reserved for t = 10 (shadow), extra servers 0.
    # C (1 server, 5 s, ends 7 <= 10) backfills at 2; D (1 server, 20 s) would end after the shadow
    # and use a reserved server: it must wait until B is done.
    times, needs, durs = [0, 1, 2, 3], [3, 4, 1, 1], [10, 5, 5, 20]
    easy = _schedule("easy-backfilling", 4, times, needs, durs)["first_start"]
    np.testing.assert_allclose(easy, [0, 10, 2, 15])
    # With estimates up to 2x too long C looks like ending after the shadow (if its noise draw is high):
    # whatever the draws, B never starts later than it would with exact estimates.
    noisy = _schedule("easy-backfilling", 4, times, needs, durs, estimate_factor=1.0)["first_start"]
    assert noisy[1] <= 10.0 + 1e-12


def test_easy_uses_extra_servers():
    # k = 5. A (3, 10 s); B (4) reserved at 10 leaving 1 extra server; C (1 server, 30 s) runs on it now.
    rec = _schedule("easy-backfilling", 5, [0, 1, 2], [3, 4, 1], [10, 5, 30])
    np.testing.assert_allclose(rec["first_start"], [0, 10, 2])


def test_max_weight_picks_the_heaviest_packing():
    # k = 4, everything waiting at t = 0.5 after a 4-server job ends: needs 2, 2 and 1, 1, 1.
    # Weights Q_n: Q_2 = 2, Q_1 = 3. Packings of 4 servers: {2,2}: 4; {2,1,1}: 8; {1,1,1}: 9 -> three 1s.
    times = [0, 0.1, 0.2, 0.3, 0.4, 0.45]
    needs = [4, 2, 2, 1, 1, 1]
    durs = [0.5, 1, 1, 1, 1, 1]
    rec = _schedule("max-weight", 4, times, needs, durs)
    np.testing.assert_allclose(rec["first_start"][3:], [0.5, 0.5, 0.5])
    assert rec["first_start"][1] > 0.5 and rec["first_start"][2] > 0.5


def test_server_filling_serves_the_largest_needs_of_the_oldest_jobs():
    # k = 8: a (1), b (8), c (1) arrive at 0, 1, 2. M at t=1 is {a, b} (needs 9 >= 8): b takes all 8
    # servers and a is preempted; at t=2 c arrives behind a full M and waits.
    rec = _schedule("server-filling", 8, [0, 1, 2], [1, 8, 1], [5, 1, 1])
    np.testing.assert_allclose(rec["first_start"], [0, 1, 2])
    assert list(rec["preemptions"]) == [1, 0, 0]
    np.testing.assert_allclose(rec["departure_time"], [6, 2, 3])


def test_server_filling_srpt_prefers_small_remaining_sizes():
    # a (1 server, 10 s) runs; b (8 servers, 0.5 s: size 4 < a's remaining 9) arrives at 1 and preempts.
    rec = _schedule("server-filling-srpt", 8, [0, 1], [1, 8], [10, 0.5])
    np.testing.assert_allclose(rec["first_start"], [0, 1])
    np.testing.assert_allclose(rec["departure_time"], [10.5, 1.5])
    ff = _schedule("first-fit-srpt", 8, [0, 1], [1, 8], [10, 0.5])
    np.testing.assert_allclose(ff["departure_time"], [10.5, 1.5])


@pytest.mark.parametrize(
    ("dist", "expected"),
    [
        (Exponential(2.0), lambda a: np.full_like(a, 2.0)),
        (Deterministic(3.0), lambda a: 3.0 - a),
        (Uniform(0.0, 1.0), lambda a: (1.0 - a) / 2.0),
    ],
    ids=["exponential", "deterministic", "uniform"],
)
def test_gittins_rank_tables_match_closed_forms(dist, expected):
    ranks, inv_step = gittins_rank_table(dist)
    ages = np.arange(ranks.size) / inv_step
    inside = ages < 0.8 * (dist.mean * 2 if dist.kind != "exponential" else 10.0)
    np.testing.assert_allclose(ranks[inside], expected(ages[inside]), rtol=0.02, atol=0.01 * dist.mean)


def test_gittins_rank_of_decreasing_hazard_rises_with_age():
    ranks, _ = gittins_rank_table(HyperExponential(mean=1.0, scv=8.0))
    assert ranks[0] < ranks[50] < ranks[200]
