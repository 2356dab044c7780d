"""What this process has been told to trust beyond data: the two opt-ins a user gives by name.

msj_gym loads checkpoints, cache entries, scenario and trace files as data. Two things would run code
that nobody named on the command line, and each happens only once the user has said so:

* :data:`PICKLE` (``--trust-pickle``, ``allow_pickle=True``): unpickling a checkpoint in
  stable-baselines3's own format, whose ``data`` entry holds pickles (loading one can run any command);
* :data:`IMPORTS` (``--trust-imports``, ``allow_imports=True``): importing a ``module:attr`` that a
  checkpoint's ``.json`` (or its config) names, such as an advisor or a base policy outside the
  registry and outside msj_gym.

A command grants them for its own duration (:func:`trusting`); the experiments' worker processes get
the grants of the process that started them (:func:`granted_now`, :func:`call_with`), so that a
leaderboard's workers load what its parent admitted and nothing more.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator
from typing import Any

__all__ = [
    "IMPORTS",
    "PICKLE",
    "call_with",
    "check_imports",
    "foreign_specs",
    "grant_for_life",
    "granted",
    "granted_now",
    "trusting",
]

PICKLE = "pickle"
IMPORTS = "imports"
_KINDS = (PICKLE, IMPORTS)
_GRANTED: set[str] = set()


def granted(kind: str) -> bool:
    """Whether this process trusts ``kind`` (:data:`PICKLE` or :data:`IMPORTS`) now."""
    return kind in _GRANTED


def granted_now() -> tuple[str, ...]:
    """The grants in force, to hand to a worker process (:func:`call_with`)."""
    return tuple(sorted(_GRANTED))


def _checked(kinds: Iterable[str]) -> set[str]:
    wanted = set(kinds)
    unknown = wanted - set(_KINDS)
    if unknown:
        raise ValueError(f"trust: expected some of {list(_KINDS)}, got {sorted(unknown)}")
    return wanted


def grant_for_life(kinds: Iterable[str]) -> None:
    """Trust ``kinds`` from now on in this process (a worker process taking its parent's grants)."""
    _GRANTED.update(_checked(kinds))


@contextlib.contextmanager
def trusting(kinds: Iterable[str]) -> Iterator[None]:
    """Trust ``kinds`` within the block (none: a no-op); the grants in force before are restored."""
    wanted = _checked(kinds)
    before = set(_GRANTED)
    _GRANTED.update(wanted)
    try:
        yield
    finally:
        _GRANTED.clear()
        _GRANTED.update(before)


def call_with(grants: tuple[str, ...], fn: Callable[[Any], Any], arg: Any) -> Any:
    """``fn(arg)`` under ``grants`` (a worker's side of :func:`granted_now`)."""
    with trusting(grants):
        return fn(arg)


def foreign_specs(value: Any) -> list[str]:
    """The ``module:attr`` specs in ``value`` (a policy spec or a list of them) that name code outside
    msj_gym (a registered id, or msj_gym's own ``module:attr``, is not foreign)."""
    items = value if isinstance(value, list | tuple) else [value]
    return [
        s for s in items if isinstance(s, str) and ":" in s and s.partition(":")[0].split(".")[0] != "msj_gym"
    ]


def check_imports(where: str, field: str, value: Any) -> None:
    """Refuse, in one line, a ``module:attr`` outside msj_gym named by a file (``value``, found in its
    ``field``) unless this process trusts imports (:data:`IMPORTS`)."""
    foreign = foreign_specs(value)
    if foreign and not granted(IMPORTS):
        raise ValueError(
            f"{where}: {field} names code to import, {foreign[0]!r}; a checkpoint's files may name "
            "registered policy ids (and msj_gym's own classes) only: import it only if you trust where it "
            "came from, with --trust-imports (allow_imports=True)"
        )
