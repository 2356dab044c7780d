"""The one compilation decorator of the engine and the policy kernels, and the cache key that knows what
a compiled function depends on.

Kernels run without numba's reference-counting runtime (``_nrt=False``): every array they touch is
owned by the Python side, so there is nothing to count, and the atomic increments numba would otherwise
emit on every call were most of the run time. The price is that compiled kernels may not allocate; a
policy that needs scratch space gets it preallocated in its ``PolicyData``.

Numba's own on-disk cache notices an edit of the file that defines a function, but not of the files
it calls into: edit a helper in another module, or a constant it imports, and the old machine code is
loaded again. Every function compiled here is therefore cached under a key that also holds a digest of
what it really depends on, found by following its global names: the source of every module whose
compiled functions, overloads or attributes it uses (transitively), and the value of every constant
it reads. A function's dependencies are never declared by hand.
"""

from __future__ import annotations

import contextlib
import hashlib
import sys
import threading
import time
import types as pytypes
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
from numba import njit, types
from numba.core import sigutils
from numba.core.caching import FunctionCache
from numba.core.dispatcher import Dispatcher
from numba.core.registry import CPUDispatcher
from numba.core.serialize import dumps

F = TypeVar("F", bound=Callable[..., Any])

__all__ = [
    "announce",
    "cache_holds",
    "call_compiled",
    "compile_announced",
    "dependency_digest",
    "entry_point",
    "inline_jit",
    "internal_jit",
    "kernel_jit",
    "source_files",
]

# Modules whose code never changes under a run (the interpreter's and the compiler's own).
_FOREIGN = frozenset({"numpy", "numba", "llvmlite", "scipy", *sys.stdlib_module_names})
_FILE_DIGESTS: dict[str, str] = {}


def _own_module(module: pytypes.ModuleType | None) -> str | None:
    """The source file of ``module`` if it is project code (not the interpreter's or numba's)."""
    if module is None or module.__name__.partition(".")[0] in _FOREIGN:
        return None
    path = getattr(module, "__file__", None)
    return path if path and path.endswith(".py") else None


def _code_names(code: pytypes.CodeType) -> set[str]:
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, pytypes.CodeType):
            names |= _code_names(const)
    return names


def _walk(fn: Any, files: set[str], constants: list[str], seen: set[int]) -> None:
    py = getattr(fn, "py_func", fn)
    if id(py) in seen or not isinstance(py, pytypes.FunctionType):
        return
    seen.add(id(py))
    own = _own_module(sys.modules.get(py.__module__))
    if own is None:
        return
    files.add(own)
    cells = [c.cell_contents for c in py.__closure__ or () if _filled(c)]
    refs = [py.__globals__[n] for n in sorted(_code_names(py.__code__)) if n in py.__globals__]
    for obj in [*refs, *cells]:
        if isinstance(obj, Dispatcher) or isinstance(obj, pytypes.FunctionType):
            _walk(obj, files, constants, seen)
        elif isinstance(getattr(obj, "_defn", None), pytypes.FunctionType):
            _walk(obj._defn, files, constants, seen)  # an @intrinsic: its code generator's module
        elif isinstance(obj, pytypes.ModuleType):
            # attribute reads (state.I_NGEN, a kernel of another module): that module's source
            path = _own_module(obj)
            if path is not None:
                files.add(path)
        elif isinstance(obj, type):
            path = _own_module(sys.modules.get(obj.__module__))
            if path is not None:
                files.add(path)
        elif isinstance(obj, (bool, int, float, complex, str, bytes, tuple)):
            constants.append(repr(obj))  # frozen into the machine code at compile time


def _filled(cell: Any) -> bool:
    try:
        cell.cell_contents  # noqa: B018 - an empty cell raises
    except ValueError:
        return False
    return True


def source_files(fn: Callable[..., Any]) -> tuple[str, ...]:
    """The project source files a compiled function depends on: its own and those of everything it
    reaches through its globals (sorted)."""
    files: set[str] = set()
    _walk(fn, files, [], set())
    return tuple(sorted(files))


def _file_digest(path: str) -> str:
    digest = _FILE_DIGESTS.get(path)
    if digest is None:
        digest = _FILE_DIGESTS[path] = hashlib.sha256(Path(path).read_bytes()).hexdigest()
    return digest


def dependency_digest(fn: Callable[..., Any]) -> str:
    """A digest of everything ``fn``'s machine code depends on besides its own bytecode: the sources
    of the project modules it reaches through its globals, and the constants it reads."""
    files: set[str] = set()
    constants: list[str] = []
    _walk(fn, files, constants, set())
    h = hashlib.sha256()
    for path in sorted(files):
        h.update(Path(path).name.encode() + _file_digest(path).encode())
    for c in constants:
        h.update(c.encode())
    return h.hexdigest()


