"""Size-aware rules that a learned agent is measured against besides the papers' policies.

They are not baselines of the registry (the leaderboard ranks the papers' policies); they are the
obvious rules an action space like ``actions="priority-shortest"`` offers for free, so an agent acting
with it must be shown to beat them too (docs/agents.md), and ``msj_gym.agents.improve`` may start from them
(``--base msj_gym.agents.rules:LsfShortest``; a ``module:attr`` spec names them wherever a policy id is
taken, see :func:`msj_gym.registry.policy_from_spec`).
"""

from __future__ import annotations

import numpy as np

from msj_gym.baselines._kit import sort_ascending
from msj_gym.core import Policy
from msj_gym.core.access import (
    class_need,
    field,
    first_waiting_of_class,
    free_servers,
    next_waiting_of_class,
    region,
    service_time,
    start,
)
from msj_gym.core.jit import inline_jit
from msj_gym.core.layout import Layout
from msj_gym.core.record import Record
from msj_gym.core.state import PolicyData
from msj_gym.workloads.workload import ClassTable

FIELDS = Record("class_order")  # the classes by (server need, class), as float ids
(CLASS_ORDER,) = FIELDS.ids
# one class's waiting jobs at a time: their slots and service times, sorted together
WORK = Layout(ints={"slots": "slots"}, floats={"keys": "slots"})
SLOTS, KEYS = WORK.ids


@inline_jit
def _lsf_shortest(view, sizes, pdata, actions):
    order = field(pdata.params, CLASS_ORDER)
    slots, keys = region(pdata.iwork, SLOTS), region(pdata.fwork, KEYS)
    free = free_servers(view)
    n = 0
    for i in range(order.size):
        c = int(order[i])
        need = class_need(view, c)
        if need > free:
            continue
        m = 0
        s = first_waiting_of_class(view, c)
        while s != -1:
            slots[m] = s
            keys[m] = service_time(sizes, s)
            m += 1
            s = next_waiting_of_class(view, s)
        sort_ascending(view, keys, slots, m)  # ties: the oldest first
        for j in range(min(m, free // need)):
            n = start(actions, n, slots[j])
        free -= min(m, free // need) * need
    return n


class LsfShortest(Policy):
    """Least Servers First with the shortest waiting job first within each class: whenever servers are
    idle, go through the classes by increasing server need (ties: class order) and start each class's
    waiting jobs, shortest service time first (ties: the oldest), while they fit.

    Not from the papers: Least Servers First (Anselmi & Doncel (2024), Sec. 2) with Shortest Job First
    inside each class. On two classes it is exactly the choice "serve the smaller class first" of
    ``MSJ-v0``'s ``actions="priority-shortest"`` at every decision.
    Non-preemptive; size-aware (reads service times).
    """

    policy_id = "lsf-shortest"
    reference = "Anselmi & Doncel (2024), Sec. 2 (LSF), with SJF within each class"
    preemptive = False
    size_aware = True
    kernel = _lsf_shortest
    work = WORK

    # a policy is prepared only for a workload of its own models (for_workload checks): narrower by design
    def prepare(self, workload: ClassTable, rng: np.random.Generator) -> PolicyData:  # type: ignore[override]
        needs = workload.server_needs
        order = sorted(range(len(needs)), key=lambda c: (int(needs[c]), c))  # once, not per decision
        return super().prepare(workload, rng)._replace(params=FIELDS.pack(class_order=np.array(order, float)))
