"""Scheduling policies of the source papers, each a baseline agent, registered by kebab-case id."""

from __future__ import annotations

from typing import Any

from msj_gym import registry as _registry
from msj_gym.core import Policy
from msj_gym.moldable.policy import MoldablePolicy

from .backfilling import EasyBackfilling
from .balanced_fair import BalancedFair
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

# The built-in ids and their order come from the one registry (msj_gym.registry); the classes are
# imported above for the package's public names.
_ALL: tuple[type[Policy], ...] = tuple(
    cls
    for pid, cls in _registry.list_policies().items()
    if "moldable" not in _registry.policy_spec(pid).models
)

#: The MSJ and compatibility-model policies (every model but the moldable loss system's), by id.
POLICIES: dict[str, type[Policy]] = {cls.policy_id: cls for cls in _ALL}

#: The moldable loss system's allocation schemes, by id.
MOLDABLE_POLICIES: dict[str, type[MoldablePolicy]] = _registry.list_policies("moldable")


def make_policy(policy_id: str, **params: Any) -> Any:
    """A policy instance by id, e.g. ``make_policy("easy-backfilling", estimate_factor=2.0)``: any id of
    the registry (:func:`msj_gym.registry.make_policy`), a moldable scheme's included."""
    return _registry.make_policy(policy_id, **params)


def make_moldable_policy(policy_id: str, **params: Any) -> MoldablePolicy:
    """A moldable allocation scheme by id: ``moldable-p-scheme``, ``moldable-greedy``,
    ``moldable-reserved``."""
    if policy_id not in _registry.policy_ids("moldable"):
        known = ", ".join(_registry.policy_ids("moldable"))
        raise ValueError(f"unknown moldable policy {policy_id!r}; known: {known}")
    return _registry.make_policy(policy_id, **params)


def supports(policy: str | Policy, workload: Any) -> str | None:
    """None if ``policy`` (a registered id, or a policy instance outside the registry) is defined on
    ``workload``, else the reason it is not."""
    import numpy as np

    if isinstance(policy, Policy):
        candidate = policy
    else:
        model = getattr(workload, "model", "msj")
        spec = _registry.policy_spec(policy)
        if model not in spec.models:  # e.g. a moldable scheme has no for_workload to ask
            on = ", ".join(spec.models)
            return f"policy {policy!r} is not defined on the {model} model (it is defined on: {on})"
        candidate = make_policy(policy)
    try:
        candidate.for_workload(workload).prepare(workload, np.random.default_rng(0))
    except ValueError as exc:
        return str(exc)
    return None


def list_policies() -> dict[str, type[Policy]]:
    """The MSJ and compatibility-model policies by id (:data:`POLICIES`); every model's are in
    :func:`msj_gym.registry.list_policies`."""
    return dict(POLICIES)


def non_preemptive() -> list[str]:
    """Ids of the policies that never preempt."""
    return [pid for pid, cls in POLICIES.items() if not cls.preemptive]


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
    "EasyBackfilling",
    "F1Easy",
    "FirstFit",
    "FirstFitSRPT",
    "Greedy",
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
