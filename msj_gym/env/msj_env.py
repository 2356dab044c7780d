"""Gymnasium environments over the simulator core: admission (``MSJ-v0``) and preemptive
(``MSJPreemptive-v0``) scheduling of multiserver jobs."""

from __future__ import annotations

import dataclasses
import math
from typing import TYPE_CHECKING, Any, cast

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from ..core import state as S
from ..core.engine import apply
from ..core.jit import entry_point
from ..core.policy import Policy
from ..core.simulator import PolicyDriver, Simulator
from ..metrics.result import SimulationResult
from ..registry import supports
from ..workloads.trace import TraceWorkload
from ..workloads.workload import Workload

if TYPE_CHECKING:
    from collections.abc import Mapping
    from pathlib import Path
    from typing import TypeAlias

    from ..workloads.gpu_traces import GPUTraceScenario
    from ..workloads.scenarios import Scenario
    from ..workloads.swf import SWFScenario

    # what the env builds its workload from: what load_scenario reads, or a ready MSJ workload
    ScenarioSource: TypeAlias = (
        str | Path | Mapping[str, Any] | Scenario | GPUTraceScenario | SWFScenario | Workload | TraceWorkload
    )
from .act import encode_action
from .advising import run_warm_start
from .layout import (
    EP_ACTIONS,
    EP_ADVISE,
    EP_ADVISOR,
    EP_ESTIMATE,
    EP_EVERY_EVENT,
    EP_OBS,
    EP_OBSJOBS,
    EP_PREEMPTIVE,
    EP_PWIN,
    EP_QWIN,
    EP_REVEAL,
    EP_REWARD,
    EP_SLOTS,
    EP_WEIGHTED,
    N_EP,
    N_OUT,
    O_ELAPSED,
    O_INVALID,
    O_REWARD,
    OBS_CLASSES,
    OBSERVE_ONLY,
    REWARD_AREA,
    REWARD_SLOWDOWN,
    REWARD_WAITING,
    work_size,
    workload_floats,
)
from .modes import ACTION_MODES, OBSERVATION_MODES, Shape, mode_named
from .observe import class_set_constants
from .stepping import step_of

__all__ = ["AgentSlot", "MSJEnv", "MSJPreemptiveEnv", "heuristic_cap", "resolve_workload"]

_DEFAULT_SCENARIO = "sf-fig2"
DEFAULT_MAX_CLASSES = 32  # class slots of observation="classes": borg-cellb's 26 classes fit
#: arrivals run by the warm-start policy before the agent takes over (``warm_start_arrivals``)
WARM_START_ARRIVALS = 1000


def heuristic_cap(env_kwargs: dict[str, Any], num_arrivals: int) -> int:
    """The ``max_arrivals`` that holds an MSJ env episode of ``num_arrivals`` arrivals (its other
    keywords ``env_kwargs``) to the arrival cap of a simulator run of the same length
    (:meth:`Simulator.arrival_cap`), after its warm start's arrivals if it has one. An agent compared
    with heuristics runs with it, so that it is never flagged where a heuristic deciding as it does
    would not be (the env's own default, twice the arrivals, is tighter)."""
    warm = env_kwargs.get("warm_start_arrivals", WARM_START_ARRIVALS) if env_kwargs.get("warm_start") else 0
    return Simulator.arrival_cap(num_arrivals) + int(warm)


# ``reward``: what the compiled step pays (layout.REWARD_*); "mean" is "integral" on another scale
REWARDS = {
    "integral": REWARD_AREA,
    "mean": REWARD_AREA,
    "slowdown": REWARD_SLOWDOWN,
    "waiting": REWARD_WAITING,
}


class AgentSlot(Policy):
    """Stands in the simulator for the agent that drives the environment (it has no decision rule)."""

    policy_id = "agent"
    reference = "an agent acting through the Gymnasium environment"

    def __init__(self, preemptive: bool) -> None:
        super().__init__()
        self.preemptive = preemptive  # type: ignore[misc]  # per instance: admission or preemptive env


def resolve_workload(
    scenario: ScenarioSource, num_servers: int | None, load: float | None, arrival_rate: float | None
) -> Workload | TraceWorkload:
    """A workload from a scenario name, file path, mapping, :class:`Scenario` or workload object."""
    from ..workloads.scenarios import Scenario, load_scenario

    if hasattr(scenario, "arrivals") and hasattr(scenario, "num_servers"):
        # a ready workload is told by what it has, not by its class, as the simulator tells it
        ready = cast("Workload | TraceWorkload", scenario)
        if num_servers is not None and num_servers != ready.num_servers:
            raise ValueError(
                f"num_servers: a ready workload has k={ready.num_servers}; got num_servers={num_servers!r}"
            )
        if load is not None:
            return ready.with_load(load)
        if arrival_rate is not None:
            return ready.with_arrival_rate(arrival_rate)
        return ready
    sc = scenario if isinstance(scenario, Scenario) else load_scenario(scenario)
    return sc.build(num_servers=num_servers, load=load, arrival_rate=arrival_rate)


def ended_result(result: SimulationResult, over: bool) -> SimulationResult:
    """An episode's result; one that ended without any measured job to count (none arrived, none left)
    has an unbounded mean response time, not an undefined one, and is unstable."""
    if over and result.num_measured == 0:
        return dataclasses.replace(result, mean_response_time=math.inf, stable=False)
    return result


