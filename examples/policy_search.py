"""Random search over a priority rule's weights, scored by ``msj_gym.score``, checked on held-out seeds.

The rule (``PriorityFit``) is a policy written as docs/write-your-own.md shows: whenever jobs wait, it
takes the waiting job of highest priority

    priority = age / mean service time + need_weight * server need / k

(within a class the oldest job, so only the head of each class is compared) and starts it if it fits;
if it does not fit, it starts nothing more (the servers drain for it) while the jobs in the system
number at most ``block_below * k``, else it passes over its class. With ``need_weight = 0`` and
``block_below = 0`` it is First-Fit, decision for decision: the search starts there, draws weights at
random around the best so far, and keeps the best by the evaluator's combined score on the search
seeds (the score's default seeds, 5600-5609). The start and the best are then scored on held-out
seeds (5700-5709) that the search never saw: that is the number to believe.

Run: ``python examples/policy_search.py`` (24 candidates, 4 min 38 s on a shared 2-core machine, most
of it vetting each candidate, about 8 s each; the held-out seeds' references are made once, about a
minute, and cached). It prints each candidate's score with its 95 % interval, ``kept`` where it beats
the best so far, and the held-out scores of the start and the best. ``--budget``, ``--arrivals`` and
``--points`` make it smaller.
"""

from __future__ import annotations

import argparse
import math
from typing import Any, ClassVar

import numpy as np

import msj_gym
from msj_gym.core import Param, Policy
from msj_gym.core.access import (
    arrival_time,
    class_need,
    first_waiting_of_class,
    free_servers,
    next_waiting_of_class,
    now,
    num_classes,
    num_in_system,
    num_servers,
    region,
    start,
    value,
)
from msj_gym.core.jit import inline_jit
from msj_gym.core.layout import Layout
from msj_gym.core.record import Record
from msj_gym.scoring import check_suite

FIELDS = Record("need_weight", "block_below", "time_unit")
NEED_WEIGHT, BLOCK_BELOW, TIME_UNIT = FIELDS.ids
WORK = Layout(ints={"head": "classes"})
(HEAD,) = WORK.ids


@inline_jit
def _priority_fit(view, pdata, actions):
    need_weight = value(pdata.params, NEED_WEIGHT)
    block_below = value(pdata.params, BLOCK_BELOW)
    unit = value(pdata.params, TIME_UNIT)
    head = region(pdata.iwork, HEAD)  # head[c]: the oldest job of class c not yet passed over (-1: none)
    classes = num_classes(view)
    for c in range(classes):
        head[c] = first_waiting_of_class(view, c)
    k = num_servers(view)
    t = now(view)
    free = free_servers(view)
    # the jobs in the system, per server: starting a job leaves it as it is, so that the rule's first
    # action alone, asked again, gives the rest (the environments replay a decision action by action)
    crowd = num_in_system(view) / k
    n = 0
    while True:
        best = -1
        best_priority = -math.inf
        for c in range(classes):
            s = head[c]
            if s != -1:
                p = (t - arrival_time(view, s)) / unit + need_weight * class_need(view, c) / k
                if p > best_priority:
                    best, best_priority = c, p
        if best == -1:
            return n
        s = head[best]
        if class_need(view, best) <= free:
            n = start(actions, n, s)
            free -= class_need(view, best)
            head[best] = next_waiting_of_class(view, s)
        elif crowd <= block_below:
            return n  # it waits for the servers to drain: nothing behind it starts
        else:
            head[best] = -1  # no job of its class fits now


class PriorityFit(Policy):
    """Start the waiting job of highest priority (age in mean service times plus ``need_weight`` times
    its share of the servers) while one fits; one that does not fit blocks the rest while at most
    ``block_below * k`` jobs are in the system. Non-preemptive; size-oblivious. ``need_weight=0,
    block_below=0`` is First-Fit."""

    policy_id = "priority-fit"
    reference = "examples/policy_search.py"
    params_spec: ClassVar[dict[str, Param]] = {
        "need_weight": Param(float, 0.0, "priority per share of the servers a job needs"),
        "block_below": Param(
            float,
            0.0,
            "jobs in the system per server at or below which one that does not fit blocks",
            minimum=0.0,
        ),
    }
    kernel = _priority_fit
    work = WORK

    def prepare(self, workload: Any, rng: np.random.Generator):
        base = super().prepare(workload, rng)
        unit = float(np.sum(workload.probabilities * workload.mean_service_times))
        return base._replace(params=FIELDS.pack(time_unit=unit, **self.param_values))


