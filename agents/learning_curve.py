"""Learning curves: a policy's mean response time on held-out seeds, measured while it trains.

:func:`evaluate_greedy` runs a policy's greedy actions (a function of the observations and the masks)
on a fixed set of held-out episodes, all of them stepped together in the native vector env
(``gym.make_vec("MSJ-v0", num_envs=N)``; one batched forward pass per step), and returns the
per-episode mean response times and stability verdicts. :class:`CurveWriter` appends one JSON line
per evaluation (the environment steps so far, the wall time, the mean and its per-seed values) to a
file beside the checkpoint; :func:`read_curve` reads it back. The evaluation episodes use the
leaderboard's settings: a tenth of the arrivals as warm-up, and a heuristic run's arrival cap
(:func:`~msj_gym.env.msj_env.heuristic_cap`), so that a point of the curve is what ``msj-gym
leaderboard`` would report on those seeds.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["CurveWriter", "Episodes", "evaluate_greedy", "read_curve", "summarise_episodes"]

#: ``act(observations, masks) -> actions``: a batch of greedy actions
ActFn = Callable[[Any, np.ndarray], np.ndarray]


class Episodes:
    """The held-out episodes of a curve: ``systems`` (env keywords, one dict per system: scenario,
    load, ...), each run on every seed of ``seeds``, ``num_arrivals`` arrivals each (a tenth of them
    as warm-up). ``env_kwargs`` are the agent's other env keywords (observation, actions, ...)."""

    def __init__(
        self,
        systems: Sequence[dict[str, Any]],
        seeds: Sequence[int],
        num_arrivals: int,
        env_kwargs: dict[str, Any],
    ) -> None:
        if not systems:
            raise ValueError("systems: expected at least one system, got none")
        if not seeds or min(seeds) < 0:
            raise ValueError(f"seeds: expected non-negative seeds, got {list(seeds)!r}")
        if num_arrivals < 100:
            raise ValueError(f"num_arrivals: expected at least 100, got {num_arrivals!r}")
        self.systems = [dict(s) for s in systems]
        self.seeds = [int(s) for s in seeds]
        self.num_arrivals = int(num_arrivals)
        self.env_kwargs = {
            k: v for k, v in env_kwargs.items() if k not in ("scenario", "load", "num_servers", "reward")
        }

    def env_keywords(self, system: dict[str, Any]) -> dict[str, Any]:
        """The keywords of the env that runs ``system``'s episodes."""
        from msj_gym.env.msj_env import heuristic_cap

        kwargs = {**self.env_kwargs, **system, "num_arrivals": self.num_arrivals}
        kwargs["warmup"] = self.num_arrivals // 10
        kwargs.pop("max_arrivals", None)
        kwargs["max_arrivals"] = heuristic_cap(kwargs, self.num_arrivals)
        return kwargs


def evaluate_greedy(act: ActFn, episodes: Episodes, env_id: str = "MSJ-v0") -> list[dict[str, Any]]:
    """Run ``act`` on every (system, seed) episode of ``episodes``; one dict per episode: ``system``
    (its index), ``seed``, ``mean_response_time`` and ``stable``. The seeds of one system run together
    in one native vector env, each env reset with its own seed, so an episode is exactly the single
    env's episode with that seed."""
    import gymnasium as gym

    from msj_gym.registration import register_envs

    register_envs()
    out: list[dict[str, Any]] = []
    for index, system in enumerate(episodes.systems):
        seeds = episodes.seeds
        kwargs = episodes.env_keywords(system)
        # the native vector env runs every mode but those that run a policy from Python
        native = kwargs.get("advisor") is None and kwargs.get("warm_start") is None
        if native:
            envs = gym.make_vec(env_id, num_envs=len(seeds), autoreset_mode="SameStep", **kwargs)
        else:
            envs = gym.make_vec(
                env_id,
                num_envs=len(seeds),
                vectorization_mode="sync",
                vector_kwargs={"autoreset_mode": "SameStep"},
                **kwargs,
            )
        try:
            seed_list: Any = list(seeds)  # one seed per env (gymnasium types the argument as one int)
            obs, infos = envs.reset(seed=seed_list)
            done = np.zeros(len(seeds), dtype=bool)
            results: list[tuple[float, bool]] = [(math.nan, False)] * len(seeds)
            while not done.all():
                masks = np.asarray(infos["action_mask"], dtype=bool)
                actions = np.asarray(act(obs, masks), dtype=np.int64).reshape(len(seeds))
                obs, _, terminated, truncated, infos = envs.step(actions)
                ended = np.flatnonzero((terminated | truncated) & ~done)
                for i in ended.tolist():
                    final = infos["final_info"]
                    results[i] = (float(final["mean_response_time"][i]), bool(final["stable"][i]))
                    done[i] = True
        finally:
            envs.close()
        for seed, (mean, stable) in zip(seeds, results, strict=True):
            out.append({"system": index, "seed": seed, "mean_response_time": mean, "stable": stable})
    return out


