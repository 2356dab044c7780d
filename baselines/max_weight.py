"""MaxWeight, in its myopic non-preemptive form."""

from __future__ import annotations

import numpy as np

from msj_gym.core import Policy
from msj_gym.core.access import (
    class_running,
    class_waiting,
    field,
    first_waiting_of_class,
    free_servers,
    job_id,
    next_waiting_of_class,
    num_classes,
    region,
    start,
)
from msj_gym.core.jit import inline_jit
from msj_gym.core.layout import Layout
from msj_gym.core.record import Record
from msj_gym.core.state import PolicyData
from msj_gym.workloads.workload import ClassTable

# The distinct server needs, decreasing ("groups"), and each class's group.
FIELDS = Record("group_need", "gmap")
GROUP_NEED, GMAP = FIELDS.ids
# per need (at most one per class): Q, the jobs in the system, and the waiting ones; per class a cursor
# on its waiting jobs; the suffix DP table, (needs + 1) x (free servers + 1)
WORK = Layout(
    ints={"q": "classes", "u": "classes", "cursor": "classes"},
    floats={"best": "(classes + 1) * (servers + 1)"},
)
Q, U, CURSOR, BEST = WORK.ids


@inline_jit
def _max_weight(view, pdata, actions):
    free = free_servers(view)
    if free == 0:
        return 0
    nclass = num_classes(view)
    group_need = field(pdata.params, GROUP_NEED)
    gmap = field(pdata.params, GMAP)
    ngroup = group_need.size
    q = region(pdata.iwork, Q)
    u = region(pdata.iwork, U)
    cursor = region(pdata.iwork, CURSOR)
    width = free + 1
    best = region(pdata.fwork, BEST)
    for g in range(ngroup):
        q[g] = 0
        u[g] = 0
    for c in range(nclass):
        g = int(gmap[c])
        q[g] += class_waiting(view, c) + class_running(view, c)
        u[g] += class_waiting(view, c)
        cursor[c] = first_waiting_of_class(view, c)
    # best[g, cap]: the largest sum_{h >= g} Q_h x_h over packings of `cap` servers (suffix DP).
    for cap in range(width):
        best[ngroup * width + cap] = 0.0
    for g in range(ngroup - 1, -1, -1):
        w = int(group_need[g])
        for cap in range(width):
            v = best[(g + 1) * width + cap]
            xmax = min(u[g], cap // w)
            for x in range(1, xmax + 1):
                cand = q[g] * x + best[(g + 1) * width + cap - x * w]
                if cand > v:
                    v = cand
            best[g * width + cap] = v
    # Among optimal packings take the lexicographically largest in decreasing need (prefix-consistent),
    # then start the oldest waiting jobs of each chosen need.
    cap = free
    n = 0
    for g in range(ngroup):
        w = int(group_need[g])
        target = best[g * width + cap]
        x = min(u[g], cap // w)
        while x > 0 and q[g] * x + best[(g + 1) * width + cap - x * w] != target:
            x -= 1
        cap -= x * w
        for _ in range(x):
            pick = -1
            for c in range(nclass):
                s = cursor[c]
                if (
                    int(gmap[c]) == g
                    and s != -1
                    and (pick == -1 or job_id(view, s) < job_id(view, cursor[pick]))
                ):
                    pick = c
            n = start(actions, n, cursor[pick])
            cursor[pick] = next_waiting_of_class(view, cursor[pick])
    return n


class MaxWeight(Policy):
    """MaxWeight, myopic and non-preemptive: at every arrival and departure, keep the running jobs and
    fill the idle servers with the packing x that maximises sum_n Q_n x_n, where Q_n counts the jobs in
    the system (waiting or running) with server need n and x_n the waiting ones started (a bounded
    knapsack, solved exactly). Ties between optimal packings go to more jobs of larger need; within a
    need, the oldest jobs start.

    Source: Anselmi & Doncel (2024), Sec. 2 ("a myopic version of MaxWeight that is nonpreemptive and
    allocates ... using current queue length information at job departure times", after Maguluri et al.
    2012); Grosof & Harchol-Balter (2023), Sec. 5.4 for the weight. We decide at arrivals too: deciding
    only at departures would leave an idle system idle forever.
    Non-preemptive; size-oblivious. Cost per decision O(needs x k x k / n_min).
    """

    policy_id = "max-weight"
    preemptive = False
    size_aware = False
    reference = "Anselmi & Doncel (2024), Sec. 2; Grosof & Harchol-Balter (2023), Sec. 5.4"

    kernel = _max_weight
    work = WORK

    # a policy is prepared only for a workload of its own models (for_workload checks): narrower by design
    def prepare(self, workload: ClassTable, rng: np.random.Generator) -> PolicyData:  # type: ignore[override]
        base = super().prepare(workload, rng)
        needs = workload.server_needs
        groups = np.unique(needs)[::-1]
        gmap = [int(np.flatnonzero(groups == n)[0]) for n in needs]
        return base._replace(params=FIELDS.pack(group_need=groups, gmap=gmap))
