"""Scheduling policies of the source papers, each a baseline agent, registered by kebab-case id."""

from __future__ import annotations

from typing import Any

from msj_gym import registry as _registry
from msj_gym.core import Policy
from msj_gym.moldable.policy import MoldablePolicy
from msj_gym.registry import make_moldable_policy, supports

from .backfilling import EasyBackfilling
from .balanced_fair import (
    BalancedFair,
    CompatLeastLoaded,
    CompatScoredAssignment,
    LeastLoadedAssignmentAgent,
    ScoredAssignmentAgent,
)
from .balanced_splitting import BalancedSplitting, ModifiedBalancedSplitting
from .fcfs import FCFS
from .hpc import F1, SJF, UNICEP, WFP3, F1Easy, SJFEasy, UNICEPEasy, WFP3Easy
from .max_weight import MaxWeight
from .moldable import Greedy, PScheme, Reserved
from .nmsr import NMSR
from .optimal import MDPOptimal, MDPOptimalPreemptive
from .priority import FirstFit, LeastServersFirst, MostServersFirst, MostServersFirstPreemptive
from .quickswap import MSFQ, AdaptiveQuickswap, StaticQuickswap
from .server_filling import FirstFitSRPT, ServerFilling, ServerFillingGittins, ServerFillingSRPT

#: The MSJ and compatibility-model policies (every model but the moldable loss system's), by id, in the
#: registry's order (:mod:`msj_gym.registry`); the classes are imported above for the package's names.
POLICIES: dict[str, type[Policy]] = _registry.list_policies(_registry.ENGINE_MODELS)

#: The moldable loss system's allocation schemes, by id.
MOLDABLE_POLICIES: dict[str, type[MoldablePolicy]] = _registry.list_policies("moldable")


def make_policy(policy_id: str, **params: Any) -> Any:
    """A policy instance by id, e.g. ``make_policy("easy-backfilling", estimate_factor=2.0)``: any id of
    the registry (:func:`msj_gym.registry.make_policy`), a moldable scheme's included."""
    return _registry.make_policy(policy_id, **params)


def list_policies() -> dict[str, type[Policy]]:
    """The MSJ and compatibility-model policies by id (:data:`POLICIES`); every model's are in
    :func:`msj_gym.registry.list_policies`."""
    return dict(POLICIES)


def non_preemptive() -> list[str]:
    """Ids of the policies of :data:`POLICIES` that never preempt."""
    return _registry.policy_ids(_registry.ENGINE_MODELS, preemptive=False)


__all__ = [
    "F1",
    "FCFS",
    "MOLDABLE_POLICIES",
    "MSFQ",
    "NMSR",
    "POLICIES",
    "SJF",
    "UNICEP",
    "WFP3",
    "AdaptiveQuickswap",
    "BalancedFair",
    "BalancedSplitting",
    "CompatLeastLoaded",
    "CompatScoredAssignment",
    "EasyBackfilling",
    "F1Easy",
    "FirstFit",
    "FirstFitSRPT",
    "Greedy",
    "LeastLoadedAssignmentAgent",
    "LeastServersFirst",
    "MDPOptimal",
    "MDPOptimalPreemptive",
    "MaxWeight",
    "ModifiedBalancedSplitting",
    "MostServersFirst",
    "MostServersFirstPreemptive",
    "PScheme",
    "Reserved",
    "SJFEasy",
    "ScoredAssignmentAgent",
    "ServerFilling",
    "ServerFillingGittins",
    "ServerFillingSRPT",
    "StaticQuickswap",
    "UNICEPEasy",
    "WFP3Easy",
    "list_policies",
    "make_moldable_policy",
    "make_policy",
    "non_preemptive",
    "supports",
]