class _DependencyCache(FunctionCache):
    """Numba's per-function cache, keyed also on :func:`dependency_digest` (computed when the cache is
    first consulted, by which time every global the function names is defined) and on the compiler
    options (numba's key leaves them out)."""

    def __init__(self, py_func: Any, options: dict[str, Any]) -> None:
        super().__init__(py_func)
        self._options = repr(sorted(options.items()))
        self._digest: str | None = None

    def _index_key(self, sig: Any, codegen: Any) -> Any:
        if self._digest is None:
            self._digest = dependency_digest(self._py_func)
        # Numba's own key pickles the closure's cells, and a compiled function in a cell pickles with
        # a random per-process id: a function assembled from others (a step from its modes) would
        # never hit the cache. Cells are described by name instead; the digest covers their code
        # and the constants they close over.
        cells = tuple(_cell_description(c) for c in self._py_func.__closure__ or ())
        code = hashlib.sha256(self._py_func.__code__.co_code).hexdigest()
        described = hashlib.sha256(repr(cells).encode()).hexdigest()
        return (sig, codegen.magic_tuple(), (code, described), self._options, self._digest)


def _cell_description(cell: Any) -> str:
    """A closure cell as a stable string: a function by its name and, recursively, its own cells (two
    steps assembled from different modes share a name, not their cells); any other value by the digest
    of numba's own pickle of it, as numba keys it."""
    value = cell.cell_contents if _filled(cell) else None
    py = getattr(value, "py_func", value)
    if isinstance(py, pytypes.FunctionType):
        inner = ", ".join(_cell_description(c) for c in py.__closure__ or ())
        return f"{py.__module__}.{py.__qualname__}({inner})"
    return hashlib.sha256(dumps(value)).hexdigest()


def _cached(dispatcher: Any) -> Any:
    try:
        dispatcher._cache = _DependencyCache(dispatcher.py_func, dispatcher.targetoptions)
    except RuntimeError:  # no file to cache next to (a notebook, ``python -c``): compiled per process
        pass
    return dispatcher


def kernel_jit(fn: F | None = None, *, nogil: bool = False, nrt: bool = False) -> Any:
    """``numba.njit`` without the reference-counting runtime (unless ``nrt``), cached on disk under a
    key that holds what the function depends on. Usable bare or with options."""

    def wrap(f: F) -> Dispatcher[F]:
        # ``_nrt`` is numba's private option (the reference-counting runtime), missing from its stubs
        return _cached(njit(_nrt=nrt, nogil=nogil)(f))  # type: ignore[call-overload]

    return wrap if fn is None else wrap(fn)


def inline_jit(fn: F) -> Dispatcher[F]:
    """``kernel_jit`` for small internal helpers, inlined into their callers by LLVM (``forceinline``):
    a state tuple passed to a call that is not inlined is copied as a large struct, which costs more
    than the helper's own work. Each helper is typed once and cached, and LLVM inlines its cached
    bitcode; numba's own IR-level inlining (``inline="always"``) would instead re-type the helper's
    body inside every caller, which made the first compilation of an environment step take 40 s
    instead of 12 s. A policy's kernel is one too: compiled on its own (and cached) when the engine
    loop calls it, inlined where another kernel calls it."""
    # ``_nrt``: numba's private option, missing from its stubs (see kernel_jit)
    return _cached(njit(_nrt=False, forceinline=True)(fn))  # type: ignore[call-overload]


class _InternalDispatcher(CPUDispatcher):
    """A dispatcher that types every call from compiled code with plain (non-literal) argument types.
    Numba types a constant argument (``_list_insert(ji, WNEXT, ...)``) as its literal value and
    compiles one copy of the callee per value; inlined by LLVM, the copies give the same machine
    code, since LLVM folds the constant into the inlined body anyway."""

    def get_call_template(self, args: Any, kws: Any) -> Any:
        args = tuple(types.unliteral(a) for a in args)
        kws = {k: types.unliteral(v) for k, v in kws.items()}
        return super().get_call_template(args, kws)


def internal_jit(
    fn: F | None = None, *, inline: bool = True, python: bool = False, nogil: bool = False
) -> Any:
    """``inline_jit`` (or, with ``inline=False``, ``kernel_jit``) for the engine's and environments'
    own helpers, which compiled code calls and which are never passed as first-class functions. They
    are compiled without numba's C-callable wrapper and, unless ``python`` (also called from Python),
    without its Python wrapper: numba builds both for every function, and for a state tuple of some
    20 arrays the Python wrapper's unboxing took longer to generate and compile than most helpers (a
    third of the cold compilation of the environment step). Constant arguments are typed as plain
    integers (``_InternalDispatcher``). ``nogil`` as in ``kernel_jit``."""

    def wrap(f: F) -> F:
        options = {  # what njit(_nrt=False) gives kernel_jit, plus the wrapper switches
            "nopython": True,
            "boundscheck": None,
            "_nrt": False,
            "no_cpython_wrapper": not python,
            "no_cfunc_wrapper": True,
            "nogil": nogil,
        }
        if inline:
            # else unset, as kernel_jit leaves it: numba then inherits it from the compiling caller
            options["forceinline"] = True
        return _cached(_InternalDispatcher(py_func=f, locals={}, targetoptions=options))

    return wrap if fn is None else wrap(fn)


