"""One registry of the scheduling policies of every model, by id, with lazy ``"module:Class"`` entry points.

As Gymnasium registers its environments, an entry names its class by a string: nothing is imported until
the policy is used (:func:`policy_class`, :func:`make_policy`), so listing the ids of a model
(:func:`policy_ids`) imports no policy. Each entry also declares the model(s) the policy is defined on:
``"msj"`` (the queueing multiserver-job model), ``"compatibility"`` (job-server compatibility graphs,
Bonald & Comte (2017)) and ``"moldable"`` (the moldable loss system, Ghanbarian et al. (2024)). Loading a
class checks that its own ``models`` match the declaration, so the lazy field cannot drift.

A policy of your own package is registered the same way, and then runs wherever this process accepts
an id (:func:`make_policy`, ``msj_gym.baselines.make_policy``, ``PolicyAgent``)::

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
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from msj_gym.core import Policy
    from msj_gym.core.workload import WorkloadLike

__all__ = [
    "ENGINE_MODELS",
    "MODELS",
    "PolicySpec",
    "list_policies",
    "make_moldable_policy",
    "make_policy",
    "policy_class",
    "policy_ids",
    "policy_spec",
    "register_agent_folder",
    "register_policy",
    "shipped_agents",
    "stability_limit",
    "supports",
]

MODELS = ("msj", "compatibility", "moldable")

#: The models whose policies are :class:`~msj_gym.core.Policy` decision rules run by the event engine
#: (the moldable loss system's schemes are allocation rules of their own).
ENGINE_MODELS = ("msj", "compatibility")


@dataclass(frozen=True)
class PolicySpec:
    """One registry entry: ``policy_id``, ``entry_point`` (``"module:Class"``) and the ``models`` the
    policy is defined on."""

    policy_id: str
    entry_point: str
    models: tuple[str, ...]


_REGISTRY: dict[str, PolicySpec] = {}  # insertion order is the listing order
# type[Any]: a Policy or a MoldablePolicy subclass, named by a string; the moldable base sits above the
# registry, so no one static type covers both (both declare policy_id, models, preemptive, size_aware)
_LOADED: dict[str, type[Any]] = {}


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


def policy_class(policy_id: str) -> type[Any]:
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
    declared_id = getattr(cls, "policy_id", policy_id)
    if declared_id != policy_id:
        raise ValueError(f"entry_point: {spec.entry_point} has policy_id {declared_id!r}, not {policy_id!r}")
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


def make_moldable_policy(policy_id: str, **params: Any) -> Any:
    """A moldable allocation scheme by id (``moldable-p-scheme``, ``moldable-greedy``,
    ``moldable-reserved``); a one-line ``ValueError`` for an id of another model."""
    if policy_id not in policy_ids("moldable"):
        known = ", ".join(policy_ids("moldable"))
        raise ValueError(f"unknown moldable policy {policy_id!r}; known: {known}")
    return make_policy(policy_id, **params)


def supports(policy: str | Policy, workload: WorkloadLike) -> str | None:
    """None if ``policy`` (a registered id, or a policy instance outside the registry) is defined on
    ``workload`` (a :class:`~msj_gym.workloads.workload.WorkloadLike`), else the reason it is not (one
    line): its models, then the workloads it declares it refuses
    (:meth:`~msj_gym.core.Policy.unsupported`), without preparing it. Only a policy of the user's own
    that declares nothing is prepared once to find out."""
    import numpy as np

    from msj_gym.core import Policy
    from msj_gym.core.workload import WORKLOAD_MEMBERS, is_workload

    if not is_workload(workload):
        name = type(workload).__name__
        return f"{name} is not a workload (it declares no {', '.join(WORKLOAD_MEMBERS)})"
    if isinstance(policy, Policy):
        candidate = policy
    else:
        model = workload.model
        spec = policy_spec(policy)
        if model not in spec.models:  # e.g. a moldable scheme has no for_workload to ask
            on = ", ".join(spec.models)
            return f"policy {policy!r} is not defined on the {model} model (it is defined on: {on})"
        candidate = make_policy(policy)
    try:
        candidate = candidate.for_workload(workload)
    except ValueError as exc:
        return str(exc)
    reason = candidate.unsupported(workload)
    if reason is not None or _declares_support(type(candidate)):
        return reason
    try:  # a policy of the user's own that declares nothing: asked by preparing it once
        candidate.prepare(workload, np.random.default_rng(0))
    except ValueError as exc:
        return str(exc)
    return None


def _declares_support(cls: type[Policy]) -> bool:
    """Whether ``cls`` declares the workloads it refuses (:meth:`~msj_gym.core.Policy.unsupported`): every
    registered policy does (a test holds each one's ``prepare`` to it), as does a policy that overrides it."""
    from msj_gym.core import Policy

    if cls.unsupported is not Policy.unsupported:
        return True
    pid = getattr(cls, "policy_id", "")
    return pid in _REGISTRY and policy_class(pid) is cls


def stability_limit(policy: str | Policy, workload: WorkloadLike) -> tuple[float, str] | None:
    """``(load limit, source)`` of ``policy`` (a registered id, ``module:attr``, or a policy instance) on
    ``workload`` where a theorem gives one, as the policy itself declares it
    (:meth:`~msj_gym.core.Policy.stability_limit`; the theorems are in :mod:`msj_gym.analysis.stability`);
    None where none applies. The source says whether the value is exact or a sufficient (lower) bound."""
    from msj_gym.core import Policy

    candidate = policy if isinstance(policy, Policy) else policy_from_spec(policy, "policy")
    return candidate.stability_limit(workload)


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


def policy_source_files(policy_id: str) -> tuple[str, ...]:
    """The source files a registered policy's results depend on: its module, the helpers its package's
    policies share (``__init__.py``, ``_kit.py``) and this registry (sorted)."""
    import inspect

    module = Path(inspect.getsourcefile(policy_class(policy_id)) or "")
    files = (module, module.parent / "__init__.py", module.parent / "_kit.py", Path(__file__))
    return tuple(sorted(str(f) for f in files if f.is_file()))


def _wanted_models(model: str | Sequence[str] | None) -> tuple[str, ...] | None:
    if model is None:
        return None
    wanted = (model,) if isinstance(model, str) else tuple(model)
    for m in wanted:
        if m not in MODELS:
            raise ValueError(f"model: expected one of {list(MODELS)}, got {m!r}")
    return wanted


def policy_ids(model: str | Sequence[str] | None = None, *, preemptive: bool | None = None) -> list[str]:
    """The registered ids, in registration order, of every model or of those defined on ``model`` (a
    model or several, e.g. :data:`ENGINE_MODELS`). Imports no policy unless ``preemptive`` is given:
    then only the policies that do (True) or never (False) preempt."""
    wanted = _wanted_models(model)
    ids = [pid for pid, spec in _REGISTRY.items() if wanted is None or set(wanted) & set(spec.models)]
    if preemptive is not None:
        ids = [pid for pid in ids if bool(getattr(policy_class(pid), "preemptive", False)) == preemptive]
    return ids


def list_policies(model: str | Sequence[str] | None = None) -> dict[str, type[Any]]:
    """Id -> class of every registered policy, or of those defined on ``model`` (imports them)."""
    return {pid: policy_class(pid) for pid in policy_ids(model)}


_AGENT_FOLDERS: list[tuple[str, str]] = []  # (package, folder inside it), in lookup order


def register_agent_folder(package: str, folder: str = "checkpoints") -> None:
    """Make the SB3 checkpoints (``<name>.zip`` beside its ``<name>.json``) in ``folder`` of the installed
    ``package`` known by name, as the shipped agents are (``--agent generalist``). Like a policy's entry
    point, the package is named by a string and read only when an agent is looked up."""
    if (package, folder) not in _AGENT_FOLDERS:
        _AGENT_FOLDERS.append((package, folder))


def shipped_agents() -> dict[str, Path]:
    """The checkpoints of every registered agent folder, by name (the file stem); an earlier folder's
    name wins. A folder whose package is not installed lists nothing."""
    from importlib.resources import files

    out: dict[str, Path] = {}
    for package, folder in _AGENT_FOLDERS:
        try:
            where = Path(str(files(package) / folder))
        except (ImportError, TypeError):
            continue
        if where.is_dir():
            for p in sorted([*where.glob("*.zip"), *where.glob("*.npz")]):
                out.setdefault(p.stem, p)
    return out


_AGENT_LOADERS: dict[str, str] = {}  # checkpoint "algo" -> "module:attr" of its loader


def register_agent_loader(algo: str, entry_point: str) -> None:
    """Make checkpoints whose metadata name ``algo`` (a learning method that is not stable-baselines3's)
    load through ``entry_point`` (``"module:attr"``, imported when such a checkpoint is loaded): a
    function ``(path, metadata) -> {"factory": env -> agent, "native": (policy spec, params) or None}``
    that raises a one-line ``ValueError`` for a file it cannot read. ``native`` names the policy whose
    native runs equal the agent's episodes through its env, run for run, where there is one."""
    _AGENT_LOADERS[algo] = entry_point


def agent_algos() -> list[str]:
    """The checkpoint algorithms registered with their own loader."""
    return sorted(_AGENT_LOADERS)


def agent_loader(algo: Any) -> Any:
    """The loader of checkpoints of ``algo`` (:func:`register_agent_loader`), or None (an SB3 one)."""
    entry = _AGENT_LOADERS.get(algo) if isinstance(algo, str) else None
    return None if entry is None else import_object(entry, "agent loader")


def agent_model_loader() -> Any:
    """The loader of network checkpoints (:func:`msj_gym.agents.checkpoint.load_model`: the data-only
    form, and stable-baselines3's own only where pickles are trusted), named by a string as the
    library names everything of ``msj_gym.agents``."""
    return import_object("msj_gym.agents.checkpoint:load_model", "agent loader")


def network_code_reader() -> Any:
    """What a network checkpoint's decisions run (:func:`msj_gym.agents.checkpoint.network_code`), for
    the runs' code key."""
    return import_object("msj_gym.agents.checkpoint:network_code", "agent code reader")


# The agents trained here, shipped with the package (``agents/checkpoints``).
register_agent_folder("msj_gym.agents")
register_agent_loader("scored-assignment", "msj_gym.agents.assign_search:load_checkpoint")
register_agent_loader("scored-hpc", "msj_gym.agents.hpc_search:load_checkpoint")
register_agent_loader("class-set-network", "msj_gym.agents.network:load_checkpoint")
register_agent_loader("planner", "msj_gym.agents.planner:load_checkpoint")

# The built-in policies of the source papers (package ``msj_gym.baselines``), in the order every listing uses.
_MSJ = ("msj",)
for _pid, _entry, _models in (
    ("fcfs", "msj_gym.baselines.fcfs:FCFS", _MSJ),
    ("first-fit", "msj_gym.baselines.priority:FirstFit", _MSJ),
    ("msf", "msj_gym.baselines.priority:MostServersFirst", _MSJ),
    ("msf-preemptive", "msj_gym.baselines.priority:MostServersFirstPreemptive", _MSJ),
    ("lsf", "msj_gym.baselines.priority:LeastServersFirst", _MSJ),
    ("server-filling", "msj_gym.baselines.server_filling:ServerFilling", _MSJ),
    ("server-filling-srpt", "msj_gym.baselines.server_filling:ServerFillingSRPT", _MSJ),
    ("server-filling-gittins", "msj_gym.baselines.server_filling:ServerFillingGittins", _MSJ),
    ("first-fit-srpt", "msj_gym.baselines.server_filling:FirstFitSRPT", _MSJ),
    ("easy-backfilling", "msj_gym.baselines.backfilling:EasyBackfilling", _MSJ),
    ("sjf", "msj_gym.baselines.hpc:SJF", _MSJ),
    ("wfp3", "msj_gym.baselines.hpc:WFP3", _MSJ),
    ("unicep", "msj_gym.baselines.hpc:UNICEP", _MSJ),
    ("f1", "msj_gym.baselines.hpc:F1", _MSJ),
    ("sjf-easy", "msj_gym.baselines.hpc:SJFEasy", _MSJ),
    ("wfp3-easy", "msj_gym.baselines.hpc:WFP3Easy", _MSJ),
    ("unicep-easy", "msj_gym.baselines.hpc:UNICEPEasy", _MSJ),
    ("f1-easy", "msj_gym.baselines.hpc:F1Easy", _MSJ),
    ("self-tuning", "msj_gym.baselines.self_tuning:SelfTuning", _MSJ),
    ("self-tuning-easy", "msj_gym.baselines.self_tuning:SelfTuningEasy", _MSJ),
    ("max-weight", "msj_gym.baselines.max_weight:MaxWeight", _MSJ),
    ("msfq", "msj_gym.baselines.quickswap:MSFQ", _MSJ),
    ("static-quickswap", "msj_gym.baselines.quickswap:StaticQuickswap", _MSJ),
    ("adaptive-quickswap", "msj_gym.baselines.quickswap:AdaptiveQuickswap", _MSJ),
    ("nmsr", "msj_gym.baselines.nmsr:NMSR", _MSJ),
    ("compat-fcfs", "msj_gym.baselines.balanced_fair:CompatFCFS", ("compatibility",)),
    ("balanced-fair", "msj_gym.baselines.balanced_fair:BalancedFair", ("compatibility",)),
    ("compat-least-loaded", "msj_gym.baselines.balanced_fair:CompatLeastLoaded", ("compatibility",)),
    ("bs", "msj_gym.baselines.balanced_splitting:BalancedSplitting", _MSJ),
    ("modified-bs", "msj_gym.baselines.balanced_splitting:ModifiedBalancedSplitting", _MSJ),
    ("mdp-optimal", "msj_gym.baselines.optimal:MDPOptimal", _MSJ),
    ("mdp-optimal-preemptive", "msj_gym.baselines.optimal:MDPOptimalPreemptive", _MSJ),
    ("moldable-p-scheme", "msj_gym.baselines.moldable:PScheme", ("moldable",)),
    ("moldable-greedy", "msj_gym.baselines.moldable:Greedy", ("moldable",)),
    ("moldable-reserved", "msj_gym.baselines.moldable:Reserved", ("moldable",)),
):
    register_policy(_pid, _entry, models=_models)
del _pid, _entry, _models, _MSJ
