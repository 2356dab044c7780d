"""A decision-time planner: at each decision, play every valid action out in futures sampled from the
system's model, with a base policy playing the rest, and take the best.

A rollout algorithm (Bertsekas, "Rollout Algorithms for Discrete Optimization", 2013; parallel rollout
over several bases, Chang, Givan & Chong 2004). At a decision with more than one valid action, the
planner asks its :class:`~msj_gym.env.futures.FuturePlayer` for the cost of every valid action in
``futures`` futures of ``horizon`` arrivals, each played out by each base policy: a class-set network
(:mod:`msj_gym.agents.network`, the checkpoint's weights) and any heuristics the config names. Per
future, an action's cost is the least over the bases. The planner takes its default action (the
network's, else the first heuristic's) unless another action is cheaper by more than ``gate``
standard errors of the paired differences over the futures: with few futures the estimates are noisy,
and a deviation on noise costs more than it saves.

What it knows: the jobs present (classes, arrival and start times, how long each has been served),
the clock, and the system's model (the env's workload: arrival rate, class shares, service-time
laws). The futures are drawn from that model; the episode's own future and (size-oblivious) the
jobs' sizes are never read (``tests/env/test_futures.py``). With ``know_sizes`` it keeps the sizes
of the jobs present, as a size-aware scheduler knows them.

An agent is its checkpoint: the network's weights (``.npz``) and the ``.json`` beside it, whose
``planner`` entry holds the settings (:class:`PlannerConfig`). It acts in ``MSJ-v0`` with the
class-set observation and job actions (``queue_window=1``)::

    msj-gym leaderboard --scenario sf-fig2 --loads 0.7 --agent planner
"""

from __future__ import annotations

import dataclasses
import functools
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["Planner", "PlannerConfig", "load_checkpoint"]


@dataclass(frozen=True)
class PlannerConfig:
    """A planner's settings, as its checkpoint's ``.json`` declares them under ``"planner"``.

    ``futures`` x ``horizon``: the sampled futures per decision and the arrivals in each (the budget);
    ``persist``: decision epochs an action is held for in its branches (see
    :class:`~msj_gym.env.futures.FuturePlayer`);
    ``bases``: heuristic policy ids playing the branches out besides the network (``network``: the
    checkpoint's network is a base, and the default action); ``gate``: how many standard errors an
    action must beat the default by; ``know_sizes``: keep the sizes of the jobs present (size-aware);
    ``seed``: of the sampled futures (with the episode's seed)."""

    futures: int = 8
    horizon: int = 64
    persist: int = 1
    bases: tuple[str, ...] = ()
    network: bool = True
    gate: float = 1.5
    know_sizes: bool = False
    seed: int = 0

    def __post_init__(self) -> None:
        checks = (("futures", 1, 4096), ("horizon", 1, 10**6), ("persist", 1, 10**6), ("seed", 0, 2**63 - 1))
        for name, lo, hi in checks:
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
                raise ValueError(f"planner.{name}: expected an integer in [{lo}, {hi}], got {v!r}")
        gate = self.gate
        if isinstance(gate, bool) or not isinstance(gate, int | float) or not 0 <= gate < 1e6:
            raise ValueError(f"planner.gate: expected a number >= 0, got {gate!r}")
        for name in ("network", "know_sizes"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"planner.{name}: expected true or false, got {getattr(self, name)!r}")
        bases = self.bases
        if isinstance(bases, str) or not all(isinstance(b, str) for b in bases):
            raise ValueError(f"planner.bases: expected a list of policy ids, got {bases!r}")
        object.__setattr__(self, "bases", tuple(bases))
        if not self.network and not self.bases:
            raise ValueError("planner: needs a base, the network or a heuristic (planner.bases)")

    @classmethod
    def from_dict(cls, data: Any) -> PlannerConfig:
        """The config from a checkpoint's ``"planner"`` entry; unknown keys are refused by name."""
        if not isinstance(data, dict):
            raise ValueError(f"planner: expected a JSON object of settings, got {data!r:.60}")
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"planner: unknown settings {unknown}; known: {sorted(known)}")
        return cls(**data)


