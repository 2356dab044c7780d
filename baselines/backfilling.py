"""EASY backfilling."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np

from msj_gym.core import Param, Policy
from msj_gym.core.jit import inline_jit
from msj_gym.core.state import (
    C_NEED,
    F_NOW,
    I_FREE,
    I_K,
    I_NCLASS,
    I_NRUN,
    I_WHEAD,
    LAST_START,
    NEED,
    NOISE,
    SERVICE,
    WNEXT,
    PolicyData,
)

from ._kit import sort_ascending


@inline_jit
def _estimate(sizes, s, factor):
    return sizes.js[s, SERVICE] * (1.0 + factor * sizes.js[s, NOISE])


@inline_jit
def _easy(view, sizes, pdata, actions):
    factor = pdata.params[0]
    k = view.iv[I_K]
    now = view.fv[F_NOW]
    free = view.iv[I_FREE]
    n = 0
    s = view.iv[I_WHEAD]
    while s != -1 and view.ji[s, NEED] <= free:
        actions[n] = s
        n += 1
        free -= view.ji[s, NEED]
        s = view.ji[s, WNEXT]
    if s == -1 or free == 0:
        return n
    head = s
    head_need = view.ji[head, NEED]
    # Shadow time: when the running jobs (by estimated end) free enough servers for the head job.
    ends, slots = pdata.fwork[:k], pdata.iwork[:k]
    m = 0
    for p in range(view.iv[I_NRUN]):
        r = view.run_list[p]
        ends[m] = max(view.jf[r, LAST_START] + _estimate(sizes, r, factor), now)
        slots[m] = r
        m += 1
    for i in range(n):
        ends[m] = now + _estimate(sizes, actions[i], factor)
        slots[m] = actions[i]
        m += 1
    sort_ascending(view, ends, slots, m)
    avail = free
    shadow = np.inf
    extra = 0
    for i in range(m):
        avail += view.ji[slots[i], NEED]
        if avail >= head_need:
            shadow = ends[i]
            extra = avail - head_need
            break
    min_need = k
    for c in range(view.iv[I_NCLASS]):
        min_need = min(min_need, view.ci[C_NEED, c])
    # Backfill later jobs that fit now and either end by the shadow time or use only the extra servers.
    s = view.ji[head, WNEXT]
    while s != -1 and free >= min_need:
        need = view.ji[s, NEED]
        if need <= free:
            if now + _estimate(sizes, s, factor) <= shadow:
                actions[n] = s
                n += 1
                free -= need
            elif need <= extra:
                actions[n] = s
                n += 1
                free -= need
                extra -= need
        s = view.ji[s, WNEXT]
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
        return base._replace(params=np.array([self.param_values["estimate_factor"]]))

    def work_sizes(self, num_slots: int, num_servers: int, num_classes: int) -> tuple[int, int]:
        return 2 * num_servers, 2 * num_servers
