"""One guard for a user's policy wherever it runs: vetted once, in a child process with a time limit,
before it runs in bulk.

A policy of one's own (``module:Class`` on the command line, a class outside the registry given to an
env as its advisor) is code msj_gym did not write. Before ``simulate``, ``leaderboard``, ``benchmark``,
``sequences`` or an env runs it, :func:`vet_policy` checks it the way
:func:`msj_gym.testing.check_policy` does, in a forked child process so that nothing it does can take
the command down:

1. its module imports, the attribute is a policy class or instance, its constructor takes the
   parameters, and its ``kernel`` (where it has one) is compiled with numba (``@inline_jit``): an
   import error, a syntax error, an exception or a hang at import or construction, or a plain-Python
   kernel, is one line naming the spec;
2. on the workload it is about to run on, a short run (:data:`VET_ARRIVALS` arrivals) with its kernel
   compiled again with numba's bounds checks and every decision checked as it is made: an index out of
   range, a job started twice in one decision, an invalid decision (capacity, a job that is not
   waiting), or a decision that does not return within the time limit is one line naming the spec and
   what went wrong, where it would otherwise be a segmentation fault, a hang or a traceback.

Each stage has :data:`VET_SECONDS` seconds (compiling the bounds-checked kernel has
:data:`COMPILE_SECONDS`). The registered policies are not vetted (they are tested with the package) and
pay nothing; a user's policy pays a fork and a short run once per process, workload and version of its
source files. Where there is no ``fork`` (Windows) the checks run in-process, without the time limit.
"""

from __future__ import annotations

import hashlib
import json
import re
import signal
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from .core.policy import Policy

__all__ = [
    "COMPILE_SECONDS",
    "VET_ARRIVALS",
    "VET_SECONDS",
    "PolicyRefused",
    "bounds_checked",
    "decision_problem",
    "is_users",
    "run_in_child",
    "vet_policy",
]

VET_SECONDS = 60.0  # per stage of the vetting: importing, running the short run
COMPILE_SECONDS = 600.0  # compiling the bounds-checked kernel (and, on a cold cache, the engine's helpers)
VET_ARRIVALS = 1000


class PolicyRefused(ValueError):
    """A user's policy that failed its vetting; ``str()`` is one line naming it."""


def decision_problem(actions: np.ndarray, n: int) -> str | None:
    """What is wrong with the ``n`` words a kernel wrote, beyond what ``apply`` checks: a count the
    array cannot hold, or one job started (or preempted) twice in one decision."""
    from .core.actions import OP_BUDGET, OP_LIMIT, OP_REQUEUE, OP_SERVE

    if not 0 <= n <= actions.size:
        return f"returned {n} action words; the actions array holds {actions.size}"
    operands = {OP_SERVE: 3, OP_BUDGET: 2, OP_REQUEUE: 1}
    started: set[int] = set()
    preempted: set[int] = set()
    i = 0
    while i < n:
        w = int(actions[i])
        if w <= OP_LIMIT:
            i += 1 + operands.get(w, 0)
            continue
        seen, what, slot = (started, "starts", w) if w >= 0 else (preempted, "preempts", -w - 1)
        if slot in seen:
            return f"one decision {what} job slot {slot} twice (words {actions[:n].tolist()})"
        seen.add(slot)
        i += 1
    return None


def bounds_checked(cls: type[Policy]) -> type:
    """``cls`` with its kernel compiled again with numba's bounds checks, asked from Python, each
    decision checked by :func:`decision_problem`: an index out of range is an ``IndexError``, not a
    write into whatever memory lies there. (Functions the kernel calls keep their compiled code.) The
    class's ``checked_kernel`` is that dispatcher, to compile ahead of the first decision."""
    import numba

    kernel: Any = cls.kernel  # a numba dispatcher (the caller made sure): it keeps the Python function
    # ``_nrt`` is numba's private option (no reference-counting runtime), missing from numba's stubs
    checked = numba.njit(_nrt=False, boundscheck=True)(kernel.py_func)  # type: ignore[call-overload]
    size_aware = bool(cls.size_aware)

    def decide(self: Any, view: Any, sizes: Any, pdata: Any, actions: np.ndarray) -> int:
        n = int(checked(view, sizes, pdata, actions) if size_aware else checked(view, pdata, actions))
        problem = decision_problem(actions, n)
        if problem is not None:
            raise ValueError(problem)
        return n

    fields = {"kernel": None, "decide": decide, "checked_kernel": checked, "__doc__": cls.__doc__}
    return type(cls.__name__, (cls,), fields)


HANG_HINT = "an endless loop in the kernel?"
CRASH_HINT = "an out-of-bounds read or write in the kernel?"


