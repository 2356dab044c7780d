"""The priority heuristics of HPC batch scheduling, with and without EASY backfilling: SJF, WFP3,
UNICEP and F1.

Each ranks the waiting jobs by a score of the job's requested time r (its user's runtime estimate), its
requested processors n, its submit time s and its wait so far w = now - s, smallest score first (ties:
arrival order). These are the heuristics that RLScheduler (Zhang et al., SC 2020) and the learned
schedulers after it are compared with; the scores are written as that paper's repository defines them
(DIR-LAB/deep-batch-scheduler, ``HPCSimPickJobs.py``, functions ``sjf_score``, ``wfp_score``,
``uni_score``, ``f1_score``), with the waiting time read as the papers define it (see below).

* **SJF**: r (shortest requested time first).
* **WFP3**: -(w / r)^3 n (Tang et al. (2009), the WFP utility function with exponent 3): long-waiting
  jobs first, relative to their requests, larger ones sooner.
* **UNICEP**: -w / (log2(n) r) (Tang et al. (2009)).
* **F1**: log10(r) n + 870 log10(s) (Carastan-Santos & de Camargo (2017), the first of the policies
  it obtains by simulation and regression, F1).

**Without backfilling** (``sjf``, ``wfp3``, ``unicep``, ``f1``), the queue is kept in score order and
jobs start from its head while they fit; a head that does not fit blocks the rest, as FCFS's head does.
**With EASY backfilling** (``sjf-easy``, ...), the head that does not fit gets a reservation at its
shadow time and later jobs of the score order start now if they fit and, by their estimates, end by the
shadow time or use only the servers the reservation leaves spare (Mu'alem & Feitelson (2001), Sec. 2,
with the queue in score order instead of arrival order:
:class:`~msj_gym.baselines.backfilling.EasyBackfilling` is the FCFS case).

Readings chosen where the sources are ambiguous or do not apply:

* The scores change with time (w grows): the queue is re-ranked at every decision, not fixed when a
  job is first picked. RLScheduler's simulator commits to the job it picks and waits until it fits.
* w is the job's wait so far, now - s. RLScheduler's ``wfp_score`` and ``uni_score`` compute it as
  ``scheduled_time - submit_time`` while ``scheduled_time`` is still -1 for every waiting job, i.e. as
  -(s + 1): its published WFP3 and UNI columns rank jobs by that instead.
* UNICEP's log2(n) is 0 for a one-processor job, and the score undefined (Tang et al.'s Blue Gene/P
  partitions have n >= 64). We take the limit n -> 1+: a waiting one-processor job ranks before every
  larger job, and among themselves one-processor jobs rank by -w / r. (RLScheduler adds 1e-15 to n,
  which gives the same order for w > 0.)
* F1's log10 of a time <= 0 (a job submitted at the trace's origin, or a zero request) is taken at 0.1,
  as RLScheduler's code does. s is the job's arrival time in the simulator, which for a trace replay is
  the trace's own submit time (SWF field 2, seconds since the log began, scaled with the gaps when a
  load is set).

**The scored rule** (:class:`ScoredEasy`, not registered) ranks by a weighted sum of a job's features
(:data:`SCORE_FEATURES`), with EASY backfilling along it: WFP3's order is one point of it, and its
weights are what ``python -m msj_gym.agents.hpc_search`` learns.

**The rlscheduler variant** (``variant="rlscheduler"``) decides as RLScheduler's code does, to
reproduce its published table: the job at the top of the order is *committed to* (it waits until it
fits, whatever arrives meanwhile, then the next top is picked); WFP3 and UNICEP use its w = -(s + 1)
and UNICEP its log2(n + 1e-15); with backfilling, while the committed job waits, jobs start in arrival
order if they fit now and their estimated end comes strictly before the committed job's reservation,
computed when it was picked (no use of the spare servers).

**Estimates.** r is the job's requested time with ``estimates="requested"`` (the default: the field's
reading, on a trace that carries requested times, e.g. an SWF log; a workload without them is refused),
its exact service time with ``"exact"``, or the f-model's overestimate with ``"f-model"``
(``estimate_factor`` f): the same estimate drives the score and, with backfilling, the reservation.

Non-preemptive. Size-aware only with ``estimates="exact"`` or ``"f-model"``; with requested times they
read estimates the users gave, never the jobs' sizes (the class is handed the sizes so that the other
two modes can read them).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np

from msj_gym.core import Param, Policy
from msj_gym.core.access import (
    arrival_time,
    class_need,
    class_waiting,
    first_waiting,
    free_servers,
    int_value,
    is_waiting,
    job_id,
    next_waiting,
    now,
    num_classes,
    num_servers,
    num_slots,
    region,
    server_need,
    start,
    value,
)
from msj_gym.core.jit import inline_jit
from msj_gym.core.layout import Layout
from msj_gym.core.record import Record, field
from msj_gym.core.state import PolicyData
from msj_gym.metrics.result import default_slowdown_tau
from msj_gym.workloads.workload import ClassTable

from ._kit import sort_ascending, start_in_order
from .backfilling import (
    ESTIMATES,
    backfill_job,
    check_estimates,
    estimate,
    estimate_fields,
    estimates_unsupported,
    shadow_time,
    smallest_need,
)

RULES = ("sjf", "wfp3", "unicep", "f1", "fcfs", "scored")
RULE_SJF, RULE_WFP3, RULE_UNICEP, RULE_F1, RULE_FCFS, RULE_SCORED = range(6)

#: What the scored rule (:class:`ScoredEasy`) weighs of a waiting job, its requested time r, processors
#: n of the machine's k and wait so far w, in this order: log10 r, log2 n, log10(1 + w), (n / k) log10 r,
#: n / k, the log10 of the bounded slowdown it would have if it started now by its request,
#: max((w + r) / max(r, tau), 1), and, with Q = log10(1 + q), q the servers the waiting jobs need over
#: k (how congested the machine is), log10(1 + w) Q and (n / k) Q (log10 of a time <= 0.1 taken at 0.1,
#: as F1's).
SCORE_FEATURES = (
    "request",
    "need",
    "wait",
    "need_request",
    "need_share",
    "slowdown",
    "queue_wait",
    "queue_need",
)

VARIANTS = ("paper", "rlscheduler")
VARIANT_PAPER, VARIANT_RLSCHEDULER = range(2)

FIELDS = Record(
    "rule", "backfill", "estimate_mode", "estimate_factor", "requested_attribute", "variant", "weights", "tau"
)
RULE, BACKFILL, ESTIMATE_MODE, ESTIMATE_FACTOR, REQUESTED_ATTRIBUTE, VARIANT, WEIGHTS, TAU = FIELDS.ids
# the waiting jobs (at most one per slot) ranked, with their scores, then the reservation's scratch:
# the running and just-started jobs with their estimated ends (shadow_time's)
WORK = Layout(
    ints={"ranked": "slots + servers", "end_slots": "servers"},
    floats={"keys": "slots + servers", "ends": "servers"},
)
RANKED, END_SLOTS, KEYS, ENDS = WORK.ids
# pdata.state of the rlscheduler variant: the committed job (slot, id) and its reservation's shadow time
COMMITTED_SLOT, COMMITTED_ID, COMMITTED_SHADOW = range(3)

LOG_FLOOR = 0.1  # F1's log10 of a time <= 0 is taken at this value


@inline_jit
def job_score(rule, n, submit, r, t, variant, weights, tau, queued, k):
    """The (tier, score) under ``rule`` at time ``t`` of a job of ``n`` processors of the machine's
    ``k``, submitted at ``submit``, its run-time estimate ``r``: jobs of tier 0 come before those of
    tier 1 (only UNICEP's one-processor jobs are ranked apart), smallest score first within a tier.
    The rlscheduler variant scores WFP3 and UNICEP as RLScheduler's code does: with w = -(s + 1) (its
    ``scheduled_time - submit_time`` while ``scheduled_time`` is -1) and UNICEP's n + 1e-15 (one tier).
    The scored rule's score is ``weights`` times :data:`SCORE_FEATURES`, ``tau`` the bounded
    slowdown's and ``queued`` the log10(1 + q) of its queue feature."""
    if rule == RULE_SCORED:
        lr = math.log10(max(r, LOG_FLOOR))
        share = n / k
        waited = max(t - submit, 0.0)
        wait = math.log10(1.0 + waited)
        slowdown = math.log10(max((waited + r) / max(r, tau), 1.0))
        total = weights[0] * lr + weights[1] * math.log2(float(n)) + weights[2] * wait
        total += weights[3] * share * lr + weights[4] * share + weights[5] * slowdown
        return 0, total + (weights[6] * wait + weights[7] * share) * queued
    if variant == VARIANT_RLSCHEDULER and (rule == RULE_WFP3 or rule == RULE_UNICEP):
        w = -1.0 - submit
        if rule == RULE_WFP3:
            x = w / r
            return 0, -(x * x * x) * n
        return 0, -(w + 1e-15) / (math.log2(n + 1e-15) * r)
    w = t - submit
    if rule == RULE_SJF:
        return 0, r
    if rule == RULE_WFP3:
        x = w / r
        return 0, -(x * x * x) * n
    if rule == RULE_UNICEP:
        if n == 1:
            return 0, -w / r
        return 1, -w / (math.log2(float(n)) * r)
    if rule == RULE_FCFS:
        return 0, submit
    return 0, math.log10(max(r, LOG_FLOOR)) * n + 870.0 * math.log10(max(submit, LOG_FLOOR))


