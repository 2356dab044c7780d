"""The HPC heuristics (SJF, WFP3, UNICEP, F1, each with and without EASY backfilling) against traces
worked by hand, and the run-time estimates that drive them and EASY."""

from __future__ import annotations

import numpy as np
import pytest

from msj_gym import Simulator, load_scenario
from msj_gym.baselines import make_policy, supports
from msj_gym.registry import policy_class
from msj_gym.workloads.trace import TraceWorkload

HEURISTICS = ("sjf", "wfp3", "unicep", "f1")


def _starts(jobs: list[tuple[float, int, float, float]], pid: str, k: int = 4, **params) -> list[float]:
    """Each job's first start when ``pid`` schedules ``jobs`` (arrival, need, service, requested)."""
    t, n, d, r = (np.array(x) for x in zip(*jobs, strict=True))
    trace = TraceWorkload(k, t, n, d, requested_time=r, name="hand")
    sim = Simulator(trace, make_policy(pid, **params), num_arrivals=len(jobs), warmup=0, debug=True)
    sim.run()
    return sim.records()["first_start"].tolist()


# k = 4. B holds every server until 10; J1..J4 wait, and need 3 or 4 servers, so from 10 on they run one
# at a time in the rule's order (re-ranked at each departure). Columns: arrival, need, service, requested.
ORDER_JOBS = [
    (0.0, 4, 10.0, 10.0),  # B
    (1.0, 3, 2.0, 8.0),  # J1
    (2.0, 4, 2.0, 8.0),  # J2
    (3.0, 3, 2.0, 8.0),  # J3
    (4.0, 3, 6.0, 6.0),  # J4
]
# Scores at t = 10 (w = 10 - arrival), smallest first:
#   SJF    r:                    J1 8, J2 8, J3 8, J4 6              -> J4, then J1, J2, J3 (ties: arrival)
#   WFP3   -(w/r)^3 n:           J1 -4.27, J2 -4.0, J4 -3.0, J3 -2.01 -> J1;
#                                at 12: J2 -7.81, J4 -7.11, J3 -4.27 -> J2; at 14: J4 -13.9, J3 -7.80 -> J4
#                                (J4 runs 14..20); J3 last
#   UNICEP -w/(log2(n) r):       J1 -0.710, J4 -0.631, J3 -0.552, J2 -0.5 -> J1; at 12: J4 -0.841 first
#                                -> J4 (12..18); at 18: J3 -1.183, J2 -1.0 -> J3, J2
#   F1     log10(r) n + 870 log10(s): J1 2.7, J2 265.5, J3 417.8, J4 526.1 -> arrival order here
EXPECTED_STARTS = {
    "sjf": [0.0, 16.0, 18.0, 20.0, 10.0],
    "wfp3": [0.0, 10.0, 12.0, 20.0, 14.0],
    "unicep": [0.0, 10.0, 20.0, 18.0, 12.0],
    "f1": [0.0, 10.0, 12.0, 14.0, 16.0],
}


@pytest.mark.parametrize("pid", HEURISTICS)
def test_the_order_of_each_score_by_hand(pid: str) -> None:
    assert _starts(ORDER_JOBS, pid) == EXPECTED_STARTS[pid]
    # with nothing to backfill (every job needs 3 or 4 of the 4 servers), EASY changes nothing
    assert _starts(ORDER_JOBS, f"{pid}-easy") == EXPECTED_STARTS[pid]


def test_unicep_ranks_a_one_processor_job_first() -> None:
    # at 10, J1 (need 4, w 9, r 1) scores -9 / (2 * 1) = -4.5 and J2 (need 1, w 1, r 100) would score
    # -0.01; but log2(1) = 0: a one-processor job ranks before every larger job (the limit n -> 1+)
    jobs = [(0.0, 4, 10.0, 10.0), (1.0, 4, 1.0, 1.0), (9.0, 1, 1.0, 100.0)]
    assert _starts(jobs, "unicep") == [0.0, 11.0, 10.0]
    assert _starts(jobs, "sjf") == [0.0, 10.0, 11.0]  # J1's r = 1 first; J2 waits behind it


