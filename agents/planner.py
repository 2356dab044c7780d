"""A decision-time planner: at each decision, play every valid action out in futures sampled from the
system's model, with a base policy playing the rest, and take the best.

A rollout algorithm (Bertsekas, "Rollout Algorithms for Discrete Optimization", 2013; parallel rollout
over several bases, Chang, Givan & Chong 2004). At a decision with more than one valid action, the
planner asks its :class:`~msj_gym.env.futures.FuturePlayer` for the cost of every valid action in
``futures`` futures of ``horizon`` arrivals, each played out by each base policy: a class-set network
(:mod:`msj_gym.agents.network`, the checkpoint's weights) and any heuristics the config names. An
action's cost is its cost under the base with the least mean over the futures. The planner takes its
default action (the network's, else the first heuristic's) unless another action is cheaper by more
than ``gate`` standard errors of the paired differences over the futures: with few futures the
estimates are noisy, and a deviation on noise costs more than it saves. With ``more_futures``, a
decision where some action comes within ``screen`` standard errors of beating the default is looked
at again in that many new futures, and the deviation judged on those alone.

Why it can be worse than its base, and what the settings do about it: the rollout argument (a
one-step lookahead is no worse than its base) holds for the true action values of the base. A
branch's cost is the response time still to come of the jobs present and of ``horizon`` sampled
arrivals, played until they have all left: a finite set of jobs, whose total is least when the narrow
jobs go first and the wide ones last, after the last arrival, where they delay no one but themselves.
The arrivals after the horizon, which a wide job put off would delay in the real system, are not
paid for, so a short horizon rates putting off a wide job as cheap (on ``sf-fig2`` at load 0.9, at a
state with 21 narrow and 15 wide jobs present, starting a narrow job instead of the wide one that
fits scores -97 +- 7 in 500 futures of 64 arrivals and +58 +- 21 in futures of 256), and at a high
load, where the queue is long, the planner that follows that rating starves the wide jobs. And the
differences are heavy-tailed: with 8 futures, a gate of 1.5 standard errors lets noise through often
enough to cost more than the rare real gains. ``persist`` > 1 keeps every action up, the default's
too, so the default's branch is no longer the base; ``hold`` keeps the base after a start and only
the wait up, holding the servers for the widest class waiting until it fits (the action a one-step
play-out with a work-conserving base cannot rate, as the base starts the narrow jobs at the next
event anyway).

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
    ``hold``: a start is followed by the base at once and the wait holds the servers for the widest
    class waiting until it fits (see :class:`~msj_gym.env.futures.FuturePlayer`);
    ``more_futures``, ``screen``: a second look in that many new futures at a decision where an
    action's t-statistic against the default is below ``-screen`` (0: none);
    ``seed``: of the sampled futures (with the episode's seed)."""

    futures: int = 8
    horizon: int = 64
    persist: int = 1
    bases: tuple[str, ...] = ()
    network: bool = True
    gate: float = 1.5
    know_sizes: bool = False
    hold: bool = False
    more_futures: int = 0
    screen: float = 0.0
    seed: int = 0

    def __post_init__(self) -> None:
        checks = (
            ("futures", 1, 4096),
            ("horizon", 1, 10**6),
            ("persist", 1, 10**6),
            ("more_futures", 0, 4096),
            ("seed", 0, 2**63 - 1),
        )
        for name, lo, hi in checks:
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
                raise ValueError(f"planner.{name}: expected an integer in [{lo}, {hi}], got {v!r}")
        for name in ("gate", "screen"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int | float) or not 0 <= v < 1e6:
                raise ValueError(f"planner.{name}: expected a number >= 0, got {v!r}")
        for name in ("network", "know_sizes", "hold"):
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
            hold=config.hold,
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
        di = int(np.flatnonzero(valid == default)[0])
        t = _t_statistics(costs, di)
        more = self.config.more_futures
        if more and t.min() < -self.config.screen:
            # a second look, only where the first found an action that may beat the default: most
            # decisions end after the first. The deviation is judged on the second look's futures
            # alone: the first look's were kept for looking good, and would make it look better still
            keep = np.flatnonzero((t < -self.config.screen) | (np.arange(valid.size) == di))
            t0 = time.perf_counter()
            extra = self.player.costs(valid[keep], futures=more)
            self.planning_seconds += time.perf_counter() - t0
            if extra is None:
                return np.array(default), None
            t = np.zeros(valid.size)
            t[keep] = _t_statistics(extra, int(np.flatnonzero(keep == di)[0]))
        best = int(np.argmin(t))
        if t[best] < -self.config.gate:
            self.deviations += 1
            return np.array(int(valid[best])), None
        return np.array(default), None


def _t_statistics(costs: np.ndarray, default: int) -> np.ndarray:
    """Per action, the paired t-statistic of its cost minus the default action's over the futures
    (``costs``: bases x futures x actions), each action played out by the base with its least mean
    cost; -inf where an action is cheaper in every future by the same amount."""
    # the least per future would pick the base with hindsight and rate every action too well, the
    # more so the more its bases disagree, which makes a deviation look better than it is
    base_of = costs.mean(axis=1).argmin(axis=0)
    per_future = np.take_along_axis(costs, base_of[None, None, :], axis=0)[0]
    d = per_future - per_future[:, [default]]
    mean = d.mean(axis=0)
    if d.shape[0] < 2:
        return np.where(mean < 0, -np.inf, 0.0)
    se = d.std(axis=0, ddof=1) / np.sqrt(d.shape[0])
    return np.where(se > 0, mean / np.where(se > 0, se, 1.0), np.where(mean < 0, -np.inf, 0.0))


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
