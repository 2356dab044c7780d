"""The allocation protocol of the moldable loss system and its one compiled decision rule.

Every allocation scheme of the source paper is a *probabilistic greedy rule within a server pool*
(Ghanbarian et al. (2024), Sec. 3-4 and 6): an arrival of class ``c`` that finds ``m >= 1`` idle servers in
its pool draws ``J`` from the class's probability vector ``p^(c)`` and gets ``min(m, J)`` servers (it is
lost if ``m = 0``). The p-scheme takes ``p`` from the LP optimum with one pool of all servers; greedy is
``p = e_d`` ("the p-scheme with p_d = 1"); the reserved scheme splits the servers into one
pool per class. A policy is therefore a :class:`MoldablePolicy` whose ``prepare`` turns the system into
a :class:`AllocationRule` (pools and ``p``), and :func:`allocate` is the decision rule that both the
batch loop and agents acting through ``MSJMoldable-v0`` call.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, NamedTuple

import numpy as np

from ..core.jit import kernel_jit
from ..core.policy import Param, check_param_names
from .model import MoldableSystem

__all__ = ["AllocationRule", "MoldablePolicy", "allocate", "make_rule"]


class AllocationRule(NamedTuple):
    """Arrays the decision rule reads: ``pool_of_class[c]``, ``pool_size[pool]``, ``cum_p[c, j-1] =
    P(J <= j)`` for class ``c`` (last entry 1) and ``max_parallelism[c]``."""

    pool_of_class: np.ndarray
    pool_size: np.ndarray
    cum_p: np.ndarray
    max_parallelism: np.ndarray


def make_rule(p: list[np.ndarray], pool_of_class: np.ndarray, pool_size: np.ndarray) -> AllocationRule:
    """An :class:`AllocationRule` from per-class probability vectors (``p[c][j-1] = P(J = j)``)."""
    dmax = max(len(v) for v in p)
    cum = np.ones((len(p), dmax))
    for c, v in enumerate(p):
        v = np.clip(np.asarray(v, dtype=np.float64), 0.0, None)
        if v.sum() <= 0:
            raise ValueError(f"p[{c}]: expected a probability vector, got {v!r}")
        cum[c, : len(v)] = np.cumsum(v / v.sum())
        cum[c, len(v) - 1 :] = 1.0
    return AllocationRule(
        np.asarray(pool_of_class, dtype=np.int64),
        np.asarray(pool_size, dtype=np.int64),
        cum,
        np.array([len(v) for v in p], dtype=np.int64),
    )


@kernel_jit
def allocate(rule, c, busy_by_class, idle, u):
    """Servers for an arrival of class ``c`` (0: blocked): ``min(m, J)`` with ``m`` the idle servers of
    its pool (never more than the ``idle`` servers of the system) and ``J`` the first ``j`` with
    ``u < P(J <= j)`` for the arrival's uniform ``u`` (the paper's eq. (10))."""
    pool = rule.pool_of_class[c]
    m = rule.pool_size[pool]
    for c2 in range(busy_by_class.size):
        if rule.pool_of_class[c2] == pool:
            m -= busy_by_class[c2]
    m = min(m, idle)
    if m <= 0:
        return 0
    d = rule.max_parallelism[c]
    j = d
    for i in range(d):
        if u < rule.cum_p[c, i]:
            j = i + 1
            break
    return min(m, j)


class MoldablePolicy:
    """Base class of the moldable allocation schemes: ``policy_id``, ``reference`` (paper, section),
    ``params_spec`` (declared parameters) and ``prepare(system) -> AllocationRule``. Non-preemptive by
    construction (allocations are fixed at admission; ``preemptive`` and ``size_aware`` are False, as the
    listings of every model read them); ``needs_load`` says whether the scheme uses the
    arrival rates and speed-ups (the p-scheme does, greedy does not). No scheme reads inherent sizes."""

    policy_id: ClassVar[str] = ""
    reference: ClassVar[str] = ""
    models: ClassVar[tuple[str, ...]] = ("moldable",)  # the registry's model field (msj_gym.registry)
    preemptive: ClassVar[bool] = False
    size_aware: ClassVar[bool] = False
    needs_load: ClassVar[bool] = True
    params_spec: ClassVar[Mapping[str, Param]] = {}

    def __init__(self, **params: Any) -> None:
        check_param_names(self.policy_id, self.params_spec, params)
        self.param_values = {
            n: spec.kind(params.get(n, spec.default)) for n, spec in self.params_spec.items()
        }

    def prepare(self, system: MoldableSystem) -> AllocationRule:  # pragma: no cover - abstract
        raise NotImplementedError

    def decide(self, rule: AllocationRule, c: int, busy_by_class: np.ndarray, idle: int, u: float) -> int:
        """One decision from Python (the agents' path); the batch loop calls :func:`allocate` directly."""
        return int(allocate(rule, c, busy_by_class, idle, u))

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.policy_id, "params": dict(self.param_values)}

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.param_values})"
