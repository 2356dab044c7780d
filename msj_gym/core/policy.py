"""The policy protocol: a narrow decision rule over a read-only view of the simulator state."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from .jit import call_compiled
from .kernels import DecisionRule, decision_rule
from .layout import Layout
from .state import PolicyData
from .workload import WorkloadLike

__all__ = ["Param", "Policy", "check_param_names"]


@dataclass(frozen=True)
class Param:
    """A declared policy parameter: its type, default and meaning (shown by ``msj-gym list``)."""

    kind: type
    default: Any
    doc: str
    choices: tuple[Any, ...] | None = None
    minimum: float | None = None


def check_param_names(policy_id: str, spec: Mapping[str, Param], params: Mapping[str, Any]) -> None:
    """A one-line ValueError if ``params`` names a parameter that policy ``policy_id`` does not declare
    in ``spec`` (its ``params_spec``), listing the ones it does."""
    unknown = set(params) - set(spec)
    if unknown:
        known = ", ".join(sorted(spec)) or "none"
        raise ValueError(f"policy {policy_id!r}: unknown parameter(s) {sorted(unknown)}; known: {known}")


class Policy:
    """Base class of every scheduling policy.

        Subclasses declare ``policy_id`` (kebab-case, the CLI id), ``preemptive`` (may it preempt running
        jobs?), ``size_aware`` (does it read service times? only then is it handed :class:`Sizes`),
        ``reference`` (paper and section), ``params`` (declared parameters) and ``kernel``: the compiled
        decision rule (see :mod:`msj_gym.core.kernels`). ``prepare`` turns the parameters and the workload
        into the arrays the kernel reads; ``work``, a :class:`~msj_gym.core.layout.Layout`, names the regions
    of its scratch arrays (``iwork``, ``fwork``) and sizes them.

        The kernel is asked for a decision only at events where some action is possible (a waiting job
        fits, or a preemptive policy may preempt), natively as through the environments; a policy whose
        decisions or bookkeeping follow every event (phases switched by arrivals, its own record of the
        allocation) sets ``decides_every_event``. A policy written in Python alone (``decide``, no
        kernel) is asked at every event.
    """

    policy_id: ClassVar[str] = ""
    preemptive: ClassVar[bool] = False
    size_aware: ClassVar[bool] = False
    reference: ClassVar[str] = ""
    params_spec: ClassVar[Mapping[str, Param]] = {}
    kernel: ClassVar[Callable[..., int] | None] = None
    invariant: ClassVar[Callable[..., int] | None] = None
    models: ClassVar[tuple[str, ...]] = ("msj",)
    decides_every_event: ClassVar[bool] = False
    work: ClassVar[Layout | None] = None
    _rules: ClassVar[dict[type, DecisionRule]] = {}

    def __init__(self, **params: Any) -> None:
        check_param_names(self.policy_id, self.params_spec, params)
        values = {}
        for name, spec in self.params_spec.items():
            values[name] = self._coerce(name, spec, params.get(name, spec.default))
        self.param_values: dict[str, Any] = values

    def _coerce(self, name: str, spec: Param, value: Any) -> Any:
        where = f"policy {self.policy_id!r} parameter {name!r}"
        try:
            if spec.kind is bool and isinstance(value, str):
                if value.lower() not in ("true", "false", "1", "0", "yes", "no"):
                    raise ValueError
                v: Any = value.lower() in ("true", "1", "yes")
            else:
                v = spec.kind(value)
        except (TypeError, ValueError):
            raise ValueError(f"{where}: expected {spec.kind.__name__}, got {value!r}") from None
        if isinstance(v, float) and not np.isfinite(v):
            raise ValueError(f"{where}: expected a finite number, got {value!r}")
        if spec.choices is not None and v not in spec.choices:
            raise ValueError(f"{where}: expected one of {list(spec.choices)}, got {value!r}")
        if spec.minimum is not None and v < spec.minimum:
            raise ValueError(f"{where}: expected >= {spec.minimum}, got {value!r}")
        return v

    # -------------------------------------------------------------------------------------------------
    @classmethod
    def decision_rule(cls) -> DecisionRule:
        """This policy's kernel (and invariant) as the engine loop calls them."""
        if cls.kernel is None:
            raise TypeError(f"policy {cls.policy_id!r} has no compiled kernel")
        rule = Policy._rules.get(cls)
        if rule is None:
            rule = Policy._rules[cls] = decision_rule(
                cls.kernel,
                size_aware=cls.size_aware,
                invariant=cls.invariant,
                every_event=cls.decides_every_event,
                name=f"the {cls.policy_id} decision rule",
            )
        return rule

    def for_workload(self, workload: WorkloadLike) -> Policy:
        """The policy that runs on ``workload``: itself if it is defined on the workload's ``model``
        (:class:`~msj_gym.workloads.workload.WorkloadLike`), else a ``ValueError``. A policy defined on
        several models may return its variant for the workload's model."""
        model = workload.model
        if model not in self.models:
            raise ValueError(
                f"policy {self.policy_id!r} is not defined on the {model} model "
                f"(it is defined on: {', '.join(self.models)})"
            )
        return self

    def unsupported(self, workload: WorkloadLike) -> str | None:
        """Why this policy is not defined on ``workload`` (a workload of one of its ``models``), in one
        line, or None where it is: the workloads it refuses, declared so that they can be asked without
        preparing it (a leaderboard asks every entrant at every scenario before any run). The default
        refuses none. A policy whose ``prepare`` cannot run on some workloads returns the reason here and
        begins ``prepare`` with :meth:`require`, so that the two cannot disagree. A policy of the user's
        own that declares nothing is asked by preparing it once (:func:`msj_gym.registry.supports`)."""
        return None

    def require(self, workload: WorkloadLike) -> None:
        """A ``ValueError`` with the reason :meth:`unsupported` gives, if it gives one."""
        reason = self.unsupported(workload)
        if reason is not None:
            raise ValueError(reason)

    def action_words(self, num_servers: int) -> int:
        """Room the kernel needs in ``actions`` for one decision (see :mod:`msj_gym.core.actions`)."""
        return 2 * num_servers + 2

    def check(self, view: Any, pdata: PolicyData) -> int:
        """The policy's invariant (0: consistent) from Python; the batch path calls it compiled."""
        check = type(self).invariant
        return 0 if check is None else int(check(view, pdata))

    def prepare(self, workload: WorkloadLike, rng: np.random.Generator) -> PolicyData:
        """Arrays for the kernel. The default carries no parameters; override to add them: declare the
        fields once as a :class:`~msj_gym.core.record.Record` (``FIELDS = Record("threshold", "keys")``,
        ids ``THRESHOLD, KEYS = FIELDS.ids``), pack them here
        (``super().prepare(workload, rng)._replace(params=FIELDS.pack(threshold=..., keys=...))``) and
        read them in the kernel by id (``value(pdata.params, THRESHOLD)``, ``field(pdata.params, KEYS)``,
        see :mod:`msj_gym.core.access`)."""
        return PolicyData(
            params=np.zeros(0),
            state=np.zeros(0),
            table=np.zeros((0, 0)),
            uniforms=np.zeros(0),
            iwork=np.zeros(0, dtype=np.int64),
            fwork=np.zeros(0),
            rng=rng,
        )

    def work_sizes(
        self, num_slots: int, num_servers: int, num_classes: int, params: np.ndarray | None = None
    ) -> tuple[int, int]:
        """Scratch the kernel needs: (int64 entries, float64 entries); from ``work`` (its regions and
        headers; ``params``, the packed parameters, if a region's size reads one), else none. Re-evaluated
        when the simulator grows its slot arrays; scratch content does not survive a resize (a policy
        whose per-slot bookkeeping must survive overrides :meth:`with_work` and copies it)."""
        if self.work is not None:
            return self.work.work_sizes(num_slots, num_servers, num_classes, params)
        return 0, 0

    def with_work(self, pdata: PolicyData, num_slots: int, num_servers: int, num_classes: int) -> PolicyData:
        """``pdata`` with scratch arrays sized for ``num_slots`` slots (laid out by ``work`` if set)."""
        if self.work is not None:
            return self.work.with_work(pdata, num_slots, num_servers, num_classes)
        n_int, n_float = self.work_sizes(num_slots, num_servers, num_classes)
        if pdata.iwork.size >= n_int and pdata.fwork.size >= n_float:
            return pdata
        return pdata._replace(iwork=np.zeros(max(n_int, 1), dtype=np.int64), fwork=np.zeros(max(n_float, 1)))

    def decide(self, view: Any, sizes: Any, pdata: PolicyData, actions: np.ndarray) -> int:
        """One decision from Python (the environment's path); the batch path calls the kernel directly."""
        kernel = type(self).kernel  # via the class: a numba dispatcher would bind to the instance
        if kernel is None:
            raise NotImplementedError(f"policy {self.policy_id!r} implements neither kernel nor decide")
        if self.size_aware:
            return int(call_compiled(kernel, view, sizes, pdata, actions))
        return int(call_compiled(kernel, view, pdata, actions))

    def report(self, pdata: PolicyData) -> dict[str, Any]:
        """Policy-specific metrics of a finished run (none by default)."""
        return {}

    def reads_sizes(self) -> bool:
        """Whether this instance's decisions depend on job sizes (service times): ``size_aware`` unless
        its parameters say otherwise (a size-aware class may run on estimates it is given instead, such
        as a trace's requested times). Leaderboards classify an entrant by it."""
        return bool(self.size_aware)

    def stability_limit(self, workload: WorkloadLike) -> tuple[float, str] | None:
        """``(load limit, source)``: the largest load at which a theorem says this policy is stable on
        ``workload`` (the class mix held fixed), and where that comes from, saying whether the value is
        exact or a sufficient (lower) bound; None where no theorem applies (the default). The
        leaderboard's standings print it beside the empirical stability."""
        return None

    def kind_notes(self) -> tuple[str, ...]:
        """Short notes on how this instance decides, for a leaderboard's kind column (e.g. which run-time
        estimates it uses); none by default."""
        return ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.policy_id,
            "params": dict(self.param_values),
            "preemptive": self.preemptive,
            "size_aware": self.size_aware,
        }

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.param_values.items())
        return f"{type(self).__name__}({args})"
