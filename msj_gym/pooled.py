"""Runs of the job-server compatibility model (Bonald & Comte (2017), Sec. 2 and 4).

The model runs on the engine's own loop (``advance`` -> the policy's decision kernel -> ``apply``),
with the engine's general features doing what the model needs (see :mod:`msj_gym.core.engine` and
:mod:`msj_gym.core.actions`):

* each job's servers are per-job attributes drawn with its arrival (``CompatWorkload.job_attributes``,
  ``view.ji[s, JATTR:]``);
* each job is served at a rate, the sum of its servers' capacities (``OP_SERVE``): ``REMAINING`` and
  ``ATTAINED`` are work, settled at every rate change; ``NEED`` is the number of servers it holds, so
  the engine's capacity check, busy-server count and utilisation count servers one by one;
* Algorithm 1's interruptions are expiries of per-job work budgets (``OP_BUDGET``), and an interrupted
  job goes to the end of the service order (``OP_REQUEUE``), which the engine's job lists follow.

The allocation rule itself (each server serves the first job in the service order that may use it) is
the policies' decision kernel, in ``baselines/balanced_fair.py`` (``compat-fcfs`` and
``balanced-fair``), with its own invariant, checked after every event in debug mode.

:class:`PooledSimulator` is a :class:`~msj_gym.core.Simulator` that checks Theorem 1 before a run and
adds the model's metrics to the result.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from .core.policy import Policy
from .core.simulator import Simulator
from .metrics.result import SimulationResult
from .workloads.compat import CompatWorkload

__all__ = ["PooledSimulator"]


class PooledSimulator(Simulator):
    """One seeded run of a compatibility-model scheduler on a
    :class:`~msj_gym.workloads.compat.CompatWorkload`; measurement options, results and records as in
    :class:`~msj_gym.core.Simulator`, whose loop it runs.

    The scheduler is a policy defined on the compatibility model: ``compat-fcfs`` or ``balanced-fair``. The
    stability condition of Theorem 1 is checked first; an unstable system raises unless
    ``allow_unstable=True``. ``record_jobs`` records' ``service_received`` is the work received, and
    ``first_start`` the first time any server served the job.

    Metrics: ``mean_waiting_time`` is response time minus size (at unit capacity), not a wait in
    queue; ``policy_metrics`` adds ``interruptions_per_job`` and per class the mean service rate
    ``service_rate.NAME`` = sigma / delta_i (Bonald & Comte (2017), eq. 9).
    """

    def __init__(
        self, workload: CompatWorkload, policy: Policy, *, allow_unstable: bool = False, **kwargs: Any
    ) -> None:
        from .analysis.balanced_fairness import stability_violation

        if not isinstance(workload, CompatWorkload):
            raise TypeError(
                f"workload: expected a compatibility-graph CompatWorkload, got {type(workload).__name__}"
            )
        if not isinstance(policy, Policy):
            raise TypeError(f"policy: expected a msj_gym Policy, got {type(policy).__name__}")
        policy = policy.for_workload(workload)
        if not allow_unstable:
            why = stability_violation(workload)
            if why is not None:
                raise ValueError(
                    f"workload {workload.name!r} is unstable (Bonald & Comte 2017, Theorem 1): {why}"
                )
        self.interruptions = float(getattr(policy, "interruptions_per_job", 0.0))
        super().__init__(workload, policy, **kwargs)

    def result(self, ended: bool | None = None) -> SimulationResult:
        res = super().result(ended)
        sigma = self.workload.mean_size
        extra: dict[str, Any] = {
            "interruptions_per_job": res.preemptions_per_job,
            "interruption_parameter_m": self.interruptions,
        }
        for name, c in res.per_class.items():
            extra[f"service_rate.{name}"] = sigma / c.mean_response_time if c.count else float("nan")
        return dataclasses.replace(res, policy_metrics={**res.policy_metrics, **extra})
