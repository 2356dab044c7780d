"""Gymnasium ids of the environments, registered without importing gymnasium before it is needed.

``import msj_gym`` must make ``gym.make("MSJ-v0")`` work, but a user who only simulates should not pay
for gymnasium's import. So the ids are registered at once if gymnasium is already imported, and
otherwise right after gymnasium's own import, whenever that happens: an import hook that stays in place
until gymnasium's module has actually run. Probes that only look for the package
(``importlib.util.find_spec("gymnasium")``, as TorchRL does before importing it) leave it armed.

A process that never imports msj_gym (a Ray worker, a spawned process started from a notebook) makes the
envs with ``gym.make("msj_gym:MSJ-v0")``: gymnasium imports the module before the ``:``, which registers
the ids. Gymnasium 1.x has no entry-point discovery of third-party envs (it was removed in 1.0), so a
plain ``"MSJ-v0"`` in such a process cannot find them.
"""

from __future__ import annotations

import importlib.abc
import sys
from typing import Any

__all__ = [
    "COMPAT_ENV_ID",
    "ENV_IDS",
    "MOLDABLE_ENV_ID",
    "VARIANTS",
    "register_envs",
    "register_when_imported",
]

ENV_IDS = ("MSJ-v0", "MSJPreemptive-v0")  # the queueing MSJ envs (same arguments)
MOLDABLE_ENV_ID = "MSJMoldable-v0"  # the moldable loss system: its own arguments
COMPAT_ENV_ID = "CompatAssign-v0"  # job-server compatibility graphs (Bonald & Comte 2017): its own arguments

_MAKE, _VEC, _MVEC = "msj_gym.env.make", "msj_gym.env.vector", "msj_gym.env.moldable_vector"
_ADMIT = (f"{_MAKE}:make_msj", f"{_VEC}:MSJVectorEnv")
_PREEMPT = (f"{_MAKE}:make_msj_preemptive", f"{_VEC}:MSJPreemptiveVectorEnv")
# id -> (entry point, vector entry point): "module:attr", imported by gymnasium on first make
ENTRY_POINTS: dict[str, tuple[str, str | None]] = {
    "MSJ-v0": _ADMIT,
    "MSJPreemptive-v0": _PREEMPT,
    MOLDABLE_ENV_ID: ("msj_gym.env.moldable_env:MSJMoldableEnv", f"{_MVEC}:MSJMoldableVectorEnv"),
    COMPAT_ENV_ID: ("msj_gym.env.compat_env:CompatAssignEnv", None),
}
_PRIORITY = {"actions": "priority"}
_CLASS_SET = {"actions": "priority", "observation": "classes"}
#: Variant ids of the MSJ envs, as Gymnasium registers its env variants: an id whose keyword defaults
#: change what an action means or what the agent sees (any keyword given to ``gym.make`` overrides them).
VARIANTS: dict[str, tuple[tuple[str, str], dict[str, str]]] = {
    "MSJPriority-v0": (_ADMIT, _PRIORITY),
    "MSJPreemptivePriority-v0": (_PREEMPT, _PRIORITY),
    "MSJClassSet-v0": (_ADMIT, _CLASS_SET),
    "MSJPreemptiveClassSet-v0": (_PREEMPT, _CLASS_SET),
    "MSJAdvised-v0": (_ADMIT, {"actions": "priority", "advisor": "msf"}),
    "MSJWarmStart-v0": (_ADMIT, {"warm_start": "msf"}),
}


def register_envs() -> None:
    """Register every id with gymnasium (imports it); a no-op for ids already registered."""
    from gymnasium.envs.registration import register, registry

    for env_id, (entry, vector_entry) in ENTRY_POINTS.items():
        if env_id not in registry:
            register(id=env_id, entry_point=entry, vector_entry_point=vector_entry)
    for env_id, ((entry, vector_entry), defaults) in VARIANTS.items():
        if env_id not in registry:
            register(id=env_id, entry_point=entry, vector_entry_point=vector_entry, kwargs=dict(defaults))


class _AfterGymnasium(importlib.abc.MetaPathFinder):
    """Finds nothing itself: asked for ``gymnasium``, it lets the other finders locate the package and
    wraps the loader, so that the ids are registered as soon as gymnasium's own module has run. It
    leaves ``sys.meta_path`` only then: a ``find_spec`` that is never followed by an import (a probe)
    must not disarm it."""

    _msj_gym_hook = True  # every copy skips every copy (a reloaded module defines the class anew)

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        if fullname != "gymnasium":
            return None
        spec = None
        for finder in list(sys.meta_path):
            if getattr(finder, "_msj_gym_hook", False) or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                break
        loader = spec.loader if spec is not None else None
        if loader is None or not hasattr(loader, "exec_module"):
            return spec
        exec_module = loader.exec_module
        hook = self

        def exec_and_register(module: Any) -> None:
            exec_module(module)
            register_envs()
            if hook in sys.meta_path:
                sys.meta_path.remove(hook)

        # patched rather than wrapped, so that the loader keeps its type (importlib.resources reads it);
        # a loader a finder hands out twice is patched twice, harmlessly: registering is idempotent
        loader.exec_module = exec_and_register  # type: ignore[method-assign]
        return spec


def register_when_imported() -> None:
    """Register now if gymnasium is imported, else right after it is."""
    if "gymnasium" in sys.modules:
        register_envs()
    elif not any(getattr(f, "_msj_gym_hook", False) for f in sys.meta_path):
        sys.meta_path.insert(0, _AfterGymnasium())
