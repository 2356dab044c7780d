"""Balanced fair sharing on the job-server compatibility model: Algorithm 1 of Bonald & Comte (003)."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from msj_gym.core import Param, Policy
from msj_gym.core.state import PolicyData


class BalancedFair(Policy):
    """Algorithm 1 (random service interruptions) of Bonald & Comte, *Balanced Fair Resource Sharing
    in Computer Clusters* (003 Sec. 4), on the job-server compatibility model of Sec. 2.

    Each server interrupts the job it serves after an exponential time of rate C_s / theta; the
    interrupted job releases all its servers and goes to the end of the (single, virtual) queue, whose
    order each server follows: it serves the first job in the queue that may use it. The parameter is
    ``m = sigma / theta``, the mean number of interruptions per job (sigma the mean job size); ``m = 0``
    is FCFS, and as m grows the allocation tends to balanced fairness (Theorem 2), whose performance is
    insensitive to the job-size distribution beyond its mean.

    Reading: the timers are driven per unit of work (rate C_s / theta at each serving server adds up to
    the job's rate / theta), so a job is interrupted after Exp(theta) work, which is the same process.
    Runs only on a :class:`~msj_gym.workloads.compat.CompatWorkload`, through
    :class:`~msj_gym.core.pooled.PooledSimulator`; the allocation itself is the model's, so the policy
    carries its parameter rather than a per-event decision kernel.

    Preemptive (interruptions, preempt-resume: work done is kept); size-oblivious.
    """

    policy_id = "balanced-fair"
    preemptive = True
    size_aware = False
    reference = "003 Sec. 4, Algorithm 1"
    params_spec: ClassVar[dict[str, Param]] = {
        "m": Param(
            float, 5.0, "mean number of service interruptions per job, m = sigma/theta (0: FCFS)", minimum=0.0
        )
    }

    @property
    def interruptions_per_job(self) -> float:
        return float(self.param_values["m"])

    def prepare(self, workload: Any, rng: np.random.Generator) -> PolicyData:
        if not hasattr(workload, "capacities"):
            raise ValueError(
                f"policy 'balanced-fair': defined on the job-server compatibility model (CompatWorkload), "
                f"not on {type(workload).__name__}"
            )
        return super().prepare(workload, rng)
