"""A learned assignment agent for ``CompatAssign-v0``: the weights of a server score, fitted to the
environment by the cross-entropy method.

The agent chooses each arriving job's ``d`` servers one at a time, the allowed server of lowest score
``w . f`` first, ``f`` the server's features
(:data:`~msj_gym.baselines.balanced_fair.SCORE_FEATURES`: the jobs allowed on it, the expected time to
clear them, the expected time of the job it serves, its slowness). With ``w = (1, 0, 0, 0)`` it is the
least-loaded rule (``compat-least-loaded``). The search (Rubinstein's cross-entropy method, as Szita &
Lőrincz (2006) used it to learn a linear Tetris controller) draws a population of weight vectors from
a Gaussian, scores each by simulation on the training systems, and refits the Gaussian to the best
ones; every candidate of a generation sees the same job streams (common random numbers) and is scored
by its mean log ratio of mean response time to the least-loaded rule's on those streams. Weights are
compared after scaling to unit L1 norm (the choice does not change when ``w`` is scaled).

Each candidate's episodes run natively, as :class:`~msj_gym.baselines.balanced_fair.
CompatScoredAssignment` (the same choices as the agent through the env, run for run: tested), which is
what makes thousands of episodes affordable. The checkpoint is a ``.zip`` holding the weights and a
``.json`` beside it (the env, the weights, the command, the training time), found by name when shipped
like the SB3 agents; the run seeds of the search are drawn from ``--seed`` and never below 10**7, so the
held-out evaluation seeds (1000 ...) are never trained on.

    python -m msj_gym.agents.assign_search --scenario 003-random-3,003-random-2 --load 0.75,0.9 \\
        --out scored-assign.zip

Each generation is appended to ``<out>.log.jsonl`` as it ends; a rerun with the same settings resumes
after the last one written, and one with other settings is refused.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from ._cli import ArgumentParser, UsageError, check_count, check_load, run_script
from .cem import add_search_flags, check_search_flags

__all__ = ["ALGO", "load_checkpoint", "load_weights", "main", "search"]

#: The ``algo`` of the checkpoint's metadata (the SB3 agents name theirs ``maskable-ppo`` and so on).
ALGO = "scored-assignment"
POLICY = "msj_gym.baselines.balanced_fair:CompatScoredAssignment"
FIRST_SEED = 10**7  # the search's run seeds start here: far from the evaluation seeds


def _parser() -> ArgumentParser:
    ap = ArgumentParser(prog="python -m msj_gym.agents.assign_search", description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--scenario", default="003-random-3,003-random-2", help="compatibility systems (comma list)"
    )
    ap.add_argument("--load", default="0.75,0.9", help="one load per scenario, or one for all (comma list)")
    ap.add_argument("--arrivals", type=int, default=50_000, help="arrivals per episode (a tenth warm-up)")
    ap.add_argument(
        "--episodes", type=int, default=2, help="episodes per system and candidate, per generation"
    )
    add_search_flags(ap, population=16, elite=4, generations=12, init_std=0.5)
    return ap


def _systems(args: Any) -> list[tuple[str, float]]:
    from msj_gym.workloads.compat import COMPAT_SCENARIOS

    names = [s for s in args.scenario.split(",") if s]
    if not names:
        raise UsageError(f"--scenario {args.scenario!r}: expected at least one compatibility system")
    for n in names:
        if n not in COMPAT_SCENARIOS:
            raise UsageError(f"--scenario {n!r}: not a compatibility system ({', '.join(COMPAT_SCENARIOS)})")
    try:
        loads = [float(x) for x in args.load.split(",")]
    except ValueError:
        raise UsageError(f"--load {args.load!r}: expected numbers separated by commas") from None
    for x in loads:
        check_load("--load", x)
    if len(loads) == 1:
        loads *= len(names)
    if len(loads) != len(names):
        raise UsageError(f"--load {args.load!r}: expected one load, or one per scenario ({len(names)})")
    return list(zip(names, loads, strict=True))


def parse_args(argv: Sequence[str] | None) -> Any:
    args = _parser().parse_args(argv)
    args.systems = _systems(args)
    check_count("--arrivals", args.arrivals, 1000, 10**8)
    check_count("--episodes", args.episodes, 1, 1000)
    check_search_flags(args)
    from msj_gym.registry import policy_from_spec, supports
    from msj_gym.workloads.compat import build_compat_scenario

    for name, load in args.systems:  # refused here, before any generation, if the rule cannot run there
        try:
            reason = supports(policy_from_spec(POLICY, "policy"), build_compat_scenario(name, load=load))
        except ValueError as exc:
            reason = str(exc)
        if reason is not None:
            raise UsageError(f"--scenario {name!r} at load {load:g}: {reason}")
    return args


def _episode(task: tuple[str, float, int, int, tuple[float, ...] | None]) -> float:
    """Mean response time of one native episode: the scored rule with ``weights``, or the least-loaded
    rule (``None``)."""
    from msj_gym.pooled import PooledSimulator
    from msj_gym.registry import make_policy, policy_from_spec
    from msj_gym.workloads.compat import build_compat_scenario

    name, load, seed, arrivals, weights = task
    wl = build_compat_scenario(name, load=load)
    if weights is None:
        policy = make_policy("compat-least-loaded")
    else:
        policy = policy_from_spec(POLICY, "policy", **_as_params(weights))
    # a candidate that piles jobs up is unstable long before this, and its lists would slow the run
    cap = 50 * wl.num_servers
    sim = PooledSimulator(
        wl, policy, seed=seed, num_arrivals=arrivals, warmup=arrivals // 10, max_jobs_in_system=cap
    )
    res = sim.run()
    return float(res.mean_response_time) if res.stable else math.inf


def _as_params(weights: Sequence[float] | np.ndarray) -> dict[str, float]:
    from msj_gym.baselines.balanced_fair import SCORE_FEATURES

    return {f"w_{name}": float(w) for name, w in zip(SCORE_FEATURES, weights, strict=True)}


def _settings(args: Any) -> dict[str, Any]:
    keys = ("arrivals", "episodes", "population", "elite", "generations", "init_std", "seed")
    return {"systems": [list(s) for s in args.systems], **{k: getattr(args, k) for k in keys}}


def search(args: Any, log: Path) -> tuple[np.ndarray, list[dict[str, Any]]]:
    """Run (or resume) the cross-entropy search; returns the final mean weights (unit L1 norm) and the
    generations' records."""
    from msj_gym.baselines.balanced_fair import SCORE_FEATURES

    from .cem import search_from_args

    nf = len(SCORE_FEATURES)
    mean = np.zeros(nf)
    mean[0] = 1.0  # the least-loaded rule
    with ProcessPoolExecutor(args.workers) as pool:

        def sample(rng: np.random.Generator) -> list[int]:
            return [FIRST_SEED + int(s) for s in rng.integers(0, 2**31 - FIRST_SEED, size=args.episodes)]

        def score(seeds: list[int], cands: np.ndarray) -> tuple[np.ndarray, dict[str, Any]]:
            runs = [(n, x, s) for n, x in args.systems for s in seeds]
            tasks: list[tuple[str, float, int, int, tuple[float, ...] | None]]
            tasks = [(n, x, s, args.arrivals, None) for n, x, s in runs]
            tasks += [(n, x, s, args.arrivals, tuple(c)) for c in cands for n, x, s in runs]
            values = np.array(list(pool.map(_episode, tasks)))
            base = values[: len(runs)]
            mine = values[len(runs) :].reshape(len(cands), len(runs))
            return np.log(mine / base).mean(axis=1), {"seeds": seeds}  # inf: unstable somewhere

        return search_from_args(args, sample, score, mean, log, _settings(args))