def run_in_child(
    stages: Sequence[tuple[str, Callable[[], Any], float]],
    who: str,
    *,
    hang_hint: str = HANG_HINT,
    crash_hint: str = CRASH_HINT,
    limit_name: str = "time_limit",
) -> Any:
    """Run ``stages`` (name, function, seconds) in order in a forked child, each within its seconds;
    the last one's value (sent back pickled). A stage's ``AssertionError`` is re-raised here; a crash, a
    stage over its time or any other exception is an ``AssertionError`` in one line, ``"{who}: ..."``,
    naming the stage (with ``hang_hint`` or ``crash_hint``; a stage over its time names ``limit_name``, the
    setting that gave it). The guard of code that may crash or never return (compiled code does not
    see Ctrl-C): :func:`msj_gym.testing.check_policy`, ``msj-gym score`` and :func:`vet_policy` run
    user policies in it. Where there is no ``fork`` (Windows) the stages run in-process, without the
    time limits."""
    import multiprocessing as mp

    if sys.platform == "win32" or "fork" not in mp.get_all_start_methods():
        value = None
        for _name, run, _limit in stages:
            value = run()
        return value
    ctx = mp.get_context("fork")
    receive, send = ctx.Pipe(duplex=False)

    def child() -> None:
        try:
            value = None
            for i, (_name, run, _limit) in enumerate(stages):
                send.send(("stage", i))
                value = run()
            send.send(("done", value))
        except AssertionError as exc:
            send.send(("fail", str(exc)))
        except BaseException as exc:  # reported by the parent as this stage's failure
            send.send(("error", f"{type(exc).__name__}: {' '.join(str(exc).split())}"))

    # not a daemon, so that a stage may start processes of its own (check_policy's child, in a score's);
    # the finally below ends it whatever happens here
    proc = ctx.Process(target=child, daemon=False)
    proc.start()
    send.close()
    stage, limit = "starting the checks", max((float(lim) for *_, lim in stages), default=60.0)
    try:
        while True:
            if not receive.poll(limit):
                raise AssertionError(
                    f"{who}: {stage} did not finish within {limit:g} s ({limit_name}): {hang_hint}"
                )
            try:
                kind, payload = receive.recv()
            except EOFError:  # the child died without a word: a crash in compiled code
                proc.join(10)
                code = proc.exitcode
                how = (
                    f"signal {signal.Signals(-code).name}"
                    if code is not None and code < 0
                    else f"exit {code}"
                )
                raise AssertionError(f"{who}: {stage} crashed the process ({how}): {crash_hint}") from None
            if kind == "stage":
                stage, limit = stages[payload][0], float(stages[payload][2])
            elif kind == "done":
                return payload
            elif kind == "fail":
                raise AssertionError(payload)
            else:
                raise AssertionError(f"{who}: {stage} failed: {payload}")
    finally:
        receive.close()
        if proc.is_alive():
            proc.kill()
        proc.join()


def is_users(policy: Any) -> bool:
    """Whether ``policy`` (a spec, a class or an instance) is a user's: not a registered id, nor an
    instance or class of the registered class of its id, nor a class of msj_gym's own (the learned
    agents' policies, :class:`msj_gym.agents.network.NetworkPolicy`: the package's tested code)."""
    from .registry import policy_class, policy_spec

    if isinstance(policy, str):
        return ":" in policy and not policy.startswith("msj_gym.")
    cls = policy if isinstance(policy, type) else type(policy)
    if cls.__module__.startswith("msj_gym."):
        return False
    pid = getattr(cls, "policy_id", None)
    if not isinstance(pid, str):
        return True
    try:
        policy_spec(pid)
    except ValueError:
        return True
    return policy_class(pid) is not cls


_VETTED: dict[str, None] = {}  # keys of the vettings passed in this process


def _module_file(name: str) -> str | None:
    """The source file module ``name`` would be imported from, found on ``sys.path`` without importing
    anything (a user's module is not run in this process before it is vetted)."""
    import os

    parts = name.split(".")
    for entry in sys.path:
        base = os.path.join(entry or os.getcwd(), *parts)
        for path in (base + ".py", os.path.join(base, "__init__.py")):
            if os.path.isfile(path):
                return path
    return None


def _key(policy: Any, params: dict[str, Any], workload: Any) -> str:
    """What a vetting holds for: the policy (its spec and the content of its module's file, or its
    class), its parameters and the workload's content."""
    if isinstance(policy, str):
        path = _module_file(policy.rpartition(":")[0])
        content = b"" if path is None else open(path, "rb").read()
        who = [policy, path, hashlib.sha256(content).hexdigest()]
    else:
        cls = policy if isinstance(policy, type) else type(policy)
        who = [f"{cls.__module__}.{cls.__qualname__}@{id(cls)}", repr(getattr(policy, "param_values", ""))]
    doc = getattr(workload, "to_dict", None)
    what = json.dumps(doc(), sort_keys=True, default=str) if callable(doc) else repr(id(workload))
    return json.dumps([who, params, hashlib.sha256(what.encode()).hexdigest()], default=str)


