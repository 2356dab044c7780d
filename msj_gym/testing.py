"""``check_policy``: what a new policy must pass before it is compared with the papers' policies.

Run it in a test of your own (``assert check_policy(MyPolicy())``); each failure is an
``AssertionError`` that says which check failed and why, in one line.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["check_policy"]

_KEBAB = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")


def _fail(policy_id: str, what: str) -> AssertionError:
    return AssertionError(f"check_policy({policy_id!r}): {what}")


def check_policy(
    policy: Any,
    *,
    scenario: str = "sf-fig2",
    load: float = 0.7,
    num_arrivals: int = 2000,
    seed: int = 11,
    queue_window: int = 64,
    preempt_window: int = 64,
) -> dict[str, Any]:
    """Check an MSJ policy (a :class:`~msj_gym.Policy` or a registered id) on ``scenario`` at ``load``:

    1. its declarations: a kebab-case ``policy_id``, a ``reference``, a docstring, ``preemptive`` and
       ``size_aware`` flags, and a compiled ``kernel``;
    2. a native run in debug mode (the engine's invariants, and the policy's own, after every event):
       every decision valid (capacity, preemption rights, waiting jobs only), some jobs measured;
    3. determinism: a second native run with the same seed gives the same result, bit for bit (no
       randomness outside the policy's own seeded stream);
    4. the same run through ``MSJ-v0`` (``MSJPreemptive-v0`` for a preemptive policy), one action per
       step with :class:`~msj_gym.PolicyAgent`, gives the native result exactly.

    Returns the native result as a dict (``SimulationResult.to_dict()``)."""
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
    if "msj" not in cls.models:
        raise _fail(pid, f"checks MSJ policies; this one is defined on {', '.join(cls.models)}")

    workload = load_scenario(scenario).build(load=load)
    warmup = num_arrivals // 10
    cap = 2 * num_arrivals + 2  # the same arrival cap natively and through the env
    # the env keeps no per-job records (its state has a fixed size), so neither does the native run
    # compared with it: both report the response-time percentiles as not computed
    run = {
        "seed": seed,
        "num_arrivals": num_arrivals,
        "warmup": warmup,
        "max_arrivals": cap,
        "record_jobs": False,
    }

    def native(debug: bool) -> dict[str, Any]:
        try:
            result = Simulator(workload, type(policy)(**policy.param_values), debug=debug, **run).run()
        except (SimulationError, ValueError) as exc:
            raise _fail(pid, f"the native run{' in debug mode' if debug else ''} failed: {exc}") from None
        out = result.to_dict()
        out.pop("provenance")
        return out

    first = native(debug=True)
    if not first["num_measured"]:
        raise _fail(pid, f"no job was measured on {scenario} at load {load} ({first['stability_note']})")
    again = native(debug=False)
    if again != first:
        changed = sorted(k for k in first if first[k] != again[k])
        raise _fail(
            pid, f"two runs with seed {seed} differ ({', '.join(changed)}): randomness outside pdata.rng?"
        )

    env_id = "MSJPreemptive-v0" if cls.preemptive else "MSJ-v0"
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
        through_env = rollout(env, PolicyAgent(type(policy)(**policy.param_values), env), seed=seed).to_dict()
    except (SimulationError, ValueError) as exc:
        raise _fail(pid, f"the run through {env_id} failed: {exc}") from None
    through_env.pop("provenance")
    policy_metrics = first.pop("policy_metrics"), through_env.pop("policy_metrics")  # native extras only
    if through_env != first:
        changed = sorted(k for k in first if first[k] != through_env.get(k))
        raise _fail(pid, f"through {env_id} the result differs from the native run ({', '.join(changed)})")
    first["policy_metrics"] = policy_metrics[0]
    return first
