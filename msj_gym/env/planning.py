"""Planning tools over an MSJ environment's episode: save and restore its state, let a baseline make a
decision or play the episode out, and read what an action would apply.

An agent that plans (rollout policy improvement, a decision-time planner, the branch player of
:mod:`msj_gym.env.branches`) compares actions by simulation: it saves the episode, tries an action,
lets a heuristic play on, and goes back. These tools do that through a public interface, so that the
environment itself stays an adapter (reset, step, masks, results) and no agent reads its private
state::

    from msj_gym.env import planning

    snap = planning.snapshot(env)               # the episode now, future job stream included
    obs, reward, *_ = env.step(action)
    cost = -(reward + planning.play_out(env, "first-fit"))
    planning.restore(env, snap)                 # back to the decision, as often as needed

The functions take the env or any wrapper of it (``env.unwrapped`` is used). A snapshot holds the
episode's real future (arrivals and service times): branches restored from it see the same jobs
(common random numbers), which is right for training by simulation and wrong for an agent deciding
online; :mod:`msj_gym.env.futures` plays branches in sampled futures instead.
"""

from __future__ import annotations

import copy
from typing import Any, NamedTuple

import numpy as np

from ..core import state as S
from ..core.policy import Policy
from ..core.simulator import PolicyDriver, Simulator
from .act import priority_plan
from .stepping import reward_paid

__all__ = [
    "EnvSnapshot",
    "decision_now",
    "engine_words",
    "jobs_arrived",
    "play_out",
    "restore",
    "snapshot",
    "starts_by_class",
    "step_policy",
]


class EnvSnapshot(NamedTuple):
    """An episode's state as :func:`snapshot` saves it (treat as opaque)."""

    owner: int
    core: Simulator
    counters: tuple[int, bool, int]
    arrays: tuple[np.ndarray, np.ndarray]
    advice: tuple[list[np.ndarray], list[Any]]  # the advisors' decisions now and their data


def _env(env: Any) -> Any:
    return getattr(env, "unwrapped", env)


def _live(env: Any) -> Any:
    """The env (unwrapped), refusing one with no decision due."""
    env = _env(env)
    if env.core is None:
        raise RuntimeError("MSJ env: call reset() first")
    if env._over:
        raise RuntimeError("MSJ env: the episode is over (truncated); call reset() first")
    return env


def _copy_core(env: Any, core: Simulator) -> Simulator:
    # the workload and the agent's slot are shared (read-only); everything else is copied
    memo = {id(env.workload): env.workload, id(env._agent_slot): env._agent_slot}
    return copy.deepcopy(core, memo)


def snapshot(env: Any) -> EnvSnapshot:
    """The episode's full state now (simulator, future job stream, counters, the advisors' data):
    restore it with :func:`restore` as often as needed. Branches restored from one snapshot see the
    same future arrivals and service times (common random numbers)."""
    env = _env(env)
    if env.core is None:
        raise RuntimeError("MSJ env: call reset() first")
    drivers = [env._drivers.get(id(p)) for p in env.advisors]
    return EnvSnapshot(
        id(env),
        _copy_core(env, env.core),
        (env.episode, env._over, env._invalid),
        (env._obs.copy(), env._mask.copy()),
        (
            [a.copy() for a in env._advice],
            [None if d is None else copy.deepcopy(d[1].pdata) for d in drivers],
        ),
    )


def restore(env: Any, snap: EnvSnapshot) -> tuple[Any, dict[str, Any]]:
    """Go back to ``snap`` (taken from this env); returns the observation and the decision's info (its
    ``action_mask``) as they were then. The snapshot stays usable."""
    env = _env(env)
    if not isinstance(snap, EnvSnapshot):
        raise TypeError(f"snapshot: expected an EnvSnapshot from snapshot(), got {type(snap).__name__}")
    if snap.owner != id(env):
        raise ValueError("snapshot: taken from another environment")
    env.core = _copy_core(env, snap.core)
    env.core._views()
    env.episode, env._over, env._invalid = snap.counters
    env._obs[:], env._mask[:] = snap.arrays
    env._bind()
    env._drivers.clear()
    # the advisors' data as it was, so that their decisions go on as they would have
    advice, pdatas = snap.advice
    env._advice = [a.copy() for a in advice]
    for policy, pdata in zip(env.advisors, pdatas, strict=True):
        if pdata is not None:
            driver = PolicyDriver(policy, env.core, copy.deepcopy(pdata))
            env._drivers[id(policy)] = (policy, driver)
    info = {
        "time": float(env._sim.fv[S.F_NOW]),
        "action_mask": env.action_masks(),
        "jobs_in_system": int(env._sim.iv[S.I_NSYS]),
    }
    return env._observation(), info


