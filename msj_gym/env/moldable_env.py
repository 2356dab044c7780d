"""``MSJMoldable-v0``: allocating servers to moldable jobs in a loss system, and the agent that runs a
moldable allocation scheme through it."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from ..core.jit import entry_point
from ..moldable.loss import DONE, REFILL, LossSimulator, MoldableResult, moldable_policy, overall_estimates
from ..moldable.model import SUB_LINEAR, MoldableSystem
from ..moldable.policy import MoldablePolicy, allocate
from ..moldable.stepping import N_OUT, O_INVALID, env_step
from .checks import check_seed

__all__ = ["MSJMoldableEnv", "MoldablePolicyAgent"]


class MSJMoldableEnv(gym.Env):
    """Server allocation for moldable jobs with concave speed-up, no waiting room (``MSJMoldable-v0``).

    ## Description
    The loss system of Ghanbarian et al. (2024), moldable jobs: ``n`` servers; jobs of
    class ``c`` arrive as a Poisson process of rate ``n * lam_c`` and may run on ``1..d_c`` servers; on
    ``k`` servers a job runs for its inherent size / ``s_c(k)``, holding the ``k`` servers to the end.
    The agent decides at every arrival that finds at least one idle server; arrivals that find none are
    lost without a decision. Every event is exact; the simulator is :class:`msj_gym.moldable.LossSimulator`,
    so a scheme run through this env with :class:`MoldablePolicyAgent` gives exactly the metrics of its
    native run with the same seed.

    ## Action space
    ``Discrete(1 + d)`` with ``d`` the largest max-parallelism of the classes: ``0`` rejects the job,
    ``k >= 1`` gives it ``k`` servers. Masks: ``action_masks()`` (as MaskablePPO calls it) and
    ``info["action_mask"]``: reject is always valid, ``k`` iff ``k <= min(d_c, idle servers)``.
    **A masked action is treated as reject** and counted in ``info["invalid_actions"]``; an action
    outside the action space raises ``ValueError``.

    ## Observation space
    ``Box(0, 1, (1 + C + C + C*d,), float32)``: idle servers / n; the arriving job's class (one-hot);
    per class, servers it holds / n; per class and ``i = 1..d``, jobs running on ``i`` servers / n (the
    scaled state ``q_{c,i}`` of the paper; ``i q_{c,i} <= 1``).

    ## Rewards: the paper's two criteria and their trade-off
    The paper ranks schemes by blocking probability ``P_B`` first and mean execution time ``E[T]`` of
    accepted jobs second. The reward after each decision is minus the cost of what happened since the
    previous one: the execution times (inherent size / s(k)) of the jobs admitted, plus
    ``blocking_cost`` (in units of execution time) per job lost or rejected. Per arrival the expected
    cost is ``(1 - P_B) E[T] + blocking_cost * P_B``: the return with ``reward="mean"`` (every reward
    divided by the episode's number of arrivals) estimates minus that quantity; ``reward="total"`` keeps
    the sums. ``blocking_cost`` weighs the two criteria: rejecting everything costs ``blocking_cost``
    per arrival, one server per job about ``1``; with the default ``2.0`` the p-scheme beats greedy on
    the sub-linear mean-field system of the paper (greedy wins once ``blocking_cost`` drops below about
    0.9 there, being faster per accepted job but losing ~15 % of the jobs).

    ## Starting state and episode end
    An empty system at time 0. The episode is **truncated** after ``num_arrivals`` arrivals (the
    first ``warmup`` are not measured in :meth:`result`; rewards count every arrival).

    ## Arguments
    ``gym.make("MSJMoldable-v0", **kwargs)``: ``system`` (a :class:`~msj_gym.moldable.MoldableSystem` or its
    dict), or a named system ``scenario`` (``"002-sub-linear-halfin-whitt"``, ...: its speed-up and regime)
    with ``num_servers`` and ``service_time``, or one class given by ``num_servers`` (100), ``speed_up`` (the
    paper's sub-linear (1, 1.8, 2.5, 3.0, 3.4)), ``arrival_rate`` or the regime ``alpha`` (0.0), ``beta``
    (0.2) of ``lam = 1 - beta n^-alpha``, and ``service_time`` (Exp(1)); ``num_arrivals`` (1000), ``warmup``
    (0), ``reward`` (``"mean"`` | ``"total"``), ``blocking_cost`` (2.0), ``render_mode`` (None | ``"ansi"`` |
    ``"rgb_array"``: a picture of the ``n`` servers as lanes, each running job on as many as it holds in its
    class colour, the arriving job to decide, the clock and the admitted and lost counts; see
    :class:`msj_gym.env.render.MoldableFrameRenderer`).

    ## Info
    ``time``, ``action_mask``, ``idle``, ``job_class`` (of the arrival to decide), ``blocked`` and
    ``accepted`` (every arrival so far), ``invalid_actions`` (episode), ``invalid_action`` (step).

    ## Version history
    * v0: initial version.
    """

    # gymnasium's Env declares metadata an instance attribute (set per instance, as wrappers do)
    metadata: dict[str, Any] = {"render_modes": ["ansi", "rgb_array"], "render_fps": 4}  # noqa: RUF012

    def __init__(
        self,
        system: MoldableSystem | Mapping[str, Any] | None = None,
        *,
        scenario: str | None = None,
        num_servers: int | None = None,
        speed_up: Sequence[float] | None = None,
        arrival_rate: float | None = None,
        alpha: float | None = None,
        beta: float | None = None,
        service_time: Any = None,
        num_arrivals: int = 1000,
        warmup: int = 0,
        reward: str = "mean",
        blocking_cost: float = 2.0,
        render_mode: str | None = None,
    ) -> None:
        super().__init__()
        single = (num_servers, speed_up, arrival_rate, alpha, beta, service_time)
        if system is not None:
            if any(v is not None for v in single) or scenario is not None:
                raise ValueError("system: give a system or its single-class parameters, not both")
            self.system = system if isinstance(system, MoldableSystem) else MoldableSystem.from_dict(system)
        elif scenario is not None:
            self.system = _named_system(
                scenario, num_servers, speed_up, arrival_rate, alpha, beta, service_time
            )
        else:
            if arrival_rate is None and alpha is None and beta is None:
                alpha, beta = 0.0, 0.2
            self.system = MoldableSystem.single(
                100 if num_servers is None else num_servers,
                SUB_LINEAR if speed_up is None else speed_up,
                arrival_rate,
                alpha=alpha,
                beta=beta,
                service_time=service_time,
            )
        if (
            isinstance(num_arrivals, bool)
            or not isinstance(num_arrivals, int | np.integer)
            or num_arrivals < 2
        ):
            raise ValueError(f"num_arrivals: expected an integer >= 2, got {num_arrivals!r}")
        if (
            isinstance(warmup, bool)
            or not isinstance(warmup, int | np.integer)
            or not 0 <= warmup < num_arrivals - 1
        ):
            raise ValueError(f"warmup: expected an integer in [0, {num_arrivals - 1}), got {warmup!r}")
        if reward not in ("mean", "total"):
            raise ValueError(f"reward: expected 'mean' or 'total', got {reward!r}")
        if (
            isinstance(blocking_cost, bool)
            or not isinstance(blocking_cost, int | float)
            or not (math.isfinite(blocking_cost) and blocking_cost >= 0)
        ):
            raise ValueError(f"blocking_cost: expected a finite number >= 0, got {blocking_cost!r}")
        if render_mode not in (None, "ansi", "rgb_array"):
            # gym.make turns "human" and "rgb_array_list" into "rgb_array" plus a wrapper
            raise ValueError(f"render_mode: expected None, 'ansi' or 'rgb_array', got {render_mode!r}")
        self.num_arrivals, self.warmup = int(num_arrivals), int(warmup)
        self.reward_mode, self.blocking_cost = reward, float(blocking_cost)
        self.render_mode = render_mode
        self._renderer: Any = None  # made on the first rgb_array render: Pillow only when asked for
        sy = self.system
        self._nc, self._d = sy.num_classes, sy.max_parallelism
        self._dc = np.array([c.max_parallelism for c in sy.classes], dtype=np.int64)
        self.action_space = spaces.Discrete(1 + self._d)
        size = 1 + 2 * self._nc + self._nc * self._d
        self.observation_space = spaces.Box(0.0, 1.0, (size,), np.float32)
        self.core: LossSimulator | None = None
        self.episode = -1
        self._obs = np.zeros(size, dtype=np.float32)
        self._mask = np.zeros(1 + self._d, dtype=np.bool_)
        self._out = np.zeros(N_OUT)
        self._last = (0, 0, 0.0)
        self._invalid = 0
        self._over = False
        self._step_fn: Any = None

    def make_simulator(self, seed: int) -> LossSimulator:
        """A fresh run of this env's system, job stream seeded by ``seed`` (no policy: the agent acts)."""
        return LossSimulator(self.system, None, seed=seed, num_arrivals=self.num_arrivals, warmup=self.warmup)

    def _advance(self, action: int) -> None:
        """The compiled step (:func:`msj_gym.moldable.stepping.step`), refilling the arrival chunk
        when it asks, until a decision is due or the episode is over."""
        core = self.core
        assert core is not None
        st = core.state
        if self._step_fn is None:  # the compiled entry point: skips numba's per-call dispatch
            self._step_fn = entry_point(env_step, st, action, self._dc, self._obs, self._mask, self._out)
        self._out[O_INVALID] = 0.0
        r = self._step_fn(st, action, self._dc, self._obs, self._mask, self._out)
        while r == REFILL:
            core.refill()
            r = self._step_fn(st, -1, self._dc, self._obs, self._mask, self._out)
        self._over = r == DONE

    # ------------------------------------------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict]:
        """Start an episode; ``seed`` seeds the job stream as ``LossSimulator(seed=...)`` does."""
        check_seed(seed)
        super().reset(seed=seed)
        if options:
            raise ValueError(f"options: MSJMoldable-v0 takes no reset options, got {sorted(options)}")
        run_seed = int(seed) if seed is not None else int(self.np_random.integers(2**63 - 1))
        self.core = self.make_simulator(run_seed)
        self.episode += 1
        self._invalid = 0
        self._last = (0, 0, 0.0)
        self._advance(-1)
        info = self._info(False)
        info["seed"] = run_seed
        return self._observation(), info

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict]:
        if self.core is None:
            raise RuntimeError("MSJMoldable-v0: call reset() first")
        if self._over:
            raise RuntimeError("MSJMoldable-v0: the episode is over; call reset()")
        try:
            a = int(np.asarray(action).item())
        except (TypeError, ValueError):
            raise ValueError(f"action: expected an integer in [0, {self._d}], got {action!r}") from None
        if not 0 <= a <= self._d or np.asarray(action).dtype.kind not in "iub":
            raise ValueError(f"action: expected an integer in [0, {self._d}], got {action!r}")
        self._advance(a)  # a masked action is taken as reject there
        invalid = bool(self._out[O_INVALID] > 0)
        self._invalid += invalid
        blocked, accepted, time_sum = self.core.counters()
        reward = step_reward(self, time_sum, blocked, self._last[2], self._last[0])
        self._last = (blocked, accepted, time_sum)
        info = self._info(invalid)
        if self._over:
            pb, et = overall_estimates(self.core.state)  # what result() reports, without the rest
            info["blocking"], info["mean_execution_time"] = pb.mean, et.mean
        return self._observation(), float(reward), False, self._over, info

    def _observation(self) -> np.ndarray:
        return self._obs.copy()

    def _info(self, invalid: bool) -> dict[str, Any]:
        core = self.core
        assert core is not None
        job_class = -1 if self._over else core.pending_class
        blocked, accepted, _ = core.counters()
        return {
            "time": core.now,
            "action_mask": self._mask.copy(),
            "idle": core.idle,
            "job_class": job_class,
            "blocked": blocked,
            "accepted": accepted,
            "invalid_actions": self._invalid,
            "invalid_action": invalid,
        }

    def action_masks(self) -> np.ndarray:
        """Valid actions of the current decision (what sb3-contrib's MaskablePPO reads)."""
        return self._mask.copy()

    def result(self) -> MoldableResult:
        """The simulator's metrics for the current episode (final once it is truncated)."""
        if self.core is None:
            raise RuntimeError("MSJMoldable-v0: call reset() first")
        return self.core.result()

    def render(self) -> str | np.ndarray | None:
        """``render_mode="ansi"``: a text summary; ``"rgb_array"``: an ``H x W x 3`` uint8 picture of the
        state at the current decision (before ``reset``: an empty system)."""
        if self.render_mode == "rgb_array":
            if self._renderer is None:
                from .render import MoldableFrameRenderer

                self._renderer = MoldableFrameRenderer(self.system)
            return self._renderer.frame(
                self.core, self.episode, deciding=self.core is not None and not self._over
            )
        if self.render_mode != "ansi" or self.core is None:
            return None
        core = self.core
        lines = [f"t={core.now:.4f}  idle {core.idle}/{self.system.num_servers} servers"]
        for c, cl in enumerate(self.system.classes):
            q = core.state.q[c, 1 : cl.max_parallelism + 1].tolist()
            lines.append(f"  {cl.name}: running by servers 1..{cl.max_parallelism}: {q}")
        if not self._over:
            lines.append(f"  deciding: a {self.system.classes[core.pending_class].name} job")
        return "\n".join(lines)


def _named_system(
    scenario: Any,
    num_servers: int | None,
    speed_up: Any,
    arrival_rate: Any,
    alpha: Any,
    beta: Any,
    service_time: Any,
) -> MoldableSystem:
    """The named system ``scenario`` (``002-SPEEDUP-REGIME``) with ``num_servers`` servers (100) and
    size law ``service_time`` (Exp(1)); its speed-up and regime are the name's."""
    from ..moldable.systems import MOLDABLE_SYSTEMS, build_moldable_system

    if not isinstance(scenario, str) or scenario not in MOLDABLE_SYSTEMS:
        raise ValueError(f"scenario: expected one of {list(MOLDABLE_SYSTEMS)}, got {scenario!r}")
    given = [
        k
        for k, v in (("speed_up", speed_up), ("arrival_rate", arrival_rate), ("alpha", alpha), ("beta", beta))
        if v is not None
    ]
    if given:
        raise ValueError(f"scenario: {scenario!r} sets the speed-up and traffic regime; drop {given[0]}")
    n = 100 if num_servers is None else num_servers
    return build_moldable_system(scenario, num_servers=n, service_time=service_time)


def step_reward(env: MSJMoldableEnv, time_sum: Any, blocked: Any, last_time: Any, last_blocked: Any) -> Any:
    """Minus the cost since the previous decision (execution times admitted plus ``blocking_cost`` per
    job lost or rejected), per arrival with ``reward="mean"``; scalars or arrays (the vector env)."""
    cost = time_sum - last_time + env.blocking_cost * (blocked - last_blocked)
    return -cost / env.num_arrivals if env.reward_mode == "mean" else -cost


class MoldablePolicyAgent:
    """A moldable allocation scheme acting through ``MSJMoldable-v0``: at each decision it calls the
    scheme's compiled rule (:func:`msj_gym.moldable.allocate`, the one the batch loop calls) on the env's
    state with the arriving job's uniform from the run's policy stream, so that results equal the
    native run's with the same seed."""

    def __init__(self, policy: str | MoldablePolicy, env: Any, **params: Any) -> None:
        scheme = moldable_policy(policy, **params)
        core = getattr(env, "unwrapped", env)
        if not isinstance(core, MSJMoldableEnv):
            raise TypeError(f"env: expected MSJMoldable-v0, got {type(core).__name__}")
        self.policy, self.env = scheme, core
        self.rule = scheme.prepare(core.system)

    def predict(
        self,
        observation: Any = None,
        state: Any = None,
        episode_start: Any = None,
        deterministic: bool = True,
    ) -> tuple[int, Any]:
        sim = self.env.core
        if sim is None:
            raise RuntimeError("MoldablePolicyAgent: reset the environment first")
        k = allocate(self.rule, sim.pending_class, sim.state.busy, sim.idle, sim.pending_uniform)
        return int(k), state
