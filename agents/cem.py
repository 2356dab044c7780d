"""The cross-entropy method over the weights of a scored rule, resumable: the search that the learned
scored agents share (:mod:`msj_gym.agents.assign_search`, :mod:`msj_gym.agents.hpc_search`).

Rubinstein's cross-entropy method, as Szita & Lőrincz (2006) used it to learn a linear Tetris
controller: each generation draws a population of weight vectors from a diagonal Gaussian, scores each
(smaller is better), and refits the Gaussian to the best ones (the elite). Every weight vector is
scaled to unit L1 norm, since the rules rank by ``w . f`` and a positive factor changes no choice; the
standard deviations never fall below a floor, so that the search never freezes in one dimension.

Each generation is appended to a JSON-lines log as it ends, after a first line with the search's
settings; a rerun with the same settings resumes after the last generation written (its number of
generations may grow), and one with other settings is refused.
"""

from __future__ import annotations

import json
import shlex
import sys
import time
import zipfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

__all__ = [
    "STD_FLOOR",
    "add_search_flags",
    "check_search_flags",
    "cross_entropy",
    "read_log",
    "read_weights",
    "search_and_write",
    "search_from_args",
    "unit",
]

STD_FLOOR = 1e-3


def add_search_flags(ap: Any, *, population: int, elite: int, generations: int, init_std: float) -> None:
    """The flags every scored-rule search takes (the method's sizes, workers, seed, output), with the
    script's own defaults, after its own flags."""
    ap.add_argument("--population", type=int, default=population, help="candidates per generation")
    ap.add_argument("--elite", type=int, default=elite, help="candidates the Gaussian is refitted to")
    ap.add_argument(
        "--generations", type=int, default=generations, help="rounds of sampling and refitting the Gaussian"
    )
    ap.add_argument(
        "--init-std", type=float, default=init_std, help="initial standard deviation of every weight"
    )
    ap.add_argument("--workers", type=int, default=1, help="worker processes scoring the candidates")
    ap.add_argument(
        "--seed", type=int, default=0, help="draws each generation's candidates and what they are scored on"
    )
    ap.add_argument("--out", type=Path, required=True, help="checkpoint to write (.zip; its .json beside it)")
    ap.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")


def check_search_flags(args: Any) -> None:
    """One-line refusals of the flags of :func:`add_search_flags`, before any generation."""
    from ._cli import check_count, check_number, check_output

    check_count("--population", args.population, 2, 10_000)
    check_count("--elite", args.elite, 1, args.population - 1)
    check_count("--generations", args.generations, 1, 10_000)
    check_count("--workers", args.workers, 1, 256)
    check_count("--seed", args.seed, 0, 2**31 - 1)
    check_number("--init-std", args.init_std, 0.0, 100.0, open_lo=True)
    check_output("--out", args.out, ".zip")


def unit(w: np.ndarray) -> np.ndarray:
    """``w`` scaled to unit L1 norm (a zero vector as it is)."""
    norm = float(np.abs(w).sum())
    return w / norm if norm > 0 else w


def read_log(path: Path, settings: dict[str, Any]) -> list[dict[str, Any]]:
    """The generations a previous search with these ``settings`` wrote to ``path`` (none if it does not
    exist). A log of other settings (but the number of generations) is refused in one line."""
    if not path.exists():
        return []
    lines = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    if not lines:
        return []
    before = {k: v for k, v in lines[0]["settings"].items() if k != "generations"}
    now = {k: v for k, v in settings.items() if k != "generations"}
    if before != now:
        raise ValueError(
            f"--out: {str(path)!r} holds a search with other settings ({json.dumps(before)}); "
            "remove it or write elsewhere"
        )
    return [line for line in lines if "generation" in line]


