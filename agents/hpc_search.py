"""A learned scheduler for HPC traces: the weights of a job score, fitted by the cross-entropy method on
sequences of recorded jobs, scheduled with EASY backfilling on the users' requested times.

The agent ranks the waiting jobs by ``w . f``, smallest first, ``f`` a job's features
(:data:`~msj_gym.baselines.hpc.SCORE_FEATURES`: its requested time, processors and wait so far, in
logs, and their interactions), and backfills along that order as the field's heuristics do
(:class:`~msj_gym.baselines.hpc.ScoredEasy`). It never reads a job's run time: the score and the
reservations use the requested times. The search (:mod:`msj_gym.agents.cem`) starts from WFP3's order
(a heuristic's warm start) and scores each candidate, per generation, on the same freshly drawn
training sequences of every trace (common random numbers): the mean over the traces of the log ratio
of its mean bounded slowdown over the sequences to ``--reference``'s on the same sequences.

**Held out by position.** The training sequences start at job ``--skip`` or later (default 10,000),
and RLScheduler's protocol (``msj-gym sequences --window 10000``) draws its sequences from the first
10,000 jobs of a trace: the jobs it is evaluated on are never trained on.

    python -m msj_gym.agents.hpc_search --out scored-hpc.zip \\
        --scenario "swf:SDSC-SP2-1998-4.2-cln.swf.gz?need=max&cleaning=rlscheduler" \\
        --scenario "swf:HPC2N-2002-2.2-cln.swf.gz?need=max&cleaning=rlscheduler"

Each generation is appended to ``<out>.log.jsonl`` as it ends; a rerun with the same settings resumes
after the last one written, and one with other settings is refused. The checkpoint is a ``.zip``
holding the weights and a ``.json`` beside it (the env, the weights, the command, the training time),
found by name when shipped like the other agents.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from ._cli import ArgumentParser, UsageError, check_count, run_script
from .cem import add_search_flags, check_search_flags

__all__ = ["ALGO", "DEFAULT_SCENARIOS", "load_checkpoint", "load_weights", "main", "search"]

#: The ``algo`` of the checkpoint's metadata.
ALGO = "scored-hpc"
POLICY = "msj_gym.baselines.hpc:ScoredEasy"
DEFAULT_SCENARIOS = (
    "swf:SDSC-SP2-1998-4.2-cln.swf.gz?need=max&cleaning=rlscheduler",
    "swf:HPC2N-2002-2.2-cln.swf.gz?need=max&cleaning=rlscheduler",
)


def _parser() -> ArgumentParser:
    ap = ArgumentParser(prog="python -m msj_gym.agents.hpc_search", description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--scenario",
        action="append",
        help="a trace to train on (swf:FILE...; repeatable; default: SDSC-SP2 and HPC2N as the protocol "
        "cleans them)",
    )
    ap.add_argument("--skip", type=int, default=10_000, help="training sequences start at this job or later")
    ap.add_argument("--length", type=int, default=1024, help="jobs per sequence")
    ap.add_argument("--sequences", type=int, default=16, help="training sequences per trace and generation")
    ap.add_argument(
        "--gap-scale",
        default="1,1",
        help="LO,HI: each training sequence's inter-arrival gaps times a factor uniform in [LO, HI] "
        "(below 1: more congested than recorded)",
    )
    ap.add_argument("--reference", default="wfp3-easy", help="the policy the candidates are scored against")
    add_search_flags(ap, population=24, elite=6, generations=30, init_std=0.3)
    return ap


@functools.cache
def _trace(scenario: str) -> Any:
    """The scenario's replay, built once per process."""
    from msj_gym.workloads.scenarios import load_scenario

    return load_scenario(scenario).build()


def parse_args(argv: Sequence[str] | None) -> Any:
    from msj_gym.registry import policy_from_spec, supports
    from msj_gym.workloads.trace import replay_length

    args = _parser().parse_args(argv)
    args.scenario = list(args.scenario or DEFAULT_SCENARIOS)
    check_count("--length", args.length, 2, 10**6)
    check_count("--skip", args.skip, 0, 10**9)
    check_count("--sequences", args.sequences, 1, 10_000)
    check_search_flags(args)
    try:
        lo, hi = (float(x) for x in args.gap_scale.split(","))
    except ValueError:
        raise UsageError(f"--gap-scale {args.gap_scale!r}: expected two numbers LO,HI") from None
    if not (math.isfinite(lo) and math.isfinite(hi) and 0 < lo <= hi <= 100):
        raise UsageError(f"--gap-scale {args.gap_scale!r}: expected 0 < LO <= HI <= 100")
    args.gap_scale = [lo, hi]
    if len(set(args.scenario)) != len(args.scenario):
        raise UsageError(f"--scenario: named twice: {', '.join(args.scenario)}")
    try:
        reference = policy_from_spec(args.reference, "--reference")
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    # refused here, before any generation: a scenario that is not a trace, too short, or one the rule or
    # the reference is not defined on (no requested times)
    for name in args.scenario:
        try:
            wl = _trace(name)
        except (ValueError, OSError) as exc:
            raise UsageError(f"--scenario {name!r}: {' '.join(str(exc).split())}") from None
        jobs = replay_length(wl)
        if jobs is None:
            raise UsageError(f"--scenario {name!r}: not a trace (swf:FILE): the search samples its sequences")
        if jobs - args.length <= args.skip:
            raise UsageError(
                f"--skip {args.skip}: {name!r} has {jobs} jobs, no room after it for a sequence of "
                f"{args.length}"
            )
        rule = policy_from_spec(POLICY, "policy")
        for what, policy in (("the scored rule", rule), ("--reference", reference)):
            reason = supports(policy, wl)
            if reason is not None:
                raise UsageError(f"--scenario {name!r}: {what} is not defined on it: {reason}")
    return args


