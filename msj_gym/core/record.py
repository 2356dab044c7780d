"""A policy's parameters as a typed record: named fields packed into ``PolicyData.params``.

The engine loop is compiled once and calls every policy's decision rule with the same ``PolicyData``
type, so a policy's parameters must travel as one float64 array. A :class:`Record` names the fields of
that array, in order, and packs them; a kernel reads a field by its id, a plain integer constant that
numba freezes into the machine code, through :func:`field` (the field's values, a 1-D view) or
:func:`value` / :func:`int_value` (its first value)::

    FIELDS = Record("packing", "ngroup", "gmap")
    PACKING, NGROUP, GMAP = FIELDS.ids          # 0, 1, 2: module-level ints a kernel may read

    params = FIELDS.pack(packing=0, ngroup=2, gmap=[0, 1, 1])     # in prepare()

    gmap = field(pdata.params, GMAP)            # in the kernel: gmap[c] is class c's group
    ngroup = int_value(pdata.params, NGROUP)

Layout: a header of ``n + 1`` offsets (where each field starts; the last is where the last one ends),
then the fields' values. A scalar is a field of length one, an array a 1-D field of any length.
Reading a field costs the load of its offset (and of the next one, for ``field``) besides the values.
"""

from __future__ import annotations

import operator
from collections.abc import Iterable
from typing import Any

import numpy as np
from numba import types
from numba.extending import intrinsic

from .jit import inline_jit

__all__ = ["Record", "field", "int_value", "value"]

_EXACT_INT = 2**53  # integers beyond this do not survive the float64 round trip


class Record:
    """The named fields of a policy's ``params`` array, in order.

    ``names`` are the fields (Python identifiers, distinct); field ``i`` has id ``i`` (``ids``).
    Values must be finite unless the field is named in ``nonfinite`` (a field that may hold ``inf``,
    say "never", or ``nan``): a stray ``nan`` or ``inf`` is otherwise almost always a bug.
    """

    def __init__(self, *names: str, nonfinite: Iterable[str] = ()) -> None:
        if not names:
            raise ValueError("Record: expected at least one field name")
        for name in names:
            if not isinstance(name, str) or not name.isidentifier():
                raise ValueError(f"Record: field names must be identifiers, got {name!r}")
        repeated = sorted({n for n in names if names.count(n) > 1})
        if repeated:
            raise ValueError(f"Record: field name(s) {repeated} given twice")
        self.names: tuple[str, ...] = tuple(names)
        self.nonfinite: frozenset[str] = frozenset(nonfinite)
        unknown = sorted(self.nonfinite - set(names))
        if unknown:
            raise ValueError(f"Record: nonfinite names unknown field(s) {unknown}")
        self._index = {n: i for i, n in enumerate(names)}

    @property
    def ids(self) -> tuple[int, ...]:
        """The fields' ids, in order (``A, B = Record("a", "b").ids``)."""
        return tuple(range(len(self.names)))

    def id(self, name: str) -> int:
        """The id of field ``name``."""
        try:
            return self._index[name]
        except KeyError:
            raise ValueError(f"Record: no field {name!r}; fields: {', '.join(self.names)}") from None

    def extend(self, *names: str, nonfinite: Iterable[str] = ()) -> Record:
        """This record with more fields after its own (a subclass adding parameters to its parent's):
        the parent's fields keep their ids, so the parent's kernels read the extended record as well."""
        return Record(*self.names, *names, nonfinite=(*self.nonfinite, *nonfinite))

    def pack(self, **values: Any) -> np.ndarray:
        """The ``params`` array holding ``values``, one per field (a number, or a 1-D array of numbers)."""
        missing = [n for n in self.names if n not in values]
        if missing:
            raise ValueError(f"Record.pack: missing field {missing[0]!r}")
        unknown = [n for n in values if n not in self._index]
        if unknown:
            raise ValueError(f"Record.pack: unknown field {unknown[0]!r}; fields: {', '.join(self.names)}")
        parts = [self._field_values(n, values[n]) for n in self.names]
        head = len(self.names) + 1
        offsets = np.cumsum([head] + [p.size for p in parts])
        return np.concatenate([offsets.astype(np.float64), *parts])

    def _field_values(self, name: str, value: Any) -> np.ndarray:
        where = f"Record.pack: field {name!r}"
        raw = np.asarray(value)
        if raw.ndim > 1:
            raise ValueError(f"{where}: expected a number or a 1-D array, got shape {raw.shape}")
        if raw.dtype.kind not in "biuf":
            raise ValueError(f"{where}: expected numbers, got {raw.dtype} values")
        if raw.dtype.kind in "iu" and raw.size and np.abs(raw).max() >= _EXACT_INT:
            raise ValueError(f"{where}: an integer too large to hold exactly in float64")
        out = np.atleast_1d(raw.astype(np.float64))
        if name not in self.nonfinite and not np.isfinite(out).all():
            raise ValueError(f"{where}: expected finite values, got {out[~np.isfinite(out)][0]!r}")
        return out

    def get(self, params: np.ndarray, name: str) -> np.ndarray:
        """From Python: the values of field ``name`` in a packed ``params`` (a view)."""
        i = self.id(name)
        return params[int(params[i]) : int(params[i + 1])]

    def unpack(self, params: np.ndarray) -> dict[str, np.ndarray]:
        """From Python: every field of a packed ``params``, by name (views)."""
        return {n: self.get(params, n) for n in self.names}

    def __len__(self) -> int:
        return len(self.names)

    def __repr__(self) -> str:
        return f"Record({', '.join(map(repr, self.names))})"


def _field_in_tuple(params, i):
    return (params[int(params[i]) : int(params[i + 1])],)


@intrinsic
def field(typingctx, params, i):
    """The values of field ``i`` of a packed ``params`` (a 1-D view; length one for a scalar field).

    An intrinsic, not an ``inline_jit`` function: compiled without the reference-counting runtime, a
    function may not return a new view of an array (numba's rule), so the view is built in a 1-tuple
    by a compiled helper and taken out of it here, in the caller's own code."""
    view = typingctx.resolve_function_type(operator.getitem, (params, types.slice2_type), {}).return_type
    sig = view(params, i)

    def codegen(context, builder, signature, args):
        inner = types.Tuple((view,))(params, i)
        packed = context.compile_internal(builder, _field_in_tuple, inner, args)
        return builder.extract_value(packed, 0)

    return sig, codegen


@inline_jit
def value(params, i):
    """The (first) value of field ``i`` of a packed ``params``, a float."""
    return params[int(params[i])]


@inline_jit
def int_value(params, i):
    """The (first) value of field ``i`` of a packed ``params``, as an integer (counts, codes, flags)."""
    return int(params[int(params[i])])
