"""The MSJ environments' card: ``MSJ-v0`` (admission decisions), ``MSJPreemptive-v0`` and their variants.

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
``gym.make("MSJ-v0", **kwargs)`` (the factory :func:`make_msj`; :func:`make_msj_preemptive` for
``MSJPreemptive-v0``) takes every keyword below. It gives the env class
(:class:`~msj_gym.env.msj_env.MSJEnv`) those that change the system, the episode and the reward, and
gathers how the agent sees and acts, the warm start and the limits into an
:class:`~msj_gym.env.options.EnvOptions` (``MSJEnv(options=EnvOptions(actions="priority"))`` makes the
same env directly; ``warmup_time`` is the class's ``warmup`` with a ``horizon``):

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
* v0: initial version; the variant ids (below) added; ``observation="classes"`` and ``max_classes``
  added (new options: the default spaces are unchanged); ``reward="slowdown"``, ``reward="waiting"`` and
  ``slowdown_tau`` added (the default reward is unchanged); ``info["jobs_by_class"]`` added.

## Variant ids
Mode combinations that change what an action means are registered ids, each the base id with some
keywords as defaults (as Gymnasium registers its env variants; any keyword still overrides them):

* ``MSJPriority-v0``, ``MSJPreemptivePriority-v0``: ``actions="priority"``;
* ``MSJClassSet-v0``, ``MSJPreemptiveClassSet-v0``: ``actions="priority"``, ``observation="classes"``
  (one agent across systems);
* ``MSJAdvised-v0``: ``actions="priority"``, ``advisor="msf"`` (the last action is MSF's decision);
* ``MSJWarmStart-v0``: ``warm_start="msf"`` (the episode starts from MSF's state after
  ``warm_start_arrivals`` arrivals).

Each has the native vector env as its ``vector_entry_point``.
"""

from __future__ import annotations

from typing import Any

from .checks import check_episode
from .episode import DEFAULT_SCENARIO
from .msj_env import MSJEnv, MSJPreemptiveEnv
from .options import ENV_KEYWORDS, OPTION_KEYWORDS, EnvOptions

__all__ = ["ENV_KEYWORDS", "make_msj", "make_msj_preemptive"]


def make_msj(scenario: Any = DEFAULT_SCENARIO, **kwargs: Any) -> MSJEnv:
    """``MSJ-v0`` (and its variants) from flat keywords (see the card above)."""
    return _make(MSJEnv, scenario, kwargs)


def make_msj_preemptive(scenario: Any = DEFAULT_SCENARIO, **kwargs: Any) -> MSJEnv:
    """``MSJPreemptive-v0`` (and its variants) from flat keywords."""
    return _make(MSJPreemptiveEnv, scenario, kwargs)


def _make(cls: type[MSJEnv], scenario: Any, kwargs: dict[str, Any]) -> MSJEnv:
    options = EnvOptions(**{k: kwargs.pop(k) for k in OPTION_KEYWORDS if k in kwargs})
    warmup_time = kwargs.pop("warmup_time", 0.0)
    if kwargs.get("horizon") is not None:
        # with a horizon the warm-up is a time: the class's warmup, checked here under its flat name
        check_episode(None, kwargs["horizon"], warmup_time, "warmup_time")
        kwargs["warmup"] = warmup_time
    return cls(scenario, options=options, **kwargs)


# gym.make reads the creator's render modes before it makes the env ("human" and "rgb_array_list" are
# wrappers around "rgb_array"): the factories declare the class's
make_msj.metadata = MSJEnv.metadata  # type: ignore[attr-defined]
make_msj_preemptive.metadata = MSJPreemptiveEnv.metadata  # type: ignore[attr-defined]