#: The widest queue or preemption window: every window position is an action, and the action space's
#: size must stay an index (a window of 2**63 positions overflowed inside Gymnasium).
MAX_WINDOW = 1 << 20


def _positive_int(name: str, value: Any, minimum: int = 1, maximum: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < minimum:
        raise ValueError(f"{name}: expected an integer >= {minimum}, got {value!r}")
    if maximum is not None and value > maximum:
        raise ValueError(f"{name}: expected an integer in [{minimum}, {maximum}], got {value!r}")
    return int(value)


class MSJEnv(gym.Env):
    """Scheduling multiserver jobs: admission decisions (``MSJ-v0``).

    ## Description
    ``k`` servers; jobs arrive (Poisson, or replayed from a trace) in classes; a class-``c`` job needs
    ``n_c`` servers at once for a random service time (the multiserver-job model of Grosof &
    Harchol-Balter, ServerFilling, Sec. 3, and Wang et al., Balanced Splitting, Sec. 3.1). The agent is
    the scheduler. The environment is semi-Markov: it advances the simulator through the events at
    which nothing can be decided (no waiting job fits in the idle servers) and asks the agent whenever
    at least one waiting job could start. Several starts at one instant are several steps at zero
    elapsed time. Every event is exact (no time stepping); the simulator is the one behind
    :class:`msj_gym.Simulator`, so a baseline run through this environment with
    :class:`msj_gym.PolicyAgent` gives bit for bit the metrics of its native run with the same seed.

    ## Action space
    ``Discrete(1 + C * queue_window)`` for ``C`` class slots (the job classes, or ``max_classes``):

    * ``0``: wait (do nothing until the next arrival or departure);
    * ``1 + c * queue_window + r``: start the ``r``-th oldest waiting job of class ``c`` (``r = 0``: the
      oldest). The default ``queue_window=1`` gives "start the oldest waiting job of class c", which
      expresses every class-FIFO policy (FCFS, First-Fit, MSF, LSF, MaxWeight, BS-pi, the Quickswap
      family); policies that may skip within a class (EASY backfilling) need a larger window.

    With ``actions="priority"`` the agent names a class instead of a job: ``Discrete(1 + C)``, ``0``
    wait, ``1 + c`` serve class ``c`` first. The env then makes the whole decision at once and moves
    on to the next decision: it packs the servers greedily, as many class-``c`` jobs as fit, then the
    other classes by decreasing server need (oldest waiting jobs first). In ``MSJ-v0`` it starts
    waiting jobs (``1 + c`` is offered where a class-``c`` job waits and fits); in
    ``MSJPreemptive-v0`` every job in the system may be served, so it preempts the youngest running
    jobs of the classes that lose servers (``1 + c`` is offered where class ``c`` has a job in the
    system and the packing differs from the running jobs). Decisions at which no priority would change
    anything are passed over. A work-conserving restriction for learning (wait stays available):
    always choosing the largest server need is MSF, preemptive or not, bit for bit.
    ``actions="priority-shortest"`` starts the shortest waiting jobs of each class instead of the
    oldest (the env reads job sizes: an agent acting with it is size-aware). ``advisor`` (a baseline
    id, ``module:attr`` for a rule outside the registry, or a policy; priority actions only) adds
    one last action, ``1 + C``: that policy's own decision now (always offered), so that an agent can
    learn where to override a heuristic; choosing it every time is the advisor's native run, bit for
    bit. :class:`~msj_gym.PolicyAgent` takes job actions only; the native vector env takes every
    action mode, advisors included.

    Masks: ``action_masks()`` (as sb3-contrib's MaskablePPO calls it) and ``info["action_mask"]``.
    Wait is masked only where nothing could ever happen next (no job running, no arrival to come).
    **An action the mask rules out is treated as wait** and counted in ``info["invalid_actions"]``;
    an action outside the action space (wrong type, shape or range) raises ``ValueError``.

    ## Observation space
    ``Box(0, 1, (D,), float32)`` (``observation="flat"``, the default), every entry in ``[0, 1]``.
    With ``squash(x) = L / (1 + L)``, ``L = log(1 + x)`` (monotone, 0 at 0, below 1, and still
    telling 100 from 1000 apart), ``k`` servers and ``m_c`` the mean service time of class ``c``:

    * system (2): idle servers / k; squash(jobs in system * mean server need / k);
    * per class ``c`` (5 each, class order of the workload): n_c / k; squash(waiting jobs * n_c / k)
      (queued server demand in units of k); running jobs * n_c / k (share of the servers it holds);
      squash(age of its oldest waiting job / m_c) (0 if none waits); 1 if a class-``c`` job waits and
      fits in the idle servers, else 0;
    * the ``obs_jobs`` oldest waiting jobs in arrival order (4 each, zeros past the end of the queue):
      present (1); need / k; squash(age / m_c); fits now (1/0). With ``reveal_sizes=True`` a fifth entry
      squash(remaining service time / m_c) (only then does the agent see job sizes).
    * ``MSJPreemptive-v0`` only: per class, the ``preempt_window`` youngest running jobs (as the
      preempt actions name them; 2 each): present; squash(service received / m_c); with
      ``reveal_sizes`` a third, squash(remaining service time / m_c).

    ``observation="dict"`` gives the same numbers as a ``Dict`` of 1-D boxes, each block flattened
    row-major: ``system`` (2), ``classes`` (C * 5), ``queue`` (obs_jobs * 4, or 5 with sizes) and,
    preemptive only, ``running`` (C * preempt_window * 2, or 3 with sizes).

    ``observation="classes"``: a **class set** whose meaning does not depend on the system's size, the
    time unit or the number of classes, for one agent across systems: ``Box(0, 1, (8 + M * F,))``
    with ``M = max_classes`` class slots (default 32) and ``F = 14`` (17 with ``reveal_sizes``). With
    ``rho`` the offered load, ``m = sum_c p_c m_c`` the mean service time and ``nbar`` the mean server
    need:

    * system (8): min(rho, 1); idle servers / k; squash(jobs in system * nbar / k); squash(waiting
      server demand / k); log2(k) / 16 (at most 1); C / M; squash(1 / (1 - rho)) (1 if rho >= 1);
      nbar / k;
    * one row per class slot, the workload's classes first, then all-zero padding rows (column 0 is
      the mask of the set): 1 (a real class); n_c / k; squash(k / n_c); arrival share p_c; load share
      rho_c / rho; min(rho_c, 1); squash(m_c / m); squash(squared coefficient of variation of the
      class's service time); squash(waiting jobs); squash(waiting jobs * n_c / k); running jobs * n_c
      / k; squash(age of its oldest waiting job / m_c); 1 if a waiting job fits now; min(waiting
      jobs, idle // n_c) * n_c / k (the share of servers it could fill now); with ``reveal_sizes``
      three more: squash(least and mean remaining service time of its waiting jobs / m_c) and
      squash(least remaining service time of its running jobs / m_c) (0 where there is none).

    The rows are equivariant: listing the classes in another order permutes them (and the priority
    actions) and changes nothing else. ``max_classes`` also pads the other class-indexed parts of the
    spaces (the flat observation's class block, job and priority actions): padding is zero and never
    a valid action, so systems with up to ``max_classes`` classes share one observation and action
    space.

    ## Rewards
    Minus the time integral of the number of jobs in the system between two decisions, so that an
    episode's return is minus the total time jobs spent in the system during it (by Little's law,
    proportional to the mean response time). Options: ``weighted=True`` weights class ``c`` by
    (its share of the load) / (its share of the arrivals), which turns the same sum into the weighted
    mean response time of Grosof et al. (MSFQ, Sec. 6.1); ``reward="mean"`` divides every reward by
    the expected number of arrivals of an episode, so that the return estimates minus the (weighted)
    mean response time whatever the episode length: the average-reward form for long episodes.

    The HPC metrics instead (see :class:`~msj_gym.SimulationResult`): ``reward="slowdown"`` pays, at
    each step, minus the bounded slowdowns max((wait + run) / max(run, tau), 1) of the measured jobs
    that left during it, and ``reward="waiting"`` minus their waiting times (response minus service
    time), each job once, at its departure. Only measured jobs count (not the ``warmup`` ones), and
    the values are the engine's own, so an episode's return is exactly minus the result's
    ``mean_bounded_slowdown`` (or ``mean_waiting_time``) times ``measured_jobs``: minus the sum over
    the measured jobs, as the default return is minus their total time (a constant multiple of the
    mean with ``num_arrivals``: ``num_arrivals - warmup`` jobs are measured). ``slowdown_tau`` is tau,
    in the workload's time unit (synthetic time units on a synthetic scenario); by default the
    results' own: a tenth of the mean service time, 10 (seconds) on a recorded trace. Neither is
    weighted (``weighted=True`` is refused with them).

    ## Learning the long-run average cost
    The cost is unbounded and so is the state: a policy that lets a queue grow is unstable, and a
    standard on-policy learner needs a little help to notice before it is too late. What the env and
    :mod:`msj_gym.env.wrappers` provide for it (each tested):

    * **Truncation, never termination**: an episode is cut off, so a learner bootstraps the value of
      its last state (stable-baselines3 does it from ``info["TimeLimit.truncated"]`` and
      ``info["terminal_observation"]``; the CleanRL-style loop of ``examples/cleanrl_ppo.py`` adds
      ``gamma * V(info["final_obs"])`` to the last reward).
    * **Unbounded counts, bounded observations**: every count, demand and age enters the observation
      through ``squash`` (above), flat and class set alike; no wrapper is needed.
    * **Stabilising cost shaping** (:class:`~msj_gym.env.wrappers.LyapunovShaping`, after Pavse et
      al., ICML 2024): minus the drift of a Lyapunov function of the jobs per class
      (``info["jobs_by_class"]``) or of the work in the system, paid at every step; an episode's
      return changes by boundary terms only.
    * **A per-system cost scale** (:class:`~msj_gym.env.wrappers.CostScale`): rewards in units of the
      system's mean service time, for one agent across systems.
    * **Elapsed time per decision** (``info["elapsed_time"]``), for the differential rewards
      ``r - g * dt`` of an average-cost learner (:mod:`msj_gym.agents.average_reward`).

    ## Starting state
    An empty system at time 0, the first decision at the first arrival. ``warm_start="fcfs"`` (any
    non-preemptive baseline id, or a policy object) instead runs that policy for
    ``warm_start_arrivals`` arrivals first and hands over its state (a steady state if long enough).

    ## Episode end
    Arrivals follow the simulator's measurement: with ``num_arrivals`` the jobs with ids
    ``warmup .. num_arrivals-1`` are measured; with ``horizon`` those arriving in ``[warmup_time,
    horizon)``. The episode is **truncated** (never terminated: the system has no natural end) once every
    measured job has left, when the arrival stream reaches ``max_arrivals`` or the system holds more
    than ``max_jobs_in_system`` jobs (both mark the run unstable), or when the agent waits while
    nothing can happen (``info["stalled"]``). The last ``info`` carries ``mean_response_time``,
    ``stable`` and ``measured_jobs``; :meth:`result` gives the full :class:`~msj_gym.SimulationResult`
    (its ``summary()`` prints it); they are one computation and agree. An episode that ends with
    measured jobs still in the system (a policy that starves a class until the arrival cap or the
    queue limit stops it, an agent that waits while nothing can happen) is unstable, and its averages
    count those jobs with their time in the system so far: ``mean_response_time`` and the other means
    are then **lower bounds**, ``measured_jobs`` counts those jobs too, and the result's
    ``stability_note`` says how many had not left. A starving policy reads as bad, not as the mean of
    the jobs it served. An episode that measured no job at all has a mean response time of ``inf``,
    never NaN.

    ## Arguments
    ``gym.make("MSJ-v0", **kwargs)``:

    * ``scenario`` (``"sf-fig2"``): a registered scenario name, the path of a scenario file, a
      GPU-cluster trace ``FORMAT:PATH[?options]`` (see :mod:`msj_gym.workloads.gpu_traces`), a
      :class:`~msj_gym.Scenario` or a workload; ``num_servers``, ``load`` / ``arrival_rate`` override its
      defaults (sf-fig2 defaults to k=8, load 0.7, where FCFS is unstable and good schedulers are not);
    * ``num_arrivals`` (1000) or ``horizon``; ``warmup`` (0 arrivals) or ``warmup_time`` (0.0);
    * ``queue_window`` (1), ``preempt_window`` (4, preemptive only), ``obs_jobs`` (8; 0 and not
      settable with the class set), ``observation`` (``"flat"`` | ``"dict"`` | ``"classes"``),
      ``max_classes`` (None: the workload's classes; 32 with ``observation="classes"``),
      ``reveal_sizes`` (False), ``size_estimates`` (``"exact"`` | ``"requested"``: what ``reveal_sizes``,
      ``"priority-shortest"`` and the advisors know of a job's size; ``"requested"``, on a workload with
      requested times such as an SWF log, is the time the job's user asked for, less the service it has
      had, and an advisor with an ``estimates`` parameter, EASY's, gets ``estimates="requested"``),
      ``actions`` (``"jobs"`` | ``"priority"`` | ``"priority-shortest"``), ``advisor`` (None);
    * ``reward`` (``"integral"`` | ``"mean"`` | ``"slowdown"`` | ``"waiting"``), ``weighted`` (False),
      ``slowdown_tau`` (None: a tenth of the mean service time, in the workload's time unit; 10 on a
      recorded trace; it also sets :meth:`result`'s bounded slowdown);
    * ``warm_start`` (None), ``warm_start_arrivals`` (1000);
    * ``max_arrivals`` (None: twice the episode's expected arrivals; a policy that has not cleared the
      measured jobs by then is unstable; the leaderboard and the agents' evaluation give an agent the
      simulator's cap instead, :func:`heuristic_cap`), ``max_jobs_in_system`` (100000);
    * ``render_mode`` (None | ``"ansi"`` | ``"rgb_array"``): ``"ansi"`` gives a text summary of servers
      and queues; ``"rgb_array"`` an ``H x W x 3`` uint8 picture of the state (drawn with Pillow, a few
      ms a frame; see :mod:`msj_gym.env.render`): the ``k`` servers as lanes, each held by a running job
      in its class colour with the share of its service received, the waiting queue in service order
      (truncated with "+N more"), the clock and the job counts. ``gym.make`` adds ``"rgb_array_list"``
      (every frame of the episode) and ``"human"`` (a window, needs pygame) on top of it, and
      ``gymnasium.wrappers.RecordVideo`` records it (needs moviepy). stable-baselines3's
      ``make_vec_env`` asks for ``"rgb_array"`` by default: rendering costs nothing until ``render()``.

    ## Info
    Every step: ``time`` (simulator clock), ``elapsed_time`` (since the previous decision),
    ``action_mask``, ``jobs_in_system``, ``jobs_by_class`` (per class of the workload, waiting
    plus running), ``invalid_actions`` (this episode) and ``invalid_action``
    (this step). The episode's last step adds ``stalled`` (it ended because the agent waited while
    nothing could happen), ``mean_response_time`` (over the measured jobs; a lower bound when some had
    not left, see above), ``stable`` (False for a run that is no steady-state estimate: stopped with
    measured jobs in the system, a queue that kept growing, or a load of 1 or more) and
    ``measured_jobs`` (the jobs that mean counts), all as :meth:`result` gives them.

    ## Version history
    * v0: initial version; ``observation="classes"`` and ``max_classes`` added (new options: the
      default spaces are unchanged); ``reward="slowdown"``, ``reward="waiting"`` and ``slowdown_tau``
      added (the default reward is unchanged); ``info["jobs_by_class"]`` added.
    """

    # gymnasium's Env declares metadata an instance attribute (set per instance, as wrappers do)
    metadata: dict[str, Any] = {"render_modes": ["ansi", "rgb_array"], "render_fps": 4}  # noqa: RUF012
    action_space: spaces.Discrete  # gymnasium's Env declares any space; this env's actions are numbered
    preemptive = False

    def __init__(
        self,
        scenario: ScenarioSource = _DEFAULT_SCENARIO,
        *,
        num_servers: int | None = None,
        load: float | None = None,
        arrival_rate: float | None = None,
        num_arrivals: int | None = 1000,
        horizon: float | None = None,
        warmup: int = 0,
        warmup_time: float = 0.0,
        queue_window: int = 1,
        preempt_window: int = 4,
        obs_jobs: int | None = None,
        observation: str = "flat",
        max_classes: int | None = None,
        reveal_sizes: bool = False,
        size_estimates: str = "exact",
        actions: str = "jobs",
        advisor: str | Policy | None = None,
        reward: str = "integral",
        weighted: bool = False,
        slowdown_tau: float | None = None,
        warm_start: str | Policy | None = None,
        warm_start_arrivals: int = WARM_START_ARRIVALS,
        max_arrivals: int | None = None,
        max_jobs_in_system: int = 100_000,
        render_mode: str | None = None,
        **unknown: Any,
    ) -> None:
        super().__init__()
        if unknown:
            import inspect

            params = inspect.signature(MSJEnv.__init__).parameters
            known = [n for n, p in params.items() if n not in ("self", "unknown")]
            # Python's own wording first: wrappers that retry without an argument look for it
            raise TypeError(
                f"{type(self).__name__}.__init__() got an unexpected keyword argument "
                f"{sorted(unknown)[0]!r}; known: {', '.join(known)}"
            )
        self.workload = resolve_workload(scenario, num_servers, load, arrival_rate)
        if horizon is not None:
            num_arrivals = None
            if not isinstance(horizon, int | float) or not math.isfinite(horizon) or horizon <= 0:
                raise ValueError(f"horizon: expected a positive finite time, got {horizon!r}")
            if not isinstance(warmup_time, int | float) or not 0 <= warmup_time < horizon:
                raise ValueError(f"warmup_time: expected a time in [0, {horizon}), got {warmup_time!r}")
        elif num_arrivals is None:
            raise ValueError("num_arrivals: give num_arrivals or horizon")
        else:
            num_arrivals = _positive_int("num_arrivals", num_arrivals, 2)
            warmup = _positive_int("warmup", warmup, 0)
            if warmup >= num_arrivals - 1:
                raise ValueError(f"warmup: expected an integer in [0, {num_arrivals - 1}), got {warmup!r}")
        self.num_arrivals, self.horizon = num_arrivals, horizon
        self.warmup, self.warmup_time = warmup, float(warmup_time)
        self.queue_window = _positive_int("queue_window", queue_window, maximum=MAX_WINDOW)
        self.preempt_window = _positive_int("preempt_window", preempt_window, maximum=MAX_WINDOW)
        self._obs_mode = mode_named("observation", observation, OBSERVATION_MODES)
        self._act_mode = mode_named("actions", actions, ACTION_MODES)
        if obs_jobs is None:
            obs_jobs = 8 if self._obs_mode.uses_obs_jobs else 0
        self.obs_jobs = _positive_int("obs_jobs", obs_jobs, 0)
        if self.obs_jobs and not self._obs_mode.uses_obs_jobs:
            raise ValueError(
                f"obs_jobs: observation={observation!r} shows no single jobs; got obs_jobs={obs_jobs!r}"
            )
        if not isinstance(reward, str) or reward not in REWARDS:
            raise ValueError(f"reward: expected 'integral', 'mean', 'slowdown' or 'waiting', got {reward!r}")
        if slowdown_tau is not None and (
            isinstance(slowdown_tau, bool | np.bool_)
            or not isinstance(slowdown_tau, int | float | np.integer | np.floating)
            or not (math.isfinite(slowdown_tau) and slowdown_tau > 0)
        ):
            raise ValueError(
                "slowdown_tau: expected a positive finite time (the workload's time unit), "
                f"got {slowdown_tau!r}"
            )
        self.action_mode = actions
        self._priority = not self._act_mode.names_jobs
        if self._priority and self.queue_window != 1:
            # priority actions name a class (its oldest job first): a window of jobs would be ignored
            raise ValueError(
                f"queue_window: only with actions='jobs' (a priority action starts a class's oldest "
                f"waiting job), got queue_window={self.queue_window} with actions={actions!r}"
            )
        if render_mode not in (None, "ansi", "rgb_array"):
            # gym.make turns "human" and "rgb_array_list" into "rgb_array" plus a wrapper
            raise ValueError(f"render_mode: expected None, 'ansi' or 'rgb_array', got {render_mode!r}")
        for name, flag in (("reveal_sizes", reveal_sizes), ("weighted", weighted)):
            if not isinstance(flag, bool | np.bool_):
                raise ValueError(f"{name}: expected True or False, got {flag!r}")
        self.observation_mode, self.reward_mode = observation, reward
        self.reveal_sizes, self.weighted = bool(reveal_sizes), bool(weighted)
        if self.weighted and REWARDS[reward] != REWARD_AREA:
            # the results have no weighted slowdown or wait for such a return to equal
            raise ValueError(
                f"weighted: weights the response-time rewards ('integral', 'mean') only; got weighted=True "
                f"with reward={reward!r}"
            )
        # None: the results' own default (a tenth of the mean service time, 10 s on a recorded trace)
        self._slowdown_tau = None if slowdown_tau is None else float(slowdown_tau)
        self.render_mode = render_mode
        self._renderer: Any = None  # drawn lazily: SB3's make_vec_env asks for rgb_array by default
        if max_arrivals is not None:
            max_arrivals = _positive_int("max_arrivals", max_arrivals, 2)
        self.max_arrivals = max_arrivals
        self.max_jobs_in_system = _positive_int("max_jobs_in_system", max_jobs_in_system)
        self.warm_start = self._warm_policy(warm_start)
        self.warm_start_arrivals = _positive_int("warm_start_arrivals", warm_start_arrivals)
        if self.warm_start is not None and horizon is not None:
            raise ValueError("warm_start: only with num_arrivals episodes, not with horizon")

        wl = self.workload
        nclass = wl.num_classes
        self.num_classes = nclass
        if max_classes is None and observation == "classes":
            max_classes = DEFAULT_MAX_CLASSES
        if max_classes is not None:
            max_classes = _positive_int("max_classes", max_classes)
            if max_classes < nclass:
                raise ValueError(
                    f"max_classes: the workload has {nclass} classes, more than max_classes={max_classes}"
                )
        self.max_classes = max_classes
        # class slots of the spaces: the workload's classes, then padding up to max_classes
        self.class_slots = max_classes if max_classes is not None else nclass
        self.advisors = self._advisors(advisor)
        if self.advisors and not self._priority:
            raise ValueError(
                f"advisor: only with priority actions (actions='priority'), got actions={actions!r}"
            )
        self.size_estimates = size_estimates
        self._estimate_attribute = self._estimates(size_estimates, actions)
        if self._estimate_attribute >= 0:
            self.advisors = tuple(self._estimating(p) for p in self.advisors)
        if self.advisors:
            for policy in self.advisors:
                reason = supports(policy, wl)
                if reason is not None:
                    raise ValueError(f"advisor: {reason}")
        self.shape = Shape(
            slots=self.class_slots,
            queue_window=self.queue_window,
            preempt_window=self.preempt_window,
            obs_jobs=self.obs_jobs,
            preemptive=self.preemptive,
            reveal_sizes=self.reveal_sizes,
            advisors=len(self.advisors),
        )
        self._n_actions = self._act_mode.size(self.shape)
        self.action_space = spaces.Discrete(self._n_actions)
        self.observation_space = self._obs_mode.space(self.shape)
        dim = self._obs_mode.size(self.shape)

        self._ep = np.zeros(N_EP, dtype=np.int64)
        self._ep[EP_PREEMPTIVE] = int(self.preemptive)
        self._ep[EP_QWIN] = self.queue_window
        self._ep[EP_PWIN] = self.preempt_window
        self._ep[EP_OBSJOBS] = self.obs_jobs
        self._ep[EP_REVEAL] = int(self.reveal_sizes)
        self._ep[EP_ESTIMATE] = self._estimate_attribute
        self._ep[EP_WEIGHTED] = int(self.weighted)
        self._ep[EP_REWARD] = REWARDS[reward]
        self._ep[EP_ACTIONS] = self._act_mode.code
        self._ep[EP_OBS] = self._obs_mode.code
        self._ep[EP_SLOTS] = self.class_slots
        self._ep[EP_ADVISOR] = len(self.advisors)
        # an advisor whose bookkeeping follows every event (the Quickswaps) is asked at every event, as
        # natively: the step then stops at each one, and the env moves on where nothing is decided
        self._ep[EP_ADVISE] = int(any(p.decides_every_event for p in self.advisors))
        self._advice: list[np.ndarray] = [np.zeros(0, dtype=np.int64)] * len(self.advisors)
        self._fpar, self._reward_scale = self.workload_parameters(wl)
        self._obs = np.zeros(dim, dtype=np.float32)
        self._mask = np.zeros(self._n_actions, dtype=np.bool_)
        self._out = np.zeros(N_OUT)
        self._work = np.zeros(
            work_size(self.class_slots, self.preempt_window, wl.num_servers), dtype=np.int64
        )
        self._agent_slot = AgentSlot(self.preemptive)
        self._engine_actions = np.zeros(2 * wl.num_servers + 2, dtype=np.int64)
        # the data of the policies that step_policy and the advisor ran this episode, by policy
        self._drivers: dict[int, tuple[Any, PolicyDriver]] = {}
        self.core: Simulator | None = None
        self.episode = -1
        self._over = True
        self._invalid = 0

    # ------------------------------------------------------------------------------------------------
    def workload_parameters(self, workload: Workload | TraceWorkload) -> tuple[np.ndarray, float]:
        """What of the env's setup depends on the workload beyond its classes: the compiled step's float
        parameters ``fpar`` (mean service times, which scale the observation's ages; class weights;
        mean server need / k) and the reward scale (``reward="mean"`` with a ``horizon``: 1 / the
        expected arrivals, which follow the arrival rate). The vector env calls it once per load."""
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
        warm = self.warm_start_arrivals if self.warm_start is not None else 0
        if self.max_arrivals is not None:
            return self.max_arrivals
        return 2 * int(self._expected_arrivals(workload)) + 2 + warm

    def _warm_policy(self, warm_start: Any) -> Policy | None:
        return None if warm_start is None else self._baseline("warm_start", warm_start)

    def _advisors(self, advisor: Any) -> tuple[Policy, ...]:
        """``advisor`` as a tuple of baselines: one (an id, ``module:attr`` or a Policy), or several."""
        if advisor is None:
            return ()
        many = isinstance(advisor, list | tuple)
        specs = list(advisor) if many else [advisor]
        if many and not specs:
            raise ValueError("advisor: expected a policy or a non-empty list of policies, got []")
        return tuple(self._baseline("advisor", p) for p in specs)

    def _estimates(self, size_estimates: Any, actions: str) -> int:
        """``size_estimates`` checked: -1 for the exact sizes, else the workload's requested-time
        attribute."""
        if size_estimates not in ("exact", "requested"):
            raise ValueError(f"size_estimates: expected 'exact' or 'requested', got {size_estimates!r}")
        if size_estimates == "exact":
            return -1
        if not self.reveal_sizes and actions != "priority-shortest":
            raise ValueError(
                "size_estimates: 'requested' changes what reveal_sizes=True and actions='priority-shortest' "
                f"know of sizes; got reveal_sizes=False and actions={actions!r}"
            )
        from ..workloads.trace import requested_time_attribute

        found = requested_time_attribute(self.workload)
        if found is None:
            raise ValueError(
                f"size_estimates: 'requested' needs a workload with requested times (an SWF log); "
                f"{self.workload.name!r} has none"
            )
        return int(found)

    def _estimating(self, policy: Policy) -> Policy:
        """Advisor ``policy`` as it acts when the env knows requested times only: with
        ``estimates="requested"`` where it estimates exactly (EASY's default); refused if it would
        still read the jobs' sizes."""
        if "estimates" in getattr(policy, "params_spec", {}):
            current = getattr(policy, "estimates", policy.param_values.get("estimates"))
            if current not in ("exact", "requested"):
                raise ValueError(
                    f"advisor: {policy.policy_id!r} with estimates={current!r}; with size_estimates="
                    "'requested' its estimates are the requested times"
                )
            policy = type(policy)(**{**policy.param_values, "estimates": "requested"})
        if policy.reads_sizes():
            raise ValueError(
                f"advisor: {policy.policy_id!r} reads exact job sizes, which size_estimates='requested' "
                "withholds"
            )
        return policy

    def _baseline(self, field: str, policy: Any) -> Policy:
        """``policy`` (a policy id, ``module:attr`` or a :class:`Policy`) as a baseline this env can run
        natively; a one-line ``ValueError`` naming ``field`` otherwise."""
        from msj_gym.guard import is_users, vet_policy

        if is_users(policy) and (isinstance(policy, str) or isinstance(policy, Policy)):
            # a user's policy: vetted once per process on this workload, in a child process
            vet_policy(policy, field, self.workload)
        if isinstance(policy, str):
            from msj_gym.registry import policy_from_spec

            policy = policy_from_spec(policy, field)  # an id, or module:attr outside the registry
        if not isinstance(policy, Policy):
            raise ValueError(f"{field}: expected a policy id or Policy, got {policy!r}")
        if policy.preemptive and not self.preemptive:
            raise ValueError(f"{field}: {policy.policy_id!r} preempts; MSJ-v0 takes a non-preemptive policy")
        return policy

    def _observation(self) -> Any:
        return self._obs_mode.present(self._obs.copy(), self.shape)

    # ------------------------------------------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict]:
        """Start an episode. ``seed`` seeds the job stream exactly as ``Simulator(seed=...)`` does;
        without it each episode draws a fresh seed from the environment's generator."""
        if seed is not None and (
            isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0
        ):
            raise ValueError(f"seed: expected a non-negative integer or None, got {seed!r}")
        super().reset(seed=seed)
        if options:
            raise ValueError(f"options: MSJ environments take no reset options, got {sorted(options)}")
        run_seed = int(seed) if seed is not None else int(self.np_random.integers(2**63 - 1))
        warm = self.warm_start_arrivals if self.warm_start is not None else 0
        try:
            self.core = self.make_simulator(run_seed)
        except ValueError as exc:
            raise ValueError(f"MSJ env: {exc}") from None
        self.episode += 1
        self._invalid = 0
        self._drivers.clear()
        self._over = False
        if self.warm_start is not None:
            run_warm_start(self.core, self.warm_start, warm)
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
            assert self.num_arrivals is not None  # __init__ requires num_arrivals or horizon
            kwargs.update(num_arrivals=self.num_arrivals + warm, warmup=self.warmup + warm)
        return Simulator(wl, self._agent_slot, **kwargs)

    def _bind(self) -> None:
        """Entry points of the compiled step for the current state arrays (they change as slots grow)."""
        assert self.core is not None  # reset() made it
        sim = self.core.sim
        self._step_fn = entry_point(
            step_of(self._ep),
            sim,
            0,
            self._ep,
            self._fpar,
            self._obs,
            self._mask,
            self._out,
            self._work,
            what="the environment step",
        )
        self._sim = sim

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
        self._step_fn(
            self._sim, OBSERVE_ONLY, self._ep, self._fpar, self._obs, self._mask, self._out, self._work
        )

    def _advance_once(self, action: int) -> dict[str, Any]:
        core = self.core
        assert core is not None  # reset() made it
        status = self._step_fn(
            self._sim, action, self._ep, self._fpar, self._obs, self._mask, self._out, self._work
        )
        stalled = False
        while status != S.ST_EVENT:
            if status == S.ST_ERROR and core.sim.iv[S.I_ERR] == S.E_STALL:
                stalled = True
                self._over = True
                break
            if not core.handle(status):
                self._over = True
                break
            if core.sim is not self._sim:
                self._bind()
            status = self._step_fn(
                self._sim, -1, self._ep, self._fpar, self._obs, self._mask, self._out, self._work
            )
        if self._over:
            self._observe()
        iv = self._sim.iv
        info: dict[str, Any] = {
            "time": float(self._sim.fv[S.F_NOW]),
            "elapsed_time": float(self._out[O_ELAPSED]),
            "action_mask": self._mask.copy(),
            "jobs_in_system": int(iv[S.I_NSYS]),
            # per class, waiting plus running: what a Lyapunov shaping of the cost reads (wrappers.py)
            "jobs_by_class": self._sim.ci[S.C_NWAIT] + self._sim.ci[S.C_NRUN],
        }
        if self._over:
            res = self.result()
            info["stalled"] = stalled
            info["mean_response_time"] = res.mean_response_time
            info["stable"] = res.stable
            info["measured_jobs"] = res.num_measured
        return info

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        if type(action) is not int:
            action = self._check_action(action)
        elif not 0 <= action < self._n_actions:
            self._check_action(action)
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
        core = self.core
        assert core is not None  # only applied within an episode
        if len(engine_actions) and apply(core.sim, engine_actions, len(engine_actions)) != S.E_NONE:
            core._raise()

    def _check_action(self, action: Any) -> int:
        n = self._n_actions
        expected = f"action: expected an integer in [0, {n}) (Discrete({n}))"
        if isinstance(action, bool | np.bool_):
            raise ValueError(f"{expected}, got the boolean {action!r}")
        if isinstance(action, np.ndarray):
            if action.shape != () or not np.issubdtype(action.dtype, np.integer):
                raise ValueError(f"{expected}, got an array of shape {action.shape} and dtype {action.dtype}")
            action = action.item()
        if not isinstance(action, int | np.integer):
            raise ValueError(f"{expected}, got {action!r} of type {type(action).__name__}")
        a = int(action)
        if not 0 <= a < n:
            raise ValueError(f"{expected}, got {a}")
        return a

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
        a = int(encode_action(self._sim, self._ep, int(engine_action)))
        if a >= 0:
            return a
        if a == -1:
            raise ValueError(f"engine action {engine_action}: no such waiting or running job here")
        rank = -1 - a
        window = "queue_window" if engine_action >= 0 else "preempt_window"
        raise ValueError(
            f"engine action {engine_action}: the job is number {rank} of its class in the action order, "
            f"outside {window}={self._ep[EP_QWIN] if engine_action >= 0 else self._ep[EP_PWIN]}; "
            f"make the env with a larger {window}"
        )

    def render(self) -> str | np.ndarray | None:
        """``render_mode="ansi"``: a text summary; ``"rgb_array"``: an ``H x W x 3`` uint8 picture of
        the current state (an empty system before ``reset``; see the class docstring). The frame size is
        fixed per env (it depends on ``k`` and the number of classes only). Like the observation, a frame
        shows the state at a decision, before the agent's action: the env moves on right after the last
        start of an instant, so that state is never rendered; ``msj-gym render --out FILE.gif``
        (:class:`msj_gym.env.render.DecisionFrames`) draws one frame per instant after its decisions."""
        if self.render_mode == "rgb_array":
            if self._renderer is None:
                from .render import FrameRenderer

                self._renderer = FrameRenderer(self.workload)
            return self._renderer.frame(None if self.core is None else self._sim, self.episode)
        if self.render_mode != "ansi" or self.core is None:
            return None
        iv, ci, fv = self._sim.iv, self._sim.ci, self._sim.fv
        lines = [
            f"t={fv[S.F_NOW]:.4f}  idle {iv[S.I_FREE]}/{iv[S.I_K]} servers  "
            f"{iv[S.I_NSYS]} jobs ({iv[S.I_NWAIT]} waiting)"
        ]
        for c, cls in enumerate(self.workload.classes):
            lines.append(
                f"  {cls.name or f'class{c}':<12} need {ci[S.C_NEED, c]:>5}  "
                f"waiting {ci[S.C_NWAIT, c]:>6}  running {ci[S.C_NRUN, c]:>5}"
            )
        return "\n".join(lines)


class MSJPreemptiveEnv(MSJEnv):
    """``MSJPreemptive-v0``: :class:`MSJEnv` in which the agent may also preempt running jobs.

    Actions ``1 + C * queue_window + c * preempt_window + r`` preempt the ``r``-th youngest (latest
    arrived) running job of class ``c``; preemption is preempt-resume (the job keeps its remaining
    service time, and its preemption is counted). Preempting is allowed only while some job waits. A
    decision exists whenever a job waits and either a waiting job fits or some job runs, so that
    ServerFilling, ServerFilling-SRPT/Gittins and preemptive MSF run as agents through it. The
    observation adds the ``running`` block (see :class:`MSJEnv`). Everything else is as in
    :class:`MSJEnv`; ``preempt_window`` (default 4) sets the number of preempt actions per class.
    """

    preemptive = True