def cross_entropy(
    sample: Callable[[np.random.Generator], Any],
    score: Callable[[Any, np.ndarray], tuple[np.ndarray, dict[str, Any]]],
    mean: np.ndarray,
    std: np.ndarray,
    *,
    population: int,
    elite: int,
    generations: int,
    seed: int,
    log: Path,
    settings: dict[str, Any],
    progress: bool = True,
) -> tuple[np.ndarray, list[dict[str, Any]]]:
    """Run (or resume from ``log``) the search from the Gaussian ``(mean, std)``; returns the final
    mean (unit L1 norm) and the generations' records.

    Generation ``g`` draws from its own Generator (the ``g``-th child of ``seed``): first
    ``sample(rng)``, what every candidate of the generation is scored on (its episodes' seeds, its
    sequences: common random numbers), then the candidates; ``score(sample, candidates)`` returns one
    score per candidate (smaller is better; ``inf`` for one that failed) and what the generation's
    record should also hold."""
    done = read_log(log, settings)
    mean, std = np.asarray(mean, dtype=np.float64), np.asarray(std, dtype=np.float64)
    if done:
        mean, std = np.array(done[-1]["mean"]), np.array(done[-1]["std"])
    else:
        log.parent.mkdir(parents=True, exist_ok=True)
        log.write_text(json.dumps({"settings": settings}) + "\n")
    gens = np.random.SeedSequence(seed).spawn(generations)
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=generations, initial=len(done), unit="gen", file=sys.stderr)
    for g in range(len(done), generations):
        rng = np.random.default_rng(gens[g])
        drawn = sample(rng)
        cands = np.array([unit(mean + std * rng.standard_normal(mean.size)) for _ in range(population)])
        scores, extra = score(drawn, cands)
        best = np.argsort(scores, kind="stable")[:elite]
        mean = unit(cands[best].mean(axis=0))
        std = cands[best].std(axis=0) + STD_FLOOR
        record = {
            "generation": g,
            **extra,
            "best_score": float(scores[best[0]]),
            "elite_score": float(scores[best].mean()),
            "mean": mean.tolist(),
            "std": std.tolist(),
        }
        with log.open("a") as f:
            f.write(json.dumps(record) + "\n")
        done.append(record)
        if bar is not None:
            bar.set_postfix_str(f"elite {record['elite_score']:+.4f}")
            bar.update(1)
    if bar is not None:
        bar.close()
    return mean, done


def search_from_args(
    args: Any,
    sample: Callable[[np.random.Generator], Any],
    score: Callable[[Any, np.ndarray], tuple[np.ndarray, dict[str, Any]]],
    mean: np.ndarray,
    log: Path,
    settings: dict[str, Any],
) -> tuple[np.ndarray, list[dict[str, Any]]]:
    """:func:`cross_entropy` from ``mean`` with a script's flags (``--init-std``, ``--population``,
    ``--elite``, ``--generations``, ``--seed``, ``--no-progress``)."""
    return cross_entropy(
        sample,
        score,
        mean,
        np.full(np.size(mean), float(args.init_std)),
        population=args.population,
        elite=args.elite,
        generations=args.generations,
        seed=args.seed,
        log=log,
        settings=settings,
        progress=not args.no_progress,
    )


def read_weights(path: Path, features: Sequence[str], algo: str) -> np.ndarray:
    """The weights of ``features`` that a scored agent's checkpoint ``.zip`` holds (a one-line
    ``ValueError`` for a file that is not one, or weights that are not finite)."""
    try:
        with zipfile.ZipFile(path) as z:
            data = json.loads(z.read("weights.json"))
        w = np.array([float(data[name]) for name in features])
    except (OSError, KeyError, ValueError, TypeError, zipfile.BadZipFile) as exc:
        raise ValueError(f"{str(path)!r}: not a {algo} checkpoint ({type(exc).__name__}: {exc})") from None
    if not np.all(np.isfinite(w)):
        raise ValueError(f"{str(path)!r}: weights must be finite, got {w.tolist()}")
    return w


def search_and_write(
    args: Any,
    argv: Sequence[str] | None,
    script: str,
    features: Sequence[str],
    search: Callable[[Any, Path], tuple[np.ndarray, list[dict[str, Any]]]],
    meta: dict[str, Any],
) -> None:
    """A search script's work after its flags are checked: run (or resume) ``search(args, log)`` with
    its log beside ``args.out``, then write the checkpoint, ``args.out`` (a ``.zip`` of the weights of
    ``features``), and its ``.json`` beside it (``meta``, with the weights, the command that ran
    ``script``, the generations run, the last elite score and this run's time), each atomically."""
    from msj_gym.atomic import atomic_path, atomic_write_text

    started = time.perf_counter()
    mean, done = search(args, args.out.with_suffix(".log.jsonl"))
    weights = {name: float(w) for name, w in zip(features, mean, strict=True)}
    out = args.out
    with atomic_path(out) as tmp, zipfile.ZipFile(tmp, "w") as z:
        z.writestr("weights.json", json.dumps(weights, sort_keys=True))
    meta = {
        **meta,
        "weights": weights,
        "command": f"python -m {script} " + shlex.join(sys.argv[1:] if argv is None else argv),
        "generations": len(done),
        "final_elite_score": done[-1]["elite_score"] if done else None,
        "train_seconds_this_run": round(time.perf_counter() - started, 1),
    }
    atomic_write_text(out.with_suffix(".json"), json.dumps(meta, indent=2) + "\n")
    print(f"weights {json.dumps(weights)}; wrote {out} and {out.with_suffix('.json').name}")
