"""What an MSJ environment's agent sees and how its actions read, how an episode starts and where it
is cut off: :class:`EnvOptions`, one small frozen object beside the keywords of
:class:`~msj_gym.env.msj_env.MSJEnv` that change the system or the reward.

``gym.make("MSJ-v0", actions="priority")`` still takes every option as a flat keyword (the registered
ids split them off, :mod:`msj_gym.env.make`), and the variant ids are these options' defaults.
:func:`resolve_options` checks an options object against the env's workload, before any work, each bad
value a one-line ``ValueError`` naming its keyword.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from ..registry import supports
from .advising import baseline, estimating, requested_attribute
from .checks import positive_int
from .layout import (
    EP_ACTIONS,
    EP_ADVISE,
    EP_ADVISOR,
    EP_ESTIMATE,
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
)  # fmt: skip
from .modes import ACTION_MODES, OBSERVATION_MODES, ActionMode, ObservationMode, mode_named

if TYPE_CHECKING:
    from ..core.policy import Policy

__all__ = [
    "DEFAULT_MAX_CLASSES",
    "ENV_KEYWORDS",
    "OPTION_KEYWORDS",
    "WARM_START_ARRIVALS",
    "EnvOptions",
    "resolve_options",
]

DEFAULT_MAX_CLASSES = 32  # class slots of observation="classes": borg-cellb's 26 classes fit
#: arrivals run by the warm-start policy before the agent takes over (``warm_start_arrivals``)
WARM_START_ARRIVALS = 1000
#: The widest queue or preemption window: every window position is an action, and the action space's
#: size must stay an index (a window of 2**63 positions overflowed inside Gymnasium).
MAX_WINDOW = 1 << 20


@dataclass(frozen=True)
class EnvOptions:
    """The options of an MSJ env (the env card, :mod:`msj_gym.env.make`, says what each one does).
    Compose them with :func:`dataclasses.replace`; the registered variant ids hold some as defaults."""

    observation: str = "flat"
    actions: str = "jobs"
    queue_window: int = 1
    preempt_window: int = 4
    obs_jobs: int | None = None
    max_classes: int | None = None
    reveal_sizes: bool = False
    size_estimates: str = "exact"
    advisor: Any = None
    warm_start: Any = None
    warm_start_arrivals: int = WARM_START_ARRIVALS
    max_arrivals: int | None = None
    max_jobs_in_system: int = 100_000

    def replace(self, **changes: Any) -> EnvOptions:
        """A copy with ``changes``; an unknown name is a one-line ``TypeError`` naming it."""
        unknown = sorted(set(changes) - set(OPTION_KEYWORDS))
        if unknown:
            raise TypeError(f"EnvOptions: unknown option {unknown[0]!r}; known: {', '.join(OPTION_KEYWORDS)}")
        return dataclasses.replace(self, **changes)


OPTION_KEYWORDS = tuple(f.name for f in dataclasses.fields(EnvOptions))
#: every keyword of gym.make("MSJ-v0") (and of the MSJ vector env): the class's, then the options
ENV_KEYWORDS = (
    "scenario", "num_servers", "load", "arrival_rate", "num_arrivals", "horizon", "warmup", "warmup_time",
    *OPTION_KEYWORDS[:9], "reward", "weighted", "slowdown_tau", *OPTION_KEYWORDS[9:], "render_mode",
)  # fmt: skip


class Resolved(NamedTuple):
    """An :class:`EnvOptions` checked against a workload: the modes and windows the spaces and the
    compiled step read, the baselines it names, the limits."""

    obs_mode: ObservationMode
    act_mode: ActionMode
    queue_window: int
    preempt_window: int
    obs_jobs: int
    max_classes: int | None
    reveal_sizes: bool
    estimate_attribute: int
    advisors: tuple[Policy, ...]
    warm_start: Policy | None
    warm_start_arrivals: int
    max_arrivals: int | None
    max_jobs_in_system: int


def resolve_options(opts: Any, workload: Any, preemptive: bool, horizon: float | None) -> Resolved:
    """``opts`` checked against ``workload`` (an MSJ env, preemptive or not, of ``horizon`` or not)."""
    if not isinstance(opts, EnvOptions):
        raise ValueError(f"options: expected an EnvOptions, got {opts!r:.80}")
    o = opts
    queue_window = positive_int("queue_window", o.queue_window, maximum=MAX_WINDOW)
    preempt_window = positive_int("preempt_window", o.preempt_window, maximum=MAX_WINDOW)
    obs_mode = mode_named("observation", o.observation, OBSERVATION_MODES)
    act_mode = mode_named("actions", o.actions, ACTION_MODES)
    obs_jobs = o.obs_jobs if o.obs_jobs is not None else (8 if obs_mode.uses_obs_jobs else 0)
    obs_jobs = positive_int("obs_jobs", obs_jobs, 0)
    if obs_jobs and not obs_mode.uses_obs_jobs:
        raise ValueError(
            f"obs_jobs: observation={o.observation!r} shows no single jobs; got obs_jobs={o.obs_jobs!r}"
        )
    if not act_mode.names_jobs and queue_window != 1:
        # priority actions name a class (its oldest job first): a window of jobs would be ignored
        raise ValueError(
            f"queue_window: only with actions='jobs' (a priority action starts a class's oldest "
            f"waiting job), got queue_window={queue_window} with actions={o.actions!r}"
        )
    if not isinstance(o.reveal_sizes, bool | np.bool_):
        raise ValueError(f"reveal_sizes: expected True or False, got {o.reveal_sizes!r}")
    max_arrivals = None if o.max_arrivals is None else positive_int("max_arrivals", o.max_arrivals, 2)
    max_jobs = positive_int("max_jobs_in_system", o.max_jobs_in_system)
    warm = None if o.warm_start is None else baseline("warm_start", o.warm_start, workload, preemptive)
    warm_arrivals = positive_int("warm_start_arrivals", o.warm_start_arrivals)
    if warm is not None and horizon is not None:
        raise ValueError("warm_start: only with num_arrivals episodes, not with horizon")
    max_classes = o.max_classes
    if max_classes is None and o.observation == "classes":
        max_classes = DEFAULT_MAX_CLASSES
    if max_classes is not None:
        max_classes = positive_int("max_classes", max_classes)
        if max_classes < workload.num_classes:
            raise ValueError(
                f"max_classes: the workload has {workload.num_classes} classes, more than "
                f"max_classes={max_classes}"
            )
    advisors = _advisors(o.advisor, workload, preemptive)
    if advisors and act_mode.names_jobs:
        raise ValueError(
            f"advisor: only with priority actions (actions='priority'), got actions={o.actions!r}"
        )
    estimate = requested_attribute(o.size_estimates, bool(o.reveal_sizes), o.actions, workload)
    if estimate >= 0:
        advisors = tuple(estimating(p) for p in advisors)
    for policy in advisors:
        reason = supports(policy, workload)
        if reason is not None:
            raise ValueError(f"advisor: {reason}")
    return Resolved(
        obs_mode, act_mode, queue_window, preempt_window, obs_jobs, max_classes, bool(o.reveal_sizes),
        estimate, advisors, warm, warm_arrivals, max_arrivals, max_jobs,
    )  # fmt: skip


def _advisors(advisor: Any, workload: Any, preemptive: bool) -> tuple[Policy, ...]:
    """``advisor`` as a tuple of baselines: one (an id, ``module:attr`` or a Policy), or several."""
    if advisor is None:
        return ()
    many = isinstance(advisor, list | tuple)
    specs = list(advisor) if many else [advisor]
    if many and not specs:
        raise ValueError("advisor: expected a policy or a non-empty list of policies, got []")
    return tuple(baseline("advisor", p, workload, preemptive) for p in specs)


def step_parameters(r: Resolved, preemptive: bool, slots: int, weighted: bool, reward: int) -> np.ndarray:
    """The compiled step's integer parameters (``ep``, :mod:`msj_gym.env.layout`) of these options."""

    ep = np.zeros(N_EP, dtype=np.int64)
    ep[EP_PREEMPTIVE] = int(preemptive)
    ep[EP_QWIN] = r.queue_window
    ep[EP_PWIN] = r.preempt_window
    ep[EP_OBSJOBS] = r.obs_jobs
    ep[EP_REVEAL] = int(r.reveal_sizes)
    ep[EP_ESTIMATE] = r.estimate_attribute
    ep[EP_WEIGHTED] = int(weighted)
    ep[EP_REWARD] = reward
    ep[EP_ACTIONS] = r.act_mode.code
    ep[EP_OBS] = r.obs_mode.code
    ep[EP_SLOTS] = slots
    ep[EP_ADVISOR] = len(r.advisors)
    # an advisor whose bookkeeping follows every event (the Quickswaps) is asked at every event, as
    # natively: the step then stops at each one, and the env moves on where nothing is decided
    ep[EP_ADVISE] = int(any(p.decides_every_event for p in r.advisors))
    return ep
