"""Reward wrappers for long-run average-cost control with a standard on-policy algorithm.

The MSJ environments pay minus the time integral of the number of jobs in the system, an unbounded
cost on an unbounded state space. Two wrappers make that cost easier to learn from, each for a single
env (``gym.Wrapper``) and for the native vector env (``gym.vector.VectorWrapper``):

* :class:`LyapunovShaping` / :class:`LyapunovShapingVector`: **stabilising cost shaping** after Pavse
  et al., "Learning to Stabilize Online Reinforcement Learning in Unbounded State Spaces" (ICML 2024,
  STOP, Sec. 4): each step also pays minus the drift of a Lyapunov function of the queues,
  ``-weight * (phi(s') - phi(s))``, from the classes' numbers of jobs in the system ``n_c`` (waiting
  plus running, ``info["jobs_by_class"]``). ``of="jobs"`` is STOP's form over the queues,
  ``phi = sum_c n_c ** power``; ``of="work"`` is the multiserver-job system's own, the work in the
  system in units of the ``k`` servers' time, ``phi = (sum_c n_c * n_need_c * m_c / k) ** power``
  with the class means ``m_c`` (no job's own size), whose drift is smallest when the most servers
  are busy: it pays at once for servers left idle while work waits, in proportion to the work. A
  policy under which a queue grows pays for it within the step, in proportion to the queue, instead
  of through the late and noisy sum of holding costs: the credit for a destabilising action arrives
  at once. The drift telescopes, so an episode's shaped return is its return minus
  ``weight * (phi(end) - phi(start))``: the long-run average cost of every stable policy, and hence
  which stable policy is optimal, is unchanged (STOP's argument; for a discounted learner it is Ng et
  al.'s potential-based shaping up to the discount of one step), while a learner whose returns are
  cut short by a discount or a bootstrap sees ``phi`` as a rough value of the state beyond its
  horizon.
* :class:`CostScale` / :class:`CostScaleVector`: a **per-system cost scale**. ``scale="service-time"``
  divides the rewards by the system's mean service time ``E[S]`` (over arrivals): the cost of a
  decision is then about minus the mean response time in units of ``E[S]`` per decision, a number of
  the same order on every system (by Little's law), so that one agent trained across systems does not
  learn mostly from the slowest one. A number divides by that number.

Apply the shaping first and the scale outside it (the scale divides the shaping too). The
observations need no wrapper for unbounded counts: both the flat and the class-set observation pass
every count, demand and age through ``squash(x) = L / (1 + L)``, ``L = log(1 + x)`` (bounded,
monotone, and telling 100 from 1000 apart: the bounded form of STOP's ``symlog`` transformation), see
:class:`~msj_gym.env.msj_env.MSJEnv`. Episodes end by truncation only, never by termination: learners
must bootstrap the value of the last state (stable-baselines3 does, from
``info["TimeLimit.truncated"]`` and ``info["terminal_observation"]``; ``examples/cleanrl_ppo.py``
shows it in a loop of its own).
"""

from __future__ import annotations

import math
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode, VectorWrapper

__all__ = [
    "LYAPUNOV_FUNCTIONS",
    "CostScale",
    "CostScaleVector",
    "LyapunovShaping",
    "LyapunovShapingVector",
    "lyapunov",
    "work_per_job",
]


#: the Lyapunov functions of :class:`LyapunovShaping` (``of=``)
LYAPUNOV_FUNCTIONS = ("jobs", "work")


def lyapunov(jobs_by_class: np.ndarray, power: float, work: np.ndarray | None = None) -> np.ndarray:
    """``sum_c n_c ** power``, or with ``work`` (each class's work per job, ``n_need_c * m_c / k``)
    ``(sum_c n_c * work_c) ** power``; over the last axis (one value per environment for a batch)."""
    n = np.asarray(jobs_by_class, dtype=np.float64)
    if work is None:
        return np.power(n, power).sum(axis=-1)
    return np.power(n @ np.asarray(work, dtype=np.float64), power)


def work_per_job(workload: Any) -> np.ndarray:
    """Each class's mean work per job in units of the ``k`` servers' time: ``n_need_c * m_c / k``."""
    needs = np.asarray(workload.server_needs, dtype=np.float64)
    means = np.asarray([c.service_time.mean for c in workload.classes], dtype=np.float64)
    return needs * means / float(workload.num_servers)


def _check_shaping(weight: Any, power: Any, of: Any) -> tuple[float, float, str]:
    for name, value, lo in (("weight", weight, 0.0), ("power", power, 1.0)):
        number = isinstance(value, int | float | np.integer | np.floating) and not isinstance(value, bool)
        if not number or not math.isfinite(value) or value < lo:
            raise ValueError(f"{name}: expected a finite number >= {lo:g}, got {value!r}")
    if of not in LYAPUNOV_FUNCTIONS:
        raise ValueError(f"of: expected one of {', '.join(map(repr, LYAPUNOV_FUNCTIONS))}, got {of!r}")
    return float(weight), float(power), str(of)


def _msj_core(env: Any) -> Any:
    """The MSJ env under ``env``'s wrappers: the current system's env of a
    :class:`~msj_gym.agents.systems_env.SystemsEnv`."""
    inner = env.unwrapped
    inner = getattr(inner, "current", inner)
    return getattr(inner, "unwrapped", inner)


def _mean_service_time(workload: Any) -> float:
    probabilities = np.asarray(workload.probabilities, dtype=np.float64)
    means = np.asarray([c.service_time.mean for c in workload.classes], dtype=np.float64)
    return float(probabilities @ means)


