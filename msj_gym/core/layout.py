"""A policy's scratch arrays as a layout: named regions of ``PolicyData.iwork`` and ``PolicyData.fwork``.

A kernel may not allocate, so its working arrays live in the scratch the simulator sizes for it (and
re-sizes when its slot arrays grow). A :class:`Layout` names the regions of that scratch, each sized
by an expression of the run's ``slots``, ``servers`` and ``classes`` (or of a scalar field of the
policy's :class:`~msj_gym.core.record.Record`); it is declared once per policy, at module level, like
the Record of its parameters, and a kernel reads a region by its id through :func:`region`::

    WORK = Layout(ints={"cursor": "classes", "marks": "servers"}, floats={"keys": "servers * (1 + classes)"})
    CURSOR, MARKS, KEYS = WORK.ids              # 0, 1 (int regions), 0 (float region)

    class MyPolicy(Policy):
        work = WORK                             # the scratch is sized (and re-sized) from it

    marks = region(pdata.iwork, MARKS)          # in the kernel: a 1-D view, length ``servers``
    keys = region(pdata.fwork, KEYS)

Each array starts with a header of offsets, written in Python whenever the scratch is sized: ``iwork``
holds ``n + 1`` of them for its ``n`` int regions (where each region starts; the last is where the last
one ends), then the regions; ``fwork`` likewise for its float regions (offsets as floats, exact). So a
region costs its kernel the load of two offsets, and ids stay those of the parent when a subclass
:meth:`~Layout.extend` s the layout with regions of its own.
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
from numba import types
from numba.extending import intrinsic

from .record import Record, _field_in_tuple
from .state import PolicyData

__all__ = ["SIZE_NAMES", "Layout", "region"]

SIZE_NAMES = ("slots", "servers", "classes")
"""The names a region's size may use besides its policy's scalar parameters."""

_OPERATORS: dict[type, Callable[[int, int], int]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.FloorDiv: operator.floordiv,
    ast.LShift: operator.lshift,
}


def _compile_size(
    where: str, text: str, known: frozenset[str]
) -> tuple[Callable[[dict[str, int]], int], set[str]]:
    """The size expression ``text`` as a function of the names' values, and the names it reads.

    The grammar is kept to integer arithmetic (``+ - * // <<``, parentheses, integer literals, names):
    a size is a count, and anything richer belongs in ``prepare`` as a named parameter."""
    try:
        tree = ast.parse(text, mode="eval").body if isinstance(text, str) else None
    except SyntaxError:
        tree = None
    if tree is None:
        raise ValueError(
            f"{where}: expected a size expression such as 'servers * (1 + classes)', got {text!r}"
        )
    names: set[str] = set()

    def build(node: ast.AST) -> Callable[[dict[str, int]], int]:
        if isinstance(node, ast.Constant) and type(node.value) is int:
            constant = node.value
            return lambda env: constant
        if isinstance(node, ast.Name):
            if node.id not in known:
                raise ValueError(
                    f"{where}: unknown size name {node.id!r} in {text!r}; known: {', '.join(sorted(known))}"
                )
            names.add(node.id)
            name = node.id
            return lambda env: env[name]
        if isinstance(node, ast.BinOp) and type(node.op) in _OPERATORS:
            op, left, right = _OPERATORS[type(node.op)], build(node.left), build(node.right)
            return lambda env: op(left(env), right(env))
        raise ValueError(f"{where}: only integers, names and + - * // << may size a region, got {text!r}")

    return build(tree), names


class Layout:
    """The named regions of a policy's scratch arrays: ``ints`` of ``iwork`` (int64) and ``floats`` of
    ``fwork`` (float64), each a name (a Python identifier, distinct across both) mapped to its size.

    A size is an integer expression (``+ - * // <<``, parentheses) of ``slots``, ``servers``,
    ``classes`` and, given the policy's parameter Record as ``params``, any of its scalar fields (a
    count the policy computes in ``prepare``, read from the packed ``params`` when the scratch is
    sized). Ids: int region ``i`` has id ``i``, float region ``j`` id ``j``, in declaration order
    (``ids``); pass ``pdata.iwork`` or ``pdata.fwork`` with it to :func:`region` accordingly.
    """

    def __init__(
        self,
        ints: Mapping[str, str] | None = None,
        floats: Mapping[str, str] | None = None,
        *,
        params: Record | None = None,
    ) -> None:
        ints, floats = dict(ints or {}), dict(floats or {})
        if not ints and not floats:
            raise ValueError("Layout: expected at least one region")
        for name in (*ints, *floats):
            if not isinstance(name, str) or not name.isidentifier():
                raise ValueError(f"Layout: region names must be identifiers, got {name!r}")
        repeated = sorted(set(ints) & set(floats))
        if repeated:
            raise ValueError(f"Layout: region name(s) {repeated} given twice")
        self.params = params
        known = frozenset(SIZE_NAMES) | frozenset(params.names if params is not None else ())
        self.ints: dict[str, str] = ints
        self.floats: dict[str, str] = floats
        self._sizes = {
            name: _compile_size(f"Layout: region {name!r}", text, known)
            for name, text in (*ints.items(), *floats.items())
        }
        self._param_names = sorted(set().union(*(used for _, used in self._sizes.values())) - set(SIZE_NAMES))

    @property
    def ids(self) -> tuple[int, ...]:
        """The regions' ids: the int regions', then the float regions', each in declaration order."""
        return (*range(len(self.ints)), *range(len(self.floats)))

    def id(self, name: str) -> int:
        """The id of region ``name``."""
        for regions in (self.ints, self.floats):
            if name in regions:
                return list(regions).index(name)
        raise ValueError(f"Layout: no region {name!r}; regions: {', '.join((*self.ints, *self.floats))}")

    def extend(
        self,
        ints: Mapping[str, str] | None = None,
        floats: Mapping[str, str] | None = None,
        *,
        params: Record | None = None,
    ) -> Layout:
        """This layout with more regions after its own (a subclass adding scratch to its parent's): the
        parent's regions keep their ids, so the parent's kernels read the extended layout as well."""
        ints, floats = dict(ints or {}), dict(floats or {})
        repeated = sorted((set(ints) | set(floats)) & (set(self.ints) | set(self.floats)))
        if repeated:
            raise ValueError(f"Layout.extend: region name(s) {repeated} given twice")
        return Layout({**self.ints, **ints}, {**self.floats, **floats}, params=params or self.params)

    # -------------------------------------------------------------------------------------------------
    def sizes(
        self, num_slots: int, num_servers: int, num_classes: int, params: np.ndarray | None = None
    ) -> dict[str, int]:
        """Each region's length for a run of ``num_slots`` slots (``params``: the packed parameters,
        needed if a size reads one)."""
        env = {"slots": int(num_slots), "servers": int(num_servers), "classes": int(num_classes)}
        if self._param_names:
            if params is None or self.params is None:
                raise ValueError(
                    f"Layout: sizes read parameter(s) {self._param_names}; pass the packed params"
                )
            for name in self._param_names:
                values = self.params.get(params, name)
                if values.size != 1:
                    raise ValueError(
                        f"Layout: size parameter {name!r} must be a scalar field, got {values.size} values"
                    )
                env[name] = int(values[0])
        out = {}
        for name, (size, _) in self._sizes.items():
            n = int(size(env))
            if n < 0:
                raise ValueError(f"Layout: region {name!r} has a negative size ({n}) for {env}")
            out[name] = n
        return out

    def _offsets(self, sizes: dict[str, int]) -> tuple[np.ndarray, np.ndarray]:
        out = []
        for regions in (self.ints, self.floats):
            lengths = [sizes[n] for n in regions]
            out.append(
                np.cumsum([len(lengths) + 1, *lengths]).astype(np.int64) if regions else np.zeros(0, np.int64)
            )
        return out[0], out[1]

    def work_sizes(
        self, num_slots: int, num_servers: int, num_classes: int, params: np.ndarray | None = None
    ) -> tuple[int, int]:
        """The scratch the layout takes, headers included: (int64 entries, float64 entries)."""
        ihead, fhead = self._offsets(self.sizes(num_slots, num_servers, num_classes, params))
        return (int(ihead[-1]) if ihead.size else 0), (int(fhead[-1]) if fhead.size else 0)

    def with_work(
        self, pdata: PolicyData, num_slots: int, num_servers: int, num_classes: int, *, keep: bool = False
    ) -> PolicyData:
        """``pdata`` with scratch laid out for ``num_slots`` slots: itself if its headers already say
        so (the scratch content survives), else fresh zeroed arrays with the new offsets written.

        ``keep``: if ``pdata``'s scratch is laid out by this layout for other sizes, each region of the
        fresh arrays starts with the old region's content (as much of it as fits), for a policy whose
        per-slot bookkeeping must survive the engine's slot growth (slots keep their numbers, so a
        region indexed by slot keeps its meaning when it grows at the end)."""
        ihead, fhead = self._offsets(self.sizes(num_slots, num_servers, num_classes, pdata.params))
        if _holds(pdata.iwork, ihead) and _holds(pdata.fwork, fhead):
            return pdata
        iwork = np.zeros(max(int(ihead[-1]) if ihead.size else 0, 1), dtype=np.int64)
        fwork = np.zeros(max(int(fhead[-1]) if fhead.size else 0, 1))
        iwork[: ihead.size] = ihead
        fwork[: fhead.size] = fhead
        if keep and self.laid_out(pdata):
            for old, new, head in ((pdata.iwork, iwork, ihead), (pdata.fwork, fwork, fhead)):
                for i in range(head.size - 1):
                    lo, hi = int(old[i]), int(old[i + 1])
                    n = min(hi - lo, int(head[i + 1] - head[i]))
                    new[int(head[i]) : int(head[i]) + n] = old[lo : lo + n]
        return pdata._replace(iwork=iwork, fwork=fwork)

    def laid_out(self, pdata: PolicyData) -> bool:
        """Whether ``pdata``'s scratch carries this layout's headers (for any sizes): as many regions,
        each offset within its array and none before the previous one. Freshly prepared data (empty
        scratch) is not laid out, unless the layout has no regions in either array."""
        for work, regions in ((pdata.iwork, self.ints), (pdata.fwork, self.floats)):
            n = len(regions)
            if not n:
                continue
            if work.size < n + 1:
                return False
            head = work[: n + 1]
            if head[0] != n + 1 or head[-1] != work.size or bool((np.diff(head) < 0).any()):
                return False
        return True

    def get(self, pdata: PolicyData, name: str) -> np.ndarray:
        """From Python: region ``name`` of ``pdata``'s scratch (a view)."""
        i = self.id(name)
        work = pdata.iwork if name in self.ints else pdata.fwork
        return work[int(work[i]) : int(work[i + 1])]

    def __repr__(self) -> str:
        return f"Layout(ints={self.ints!r}, floats={self.floats!r})"


def _holds(work: np.ndarray, head: np.ndarray) -> bool:
    """Whether ``work`` is laid out by the offsets ``head`` (an array with no regions always is)."""
    if not head.size:
        return True
    return work.size == head[-1] and bool((work[: head.size] == head).all())


@intrinsic
def region(typingctx: Any, work: Any, i: Any) -> Any:
    """Region ``i`` of a scratch array laid out by a :class:`Layout` (``pdata.iwork`` for an int
    region's id, ``pdata.fwork`` for a float region's): a 1-D view, its offsets read from the array's
    header. An intrinsic for the reason :func:`~msj_gym.core.record.field` is one: compiled without the
    reference-counting runtime, a function may not return a new view of an array."""
    view = typingctx.resolve_function_type(operator.getitem, (work, types.slice2_type), {}).return_type
    sig = view(work, i)

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        inner = types.Tuple((view,))(work, i)
        packed = context.compile_internal(builder, _field_in_tuple, inner, args)
        return builder.extract_value(packed, 0)

    return sig, codegen