# k = 4. A holds 2 servers until 10. H (need 4) arrives at 1 and cannot start: its shadow time is 10 by
# A's estimate. X (need 2, runs 3, requested 20) arrives at 2 and fits now: it ends by the shadow time by
# its run time (2 + 3 <= 10) but not by its request (2 + 20 > 10), and at the shadow time no server is
# spare (2 free + A's 2 = H's 4).
BACKFILL_JOBS = [(0.0, 2, 10.0, 10.0), (1.0, 4, 5.0, 5.0), (2.0, 2, 3.0, 20.0)]


@pytest.mark.parametrize("pid", [f"{h}-easy" for h in HEURISTICS])
def test_easy_backfills_by_the_estimates_it_is_given(pid: str) -> None:
    assert _starts(BACKFILL_JOBS, pid) == [0.0, 10.0, 15.0]  # requested times: X is not backfilled
    assert _starts(BACKFILL_JOBS, pid, estimates="exact") == [0.0, 10.0, 2.0]  # backfilled at once
    assert _starts(BACKFILL_JOBS, pid.removesuffix("-easy")) == [0.0, 10.0, 15.0]  # no backfilling


def test_fcfs_easy_backfilling_takes_requested_estimates() -> None:
    assert _starts(BACKFILL_JOBS, "easy-backfilling") == [0.0, 10.0, 2.0]  # default: exact durations
    assert _starts(BACKFILL_JOBS, "easy-backfilling", estimates="requested") == [0.0, 10.0, 15.0]
    # a request shorter than the run: X's estimate 2 + 6 = 8 <= 10, so it is backfilled, and H waits for
    # X's real end (11); A's estimate 10 was right
    jobs = [*BACKFILL_JOBS[:2], (2.0, 2, 9.0, 6.0)]
    assert _starts(jobs, "easy-backfilling", estimates="requested") == [0.0, 11.0, 2.0]


def test_without_requested_times_the_heuristics_are_not_defined() -> None:
    wl = load_scenario("four-class").build(load=0.6)
    for pid in (*HEURISTICS, "sjf-easy"):
        assert "carries no requested times" in (supports(pid, wl) or "")
        assert supports(make_policy(pid, estimates="exact"), wl) is None
    assert "carries no requested times" in (
        supports(make_policy("easy-backfilling", estimates="requested"), wl) or ""
    )
    res = Simulator(
        wl, make_policy("wfp3-easy", estimates="f-model", estimate_factor=1.0), num_arrivals=3000
    ).run()
    assert res.num_measured > 0
    # an f the estimates do not use is refused with the parameters, before any workload
    with pytest.raises(ValueError, match=r"estimate_factor 2\.0 applies to estimates='f-model'"):
        make_policy("sjf", estimates="exact", estimate_factor=2.0)
    with pytest.raises(ValueError, match=r"estimate_factor 0\.5 applies to estimates='f-model'"):
        make_policy("easy-backfilling", estimates="exact", estimate_factor=0.5)


def test_estimates_decide_whether_an_entrant_reads_sizes() -> None:
    assert not make_policy("sjf").reads_sizes() and make_policy("sjf").kind_notes() == (
        "estimates: requested",
    )
    assert make_policy("sjf", estimates="exact").reads_sizes()
    assert make_policy("easy-backfilling").kind_notes() == ("estimates: exact",)
    assert make_policy("easy-backfilling", estimate_factor=1.0).kind_notes() == ("estimates: f-model",)
    assert not make_policy("easy-backfilling", estimates="requested").reads_sizes()