class Planner:
    """The planner acting in ``env`` (see the module docstring); ``predict`` as stable-baselines3's.

    ``decisions`` counts the decisions it planned, ``planning_seconds`` the time spent in them, and
    ``deviations`` those where it left its default action."""

    def __init__(self, env: Any, config: PlannerConfig, weights: Any = None, seed: int | None = None) -> None:
        from msj_gym.agents.network import NetworkAgent, NetworkPolicy
        from msj_gym.env.futures import FuturePlayer
        from msj_gym.registry import policy_from_spec

        self.env = getattr(env, "unwrapped", env)
        self.config = config
        if config.network and weights is None:
            raise ValueError("planner: its config has network=true but the checkpoint has no network")
        bases: list[Any] = [policy_from_spec(b, "planner.bases") for b in config.bases]
        self.network = None
        if config.network:
            bases.insert(0, NetworkPolicy(weights))
            self.network = NetworkAgent(weights, self.env.workload.num_classes)
        entropy = [config.seed] if seed is None else [config.seed, int(seed)]
        self.player = FuturePlayer(
            self.env,
            bases,
            futures=config.futures,
            horizon=config.horizon,
            seed=np.random.SeedSequence(entropy),
            know_sizes=config.know_sizes,
            persist=config.persist,
        )
        self.decisions = 0
        self.deviations = 0
        self.planning_seconds = 0.0

    def _default(self, observation: np.ndarray, mask: np.ndarray) -> int:
        if self.network is not None:
            return int(self.network.predict(observation, action_masks=mask)[0])
        from msj_gym.env import planning

        starts = [w for w in planning.decision_now(self.env, self.config.bases[0]).tolist() if w >= 0]
        action = self.env.encode(starts[0]) if starts else 0
        return action if mask[action] else int(np.flatnonzero(mask)[0])

    def predict(
        self,
        observation: np.ndarray,
        state: Any = None,
        episode_start: Any = None,
        deterministic: bool = True,
        action_masks: np.ndarray | None = None,
    ) -> tuple[np.ndarray, None]:
        mask = self.env.action_masks() if action_masks is None else np.asarray(action_masks, dtype=bool)
        valid = np.flatnonzero(mask)
        default = self._default(observation, mask)
        if valid.size < 2:
            return np.array(default), None
        t0 = time.perf_counter()
        costs = self.player.costs(valid)
        self.planning_seconds += time.perf_counter() - t0
        self.decisions += 1
        if costs is None:  # too few free job slots for the branches: the default
            return np.array(default), None
        per_future = costs.min(axis=0)  # (futures, actions): the best base per future
        d = per_future - per_future[:, [int(np.flatnonzero(valid == default)[0])]]
        mean = d.mean(axis=0)
        if d.shape[0] > 1:
            se = d.std(axis=0, ddof=1) / np.sqrt(d.shape[0])
            t = np.where(se > 0, mean / np.where(se > 0, se, 1.0), np.where(mean < 0, -np.inf, 0.0))
        else:
            t = np.where(mean < 0, -np.inf, 0.0)
        best = int(np.argmin(t))
        if t[best] < -self.config.gate:
            self.deviations += 1
            return np.array(int(valid[best])), None
        return np.array(default), None


def _agent(config: PlannerConfig, weights: Any, env: Any, seed: int | None = None) -> Planner:
    return Planner(env, config, weights, seed)


def load_checkpoint(path: Path, meta: dict[str, Any]) -> dict[str, Any]:
    """The loader the registry knows planner checkpoints by (``algo`` ``"planner"``): the network's
    weights in ``path`` (``.npz``, read without unpickling) and the settings in the ``.json``'s
    ``"planner"`` entry. It acts in ``MSJ-v0`` with the network's env keywords."""
    from msj_gym.agents.network import ENV_KWARGS, NetworkWeights
    from msj_gym.env import futures
    from msj_gym.trust import check_imports

    config = PlannerConfig.from_dict(meta.get("planner", {}))
    # its bases are imported by name: one outside the registry and msj_gym only where imports are trusted
    check_imports("its .json", "planner.bases", list(config.bases))
    if meta.get("env_id", "MSJ-v0") != "MSJ-v0":
        raise ValueError(f"a planner acts in MSJ-v0, not in {meta.get('env_id')!r}")
    kwargs = meta.get("env_kwargs", {})
    if any(kwargs.get(k) != v for k, v in ENV_KWARGS.items()):
        raise ValueError(f"a planner's env_kwargs must hold {ENV_KWARGS}, got {kwargs}")
    weights = NetworkWeights.load(path) if config.network else None
    import msj_gym.agents.network as network

    return {
        "factory": functools.partial(_agent, config, weights),
        "native": None,
        "code": (network.__file__, futures.__file__),
        "notes": ("plans with the model" + (", knows the sizes present" if config.know_sizes else ""),),
    }
