"""The heuristic columns of RLScheduler's table "Results of Scheduling Towards average bounded slowdown"
(its repository's README; Zhang et al. (2020)), reproduced with msj_gym's sequence protocol, beside the
published values:

    python benchmarks/rlscheduler_table.py [--workers 2] [--markdown]

Protocol of the published table (its ``make_table_script.py``): 10 sequences of 1024 jobs, seed 1, the
starts drawn from the whole of Lublin-1 (``lublin_256``) and from the first 10,000 jobs of SDSC-SP2 and
HPC2N; each sequence from an empty machine, scored by its mean bounded slowdown (tau = 10 s). The logs
are cleaned as RLScheduler's loader cleans them (``swf:FILE?need=max&cleaning=rlscheduler``). Two
variants per heuristic: ``paper`` (the scores as the papers define them, re-ranked at every decision,
EASY along the score order) and ``rlscheduler`` (as its code decides: see ``msj_gym/baselines/hpc.py``).
The traces are read from ../shared/data/traces (or ``$MSJ_GYM_TRACE_DIR``).
"""

from __future__ import annotations

import argparse
import time

from msj_gym.experiments.sequences import SequenceProtocol, run_sequences

# (label, trace file, window of the starts, published FCFS, WFP3, UNI, SJF, F1 without and with backfilling)
PUBLISHED = {
    "Lublin-1": (
        "lublin_256.swf.gz",
        None,
        (7273.77, 19753.53, 22274.74, 277.35, 258.37),
        (235.82, 133.87, 307.23, 73.31, 75.07),
    ),
    "SDSC-SP2": (
        "SDSC-SP2-1998-4.2-cln.swf.gz",
        10_000,
        (1727.54, 3000.88, 1848.45, 2680.55, 1232.06),
        (1595.12, 1083.12, 548.01, 2167.84, 1098.22),
    ),
    "HPC2N": (
        "HPC2N-2002-2.2-cln.swf.gz",
        10_000,
        (297.18, 426.99, 609.77, 157.71, 118.01),
        (127.38, 97.39, 175.12, 122.04, 71.95),
    ),
}
COLUMNS = ("FCFS", "WFP3", "UNI", "SJF", "F1")
PLAIN = ("fcfs", "wfp3", "unicep", "sjf", "f1")
EASY = ("msj_gym.baselines.hpc:FCFSEasy", "wfp3-easy", "unicep-easy", "sjf-easy", "f1-easy")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--count", type=int, default=10)
    ap.add_argument("--length", type=int, default=1024)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args(argv)
    started = time.perf_counter()
    lines = ["| trace | backfilling | values | " + " | ".join(COLUMNS) + " |", "|---|---|---|" + "---|" * 5]
    for label, (trace, window, plain, easy) in PUBLISHED.items():
        scenario = f"swf:{trace}?need=max&cleaning=rlscheduler"
        for backfill, policies, published in (("no", PLAIN, plain), ("EASY", EASY, easy)):
            lines.append(
                f"| {label} | {backfill} | published | " + " | ".join(f"{v:.2f}" for v in published) + " |"
            )
            for variant in ("rlscheduler", "paper"):
                params = {p: {"variant": variant} for p in policies if p != "fcfs"}
                protocol = SequenceProtocol(
                    scenario,
                    policies,
                    length=args.length,
                    count=args.count,
                    seed=args.seed,
                    window=window,
                    policy_params=params,
                )
                report = run_sequences(protocol, workers=args.workers)
                by = {r["policy"]: r for r in report["rows"]}
                cells = [f"{by[p]['mean']:.2f} ± {by[p]['ci95']:.0f}" for p in policies]
                lines.append(f"| {label} | {backfill} | msj_gym, {variant} | " + " | ".join(cells) + " |")
    print("\n".join(lines))
    print(f"\n({time.perf_counter() - started:.1f} s, {args.workers} worker(s))")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