def load_weights(path: Path) -> np.ndarray:
    """The weights a checkpoint ``.zip`` of this module holds (one line ``ValueError`` otherwise)."""
    from msj_gym.baselines.balanced_fair import SCORE_FEATURES

    from .cem import read_weights

    return read_weights(path, SCORE_FEATURES, ALGO)


def load_checkpoint(path: Path, meta: dict[str, Any]) -> dict[str, Any]:
    """The loader the registry knows this module's checkpoints by (``algo`` :data:`ALGO`): the agent
    through ``CompatAssign-v0`` with the scheduler ``fcfs``, and the native policy its episodes equal."""
    from functools import partial

    from msj_gym.baselines.balanced_fair import ScoredAssignmentAgent

    weights = load_weights(Path(path))
    if (
        meta.get("env_id") != "CompatAssign-v0"
        or meta.get("env_kwargs", {}).get("scheduler", "fcfs") != "fcfs"
    ):
        raise ValueError(f"a {ALGO} agent acts in CompatAssign-v0 with the scheduler 'fcfs'")
    return {
        "factory": partial(ScoredAssignmentAgent, weights=weights),
        "native": (POLICY, _as_params(weights)),
    }


def main(argv: Sequence[str] | None = None) -> None:
    from msj_gym.baselines.balanced_fair import SCORE_FEATURES

    from .cem import search_and_write

    args = parse_args(argv)
    meta = {
        "env_id": "CompatAssign-v0",
        "env_kwargs": {"scheduler": "fcfs"},
        "algo": ALGO,
        "systems": [{"scenario": n, "load": x} for n, x in args.systems],
    }
    search_and_write(args, argv, "msj_gym.agents.assign_search", SCORE_FEATURES, search, meta)


if __name__ == "__main__":
    raise SystemExit(run_script("python -m msj_gym.agents.assign_search", main))
