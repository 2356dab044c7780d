"""``check_policy``: what a new policy must pass before it is compared with the papers' policies.

Run it in a test of your own (``assert check_policy(MyPolicy())``); each failure is an
``AssertionError`` that says which check failed and why, in one line.

It is a safety net for code under development: the runs happen in a child process (forked, where the
platform can), so that a kernel that writes out of bounds and crashes, or loops for ever (compiled code
does not see Ctrl-C), fails one check with a one-line message instead of taking the interpreter down;
each check has ``time_limit`` seconds. Where there is no ``fork`` (Windows) the checks run in-process,
without the time limit.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

# the child-process guard is msj_gym.guard's: every command puts a user's policy under it too
from .guard import run_in_child

if TYPE_CHECKING:
    from .core.policy import Policy

__all__ = ["DEFAULT_TIME_LIMIT", "check_policy", "run_in_child"]

_KEBAB = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
DEFAULT_TIME_LIMIT = 600.0  # seconds per check; a cold start compiles the engine loop within the first


def _fail(policy_id: str, what: str) -> AssertionError:
    return AssertionError(f"check_policy({policy_id!r}): {what}")


def _compiled(kernel: Any) -> bool:
    from numba.core.dispatcher import Dispatcher

    return isinstance(kernel, Dispatcher)


def _bounds_checked(cls: type[Policy]) -> type:
    from .guard import bounds_checked

    return bounds_checked(cls)


def _in_child(stages: list[tuple[str, Callable[[], Any]]], pid: str, time_limit: float) -> Any:
    """:func:`run_in_child` of ``stages`` (name, function), each within ``time_limit`` seconds, its
    failures worded as :func:`check_policy`'s."""
    return run_in_child([(name, run, time_limit) for name, run in stages], f"check_policy({pid!r})")


def check_policy(
    policy: Any,
    *,
    scenario: str = "sf-fig2",
    load: float = 0.7,
    num_arrivals: int = 2000,
    seed: int = 11,
    queue_window: int = 64,
    preempt_window: int = 64,
    time_limit: float = DEFAULT_TIME_LIMIT,
) -> dict[str, Any]:
    """Check an MSJ policy (a :class:`~msj_gym.Policy` or a registered id) on ``scenario`` at ``load``:

    1. its declarations: a kebab-case ``policy_id``, a ``reference``, a docstring, ``preemptive`` and
       ``size_aware`` flags, and a ``kernel`` compiled with numba (``@inline_jit``);
    2. a native run in debug mode (the engine's invariants, and the policy's own, after every event),
       with the kernel compiled again with bounds checks and every decision checked as it is made:
       every index in range, no job started twice in one decision, every decision valid (capacity,
       preemption rights, waiting jobs only), some jobs measured;
    3. the same run with the kernel as compiled, in debug mode, and again without: the same result,
       bit for bit (no randomness outside the policy's own seeded stream);
    4. the same run through ``MSJ-v0`` (``MSJPreemptive-v0`` for a preemptive policy), one action per
       step with :class:`~msj_gym.PolicyAgent`, gives the native result exactly.

    Checks 2 to 4 run in a child process, each within ``time_limit`` seconds (see the module
    docstring). Returns the native result as a dict (``SimulationResult.to_dict()``)."""
    from .workloads.scenarios import load_scenario

    policy = _as_policy(policy)
    cls = type(policy)
    pid = cls.policy_id
    _check_declarations(cls, pid)
    workload = load_scenario(scenario).build(load=load)
    if workload.model not in cls.models:  # the env it is checked through is the queue's
        raise _fail(pid, f"checks MSJ policies; this one is defined on {', '.join(cls.models)}")
    if not (isinstance(time_limit, int | float) and np.isfinite(time_limit) and time_limit > 0):
        raise ValueError(f"time_limit: expected a positive number of seconds, got {time_limit!r}")
    runs = _Runs(policy, workload, scenario, load, num_arrivals, seed, queue_window, preempt_window)
    return _in_child(
        [
            ("the native run in debug mode (bounds-checked)", runs.checked_run),
            ("the compiled native runs", runs.compiled_runs),
            (f"the run through {runs.env_id}", runs.env_run),
        ],
        pid,
        float(time_limit),
    )


def _as_policy(policy: Any) -> Policy:
    """``policy``, or the registered policy of that id; a ``TypeError`` for anything else."""
    from .core.policy import Policy
    from .registry import make_policy

    if isinstance(policy, str):
        policy = make_policy(policy)
    if not isinstance(policy, Policy):
        raise TypeError(f"policy: expected an MSJ Policy or a policy id, got {type(policy).__name__}")
    return policy


