"""Differential (average-cost) rewards for stable-baselines3 on the MSJ environments.

The environments' reward is minus the time integral of the number of jobs in the system between two
decisions (``reward="integral"``), so the long-run objective is the *rate* ``-E[N]`` per unit time,
not a discounted sum per decision: a discount per decision that is shorter than the queue's mixing
time teaches an agent to push work into the future. :class:`DifferentialReward` turns each reward into
its differential form ``r - g * elapsed_time``, where ``g`` is a running estimate of the average
reward per unit time (over all environments, an exponential average of ``sum r / sum elapsed``).
With it PPO's value function learns relative values (bounded), and a discount near 1 no longer
biases the policy towards myopic starts. Rewards are also divided by ``scale`` (e.g. the mean number
of jobs of a heuristic), so that value targets are of order one.

This is the average-cost setup of Dai & Gluzman ("Queueing network controls via deep reinforcement
learning", Stochastic Systems 2022, Sec. 3-4): PPO on relative values, a discount close to 1 only
as a variance control, long rollouts. (Their approximating-martingale-process control variate needs
the transition law of the network, which a Gymnasium env does not expose; the Lyapunov shaping of
:mod:`msj_gym.env.wrappers` takes its place here as the cheap, model-free part: a potential whose
drift is paid at once.)

Across systems (``per_system=True``, for envs that draw a system per episode and say which in their
reset info, :class:`~msj_gym.agents.systems_env.SystemsEnv`), each system has its own rate: the
average cost per unit time differs by orders of magnitude between a system of 8 servers and one of
256, and one rate for all would make every step of the small systems look good.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from stable_baselines3.common.vec_env import VecEnvWrapper

__all__ = ["DifferentialReward"]


class DifferentialReward(VecEnvWrapper):
    """``r - g * dt`` with ``g`` the running average reward per unit time; ``dt`` is each step's
    ``elapsed_time`` (from the native vector env's batched infos, or each env's info dict)."""

    def __init__(
        self, venv: Any, *, scale: float = 1.0, decay: float = 1e-3, per_system: bool = False
    ) -> None:
        super().__init__(venv)
        if not scale > 0:
            raise ValueError(f"scale: expected a positive number, got {scale!r}")
        self.scale = float(scale)
        self.decay = float(decay)
        self.per_system = bool(per_system)
        self._reward_sum = 0.0
        self._time_sum = 0.0
        # per_system: (reward sum, time sum) per system, and the system each env runs
        self._sums: dict[int, np.ndarray] = {}
        self._system = np.zeros(self.num_envs, dtype=np.int64)

    @property
    def rate(self) -> float:
        """The current estimate of the average reward per unit time (``-E[N]``; across systems, that of
        the systems' pooled sums)."""
        if self.per_system and self._sums:
            total = np.sum(list(self._sums.values()), axis=0)
            return float(total[0] / total[1]) if total[1] > 0 else 0.0
        return self._reward_sum / self._time_sum if self._time_sum > 0 else 0.0

    def reset(self) -> Any:
        obs = self.venv.reset()
        if self.per_system:
            for i in range(self.num_envs):
                self._system[i] = self._system_of(i)
        return obs

    def _system_of(self, i: int) -> int:
        base = self.unwrapped  # the innermost VecEnv: a wrapper's own reset_infos are empty
        info = base.reset_infos[i] if getattr(base, "reset_infos", None) else {}
        if "system" not in info:
            raise ValueError("per_system: the env's reset info has no 'system' (use SystemsEnv)")
        return int(info["system"])

    def _elapsed(self, infos: list[dict[str, Any]]) -> np.ndarray:
        batched = getattr(self.venv, "last_infos", None)
        if isinstance(batched, dict) and "elapsed_time" in batched:
            dt = np.asarray(batched["elapsed_time"], dtype=np.float64).copy()
            final = batched.get("final_info")
            if isinstance(final, dict) and "elapsed_time" in final:
                done = np.asarray(batched.get("_final_info", np.zeros(dt.size, bool)))
                dt[done] = np.asarray(final["elapsed_time"], dtype=np.float64)[done]
            return dt
        return np.array([float(info.get("elapsed_time", 0.0)) for info in infos])

    def step_wait(self) -> Any:
        obs, rewards, dones, infos = self.venv.step_wait()
        raw = np.asarray(rewards, dtype=np.float64)
        dt = self._elapsed(infos)
        # exponential forgetting: the estimate follows the policy as it improves
        keep = 1.0 - self.decay
        if not self.per_system:
            self._reward_sum = keep * self._reward_sum + float(raw.sum())
            self._time_sum = keep * self._time_sum + float(dt.sum())
            shaped = (raw - self.rate * dt) / self.scale
            return obs, shaped.astype(np.float32), dones, infos
        rates = np.zeros(self.num_envs)
        for i in range(self.num_envs):
            sums = self._sums.setdefault(int(self._system[i]), np.zeros(2))
            sums *= keep
            sums += (raw[i], dt[i])
            rates[i] = float(sums[0] / sums[1]) if sums[1] > 0 else 0.0
        shaped = (raw - rates * dt) / self.scale
        for j in np.flatnonzero(dones).tolist():  # the next episode's system (SB3 reset it in this step)
            self._system[j] = self._system_of(j)
        return obs, shaped.astype(np.float32), dones, infos
