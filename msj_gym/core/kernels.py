"""Compiled decision rules (kernels) and how the engine loop calls them.

A kernel is a compiled function ``decide(view, pdata, actions) -> n`` (size-oblivious) or
``decide(view, sizes, pdata, actions) -> n`` (size-aware) that writes ``n`` action words into
``actions`` (see :mod:`msj_gym.core.actions`): ``j`` starts job ``j`` and ``-j - 1`` preempts it;
preemptions come before starts; operations (serve at a rate, set a budget, requeue) take several words.
It returns the *complete* decision for the current instant. A kernel that only starts and preempts
must be prefix-consistent: applying only its first action and asking again yields the rest (that is
how the MSJ environments replay it one action per step). A kernel that keeps its own bookkeeping of
what it decided (the compatibility-model kernels) is not, and is only driven whole, by the batch loop.

A policy may also have an *invariant*: a compiled ``check(view, pdata) -> detail`` (0 if its own
bookkeeping is consistent with the engine state), run after every event in debug mode.

The engine loop (:func:`msj_gym.core.engine.run_batch`) is compiled once, for all policies: it takes
the kernel and the invariant as first-class function arguments of fixed signatures, so a new policy
costs the compilation of its own kernel only. :class:`DecisionRule` is what the loop is handed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import numba

from .jit import internal_jit, kernel_jit

__all__ = ["DecisionRule", "decide", "decision_rule", "kernel_types"]


@kernel_jit
def _no_plain(view, pdata, actions):
    return 0


@kernel_jit
def _no_sized(view, sizes, pdata, actions):
    return 0


@kernel_jit
def _no_check(view, pdata):
    return 0


class DecisionRule(NamedTuple):
    """A policy's kernel in the engine loop's calling convention: the loop calls ``plain`` or
    ``sized`` (the other is a stub never called) and, in debug mode, ``check``."""

    plain: Any
    sized: Any
    check: Any
    size_aware: bool
    every_event: bool = True  # False: asked only when it can act (see engine.can_decide)
    name: str = "a decision rule"  # for the terminal, while it compiles


def decision_rule(
    kernel: Callable[..., Any],
    *,
    size_aware: bool,
    invariant: Callable[..., Any] | None = None,
    every_event: bool = True,
    name: str = "a decision rule",
) -> DecisionRule:
    """The :class:`DecisionRule` of a compiled ``kernel`` (and its optional invariant)."""
    return DecisionRule(
        plain=_no_plain if size_aware else kernel,
        sized=kernel if size_aware else _no_sized,
        check=_no_check if invariant is None else invariant,
        size_aware=size_aware,
        every_event=every_event,
        name=name,
    )


def kernel_types(view_t: Any, sizes_t: Any, pdata_t: Any, actions_t: Any) -> tuple[Any, Any]:
    """The numba types of a rule's ``plain`` and ``sized`` slots, for a loop that takes them as
    first-class function arguments with these argument types."""
    int64 = numba.types.int64
    return (
        numba.types.FunctionType(int64(view_t, pdata_t, actions_t)),
        numba.types.FunctionType(int64(view_t, sizes_t, pdata_t, actions_t)),
    )


@internal_jit
def decide(plain, sized, size_aware, view, sizes, pdata, actions):
    """One decision of a rule handed to a compiled loop as its slots: ``sized`` if ``size_aware``, else
    ``plain``; returns the number of action words written."""
    if size_aware:
        return sized(view, sizes, pdata, actions)
    return plain(view, pdata, actions)