ANNOUNCE_AFTER = 0.5  # seconds: a cache load takes less, a compilation more


@contextlib.contextmanager
def announce(doing: str) -> Iterator[None]:
    """Say on stderr what is being done (``"compiling the engine loop"``) if the block takes longer
    than a cache load, and how long it took: a first run should never sit silent for seconds."""
    t0 = time.perf_counter()
    said = threading.Event()

    def say() -> None:
        said.set()
        print(f"msj-gym: {doing} (once: later runs load it from the cache) ...", file=sys.stderr, flush=True)

    timer = threading.Timer(ANNOUNCE_AFTER, say)
    timer.daemon = True
    timer.start()
    outcome = "failed after"  # unless the block completes: an error is not "done"
    try:
        yield
        outcome = "done in"
    finally:
        timer.cancel()
        if said.is_set():
            seconds = time.perf_counter() - t0
            print(f"msj-gym: {doing}: {outcome} {seconds:.0f} s", file=sys.stderr, flush=True)


def cache_holds(dispatcher: Any, sig: Any) -> bool:
    """Whether compiling ``dispatcher`` for ``sig`` would only load machine code: already compiled in
    this process, or held by its disk cache under the key :meth:`_DependencyCache._index_key` gives
    (numba's ``Dispatcher.compile`` looks the same key up in the same index)."""
    args, _ = sigutils.normalize_signature(sig)
    if tuple(args) in dispatcher.overloads:
        return True
    cache = getattr(dispatcher, "_cache", None)
    if not isinstance(cache, FunctionCache):
        return False
    try:
        dispatcher.targetctx.refresh()
        key = cache._index_key(sig, dispatcher.targetctx.codegen())
        return key in cache._cache_file._load_index()
    except Exception:  # an unreadable index: numba then compiles, and so this says it does
        return False


def compile_announced(dispatcher: Any, sig: Any, what: str) -> None:
    """``dispatcher.compile(sig)``, announced as ``what`` (:func:`announce`) only when it compiles: a
    load from the disk cache, however long it takes on a busy machine, says nothing."""
    if cache_holds(dispatcher, sig):
        dispatcher.compile(sig)
        return
    with announce(what):
        dispatcher.compile(sig)


_ENTRY_POINTS: dict[tuple, Any] = {}
_BY_LAYOUT: dict[tuple, Any] = {}


def _layout(x: Any) -> Any:
    """What numba's type of ``x`` depends on, for arrays, tuples of them and scalars: cheap to compute
    where ``numba.typeof`` of a tuple of 20 arrays takes a millisecond."""
    if isinstance(x, np.ndarray):
        return (x.dtype.num, x.ndim, x.flags.num)  # every flag (contiguity, writeable, aligned) in one int
    if isinstance(x, tuple):
        return (type(x), *(_layout(v) for v in x))
    return type(x)


_TYPES: dict[Any, tuple] = {}


def argument_types(args: tuple) -> tuple:
    """``tuple(numba.typeof(a) for a in args)``, remembered by the arguments' layout (:func:`_layout`):
    typing a state of twenty arrays costs about a millisecond, its layout a few microseconds."""
    layout = _layout(args)
    types = _TYPES.get(layout)
    if types is None:
        import numba

        types = _TYPES[layout] = tuple(numba.typeof(a) for a in args)
    return types


def call_compiled(dispatcher: Any, *args: Any) -> Any:
    """``dispatcher(*args)`` through its compiled entry point, found by the arguments' layout (dtype,
    dimensions, contiguity, writeability of every array): what a call from Python costs is then the
    call itself, not numba's typing of every argument (which dominated a policy decision made from
    Python). Compiles on first use, as a call would."""
    key = (dispatcher, _layout(args))
    fn = _BY_LAYOUT.get(key)
    if fn is None:
        fn = _BY_LAYOUT[key] = entry_point(dispatcher, *args)
    return fn(*args)


def entry_point(dispatcher: Any, *args: Any, what: str | None = None) -> Callable[..., Any]:
    """The compiled entry point of ``dispatcher`` for the types of ``args`` (compiled, and announced as
    ``what``, on first use). Calling it skips numba's per-call dispatch (typing each argument, a few
    microseconds for a state tuple), which matters where one call does little work, as in an
    environment step. The caller must keep the argument types."""
    types = argument_types(args)
    key = (dispatcher, types)
    fn = _ENTRY_POINTS.get(key)
    if fn is None:
        compile_announced(dispatcher, types, f"compiling {what or dispatcher.py_func.__name__.strip('_')}")
        fn = _ENTRY_POINTS[key] = dispatcher.overloads[types].entry_point
    return fn