@pytest.mark.parametrize("pid", [*HEURISTICS, *(f"{h}-easy" for h in HEURISTICS)])
def test_registered_with_sources(pid: str) -> None:
    cls = policy_class(pid)
    assert cls.policy_id == pid and not cls.preemptive and cls.reference
    doc = cls.__doc__ or ""
    assert "Non-preemptive" in doc and "requested" in doc
    assert ("EASY" in doc) == pid.endswith("-easy")


# RLScheduler's code, reproduced by variant="rlscheduler": k = 4, A (2 processors) runs until 10. B (all 4,
# requested 100) arrives at 1 and is picked, alone in the queue: committed. C (2 processors, requested 1)
# arrives at 2: SJF as the papers read it re-ranks and starts C at once; RLScheduler's waits for B.
COMMIT_JOBS = [(0.0, 2, 10.0, 10.0), (1.0, 4, 1.0, 100.0), (2.0, 2, 1.0, 1.0)]


def test_the_rlscheduler_variant_commits_to_its_pick() -> None:
    assert _starts(COMMIT_JOBS, "sjf") == [0.0, 10.0, 2.0]
    assert _starts(COMMIT_JOBS, "sjf", variant="rlscheduler") == [0.0, 10.0, 11.0]
    # with backfilling, C ends (by its request) at 3, before B's reservation at 10: backfilled
    assert _starts(COMMIT_JOBS, "sjf-easy", variant="rlscheduler") == [0.0, 10.0, 2.0]


def test_the_rlscheduler_variant_backfills_in_arrival_order_without_the_spare_servers() -> None:
    # k = 4, A (3 processors) until 10; H (2) cannot start at 1: its reservation at 10 leaves 2 spare.
    # X (1 processor, 50 s) fits at 2 and would end after 10: EASY starts it on the spare servers;
    # RLScheduler's rule (strictly before the reservation) does not, and X starts beside H at 10.
    jobs = [(0.0, 3, 10.0, 10.0), (1.0, 2, 1.0, 1.0), (2.0, 1, 50.0, 50.0)]
    assert _starts(jobs, "easy-backfilling", estimates="requested") == [0.0, 10.0, 2.0]
    from msj_gym.baselines.hpc import FCFSEasy

    t, n, d, r = (np.array(x) for x in zip(*jobs, strict=True))
    trace = TraceWorkload(4, t, n, d, requested_time=r, name="hand")
    for variant, x_start in (("paper", 2.0), ("rlscheduler", 10.0)):
        sim = Simulator(trace, FCFSEasy(variant=variant), num_arrivals=3, warmup=0, debug=True)
        sim.run()
        assert sim.records()["first_start"].tolist() == [0.0, 10.0, x_start]


def test_the_rlscheduler_variant_scores_wfp3_by_its_waiting_time_of_minus_submit() -> None:
    # k = 4; B holds every processor until 10; J1 (submit 1, r 2) and J2 (submit 5, r 20), both of 4.
    # At 10: WFP3 as written scores J1 -(9/2)^3 4 = -364.5 and J2 -(5/20)^3 4 = -0.0625: J1 first.
    # RLScheduler's w = -(s + 1) scores J1 ((1+1)/2)^3 4 = 4 and J2 (6/20)^3 4 = 0.108: J2 first.
    jobs = [(0.0, 4, 10.0, 10.0), (1.0, 4, 2.0, 2.0), (5.0, 4, 20.0, 20.0)]
    assert _starts(jobs, "wfp3") == [0.0, 10.0, 12.0]
    # picked at 1, alone in the queue, J1 is committed; then J2 at 12
    assert _starts(jobs, "wfp3", variant="rlscheduler") == [0.0, 10.0, 12.0]
    # with J1 and J2 in the queue together when B ends (J1 arrives at 5 as well), J2 goes first
    both = [(0.0, 4, 10.0, 10.0), (5.0, 4, 2.0, 2.0), (5.0, 4, 20.0, 20.0)]
    assert _starts(both, "wfp3") == [0.0, 10.0, 12.0]
    assert _starts(both, "wfp3", variant="rlscheduler") == [0.0, 30.0, 10.0]
