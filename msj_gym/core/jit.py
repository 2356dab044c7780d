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

__all__ = ["kernel_jit"]


def kernel_jit(fn: F) -> F:
    """``numba.njit(cache=True)`` without the reference-counting runtime."""
    return njit(cache=True, _nrt=False)(fn)


def inline_jit(fn: F) -> F:
    """``kernel_jit`` for small internal helpers, inlined into their callers at numba IR level: a
    state tuple passed to a non-inlined call is copied as a large struct, which costs more than the
    helper's own work."""
    return njit(cache=True, _nrt=False, inline="always")(fn)
