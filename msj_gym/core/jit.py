"""The one compilation decorator of the engine and the policy kernels.

Kernels run without numba's reference-counting runtime (``_nrt=False``): every array they touch is
owned by the Python side, so there is nothing to count, and the atomic increments numba would otherwise
emit on every call were most of the run time. The price is that compiled kernels may not allocate; a
policy that needs scratch space gets it preallocated in its ``PolicyData``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from numba import njit

F = TypeVar("F", bound=Callable[..., Any])

__all__ = ["entry_point", "inline_jit", "kernel_jit"]


def kernel_jit(fn: F) -> F:
    """``numba.njit(cache=True)`` without the reference-counting runtime."""
    return njit(cache=True, _nrt=False)(fn)


def inline_jit(fn: F) -> F:
    """``kernel_jit`` for small internal helpers, inlined into their callers at numba IR level: a
    state tuple passed to a non-inlined call is copied as a large struct, which costs more than the
    helper's own work."""
    return njit(cache=True, _nrt=False, inline="always")(fn)


_ENTRY_POINTS: dict[tuple, Any] = {}


def entry_point(dispatcher: Any, *args: Any) -> Callable[..., Any]:
    """The compiled entry point of ``dispatcher`` for the types of ``args``. Calling it skips numba's
    per-call dispatch (typing each argument, a few microseconds for a state tuple), which matters where
    one call does little work, as in an environment step. The caller must keep the argument types."""
    import numba

    types = tuple(numba.typeof(a) for a in args)
    key = (dispatcher, types)
    fn = _ENTRY_POINTS.get(key)
    if fn is None:
        dispatcher.compile(types)
        fn = _ENTRY_POINTS[key] = dispatcher.overloads[types].entry_point
    return fn
