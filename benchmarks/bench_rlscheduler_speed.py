"""Speed on RLScheduler's protocol: msj_gym's simulation of one sequence of 1,024 jobs of a trace against
the reference simulator's, with the same heuristic on the same sequences, as a ratio measured in the
same run (the machine's load cancels out of it).

    python benchmarks/bench_rlscheduler_speed.py --reference PATH [--trace SDSC-SP2-1998-4.2-cln.swf.gz]
        [--heuristic sjf] [--backfill] [--count 10] [--length 1024] [--seed 1] [--starts rlscheduler]

The reference is the environment of RLScheduler's repository (Zhang et al. (2020),
github.com/DIR-LAB/deep-batch-scheduler): ``HPCSimPickJobs.HPCEnv``, run as its ``compare-pick-jobs.py``
runs a heuristic (``schedule_curr_sequence_reset`` with the heuristic's score function), on a sequence
placed where msj_gym's protocol places it (:func:`msj_gym.experiments.sequences.sequence_starts`, so
both schedule the same jobs). ``PATH`` is a checkout of that repository: it is not a dependency. Its
module imports TensorFlow 1 and gym for its training helpers only; where they are not installed, this
script puts stand-ins in their place (an empty module, and gymnasium) so that the simulator runs as
written. Each sequence's mean bounded slowdown is printed from both, as a check that they scheduled
the same thing (they agree where the policies agree; see docs/hpc.md for where they differ).

msj_gym's side is what ``msj-gym sequences`` runs per sequence: the sequence cut from the cleaned trace
(``swf:FILE?need=max&cleaning=rlscheduler``, loaded once), a fresh ``Simulator``, its run. Its first
run compiles the policy and is not timed.
"""

from __future__ import annotations

import argparse
import gzip
import importlib
import shutil
import statistics
import sys
import tempfile
import time
import types
from pathlib import Path

# heuristic -> (the reference's score method, msj_gym's policy without / with EASY backfilling)
HEURISTICS = {
    "fcfs": ("fcfs_score", "fcfs", "msj_gym.baselines.hpc:FCFSEasy"),
    "sjf": ("sjf_score", "sjf", "sjf-easy"),
    "wfp3": ("wfp_score", "wfp3", "wfp3-easy"),
    "unicep": ("uni_score", "unicep", "unicep-easy"),
    "f1": ("f1_score", "f1", "f1-easy"),
}


def _reference_env(checkout: Path, swf: Path, backfill: bool):
    """The reference's HPCEnv on the uncompressed log ``swf``, imported from ``checkout``."""
    if not (checkout / "HPCSimPickJobs.py").is_file():
        raise SystemExit(
            f"--reference {str(checkout)!r}: no HPCSimPickJobs.py there (a checkout of the repository)"
        )
    try:
        importlib.import_module("tensorflow")
    except ImportError:  # used by the module's training helpers only, never by the simulation
        sys.modules["tensorflow"] = types.ModuleType("tensorflow")
    try:
        importlib.import_module("gym")
    except ImportError:  # gym's successor has the spaces, Env and seeding the module uses
        import gymnasium

        sys.modules["gym"] = gymnasium
        sys.modules["gym.spaces"] = gymnasium.spaces
        sys.modules["gym.utils"] = gymnasium.utils
        sys.modules["gym.utils.seeding"] = gymnasium.utils.seeding
    sys.path.insert(0, str(checkout))
    module = importlib.import_module("HPCSimPickJobs")
    env = module.HPCEnv(backfil=backfill)
    env.my_init(workload_file=str(swf))
    env.np_random = _Draws(0)
    return env


class _Draws:
    """The one method of the legacy random state the reference calls (``randint``), from a Generator:
    its draw of a start is replaced by the protocol's anyway."""

    def __init__(self, seed: int) -> None:
        import numpy as np

        self._rng = np.random.default_rng(seed)

    def randint(self, low: int, high: int) -> int:
        return int(self._rng.integers(low, high))


