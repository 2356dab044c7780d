"""The layout of the arrays that the compiled environment step shares with Python: its integer
parameters ``ep``, float parameters ``fpar``, the ``out`` accumulator, the scratch ``work``, and the
sizes of the observation and action vectors of each observation and action mode.

Plain constants and arithmetic, no numba: the compiled modules (:mod:`.observe`, :mod:`.act`,
:mod:`.stepping`) read the constants, the Python side (:mod:`.modes`, the envs) sizes the arrays with
the functions. Every class-indexed part of the spaces has ``slots`` entries, the workload's classes
first and padding after them (``slots`` = the number of classes unless ``max_classes`` pads it), so
that systems with different numbers of classes share one observation and action space.
"""

from __future__ import annotations

import numpy as np

from ..workloads.trace import TraceWorkload
from ..workloads.workload import Workload

# --- ``ep`` (int64): the env's integer parameters -------------------------------------------------
(
    EP_PREEMPTIVE,  # 1: MSJPreemptive-v0
    EP_QWIN,  # job actions: waiting jobs per class that can be named
    EP_PWIN,  # job actions, preemptive: running jobs per class that can be named
    EP_OBSJOBS,  # flat observation: oldest waiting jobs shown
    EP_REVEAL,  # 1: the observation shows job sizes
    EP_WEIGHTED,  # 1: the reward weights classes by load share / arrival share
    EP_EVERY_EVENT,  # 1: stop at every event (only "wait" is valid where nothing can be decided)
    EP_ACTIONS,  # ACT_JOBS, ACT_PRIORITY or ACT_SHORTEST
    EP_OBS,  # OBS_FLAT or OBS_CLASSES
    EP_SLOTS,  # class slots of the spaces (>= the workload's classes)
    EP_ADVISOR,  # priority actions end with this many advisors' actions (applied from Python)
    EP_ADVISE,  # 1: stop at every event, so that advisors that follow every event see each one
    EP_REWARD,  # what the reward pays: REWARD_AREA, REWARD_SLOWDOWN or REWARD_WAITING
    EP_ESTIMATE,  # what the observation and shortest-first starts know of sizes: -1 the exact service
    # times; else the per-job attribute holding the requested times (a trace's), read as float64 bits
) = range(14)
N_EP = 14

# what the reward pays (``ep[EP_REWARD]``): the time integral of the (weighted) number of jobs in the
# system, or each measured job's bounded slowdown or waiting time at its departure
REWARD_AREA, REWARD_SLOWDOWN, REWARD_WAITING = range(3)

# action modes (``ep[EP_ACTIONS]``)
ACT_JOBS, ACT_PRIORITY, ACT_SHORTEST = range(3)
# observation encodings (``ep[EP_OBS]``); "dict" is the flat vector cut into named parts
OBS_FLAT, OBS_CLASSES = range(2)

# --- ``action`` of the step that only writes the observation and mask of the current state --------
OBSERVE_ONLY = -2

# --- ``out`` (float64): accumulated over one step call ---------------------------------------------
O_REWARD, O_ELAPSED, O_INVALID = range(3)
N_OUT = 3

# --- the flat observation's per-part widths ----------------------------------------------------------
SYSTEM_FEATURES = 2
CLASS_FEATURES = 5
QUEUE_FEATURES = 4  # +1 with revealed sizes
RUNNING_FEATURES = 2  # +1 with revealed sizes (preemptive variant only)

# --- the class-set observation: system features, then one row per class slot -----------------------
SET_SYSTEM_FEATURES = 8
SET_CLASS_FEATURES = 14  # +SET_SIZE_FEATURES with revealed sizes
SET_SIZE_FEATURES = 3
# column 0 of a class row: 1 for a class of the workload, 0 for padding (the mask of the set)
SET_PRESENT = 0
# the column of a class row with squash(age of the class's oldest waiting job / its mean duration)
SET_AGE = 11
# the system column with squash(the waiting jobs' server needs added up / k)
SET_QUEUE = 3
# the columns that describe the system, not its state (the same at every decision of an episode)
STATIC_SYSTEM = (0, 4, 5, 6, 7)
STATIC_CLASS = (0, 1, 2, 3, 4, 5, 6, 7)


