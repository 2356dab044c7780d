"""EASY backfilling, and the runtime estimates it (and the HPC heuristics) are driven by."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np

from msj_gym.core import Param, Policy
from msj_gym.core.access import (
    class_need,
    estimate_noise,
    first_waiting,
    free_servers,
    int_value,
    job_attribute_float,
    last_start,
    next_waiting,
    now,
    num_classes,
    num_running,
    num_servers,
    region,
    running_job,
    server_need,
    service_time,
    start,
    value,
)
from msj_gym.core.jit import inline_jit
from msj_gym.core.layout import Layout
from msj_gym.core.record import Record
from msj_gym.core.state import PolicyData
from msj_gym.workloads.trace import requested_time_attribute
from msj_gym.workloads.workload import ClassTable

from ._kit import sort_ascending

# --- runtime estimates ------------------------------------------------------------------------------
#: How a policy estimates a job's run time: the job's exact service time, the f-model's noisy
#: overestimate of it, or the time the job's user requested (a trace's requested times).
ESTIMATES = ("exact", "f-model", "requested")
EST_SIZE, EST_REQUESTED = 0, 1  # kernel codes: from the service time (x (1 + f noise)), or requested


@inline_jit
def estimate(view, sizes, s, mode, factor, attribute):
    """The run-time estimate of job ``s``: its requested time (``mode`` EST_REQUESTED, per-job attribute
    ``attribute``), or its service time times (1 + ``factor`` x its estimate noise): exact for factor 0,
    Mu'alem & Feitelson's f-model otherwise."""
    if mode == EST_REQUESTED:
        return job_attribute_float(view, s, attribute)
    return service_time(sizes, s) * (1.0 + factor * estimate_noise(sizes, s))


def check_estimates(policy_id: str, estimates: str, factor: float) -> None:
    """A one-line ValueError for run-time estimates ``estimates`` of :data:`ESTIMATES` with an f the
    mode does not use (its parameters alone, before any workload)."""
    if estimates not in ESTIMATES:
        raise ValueError(
            f"policy {policy_id!r} parameter 'estimates': expected one of {ESTIMATES}, got {estimates!r}"
        )
    if factor > 0 and estimates != "f-model":
        raise ValueError(
            f"policy {policy_id!r}: estimate_factor {factor!r} applies to estimates='f-model', "
            f"not {estimates!r}"
        )


def estimates_unsupported(policy_id: str, estimates: str, workload: ClassTable) -> str | None:
    """Why ``estimates`` cannot be used on ``workload`` (it asks for requested times the workload does
    not carry), or None: what a policy that runs on such estimates declares it refuses."""
    if estimates == "requested" and requested_time_attribute(workload) is None:
        return (
            f"policy {policy_id!r} with estimates='requested': workload "
            f"{getattr(workload, 'name', '?')!r} carries no requested times (an SWF log does); use "
            "estimates='exact' or 'f-model'"
        )
    return None


def estimate_fields(policy_id: str, estimates: str, factor: float, workload: ClassTable) -> dict[str, float]:
    """The kernel's estimate parameters (mode, f, requested-time attribute) for ``estimates`` of
    :data:`ESTIMATES` on ``workload``; a ValueError if it asks for requested times the workload does not
    carry (:func:`estimates_unsupported`), or for an f the mode does not use (:func:`check_estimates`)."""
    check_estimates(policy_id, estimates, factor)
    reason = estimates_unsupported(policy_id, estimates, workload)
    if reason is not None:
        raise ValueError(reason)
    found = requested_time_attribute(workload) if estimates == "requested" else None
    attribute = -1 if found is None else found
    mode = EST_REQUESTED if estimates == "requested" else EST_SIZE
    return {"estimate_mode": mode, "estimate_factor": factor, "requested_attribute": attribute}


@inline_jit
def shadow_time(view, sizes, started, n, head_need, free, mode, factor, attribute, ends, slots):
    """EASY's reservation for a head job of ``head_need`` servers that does not fit in the ``free``
    idle servers: (the shadow time, the extra servers), where the shadow time is when, by the estimated
    ends of the running jobs and of the ``started[:n]`` started now, enough servers will be free for it,
    and the extra servers are those it leaves spare then. A job that outlived its estimate is assumed
    to end at once. ``ends`` and ``slots``: scratch for k entries."""
    t = now(view)
    m = 0
    for p in range(num_running(view)):
        r = running_job(view, p)
        ends[m] = max(last_start(view, r) + estimate(view, sizes, r, mode, factor, attribute), t)
        slots[m] = r
        m += 1
    for i in range(n):
        ends[m] = t + estimate(view, sizes, started[i], mode, factor, attribute)
        slots[m] = started[i]
        m += 1
    sort_ascending(view, ends, slots, m)
    avail = free
    for i in range(m):
        avail += server_need(view, slots[i])
        if avail >= head_need:
            return ends[i], avail - head_need
    return np.inf, 0


@inline_jit
def smallest_need(view):
    """The smallest server need of any class: once fewer servers are free, no later job can start."""
    least = num_servers(view)
    for c in range(num_classes(view)):
        least = min(least, class_need(view, c))
    return least


@inline_jit
def backfill_job(view, sizes, actions, n, s, free, extra, shadow, mode, factor, attribute):
    """EASY's test of a later job ``s`` against the head's reservation (``shadow``, ``extra`` from
    :func:`shadow_time`): it starts if it fits in the ``free`` servers and either ends, by its estimate,
    by the shadow time or needs no more than the extra servers (which it then uses up). Returns the
    updated ``(n, free, extra)``."""
    need = server_need(view, s)
    if need <= free:
        in_time = now(view) + estimate(view, sizes, s, mode, factor, attribute) <= shadow
        n, free, extra = easy_start(actions, n, s, need, free, extra, in_time)
    return n, free, extra


@inline_jit
def easy_start(actions, n, s, need, free, extra, in_time):
    """EASY's rule for a later job ``s`` that fits now (``need`` <= ``free``): it starts if it ends by the
    head's shadow time (``in_time``, by whatever estimate the policy goes by) or needs no more than the
    ``extra`` servers the head leaves spare, which it then uses up. Returns the updated
    ``(n, free, extra)``."""
    if in_time:
        return start(actions, n, s), free - need, extra
    if need <= extra:
        return start(actions, n, s), free - need, extra - need
    return n, free, extra


FIELDS = Record("estimate_factor", "estimate_mode", "requested_attribute")  # f of the f-model (0: exact)
ESTIMATE_FACTOR, ESTIMATE_MODE, REQUESTED_ATTRIBUTE = FIELDS.ids
# shadow_time's scratch: the running and just-started jobs with their estimated ends
WORK = Layout(ints={"end_slots": "servers"}, floats={"ends": "servers"})
END_SLOTS, ENDS = WORK.ids


@inline_jit
def _easy(view, sizes, pdata, actions):
    factor = value(pdata.params, ESTIMATE_FACTOR)
    mode = int_value(pdata.params, ESTIMATE_MODE)
    attribute = int_value(pdata.params, REQUESTED_ATTRIBUTE)
    free = free_servers(view)
    n = 0
    s = first_waiting(view)
    while s != -1 and server_need(view, s) <= free:
        n = start(actions, n, s)
        free -= server_need(view, s)
        s = next_waiting(view, s)
    if s == -1 or free == 0:
        return n
    head = s
    # Shadow time: when the running jobs (by estimated end) free enough servers for the head job.
    ends, slots = region(pdata.fwork, ENDS), region(pdata.iwork, END_SLOTS)
    shadow, extra = shadow_time(
        view, sizes, actions, n, server_need(view, head), free, mode, factor, attribute, ends, slots
    )
    min_need = smallest_need(view)
    # Backfill later jobs that fit now and either end by the shadow time or use only the extra servers.
    s = next_waiting(view, head)
    while s != -1 and free >= min_need:
        n, free, extra = backfill_job(
            view, sizes, actions, n, s, free, extra, shadow, mode, factor, attribute
        )
        s = next_waiting(view, s)
    return n


class EasyBackfilling(Policy):
    """EASY backfilling: start jobs in arrival order while the oldest fits. When it does not, reserve
    servers for it at the *shadow time* (when, by the running jobs' estimated completions, enough servers
    will be free) and let later jobs start now if they fit and either finish (by their estimate) before
    the shadow time or use only the servers the reservation leaves spare.

    Source: Grosof & Harchol-Balter (2023), Sec. 5.1 and Fig. 2 (exact durations); the "extra servers"
    clause is the standard EASY rule (Lifka 1995; Mu'alem & Feitelson 2001), which Grosof & Harchol-Balter's
    summary omits.
    Runtime estimates, chosen by ``estimates``: ``"exact"`` durations; ``"f-model"``: each job's
    estimate uniform in [D, (1 + f) D] with f = ``estimate_factor`` (Mu'alem & Feitelson's f-model),
    drawn from the job stream's own noise, so every policy still sees the same jobs; ``"requested"``:
    the time each job's user requested, on a trace that carries them (an SWF log: field 9), as
    production EASY schedulers use it (Mu'alem & Feitelson 2001, Sec. 2). ``"auto"`` (the default) is
    ``"exact"`` for ``estimate_factor = 0`` and ``"f-model"`` otherwise. A job outliving its estimate is
    assumed to end at once.
    Non-preemptive; size-aware (it is handed the service times; with ``estimates="requested"`` it reads
    only the requested times, estimates its users give, not the jobs' sizes).
    """

    policy_id = "easy-backfilling"
    preemptive = False
    size_aware = True
    reference = "Grosof & Harchol-Balter (2023), Sec. 5.1"
    params_spec: ClassVar[Mapping[str, Param]] = {
        "estimate_factor": Param(
            float, 0.0, "f-model overestimate: estimates uniform in [D, (1+f) D]", minimum=0.0
        ),
        "estimates": Param(
            str,
            "auto",
            "run-time estimates: exact, f-model, requested (a trace's requested times), or auto "
            "(exact for estimate_factor 0, else f-model)",
            choices=("auto", *ESTIMATES),
        ),
    }
    kernel = _easy
    work = WORK

    @property
    def estimates(self) -> str:
        """The estimates this instance uses (``"auto"`` resolved)."""
        chosen = self.param_values["estimates"]
        if chosen == "auto":
            return "f-model" if self.param_values["estimate_factor"] > 0 else "exact"
        return chosen

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        check_estimates(self.policy_id, self.estimates, self.param_values["estimate_factor"])

    # a policy is asked only about a workload of its own models (for_workload checks): narrower by design
    def unsupported(self, workload: ClassTable) -> str | None:  # type: ignore[override]
        return estimates_unsupported(self.policy_id, self.estimates, workload)

    def kind_notes(self) -> tuple[str, ...]:
        return (f"estimates: {self.estimates}",)

    def reads_sizes(self) -> bool:
        return self.estimates != "requested"

    # a policy is prepared only for a workload of its own models (for_workload checks): narrower by design
    def prepare(self, workload: ClassTable, rng: np.random.Generator) -> PolicyData:  # type: ignore[override]
        base = super().prepare(workload, rng)
        fields = estimate_fields(
            self.policy_id, self.estimates, self.param_values["estimate_factor"], workload
        )
        return base._replace(params=FIELDS.pack(**fields))
