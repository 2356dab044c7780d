"""An MSJ environment that runs each episode on a system drawn from a list: training one agent across
systems with any single-env algorithm (PPO through SB3's vector envs, for one).

The systems share the env's spaces when the observation is the padded class set
(``observation="classes"``): one observation and action space for every system with up to
``max_classes`` classes. Each system's env is made once, on its first episode.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import gymnasium as gym
import numpy as np

if TYPE_CHECKING:
    from msj_gym.core.workload import WorkloadLike

__all__ = ["SystemsEnv"]


class SystemsEnv(gym.Env):
    """``env_id`` on ``systems`` (workloads, scenario names, or dicts of the keywords that make one system of
    the env, e.g. ``{"scenario": "002-sub-linear-halfin-whitt", "num_servers": 100}``): every ``reset`` draws
    one of them uniformly with the env's own generator (seeded by ``reset(seed=...)``), then resets that
    system's env with a seed drawn from the same generator. ``action_masks()`` and ``unwrapped``'s result are
    those of the current system's env."""

    metadata: dict[str, Any] = {"render_modes": []}  # noqa: RUF012 - gymnasium's own attribute

    def __init__(
        self,
        systems: Sequence[WorkloadLike | str | dict[str, Any]],
        env_id: str = "MSJ-v0",
        **env_kwargs: Any,
    ) -> None:
        super().__init__()
        if not systems:
            raise ValueError("systems: expected at least one system, got none")
        self.systems, self.env_id, self.env_kwargs = list(systems), env_id, env_kwargs
        self._envs: dict[int, Any] = {}
        first = self._env(0)
        self.observation_space, self.action_space = first.observation_space, first.action_space
        self.current = first

    def _env(self, i: int) -> Any:
        env = self._envs.get(i)
        if env is None:
            system = self.systems[i]
            own = dict(system) if isinstance(system, dict) else {"scenario": system}
            env = gym.make(self.env_id, **{**self.env_kwargs, **own}).unwrapped
            if self._envs and (
                env.observation_space != self.observation_space or env.action_space != self.action_space
            ):
                raise ValueError(
                    f"systems[{i}]: its spaces differ from the first system's (use observation='classes', "
                    "whose padding gives every system with up to max_classes classes the same spaces)"
                )
            self._envs[i] = env
        return env

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict]:
        super().reset(seed=seed)
        i = int(self.np_random.integers(len(self.systems)))
        self.current = self._env(i)
        obs, info = self.current.reset(seed=int(self.np_random.integers(2**62)), options=options)
        info["system"] = i
        return obs, info

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        return self.current.step(action)

    def action_masks(self) -> np.ndarray:
        return self.current.action_masks()
