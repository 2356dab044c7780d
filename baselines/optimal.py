"""The exact average-cost optimal policy of a small exponential system, as a baseline.

:func:`msj_gym.analysis.optimal.solve_optimal` solves the Markov decision process of the per-class
counts; these policies read the solved table in compiled code, so that the optimum runs natively,
through ``MSJ-v0`` / ``MSJPreemptive-v0`` with :class:`~msj_gym.PolicyAgent`, and in the leaderboard
like any other baseline.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from msj_gym.analysis.solutions import solved_table
from msj_gym.core import Policy
from msj_gym.core.access import (
    class_running,
    class_waiting,
    field,
    first_waiting_of_class,
    int_value,
    job_class,
    job_id,
    next_waiting_of_class,
    num_running,
    preempt,
    region,
    running_job,
    start,
)
from msj_gym.core.jit import inline_jit
from msj_gym.core.layout import Layout
from msj_gym.core.policy import Param
from msj_gym.core.record import Record
from msj_gym.core.state import PolicyData
from msj_gym.workloads.workload import Workload

__all__ = ["MDPOptimal", "MDPOptimalPreemptive"]

# PolicyData.params: per class the solved buffer T_c, the stride of its count in the table's flat
# index and its radix place in a configuration's code (C each); the configurations (nR of them); the
# configuration of each code, -1 if none (prod_c (k // n_c + 1)); each configuration's C counts
# (nR * C); and up[c * nR + r], the configuration r with one more class-c job
FIELDS = Record("buffers", "strides", "bases", "num_configs", "lookup", "configs", "up")
BUFFERS, STRIDES, BASES, NUM_CONFIGS, LOOKUP, CONFIGS, UP = FIELDS.ids
WORK = Layout(ints={"cursor": "classes"})  # each class's next waiting job not yet started
(CURSOR,) = WORK.ids


@inline_jit
def _mdp_optimal(view, pdata, actions):
    params = pdata.params
    buffers, strides, bases = field(params, BUFFERS), field(params, STRIDES), field(params, BASES)
    nclass = buffers.size
    nR = int_value(params, NUM_CONFIGS)
    t_flat = 0
    code = 0
    for c in range(nclass):
        running = class_running(view, c)
        t = class_waiting(view, c) + running
        cap = int(buffers[c])
        if t > cap:
            t = cap
        t_flat += t * int(strides[c])
        code += running * int(bases[c])
    cfg = int(field(params, LOOKUP)[code])
    up = field(params, UP)
    gsize = pdata.table.shape[1] // nR
    cursor = region(pdata.iwork, CURSOR)
    for c in range(nclass):
        cursor[c] = first_waiting_of_class(view, c)
    n = 0
    while True:
        c = int(pdata.table[0, cfg * gsize + t_flat])
        if c < 0:
            break
        s = cursor[c]
        n = start(actions, n, s)
        cursor[c] = next_waiting_of_class(view, s)
        cfg = int(up[c * nR + cfg])
    return n


@inline_jit
def _mdp_optimal_preemptive(view, pdata, actions):
    params = pdata.params
    buffers, strides = field(params, BUFFERS), field(params, STRIDES)
    configs = field(params, CONFIGS)
    nclass = buffers.size
    t_flat = 0
    for c in range(nclass):
        t = class_waiting(view, c) + class_running(view, c)
        cap = int(buffers[c])
        if t > cap:
            t = cap
        t_flat += t * int(strides[c])
    target = int(pdata.table[0, t_flat])
    n = 0
    # preempt first: the youngest running jobs of each class above its target
    nrun = num_running(view)
    for c in range(nclass):
        excess = class_running(view, c) - int(configs[target * nclass + c])
        below = -1  # job ids already chosen are the youngest; take the next below them
        for _ in range(excess):
            best = -1
            best_id = -1
            for p in range(nrun):
                s = running_job(view, p)
                j = job_id(view, s)
                if job_class(view, s) == c and j > best_id and (below < 0 or j < below):
                    best, best_id = s, j
            n = preempt(actions, n, best)
            below = best_id
    for c in range(nclass):
        short = int(configs[target * nclass + c]) - class_running(view, c)
        s = first_waiting_of_class(view, c)
        for _ in range(short):
            n = start(actions, n, s)
            s = next_waiting_of_class(view, s)
    return n


class _MDPOptimalBase(Policy):
    size_aware = False
    support_depends_on_load: ClassVar[bool] = True  # the chain grows with the load
    work = WORK
    params_spec: ClassVar[dict[str, Param]] = {
        "blocking_target": Param(
            float, 1e-6, "largest fraction of arrivals the solver's truncation may lose", minimum=0.0
        )
    }

    # a policy is asked only about a workload of its own models (for_workload checks): narrower by design
    def unsupported(self, workload: Workload) -> str | None:  # type: ignore[override]
        """Whether the exact solver fits ``workload`` is what solving it says (an exponential system whose
        chain stays within the state limit): the solve is made here, once, and kept on disk for
        :meth:`prepare` and every later run (so the answer depends on the load)."""
        try:
            solved_table(workload, self.preemptive, self.param_values["blocking_target"])
        except ValueError as exc:
            return str(exc)
        return None

    # a policy is prepared only for a workload of its own models (for_workload checks): narrower by design
    def prepare(self, workload: Workload, rng: np.random.Generator) -> PolicyData:  # type: ignore[override]
        solved = solved_table(workload, self.preemptive, self.param_values["blocking_target"])
        configs, up, T = solved["configs"], solved["up"], solved["buffers"]
        nR, C = configs.shape
        k = int(workload.num_servers)
        needs = [int(n) for n in workload.server_needs]
        grid = [int(b) + 1 for b in T]
        strides = [int(np.prod(grid[c + 1 :])) for c in range(C)]
        radix = [k // n + 1 for n in needs]
        bases = [int(np.prod(radix[:c])) for c in range(C)]
        lookup = np.full(int(np.prod(radix)), -1, dtype=np.int64)
        for i, r in enumerate(configs):
            lookup[int(np.dot(r, bases))] = i
        params = FIELDS.pack(
            buffers=T,
            strides=strides,
            bases=bases,
            num_configs=nR,
            lookup=lookup,
            configs=configs.ravel(),
            up=up.ravel(),
        )
        table = np.asarray(solved["table"], dtype=np.float64).reshape(1, -1)
        base = super().prepare(workload, rng)
        return base._replace(params=params, table=table)


class MDPOptimal(_MDPOptimalBase):
    """The exact long-run average-cost optimal non-preemptive policy of an exponential system.

    Source: the Markov decision process of the per-class numbers of jobs queued and in service (no
    paper of the five solves it; the model is Grosof & Harchol-Balter (2023), Sec. 3 / Chen et al. (2026),
    Sec. 3 with Poisson arrivals and exponential service times), solved by
    :func:`msj_gym.analysis.optimal.solve_optimal` (policy iteration on the uniformised chain, buffers grown
    until less than ``blocking_target`` of the arrivals would be lost). At each decision it starts, one at a
    time, the oldest waiting job of the class the solved table names, and may leave servers idle on purpose;
    beyond the solved buffers it acts as at the buffer. Defined only on Poisson workloads with exponential
    service times whose state space is small enough (sf-fig2, one-or-all, two-class systems with k <= 64).
    Non-preemptive; size-oblivious (it knows the classes' rates, as the distributions are known).
    """

    policy_id = "mdp-optimal"
    preemptive = False
    reference = (
        "exact MDP (analysis.optimal); model of Grosof & Harchol-Balter (2023), Sec. 3, "
        "Chen et al. (2026), Sec. 3"
    )
    kernel = _mdp_optimal


class MDPOptimalPreemptive(_MDPOptimalBase):
    """The exact long-run average-cost optimal preemptive (preempt-resume) policy of an exponential
    system: the state is the number of jobs of each class in the system, and the solved table names
    the configuration to serve; jobs above it are preempted (the youngest of a class first), jobs
    below it started (the oldest first). See :class:`MDPOptimal` for the solver and where it is defined.
    Preemptive; size-oblivious.
    """

    policy_id = "mdp-optimal-preemptive"
    preemptive = True
    reference = "exact MDP (analysis.optimal); model of Grosof & Harchol-Balter (2023), Sec. 3"
    kernel = _mdp_optimal_preemptive
