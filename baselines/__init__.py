"""Scheduling policies of the source papers, each a baseline agent, registered by kebab-case id."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from msj_gym import registry as _registry
from msj_gym._lazy import LazyNames
from msj_gym.registry import make_moldable_policy, supports

if TYPE_CHECKING:
    from msj_gym.core import Policy
    from msj_gym.moldable.policy import MoldablePolicy

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
    from .self_tuning import SelfTuning, SelfTuningEasy
    from .server_filling import FirstFitSRPT, ServerFilling, ServerFillingGittins, ServerFillingSRPT

    #: The MSJ and compatibility-model policies (every model but the moldable loss system's), by id, in
    #: the registry's order (:mod:`msj_gym.registry`).
    POLICIES: dict[str, type[Policy]]
    #: The moldable loss system's allocation schemes, by id.
    MOLDABLE_POLICIES: dict[str, type[MoldablePolicy]]

# Where each class of the package's names lives: a class is imported when it is first asked for, so
# that running one policy (``make_policy``, ``msj-gym simulate``) imports its own module and no other.
_LAZY = LazyNames(__name__, globals(), {
    "backfilling": ("EasyBackfilling",),
    "balanced_fair": (
        "BalancedFair", "CompatLeastLoaded", "CompatScoredAssignment", "LeastLoadedAssignmentAgent",
        "ScoredAssignmentAgent",
    ),
    "balanced_splitting": ("BalancedSplitting", "ModifiedBalancedSplitting"),
    "fcfs": ("FCFS",),
    "hpc": ("F1", "SJF", "UNICEP", "WFP3", "F1Easy", "SJFEasy", "UNICEPEasy", "WFP3Easy"),
    "max_weight": ("MaxWeight",),
    "moldable": ("Greedy", "PScheme", "Reserved"),
    "nmsr": ("NMSR",),
    "optimal": ("MDPOptimal", "MDPOptimalPreemptive"),
    "priority": ("FirstFit", "LeastServersFirst", "MostServersFirst", "MostServersFirstPreemptive"),
    "quickswap": ("MSFQ", "AdaptiveQuickswap", "StaticQuickswap"),
    "self_tuning": ("SelfTuning", "SelfTuningEasy"),
    "server_filling": ("FirstFitSRPT", "ServerFilling", "ServerFillingGittins", "ServerFillingSRPT"),
})  # fmt: skip


def __getattr__(name: str) -> Any:
    if name == "POLICIES":
        value = _registry.list_policies(_registry.ENGINE_MODELS)
    elif name == "MOLDABLE_POLICIES":
        value = _registry.list_policies("moldable")
    else:
        return _LAZY(name)
    globals()[name] = value  # asked once
    return value


def __dir__() -> list[str]:
    return sorted({*_LAZY.dir(), "POLICIES", "MOLDABLE_POLICIES"})


def make_policy(policy_id: str, **params: Any) -> Any:
    """A policy instance by id, e.g. ``make_policy("easy-backfilling", estimate_factor=2.0)``: any id of
    the registry (:func:`msj_gym.registry.make_policy`), a moldable scheme's included."""
    return _registry.make_policy(policy_id, **params)


def list_policies() -> dict[str, type[Policy]]:
    """The MSJ and compatibility-model policies by id (:data:`POLICIES`); every model's are in
    :func:`msj_gym.registry.list_policies`."""
    return _registry.list_policies(_registry.ENGINE_MODELS)


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
    "SelfTuning",
    "SelfTuningEasy",
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