def class_features(reveal_sizes: bool) -> int:
    """Width of one class row of the class-set observation."""
    return SET_CLASS_FEATURES + (SET_SIZE_FEATURES if reveal_sizes else 0)


# --- ``fpar`` (float64): what the step needs of the workload beyond the state ------------------------
# [0, C) mean service time per class; [C, 2C) reward weight per class; 2C: mean server need / k;
# 2C + 1: the offered load; [2C + 2, 3C + 2) arrival share; [3C + 2, 4C + 2) load share;
# [4C + 2, 5C + 2) squared coefficient of variation of the service time; 5C + 2: mean service time;
# then the class-set observation's columns that only depend on the workload, computed once per
# workload by ``observe.class_set_constants`` (a logarithm each, which the step would otherwise take at
# every decision): 5C + 3 the load column, 5C + 4 the size-of-system column, and from 5C + 5 three per
# class: the server-need column, the mean-duration column and the variability column.
F_SET_LOAD, F_SET_SYSTEM, F_SET_CLASS = 3, 4, 5  # offsets from 5C of the constants above
SET_CONSTANTS_PER_CLASS = 3


def fpar_size(num_classes: int) -> int:
    return 5 * num_classes + F_SET_CLASS + SET_CONSTANTS_PER_CLASS * num_classes


def workload_floats(workload: Workload | TraceWorkload, weights: np.ndarray) -> np.ndarray:
    """``fpar`` for ``workload`` with reward weights ``weights`` (see the layout above), the class-set
    constants still zero (``observe.class_set_constants`` fills them in). A service time without a
    finite second moment counts as a squared coefficient of variation of 1e6."""
    wl = workload
    means = np.asarray(wl.mean_service_times, dtype=np.float64)
    probs = np.asarray(wl.probabilities, dtype=np.float64)
    needs = np.asarray(wl.server_needs, dtype=np.float64)
    demand = probs * needs * means
    share = demand / demand.sum()
    scv = np.array([min(float(c.service_time.scv), 1e6) for c in wl.classes], dtype=np.float64)
    mean_need = float(np.dot(probs, needs))
    # a built Workload's load is a float: set in __post_init__, though declared optional
    load = float(wl.load)  # type: ignore[arg-type]
    fixed = [mean_need / wl.num_servers, load]
    constants = np.zeros(fpar_size(means.size) - 5 * means.size - 3)
    return np.concatenate(
        [means, weights, fixed, probs, share, np.nan_to_num(scv, nan=1e6), [probs @ means], constants]
    )


# --- sizes -----------------------------------------------------------------------------------------
def num_actions(slots: int, queue_window: int, preempt_window: int, preemptive: bool) -> int:
    """Job actions: wait, start the r-th oldest waiting job of a class, preempt the r-th youngest."""
    return 1 + slots * queue_window + (slots * preempt_window if preemptive else 0)


def num_priority_actions(slots: int, advisors: int) -> int:
    """Priority actions: wait, serve class c first, and each advisor's decision."""
    return 1 + slots + advisors


def observation_size(
    slots: int, obs_jobs: int, preempt_window: int, preemptive: bool, reveal_sizes: bool
) -> int:
    """Length of the flat observation."""
    n = SYSTEM_FEATURES + CLASS_FEATURES * slots + (QUEUE_FEATURES + reveal_sizes) * obs_jobs
    if preemptive:
        n += (RUNNING_FEATURES + reveal_sizes) * slots * preempt_window
    return n


def class_set_size(slots: int, reveal_sizes: bool) -> int:
    """Length of the class-set observation."""
    return SET_SYSTEM_FEATURES + slots * class_features(reveal_sizes)


def work_size(slots: int, preempt_window: int, num_servers: int) -> int:
    """Scratch of the step: the preempt windows' jobs (flat observation), then the classes by
    decreasing server need, one priority's target counts, and the words of one priority decision
    (at most ``num_servers`` starts and as many preemptions)."""
    return slots * preempt_window + 2 * slots + 2 * num_servers + 2


def work_offsets(slots: int, preempt_window: int) -> tuple[int, int, int]:
    """Where the class order, the targets and the decision words start in ``work``."""
    order = slots * preempt_window
    return order, order + slots, order + 2 * slots
