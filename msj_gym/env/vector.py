"""Native batched vector environments: ``N`` MSJ simulators in stacked arrays, one compiled call per step.

``gym.make_vec("MSJ-v0", num_envs=N)`` builds :class:`MSJVectorEnv` (its registered
``vector_entry_point``; ``vectorization_mode="sync"`` still gives ``SyncVectorEnv`` of single envs).
:class:`NativeVectorEnv` is the Gymnasium side they share with the moldable one
(:class:`~msj_gym.env.moldable_vector.MSJMoldableVectorEnv`).
"""

from __future__ import annotations

import itertools
import math
import weakref
from collections.abc import Callable, Sequence
from typing import Any, ClassVar

import numpy as np
from gymnasium.utils import seeding
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from ..core import state as S
from ..core.feed import ArrivalError, ArrivalFeed
from ..core.jit import entry_point
from ..core.simulator import SimulationError, unfinished_jobs, with_unfinished
from ..metrics.result import SimulationResult, assess_stability
from ..native import spin
from ..workloads import TraceWorkload, Workload
from .advising import Advice, RowCore, apply_words, run_warm_start
from .batch import (
    allocate_batch,
    batch_reset,
    batch_step,
    batch_worker,
    grow_batch_slots,
    load_row,
    sample_masked,
    sim_at,
)
from .checks import positive_int as _positive_int
from .episode import DEFAULT_SCENARIO as _DEFAULT_SCENARIO
from .episode import ended_result
from .layout import EP_ADVISE
from .msj_env import MSJEnv, MSJPreemptiveEnv
from .stepping import EP_EVERY_EVENT, N_OUT, O_ELAPSED, O_INVALID, O_REWARD, OBSERVE_ONLY

__all__ = ["MSJPreemptiveVectorEnv", "MSJVectorEnv", "NativeVectorEnv"]

_MAX_RING = 1 << 13  # arrivals held per env: a default episode's whole stream, refilled for longer ones
# Job slots per env at the start (all envs double together when one needs more): a small state per env
# keeps a batched step's memory traffic low (sf-fig2, N=256: 236 -> 142 us per compiled batch step).
_BATCH_SLOTS = 64
# The most environments one vector env steps: each holds a state of tens of kilobytes, and 2**31 of them
# would ask for hundreds of gigabytes before the first step (many more are many vector envs' work).
MAX_ENVS = 1 << 16

LoadSampler = Callable[[np.random.Generator], float]


def _check_load(value: Any, where: str = "") -> float:
    """``value`` as a load: a positive finite real number, else a ``ValueError`` naming ``load``."""
    ok = isinstance(value, int | float | np.integer | np.floating) and not isinstance(value, bool | np.bool_)
    if not ok or not math.isfinite(value) or value <= 0:
        raise ValueError(f"load: expected a positive finite number{where}, got {value!r}")
    return float(value)


def _per_env_loads(load: Any, num_envs: int) -> tuple[list[float] | None, LoadSampler | None]:
    """``(loads, sampler)`` from the ``load`` keyword: a list of ``num_envs`` loads, a sampler, or
    ``(None, None)`` for one load (or none) for every env, which the single env checks."""
    if load is None or isinstance(load, int | float | np.integer | np.floating | bool | np.bool_):
        return None, None
    if callable(load):
        return None, load
    if isinstance(load, np.ndarray) and load.ndim == 1:
        load = load.tolist()
    if not isinstance(load, Sequence) or isinstance(load, str | bytes):
        raise ValueError(
            f"load: expected a number, a sequence of num_envs={num_envs} numbers or a callable "
            f"rng -> load, got {load!r}"
        )
    if len(load) != num_envs:
        raise ValueError(f"load: expected num_envs={num_envs} loads (one per env), got {len(load)}: {load!r}")
    return [_check_load(x, f" for env {i}") for i, x in enumerate(load)], None


