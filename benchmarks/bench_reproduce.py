"""Wall time of ``msj-gym reproduce`` per figure, with 1 and with 2 workers, measured in the same run.

    python benchmarks/bench_reproduce.py                       # every figure at its own run length
    python benchmarks/bench_reproduce.py --figures 004-fig2,004-fig5 --arrivals 1000000

Each figure runs from scratch (a fresh output folder) once with ``--workers 1`` and once with
``--workers 2``; the speed-up is their ratio. Every finished measurement is appended to ``--log``
(JSON lines) so an interrupted benchmark keeps what it measured. The machine must be otherwise idle
for the speed-up to mean anything: both cores are used by the 2-worker run.
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import time
from pathlib import Path

from msj_gym.experiments.figures import SAMPLE_PATHS, all_figures, make_figure


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--figures", default="all", help="comma-separated figure ids, or all")
    ap.add_argument("--arrivals", type=int, default=None, help="arrivals per run (default: each figure's)")
    ap.add_argument("--workers", default="1,2", help="worker counts to compare (default 1,2)")
    ap.add_argument("--log", type=Path, default=Path("bench_reproduce.jsonl"))
    args = ap.parse_args()
    names = list(all_figures()) if args.figures == "all" else args.figures.split(",")
    counts = [int(w) for w in args.workers.split(",")]
    make_figure("004-fig2", Path(tempfile.mkdtemp()), arrivals=1000, progress=False)  # compile before timing
    total = dict.fromkeys(counts, 0.0)
    heads = " ".join(f"{f'{w} worker(s) s':>14}" for w in counts)
    print(f"{'figure':<10} {'runs':>5} {'arrivals/run':>12} {heads}")
    for name in names:
        fig = all_figures()[name]
        if name in SAMPLE_PATHS:
            runs, arrivals = len(fig.series), args.arrivals or fig.arrivals
        else:
            arrivals = args.arrivals or fig.arrivals
            runs = len(fig.points(arrivals, 1))
        walls = {}
        for w in counts:
            out = Path(tempfile.mkdtemp(prefix=f"bench-{name}-w{w}-"))
            t0 = time.perf_counter()
            make_figure(name, out, arrivals=args.arrivals, progress=False, workers=w)
            walls[w] = time.perf_counter() - t0
            total[w] += walls[w]
            shutil.rmtree(out, ignore_errors=True)
            with args.log.open("a") as fh:
                row = {"figure": name, "workers": w, "arrivals": arrivals, "wall_s": walls[w]}
                fh.write(json.dumps(row) + "\n")
        cells = " ".join(f"{walls[w]:>14.1f}" for w in counts)
        print(f"{name:<10} {runs:>5} {arrivals:>12} {cells}", flush=True)
    line = " ".join(f"{total[w]:>14.1f}" for w in counts)
    print(f"{'total':<10} {'':>5} {'':>12} {line}")
    if len(counts) >= 2:
        print(f"speed-up {counts[0]} -> {counts[-1]} workers: {total[counts[0]] / total[counts[-1]]:.2f}x")


if __name__ == "__main__":
    main()
