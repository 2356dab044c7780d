"""Speed of rollout policy improvement's data collection: compared decisions per second with every
branch played out in one compiled call (``msj_gym.env.branches.BranchPlayer``) against the Python
path of before (``restore``, ``step`` and ``play_out`` per branch), on the same decisions in the same
run (a ratio: this machine is shared and noisy). Both must give the same data, bit for bit.

    python benchmarks/bench_rollout.py [--decisions N] [--repeats R] [improve options ...]

By default: ``msj_gym.agents.improve``'s own settings on sf-fig2 at load 0.7 (base MSF, job actions,
3,000-arrival episodes), the setting of the measurement it is compared with.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

import numpy as np

from msj_gym.agents.improve import collect
from msj_gym.agents.improve import parse_args as improve_args


def _timed(args: argparse.Namespace) -> tuple[float, dict[str, np.ndarray]]:
    t0 = time.perf_counter()
    data = collect(args, 0)
    return time.perf_counter() - t0, data


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--decisions", type=int, default=1000)
    ap.add_argument("--repeats", type=int, default=3)
    known, rest = ap.parse_known_args(argv)
    base = ["--scenario", "sf-fig2", "--load", "0.7", "--decisions", str(known.decisions), "--out", "x.zip"]
    compiled = improve_args([*base, *rest])
    python = improve_args([*base, *rest, "--python-branches"])
    _timed(compiled)  # compile (or load from the cache) before timing
    ratios, fast, slow = [], [], []
    for r in range(known.repeats):
        t_fast, d_fast = _timed(compiled)
        t_slow, d_slow = _timed(python)
        for key in d_fast:
            np.testing.assert_array_equal(d_fast[key], d_slow[key], err_msg=key)
        fast.append(known.decisions / t_fast)
        slow.append(known.decisions / t_slow)
        ratios.append(t_slow / t_fast)
        print(
            f"repeat {r + 1}: compiled {fast[-1]:.0f} decisions/s, Python {slow[-1]:.0f} decisions/s, "
            f"ratio {ratios[-1]:.2f}x (same data)",
            flush=True,
        )
    print(
        f"median: compiled {statistics.median(fast):.0f} decisions/s ({1e3 / statistics.median(fast):.2f} ms "
        f"each), Python {statistics.median(slow):.0f} decisions/s ({1e3 / statistics.median(slow):.2f} ms "
        f"each), speed-up {statistics.median(ratios):.2f}x"
    )


if __name__ == "__main__":
    main(sys.argv[1:])
