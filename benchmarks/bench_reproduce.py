"""Wall time of ``msj-gym reproduce`` per figure, with 1 and with 2 workers, measured in the same run.

    python benchmarks/bench_reproduce.py                       # every figure at its own run length
    python benchmarks/bench_reproduce.py --figures 004-fig2,004-fig5 --arrivals 1000000
    python benchmarks/bench_reproduce.py --fresh               # each figure in its own empty folder

By default each worker count reproduces the figures in order into one fresh folder, as
``msj-gym reproduce all --out DIR`` does: a figure whose points an earlier figure already ran (004-appC
and 004-appD reuse 004-fig6's runs) only runs what is new, and its row says how many runs that was.
With ``--fresh`` every figure starts from an empty folder, which gives its stand-alone cost. Every
finished measurement is appended to ``--log`` (JSON lines) so an interrupted benchmark keeps what it
measured. The machine must be otherwise idle for the speed-up to mean anything: both cores are used
by the 2-worker run.
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import time
from pathlib import Path

from msj_gym.experiments.figures import SAMPLE_PATHS, all_figures, make_figure


def arrivals_of(name: str, arrivals: int | None) -> int:
    """Arrivals per run of a figure: ``arrivals`` if given, else the figure's own run length."""
    return arrivals or all_figures()[name].arrivals


def _count_runs(out: Path) -> int:
    """Finished runs in ``out`` (lines of its run logs)."""
    return sum(sum(1 for _ in p.open()) for p in out.glob("*.jsonl"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--figures", default="all", help="comma-separated figure ids, or all")
    ap.add_argument("--arrivals", type=int, default=None, help="arrivals per run (default: each figure's)")
    ap.add_argument("--workers", default="1,2", help="worker counts to compare (default 1,2)")
    ap.add_argument("--fresh", action="store_true", help="each figure in its own empty folder")
    ap.add_argument("--log", type=Path, default=Path("bench_reproduce.jsonl"))
    args = ap.parse_args()
    names = list(all_figures()) if args.figures == "all" else args.figures.split(",")
    counts = [int(w) for w in args.workers.split(",")]
    warm = Path(tempfile.mkdtemp(prefix="bench-warm-"))
    for name in names:  # compile every kernel (cached on disk) before timing
        make_figure(name, warm, arrivals=200, progress=False)
    shutil.rmtree(warm, ignore_errors=True)
    total = dict.fromkeys(counts, 0.0)
    runs_of: dict[str, int] = {}
    walls: dict[str, dict[int, float]] = {name: {} for name in names}
    for w in counts:
        shared = Path(tempfile.mkdtemp(prefix=f"bench-all-w{w}-"))
        for name in names:
            out = Path(tempfile.mkdtemp(prefix=f"bench-{name}-w{w}-")) if args.fresh else shared
            before = _count_runs(out)
            t0 = time.perf_counter()
            make_figure(name, out, arrivals=args.arrivals, progress=False, workers=w)
            wall = time.perf_counter() - t0
            walls[name][w] = wall
            total[w] += wall
            fig = all_figures()[name]
            new = _count_runs(out) - before
            runs_of[name] = len(fig.series) if name in SAMPLE_PATHS else new
            if args.fresh:
                shutil.rmtree(out, ignore_errors=True)
            with args.log.open("a") as fh:
                row = {
                    "figure": name,
                    "workers": w,
                    "arrivals": arrivals_of(name, args.arrivals),
                    "new_runs": runs_of[name],
                    "wall_s": wall,
                    "fresh": args.fresh,
                }
                fh.write(json.dumps(row) + "\n")
            print(f"  [{w} worker(s)] {name:<14} {runs_of[name]:>4} runs {wall:>8.1f} s", flush=True)
        shutil.rmtree(shared, ignore_errors=True)
    heads = " ".join(f"{f'{w} worker(s) s':>14}" for w in counts)
    print(f"\n{'figure':<14} {'runs':>5} {'arrivals/run':>12} {heads}")
    for name in names:
        cells = " ".join(f"{walls[name][w]:>14.1f}" for w in counts)
        print(f"{name:<14} {runs_of[name]:>5} {arrivals_of(name, args.arrivals):>12} {cells}")
    line = " ".join(f"{total[w]:>14.1f}" for w in counts)
    print(f"{'total':<14} {sum(runs_of.values()):>5} {'':>12} {line}")
    if len(counts) >= 2:
        print(f"speed-up {counts[0]} -> {counts[-1]} workers: {total[counts[0]] / total[counts[-1]]:.2f}x")


if __name__ == "__main__":
    main()