def summarise_episodes(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The curve's value at one evaluation: the mean over episodes of the mean response time (``inf``
    when an episode is unstable, since its finite-run mean is not a steady-state value), the number
    of unstable episodes, and the per-episode values."""
    values = [float(r["mean_response_time"]) for r in rows]
    unstable = sum(1 for r in rows if not r["stable"])
    mean = math.inf if unstable else float(np.mean(values))
    return {"mean_response_time": mean, "unstable": unstable, "per_episode": values}


class CurveWriter:
    """Appends the points of a learning curve to ``path`` as JSON lines; the file is started afresh
    by the first point of a run (a rerun with the same output replaces the old curve)."""

    def __init__(self, path: Path, meta: dict[str, Any]) -> None:
        self.path = Path(path)
        self.meta = meta
        self._started = False
        self._t0 = time.perf_counter()
        self.last_steps: int | None = None

    def add(self, steps: int, summary: dict[str, Any], **extra: Any) -> dict[str, Any]:
        row = {
            "steps": int(steps),
            "wall_seconds": round(time.perf_counter() - self._t0, 1),
            "mean_response_time": _finite_or_none(summary["mean_response_time"]),
            "unstable": int(summary["unstable"]),
            "per_episode": [_finite_or_none(v) for v in summary["per_episode"]],
            **extra,
        }
        self.path.parent.mkdir(parents=True, exist_ok=True)
        mode = "a" if self._started else "w"
        with self.path.open(mode) as f:
            if not self._started:
                f.write(json.dumps({"meta": self.meta}) + "\n")
            f.write(json.dumps(row) + "\n")
        self._started = True
        self.last_steps = int(steps)
        return row


def _finite_or_none(value: float) -> float | None:
    """JSON has no infinity: an unstable evaluation is written as null."""
    return round(float(value), 6) if math.isfinite(value) else None


def read_curve(path: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """``(meta, points)`` of a curve file written by :class:`CurveWriter`; a null mean is read back as
    ``inf`` (an evaluation with an unstable episode). A one-line ``ValueError`` names a file that is
    not a curve."""
    path = Path(path)
    try:
        lines = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    except (OSError, json.JSONDecodeError) as exc:
        raise ValueError(f"curve {str(path)!r}: cannot be read ({exc})") from None
    if not lines or not isinstance(lines[0], dict) or "meta" not in lines[0]:
        raise ValueError(f"curve {str(path)!r}: expected a first line with 'meta'")
    points = []
    for row in lines[1:]:
        if not isinstance(row, dict) or "steps" not in row or "mean_response_time" not in row:
            raise ValueError(f"curve {str(path)!r}: a line without 'steps' and 'mean_response_time'")
        value = row["mean_response_time"]
        points.append({**row, "mean_response_time": math.inf if value is None else float(value)})
    return lines[0]["meta"], points