class NativeVectorEnv(VectorEnv):
    """What the native batched vector envs share: the keyword checks, per-environment seeds as in
    ``SyncVectorEnv``, Gymnasium 1.x autoreset, batched masks and masked random actions, and the split
    of a step over threads. A subclass holds the batched state and its compiled step and implements
    the hooks: ``_start_envs`` (fresh episodes), ``_step_envs`` (one compiled step of some
    environments), ``_run`` (a step, serving what the simulators ask of Python), ``_rewards``,
    ``_env_infos`` and ``_ended_infos`` (the infos' values; the base adds their masks); it keeps
    per-environment ``_obs``, ``_mask`` and ``_out`` arrays (``_out[:, _o_invalid]``: the step's
    action was masked)."""

    # gymnasium's VectorEnv declares metadata an instance attribute (set per instance, as wrappers do)
    metadata: dict[str, Any] = {"render_modes": [], "autoreset_mode": AutoresetMode.NEXT_STEP}  # noqa: RUF012
    _single_cls: ClassVar[type[Any]]
    _label: ClassVar[str] = "vector env"  # in error messages
    _worker_kernel: Any = None  # the compiled polling loop of a worker thread (set per instance: its modes)
    final_info_keys: ClassVar[tuple[str, ...]] = ()  # what the single env adds to an episode's last info
    _o_invalid: ClassVar[int]
    # Each step writes every environment's observation into a new array, handed out as it is, instead
    # of writing one buffer and copying it (a subclass that implements _swap_obs sets it)
    _fresh_obs: bool = False
    _obs: np.ndarray
    _mask: np.ndarray
    _out: np.ndarray
    _b: Any  # the batched state, allocated by the subclass: each model has its own state tuple

    def __init__(
        self,
        num_envs: int = 1,
        *,
        autoreset_mode: str | AutoresetMode = AutoresetMode.NEXT_STEP,
        copy: bool = True,
        threads: int = 1,
        **env_kwargs: Any,
    ) -> None:
        # The single env checks the keywords and gives the spaces, parameters and episode setup.
        self._build(self._setup(num_envs, autoreset_mode, copy, threads, env_kwargs))

    def _setup(
        self, num_envs: int, autoreset_mode: str | AutoresetMode, copy: bool, threads: int, env_kwargs: dict
    ) -> Any:
        """Check the vector keywords, build the single env (which checks the others) and the state that
        does not depend on the simulator. Returns the single env."""
        self.num_envs = _positive_int("num_envs", num_envs, maximum=MAX_ENVS)
        self.threads = _positive_int("threads", threads)
        try:
            self.autoreset_mode = AutoresetMode(autoreset_mode)
        except ValueError:
            modes = [m.value for m in AutoresetMode]
            raise ValueError(f"autoreset_mode: expected one of {modes}, got {autoreset_mode!r}") from None
        if env_kwargs.get("render_mode") not in (None, "rgb_array", "human", "rgb_array_list"):
            raise ValueError(
                f"render_mode: the vector env does not render, got {env_kwargs['render_mode']!r}"
            )
        env_kwargs.pop("render_mode", None)
        self.copy = bool(copy)
        proto = self.single_env = self._make_single(env_kwargs)
        self.env_kwargs = dict(env_kwargs)
        self.metadata = {"render_modes": [], "autoreset_mode": self.autoreset_mode}
        self.render_mode = None
        self.single_observation_space = proto.observation_space
        self.single_action_space = proto.action_space
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        self._n_actions = int(proto.action_space.n)
        n = self.num_envs
        self._actions = np.zeros(n, dtype=np.int64)
        self._no_action = np.full(n, -1, dtype=np.int64)
        self._all = np.arange(n, dtype=np.int64)
        self._np_randoms: list[np.random.Generator | None] = [None] * n
        self._seeds = np.full(n, -1, dtype=np.int64)
        self._over = np.ones(n, dtype=np.bool_)
        self._started = np.zeros(n, dtype=np.bool_)
        self._invalid = np.zeros(n, dtype=np.int64)
        self._autoreset = np.zeros(n, dtype=np.bool_)
        self._ready = False  # every env has been reset once
        self._sample_fn: Any = None
        self._pool: spin.WorkerPool | None = None  # the worker threads, once started
        if self.threads > 1:
            bounds = np.linspace(0, n, self.threads + 1).astype(np.int64)
            self._chunks = [self._all[lo:hi] for lo, hi in itertools.pairwise(bounds)]
        return proto

    # --- hooks ----------------------------------------------------------------------------------
    def _build(self, proto: Any) -> None:
        """The batched state and the compiled steps, from the single env ``proto`` of the keywords."""
        raise NotImplementedError

    def _make_single(self, env_kwargs: dict[str, Any]) -> Any:
        """The single env of these keywords (it checks them)."""
        return self._single_cls(**env_kwargs)

    def _start_envs(self, idx: np.ndarray) -> None:
        """Fresh episodes (job streams seeded by ``self._seeds``) for the environments ``idx``, not
        yet advanced."""
        raise NotImplementedError

    def _step_envs(self, idx: np.ndarray, actions: np.ndarray) -> None:
        """One compiled step of the environments ``idx`` (no request served)."""
        raise NotImplementedError

    def _worker_tail(self) -> tuple[Any, ...]:
        """The arguments of ``_worker_kernel`` after ``(ctl, w, state, envs, actions)``."""
        raise NotImplementedError

    def _run(self, idx: np.ndarray, actions: np.ndarray) -> None:
        """A step of the environments ``idx``, serving their requests until each is at a decision or
        its episode is over (then ``_over`` is set)."""
        raise NotImplementedError

    def _swap_obs(self, started: np.ndarray | None) -> None:
        """With ``_fresh_obs``: a new observation array for the compiled step to write, holding the
        current observations of the environments ``started`` (``None``: every row is written next)."""
        raise NotImplementedError

    def _rewards(self, restart: np.ndarray) -> np.ndarray:
        """The step's rewards (0 for the environments ``restart`` that this step reset)."""
        raise NotImplementedError

    def _env_infos(self) -> dict[str, np.ndarray]:
        """Every environment's step infos, by key (one row per environment)."""
        raise NotImplementedError

    def _step_infos(self, idx: np.ndarray | None) -> dict[str, Any]:
        """The infos of every environment (``idx``: of those only, as after a masked reset), each key
        with its ``_key`` mask."""
        n = self.num_envs
        if idx is None:
            present = np.ones(n, dtype=np.bool_)
        else:
            present = np.zeros(n, dtype=np.bool_)
            present[idx] = True
        infos: dict[str, Any] = self._env_infos()
        for key in list(infos):
            if idx is not None:
                infos[key][~present] = 0  # as SyncVectorEnv: only the reset envs' infos
            infos["_" + key] = present  # one mask shared by the keys
        return infos

    def _ended_infos(self, ended: np.ndarray, present: np.ndarray) -> dict[str, np.ndarray]:
        """The values the single env adds at an episode's end, by key, for the environments ``ended``
        (``present``: their mask)."""
        raise NotImplementedError

    def _final_infos(self, ended: np.ndarray) -> dict[str, Any]:
        """The infos the single env adds at an episode's end, for the environments ``ended``, each key
        with its ``_key`` mask."""
        present = np.zeros(self.num_envs, dtype=np.bool_)
        present[ended] = True
        infos: dict[str, Any] = {}
        for i, (key, value) in enumerate(self._ended_infos(ended, present).items()):
            infos[key] = value
            infos["_" + key] = present if i == 0 else present.copy()
        return infos

    # --------------------------------------------------------------------------------------------
    def _step_batch(self, idx: np.ndarray, actions: np.ndarray) -> None:
        """``_step_envs``, split over the threads when every environment steps with the step's actions:
        polling worker threads (:mod:`msj_gym.native.spin`) step their chunks meanwhile."""
        if self.threads > 1 and idx is self._all and actions is self._actions:
            if self._pool is None:
                self._start_workers()
            assert self._pool is not None
            self._pool.run(lambda: self._step_envs(self._chunks[0], actions))
        else:
            self._step_envs(idx, actions)

    def _start_workers(self) -> None:
        """One thread per chunk but the first, over the current state arrays (the pool is stopped by
        :meth:`_stop_workers` whenever those are replaced, and started again at the next step)."""
        tail = self._worker_tail()
        args = [(self._b, chunk, self._actions, *tail) for chunk in self._chunks[1:]]
        ctl = np.zeros(spin.CTL_WIDTH * len(args), dtype=np.int64)
        kernel = entry_point(self._worker_kernel, ctl, 0, *args[0])
        self._pool = pool = spin.WorkerPool(kernel, args)
        self._worker_finalizer = weakref.finalize(self, pool.stop)

    def _stop_workers(self) -> None:
        # also from gymnasium's __del__ on an env whose construction failed (a bad keyword): no pool yet
        if getattr(self, "_pool", None) is not None:
            self._worker_finalizer()
            self._pool = None

    def _start_episodes(
        self, idx: np.ndarray, seeds: list[int | None], advance: bool = True
    ) -> dict[str, Any]:
        """Fresh episodes for the environments ``idx`` (``None``: draw the episode's seed from the
        environment's generator, as the single env does), advanced to their first decision (with
        ``advance=False`` the caller advances them, by stepping them with action -1)."""
        for i, seed in zip(idx.tolist(), seeds, strict=True):
            if seed is not None:
                self._np_randoms[i], _ = seeding.np_random(seed)
                run_seed = int(seed)
            else:
                if self._np_randoms[i] is None:
                    self._np_randoms[i], _ = seeding.np_random()
                run_seed = int(self._np_randoms[i].integers(2**63 - 1))
            self._seeds[i] = run_seed
        self._start_envs(idx)
        self._over[idx] = False
        self._started[idx] = True
        self._invalid[idx] = 0
        self._autoreset[idx] = False
        if advance:
            self._out[idx] = 0.0
            self._run(idx, self._no_action)
        seeds_out = np.zeros(self.num_envs, dtype=np.int64)
        seeds_out[idx] = self._seeds[idx]
        mask = np.zeros(self.num_envs, dtype=np.bool_)
        mask[idx] = True
        return {"seed": seeds_out, "_seed": mask}

    # --------------------------------------------------------------------------------------------
    def reset(
        self, *, seed: int | list[int | None] | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        """Reset every environment (or those of ``options["reset_mask"]``). ``seed``: ``None``, an int
        ``s`` (environment ``i`` gets ``s + i``) or a list of ``num_envs`` ints or ``None``."""
        n = self.num_envs
        if seed is None:
            seeds: list[int | None] = [None] * n
        elif isinstance(seed, int | np.integer) and not isinstance(seed, bool):
            seeds = [int(seed) + i for i in range(n)]
        elif isinstance(seed, list | tuple) and len(seed) == n:
            seeds = list(seed)
        else:
            raise ValueError(f"seed: expected None, an integer or a list of {n} seeds, got {seed!r}")
        for s in seeds:
            if s is not None and (isinstance(s, bool) or not isinstance(s, int | np.integer) or s < 0):
                raise ValueError(f"seed: expected non-negative integers or None, got {s!r}")
            if s is not None and s >= 2**63:  # each environment's seed is kept as an int64
                what = f"{seed!r} + {n - 1} (one seed per environment)" if isinstance(seed, int) else repr(s)
                raise ValueError(f"seed {what}: expected seeds below 2**63")
        options = dict(options or {})
        reset_mask = options.pop("reset_mask", None)
        if options:
            raise ValueError(
                f"options: the {self._label} takes no reset option but reset_mask, got {sorted(options)}"
            )
        if reset_mask is None:
            idx = self._all
        else:
            reset_mask = np.asarray(reset_mask)
            if reset_mask.shape != (n,) or reset_mask.dtype != np.bool_ or not reset_mask.any():
                raise ValueError(
                    f"options['reset_mask']: expected a boolean array of shape ({n},) with a True entry, "
                    f"got {reset_mask!r}"
                )
            idx = np.flatnonzero(reset_mask).astype(np.int64)
        if self._fresh_obs:
            # the observations handed out before stay the caller's: the others' rows are observed again
            self._swap_obs(None if reset_mask is None else np.flatnonzero(self._started & ~reset_mask))
        infos = self._start_episodes(idx, [seeds[i] for i in idx.tolist()])
        infos.update(self._step_infos(idx if reset_mask is not None else None))
        return self._observation(), infos

    def step(self, actions: Any) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        a = self._check_actions(actions)
        if not self._ready:
            if not self._started.all():
                raise RuntimeError(f"{self._label}: call reset() first")
            self._ready = True
        mode = self.autoreset_mode
        infos: dict[str, Any] = {}
        restart = np.empty(0, dtype=np.int64)
        if mode == AutoresetMode.NEXT_STEP and self._autoreset.any():
            restart = np.flatnonzero(self._autoreset).astype(np.int64)
            a = a.copy()
            a[restart] = -1
        elif self._over.any():
            raise RuntimeError(
                f"{self._label}: the episodes of envs {np.flatnonzero(self._over).tolist()} are over; "
                "reset them first (autoreset_mode='Disabled')"
            )
        np.copyto(self._actions, a)
        self._out.fill(0.0)
        if self._fresh_obs:
            self._swap_obs(None)  # the step writes every environment's observation
        if restart.size:
            # new episodes, advanced to their first decision by this very step (action -1)
            infos = self._start_episodes(restart, [None] * restart.size, advance=False)
        self._run(self._all, self._actions)
        rewards = self._rewards(restart)
        self._invalid += self._out[:, self._o_invalid] > 0
        truncations = self._over.copy()
        terminations = np.zeros(self.num_envs, dtype=np.bool_)
        infos.update(self._step_infos(None))
        ended = np.flatnonzero(truncations) if truncations.any() else self._all[:0]
        if ended.size:
            infos.update(self._final_infos(ended))
        if mode == AutoresetMode.NEXT_STEP:
            self._autoreset = truncations.copy()
        elif mode == AutoresetMode.SAME_STEP and ended.size:
            final_obs = np.full(self.num_envs, None, dtype=object)
            flat = self._observation(force_copy=True)
            for i in ended.tolist():
                final_obs[i] = flat[i] if not isinstance(flat, dict) else {k: v[i] for k, v in flat.items()}
            final_info: dict[str, Any] = {}  # the ended envs' last infos, as SyncVectorEnv gathers them
            for key, value in infos.items():
                if not key.startswith("_"):
                    final_info[key] = np.zeros_like(value)
                    final_info[key][ended] = value[ended]
                    final_info["_" + key] = truncations.copy()
            idx = ended.astype(np.int64)
            reset_info = self._start_episodes(idx, [None] * idx.size)
            infos = self._step_infos(None)
            infos.update(reset_info)
            infos["final_obs"] = final_obs
            infos["_final_obs"] = truncations.copy()
            infos["final_info"] = final_info
            infos["_final_info"] = truncations.copy()
        return self._observation(), rewards, terminations, truncations, infos

    def _check_actions(self, actions: Any) -> np.ndarray:
        n, m = self.num_envs, self._n_actions
        a = np.asarray(actions)
        if a.shape != (n,) or not np.issubdtype(a.dtype, np.integer):
            raise ValueError(
                f"actions: expected an integer array of shape ({n},) in [0, {m}), got shape {a.shape} "
                f"and dtype {a.dtype}"
            )
        # int64 (what sample_actions and most agents give): one pass, a negative action read as huge
        if a.dtype == np.int64:
            out_of_range = n and a.view(np.uint64).max() >= m
        else:
            out_of_range = n and (a.min() < 0 or a.max() >= m)
        if out_of_range:
            bad = int(np.flatnonzero((a < 0) | (a >= m))[0])
            raise ValueError(
                f"actions: expected integers in [0, {m}) (Discrete({m})), got {a[bad]} for env {bad}"
            )
        return a.astype(np.int64, copy=False)

    def _observation(self, force_copy: bool = False) -> Any:
        # a fresh array is the caller's as it is: the next step or reset writes another one
        return self._obs.copy() if (self.copy and not self._fresh_obs) or force_copy else self._obs

    # --------------------------------------------------------------------------------------------
    def action_masks(self) -> np.ndarray:
        """Valid actions of every environment's current decision, shape ``(num_envs, A)``."""
        return self._mask.copy()

    def sample_actions(self, rng: np.random.Generator) -> np.ndarray:
        """A uniformly random valid action per environment (compiled; one uniform per environment from
        ``rng``). An environment with no valid action gets 0 (wait)."""
        actions = np.empty(self.num_envs, dtype=np.int64)
        if self._sample_fn is None:
            self._sample_fn = entry_point(sample_masked, self._mask, np.zeros(self.num_envs), actions)
        self._sample_fn(self._mask, rng.random(self.num_envs), actions)
        np.maximum(actions, 0, out=actions)
        return actions

    def close_extras(self, **kwargs: Any) -> None:
        self._stop_workers()


class MSJVectorEnv(NativeVectorEnv):
    """``num_envs`` independent ``MSJ-v0`` environments stepped together in compiled code.

    Every keyword of :class:`~msj_gym.env.msj_env.MSJEnv` is accepted and means the same, every
    observation and action mode included (``warm_start`` and ``advisor`` run their policy from Python on
    the env's row of the stacked state, :mod:`msj_gym.env.advising`); spaces are the single env's, batched
    (``Box(0, 1, (N, D))``, ``MultiDiscrete([A] * N)``). The states of all environments live in stacked
    arrays (:mod:`msj_gym.env.batch`) and one compiled call steps them all with the single env's own step
    function, so that **environment ``i`` reset with seed ``s`` follows exactly the trajectory of a single
    ``MSJ-v0`` reset with seed ``s``** (observations, rewards, truncations, masks and infos, bit for bit),
    also across automatic resets: like ``SyncVectorEnv``, ``reset(seed=s)`` seeds environment ``i`` with
    ``s + i`` (or ``seed[i]`` for a list) and each later episode draws its seed from that environment's
    own generator, as the single env does.

    Autoreset (Gymnasium 1.x, ``metadata["autoreset_mode"]``): ``autoreset_mode="NextStep"`` (the
    default, as ``SyncVectorEnv``): the step after an environment's episode ends resets it, ignoring
    its action, and returns the first observation of the new episode with reward 0 and both flags
    False. ``"SameStep"``: the environment is reset within the step that ends its episode; the final
    observation and info are in ``info["final_obs"]`` (object array) and ``info["final_info"]``.
    ``"Disabled"``: reset ended environments with ``reset(options={"reset_mask": mask})``.

    Episodes are only ever truncated (see the single env). ``info`` holds, per environment (with the
    usual ``_key`` masks), what the single env's info holds: ``time``, ``elapsed_time``,
    ``action_mask``, ``jobs_in_system``, ``jobs_by_class``, ``invalid_action``, ``invalid_actions``;
    at an episode's end
    ``stalled``, ``mean_response_time``, ``stable`` and ``measured_jobs``; at a reset ``seed``.
    :meth:`action_masks` gives the masks as one ``(N, A)`` array, :meth:`sample_actions` a masked
    uniform random action per environment (compiled), :meth:`result` an environment's
    :class:`~msj_gym.SimulationResult`.

    **Per-env loads** (training one agent across loads): ``load`` may also be

    * a sequence of ``num_envs`` loads: environment ``i`` always runs at ``load[i]``, and is bit for
      bit the single ``MSJ-v0`` made with ``load=load[i]`` (same seeds, across autoresets);
    * a sampler, a callable ``rng -> load``: at every episode start (``reset`` or autoreset) environment
      ``i`` calls it with its own ``numpy.random.Generator`` (the one ``reset(seed=...)`` seeds),
      after the episode's job-stream seed is taken from that generator, e.g.
      ``load=lambda rng: rng.uniform(0.5, 0.95)`` for domain randomisation. A seed thus fixes every
      episode's load, and each episode is bit for bit the single env made with its load and reset with
      its ``info["seed"]``. The sampler is also called once at construction with a throwaway generator
      (``default_rng(0)``), to check what it returns and to build the spaces.

    There is no ``(low, high)`` form: with ``num_envs=2`` it would read as two fixed loads. The load
    sets the workload's arrival rate; the spaces do not depend on it, and what does (the job stream,
    the reward scale of ``reward="mean"`` with a ``horizon``, the arrival cap of a ``horizon``
    episode, the stability verdict) is per environment. :attr:`loads` holds each environment's
    current load, :attr:`workloads` its workload (``workload`` and ``single_env`` are the prototype's:
    at the first listed load, or the sampler's check draw). A per-env load excludes
    ``arrival_rate``. Bad loads raise a ``ValueError`` naming ``load``: at construction, or for a
    sampler's draw at the reset, before any environment starts its episode.

    ``copy=False`` returns the internal observation buffer (overwritten by the next step) instead of
    a copy.
    """

    _single_cls: ClassVar[type[MSJEnv]] = MSJEnv
    _label: ClassVar[str] = "MSJ vector env"
    final_info_keys: ClassVar[tuple[str, ...]] = ("stalled", "mean_response_time", "stable", "measured_jobs")
    _o_invalid: ClassVar[int] = O_INVALID

    def _build(self, proto: Any) -> None:
        n = self.num_envs
        loads = self._loads_given
        self.workload = proto.workload
        self._ep = proto._ep
        self._worker_kernel = batch_worker(self._ep)  # the step of this env's modes

        # A fresh episode's state, from the very simulator setup the single env uses.
        self._core = core = proto.make_simulator(0, slots=_BATCH_SLOTS)
        template = core.sim
        template.iv[S.I_NGEN] = 0
        template.iv[S.I_EXHAUSTED] = 0
        self._template = template

        # What depends on the load, per env (rows set at construction for fixed loads, at every
        # episode start for a sampler): workload, kernel parameters, reward scale, arrival cap.
        self._scenario_source: Any = None
        self._workloads: list[Any] = [proto.workload] * n
        self._loads = np.full(n, float(proto.workload.load))
        self._fpar = np.tile(proto._fpar, (n, 1))
        self._reward_scale = np.full(n, proto._reward_scale)
        self._max_arrivals = np.full(n, core.max_arrivals, dtype=np.int64)
        if loads is not None:
            params = {x: self._load_parameters(x) for x in loads}  # once per distinct load
            for i, x in enumerate(loads):
                self._set_load(i, x, params[x])
        # The arrival ring is shared in shape; its size only sets how often a stream is refilled
        # (the stream does not depend on the chunk sizes), so fit it to the largest cap known.
        cap = int(self._max_arrivals.max())
        ring = 1 << max(int(cap - 1).bit_length(), 6)
        self._ring = min(ring, _MAX_RING, core.sim.ring_t.size)
        self._b = allocate_batch(template, n, self._ring)

        dim = proto._obs.size
        self._obs = np.zeros((n, dim), dtype=np.float32)
        self._mask = np.zeros((n, self._n_actions), dtype=np.bool_)
        self._out = np.zeros((n, N_OUT))
        self._work = np.zeros((n, proto._work.size), dtype=np.int64)
        self._status = np.zeros(n, dtype=np.int64)
        self._observe_only = np.full(n, OBSERVE_ONLY, dtype=np.int64)

        self._feeds: list[Any] = [None] * n  # each env's job stream (core.feed.ArrivalFeed)
        self._capped = np.zeros(n, dtype=np.bool_)
        self._overflowed = np.zeros(n, dtype=np.bool_)
        self._stalled = np.zeros(n, dtype=np.bool_)
        # The baselines inside an episode (run from Python on an env's row, as the single env runs them)
        self._warm = proto.warm_start
        self._advisors = proto.advisors
        self._rows: list[RowCore | None] = [None] * n
        self._advice = [Advice(proto.advisors) for _ in range(n)] if proto.advisors else []
        # Worker threads hold the arrays they were started with: with them, one buffer and a copy.
        self._fresh_obs = self.copy and self.threads == 1
        self._bind()

    def _make_single(self, env_kwargs: dict[str, Any]) -> Any:
        loads, sampler = _per_env_loads(env_kwargs.get("load"), self.num_envs)
        if loads is not None or sampler is not None:
            if env_kwargs.get("arrival_rate") is not None:
                rate = env_kwargs["arrival_rate"]
                raise ValueError(f"load: per-env loads exclude arrival_rate, got arrival_rate={rate!r}")
            if sampler is not None:
                # a throwaway generator: the envs' own generators are not drawn from before reset
                first = _check_load(sampler(np.random.default_rng(0)), " from the load sampler")
            # the prototype (spaces, template state) at one of the loads: nothing of it but the
            # workload's arrival rate depends on the load, and that is per env (_build); the
            # keywords the vector env keeps hold the loads as given
            env_kwargs = {**env_kwargs, "load": loads[0] if loads is not None else first}
        self._loads_given, self._sampler = loads, sampler
        # the registered ids' factory: it takes every flat keyword of gym.make (the options included)
        from .make import make_msj, make_msj_preemptive

        return (make_msj_preemptive if self._single_cls.preemptive else make_msj)(**env_kwargs)

    # --------------------------------------------------------------------------------------------
    @property
    def loads(self) -> np.ndarray:
        """Each environment's load in its current episode (a copy)."""
        return self._loads.copy()

    @property
    def workloads(self) -> list[Workload | TraceWorkload]:
        """Each environment's workload in its current episode."""
        return list(self._workloads)

    def _workload_at(self, load: float) -> Workload | TraceWorkload:
        """The workload at ``load``, built as the single env builds it from its keywords (as
        :func:`~msj_gym.env.msj_env.resolve_workload` does), the scenario loaded once."""
        scenario = self.env_kwargs.get("scenario", _DEFAULT_SCENARIO)
        if hasattr(scenario, "arrivals") and hasattr(scenario, "num_servers"):
            return scenario.with_load(load)
        if self._scenario_source is None:
            from ..workloads.scenarios import load_scenario

            self._scenario_source = load_scenario(scenario)
        return self._scenario_source.build(num_servers=self.env_kwargs.get("num_servers"), load=load)

    def _load_parameters(self, load: float) -> tuple[Any, np.ndarray, float, int]:
        """``(workload, fpar, reward scale, arrival cap)`` of an episode at ``load``, exactly as the
        single env made with that load has them."""
        try:
            wl = self._workload_at(load)
        except ValueError as exc:
            raise ValueError(f"load: {load!r}: {exc}") from None
        fpar, scale = self.single_env.workload_parameters(wl)
        return wl, fpar, scale, self.single_env.max_arrivals_for(wl)

    def _set_load(self, i: int, load: float, params: tuple[Any, np.ndarray, float, int]) -> None:
        wl, fpar, scale, cap = params
        self._loads[i] = load
        self._workloads[i] = wl
        self._fpar[i] = fpar  # in place: the compiled entry points and worker threads hold the array
        self._reward_scale[i] = scale
        self._max_arrivals[i] = cap

    def _bind(self) -> None:
        """Entry points of the compiled kernels for the current arrays (skip numba's dispatch)."""
        b = self._b
        # batch_step's arguments after (state, envs, actions): the same arrays at every call
        self._step_tail = (
            self._ep,
            self._fpar,
            self._obs,
            self._mask,
            self._out,
            self._work,
            self._status,
        )
        self._step_fn = entry_point(
            batch_step(self._ep),
            b,
            self._all,
            self._actions,
            *self._step_tail,
            what="the vector environment step",
        )
        self._reset_fn = entry_point(batch_reset, b, self._template, self._all, what="the vector reset")

    def _step_envs(self, idx: np.ndarray, actions: np.ndarray) -> None:
        self._step_fn(self._b, idx, actions, *self._step_tail)

    def _swap_obs(self, started: np.ndarray | None) -> None:
        # Rows of environments never started stay zero, as in the one buffer. The others' current
        # observations are written again from their states (the step's observe-only call writes what
        # their last step wrote, mask included), not copied from the array the caller may have changed.
        self._obs = np.empty_like(self._obs) if started is None else np.zeros_like(self._obs)
        self._step_tail = (self._ep, self._fpar, self._obs, *self._step_tail[3:])
        if started is not None and started.size:
            self._step_envs(started.astype(np.int64), self._observe_only)

    def _worker_tail(self) -> tuple[Any, ...]:
        return self._step_tail

    def _run(self, idx: np.ndarray, actions: np.ndarray) -> None:
        """A step of the environments ``idx`` as the single env's ``step`` makes it: an advisor's action
        applies its decision (then the env advances), and the advisors are asked at the next decision."""
        if not self._advice:
            self._run_engine(idx, actions)
            return
        first = self._n_actions - len(self._advisors)  # the first advisor's action
        for i in idx.tolist():
            a = int(actions[i])
            if a >= first and self._mask[i, a]:
                row = self._rows[i]
                assert row is not None  # made at the episode's start
                apply_words(row.sim, self._advice[i].words[a - first], f"env {i}: advisor")
                actions[i] = -1  # the whole decision is made: advance
        self._run_engine(idx, actions)
        if self._ep[EP_ADVISE]:
            # an advisor that follows every event is asked at each; the env moves on where nothing is
            # decided (no action of the agent's own is valid), as the single env does
            while True:
                live = [i for i in idx.tolist() if not self._over[i] and not self._mask[i, 1:first].any()]
                if not live:
                    break
                for i in live:
                    self._advice[i].ask(decision=False)
                self._run_engine(np.array(live, dtype=np.int64), self._no_action)
        for i in idx.tolist():
            if not self._over[i]:
                self._advice[i].ask(decision=True)

    def _grow_slots(self) -> None:
        """Every environment with twice the job slots."""
        self._stop_workers()  # they hold the old arrays; restarted at the next step
        self._b = grow_batch_slots(self._b)
        self._template = S.grow_slots(self._template)
        for i, row in enumerate(self._rows):
            if row is not None:
                row.rebind(sim_at.py_func(self._b, i))

    def _run_engine(self, idx: np.ndarray, actions: np.ndarray) -> None:
        """One compiled step of the environments ``idx``, then serve their requests until each is at a
        decision or its episode is over."""
        self._step_batch(idx, actions)
        status = self._status
        while True:
            # ST_EVENT is 0: a decision is due (any() first: most steps leave no request to serve)
            if idx is self._all:
                pending = np.flatnonzero(status) if status.any() else idx[:0]
            else:
                pending = idx[status[idx] != S.ST_EVENT]
            if pending.size == 0:
                return
            resume: list[int] = []
            ended: list[int] = []
            grow = False
            for i in pending.tolist():
                st = status[i]
                if st == S.ST_NEED_ARRIVALS:
                    self._feed(i)
                    (ended if self._capped[i] else resume).append(i)
                elif st == S.ST_NEED_SLOTS:
                    grow = True
                    resume.append(i)
                elif st == S.ST_ERROR and self._b.iv[i, S.I_ERR] == S.E_STALL:
                    self._stalled[i] = True
                    ended.append(i)
                elif st == S.ST_OVERFLOW:
                    self._overflowed[i] = True
                    ended.append(i)
                elif st == S.ST_FINISHED:
                    ended.append(i)
                else:
                    self._raise(i)
            if grow:
                self._grow_slots()
            if ended:
                done = np.array(ended, dtype=np.int64)
                status[done] = S.ST_EVENT
                self._over[done] = True
                # the step itself writes their last observations: no second kernel to compile
                self._step_envs(done, self._observe_only)
            idx = np.array(resume, dtype=np.int64)
            if idx.size:
                self._step_envs(idx, self._no_action)

    def _raise(self, i: int) -> None:
        iv = self._b.iv[i]
        code, job = int(iv[S.I_ERR]), int(iv[S.I_ERR_JOB])
        msg = S.ERROR_MESSAGES.get(code, "unknown error {job}").format(job=job)
        raise SimulationError(f"env {i} at t={self._b.fv[i, S.F_NOW]:.6g}: {msg}")

    def _feed(self, i: int) -> None:
        """Refill env ``i``'s arrival ring with the next jobs of its stream, as the single env does
        (the same feeder; the stream does not depend on the chunk sizes)."""
        feed = self._feeds[i]
        try:
            feed.feed(sim_at.py_func(self._b, i))
        except ArrivalError as exc:
            raise SimulationError(f"env {i}: {exc}") from None
        self._capped[i] = feed.capped

    def _start_envs(self, idx: np.ndarray) -> None:
        if self._sampler is not None:
            # every draw is checked before any environment changes; each from the env's own generator,
            # after the episode's seed (as the single env draws that seed first)
            drawn = [
                _check_load(self._sampler(self._np_randoms[i]), f" from the load sampler for env {i}")
                for i in idx.tolist()
            ]
            params = [self._load_parameters(x) for x in drawn]
            for i, x, p in zip(idx.tolist(), drawn, params, strict=True):
                self._set_load(i, x, p)
        for i in idx.tolist():
            source = self._workloads[i].arrivals(np.random.SeedSequence(int(self._seeds[i])))
            self._feeds[i] = ArrivalFeed(source, int(self._max_arrivals[i]), self._ring)
        self._reset_fn(self._b, self._template, idx)
        self._capped[idx] = False
        self._overflowed[idx] = False
        self._stalled[idx] = False
        for i in idx.tolist():
            self._feed(i)
        if self._warm is not None:
            for i in idx.tolist():
                self._warm_start(i)
        if self._advice:
            for i in idx.tolist():
                row = self._rows[i] = RowCore(
                    self._workloads[i], int(self._seeds[i]), sim_at.py_func(self._b, i)
                )
                self._advice[i].start(row)

    def _warm_start(self, i: int) -> None:
        """Env ``i``'s episode after its warm start: the warm-start policy runs in a simulator made as
        the single env makes it, whose state (but the arrival ring) becomes env ``i``'s; its job
        stream goes on from the first job not yet arrived (the stream does not depend on how it is
        cut into chunks)."""
        proto, wl, seed = self.single_env, self._workloads[i], int(self._seeds[i])
        core = proto.make_simulator(seed, slots=int(self._b.ji.shape[1]), workload=wl)
        run_warm_start(core, proto.warm_start, proto.warm_start_arrivals)
        while core.sim.ji.shape[0] > self._b.ji.shape[1]:
            self._grow_slots()
        load_row(self._b, i, core.sim)
        arrived = int(core.sim.iv[S.I_NARR])
        source = wl.arrivals(np.random.SeedSequence(seed))
        feed = ArrivalFeed(source, int(self._max_arrivals[i]), self._ring)
        if arrived:
            feed.last_time = float(source.next_chunk(arrived).arrival_time[-1])
        self._b.iv[i, S.I_NGEN] = arrived
        self._b.iv[i, S.I_EXHAUSTED] = 0
        self._feeds[i] = feed
        self._feed(i)

    def _rewards(self, restart: np.ndarray) -> np.ndarray:
        rewards = self._out[:, O_REWARD] * self._reward_scale
        if restart.size:
            rewards[restart] = 0.0
        return rewards

    def _env_infos(self) -> dict[str, np.ndarray]:
        b = self._b
        return {
            "time": b.fv[:, S.F_NOW].copy(),
            "elapsed_time": self._out[:, O_ELAPSED].copy(),
            "action_mask": self._mask.copy(),
            "jobs_in_system": b.iv[:, S.I_NSYS].copy(),
            "jobs_by_class": b.ci[:, S.C_NWAIT] + b.ci[:, S.C_NRUN],
            "invalid_action": self._out[:, O_INVALID] > 0,
            "invalid_actions": self._invalid.copy(),
        }

    def _ended_infos(self, ended: np.ndarray, present: np.ndarray) -> dict[str, np.ndarray]:
        n = self.num_envs
        mrt = np.zeros(n)
        stable = np.zeros(n, dtype=np.bool_)
        measured = np.zeros(n, dtype=np.int64)
        for i in ended.tolist():
            mrt[i], stable[i], measured[i] = self._summary(i)
        return {
            "stalled": self._stalled & present,
            "mean_response_time": mrt,
            "stable": stable,
            "measured_jobs": measured,
        }

    def _summary(self, i: int) -> tuple[float, bool, int]:
        """``(mean_response_time, stable, measured jobs)`` of env ``i``'s ended episode, computed as
        :func:`~msj_gym.metrics.result.summarise` and the single env do (bit for bit) without the rest
        of the result: a full result per episode would cost more than the episode's steps."""
        b = self._b
        stopped = self._capped[i] or self._overflowed[i] or self._stalled[i]
        left = unfinished_jobs(sim_at.py_func(b, i)) if stopped else None
        acc_f, acc_i = with_unfinished(b.acc_f[i], b.acc_i[i], left)
        count_b = acc_i[:, :, S.A_COUNT].sum(axis=1)
        y = acc_f[:, :, S.A_RESP].sum(axis=1)
        total = count_b.astype(np.float64).sum()
        mean = float(y.sum() / total) if total else math.inf  # no measured job left: unbounded
        overflow = self._core.max_jobs_in_system if self._overflowed[i] else None
        checkpoints = b.ck_nsys[i, : int(b.iv[i, S.I_NCHECK])]
        stable, _ = assess_stability(
            float(self._workloads[i].load), bool(self._capped[i]), checkpoints, int(count_b.sum()), overflow
        )
        return mean, stable and bool(total) and not (left is not None and len(left)), int(total)

    def _observation(self, force_copy: bool = False) -> Any:
        flat = super()._observation(force_copy)
        proto = self.single_env
        return proto._obs_mode.present(flat, proto.shape)

    def decide_every_event(self, flag: bool) -> None:
        """As :meth:`MSJEnv.decide_every_event`, for every environment."""
        self._ep[EP_EVERY_EVENT] = int(bool(flag))

    def result(self, i: int) -> SimulationResult:
        """The simulator's metrics for environment ``i``'s current episode (final once it is over)."""
        if not self._started[i]:
            raise RuntimeError("MSJ vector env: call reset() first")
        core = self._core
        if self._workloads[i] is not core.workload:
            # another load: a simulator on this env's workload (its arrival cap, its provenance)
            core = self.single_env.make_simulator(0, slots=_BATCH_SLOTS, workload=self._workloads[i])
        core.sim = sim_at.py_func(self._b, i)
        core.seed = int(self._seeds[i])
        core.capped = bool(self._capped[i])
        core.overflowed = bool(self._overflowed[i])
        return ended_result(core.result(ended=bool(self._over[i])), bool(self._over[i]))

    def close_extras(self, **kwargs: Any) -> None:
        self._feeds = [None] * len(getattr(self, "_feeds", ()))  # () where construction failed
        super().close_extras(**kwargs)


class MSJPreemptiveVectorEnv(MSJVectorEnv):
    """``num_envs`` ``MSJPreemptive-v0`` environments stepped together (see :class:`MSJVectorEnv`)."""

    _single_cls: ClassVar[type[MSJEnv]] = MSJPreemptiveEnv