def combined(policy: Policy, **suite: Any) -> tuple[float, tuple[float, float]]:
    """The evaluator's combined score of ``policy`` and its 95 % interval (a refused one: -inf)."""
    try:
        result = msj_gym.score(policy, **suite).results[0]
    except msj_gym.PolicyRefused as exc:
        print(f"  refused: {exc}")
        return -math.inf, (-math.inf, -math.inf)
    return result.score, result.score_ci95


def search(budget: int, seed: int, **suite: Any) -> tuple[dict[str, float], dict[str, float], float, float]:
    """Random search from First-Fit's weights: each candidate perturbs the best so far (``block_below``
    on a log scale, or drawn afresh). Returns the start, the best, and their search scores."""
    rng = np.random.default_rng(seed)
    start_weights = {"need_weight": 0.0, "block_below": 0.0}
    start_score, _ = combined(PriorityFit(**start_weights), **suite)
    print(f"start {start_weights}: {start_score:.2f}")
    best, best_score = dict(start_weights), start_score
    for i in range(budget):
        block_below = best["block_below"]
        if block_below == 0.0 or rng.random() < 0.25:
            block_below = float(rng.uniform(0.0, 2.0))
        else:
            block_below = float(block_below * np.exp(rng.normal(0.0, 0.5)))
        candidate = {
            "need_weight": float(best["need_weight"] + rng.normal(0.0, 2.0)),
            "block_below": block_below,
        }
        value, ci = combined(PriorityFit(**candidate), **suite)
        kept = value > best_score
        if kept:
            best, best_score = candidate, value
        weights = ", ".join(f"{k} {v:.3g}" for k, v in candidate.items())
        print(f"{i + 1:3d} {weights}: {value:.2f} [{ci[0]:.2f}, {ci[1]:.2f}]{'  kept' if kept else ''}")
    return start_weights, best, start_score, best_score


def _checked(flag: str, seeds: str, suite: dict[str, Any]) -> tuple[int, ...]:
    """The seeds of ``flag``, checked as the evaluator checks its own (a one-line error naming ``flag``)."""
    try:
        return check_suite(seeds=seeds, **suite)
    except ValueError as exc:
        raise ValueError(str(exc).replace("--seeds", flag, 1)) from None


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--budget", type=int, default=24, help="candidates to score (default 24)")
    ap.add_argument("--seed", type=int, default=0, help="seed of the search's draws (default 0)")
    ap.add_argument("--search-seeds", default="5600-5609", help="seeds the search scores on")
    ap.add_argument("--held-out-seeds", default="5700-5709", help="seeds of the final check")
    ap.add_argument("--arrivals", type=int, default=None, help="arrivals per run (default: the score's)")
    ap.add_argument("--points", default=None, help="a subset of the score suite (default: all of it)")
    args = ap.parse_args(argv)
    suite = {"arrivals": args.arrivals, "points": args.points}
    try:  # every input checked before any work, each error one line
        if args.budget < 1:
            raise ValueError(f"--budget: expected a positive number of candidates, got {args.budget}")
        searched = _checked("--search-seeds", args.search_seeds, suite)
        held_out = _checked("--held-out-seeds", args.held_out_seeds, suite)
        if set(searched) & set(held_out):
            raise ValueError(
                f"--held-out-seeds {args.held_out_seeds!r}: seed {min(set(searched) & set(held_out))} is a "
                "search seed; held-out seeds are seeds the search never saw"
            )
    except ValueError as exc:
        raise SystemExit(f"policy_search.py: error: {exc}") from None
    start_weights, best, start_search, best_search = search(
        args.budget, args.seed, seeds=args.search_seeds, **suite
    )
    start_held, start_ci = combined(PriorityFit(**start_weights), seeds=args.held_out_seeds, **suite)
    best_held, best_ci = combined(PriorityFit(**best), seeds=args.held_out_seeds, **suite)
    print(f"held-out seeds {args.held_out_seeds}:")
    print(f"  start {start_weights}: {start_held:.2f} [{start_ci[0]:.2f}, {start_ci[1]:.2f}]")
    print(f"  best  {best}: {best_held:.2f} [{best_ci[0]:.2f}, {best_ci[1]:.2f}]")
    return {
        "start": start_weights,
        "best": best,
        "search": (start_search, best_search),
        "held_out": (start_held, best_held),
    }


if __name__ == "__main__":
    main()
