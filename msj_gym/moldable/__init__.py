"""Moldable jobs with concave speed-up in a loss system (Ghanbarian et al. (2024), moldable
jobs): the model, the allocation protocol and its compiled rule, and a compiled simulator.
The schemes themselves are in ``msj_gym.baselines.moldable``, registered in :mod:`msj_gym.registry` on the
``moldable`` model; the named systems of ``msj-gym simulate`` / ``list`` in :mod:`.systems`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import LazyNames

if TYPE_CHECKING:
    from .loss import LossSimulator, MoldableClassResult, MoldableResult, simulate_moldable
    from .model import LINEAR, SUB_LINEAR, MoldableClass, MoldableSystem
    from .policy import AllocationRule, MoldablePolicy, allocate, make_rule

# imported when first asked for: telling a moldable system's name apart (the command line, for every
# scenario) reads :mod:`.systems` alone, not the compiled simulator
_LAZY = LazyNames(
    __name__,
    globals(),
    {
        "loss": ("LossSimulator", "MoldableClassResult", "MoldableResult", "simulate_moldable"),
        "model": ("LINEAR", "SUB_LINEAR", "MoldableClass", "MoldableSystem"),
        "policy": ("AllocationRule", "MoldablePolicy", "allocate", "make_rule"),
    },
)
__getattr__ = _LAZY
__dir__ = _LAZY.dir

__all__ = [
    "LINEAR",
    "SUB_LINEAR",
    "AllocationRule",
    "LossSimulator",
    "MoldableClass",
    "MoldableClassResult",
    "MoldablePolicy",
    "MoldableResult",
    "MoldableSystem",
    "allocate",
    "make_rule",
    "simulate_moldable",
]
