"""Scheduling policies of the source papers, each a baseline agent, registered by kebab-case id."""

from __future__ import annotations

from typing import Any

from msj_gym.core import Policy

from .fcfs import FCFS

_ALL: tuple[type[Policy], ...] = (FCFS,)

POLICIES: dict[str, type[Policy]] = {cls.policy_id: cls for cls in _ALL}


def make_policy(policy_id: str, **params: Any) -> Policy:
    """A policy instance by id, e.g. ``make_policy("easy-backfilling", estimate_factor=2.0)``."""
    cls = POLICIES.get(policy_id)
    if cls is None:
        raise ValueError(f"unknown policy {policy_id!r}; known: {', '.join(POLICIES)}")
    return cls(**params)


def list_policies() -> dict[str, type[Policy]]:
    return dict(POLICIES)


__all__ = ["POLICIES", "make_policy", "list_policies", *(cls.__name__ for cls in _ALL)]
