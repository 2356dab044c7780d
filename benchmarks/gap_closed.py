"""The share of the gap to the exact optimum that agents close, point by point.

    python benchmarks/gap_closed.py --agent generalist --agent planner --workers 2

At each point (``sf-fig2`` at loads 0.5, 0.7, 0.9; one-or-all at 0.5, 0.7 and lambda = 7, load
0.896875) it runs the non-preemptive policies and the agents with ``msj-gym leaderboard`` (held-out
seeds 9000-9009 by default, 20,000 arrivals), takes the best size-oblivious heuristic (the stable
non-preemptive entrant with the lowest mean response time that neither knows sizes nor is an agent)
and the exact non-preemptive optimum (``msj-gym optimal``), and prints, per agent and point::

    closed = (T_heuristic - T_agent) / (T_heuristic - T_optimum)

1 is the optimum, 0 the best heuristic, below 0 worse than it; an unstable agent closes nothing
("unstable"). The leaderboard's own folders (``--out``, default ``gap-closed/``) keep every run, so
a second call with more agents runs only theirs.
"""

from __future__ import annotations

import argparse
import csv
import math
import sys
from pathlib import Path

POINTS = (("sf-fig2", (0.5, 0.7, 0.9)), ("one-or-all", (0.5, 0.7, 0.896875)))
#: the solved optimal policies of the non-preemptive group (``msj-gym optimal``'s, run as entrants)
SOLVED = frozenset({"mdp-optimal", "mdp-optimal-preemptive"})


def main(argv: list[str] | None = None) -> int:
    from msj_gym.cli import main as cli

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--agent", action="append", required=True, help="an agent spec (repeatable)")
    ap.add_argument("--seeds", default="9000-9009", help="the leaderboard's --seeds (default 9000-9009)")
    ap.add_argument("--arrivals", type=int, default=20_000, help="arrivals per run (default 20000)")
    ap.add_argument("--workers", type=int, default=1, help="worker processes (default 1)")
    ap.add_argument("--out", type=Path, default=Path("gap-closed"), help="output folder")
    ap.add_argument(
        "--points", default=None, help="some of the points only: SCENARIO:LOAD,... (default: all six)"
    )
    args = ap.parse_args(argv)
    points = POINTS
    if args.points is not None:
        wanted: dict[str, list[float]] = {}
        for item in args.points.split(","):
            scenario, _, load = item.partition(":")
            try:
                wanted.setdefault(scenario, []).append(float(load))
            except ValueError:
                ap.error(f"--points: expected SCENARIO:LOAD items, got {item!r}")
        points = tuple((sc, tuple(loads)) for sc, loads in wanted.items())
    rows = []
    for scenario, loads in points:
        folder = args.out / scenario
        code = cli(
            [
                "leaderboard", "--scenario", scenario, "--loads", ",".join(map(str, loads)),
                "--policies", "non-preemptive", "--seeds", args.seeds, "--arrivals", str(args.arrivals),
                "--workers", str(args.workers), "--out", str(folder),
                *(x for a in args.agent for x in ("--agent", a)),
            ]
        )  # fmt: skip
        if code != 0:
            return code
        with open(folder / "leaderboard.csv", newline="") as f:
            table = list(csv.DictReader(f))
        for load in loads:
            at = [r for r in table if math.isclose(float(r["load"]), load)]
            heuristics = [
                r
                for r in at
                if r["stable"] == "True"
                and "size-aware" not in r["kind"]
                and "agent" not in r["kind"]
                and r["entrant"] not in SOLVED  # the optimum itself, simulated: the 1, not a heuristic
            ]
            best = min(heuristics, key=lambda r: float(r["mean_response_time"]))
            t_best = float(best["mean_response_time"])
            gap = float(best["gap"])  # (T - T*) / T*
            t_opt = t_best / (1.0 + gap)
            for r in at:
                if "agent" not in r["kind"]:
                    continue
                t = float(r["mean_response_time"])
                closed = (t_best - t) / (t_best - t_opt) if r["stable"] == "True" else math.nan
                rows.append((scenario, load, r["entrant"], t, t_best, best["entrant"], t_opt, closed))
    print(f"{'point':<22} {'agent':<22} {'T agent':>9} {'best heuristic':>24} {'optimum':>8} {'closed':>8}")
    for scenario, load, entrant, t, t_best, name, t_opt, closed in rows:
        shown = "unstable" if math.isnan(closed) else f"{100 * closed:.0f} %"
        print(
            f"{scenario + ' ' + format(load, 'g'):<22} {entrant:<22} {t:>9.3f} "
            f"{name + ' ' + format(t_best, '.3f'):>24} {t_opt:>8.3f} {shown:>8}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
