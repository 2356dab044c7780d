"""The MSJ Gymnasium environments (``MSJ-v0``, ``MSJPreemptive-v0`` and their registered variants): a
thin adapter between Gymnasium's ``reset`` / ``step`` and the compiled step over the simulator core.

What the env is made of lives in small modules beside it: the options and their checks
(:mod:`~msj_gym.env.options`, :mod:`~msj_gym.env.checks`), the workload and the agent's slot
(:mod:`~msj_gym.env.episode`), the observation and action modes (:mod:`~msj_gym.env.modes`), the
baselines run inside an episode (:mod:`~msj_gym.env.advising`), the compiled step
(:mod:`~msj_gym.env.stepping`), the pictures (:mod:`~msj_gym.env.render`); the planning tools work on it
from outside (:mod:`~msj_gym.env.planning`). The env card (spaces, rewards, every keyword) is
:mod:`msj_gym.env.make`, whose factories the ids' entry points are.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from ..core import state as S
from ..core.jit import entry_point
from ..core.policy import Policy
from ..core.simulator import PolicyDriver, Simulator
from ..metrics.result import SimulationResult
from ..workloads.trace import TraceWorkload
from ..workloads.workload import Workload
from .act import encode_action
from .advising import apply_words, baseline, run_warm_start
from .checks import check_action, check_episode, check_reward, check_seed, encode_error
from .episode import DEFAULT_SCENARIO, REWARDS, AgentSlot, ended_result, heuristic_cap, resolve_workload
from .layout import (
    EP_ADVISE,
    EP_EVERY_EVENT,
    EP_PWIN,
    EP_QWIN,
    N_OUT,
    O_ELAPSED,
    O_INVALID,
    O_REWARD,
    OBS_CLASSES,
    OBSERVE_ONLY,
    work_size,
    workload_floats,
)
from .modes import Shape
from .observe import class_set_constants
from .options import DEFAULT_MAX_CLASSES as DEFAULT_MAX_CLASSES
from .options import ENV_KEYWORDS, OPTION_KEYWORDS, EnvOptions, resolve_options, step_parameters
from .stepping import step_of

if TYPE_CHECKING:
    from .episode import ScenarioSource

__all__ = ["AgentSlot", "EnvOptions", "MSJEnv", "MSJPreemptiveEnv", "heuristic_cap", "resolve_workload"]

_LEGACY = {**{k: f"options=EnvOptions({k}=...)" for k in OPTION_KEYWORDS}, "warmup_time": "warmup=<time>"}


class MSJEnv(gym.Env):
    """Scheduling multiserver jobs: admission decisions (``MSJ-v0``). Its keywords are what changes the
    system (``scenario``, ``num_servers``, ``load``, ``arrival_rate``), the episode (``num_arrivals``
    or ``horizon``, ``warmup``: arrivals, or a time with ``horizon``) and the reward (``reward``,
    ``weighted``, ``slowdown_tau``); how the agent sees and acts, the warm start and the limits are an
    :class:`~msj_gym.env.options.EnvOptions`. ``gym.make("MSJ-v0", ...)`` takes all of them as flat
    keywords, and variant ids hold some as defaults. The env card: :mod:`msj_gym.env.make`."""

    # gymnasium's Env declares metadata an instance attribute (set per instance, as wrappers do)
    metadata: dict[str, Any] = {"render_modes": ["ansi", "rgb_array"], "render_fps": 4}  # noqa: RUF012
    action_space: spaces.Discrete  # gymnasium's Env declares any space; this env's actions are numbered
    preemptive = False

    def __init__(
        self,
        scenario: ScenarioSource = DEFAULT_SCENARIO,
        *,
        num_servers: int | None = None,
        load: float | None = None,
        arrival_rate: float | None = None,
        num_arrivals: int | None = 1000,
        horizon: float | None = None,
        warmup: float = 0,
        reward: str = "integral",
        weighted: bool = False,
        slowdown_tau: float | None = None,
        options: EnvOptions = EnvOptions(),  # noqa: B008  (frozen: one shared default is safe)
        render_mode: str | None = None,
        **unknown: Any,
    ) -> None:
        super().__init__()
        if unknown:
            name = sorted(unknown)[0]
            if name in _LEGACY:
                raise TypeError(
                    f"{type(self).__name__}: {name} is no keyword of the env class; give {_LEGACY[name]}, "
                    f"or make it with gym.make('MSJ-v0', {name}=...), which takes every keyword"
                )
            # Python's own wording first: wrappers that retry without an argument look for it
            raise TypeError(
                f"{type(self).__name__}.__init__() got an unexpected keyword argument {name!r}; "
                f"known: {', '.join(ENV_KEYWORDS)}"
            )
        self.workload = wl = resolve_workload(scenario, num_servers, load, arrival_rate)
        self.num_arrivals, self.horizon, self.warmup, self.warmup_time = check_episode(
            num_arrivals, horizon, warmup
        )
        self._slowdown_tau = check_reward(reward, weighted, slowdown_tau, REWARDS)
        if render_mode not in (None, "ansi", "rgb_array"):
            # gym.make turns "human" and "rgb_array_list" into "rgb_array" plus a wrapper
            raise ValueError(f"render_mode: expected None, 'ansi' or 'rgb_array', got {render_mode!r}")
        r = resolve_options(options, wl, self.preemptive, self.horizon)
        self.options, self._obs_mode, self._act_mode = options, r.obs_mode, r.act_mode
        self.observation_mode, self.action_mode = options.observation, options.actions
        self.reward_mode, self.weighted, self.render_mode = reward, bool(weighted), render_mode
        self.queue_window, self.preempt_window, self.obs_jobs = r.queue_window, r.preempt_window, r.obs_jobs
        self.reveal_sizes, self.size_estimates = r.reveal_sizes, options.size_estimates
        self.max_arrivals, self.max_jobs_in_system = r.max_arrivals, r.max_jobs_in_system
        self.warm_start, self.warm_start_arrivals = r.warm_start, r.warm_start_arrivals
        self.advisors = r.advisors
        self._priority = not r.act_mode.names_jobs
        self.num_classes = wl.num_classes
        self.max_classes = r.max_classes
        # class slots of the spaces: the workload's classes, then padding up to max_classes
        self.class_slots = r.max_classes if r.max_classes is not None else wl.num_classes
        self.shape = Shape(
            self.class_slots, r.queue_window, r.preempt_window, r.obs_jobs, self.preemptive,
            r.reveal_sizes, len(r.advisors),
        )  # fmt: skip
        self._n_actions = r.act_mode.size(self.shape)
        self.action_space = spaces.Discrete(self._n_actions)
        self.observation_space = r.obs_mode.space(self.shape)
        self._ep = step_parameters(r, self.preemptive, self.class_slots, self.weighted, REWARDS[reward])
        self._fpar, self._reward_scale = self.workload_parameters(wl)
        self._obs = np.zeros(r.obs_mode.size(self.shape), dtype=np.float32)
        self._mask = np.zeros(self._n_actions, dtype=np.bool_)
        self._out = np.zeros(N_OUT)
        self._work = np.zeros(work_size(self.class_slots, r.preempt_window, wl.num_servers), dtype=np.int64)
        self._agent_slot = AgentSlot(self.preemptive)
        self._advice: list[np.ndarray] = [np.zeros(0, dtype=np.int64)] * len(self.advisors)
        # the data of the policies that step_policy and the advisor ran this episode, by policy
        self._drivers: dict[int, tuple[Any, PolicyDriver]] = {}
        self._renderer: Any = None  # drawn lazily: SB3's make_vec_env asks for rgb_array by default
        self.core: Simulator | None = None
        self.episode, self._over, self._invalid = -1, True, 0

    # --- what depends on the workload ---------------------------------------------------------------
    def workload_parameters(self, workload: Workload | TraceWorkload) -> tuple[np.ndarray, float]:
        """What of the env's setup depends on the workload beyond its classes: the compiled step's float
        parameters ``fpar`` (mean service times, which scale the observation's ages; class weights;
        mean server need / k) and the reward scale (``reward="mean"``: 1 / the expected arrivals,
        which follow the arrival rate with a ``horizon``). The vector env calls it once per load."""
        wl = workload
        weights = np.asarray(wl.load_weights, dtype=np.float64) / np.asarray(wl.probabilities)
        fpar = workload_floats(wl, weights)
        if self._obs_mode.code == OBS_CLASSES:  # only the class-set writer reads them: no compile else
            class_set_constants(fpar, int(wl.num_servers), np.asarray(wl.server_needs, dtype=np.int64))
        return fpar, 1.0 / self._expected_arrivals(wl) if self.reward_mode == "mean" else 1.0

    def _expected_arrivals(self, workload: Workload | TraceWorkload) -> float:
        """An episode's expected arrivals on ``workload`` (``num_arrivals``, or rate * ``horizon``)."""
        if self.num_arrivals is not None:
            return self.num_arrivals
        # without num_arrivals the env has a horizon, and a built Workload's rate is a float
        return workload.arrival_rate * self.horizon  # type: ignore[operator]

    def max_arrivals_for(self, workload: Workload | TraceWorkload) -> int:
        """The arrival cap of an episode on ``workload``: ``max_arrivals`` if given, else twice the
        expected arrivals plus slack and the warm start's arrivals."""
        if self.max_arrivals is not None:
            return self.max_arrivals
        warm = self.warm_start_arrivals if self.warm_start is not None else 0
        return 2 * int(self._expected_arrivals(workload)) + 2 + warm

    def _baseline(self, field: str, policy: Any) -> Policy:
        """``policy`` as a baseline this env can run natively (:func:`~msj_gym.env.advising.baseline`)."""
        return baseline(field, policy, self.workload, self.preemptive)

    def _observation(self) -> Any:
        return self._obs_mode.present(self._obs.copy(), self.shape)

    # --- the episode ------------------------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict]:
        """Start an episode. ``seed`` seeds the job stream exactly as ``Simulator(seed=...)`` does;
        without it each episode draws a fresh seed from the environment's generator."""
        check_seed(seed)
        super().reset(seed=seed)
        if options:
            raise ValueError(f"options: MSJ environments take no reset options, got {sorted(options)}")
        run_seed = int(seed) if seed is not None else int(self.np_random.integers(2**63 - 1))
        try:
            self.core = self.make_simulator(run_seed)
        except ValueError as exc:
            raise ValueError(f"MSJ env: {exc}") from None
        self.episode += 1
        self._invalid, self._over = 0, False
        self._drivers.clear()
        if self.warm_start is not None:
            run_warm_start(self.core, self.warm_start, self.warm_start_arrivals)
        self._bind()  # after the warm start, which may have grown the state's job slots
        self._out[:] = 0.0
        info = self._advance(-1)
        info["seed"] = run_seed
        return self._observation(), info

    def make_simulator(
        self, run_seed: int, slots: int = 1024, workload: Workload | TraceWorkload | None = None
    ) -> Simulator:
        """The simulator of an episode with job-stream seed ``run_seed`` (before any warm start): the
        agent's slot as its policy, this env's measurement and limits; ``slots`` initial job slots;
        ``workload``: another load of this env's workload (the vector env's per-env loads)."""
        warm = self.warm_start_arrivals if self.warm_start is not None else 0
        wl = self.workload if workload is None else workload
        kwargs: dict[str, Any] = {
            "seed": run_seed,
            "max_arrivals": self.max_arrivals_for(wl),
            "max_jobs_in_system": self.max_jobs_in_system,
            "slots": slots,
            # the state stays of a fixed size (snapshots, branches and the vector env copy it whole): no
            # per-job records, so an episode's result has no response-time percentiles
            "record_jobs": False,
        }
        if self._slowdown_tau is not None:
            kwargs["slowdown_tau"] = self._slowdown_tau
        if self.horizon is not None:
            kwargs.update(horizon=float(self.horizon), warmup_time=self.warmup_time)
        else:
            assert self.num_arrivals is not None  # check_episode requires num_arrivals or horizon
            kwargs.update(num_arrivals=self.num_arrivals + warm, warmup=self.warmup + warm)
        return Simulator(wl, self._agent_slot, **kwargs)

    def _bind(self) -> None:
        """Entry points of the compiled step for the current state arrays (they change as slots grow)."""
        assert self.core is not None  # reset() made it
        self._sim = sim = self.core.sim
        args = (self._ep, self._fpar, self._obs, self._mask, self._out, self._work)
        self._step_fn = entry_point(step_of(self._ep), sim, 0, *args, what="the environment step")

    def _call_step(self, action: int) -> int:
        return self._step_fn(
            self._sim, action, self._ep, self._fpar, self._obs, self._mask, self._out, self._work
        )

    def _advance(self, action: int) -> dict[str, Any]:
        """Run the compiled step, serving the engine's requests, until a decision is due or the
        episode is over; then ask the advisors for their decisions. Returns the step's info."""
        info = self._advance_once(action)
        if self._ep[EP_ADVISE]:
            own = self._n_actions - len(self.advisors)  # actions that are not an advisor's
            while not self._over and not self._mask[1:own].any():
                self._advise(decision=False)  # nothing to decide: only their bookkeeping
                info = self._advance_once(-1)
        invalid = self._out[O_INVALID] > 0
        self._invalid += int(invalid)
        info["invalid_action"] = bool(invalid)
        info["invalid_actions"] = self._invalid
        if self.advisors and not self._over:
            self._advise(decision=True)
        return info

    def _advise(self, decision: bool) -> None:
        """Each advisor's decision now (kept for its action); at an event where nothing can be decided,
        only the advisors that follow every event are asked."""
        for j, policy in enumerate(self.advisors):
            if decision or policy.decides_every_event:
                self._advice[j] = self._decision_of(policy)

    def _observe(self) -> None:
        """Write the observation and mask of the current state (the step asked to do only that)."""
        self._call_step(OBSERVE_ONLY)

    def _advance_once(self, action: int) -> dict[str, Any]:
        core = self.core
        assert core is not None  # reset() made it
        status, stalled = self._call_step(action), False
        while status != S.ST_EVENT:
            if status == S.ST_ERROR and core.sim.iv[S.I_ERR] == S.E_STALL:
                stalled = self._over = True
                break
            if not core.handle(status):
                self._over = True
                break
            if core.sim is not self._sim:
                self._bind()
            status = self._call_step(-1)
        if self._over:
            self._observe()
        sim = self._sim
        info: dict[str, Any] = {
            "time": float(sim.fv[S.F_NOW]),
            "elapsed_time": float(self._out[O_ELAPSED]),
            "action_mask": self._mask.copy(),
            "jobs_in_system": int(sim.iv[S.I_NSYS]),
            # per class, waiting plus running: what a Lyapunov shaping of the cost reads (wrappers.py)
            "jobs_by_class": sim.ci[S.C_NWAIT] + sim.ci[S.C_NRUN],
        }
        if self._over:
            res = self.result()
            info["stalled"] = stalled
            info["mean_response_time"] = res.mean_response_time
            info["stable"] = res.stable
            info["measured_jobs"] = res.num_measured
        return info

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        if type(action) is not int or not 0 <= action < self._n_actions:
            action = self._check_action(action)
        if self._over:
            raise RuntimeError("MSJ env: the episode is over (truncated); call reset() first")
        self._out[:] = 0.0
        first = self._n_actions - len(self.advisors)
        if action >= first and self._mask[action]:
            self._apply(self._advice[action - first])  # a policy's kernel, run from Python
            action = -1  # the whole decision is made: advance
        info = self._advance(action)
        reward = float(self._out[O_REWARD]) * self._reward_scale
        return self._observation(), reward, False, self._over, info

    def _decision_of(self, policy: Any) -> np.ndarray:
        """The engine actions of ``policy``'s decision now (its data kept per episode)."""
        entry = self._drivers.get(id(policy))
        core = self.core
        assert core is not None  # only asked within an episode
        if entry is None or entry[0] is not policy or entry[1].core is not core:
            entry = (policy, PolicyDriver(self._baseline("policy", policy), core))
            self._drivers[id(policy)] = entry
        return entry[1].decide().copy()

    def _apply(self, engine_actions: np.ndarray) -> None:
        assert self.core is not None  # only applied within an episode
        apply_words(self.core.sim, engine_actions, "policy 'agent'")

    def _check_action(self, action: Any) -> int:
        return check_action(action, self._n_actions)

    # --- reading the episode ------------------------------------------------------------------------
    def decide_every_event(self, flag: bool) -> None:
        """Also stop at events where nothing can be decided (only "wait" is valid there). For agents
        whose decision rule keeps state that must see every event, as the batch loop shows it
        (:class:`~msj_gym.PolicyAgent` sets it for such policies); off by default."""
        self._ep[EP_EVERY_EVENT] = int(bool(flag))

    def action_masks(self) -> np.ndarray:
        """Valid actions of the current decision (what sb3-contrib's MaskablePPO reads)."""
        return self._mask.copy()

    def result(self) -> SimulationResult:
        """The simulator's metrics for the current episode (final once the episode is truncated)."""
        if self.core is None:
            raise RuntimeError("MSJ env: call reset() first")
        return ended_result(self.core.result(ended=self._over), self._over)

    def encode(self, engine_action: int) -> int:
        """The env action naming an engine action (start slot ``s`` / preempt ``-s-1``); raises if the
        job lies outside the action window."""
        if not self._act_mode.names_jobs:
            raise ValueError(
                f"encode: this env takes {self.action_mode!r} actions, which name no single job; "
                "make it with actions='jobs' (the default) to act job by job"
            )
        code = int(encode_action(self._sim, self._ep, int(engine_action)))
        if code < 0:
            encode_error(code, int(engine_action), int(self._ep[EP_QWIN]), int(self._ep[EP_PWIN]))
        return code

    def render(self) -> str | np.ndarray | None:
        """``render_mode="ansi"``: a text summary; ``"rgb_array"``: an ``H x W x 3`` uint8 picture of
        the current state (see :mod:`msj_gym.env.render`; an empty system before ``reset``)."""
        if self.render_mode == "rgb_array":
            from .render import FrameRenderer

            if self._renderer is None:
                self._renderer = FrameRenderer(self.workload)
            return self._renderer.frame(None if self.core is None else self._sim, self.episode)
        if self.render_mode != "ansi" or self.core is None:
            return None
        from .render import text_summary

        return text_summary(self._sim, self.workload)


class MSJPreemptiveEnv(MSJEnv):
    """``MSJPreemptive-v0``: :class:`MSJEnv` in which the agent may also preempt running jobs.

    Actions ``1 + C * queue_window + c * preempt_window + r`` preempt the ``r``-th youngest (latest
    arrived) running job of class ``c``; preemption is preempt-resume (the job keeps its remaining
    service time, and its preemption is counted). Preempting is allowed only while some job waits. A
    decision exists whenever a job waits and either a waiting job fits or some job runs, so that
    ServerFilling, ServerFilling-SRPT/Gittins and preemptive MSF run as agents through it. The
    observation adds the ``running`` block (see the env card); ``preempt_window`` (default 4) sets the
    number of preempt actions per class.
    """

    preemptive = True
