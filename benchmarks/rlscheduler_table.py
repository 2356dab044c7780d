"""RLScheduler's table "Results of Scheduling Towards average bounded slowdown" (its repository's README;
Zhang et al. (2020)) on its own sequences, each cell beside the published value:

    python benchmarks/rlscheduler_table.py [--workers 2] [--starts rlscheduler|generator] [--count 10]

Protocol of the published table (its ``make_table_script.py``): 10 sequences of 1024 jobs, seed 1, the
starts drawn from the whole of Lublin-1 (``lublin_256``) and from the first 10,000 jobs of SDSC-SP2 and
HPC2N; each sequence from an empty machine, scored by its mean bounded slowdown (tau = 10 s). With
``--starts rlscheduler`` (the default) the starts are RLScheduler's own for the seed
(:func:`msj_gym.experiments.sequences.rlscheduler_starts`): seed 1 gives the very sequences of the
table. The logs are cleaned as RLScheduler's loader cleans them (``swf:FILE?need=max&cleaning=rlscheduler``).

The first table: the five heuristics in two variants, ``rlscheduler`` (as its code decides: see
``baselines/hpc.py``), each cell as ``ours [published, difference]`` with a ``*`` where the
difference exceeds 1 %, and ``paper`` (the scores as the papers define them, re-ranked at every
decision, EASY along the score order). The second: the published RL column beside the self-tuning
scheduler (``self-tuning``, ``self-tuning-easy``), which reads requested times and the run times of
finished jobs only, and the best heuristic of the row. The traces are read from ../shared/data/traces
(or ``$MSJ_GYM_TRACE_DIR``).
"""

from __future__ import annotations

import argparse
import time

from msj_gym.experiments.sequences import STARTS, SequenceProtocol, run_sequences

# (label, trace file, window of the starts, published FCFS, WFP3, UNI, SJF, F1 and RL, without and with
# backfilling)
PUBLISHED = {
    "Lublin-1": (
        "lublin_256.swf.gz",
        None,
        (7273.77, 19753.53, 22274.74, 277.35, 258.37, 254.67),
        (235.82, 133.87, 307.23, 73.31, 75.07, 58.64),
    ),
    "SDSC-SP2": (
        "SDSC-SP2-1998-4.2-cln.swf.gz",
        10_000,
        (1727.54, 3000.88, 1848.45, 2680.55, 1232.06, 466.44),
        (1595.12, 1083.12, 548.01, 2167.84, 1098.22, 397.82),
    ),
    "HPC2N": (
        "HPC2N-2002-2.2-cln.swf.gz",
        10_000,
        (297.18, 426.99, 609.77, 157.71, 118.01, 117.01),
        (127.38, 97.39, 175.12, 122.04, 71.95, 86.14),
    ),
}
COLUMNS = ("FCFS", "WFP3", "UNI", "SJF", "F1")
PLAIN = ("fcfs", "wfp3", "unicep", "sjf", "f1")
EASY = ("msj_gym.baselines.hpc:FCFSEasy", "wfp3-easy", "unicep-easy", "sjf-easy", "f1-easy")
ADAPTIVE = {"no": "self-tuning", "EASY": "self-tuning-easy"}


def _cell(ours: float, published: float) -> str:
    off = 100.0 * (ours - published) / published
    return f"{ours:.2f} [{published:.2f}, {off:+.2f} %]" + (" *" if abs(off) > 1.0 else "")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--count", type=int, default=10)
    ap.add_argument("--length", type=int, default=1024)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--starts", choices=STARTS, default="rlscheduler")
    args = ap.parse_args(argv)
    started = time.perf_counter()
    heuristics = [
        "| trace | backfilling | variant | " + " | ".join(COLUMNS) + " |",
        "|---|---|---|" + "---|" * 5,
    ]
    learned = [
        "| trace | backfilling | published RL | self-tuning | best heuristic, rlscheduler "
        "| best heuristic, paper |",
        "|---|---|---|---|---|---|",
    ]
    for label, (trace, window, plain, easy) in PUBLISHED.items():
        scenario = f"swf:{trace}?need=max&cleaning=rlscheduler"
        for backfill, policies, published in (("no", PLAIN, plain), ("EASY", EASY, easy)):
            best = {}
            for variant in ("rlscheduler", "paper"):
                params = {p: {"variant": variant} for p in policies if p != "fcfs"}
                entrants = (*policies, ADAPTIVE[backfill]) if variant == "paper" else policies
                protocol = SequenceProtocol(
                    scenario,
                    entrants,
                    length=args.length,
                    count=args.count,
                    seed=args.seed,
                    window=window,
                    policy_params=params,
                    starts=args.starts,
                )
                report = run_sequences(protocol, workers=args.workers)
                by = {r["policy"]: r["mean"] for r in report["rows"]}
                if variant == "rlscheduler":
                    cells = [_cell(by[p], v) for p, v in zip(policies, published, strict=False)]
                else:
                    cells = [f"{by[p]:.2f}" for p in policies]
                heuristics.append(f"| {label} | {backfill} | {variant} | " + " | ".join(cells) + " |")
                top = min(policies, key=by.__getitem__)
                best[variant] = f"{COLUMNS[policies.index(top)]} {by[top]:.2f}"
                if variant == "paper":
                    adaptive = by[ADAPTIVE[backfill]]
            mark = "below" if adaptive < published[-1] else "NOT below"
            learned.append(
                f"| {label} | {backfill} | {published[-1]:.2f} | {adaptive:.2f} ({mark}) | "
                f"{best['rlscheduler']} | {best['paper']} |"
            )
    print("\n".join(heuristics))
    print()
    print("\n".join(learned))
    print(f"\n({time.perf_counter() - started:.1f} s, {args.workers} worker(s), starts: {args.starts})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
