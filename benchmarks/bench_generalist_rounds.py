"""Speed of the generalist's data collection in a later round, where the fitted network drives the
episodes, against the first round's, where the base heuristic drives them: compared decisions per
second on the same generated systems in the same run (a ratio: this machine is shared and noisy).

    python benchmarks/bench_generalist_rounds.py [--systems N] [--decisions N] [--repeats R]

The driving network is the shipped ``generalist``'s. One worker process, one torch thread, as each
worker of ``python -m msj_gym.agents.generalist`` runs.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from msj_gym.agents import generalist
from msj_gym.workloads.generator import sample_systems


def _rate(tasks: list[dict]) -> float:
    t0 = time.perf_counter()
    n = sum(len(generalist.collect_system(t)["cost"]) for t in tasks)
    return n / (time.perf_counter() - t0)


def main(argv: list[str] | None = None) -> None:
    from msj_gym.agents.checkpoint import load_model
    from msj_gym.experiments.agents import shipped_agents

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--systems", type=int, default=4)
    ap.add_argument("--decisions", type=int, default=2000, help="compared decisions per measurement")
    ap.add_argument("--repeats", type=int, default=3)
    known = ap.parse_args(argv)
    args = generalist.parse_args(
        ["--out", "x.zip", "--systems", str(known.systems), "--decisions", str(known.decisions)]
    )
    systems = sample_systems(args.seed, args.systems)
    model = load_model(shipped_agents()["generalist"])
    # the network as shipped (its gate too): its own keywords, as the training's next round would take them
    follow = {"policy_kwargs": dict(model.policy_kwargs), "weights": model.policy.state_dict()}
    best = np.zeros(len(systems), dtype=np.int64)  # First-Fit plays the branches out
    first = generalist._round_tasks(args, systems, best, 0, None)
    later = generalist._round_tasks(args, systems, best, 1, follow)
    _rate(first[:1])  # compile (or load from the cache) before timing
    _rate(later[:1])
    ratios = []
    for r in range(known.repeats):
        base, net = _rate(first), _rate(later)
        ratios.append(net / base)
        print(f"repeat {r + 1}: base-driven {base:.1f}/s, network-driven {net:.1f}/s, ratio {ratios[-1]:.2f}")
    print(f"network-driven over base-driven: median ratio {statistics.median(ratios):.2f}")


if __name__ == "__main__":
    main()
