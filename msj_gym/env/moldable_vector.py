"""The native batched vector env of ``MSJMoldable-v0``: ``N`` moldable loss simulators in stacked arrays,
one compiled call per step.

``gym.make_vec("MSJMoldable-v0", num_envs=N)`` builds :class:`MSJMoldableVectorEnv` (its registered
``vector_entry_point``; ``vectorization_mode="sync"`` still gives ``SyncVectorEnv`` of single envs).
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from ..core.jit import entry_point
from ..moldable.batch import allocate_batch, batch_reset, batch_step, batch_worker, state_at
from ..moldable.loss import (
    DONE,
    F_ALL_TIME,
    F_NOW,
    I_ALL_ACCEPTED,
    I_ALL_BLOCKED,
    I_IDLE,
    I_POS,
    PENDING,
    REFILL,
    LossArrivals,
    MoldableResult,
    loss_result,
    overall_estimates,
    run_provenance,
)
from ..moldable.stepping import N_OUT, O_INVALID
from .moldable_env import MSJMoldableEnv, step_reward
from .vector import NativeVectorEnv

__all__ = ["MSJMoldableVectorEnv"]


class MSJMoldableVectorEnv(NativeVectorEnv):
    """``num_envs`` independent ``MSJMoldable-v0`` environments stepped together in compiled code.

    Every keyword of :class:`~msj_gym.env.moldable_env.MSJMoldableEnv` is accepted and means the same
    (``render_mode`` only as ``None``: the vector env does not render); spaces are the single env's,
    batched. The states of all loss simulators live in stacked arrays (:mod:`msj_gym.moldable.batch`)
    and one compiled call steps them all with the single env's own step
    (:func:`msj_gym.moldable.stepping.step`), so that **environment ``i`` reset with seed ``s``
    follows exactly the trajectory of a single ``MSJMoldable-v0`` reset with seed ``s``**
    (observations, rewards, truncations, masks and infos, bit for bit), also across automatic
    resets: ``reset(seed=s)`` seeds environment ``i`` with ``s + i`` (or ``seed[i]``) and later
    episodes draw their seeds from each environment's own generator, as in ``SyncVectorEnv``.

    Autoreset modes, ``action_masks()``, ``sample_actions(rng)``, ``threads`` and ``copy`` are those of
    :class:`~msj_gym.env.vector.MSJVectorEnv`. ``info`` holds per environment what the single env's
    holds: ``time``, ``action_mask``, ``idle``, ``job_class``, ``blocked``, ``accepted``,
    ``invalid_actions``, ``invalid_action``; at an episode's end ``blocking`` and
    ``mean_execution_time``; at a reset ``seed``. :meth:`result` gives an environment's
    :class:`~msj_gym.moldable.MoldableResult`.

    Memory: each environment holds one arrival chunk of ``min(num_arrivals, 32768)`` arrivals (32
    bytes each), the chunk the single env's simulator generates at once (its arrival times are
    chunk-wise cumulative sums, so the chunk size is part of the job stream).
    """

    _single_cls: ClassVar[type[MSJMoldableEnv]] = MSJMoldableEnv
    _label: ClassVar[str] = "MSJMoldable vector env"
    _worker_kernel = batch_worker
    final_info_keys: ClassVar[tuple[str, ...]] = ("blocking", "mean_execution_time")
    _o_invalid: ClassVar[int] = O_INVALID

    def _build(self, proto: Any) -> None:
        self.system = proto.system
        self.num_arrivals, self.warmup = proto.num_arrivals, proto.warmup
        self._max_par = proto._dc
        # A fresh episode's state, from the very simulator setup the single env uses.
        template = proto.make_simulator(0).state
        self._template = template
        n = self.num_envs
        self._b = b = allocate_batch(template, n)
        self._views = [state_at.py_func(b, i) for i in range(n)]  # per env, for Python's refills
        self._obs = np.zeros((n, proto.observation_space.shape[0]), dtype=np.float32)
        self._mask = np.zeros((n, self._n_actions), dtype=np.bool_)
        self._out = np.zeros((n, N_OUT))
        self._status = np.zeros(n, dtype=np.int64)
        self._arrivals: list[LossArrivals | None] = [None] * n
        self._last_time = np.zeros(n)  # the counters at the previous decision, for the rewards
        self._last_blocked = np.zeros(n, dtype=np.int64)
        self._step_fn = entry_point(
            batch_step,
            b,
            self._all,
            self._actions,
            self._max_par,
            self._obs,
            self._mask,
            self._out,
            self._status,
        )
        self._reset_fn = entry_point(batch_reset, b, template, self._all)

    # --------------------------------------------------------------------------------------------
    def _step_envs(self, idx: np.ndarray, actions: np.ndarray) -> None:
        self._step_fn(self._b, idx, actions, *self._worker_tail())

    def _worker_tail(self) -> tuple[Any, ...]:
        return (self._max_par, self._obs, self._mask, self._out, self._status)

    def _run(self, idx: np.ndarray, actions: np.ndarray) -> None:
        """One compiled step of the environments ``idx``, then refill the arrival chunks of those that
        ran out and resume them, until each is at a decision or its episode is over."""
        self._step_batch(idx, actions)
        status = self._status
        while True:
            # PENDING is 0: a decision is due
            pending = np.flatnonzero(status) if idx is self._all else idx[status[idx] != PENDING]
            if pending.size == 0:
                return
            codes = status[pending]
            done = pending[codes == DONE]
            if done.size:
                status[done] = PENDING
                self._over[done] = True
            idx = pending[codes == REFILL]
            for i in idx.tolist():
                self._arrivals[i].fill(self._views[i])
            if idx.size:
                self._step_envs(idx, self._no_action)

    def _start_envs(self, idx: np.ndarray) -> None:
        for i in idx.tolist():
            self._arrivals[i] = LossArrivals(self.system, int(self._seeds[i]), self.num_arrivals)
        self._reset_fn(self._b, self._template, idx)
        self._last_time[idx] = 0.0
        self._last_blocked[idx] = 0
        for i in idx.tolist():
            self._arrivals[i].fill(self._views[i])

    def _rewards(self, restart: np.ndarray) -> np.ndarray:
        time_sum = self._b.fv[:, F_ALL_TIME].copy()
        blocked = self._b.iv[:, I_ALL_BLOCKED].copy()
        rewards = step_reward(self.single_env, time_sum, blocked, self._last_time, self._last_blocked)
        self._last_time, self._last_blocked = time_sum, blocked
        # the environments reset by this step start from zero, as the single env after reset()
        rewards[restart] = 0.0
        self._last_time[restart] = 0.0
        self._last_blocked[restart] = 0
        return rewards

    def _env_infos(self) -> dict[str, np.ndarray]:
        b = self._b
        pos = np.minimum(b.iv[:, I_POS], b.ac.shape[1] - 1)  # past the chunk only once over
        job_class = np.where(self._over, -1, b.ac[self._all, pos])
        return {
            "time": b.fv[:, F_NOW].copy(),
            "action_mask": self._mask.copy(),
            "idle": b.iv[:, I_IDLE].copy(),
            "job_class": job_class,
            "blocked": b.iv[:, I_ALL_BLOCKED].copy(),
            "accepted": b.iv[:, I_ALL_ACCEPTED].copy(),
            "invalid_actions": self._invalid.copy(),
            "invalid_action": self._out[:, O_INVALID] > 0,
        }

    def _ended_infos(self, ended: np.ndarray, present: np.ndarray) -> dict[str, np.ndarray]:
        n = self.num_envs
        blocking = np.zeros(n)
        execution = np.zeros(n)
        for i in ended.tolist():
            pb, et = overall_estimates(self._views[i])
            blocking[i], execution[i] = pb.mean, et.mean
        return {"blocking": blocking, "mean_execution_time": execution}

    # --------------------------------------------------------------------------------------------
    def result(self, i: int) -> MoldableResult:
        """The simulator's metrics for environment ``i``'s current episode (final once it is over),
        as the single env's :meth:`~msj_gym.env.moldable_env.MSJMoldableEnv.result`."""
        if not self._started[i]:
            raise RuntimeError(f"{self._label}: call reset() first")
        provenance = run_provenance(self.system, None, int(self._seeds[i]), self.num_arrivals, self.warmup)
        return loss_result(self._views[i], self.system, provenance)

    def close_extras(self, **kwargs: Any) -> None:
        self._arrivals = [None] * len(getattr(self, "_arrivals", ()))  # () where construction failed
        super().close_extras(**kwargs)
