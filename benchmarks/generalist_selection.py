"""Which base a generalist follows, on generated systems that neither trained nor selected anything
(``docs/generalist.md``): its selector head's pick against its simulated
pick (``msj_gym.agents.system_model.SimulatedSelector``, each base simulated on the system the agent's
observation describes), each judged by the bases' mean response times on the real system:

    python benchmarks/generalist_selection.py --agent generalist [--systems 400] [--workers 2]

Per system, each base runs ``--truth-seeds`` times for ``--truth-arrivals`` arrivals on the system
itself (seeds 7, 8, ...: apart from the simulated selector's, which runs on the rebuilt system); a
run flagged unstable makes the base unstable there. A pick's excess is its base's mean response time
over the best base's, minus 1, capped at 10 (an unstable pick counts 10; a system where every base is
unstable counts 0 for every pick), as the selector's training target counts it. The table gives each
way of picking its mean excess, how often it picks a base that is unstable where another is stable,
and how often it picks each base.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

import numpy as np

from msj_gym.arguments import ArgumentParser

TRUTH_SEEDS_FROM = 7


def system_row(task: dict[str, Any]) -> dict[str, Any]:
    """One system: the agent's first observation there and each base's mean response time on it (the
    truth), as the generalist's training tables them, and the simulated selector's pick (a worker's
    unit of work)."""
    from msj_gym.agents.generalist import base_table
    from msj_gym.agents.system_model import SimulatedSelector

    row = base_table(task)
    # the base pick alone: a rehearsal settles the network's trust, and a fallback sets the network
    # aside, neither of which this script judges
    selector = SimulatedSelector(**{**task["selector"], "rehearse": 0, "env_kwargs": None, "fallbacks": ()})
    pick = int(selector.choose(row["obs"][None], task["features"])[0])
    return {"index": task["index"], "obs": row["obs"], "truth": row["means"], "simulated": pick}


def main(argv: list[str] | None = None) -> int:
    ap = ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--agent", default="generalist", help="a shipped generalist or a checkpoint .zip")
    ap.add_argument("--systems", type=int, default=400, help="generated systems")
    ap.add_argument("--seed", type=int, default=60_000, help="the systems' seed (60,000: unused elsewhere)")
    ap.add_argument("--truth-seeds", type=int, default=3, help="runs per base on each system")
    ap.add_argument("--truth-arrivals", type=int, default=20_000, help="arrivals per such run")
    ap.add_argument("--workers", type=int, default=1)
    args = ap.parse_args(argv)
    for name in ("systems", "truth_seeds", "truth_arrivals", "workers"):
        if getattr(args, name) < 1:
            ap.error(f"--{name.replace('_', '-')}: expected a positive integer, got {getattr(args, name)}")
    if args.seed < 0:
        ap.error(f"--seed: expected a non-negative integer, got {args.seed}")
    from msj_gym.agents.generalist import excess_of
    from msj_gym.experiments.agents import load_agent

    spec = load_agent(args.agent)  # a refusal names the agent
    net = getattr(getattr(spec.model, "policy", None), "mlp_extractor", None)
    selector = getattr(net, "simulated", None)
    if selector is None:
        ap.error(
            f"--agent: {args.agent!r} has no simulated selection (derive one with python -m "
            "msj_gym.agents.generalist --simulate-selection CHECKPOINT)"
        )
    import torch

    from msj_gym.experiments.runner import map_unordered
    from msj_gym.workloads.generator import sample_systems

    started = time.perf_counter()
    systems = sample_systems(args.seed, args.systems)
    seeds = list(range(TRUTH_SEEDS_FROM, TRUTH_SEEDS_FROM + args.truth_seeds))
    tasks = [
        {
            "index": i,
            "system": w,
            "seeds": seeds,
            "arrivals": args.truth_arrivals,
            "env_kwargs": spec.env_kwargs,
            "bases": selector.bases,
            "selector": selector.config(),
            "features": net.features,
        }
        for i, w in enumerate(systems)
    ]
    rows: list[dict[str, Any]] = [{}] * len(tasks)
    for n, (task, row) in enumerate(map_unordered(system_row, tasks, "local", args.workers), 1):
        rows[task["index"]] = row
        print(f"\r{n}/{len(tasks)} systems", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)
    obs = np.array([r["obs"] for r in rows], dtype=np.float32)
    truth = np.array([r["truth"] for r in rows])
    with torch.no_grad():
        head = net.selector_logits(torch.as_tensor(obs)).argmax(dim=1).numpy()
    bases = selector.bases
    picks = {
        "selector head": head,
        "simulated": np.array([r["simulated"] for r in rows]),
        "oracle (the truth's best)": np.argmin(excess_of(truth), axis=1),
        **{f"always {b}": np.full(len(rows), j) for j, b in enumerate(bases)},
    }
    excess = excess_of(truth)
    at = np.arange(len(rows))
    some_stable = np.isfinite(truth).any(axis=1)
    print(f"{args.agent} on {len(rows)} generated systems of seed {args.seed}:")
    print(f"| pick | mean excess | unstable picks | picks ({', '.join(bases)}) |")
    print("|---|---:|---:|---|")
    for label, pick in picks.items():
        unstable = int(np.sum(~np.isfinite(truth[at, pick]) & some_stable))
        counts = ", ".join(str(int(c)) for c in np.bincount(pick, minlength=len(bases)))
        print(f"| {label} | {excess[at, pick].mean():.4f} | {unstable} | {counts} |")
    print(f"{time.perf_counter() - started:.0f} s")
    return 0


if __name__ == "__main__":
    from msj_gym.agents._cli import run_script

    # a refusal is one line (exit 2), before any run; a full disk or an interruption is one line too
    raise SystemExit(run_script("generalist_selection.py", main))
