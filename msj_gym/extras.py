"""How to install one of msj_gym's optional extras, said the way msj_gym itself was installed: from a
checkout (an editable install, or the sources on the path: ``pip install -e '<checkout>[rl]'``), or as
a package, from a wheel (``pip install 'msj-gym[rl]'``, which adds the extra's dependencies to the
installed msj_gym)."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["install_hint"]


def _checkout(package: Path) -> str | None:
    """The checkout the ``package`` folder belongs to (``"."`` when it is the current folder), or None
    for an installed package (site-packages holds no ``pyproject.toml`` beside it)."""
    root = package.resolve().parent
    if not (root / "pyproject.toml").is_file():
        return None
    return "." if root == Path(os.getcwd()).resolve() else str(root)


def install_hint(extra: str, package: Path | None = None) -> str:
    """The pip command that installs ``extra`` (``"rl"``, ``"plot"`` ...) next to the msj_gym in
    ``package`` (by default, this one)."""
    checkout = _checkout(Path(__file__).parent if package is None else package)
    if checkout is None:
        return f"pip install 'msj-gym[{extra}]'"
    return f"pip install -e '{checkout}[{extra}]'"
