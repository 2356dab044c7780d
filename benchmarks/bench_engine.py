"""Simulator speed, reported as ratios measured in the same run (the machines are shared and noisy).

    python benchmarks/bench_engine.py [--arrivals 1000000] [--repeats 5] [--k 1024] [--load 0.9]

1. The compiled FCFS reference of ../shared/bench (a minimal C loop on the bs-fig1 workload) against
   msj_gym's FCFS on the same workload: target ratio <= 3.
2. ServerFilling, ServerFilling-SRPT and First-Fit against msj_gym's own FCFS: target ratio <= 5.

Times are CPU seconds (``time.process_time``) of building the simulator, generating the arrivals,
running and summarising, after one untimed warm-up run per policy (compilation is cached on disk and
excluded). Each figure is the median of ``--repeats`` runs, reference and project runs interleaved.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

from msj_gym import Simulator, load_scenario
from msj_gym.baselines import make_policy

HERE = Path(__file__).resolve().parent
REFERENCE = HERE.parent.parent / "shared" / "bench" / "run_c_reference.sh"
POLICIES = ("fcfs", "server-filling", "server-filling-srpt", "first-fit")


def run_reference(k: int, load: float, arrivals: int, seed: int) -> dict:
    out = subprocess.run(
        ["bash", str(REFERENCE), str(k), str(load), str(arrivals), str(seed)],
        check=True,
        capture_output=True,
        text=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def run_project(policy_id: str, k: int, load: float, arrivals: int, seed: int) -> tuple[float, object]:
    workload = load_scenario("bs-fig1").build(num_servers=k, load=load)
    t0 = time.process_time()
    result = Simulator(workload, make_policy(policy_id), seed=seed, num_arrivals=arrivals, warmup=0).run()
    return time.process_time() - t0, result


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--arrivals", type=int, default=1_000_000)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--k", type=int, default=1024)
    ap.add_argument("--load", type=float, default=0.9)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    if not REFERENCE.exists():
        print(f"reference not found at {REFERENCE}", file=sys.stderr)
        return 2
    for pid in POLICIES:  # warm-up: load (or compile) each specialised loop once
        run_project(pid, args.k, args.load, 20_000, 99)
    times: dict[str, list[float]] = {"c-reference": [], **{p: [] for p in POLICIES}}
    means: dict[str, float] = {}
    for rep in range(args.repeats):
        ref = run_reference(args.k, args.load, args.arrivals, rep + 1)
        times["c-reference"].append(ref["cpu_seconds"])
        means["c-reference"] = ref["mean_response_time"]
        for pid in POLICIES:
            cpu, result = run_project(pid, args.k, args.load, args.arrivals, rep + 1)
            times[pid].append(cpu)
            means[pid] = result.mean_response_time
            events = result.events
    med = {name: statistics.median(v) for name, v in times.items()}
    report = {
        "workload": f"bs-fig1 k={args.k} load={args.load} arrivals={args.arrivals}",
        "median_cpu_seconds": med,
        "fcfs_over_c_reference": med["fcfs"] / med["c-reference"],
        "over_fcfs": {p: med[p] / med["fcfs"] for p in POLICIES if p != "fcfs"},
        "fcfs_events_per_second": events / med["fcfs"],
        "mean_response_time": means,
    }
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    print(report["workload"], f"(median of {args.repeats}, CPU seconds)")
    print(f"  {'c-reference':<22} {med['c-reference']:8.3f} s   mean response {means['c-reference']:.4g}")
    for pid in POLICIES:
        ratio = med[pid] / med["c-reference"] if pid == "fcfs" else med[pid] / med["fcfs"]
        against = "x C reference (target <= 3)" if pid == "fcfs" else "x msj_gym FCFS (target <= 5)"
        print(f"  {pid:<22} {med[pid]:8.3f} s   {ratio:5.2f} {against}   mean response {means[pid]:.4g}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
