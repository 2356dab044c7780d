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
    import gymnasium as gym

    from .core.policy import Policy
    from .core.simulator import SimulationError, Simulator
    from .env.agents import PolicyAgent, rollout
    from .registry import make_policy
    from .workloads.scenarios import load_scenario

    if isinstance(policy, str):
        policy = make_policy(policy)
    if not isinstance(policy, Policy):
        raise TypeError(f"policy: expected an MSJ Policy or a policy id, got {type(policy).__name__}")
    cls = type(policy)
    pid = cls.policy_id
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
    if "msj" not in cls.models:
        raise _fail(pid, f"checks MSJ policies; this one is defined on {', '.join(cls.models)}")

    if not (isinstance(time_limit, int | float) and np.isfinite(time_limit) and time_limit > 0):
        raise ValueError(f"time_limit: expected a positive number of seconds, got {time_limit!r}")

    workload = load_scenario(scenario).build(load=load)
    warmup = num_arrivals // 10
    cap = 2 * num_arrivals + 2  # the same arrival cap natively and through the env
    # the env keeps no per-job records (its state has a fixed size), so neither does the native run
    # compared with it: both report the response-time percentiles as not computed
    run: dict[str, Any] = {
        "seed": seed,
        "num_arrivals": num_arrivals,
        "warmup": warmup,
        "max_arrivals": cap,
        "record_jobs": False,
    }
    env_id = "MSJPreemptive-v0" if cls.preemptive else "MSJ-v0"
    found: dict[str, Any] = {}

    def native(kind: type, debug: bool, what: str) -> dict[str, Any]:
        try:
            result = Simulator(workload, kind(**policy.param_values), debug=debug, **run).run()
        except (SimulationError, ValueError, IndexError) as exc:
            raise _fail(
                pid, f"{what} failed: {type(exc).__name__ + ': ' if isinstance(exc, IndexError) else ''}{exc}"
            ) from None
        out = result.to_dict()
        out.pop("provenance")
        return out

    def checked_run() -> None:
        out = native(_bounds_checked(cls), True, "the native run in debug mode")
        if not out["num_measured"]:
            raise _fail(pid, f"no job was measured on {scenario} at load {load} ({out['stability_note']})")

    def compiled_runs() -> None:
        found["first"] = native(cls, True, "the compiled native run in debug mode")
        again = native(cls, False, "the compiled native run")
        if again != found["first"]:
            changed = sorted(k for k in again if found["first"][k] != again[k])
            raise _fail(
                pid, f"two runs with seed {seed} differ ({', '.join(changed)}): randomness outside pdata.rng?"
            )

    def env_run() -> dict[str, Any]:
        first = found["first"]
        env = gym.make(
            env_id,
            scenario=scenario,
            load=load,
            num_arrivals=num_arrivals,
            warmup=warmup,
            max_arrivals=cap,
            queue_window=queue_window,
            preempt_window=preempt_window,
        )
        try:
            through_env = rollout(env, PolicyAgent(cls(**policy.param_values), env), seed=seed).to_dict()
        except (SimulationError, ValueError) as exc:
            # the env's own advice names its keyword; here the window is check_policy's argument
            said = str(exc)
            for name in ("queue_window", "preempt_window"):
                said = said.replace(
                    f"make the env with a larger {name}", f"pass check_policy a larger {name}="
                )
            raise _fail(pid, f"the run through {env_id} failed: {said}") from None
        through_env.pop("provenance")
        policy_metrics = first.pop("policy_metrics"), through_env.pop("policy_metrics")  # native extras only
        if through_env != first:
            changed = sorted(k for k in first if first[k] != through_env.get(k))
            raise _fail(
                pid, f"through {env_id} the result differs from the native run ({', '.join(changed)})"
            )
        first["policy_metrics"] = policy_metrics[0]
        return first

    return _in_child(
        [
            ("the native run in debug mode (bounds-checked)", checked_run),
            ("the compiled native runs", compiled_runs),
            (f"the run through {env_id}", env_run),
        ],
        pid,
        float(time_limit),
    )