# one run of the search: (scenario, start, gap scale, length, reference, weights or None)
Task = tuple[str, int, float, int, str, tuple[float, ...] | None]


def _run(task: Task) -> float:
    """The mean bounded slowdown of one sequence (jobs ``start .. start + length - 1``, their gaps times
    ``scale``) under the scored rule with ``weights``, or under ``reference`` (``weights`` None)."""
    from msj_gym.core.simulator import Simulator
    from msj_gym.registry import policy_from_spec

    scenario, start, scale, length, reference, weights = task
    wl = _trace(scenario).jobs(start, length)
    if scale != 1.0:
        wl = wl.with_time_scale(scale)
    if weights is None:
        policy = policy_from_spec(reference, "--reference")
    else:
        policy = policy_from_spec(POLICY, "policy", **_as_params(weights))
    return float(Simulator(wl, policy, num_arrivals=length, warmup=0).run().mean_bounded_slowdown)


def _as_params(weights: Sequence[float] | np.ndarray) -> dict[str, float]:
    from msj_gym.baselines.hpc import SCORE_FEATURES

    return {f"w_{name}": float(w) for name, w in zip(SCORE_FEATURES, weights, strict=True)}


def _settings(args: Any) -> dict[str, Any]:
    keys: tuple[str, ...] = ("skip", "length", "sequences", "gap_scale", "reference", "population")
    keys += ("elite", "generations", "init_std")
    return {"scenarios": list(args.scenario), **{k: getattr(args, k) for k in keys}, "seed": args.seed}


def search(args: Any, log: Path) -> tuple[np.ndarray, list[dict[str, Any]]]:
    """Run (or resume) the cross-entropy search; returns the final mean weights (unit L1 norm) and the
    generations' records."""
    from msj_gym.baselines.hpc import SCORE_FEATURES, WFP3_LOG_WEIGHTS
    from msj_gym.workloads.trace import replay_length

    from .cem import search_from_args

    mean = np.array([WFP3_LOG_WEIGHTS[name] for name in SCORE_FEATURES])
    ends = [int(replay_length(_trace(name)) or 0) - args.length for name in args.scenario]
    with ProcessPoolExecutor(args.workers) as pool:

        def sample(rng: np.random.Generator) -> list[list[tuple[int, float]]]:
            lo, hi = args.gap_scale
            out = []
            for end in ends:
                starts = rng.integers(args.skip, end, size=args.sequences).tolist()
                # one factor for all (drawing none): the recorded gaps by default
                scales = [lo] * args.sequences if lo == hi else rng.uniform(lo, hi, args.sequences).tolist()
                out.append(list(zip(starts, scales, strict=True)))
            return out

        def score(
            drawn: list[list[tuple[int, float]]], cands: np.ndarray
        ) -> tuple[np.ndarray, dict[str, Any]]:
            runs = [(name, s, x) for name, mine in zip(args.scenario, drawn, strict=True) for s, x in mine]
            tasks: list[Task] = [(n, s, x, args.length, args.reference, None) for n, s, x in runs]
            tasks += [(n, s, x, args.length, args.reference, tuple(c)) for c in cands for n, s, x in runs]
            values = np.array(list(pool.map(_run, tasks, chunksize=8)))
            shape = (len(args.scenario), args.sequences)
            base = values[: len(runs)].reshape(shape).mean(axis=1)
            mine = values[len(runs) :].reshape(len(cands), *shape).mean(axis=2)
            return np.log(mine / base).mean(axis=1), {"sequences": drawn}

        return search_from_args(args, sample, score, mean, log, _settings(args))


def load_weights(path: Path) -> np.ndarray:
    """The weights a checkpoint ``.zip`` of this module holds (one line ``ValueError`` otherwise)."""
    from msj_gym.baselines.hpc import SCORE_FEATURES

    from .cem import read_weights

    return read_weights(path, SCORE_FEATURES, ALGO)


def _agent(params: dict[str, float], env: Any) -> Any:
    from msj_gym.env.agents import PolicyAgent
    from msj_gym.registry import policy_from_spec

    return PolicyAgent(policy_from_spec(POLICY, "policy", **params), env)


def load_checkpoint(path: Path, meta: dict[str, Any]) -> dict[str, Any]:
    """The loader the registry knows this module's checkpoints by (``algo`` :data:`ALGO`): the scored
    rule acting through ``MSJ-v0`` (one start per step), and the native policy its episodes equal."""
    weights = load_weights(Path(path))
    if meta.get("env_id") != "MSJ-v0":
        raise ValueError(f"a {ALGO} agent acts in MSJ-v0, not in {meta.get('env_id')!r}")
    params = _as_params(weights)
    return {"factory": functools.partial(_agent, params), "native": (POLICY, params)}


def main(argv: Sequence[str] | None = None) -> None:
    from msj_gym.baselines.hpc import SCORE_FEATURES

    from .cem import search_and_write

    args = parse_args(argv)
    meta = {
        "env_id": "MSJ-v0",
        # room for every job of a sequence in the action window: the rule may start any waiting job
        "env_kwargs": {"queue_window": args.length},
        "algo": ALGO,
        "scenarios": list(args.scenario),
        "held_out": f"jobs before {args.skip} of each trace (the protocol's --window {args.skip})",
    }
    search_and_write(args, argv, "msj_gym.agents.hpc_search", SCORE_FEATURES, search, meta)


if __name__ == "__main__":
    raise SystemExit(run_script("python -m msj_gym.agents.hpc_search", main))
