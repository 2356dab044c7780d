"""The words of a decision: what a policy kernel writes into ``actions`` and ``engine.apply`` applies.

A decision is a sequence of int64 words, read in order:

* ``s >= 0``: start the waiting job in slot ``s`` on its ``NEED`` servers (at its ``RATE``);
* ``-s - 1``: preempt the running job in slot ``s`` (preempt-resume: its remaining work is kept);
* an operation: a tag word ``<= OP_LIMIT`` followed by its operands (``emit_*`` below write them):

  - ``OP_SERVE s n rate``: job ``s`` now holds ``n`` servers and is served at ``rate`` (work per unit
    time). A waiting job starts (a start, not a resumption of anything); a running job keeps running,
    its work settled at the old rate, with no preemption counted. ``1 <= n <= `` its class's server
    need, and the capacity check counts only the servers it gains.
  - ``OP_BUDGET s b``: job ``s`` may receive ``b > 0`` more work (``inf``: unlimited) before the engine
    raises an *expiry* event for it, an event instant with no arrival or departure at which the policy
    decides again (Algorithm 1's interruptions, a round-robin quantum). A waiting job keeps the budget
    for when it runs.
  - ``OP_REQUEUE s``: job ``s`` (waiting or running) goes to the end of the service order: its
    ``ORDER`` becomes the next sequence number, and the job lists (all jobs, waiting jobs, its class's
    waiting jobs) put it last. A job never requeued keeps ``ORDER = JOB_ID``.

Floats travel as their bit patterns (:func:`f64_bits` / :func:`bits_f64`: exact, free). Compiled
kernels write operations with ``emit_*``; Python policies with :func:`serve_words` and friends.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import intrinsic

from .jit import inline_jit

__all__ = [
    "OP_BUDGET",
    "OP_LIMIT",
    "OP_REQUEUE",
    "OP_SERVE",
    "bits_f64",
    "budget_words",
    "emit_budget",
    "emit_requeue",
    "emit_serve",
    "f64_bits",
    "requeue_words",
    "serve_words",
]

OP_LIMIT = -(1 << 62)  # every word <= OP_LIMIT is an operation tag; preemptions stay above it
OP_SERVE = OP_LIMIT - 1
OP_BUDGET = OP_LIMIT - 2
OP_REQUEUE = OP_LIMIT - 3


@intrinsic
def f64_bits(typingctx: Any, x: Any) -> Any:
    """The bit pattern of a float64 as an int64."""
    if x != types.float64:
        return None

    def codegen(context: Any, builder: Any, sig: Any, args: Any) -> Any:
        return builder.bitcast(args[0], ir.IntType(64))

    return types.int64(types.float64), codegen


@intrinsic
def bits_f64(typingctx: Any, x: Any) -> Any:
    """The float64 whose bit pattern is the int64 ``x``."""
    if x != types.int64:
        return None

    def codegen(context: Any, builder: Any, sig: Any, args: Any) -> Any:
        return builder.bitcast(args[0], ir.DoubleType())

    return types.float64(types.int64), codegen


@inline_jit
def emit_serve(actions, n, s, servers, rate):
    """Write ``OP_SERVE s servers rate`` at ``actions[n]``; returns the new length."""
    actions[n] = OP_SERVE
    actions[n + 1] = s
    actions[n + 2] = servers
    actions[n + 3] = f64_bits(float(rate))
    return n + 4


@inline_jit
def emit_budget(actions, n, s, budget):
    """Write ``OP_BUDGET s budget`` at ``actions[n]``; returns the new length."""
    actions[n] = OP_BUDGET
    actions[n + 1] = s
    actions[n + 2] = f64_bits(float(budget))
    return n + 3


@inline_jit
def emit_requeue(actions, n, s):
    """Write ``OP_REQUEUE s`` at ``actions[n]``; returns the new length."""
    actions[n] = OP_REQUEUE
    actions[n + 1] = s
    return n + 2


def _bits(x: float) -> int:
    return int(np.float64(x).view(np.int64))


def serve_words(s: int, servers: int, rate: float) -> list[int]:
    """``OP_SERVE s servers rate`` as words, for a policy written in Python."""
    return [OP_SERVE, int(s), int(servers), _bits(rate)]


def budget_words(s: int, budget: float) -> list[int]:
    """``OP_BUDGET s budget`` as words."""
    return [OP_BUDGET, int(s), _bits(budget)]


def requeue_words(s: int) -> list[int]:
    """``OP_REQUEUE s`` as words."""
    return [OP_REQUEUE, int(s)]