@inline_jit
def score(view, rule, s, r, t, variant, weights, tau, queued):
    """Job ``s``'s (tier, score) under ``rule`` at time ``t``, its run-time estimate ``r``
    (:func:`job_score` of its processors and submit time)."""
    return job_score(
        rule,
        server_need(view, s),
        arrival_time(view, s),
        r,
        t,
        variant,
        weights,
        tau,
        queued,
        num_servers(view),
    )


@inline_jit
def _ranked(view, sizes, rule, mode, factor, attribute, variant, weights, tau, keys, slots):
    """The waiting jobs in score order into ``slots`` (their scores in ``keys``); returns their number.
    A tier is collected and sorted at a time, so that an ordinary sort by (score, job id) does."""
    t = now(view)
    queued = 0.0
    if rule == RULE_SCORED:
        for c in range(num_classes(view)):
            queued += class_waiting(view, c) * class_need(view, c)
        queued = math.log10(1.0 + queued / num_servers(view))
    m = 0
    for tier in range(2 if rule == RULE_UNICEP else 1):
        lo = m
        s = first_waiting(view)
        while s != -1:
            r = estimate(view, sizes, s, mode, factor, attribute)
            level, key = score(view, rule, s, r, t, variant, weights, tau, queued)
            if level == tier:
                keys[m] = key
                slots[m] = s
                m += 1
            s = next_waiting(view, s)
        sort_ascending(view, keys[lo:m], slots[lo:m], m - lo)
    return m


