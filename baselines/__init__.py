"""Scheduling policies of the source papers, each a baseline agent, registered by kebab-case id."""

from __future__ import annotations

from typing import Any

from msj_gym.core import Policy

from .backfilling import EasyBackfilling
from .balanced_fair import BalancedFair
from .balanced_splitting import BalancedSplitting, ModifiedBalancedSplitting
from .fcfs import FCFS
from .max_weight import MaxWeight
from .moldable import MOLDABLE_POLICIES, Greedy, PScheme, Reserved, make_moldable_policy
from .nmsr import NMSR
from .optimal import MDPOptimal, MDPOptimalPreemptive
from .priority import FirstFit, LeastServersFirst, MostServersFirst, MostServersFirstPreemptive
from .quickswap import MSFQ, AdaptiveQuickswap, StaticQuickswap
from .server_filling import FirstFitSRPT, ServerFilling, ServerFillingGittins, ServerFillingSRPT

_ALL: tuple[type[Policy], ...] = (
    FCFS,
    FirstFit,
    MostServersFirst,
    MostServersFirstPreemptive,
    LeastServersFirst,
    ServerFilling,
    ServerFillingSRPT,
    ServerFillingGittins,
    FirstFitSRPT,
    EasyBackfilling,
    MaxWeight,
    MSFQ,
    StaticQuickswap,
    AdaptiveQuickswap,
    NMSR,
    BalancedFair,
    BalancedSplitting,
    ModifiedBalancedSplitting,
    MDPOptimal,
    MDPOptimalPreemptive,
)

POLICIES: dict[str, type[Policy]] = {cls.policy_id: cls for cls in _ALL}


def make_policy(policy_id: str, **params: Any) -> Policy:
    """A policy instance by id, e.g. ``make_policy("easy-backfilling", estimate_factor=2.0)``."""
    cls = POLICIES.get(policy_id)
    if cls is None:
        raise ValueError(f"unknown policy {policy_id!r}; known: {', '.join(POLICIES)}")
    return cls(**params)


def supports(policy_id: str, workload: Any) -> str | None:
    """None if policy ``policy_id`` is defined on ``workload``, else the reason it is not."""
    import numpy as np

    try:
        make_policy(policy_id).for_workload(workload).prepare(workload, np.random.default_rng(0))
    except ValueError as exc:
        return str(exc)
    return None


def list_policies() -> dict[str, type[Policy]]:
    return dict(POLICIES)


def non_preemptive() -> list[str]:
    """Ids of the policies that never preempt."""
    return [pid for pid, cls in POLICIES.items() if not cls.preemptive]


__all__ = [
    "MOLDABLE_POLICIES",
    "POLICIES",
    "Greedy",
    "PScheme",
    "Reserved",
    "make_moldable_policy",
    "list_policies",
    "make_policy",
    "non_preemptive",
    "supports",
    *(cls.__name__ for cls in _ALL),
]