class LyapunovShaping(gym.Wrapper):
    """``reward - weight * (phi(s') - phi(s))`` with ``phi`` of the jobs (``of="jobs"``) or of the work
    (``of="work"``) in the system (see the module docstring; ``weight`` is in the reward's units per
    unit of ``phi``). With ``of="work"`` the work per job is read at every reset, so that a
    :class:`~msj_gym.agents.systems_env.SystemsEnv` gets each episode's system's own."""

    def __init__(self, env: gym.Env, weight: float = 1.0, power: float = 2.0, of: str = "jobs") -> None:
        super().__init__(env)
        self.weight, self.power, self.of = _check_shaping(weight, power, of)
        self._phi = 0.0
        self._work: np.ndarray | None = None

    def reset(self, **kwargs: Any) -> tuple[Any, dict[str, Any]]:
        obs, info = self.env.reset(**kwargs)
        if self.of == "work":
            self._work = work_per_job(_msj_core(self.env).workload)
        self._phi = float(lyapunov(info["jobs_by_class"], self.power, self._work))
        return obs, info

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        obs, reward, terminated, truncated, info = self.env.step(action)
        phi = float(lyapunov(info["jobs_by_class"], self.power, self._work))
        shaped = float(reward) - self.weight * (phi - self._phi)
        self._phi = phi
        return obs, shaped, terminated, truncated, info


class LyapunovShapingVector(VectorWrapper):
    """:class:`LyapunovShaping` for the native vector env, in each of its autoreset modes: in
    ``SameStep`` the drift of an ending episode is taken to its last state
    (``info["final_info"]["jobs_by_class"]``); in ``NextStep`` the step that resets an environment
    pays nothing, as the environment itself; in ``Disabled`` a masked ``reset`` starts the reset
    environments afresh."""

    def __init__(self, env: Any, weight: float = 1.0, power: float = 2.0, of: str = "jobs") -> None:
        super().__init__(env)
        self.weight, self.power, self.of = _check_shaping(weight, power, of)
        # one system: the classes' work per job does not depend on an environment's load
        self._work = work_per_job(env.unwrapped.single_env.workload) if self.of == "work" else None
        self._phi = np.zeros(self.num_envs)
        self._restart = np.zeros(self.num_envs, dtype=bool)

    def reset(self, **kwargs: Any) -> tuple[Any, dict[str, Any]]:
        obs, info = self.env.reset(**kwargs)
        phi = lyapunov(info["jobs_by_class"], self.power, self._work)
        fresh = np.asarray(info.get("_jobs_by_class", np.ones(self.num_envs, dtype=bool)), dtype=bool)
        self._phi[fresh] = phi[fresh]
        self._restart[fresh] = False
        return obs, info

    def step(self, actions: Any) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        obs, rewards, terminated, truncated, info = self.env.step(actions)
        phi = lyapunov(info["jobs_by_class"], self.power, self._work)
        last = phi.copy()  # the state each environment's step ended in
        ended = terminated | truncated
        mode = getattr(self.env, "autoreset_mode", AutoresetMode.NEXT_STEP)
        if mode == AutoresetMode.SAME_STEP and ended.any():
            final = info["final_info"]
            last[ended] = lyapunov(final["jobs_by_class"][ended], self.power, self._work)
        drift = last - self._phi
        drift[self._restart] = 0.0  # a NextStep reset: the new episode's first state, reward 0
        shaped = np.asarray(rewards, dtype=np.float64) - self.weight * drift
        self._phi = phi
        self._restart = ended.copy() if mode == AutoresetMode.NEXT_STEP else np.zeros_like(ended)
        return obs, shaped, terminated, truncated, info


def _scale_of(scale: Any) -> str | float:
    if scale == "service-time":
        return "service-time"
    number = isinstance(scale, int | float | np.integer | np.floating) and not isinstance(scale, bool)
    if not number or not math.isfinite(scale) or scale <= 0:
        raise ValueError(f"scale: expected 'service-time' or a positive finite number, got {scale!r}")
    return float(scale)


class CostScale(gym.Wrapper):
    """Rewards divided by ``scale``: a positive number, or ``"service-time"`` for the current
    system's mean service time over arrivals (read at every reset, so that a
    :class:`~msj_gym.agents.systems_env.SystemsEnv` gets each episode's system's own)."""

    def __init__(self, env: gym.Env, scale: str | float = "service-time") -> None:
        super().__init__(env)
        self.scale = _scale_of(scale)
        self.divisor = 1.0 if self.scale == "service-time" else float(self.scale)

    def reset(self, **kwargs: Any) -> tuple[Any, dict[str, Any]]:
        obs, info = self.env.reset(**kwargs)
        if self.scale == "service-time":
            self.divisor = _mean_service_time(_msj_core(self.env).workload)
        return obs, info

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        obs, reward, terminated, truncated, info = self.env.step(action)
        return obs, float(reward) / self.divisor, terminated, truncated, info


class CostScaleVector(VectorWrapper):
    """:class:`CostScale` for the native vector env (one system: every environment's mean service
    time is the same, whatever its load)."""

    def __init__(self, env: Any, scale: str | float = "service-time") -> None:
        super().__init__(env)
        self.scale = _scale_of(scale)
        if self.scale == "service-time":
            self.divisor = _mean_service_time(env.unwrapped.single_env.workload)
        else:
            self.divisor = float(self.scale)

    def step(self, actions: Any) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        obs, rewards, terminated, truncated, info = self.env.step(actions)
        return obs, np.asarray(rewards, dtype=np.float64) / self.divisor, terminated, truncated, info
