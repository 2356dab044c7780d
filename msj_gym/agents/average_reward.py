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
"""

from __future__ import annotations

from typing import Any

import numpy as np
from stable_baselines3.common.vec_env import VecEnvWrapper

__all__ = ["DifferentialReward"]


class DifferentialReward(VecEnvWrapper):
    """``r - g * dt`` with ``g`` the running average reward per unit time; ``dt`` is each step's
    ``elapsed_time`` (from the native vector env's batched infos, or each env's info dict)."""

    def __init__(self, venv: Any, *, scale: float = 1.0, decay: float = 1e-3) -> None:
        super().__init__(venv)
        if not scale > 0:
            raise ValueError(f"scale: expected a positive number, got {scale!r}")
        self.scale = float(scale)
        self.decay = float(decay)
        self._reward_sum = 0.0
        self._time_sum = 0.0

    @property
    def rate(self) -> float:
        """The current estimate of the average reward per unit time (``-E[N]``)."""
        return self._reward_sum / self._time_sum if self._time_sum > 0 else 0.0

    def reset(self) -> Any:
        return self.venv.reset()

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
        self._reward_sum = keep * self._reward_sum + float(raw.sum())
        self._time_sum = keep * self._time_sum + float(dt.sum())
        shaped = (raw - self.rate * dt) / self.scale
        return obs, shaped.astype(np.float32), dones, infos
