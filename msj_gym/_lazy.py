"""A package's names imported from their own modules when first asked for (PEP 562), so that importing
the package, or any one of its modules, does not import all the others: ``msj-gym simulate`` then
imports what one run needs."""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any


class LazyNames:
    """The module ``__getattr__`` of ``package``: ``modules`` maps each of its modules to the names it
    defines; a name is imported from its module at its first use and kept in ``namespace`` (the
    package's globals), so it is looked up once."""

    def __init__(
        self, package: str, namespace: dict[str, Any], modules: Mapping[str, tuple[str, ...]]
    ) -> None:
        self.package = package
        self.namespace = namespace
        #: the module of each name
        self.home = {name: module for module, names in modules.items() for name in names}

    def __call__(self, name: str) -> Any:
        module = self.home.get(name)
        if module is None:
            raise AttributeError(f"module {self.package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{self.package}.{module}"), name)
        self.namespace[name] = value
        return value

    def dir(self) -> list[str]:
        """The package's names, imported or not (its ``__dir__``)."""
        return sorted({*self.namespace, *self.home})
