"""Baselines run inside an MSJ environment's episode: the warm start (a policy that plays the first
arrivals before the agent takes over) and the advisors (policies whose whole decision is one more
action of ``actions="priority"``).

The single env and the native vector env share these pieces, so that an advised or warm-started
episode is the same in both, bit for bit: the vector env runs them on one environment's row of its
stacked state (:class:`RowCore`), the single env on its own simulator.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..core import state as S
from ..core.engine import apply
from ..core.policy import Policy
from ..core.simulator import PolicyDriver, SimulationError, Simulator

__all__ = [
    "Advice",
    "RowCore",
    "apply_words",
    "baseline",
    "estimating",
    "requested_attribute",
    "run_warm_start",
]


def run_warm_start(core: Simulator, policy: Policy, arrivals: int) -> None:
    """Run the warm-start ``policy`` natively in ``core`` until ``arrivals`` jobs have arrived; the
    agent takes over from the next event on."""
    wl = core.workload
    pdata = core.prepare_policy(policy)
    while (status := core.run_policy_python(policy, pdata, until_arrivals=arrivals)) != S.ST_EVENT:
        if not core.handle(status):
            raise SimulationError("warm_start: the run ended during the warm start")
        pdata = policy.with_work(pdata, core.sim.ji.shape[0], wl.num_servers, wl.num_classes)


def apply_words(sim: S.Sim, words: np.ndarray, where: str) -> None:
    """Apply a policy's decision (engine words) to ``sim``; a ``SimulationError`` naming ``where`` if
    the engine refuses it."""
    if len(words) and apply(sim, words, len(words)) != S.E_NONE:
        code, job = int(sim.iv[S.I_ERR]), int(sim.iv[S.I_ERR_JOB])
        msg = S.ERROR_MESSAGES.get(code, "unknown error {job}").format(job=job)
        raise SimulationError(f"{where} at t={sim.fv[S.F_NOW]:.6g}: {msg}")


class RowCore:
    """What a :class:`~msj_gym.core.simulator.PolicyDriver` reads of a simulator, over one row of a
    vector env's stacked state: the workload, the state's views and the episode's policy stream (the
    one ``Simulator(seed=...)`` draws a policy's data from). :meth:`rebind` after the rows' arrays
    are replaced (more job slots)."""

    def __init__(self, workload: Any, seed: int, sim: S.Sim) -> None:
        self.workload = workload
        # as Simulator._setup spawns it: the fourth child of the run's seed is the policy's stream
        self.policy_seed = np.random.SeedSequence(seed).spawn(4)[3]
        self.rebind(sim)

    def rebind(self, sim: S.Sim) -> None:
        self.sim = sim
        self.view = S.make_view(sim)
        self.sizes = S.make_sizes(sim)

    prepare_policy = Simulator.prepare_policy


class Advice:
    """The advisors of one episode: each one's driver (its data drawn from the episode's policy stream)
    and its decision now, kept for its action."""

    def __init__(self, advisors: tuple[Policy, ...]) -> None:
        self.advisors = advisors
        self.words: list[np.ndarray] = [np.zeros(0, dtype=np.int64)] * len(advisors)
        self.drivers: list[PolicyDriver | None] = [None] * len(advisors)

    def start(self, core: Any) -> None:
        """A new episode on ``core`` (a simulator, or a :class:`RowCore`)."""
        self.drivers = [PolicyDriver(p, core) for p in self.advisors]
        self.words = [np.zeros(0, dtype=np.int64)] * len(self.advisors)

    def ask(self, decision: bool) -> None:
        """Each advisor's decision now; at an event where nothing can be decided (``decision=False``)
        only the advisors that follow every event are asked, for their bookkeeping."""
        for j, driver in enumerate(self.drivers):
            assert driver is not None  # start() made them
            if decision or driver.policy.decides_every_event:
                self.words[j] = driver.decide().copy()


def baseline(field: str, policy: Any, workload: Any, preemptive: bool) -> Policy:
    """``policy`` (a policy id, ``module:attr`` or a :class:`Policy`) as a baseline an env on
    ``workload`` (preemptive or not) can run natively; a one-line ``ValueError`` naming ``field``
    otherwise."""
    from msj_gym.guard import is_users, vet_policy

    if is_users(policy) and (isinstance(policy, str) or isinstance(policy, Policy)):
        # a user's policy: vetted once per process on this workload, in a child process
        vet_policy(policy, field, workload)
    if isinstance(policy, str):
        from msj_gym.registry import policy_from_spec

        policy = policy_from_spec(policy, field)  # an id, or module:attr outside the registry
    if not isinstance(policy, Policy):
        raise ValueError(f"{field}: expected a policy id or Policy, got {policy!r}")
    if policy.preemptive and not preemptive:
        raise ValueError(f"{field}: {policy.policy_id!r} preempts; MSJ-v0 takes a non-preemptive policy")
    return policy


def requested_attribute(size_estimates: Any, reveal_sizes: bool, actions: Any, workload: Any) -> int:
    """``size_estimates`` checked: -1 for the exact sizes, else the workload's requested-time
    attribute (what ``reveal_sizes``, ``"priority-shortest"`` and the advisors then know of sizes)."""
    if size_estimates not in ("exact", "requested"):
        raise ValueError(f"size_estimates: expected 'exact' or 'requested', got {size_estimates!r}")
    if size_estimates == "exact":
        return -1
    if not reveal_sizes and actions != "priority-shortest":
        raise ValueError(
            "size_estimates: 'requested' changes what reveal_sizes=True and actions='priority-shortest' "
            f"know of sizes; got reveal_sizes=False and actions={actions!r}"
        )
    from ..workloads.trace import requested_time_attribute

    found = requested_time_attribute(workload)
    if found is None:
        raise ValueError(
            f"size_estimates: 'requested' needs a workload with requested times (an SWF log); "
            f"{workload.name!r} has none"
        )
    return int(found)


def estimating(policy: Policy) -> Policy:
    """Advisor ``policy`` as it acts when the env knows requested times only: with
    ``estimates="requested"`` where it estimates exactly (EASY's default); refused if it would
    still read the jobs' sizes."""
    if "estimates" in getattr(policy, "params_spec", {}):
        current = getattr(policy, "estimates", policy.param_values.get("estimates"))
        if current not in ("exact", "requested"):
            raise ValueError(
                f"advisor: {policy.policy_id!r} with estimates={current!r}; with size_estimates="
                "'requested' its estimates are the requested times"
            )
        policy = type(policy)(**{**policy.param_values, "estimates": "requested"})
    if policy.reads_sizes():
        raise ValueError(
            f"advisor: {policy.policy_id!r} reads exact job sizes, which size_estimates='requested' withholds"
        )
    return policy