def vet_policy(
    policy: Any,
    field: str,
    workload: Any = None,
    params: dict[str, Any] | None = None,
    *,
    time_limit: float | None = None,
    arrivals: int = VET_ARRIVALS,
) -> None:
    """Vet a user's ``policy`` (a ``module:attr`` spec, a policy class or instance) as the module
    docstring says, on ``workload`` (None: stage 1 only), with ``params`` for its constructor; a
    :class:`PolicyRefused` (one line naming ``field`` and the spec) if it fails. A registered policy
    returns at once, and so does one vetted already in this process on the same workload.
    ``time_limit``: seconds per stage (default :data:`VET_SECONDS`)."""
    if not is_users(policy):
        return
    time_limit = VET_SECONDS if time_limit is None else time_limit
    params = dict(params or {})
    key = _key(policy, params, workload)
    if key in _VETTED:
        return
    name = policy if isinstance(policy, str) else getattr(policy, "policy_id", type(policy).__name__)
    who = f"{field} {name!r}"
    vetting = _Vetting(policy, field, who, params, workload, arrivals)
    stages: list[tuple[str, Callable[[], Any], float]] = [
        ("importing and making it", vetting.declared, time_limit)
    ]
    if workload is not None:
        compiling = max(time_limit, COMPILE_SECONDS)
        stages.append(("compiling its kernel with bounds checks", vetting.compiled, compiling))
        stages.append((f"its decisions on a run of {arrivals} arrivals", vetting.run, time_limit))
    hang = "an endless loop when it is imported or made?"
    try:
        run_in_child(stages, who, hang_hint=HANG_HINT, limit_name="time limit")
    except AssertionError as exc:
        text = re.sub(r"\x1b\[[0-9;]*m", "", " ".join(str(exc).split()))
        if len(text) > 400:  # numba's typing errors are paragraphs: their start
            text = text[:400] + " ..."
        if "importing and making it did not finish" in text:
            text = text.replace(HANG_HINT, hang)
        raise PolicyRefused(text) from None
    _VETTED[key] = None


class _Vetting:
    """The stages of :func:`vet_policy` in the child process: the policy made and its declarations
    checked, then (on a workload) a short run's simulator with the kernel compiled with bounds checks,
    and that run. A failure is an ``AssertionError`` that starts with ``who``."""

    def __init__(
        self, policy: Any, field: str, who: str, params: dict[str, Any], workload: Any, arrivals: int
    ) -> None:
        self.policy, self.field, self.who, self.params = policy, field, who, params
        self.workload, self.arrivals = workload, arrivals
        self.sim: Any = None

    def fail(self, what: str) -> AssertionError:
        return AssertionError(f"{self.who}: {what}")  # said as it is by run_in_child

    def made(self) -> Any:
        """The policy, made with its parameters."""
        from .core.policy import Policy
        from .registry import policy_from_spec

        policy, field = self.policy, self.field
        if isinstance(policy, str):
            try:
                return policy_from_spec(policy, field, **self.params)
            except ValueError as exc:
                raise self.fail(" ".join(str(exc).split()).removeprefix(f"{field} {policy!r}: ")) from None
        if isinstance(policy, type):
            if not issubclass(policy, Policy):
                raise self.fail(f"expected a Policy class, got {policy.__name__}")
            return policy(**self.params)
        return policy

    def declared(self) -> None:
        """Stage 1: it imports and is made, and a kernel it declares is compiled."""
        obj = self.made()
        kernel = getattr(type(obj), "kernel", None)
        if kernel is not None:
            from numba.core.dispatcher import Dispatcher

            if not isinstance(kernel, Dispatcher):
                raise self.fail(
                    f"its kernel {getattr(kernel, '__name__', kernel)!r} is not compiled: decorate it with "
                    "@inline_jit (msj_gym.core.jit)"
                )

    def compiled(self) -> None:
        """The short run's simulator, and the policy's kernel compiled with bounds checks for it."""
        import numba

        from .core.simulator import Simulator

        obj = self.made()
        cls = type(obj)
        workload = self.workload
        try:
            obj = obj.for_workload(workload)
            reason = obj.unsupported(workload)
        except ValueError as exc:
            reason = str(exc)
        if reason is not None:
            raise self.fail(f"not defined on {getattr(workload, 'name', 'the workload')}: {reason}")
        kind: Any = bounds_checked(cls) if cls.kernel is not None else cls
        checked = kind(**obj.param_values) if kind is not cls else obj
        sim = Simulator(
            workload,
            checked,
            seed=0,
            num_arrivals=self.arrivals,
            warmup=0,
            max_arrivals=2 * self.arrivals + 2,
            record_jobs=False,
        )
        if kind is not cls:
            sizes = (sim.sizes,) if cls.size_aware else ()
            args = (sim.view, *sizes, sim.pdata, sim.actions)
            kind.checked_kernel.compile(tuple(numba.typeof(a) for a in args))
        self.sim = sim

    def run(self) -> None:
        """The short run, every decision checked."""
        from .core.simulator import SimulationError

        try:
            self.sim.run()
        except (SimulationError, ValueError, IndexError) as exc:
            if isinstance(exc, ValueError) and str(exc).startswith("no job was measured"):
                return  # a short run that measured nothing proves nothing against the policy
            what = " ".join(str(exc).split())
            raise self.fail(f"a short run failed: {type(exc).__name__}: {what}") from None