def _reference_run(env, start: int, length: int, score: str) -> float:
    """The mean bounded slowdown of jobs ``start .. start + length - 1`` scheduled by the reference
    ``reset_for_test`` with the start it would have drawn replaced by ``start``, then the heuristic."""
    env.reset_for_test(length, start)
    env.start = env.start_idx_last_reset = start
    env.num_job_in_batch = length
    env.last_job_in_batch = start + length
    env.current_timestamp = env.loads[start].submit_time
    env.job_queue = [env.loads[start]]
    env.next_arriving_job_idx = start + 1
    logs = env.schedule_curr_sequence_reset(getattr(env, score))
    return float(sum(logs.values()))  # its scores are already divided by the sequence length


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "--reference", required=True, type=Path, help="a checkout of DIR-LAB/deep-batch-scheduler"
    )
    ap.add_argument("--trace", default="SDSC-SP2-1998-4.2-cln.swf.gz", help="an SWF log (path or name)")
    ap.add_argument("--heuristic", choices=sorted(HEURISTICS), default="sjf")
    ap.add_argument("--backfill", action="store_true", help="with EASY backfilling (the reference's backfil)")
    ap.add_argument("--count", type=int, default=10, help="sequences")
    ap.add_argument("--length", type=int, default=1024, help="jobs per sequence")
    ap.add_argument("--seed", type=int, default=1, help="the sequences' seed")
    ap.add_argument("--window", type=int, default=10_000, help="starts drawn from the first W jobs")
    ap.add_argument(
        "--starts", choices=("generator", "rlscheduler"), default="generator", help="how the starts are drawn"
    )
    args = ap.parse_args(argv)

    from msj_gym.experiments.sequences import sequence_metric, sequence_starts, trace_replay
    from msj_gym.workloads.swf import find_trace

    path = find_trace(args.trace)
    if not path.is_file():
        raise SystemExit(f"--trace {args.trace!r}: no such file (here, in $MSJ_GYM_TRACE_DIR or ../shared)")
    score, plain, easy = HEURISTICS[args.heuristic]
    policy = easy if args.backfill else plain
    params = {} if args.heuristic == "fcfs" else {"variant": "rlscheduler"}
    scenario = f"swf:{path}?need=max&cleaning=rlscheduler"
    trace = trace_replay(scenario)
    starts = sequence_starts(
        int(trace.arrival_time.size), args.length, args.count, args.seed, args.window, starts=args.starts
    )

    with tempfile.TemporaryDirectory() as tmp:
        swf = Path(tmp) / path.name.removesuffix(".gz")
        with (
            gzip.open(path, "rb") if path.suffix == ".gz" else open(path, "rb") as src,
            open(swf, "wb") as dst,
        ):
            shutil.copyfileobj(src, dst)
        env = _reference_env(args.reference.resolve(), swf, args.backfill)
        sequence_metric(scenario, policy, int(starts[0]), args.length, params=params)  # compiles: not timed
        ours, theirs = [], []
        head = ("start", "msj_gym bsld", "reference bsld", "msj_gym s", "reference s")
        print("  ".join(f"{h:>{w}}" for h, w in zip(head, (7, 12, 14, 9, 11), strict=True)))
        for start in map(int, starts):
            t0 = time.perf_counter()
            mine = sequence_metric(scenario, policy, start, args.length, params=params)
            t1 = time.perf_counter()
            ref = _reference_run(env, start, args.length, score)
            t2 = time.perf_counter()
            ours.append(t1 - t0)
            theirs.append(t2 - t1)
            print(f"{start:>7}  {mine:>12.2f}  {ref:>14.2f}  {t1 - t0:>9.4f}  {t2 - t1:>11.4f}")
    a, b = statistics.median(ours), statistics.median(theirs)
    what = f"{args.heuristic}{' + EASY' if args.backfill else ''}"
    print(
        f"\n{what}, {args.count} sequences of {args.length} jobs of {path.name}: median per sequence "
        f"msj_gym {1000 * a:.2f} ms, reference {1000 * b:.2f} ms; reference / msj_gym = {b / a:.1f}x"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