@inline_jit
def _anything_fits(view):
    """True if some waiting job fits in the idle servers (a class with a waiting job needs no more)."""
    free = free_servers(view)
    for c in range(num_classes(view)):
        if class_waiting(view, c) > 0 and class_need(view, c) <= free:
            return True
    return False


@inline_jit
def _started(actions, n, s):
    """True if the decision so far, ``actions[:n]`` (starts only), starts job ``s``."""
    for i in range(n):
        if actions[i] == s:
            return True
    return False


@inline_jit
def _rlscheduler(view, sizes, pdata, actions, rule, backfill, mode, factor, attribute):
    """RLScheduler's heuristic loop (``schedule_curr_sequence_reset`` of its ``HPCSimPickJobs.py``): the
    job at the top of the score order is picked and *committed to*: it waits until it fits, whatever
    arrives meanwhile; then the next top is picked. While the committed job waits, backfilling (with EASY)
    starts jobs in arrival order that fit now and whose estimated end comes strictly before the committed
    job's reservation, computed once when it was picked; no job uses the reservation's spare servers."""
    keys, slots = region(pdata.fwork, KEYS), region(pdata.iwork, RANKED)
    ends, others = region(pdata.fwork, ENDS), region(pdata.iwork, END_SLOTS)
    state = pdata.state
    t = now(view)
    free = free_servers(view)
    n = 0
    c = int(state[COMMITTED_SLOT])
    if c >= 0 and (
        c >= num_slots(view) or job_id(view, c) != int(state[COMMITTED_ID]) or not is_waiting(view, c)
    ):
        c = -1
    while True:
        if c < 0:
            weights, tau = field(pdata.params, WEIGHTS), value(pdata.params, TAU)
            m = _ranked(
                view, sizes, rule, mode, factor, attribute, VARIANT_RLSCHEDULER, weights, tau, keys, slots
            )
            i = 0
            while i < m and _started(actions, n, slots[i]):  # still on the waiting list until applied
                i += 1
            if i == m:
                state[COMMITTED_SLOT] = -1.0
                return n
            c = slots[i]
            state[COMMITTED_SLOT] = c
            state[COMMITTED_ID] = job_id(view, c)
            if server_need(view, c) > free and backfill != 0:
                shadow, _ = shadow_time(
                    view, sizes, actions, n, server_need(view, c), free, mode, factor, attribute, ends, others
                )
                state[COMMITTED_SHADOW] = shadow
        if server_need(view, c) <= free:
            n = start(actions, n, c)
            free -= server_need(view, c)
            c = -1
            continue
        break
    if backfill != 0:
        shadow = state[COMMITTED_SHADOW]
        s = first_waiting(view)
        while s != -1:
            if (
                s != c
                and server_need(view, s) <= free
                and not _started(actions, n, s)
                and t + estimate(view, sizes, s, mode, factor, attribute) < shadow
            ):
                n = start(actions, n, s)
                free -= server_need(view, s)
            s = next_waiting(view, s)
    return n