def step_policy(env: Any, policy: str | Policy) -> tuple[Any, float, bool, bool, dict[str, Any]]:
    """Let a baseline ``policy`` (an id or a :class:`Policy`) make the current decision whole (every
    start or preemption it makes at this instant), then advance to the next decision; returns what
    ``env.step`` returns. It drives an episode with a heuristic whatever the action mode, e.g. to reach
    states at which an agent's actions are then compared. The policy's data is prepared once per
    episode (and again after :func:`restore`), as in a native run; a policy that must see every event
    (``decides_every_event``) sees only the decisions."""
    env = _live(env)
    decision = env._decision_of(policy)
    env._out[:] = 0.0
    env._apply(decision)
    info = env._advance(-1)
    reward = float(env._out[0]) * env._reward_scale
    return env._observation(), reward, False, env._over, info


def play_out(env: Any, policy: str | Policy) -> float:
    """Hand the rest of the episode to a baseline ``policy`` (an id or a :class:`Policy`), run natively
    from the current decision on, and return the reward the episode would still have paid (the sum of
    the remaining steps' rewards, in the env's reward units). The episode is over afterwards.
    Unweighted rewards only."""
    env = _live(env)
    if env.weighted:
        raise ValueError("play_out: weighted=True rewards are not supported; make the env unweighted")
    baseline: Policy = env._baseline("policy", policy)
    core = env.core
    start = float(reward_paid(core.sim.fv, env._ep))
    # the decision due now is the policy's, then it runs event by event to the end
    driver = PolicyDriver(baseline, core)
    env._apply(driver.decide())
    core.drive(baseline, driver.pdata)
    env._over = True
    env._bind()
    env._observe()
    return -(float(reward_paid(core.sim.fv, env._ep)) - start) * env._reward_scale


def engine_words(env: Any, action: int) -> np.ndarray:
    """The engine words (:mod:`msj_gym.core.actions`) that env ``action`` would apply now: an advisor's
    decision, a priority's plan (preemptions, then starts), or a job action's single start or
    preemption (``[]`` for "wait")."""
    env = _live(env)
    action = env._check_action(action)
    first_advisor = env.action_space.n - len(env.advisors)
    if action >= first_advisor:
        return env._advice[action - first_advisor].copy()
    if action == 0:
        return np.zeros(0, dtype=np.int64)
    if env._priority:
        out = np.zeros(2 * env.workload.num_servers + 2, dtype=np.int64)
        n = priority_plan(env._sim, env._ep, int(action - 1), env._work, out)
        return out[:n]
    from .act import decode_action

    return np.array([decode_action(env._sim, env._ep, int(action))], dtype=np.int64)


def starts_by_class(env: Any, action: int) -> np.ndarray:
    """Per class, the jobs that env ``action`` would start now (an invalid action counts as "wait")."""
    env = _live(env)
    out = np.zeros(env.workload.num_classes, dtype=np.int64)
    if not env.action_masks()[env._check_action(action)]:
        return out
    ji = env.core.sim.ji
    for w in engine_words(env, action).tolist():
        if w >= 0:
            out[ji[w, S.CLS]] += 1
    return out


def decision_now(env: Any, policy: str | Policy) -> np.ndarray:
    """The engine words of baseline ``policy``'s decision now, without applying it (its data kept per
    episode, as :func:`step_policy` keeps it)."""
    return _live(env)._decision_of(policy)


def jobs_arrived(env: Any) -> int:
    """How many jobs have arrived in the episode so far (warm start included)."""
    env = _env(env)
    if env.core is None:
        raise RuntimeError("MSJ env: call reset() first")
    return int(env.core.sim.iv[S.I_NARR])
