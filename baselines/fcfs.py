"""First-Come First-Served."""

from __future__ import annotations

from typing import ClassVar

from msj_gym.core import Policy
from msj_gym.core.access import first_waiting, free_servers, next_waiting, server_need, start
from msj_gym.core.jit import inline_jit
from msj_gym.core.workload import WorkloadLike
from msj_gym.workloads.workload import ClassTable


@inline_jit
def _fcfs(view, pdata, actions):
    free = free_servers(view)
    s = first_waiting(view)
    n = 0
    while s != -1 and server_need(view, s) <= free:  # the oldest job that does not fit blocks the rest
        n = start(actions, n, s)
        free -= server_need(view, s)
        s = next_waiting(view, s)
    return n


class FCFS(Policy):
    """First-Come First-Served: start waiting jobs in arrival order while the oldest one fits; a job
    that does not fit blocks every job behind it (head-of-line blocking).

    Source: Anselmi & Doncel (2024), Sec. 2; Grosof & Harchol-Balter (2023), Sec. 2.
    Non-preemptive; size-oblivious.

    FCFS on the job-server compatibility model (Bonald & Comte (2017), Sec. 2) is another rule, with
    its own id: ``compat-fcfs`` (:class:`~msj_gym.baselines.balanced_fair.CompatFCFS`).
    """

    policy_id = "fcfs"

    def stability_limit(self, workload: WorkloadLike) -> tuple[float, str] | None:
        """Exact for exponential durations: the saturated system's throughput (the saturation rule of
        Foss & Chernova), where its Markov chain is small enough to solve."""
        if not isinstance(workload, ClassTable):
            return None
        # the analysis package loads on demand, so that importing the policies stays cheap
        from msj_gym.analysis.stability import fcfs_limit

        return fcfs_limit(workload)

    preemptive = False
    size_aware = False
    reference = "Anselmi & Doncel (2024), Sec. 2; Grosof & Harchol-Balter (2023), Sec. 2"
    kernel = _fcfs
    models: ClassVar[tuple[str, ...]] = ("msj",)

    def for_workload(self, workload: WorkloadLike) -> Policy:
        # the base refuses a workload of another model (as the registry's supports does); the one other
        # model the engine runs is the compatibility graph, where FCFS is a rule of its own
        try:
            return super().for_workload(workload)
        except ValueError:
            raise ValueError(
                "policy 'fcfs' runs on the msj model; FCFS on a compatibility workload is 'compat-fcfs'"
            ) from None