@inline_jit
def _hpc(view, sizes, pdata, actions):
    rule = int_value(pdata.params, RULE)
    backfill = int_value(pdata.params, BACKFILL)
    mode = int_value(pdata.params, ESTIMATE_MODE)
    factor = value(pdata.params, ESTIMATE_FACTOR)
    attribute = int_value(pdata.params, REQUESTED_ATTRIBUTE)
    if int_value(pdata.params, VARIANT) == VARIANT_RLSCHEDULER:
        return _rlscheduler(view, sizes, pdata, actions, rule, backfill, mode, factor, attribute)
    if not _anything_fits(view):  # asked at every event (for the other variant): nothing to do here
        return 0
    keys, slots = region(pdata.fwork, KEYS), region(pdata.iwork, RANKED)
    weights, tau = field(pdata.params, WEIGHTS), value(pdata.params, TAU)
    m = _ranked(view, sizes, rule, mode, factor, attribute, VARIANT_PAPER, weights, tau, keys, slots)
    n, i, free = start_in_order(view, slots, m, free_servers(view), actions)
    if i == m or free == 0 or backfill == 0:
        return n
    head = slots[i]
    ends, others = region(pdata.fwork, ENDS), region(pdata.iwork, END_SLOTS)
    shadow, extra = shadow_time(
        view, sizes, actions, n, server_need(view, head), free, mode, factor, attribute, ends, others
    )
    min_need = smallest_need(view)
    for j in range(i + 1, m):
        if free < min_need:
            break
        n, free, extra = backfill_job(
            view, sizes, actions, n, slots[j], free, extra, shadow, mode, factor, attribute
        )
    return n


