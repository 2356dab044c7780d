"""Array copies as explicit loops, for compiled code that runs with the GIL released in worker threads
(the vector envs' steppers, the branch player): numba's slice assignment would allocate in some cases."""

from __future__ import annotations

from ..core.jit import internal_jit

__all__ = ["copy1d", "copy2d", "copy3d"]


@internal_jit
def copy1d(dst, src):
    """``dst[:] = src`` for 1-d arrays, as an explicit loop."""
    for a in range(src.shape[0]):
        dst[a] = src[a]


@internal_jit
def copy2d(dst, src):
    """``dst[:n, :m] = src`` for a 2-d ``src`` of shape ``(n, m)`` (``dst`` may be larger)."""
    for a in range(src.shape[0]):
        for c in range(src.shape[1]):
            dst[a, c] = src[a, c]


@internal_jit
def copy3d(dst, src):
    """``dst[:, :, :] = src`` for 3-d arrays."""
    for a in range(src.shape[0]):
        for c in range(src.shape[1]):
            for d in range(src.shape[2]):
                dst[a, c, d] = src[a, c, d]
