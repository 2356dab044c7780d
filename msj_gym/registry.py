"""One registry of the scheduling policies of every model, by id, with lazy ``"module:Class"`` entry points.

As Gymnasium registers its environments, an entry names its class by a string: nothing is imported until
the policy is used (:func:`policy_class`, :func:`make_policy`), so listing the ids of a model
(:func:`policy_ids`) imports no policy. Each entry also declares the model(s) the policy is defined on:
``"msj"`` (the queueing multiserver-job model), ``"compatibility"`` (job-server compatibility graphs,
Bonald & Comte (2017)) and ``"moldable"`` (the moldable loss system, Ghanbarian et al. (2024)). Loading a
class checks that its own ``models`` match the declaration, so the lazy field cannot drift.

A policy of your own package is registered the same way, and then runs wherever this process accepts
an id (:func:`make_policy`, ``baselines.make_policy``, ``PolicyAgent``)::

    from msj_gym.registry import register_policy

    register_policy("my-id", "mypkg.mymodule:MyPolicy")

A registration lives in the process that made it. The command line and the experiments' worker
processes name a policy outside the registry by ``module:attr`` instead (:func:`policy_from_spec`):
the spec travels as a string and each process imports the module itself.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "MODELS",
    "PolicySpec",
    "list_policies",
    "make_policy",
    "policy_class",
    "policy_ids",
    "policy_spec",
    "register_policy",
]

MODELS = ("msj", "compatibility", "moldable")


@dataclass(frozen=True)
class PolicySpec:
    """One registry entry: ``policy_id``, ``entry_point`` (``"module:Class"``) and the ``models`` the
    policy is defined on."""

    policy_id: str
    entry_point: str
    models: tuple[str, ...]


_REGISTRY: dict[str, PolicySpec] = {}  # insertion order is the listing order
_LOADED: dict[str, type] = {}


def _check_models(policy_id: str, models: Sequence[str]) -> tuple[str, ...]:
    if isinstance(models, str):  # a bare "msj" would otherwise be read as its letters
        models = (models,)
    out = tuple(models)
    if not out or any(m not in MODELS for m in out) or len(set(out)) != len(out):
        raise ValueError(
            f"policy {policy_id!r} models: expected distinct names of {list(MODELS)}, got {out!r}"
        )
    return out


def register_policy(policy_id: str, entry_point: str, *, models: Sequence[str] = ("msj",)) -> None:
    """Register ``policy_id`` for the class at ``entry_point`` (``"package.module:Class"``, imported on
    first use) on ``models``. Registering the same id, entry point and models again is a no-op; the same
    id with another entry point or other models is a ``ValueError`` (an id names one class)."""
    if not isinstance(policy_id, str) or not policy_id or policy_id != policy_id.strip():
        raise ValueError(
            f"policy_id: expected a non-empty string without surrounding spaces, got {policy_id!r}"
        )
    module, sep, name = entry_point.partition(":") if isinstance(entry_point, str) else ("", "", "")
    if not sep or not module or not name:
        raise ValueError(
            f"entry_point: expected 'module:Class' for policy {policy_id!r}, got {entry_point!r}"
        )
    spec = PolicySpec(policy_id, entry_point, _check_models(policy_id, models))
    old = _REGISTRY.get(policy_id)
    if old is not None and old != spec:
        raise ValueError(
            f"policy_id: {policy_id!r} is already registered as {old.entry_point} on {', '.join(old.models)}"
        )
    _REGISTRY[policy_id] = spec


def _unknown(policy_id: str) -> ValueError:
    return ValueError(f"unknown policy {policy_id!r}; known: {', '.join(_REGISTRY)}")


def policy_spec(policy_id: str) -> PolicySpec:
    """The registry entry of ``policy_id`` (no import); a ``ValueError`` listing the known ids if unknown."""
    spec = _REGISTRY.get(policy_id)
    if spec is None:
        raise _unknown(policy_id)
    return spec


def policy_class(policy_id: str) -> type:
    """The class registered as ``policy_id``, imported on first use. Its ``policy_id`` and ``models``
    (``("moldable",)`` for a moldable scheme) must match the entry."""
    cls = _LOADED.get(policy_id)
    if cls is not None:
        return cls
    spec = policy_spec(policy_id)
    module, _, name = spec.entry_point.partition(":")
    cls = getattr(importlib.import_module(module), name, None)
    if not isinstance(cls, type):
        raise ValueError(f"entry_point: {spec.entry_point!r} of policy {policy_id!r} names no class")
    if getattr(cls, "policy_id", policy_id) != policy_id:
        raise ValueError(
            f"entry_point: {spec.entry_point} has policy_id {cls.policy_id!r}, not {policy_id!r}"
        )
    declared = tuple(getattr(cls, "models", ("msj",)))
    if declared != spec.models:
        raise ValueError(
            f"models: policy {policy_id!r} is registered on {spec.models}, "
            f"but {spec.entry_point} declares {declared}"
        )
    _LOADED[policy_id] = cls
    return cls


def make_policy(policy_id: str, **params: Any) -> Any:
    """A policy instance by id, e.g. ``make_policy("easy-backfilling", estimate_factor=2.0)``; for a
    moldable id the :class:`~msj_gym.moldable.MoldablePolicy` (``make_policy("moldable-greedy")``)."""
    return policy_class(policy_id)(**params)


def import_object(spec: str, field: str) -> Any:
    """The object ``module:attr`` names (``attr`` may be dotted); a one-line ``ValueError`` naming
    ``field`` if it does not import."""
    import importlib

    module_name, _, attr = spec.rpartition(":")
    try:
        obj: Any = importlib.import_module(module_name)
        for part in attr.split("."):
            obj = getattr(obj, part)
    except (ImportError, AttributeError, ValueError) as exc:  # ValueError: an empty module name
        raise ValueError(f"{field} {spec!r}: cannot import it ({exc})") from None
    return obj


def policy_from_spec(spec: str, field: str = "policy", **params: Any) -> Any:
    """A policy by ``spec``: a registered id, or ``module:attr`` naming a policy class (instantiated with
    ``params``, or its defaults) or instance, for rules outside the registry. A one-line ``ValueError``
    naming ``field`` otherwise. The spec is a string so that it can travel to worker processes, which
    import the module themselves."""
    if ":" not in spec:
        try:
            return make_policy(spec, **params)
        except ValueError as exc:  # an unknown id, a bad parameter
            raise ValueError(f"{field} {spec!r}: {exc}") from None
    from msj_gym.core import Policy

    obj = import_object(spec, field)
    if isinstance(obj, type) and issubclass(obj, Policy):
        try:
            obj = obj(**params)
        except ValueError as exc:
            raise ValueError(f"{field} {spec!r}: {exc}") from None
    elif params and isinstance(obj, Policy):
        raise ValueError(f"{field} {spec!r}: an instance takes no parameters, got {sorted(params)}")
    if not isinstance(obj, Policy):
        raise ValueError(f"{field} {spec!r}: expected a Policy class or instance, got {type(obj).__name__}")
    return obj


def spec_source_files(spec: str) -> tuple[str, ...]:
    """The source files a ``module:attr`` policy's results depend on, outside msj_gym's own: the module
    that names it, the modules of its class and of every base class, and those its compiled rule
    reaches through its globals (sorted). Runs are keyed by their content, so that an edited file
    never reuses the rows of its earlier version."""
    import inspect
    import sys

    from msj_gym.core.jit import source_files

    obj = import_object(spec, "policy")
    cls = obj if isinstance(obj, type) else type(obj)
    files = {getattr(sys.modules.get(spec.rpartition(":")[0]), "__file__", None)}
    for c in cls.__mro__[:-1]:  # every class but object
        try:
            files.add(inspect.getsourcefile(c))
        except TypeError:  # a builtin
            continue
    for fn in (getattr(cls, "kernel", None), getattr(cls, "invariant", None)):
        if fn is not None:
            files.update(source_files(fn))
    return tuple(sorted(f for f in files if f and f.endswith(".py")))


def policy_ids(model: str | None = None) -> list[str]:
    """The registered ids, in registration order, of every model or of ``model`` (imports no policy)."""
    if model is not None and model not in MODELS:
        raise ValueError(f"model: expected one of {list(MODELS)}, got {model!r}")
    return [pid for pid, spec in _REGISTRY.items() if model is None or model in spec.models]


def list_policies(model: str | None = None) -> dict[str, type]:
    """Id -> class of every registered policy, or of those defined on ``model`` (imports them)."""
    return {pid: policy_class(pid) for pid in policy_ids(model)}


# The built-in policies of the source papers (package ``baselines``), in the order every listing uses.
_MSJ = ("msj",)
for _pid, _entry, _models in (
    ("fcfs", "baselines.fcfs:FCFS", _MSJ),
    ("first-fit", "baselines.priority:FirstFit", _MSJ),
    ("msf", "baselines.priority:MostServersFirst", _MSJ),
    ("msf-preemptive", "baselines.priority:MostServersFirstPreemptive", _MSJ),
    ("lsf", "baselines.priority:LeastServersFirst", _MSJ),
    ("server-filling", "baselines.server_filling:ServerFilling", _MSJ),
    ("server-filling-srpt", "baselines.server_filling:ServerFillingSRPT", _MSJ),
    ("server-filling-gittins", "baselines.server_filling:ServerFillingGittins", _MSJ),
    ("first-fit-srpt", "baselines.server_filling:FirstFitSRPT", _MSJ),
    ("easy-backfilling", "baselines.backfilling:EasyBackfilling", _MSJ),
    ("sjf", "baselines.hpc:SJF", _MSJ),
    ("wfp3", "baselines.hpc:WFP3", _MSJ),
    ("unicep", "baselines.hpc:UNICEP", _MSJ),
    ("f1", "baselines.hpc:F1", _MSJ),
    ("sjf-easy", "baselines.hpc:SJFEasy", _MSJ),
    ("wfp3-easy", "baselines.hpc:WFP3Easy", _MSJ),
    ("unicep-easy", "baselines.hpc:UNICEPEasy", _MSJ),
    ("f1-easy", "baselines.hpc:F1Easy", _MSJ),
    ("max-weight", "baselines.max_weight:MaxWeight", _MSJ),
    ("msfq", "baselines.quickswap:MSFQ", _MSJ),
    ("static-quickswap", "baselines.quickswap:StaticQuickswap", _MSJ),
    ("adaptive-quickswap", "baselines.quickswap:AdaptiveQuickswap", _MSJ),
    ("nmsr", "baselines.nmsr:NMSR", _MSJ),
    ("compat-fcfs", "baselines.balanced_fair:CompatFCFS", ("compatibility",)),
    ("balanced-fair", "baselines.balanced_fair:BalancedFair", ("compatibility",)),
    ("bs", "baselines.balanced_splitting:BalancedSplitting", _MSJ),
    ("modified-bs", "baselines.balanced_splitting:ModifiedBalancedSplitting", _MSJ),
    ("mdp-optimal", "baselines.optimal:MDPOptimal", _MSJ),
    ("mdp-optimal-preemptive", "baselines.optimal:MDPOptimalPreemptive", _MSJ),
    ("moldable-p-scheme", "baselines.moldable:PScheme", ("moldable",)),
    ("moldable-greedy", "baselines.moldable:Greedy", ("moldable",)),
    ("moldable-reserved", "baselines.moldable:Reserved", ("moldable",)),
):
    register_policy(_pid, _entry, models=_models)
del _pid, _entry, _models, _MSJ
