"""Agents that act through the environments: any baseline policy (:class:`PolicyAgent`) and a masked
uniform random agent (:class:`RandomAgent`), both with a ``predict`` like stable-baselines3's."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..core import state as S
from ..core.policy import Policy
from ..core.simulator import PolicyDriver
from ..metrics.result import SimulationResult
from ..registry import make_policy, supports
from .msj_env import MSJEnv

__all__ = ["PolicyAgent", "RandomAgent", "rollout"]


def _unwrap(env: Any) -> MSJEnv:
    core = getattr(env, "unwrapped", env)
    if not isinstance(core, MSJEnv):
        raise TypeError(
            f"env: expected an MSJ environment (gym.make('MSJ-v0', ...)), got {type(core).__name__}"
        )
    return core


class PolicyAgent:
    """A baseline policy acting through an MSJ environment, one action per step.

    At each new decision epoch the agent asks the policy's own decision rule (the same compiled kernel
    the batch simulator calls, on the same read-only view) for its whole decision, then plays it out as
    env actions: one start or preemption per step at zero elapsed time, then "wait". The policy's data
    is drawn from the episode's policy stream, as in the native run, so that for the same seed the
    metrics of a run through the env equal those of ``Simulator(...).run()`` exactly.

    ``policy``: a :class:`~msj_gym.Policy` or a policy id (``params`` then go to it). ``env``: the
    environment the agent acts in (wrappers allowed; a single env, not a vector env). A preemptive
    policy needs ``MSJPreemptive-v0``. A decision naming a job outside the env's action window raises
    ``ValueError`` (make the env with a larger ``queue_window`` / ``preempt_window``).
    """

    def __init__(self, policy: str | Policy, env: Any, **params: Any) -> None:
        if isinstance(policy, str):
            policy = make_policy(policy, **params)
        elif params:
            raise ValueError("params only apply when policy is given by id")
        if not isinstance(policy, Policy):
            raise TypeError(f"policy: expected a Policy or a policy id, got {type(policy).__name__}")
        self.policy = policy
        self.env = env
        core = _unwrap(env)
        if policy.preemptive and not core.preemptive:
            raise ValueError(
                f"policy {policy.policy_id!r} preempts: run it through MSJPreemptive-v0, not MSJ-v0"
            )
        reason = supports(policy, core.workload)  # a workload it is not defined on fails here
        if reason is not None:
            raise ValueError(reason)
        if policy.decides_every_event:
            core.decide_every_event(True)
        self._episode = -1
        self._epoch = -1
        self._pending: list[int] = []
        self._driver: PolicyDriver | None = None

    def predict(
        self,
        observation: Any = None,
        state: Any = None,
        episode_start: Any = None,
        deterministic: bool = True,
    ) -> tuple[int, Any]:
        """The next env action of the policy's decision for the env's current state (``observation``
        is not needed: the policy reads the simulator state, as it does natively)."""
        env = _unwrap(self.env)
        core = env.core
        if core is None:
            raise RuntimeError("PolicyAgent: reset the environment first")
        if env.episode != self._episode or self._driver is None or self._driver.core is not core:
            self._episode = env.episode
            self._driver = PolicyDriver(self.policy, core)
            self._epoch = -1
        epoch = int(core.sim.iv[S.I_EVENTS])
        if epoch != self._epoch:
            self._epoch = epoch
            self._pending = self._driver.decide()[::-1].tolist()
        if self._pending:
            return env.encode(self._pending.pop()), state
        return 0, state


class RandomAgent:
    """Uniformly random among the valid actions of the current mask (its own seeded generator)."""

    def __init__(self, env: Any, seed: int | None = None) -> None:
        self.env = env
        self.rng = np.random.default_rng(seed)

    def predict(
        self,
        observation: Any = None,
        state: Any = None,
        episode_start: Any = None,
        deterministic: bool = False,
    ) -> tuple[int, Any]:
        valid = np.flatnonzero(_unwrap(self.env)._mask)
        return int(valid[self.rng.integers(valid.size)]), state


def rollout(env: Any, agent: Any, seed: int | None = None, use_masks: bool = True) -> SimulationResult:
    """Run one episode of ``agent`` (anything with an SB3-style ``predict``) and return the
    simulator's result for it (the env's ``result()``: of ``MSJMoldable-v0`` a ``MoldableResult``).
    With ``use_masks`` the mask is passed as ``action_masks=`` to agents whose ``predict`` takes it
    (sb3-contrib's MaskablePPO)."""
    import inspect

    obs, info = env.reset(seed=seed)
    masked = use_masks and "action_masks" in inspect.signature(agent.predict).parameters
    truncated = terminated = False
    while not (truncated or terminated):
        if masked:
            action, _ = agent.predict(obs, deterministic=True, action_masks=info["action_mask"])
        else:
            action, _ = agent.predict(obs, deterministic=True)
        obs, _, terminated, truncated, info = env.step(action)
    core = getattr(env, "unwrapped", env)
    return (
        core.result() if hasattr(core, "result") and not isinstance(core, MSJEnv) else _unwrap(env).result()
    )