def _check_declarations(cls: type[Policy], pid: Any) -> None:
    """Check 1 of :func:`check_policy`: what the class declares, and its compiled kernel."""
    if not isinstance(pid, str) or not _KEBAB.match(pid):
        raise _fail(str(pid), f"policy_id must be kebab-case (e.g. 'scan-fit'), got {pid!r}")
    if not str(cls.reference).strip():
        raise _fail(pid, "reference is empty: name the paper and section the policy implements")
    if not (cls.__doc__ or "").strip():
        raise _fail(pid, "the class has no docstring (what it does, preemptive or not, sizes or not)")
    if not isinstance(cls.preemptive, bool) or not isinstance(cls.size_aware, bool):
        raise _fail(pid, "preemptive and size_aware must be declared as True or False")
    if cls.kernel is None:
        raise _fail(pid, "no compiled kernel: set kernel = <your decision rule>")
    if not _compiled(cls.kernel):
        raise _fail(
            pid,
            f"the kernel {getattr(cls.kernel, '__name__', cls.kernel)!r} is not compiled: decorate it "
            "with @inline_jit (msj_gym.core.jit)",
        )


class _Runs:
    """Checks 2 to 4 of :func:`check_policy`, each a stage of the child process: the native runs
    (bounds-checked, compiled, twice) and the run through the env, all of one seeded job stream."""

    def __init__(
        self,
        policy: Policy,
        workload: Any,
        scenario: str,
        load: float,
        num_arrivals: int,
        seed: int,
        queue_window: int,
        preempt_window: int,
    ) -> None:
        self.policy, self.cls, self.pid = policy, type(policy), type(policy).policy_id
        self.workload, self.scenario, self.load = workload, scenario, load
        self.seed, self.num_arrivals, self.warmup = seed, num_arrivals, num_arrivals // 10
        self.cap = 2 * num_arrivals + 2  # the same arrival cap natively and through the env
        self.windows: dict[str, Any] = {"queue_window": queue_window, "preempt_window": preempt_window}
        # the env keeps no per-job records (its state has a fixed size), so neither does the native run
        # compared with it: both report the response-time percentiles as not computed
        self.run: dict[str, Any] = {
            "seed": seed,
            "num_arrivals": num_arrivals,
            "warmup": self.warmup,
            "max_arrivals": self.cap,
            "record_jobs": False,
        }
        self.env_id = "MSJPreemptive-v0" if self.cls.preemptive else "MSJ-v0"
        self.first: dict[str, Any] = {}

    def native(self, kind: type, debug: bool, what: str) -> dict[str, Any]:
        from .core.simulator import SimulationError, Simulator

        try:
            result = Simulator(self.workload, kind(**self.policy.param_values), debug=debug, **self.run).run()
        except (SimulationError, ValueError, IndexError) as exc:
            named = type(exc).__name__ + ": " if isinstance(exc, IndexError) else ""
            raise _fail(self.pid, f"{what} failed: {named}{exc}") from None
        out = result.to_dict()
        out.pop("provenance")
        return out

    def checked_run(self) -> None:
        out = self.native(_bounds_checked(self.cls), True, "the native run in debug mode")
        if not out["num_measured"]:
            raise _fail(
                self.pid,
                f"no job was measured on {self.scenario} at load {self.load} ({out['stability_note']})",
            )

    def compiled_runs(self) -> None:
        self.first = self.native(self.cls, True, "the compiled native run in debug mode")
        again = self.native(self.cls, False, "the compiled native run")
        if again != self.first:
            changed = sorted(k for k in again if self.first[k] != again[k])
            why = f"two runs with seed {self.seed} differ ({', '.join(changed)})"
            raise _fail(self.pid, why + ": randomness outside pdata.rng?")

    def env_run(self) -> dict[str, Any]:
        import gymnasium as gym

        from .core.simulator import SimulationError
        from .env.agents import PolicyAgent, rollout

        first = self.first
        env = gym.make(
            self.env_id,
            scenario=self.scenario,
            load=self.load,
            num_arrivals=self.num_arrivals,
            warmup=self.warmup,
            max_arrivals=self.cap,
            **self.windows,
        )
        agent = PolicyAgent(self.cls(**self.policy.param_values), env)
        try:
            through_env = rollout(env, agent, seed=self.seed).to_dict()
        except (SimulationError, ValueError) as exc:
            # the env's own advice names its keyword; here the window is check_policy's argument
            said = str(exc)
            for name in self.windows:
                said = said.replace(
                    f"make the env with a larger {name}", f"pass check_policy a larger {name}="
                )
            raise _fail(self.pid, f"the run through {self.env_id} failed: {said}") from None
        through_env.pop("provenance")
        policy_metrics = first.pop("policy_metrics"), through_env.pop("policy_metrics")  # native extras only
        if through_env != first:
            changed = sorted(k for k in first if first[k] != through_env.get(k))
            raise _fail(
                self.pid,
                f"through {self.env_id} the result differs from the native run ({', '.join(changed)})",
            )
        first["policy_metrics"] = policy_metrics[0]
        return first
