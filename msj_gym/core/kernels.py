"""Registry of compiled decision rules (kernels) and the compile-time dispatch used by the engine.

A kernel is an ``@njit`` function ``decide(view, pdata, actions) -> n`` (size-oblivious) or
``decide(view, sizes, pdata, actions) -> n`` (size-aware) that writes ``n`` action words into
``actions`` (see :mod:`msj_gym.core.actions`): ``j`` starts job ``j`` and ``-j - 1`` preempts it;
preemptions come before starts; operations (serve at a rate, set a budget, requeue) take several words.
It returns the *complete* decision for the current instant. A kernel that only starts and preempts
must be prefix-consistent: applying only its first action and asking again yields the rest (that is
how the MSJ environments replay it one action per step). A kernel that keeps its own bookkeeping of
what it decided (the compatibility-model kernels) is not, and is only driven whole, by the batch loop.

A policy may also register an *invariant*: an ``@njit`` function ``check(view, pdata) -> detail`` (0 if
its own bookkeeping is consistent with the engine state), run after every event in debug mode.

``decide_kernel(code, ...)`` is resolved at compile time from the literal ``code``, so each policy gets
its own specialised, cacheable engine loop and a size-oblivious kernel is never even handed the sizes.
Codes are derived from the kernel's qualified name and the source of the modules it depends on, so an
edited kernel gets a fresh compilation instead of a stale cached one.
"""

from __future__ import annotations

import inspect
import sys
import zlib
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from numba import types
from numba.extending import overload

__all__ = ["check_kernel", "decide_kernel", "kernel_code", "register_kernel"]

_KERNELS: dict[int, tuple[Callable[..., Any], bool, Callable[..., Any] | None]] = {}
_CORE_DIR = Path(__file__).resolve().parent


def kernel_code(fn: Callable[..., Any], depends: Iterable[str] = ()) -> int:
    """A stable integer for ``fn``: a CRC of its qualified name, its module's source, the sources of the
    modules named in ``depends``, and the engine's own sources."""
    py = getattr(fn, "py_func", fn)
    modules = [py.__module__, *depends]
    crc = zlib.crc32(f"{py.__module__}.{py.__qualname__}".encode())
    for name in modules:
        try:
            crc = zlib.crc32(inspect.getsource(sys.modules[name]).encode(), crc)
        except (KeyError, OSError, TypeError):
            continue
    for path in sorted(_CORE_DIR.glob("*.py")):
        crc = zlib.crc32(path.read_bytes(), crc)
    return int(crc & 0x3FFFFFFF) + 1


def register_kernel(
    fn: Callable[..., Any],
    *,
    size_aware: bool,
    depends: Iterable[str] = (),
    invariant: Callable[..., Any] | None = None,
) -> int:
    """Register a compiled decision rule (and its optional invariant); returns its code for
    ``run_batch``."""
    code = kernel_code(fn, depends)
    existing = _KERNELS.get(code)
    if existing is not None and (existing[0] is not fn or existing[2] is not invariant):
        raise ValueError(f"kernel code collision for {fn!r}")
    _KERNELS[code] = (fn, size_aware, invariant)
    return code


def decide_kernel(code, view, sizes, pdata, actions):  # pragma: no cover - replaced by the overload
    raise NotImplementedError("decide_kernel is only callable from compiled code")


@overload(decide_kernel)
def _decide_kernel_impl(code, view, sizes, pdata, actions):
    if not isinstance(code, types.IntegerLiteral):
        return None
    entry = _KERNELS.get(code.literal_value)
    if entry is None:
        raise KeyError(f"no kernel registered under code {code.literal_value}")
    fn, size_aware, _ = entry
    if size_aware:

        def impl(code, view, sizes, pdata, actions):
            return fn(view, sizes, pdata, actions)

    else:

        def impl(code, view, sizes, pdata, actions):
            return fn(view, pdata, actions)

    return impl


def check_kernel(code, view, pdata):  # pragma: no cover - replaced by the overload
    raise NotImplementedError("check_kernel is only callable from compiled code")


@overload(check_kernel)
def _check_kernel_impl(code, view, pdata):
    if not isinstance(code, types.IntegerLiteral):
        return None
    entry = _KERNELS.get(code.literal_value)
    if entry is None:
        raise KeyError(f"no kernel registered under code {code.literal_value}")
    check = entry[2]
    if check is None:

        def impl(code, view, pdata):
            return 0

    else:

        def impl(code, view, pdata):
            return check(view, pdata)

    return impl