class _Heuristic(Policy):
    """Shared machinery of the HPC heuristics (see the module docstring): ``rule`` names the score,
    ``backfill`` whether EASY backfills along it."""

    rule: ClassVar[str] = ""
    backfill: ClassVar[bool] = False
    preemptive = False
    size_aware = True
    kernel = _hpc
    work = WORK
    # the rlscheduler variant commits to the job it picks, also at events where nothing can start
    decides_every_event = True
    params_spec: ClassVar[Mapping[str, Param]] = {
        "estimates": Param(
            str,
            "requested",
            "run-time estimates r: requested (a trace's requested times), exact, or f-model",
            choices=ESTIMATES,
        ),
        "estimate_factor": Param(
            float, 0.0, "f of estimates='f-model': estimates uniform in [D, (1+f) D]", minimum=0.0
        ),
        "variant": Param(
            str,
            "paper",
            "paper (the papers' scores, re-ranked at every decision) or rlscheduler (RLScheduler's code: "
            "commits to its pick, its WFP3/UNICEP waiting time, FCFS-order backfilling)",
            choices=VARIANTS,
        ),
    }

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        check_estimates(self.policy_id, self.param_values["estimates"], self.param_values["estimate_factor"])

    # a policy is asked only about a workload of its own models (for_workload checks): narrower by design
    def unsupported(self, workload: ClassTable) -> str | None:  # type: ignore[override]
        return estimates_unsupported(self.policy_id, self.param_values["estimates"], workload)

    def reads_sizes(self) -> bool:
        return self.param_values["estimates"] != "requested"

    def weights(self) -> np.ndarray:
        """The scored rule's weights of :data:`SCORE_FEATURES` (unused by the other rules)."""
        return np.zeros(len(SCORE_FEATURES))

    def kind_notes(self) -> tuple[str, ...]:
        notes = (f"estimates: {self.param_values['estimates']}",)
        rlscheduler = self.param_values.get("variant") == "rlscheduler"
        return (*notes, "rlscheduler variant") if rlscheduler else notes

    # a policy is prepared only for a workload of its own models (for_workload checks): narrower by design
    def prepare(self, workload: ClassTable, rng: np.random.Generator) -> PolicyData:  # type: ignore[override]
        base = super().prepare(workload, rng)
        fields = estimate_fields(
            self.policy_id, self.param_values["estimates"], self.param_values["estimate_factor"], workload
        )
        params = FIELDS.pack(
            rule=RULES.index(self.rule),
            backfill=int(self.backfill),
            variant=VARIANTS.index(self.param_values.get("variant", "paper")),
            weights=self.weights(),
            tau=default_slowdown_tau(workload),
            **fields,
        )
        return base._replace(params=params, state=np.array([-1.0, -1.0, np.inf]))


class SJF(_Heuristic):
    """Shortest Job First by requested time: the waiting job with the smallest requested time r first
    (ties: arrival order), no backfilling; the head blocks. Source: Zhang et al. (2020), RLScheduler,
    its heuristic ``sjf_score`` (by requested time, ties by submit time).
    Non-preemptive; reads requested times by default (size-aware with ``estimates="exact"`` or
    ``"f-model"``).
    """

    policy_id = "sjf"
    rule = "sjf"
    reference = "Zhang et al. (2020), RLScheduler (sjf_score)"


class WFP3(_Heuristic):
    """WFP3: score -(w / r)^3 n, w the wait so far, r the requested time, n the processors; smallest
    first, no backfilling. Source: Tang et al. (2009) (WFP, exponent 3), as RLScheduler (Zhang et al.
    (2020)) uses it; w = now - submit (the module docstring says how RLScheduler's code differs).
    Non-preemptive; reads requested times by default (size-aware with ``estimates="exact"`` or
    ``"f-model"``).
    """

    policy_id = "wfp3"
    rule = "wfp3"
    reference = "Tang et al. (2009); Zhang et al. (2020), RLScheduler"


class UNICEP(_Heuristic):
    """UNICEP: score -w / (log2(n) r); smallest first, no backfilling; one-processor jobs (log2 n = 0)
    rank first, among themselves by -w / r (the limit n -> 1+). Source: Tang et al. (2009), as
    RLScheduler (Zhang et al. (2020)) uses it.
    Non-preemptive; reads requested times by default (size-aware with ``estimates="exact"`` or
    ``"f-model"``).
    """

    policy_id = "unicep"
    rule = "unicep"
    reference = "Tang et al. (2009); Zhang et al. (2020), RLScheduler"


class F1(_Heuristic):
    """F1: score log10(r) n + 870 log10(s), r the requested time, n the processors, s the submit time;
    smallest first, no backfilling. Source: Carastan-Santos & de Camargo (2017) (policy F1), as
    RLScheduler (Zhang et al. (2020)) uses it; log10 of a time <= 0 taken at 0.1.
    Non-preemptive; reads requested times by default (size-aware with ``estimates="exact"`` or
    ``"f-model"``).
    """

    policy_id = "f1"
    rule = "f1"
    reference = "Carastan-Santos & de Camargo (2017); Zhang et al. (2020), RLScheduler"


class SJFEasy(SJF):
    """SJF with EASY backfilling: the queue in requested-time order, the head's reservation at its shadow
    time, later jobs backfilled along that order (see the module docstring).
    Non-preemptive; reads requested times by default (size-aware with ``estimates="exact"`` or
    ``"f-model"``).
    """

    policy_id = "sjf-easy"
    backfill = True
    reference = SJF.reference + "; EASY: Mu'alem & Feitelson (2001), Sec. 2"


