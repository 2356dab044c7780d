"""stable-baselines3 ``VecEnv`` over the native batched vector envs (``MSJ-v0``, ``MSJPreemptive-v0``,
``MSJMoldable-v0``), so that PPO and sb3-contrib's MaskablePPO train on ``N`` compiled environments
directly::

    from msj_gym.agents.vec_env import MSJSB3VecEnv
    venv = MSJSB3VecEnv(num_envs=256, scenario="sf-fig2", load=0.7)
    # or MSJSB3VecEnv(256, env_id="MSJMoldable-v0", num_servers=100)
    venv.seed(0)
    model = MaskablePPO("MlpPolicy", venv).learn(100_000)

It follows SB3's ``VecEnv`` contract as ``DummyVecEnv`` over ``make_vec_env`` envs does: ``seed(s)``
seeds environment ``i`` with ``s + i`` at the next ``reset()`` (later episodes draw their seeds from
each environment's generator), a finished episode is reset within the step that ends it with its last
observation in ``info["terminal_observation"]`` and ``info["TimeLimit.truncated"]`` (MSJ episodes are
only ever truncated; the env's end-of-episode infos, e.g. ``mean_response_time``, beside it), and
``info["episode"]`` carries the episode's return and length (``r``, ``l``,
``t``; the return rounded to 6 decimals) as SB3's ``Monitor`` would. ``env_method("action_masks")``
gives the masks MaskablePPO needs. Per-step infos are otherwise empty (the gymnasium vector env's
batched infos are in :attr:`last_infos`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from stable_baselines3.common.vec_env.base_vec_env import VecEnv, VecEnvIndices, VecEnvStepReturn

from msj_gym.env.moldable_vector import MSJMoldableVectorEnv
from msj_gym.env.vector import MSJPreemptiveVectorEnv, MSJVectorEnv

__all__ = ["VECTOR_ENVS", "MSJSB3VecEnv"]

# the concrete classes (NativeVectorEnv itself declares no constructor: each model has its own keywords)
VECTOR_ENVS: dict[str, type[MSJVectorEnv] | type[MSJMoldableVectorEnv]] = {
    "MSJ-v0": MSJVectorEnv,
    "MSJPreemptive-v0": MSJPreemptiveVectorEnv,
    "MSJMoldable-v0": MSJMoldableVectorEnv,
}


class MSJSB3VecEnv(VecEnv):
    """SB3 ``VecEnv`` of ``num_envs`` environments ``env_id`` (a key of :data:`VECTOR_ENVS`;
    ``preemptive=True`` is ``env_id="MSJPreemptive-v0"``); every other keyword goes to the environment
    (see :class:`~msj_gym.env.msj_env.MSJEnv`, :class:`~msj_gym.env.moldable_env.MSJMoldableEnv`).
    ``wrap``: a function that wraps the gymnasium vector env before SB3 sees it (e.g. with
    :class:`~msj_gym.env.wrappers.LyapunovShapingVector`); masks and end-of-episode infos are still
    read from the native env (:attr:`native`)."""

    def __init__(
        self,
        num_envs: int,
        *,
        env_id: str = "MSJ-v0",
        preemptive: bool = False,
        wrap: Callable[[Any], Any] | None = None,
        **env_kwargs: Any,
    ) -> None:
        if env_id not in VECTOR_ENVS:
            raise ValueError(f"env_id: expected one of {sorted(VECTOR_ENVS)}, got {env_id!r}")
        if preemptive:
            if env_id not in ("MSJ-v0", "MSJPreemptive-v0"):
                raise ValueError(f"preemptive: only for the MSJ envs, got env_id={env_id!r}")
            env_id = "MSJPreemptive-v0"
        self.env_id = env_id
        self.native = VECTOR_ENVS[env_id](num_envs, autoreset_mode="SameStep", **env_kwargs)
        # reward wrappers of the gymnasium vector env (msj_gym.env.wrappers) go between it and SB3
        self.venv = self.native if wrap is None else wrap(self.native)
        super().__init__(num_envs, self.native.single_observation_space, self.native.single_action_space)
        self._actions: np.ndarray | None = None
        self._returns = np.zeros(num_envs)
        self._lengths = np.zeros(num_envs, dtype=np.int64)
        self._t0 = time.time()
        self.last_infos: dict[str, Any] = {}

    def reset(self) -> Any:
        seeds = self._seeds if any(s is not None for s in self._seeds) else None
        obs, infos = self.venv.reset(seed=seeds)
        self._reset_seeds()
        self._reset_options()
        self._returns[:] = 0.0
        self._lengths[:] = 0
        self.last_infos = infos
        self.reset_infos = [{} for _ in range(self.num_envs)]
        return obs

    def step_async(self, actions: np.ndarray) -> None:
        self._actions = np.asarray(actions).reshape(self.num_envs)

    def step_wait(self) -> VecEnvStepReturn:
        obs, rewards, terminated, truncated, infos = self.venv.step(self._actions)
        self.last_infos = infos
        dones = terminated | truncated
        self._returns += rewards
        self._lengths += 1
        out: list[dict[str, Any]] = [{} for _ in range(self.num_envs)]
        if dones.any():
            final_obs = infos["final_obs"]
            final = infos["final_info"]
            now = round(time.time() - self._t0, 6)
            for i in np.flatnonzero(dones).tolist():
                out[i] = {
                    "terminal_observation": final_obs[i],
                    "TimeLimit.truncated": bool(truncated[i] and not terminated[i]),
                    "episode": {"r": round(float(self._returns[i]), 6), "l": int(self._lengths[i]), "t": now},
                }
                for key in self.native.final_info_keys:
                    out[i][key] = final[key][i].item()
            self._returns[dones] = 0.0
            self._lengths[dones] = 0
        return obs, rewards.astype(np.float32), dones, out

    def action_masks(self) -> np.ndarray:
        """The masks of every environment, shape ``(num_envs, A)``."""
        return self.native.action_masks()

    def close(self) -> None:
        self.venv.close()

    def _indices(self, indices: VecEnvIndices) -> list[int]:
        return list(self._get_indices(indices))

    def get_attr(self, attr_name: str, indices: VecEnvIndices = None) -> list[Any]:
        """An attribute of the (shared) single-env parameters, once per environment in ``indices``;
        ``action_masks`` gives each environment's mask function."""
        idx = self._indices(indices)
        if attr_name == "action_masks":
            return [self._mask_fn(i) for i in idx]
        value = getattr(self.native.single_env, attr_name)
        return [value for _ in idx]

    def set_attr(self, attr_name: str, value: Any, indices: VecEnvIndices = None) -> None:
        raise AttributeError(
            f"set_attr({attr_name!r}): the environments of MSJSB3VecEnv share their parameters"
        )

    def env_method(
        self, method_name: str, *method_args: Any, indices: VecEnvIndices = None, **method_kwargs: Any
    ) -> list[Any]:
        idx = self._indices(indices)
        if method_name == "action_masks":
            masks = self.native.action_masks()
            return [masks[i] for i in idx]
        raise AttributeError(f"env_method({method_name!r}): MSJSB3VecEnv only serves 'action_masks'")

    def env_is_wrapped(self, wrapper_class: type, indices: VecEnvIndices = None) -> list[bool]:
        return [False for _ in self._indices(indices)]

    def get_images(self) -> Sequence[np.ndarray | None]:
        return [None for _ in range(self.num_envs)]

    def _mask_fn(self, i: int) -> Any:
        return lambda: self.native.action_masks()[i]
