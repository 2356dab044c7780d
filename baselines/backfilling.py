"""EASY backfilling."""

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
    last_start,
    next_waiting,
    now,
    num_classes,
    num_running,
    num_servers,
    running_job,
    server_need,
    service_time,
    start,
    value,
)
from msj_gym.core.jit import inline_jit
from msj_gym.core.record import Record
from msj_gym.core.state import PolicyData

from ._kit import sort_ascending

FIELDS = Record("estimate_factor")  # f of the f-model (0: exact durations)
(ESTIMATE_FACTOR,) = FIELDS.ids


@inline_jit
def _estimate(sizes, s, factor):
    return service_time(sizes, s) * (1.0 + factor * estimate_noise(sizes, s))


@inline_jit
def _easy(view, sizes, pdata, actions):
    factor = value(pdata.params, ESTIMATE_FACTOR)
    k = num_servers(view)
    t = now(view)
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
    head_need = server_need(view, head)
    # Shadow time: when the running jobs (by estimated end) free enough servers for the head job.
    ends, slots = pdata.fwork[:k], pdata.iwork[:k]
    m = 0
    for p in range(num_running(view)):
        r = running_job(view, p)
        ends[m] = max(last_start(view, r) + _estimate(sizes, r, factor), t)
        slots[m] = r
        m += 1
    for i in range(n):
        ends[m] = t + _estimate(sizes, actions[i], factor)
        slots[m] = actions[i]
        m += 1
    sort_ascending(view, ends, slots, m)
    avail = free
    shadow = np.inf
    extra = 0
    for i in range(m):
        avail += server_need(view, slots[i])
        if avail >= head_need:
            shadow = ends[i]
            extra = avail - head_need
            break
    min_need = k
    for c in range(num_classes(view)):
        min_need = min(min_need, class_need(view, c))
    # Backfill later jobs that fit now and either end by the shadow time or use only the extra servers.
    s = next_waiting(view, head)
    while s != -1 and free >= min_need:
        need = server_need(view, s)
        if need <= free:
            if t + _estimate(sizes, s, factor) <= shadow:
                n = start(actions, n, s)
                free -= need
            elif need <= extra:
                n = start(actions, n, s)
                free -= need
                extra -= need
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
    Runtime estimates: ``estimate_factor = 0`` (default) uses exact durations; f > 0 draws each job's
    estimate uniformly in [D, (1 + f) D] (Mu'alem & Feitelson's f-model) from the job stream's own
    noise, so every policy still sees the same jobs. A job outliving its estimate is assumed to end at
    once.
    Non-preemptive; size-aware (uses estimates).
    """

    policy_id = "easy-backfilling"
    preemptive = False
    size_aware = True
    reference = "Grosof & Harchol-Balter (2023), Sec. 5.1"
    params_spec: ClassVar[Mapping[str, Param]] = {
        "estimate_factor": Param(
            float, 0.0, "f-model overestimate: estimates uniform in [D, (1+f) D]", minimum=0.0
        ),
    }
    kernel = _easy

    def prepare(self, workload: Any, rng: np.random.Generator) -> PolicyData:
        base = super().prepare(workload, rng)
        return base._replace(params=FIELDS.pack(estimate_factor=self.param_values["estimate_factor"]))

    def work_sizes(self, num_slots: int, num_servers: int, num_classes: int) -> tuple[int, int]:
        return 2 * num_servers, 2 * num_servers