class WFP3Easy(WFP3):
    """WFP3 with EASY backfilling along the WFP3 order (see the module docstring).
    Non-preemptive; reads requested times by default (size-aware with ``estimates="exact"`` or
    ``"f-model"``).
    """

    policy_id = "wfp3-easy"
    backfill = True
    reference = WFP3.reference + "; EASY: Mu'alem & Feitelson (2001), Sec. 2"


class UNICEPEasy(UNICEP):
    """UNICEP with EASY backfilling along the UNICEP order (see the module docstring).
    Non-preemptive; reads requested times by default (size-aware with ``estimates="exact"`` or
    ``"f-model"``).
    """

    policy_id = "unicep-easy"
    backfill = True
    reference = UNICEP.reference + "; EASY: Mu'alem & Feitelson (2001), Sec. 2"


class F1Easy(F1):
    """F1 with EASY backfilling along the F1 order (see the module docstring).
    Non-preemptive; reads requested times by default (size-aware with ``estimates="exact"`` or
    ``"f-model"``).
    """

    policy_id = "f1-easy"
    backfill = True
    reference = F1.reference + "; EASY: Mu'alem & Feitelson (2001), Sec. 2"


class FCFSEasy(_Heuristic):
    """FCFS with EASY backfilling, as the heuristics above run it: with the default variant it decides as
    ``easy-backfilling`` with ``estimates="requested"`` does; it exists for ``variant="rlscheduler"``,
    RLScheduler's FCFS with backfilling (its backfilling rule, see the module docstring). Not registered:
    name it ``msj_gym.baselines.hpc:FCFSEasy``.
    Non-preemptive; reads requested times by default (size-aware with ``estimates="exact"`` or
    ``"f-model"``).
    """

    policy_id = "fcfs-easy"
    rule = "fcfs"
    backfill = True
    reference = "Mu'alem & Feitelson (2001), Sec. 2; Zhang et al. (2020), RLScheduler (fcfs_score)"


# WFP3's order in logs (-(w / r)^3 n: 3 log r - 3 log w - log n), the default weights of the scored rule
WFP3_LOG_WEIGHTS = dict.fromkeys(SCORE_FEATURES, 0.0)
WFP3_LOG_WEIGHTS.update(request=3.0, need=-math.log10(2.0), wait=-3.0)


class ScoredEasy(_Heuristic):
    """A learned priority with EASY backfilling: the waiting jobs ranked by the score ``w . f``, smallest
    first (ties: arrival order), ``f`` a job's :data:`SCORE_FEATURES` (its requested time, processors and
    wait, in logs, and their interactions), backfilled along that order as the heuristics above are.
    The default weights order jobs as WFP3 does, with log10(1 + w) for log10 w. Its weights are what an
    agent learns (``python -m msj_gym.agents.hpc_search``); the order is unchanged when they are scaled
    by a positive factor. A generalisation of the log-linear scores above (SJF is ``w_request = 1``), in
    the spirit of F1's (Carastan-Santos & de Camargo (2017)), whose score was itself fitted by
    simulation. Not registered: name it ``msj_gym.baselines.hpc:ScoredEasy``.
    Non-preemptive; reads requested times by default (size-aware with ``estimates="exact"`` or
    ``"f-model"``).
    """

    policy_id = "scored-easy"
    rule = "scored"
    backfill = True
    reference = (
        "Carastan-Santos & de Camargo (2017) (a score fitted by simulation); "
        "EASY: Mu'alem & Feitelson (2001), Sec. 2"
    )
    params_spec: ClassVar[Mapping[str, Param]] = {
        "estimates": _Heuristic.params_spec["estimates"],
        "estimate_factor": _Heuristic.params_spec["estimate_factor"],
        **{
            f"w_{name}": Param(float, WFP3_LOG_WEIGHTS[name], f"weight of the job's {name.replace('_', ' ')}")
            for name in SCORE_FEATURES
        },
    }

    def weights(self) -> np.ndarray:
        return np.array([float(self.param_values[f"w_{name}"]) for name in SCORE_FEATURES])
