"""Training recipes: the hyperparameters of a shipped agent, as a file (one TOML file per recipe, as the
zoos of stable-baselines3 keep theirs), that ``python -m msj_gym.agents.train --recipe NAME`` reads.

A recipe is a TOML table of flags of ``msj_gym.agents.train`` by their names with underscores
(``n_envs = 64`` for ``--n-envs 64``; a switch such as ``--average-reward`` is ``true`` or
``false``; ``net_arch = [64, 64]``), plus an optional ``description``. Its values become the
parser's defaults, so every flag given on the command line overrides the recipe's, and every value is
checked as the flag's own is. The shipped recipes are the ``*.toml`` files of this folder, found by
name from any folder; a path ending in ``.toml`` names a recipe of your own.
"""

from __future__ import annotations

import argparse
import tomllib
from importlib import resources
from pathlib import Path
from typing import Any

__all__ = ["apply_recipe", "read_recipe", "recipe_names"]

#: keys of a recipe that are not flags
META_KEYS = ("description",)
#: flags a recipe may not set: where to write, how to report, which recipe
_NOT_IN_RECIPES = ("out", "recipe", "list_recipes", "progress", "help")


def recipe_names() -> list[str]:
    """The shipped recipes' names (their files' stems), sorted."""
    folder = resources.files(__name__)
    return sorted(Path(p.name).stem for p in folder.iterdir() if p.name.endswith(".toml"))


def read_recipe(spec: str) -> tuple[str, dict[str, Any]]:
    """``(name, table)`` of recipe ``spec``: a shipped recipe's name or a ``.toml`` path. A one-line
    ``ValueError`` names ``--recipe`` and the spec when it is neither, or is not a TOML table."""
    if spec.endswith(".toml"):
        path = Path(spec)
        if not path.is_file():
            raise ValueError(f"--recipe {spec!r}: no such file")
        try:
            text = path.read_text()
        except (OSError, UnicodeDecodeError) as exc:
            raise ValueError(f"--recipe {spec!r}: cannot be read ({type(exc).__name__})") from None
        name = path.stem
    else:
        if spec not in recipe_names():
            known = ", ".join(recipe_names()) or "none"
            raise ValueError(f"--recipe {spec!r}: not a shipped recipe ({known}) nor a .toml file")
        text = (resources.files(__name__) / f"{spec}.toml").read_text()
        name = spec
    try:
        table = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"--recipe {spec!r}: not TOML ({exc})") from None
    return name, table


def _value(flag: str, action: argparse.Action, value: Any) -> Any:
    """A recipe's ``value`` for ``action`` as the parser would have made it from the command line."""
    where = f"--recipe: {action.dest} = {value!r}"
    if action.nargs == 0:  # a switch
        if not isinstance(value, bool):
            raise ValueError(f"{where}: expected true or false for {flag}")
        return value if action.const is True else not value
    if action.nargs in ("+", "*"):
        if not isinstance(value, list) or not value:
            raise ValueError(f"{where}: expected a non-empty list for {flag}")
        return [_one(where, action, item) for item in value]
    if isinstance(value, list | dict):
        raise ValueError(f"{where}: expected one value for {flag}")
    return _one(where, action, value)


def _one(where: str, action: argparse.Action, value: Any) -> Any:
    if isinstance(value, bool):
        raise ValueError(f"{where}: expected a number or a string, got a boolean")
    text = str(value)
    try:
        out = action.type(text) if callable(action.type) else text
    except (TypeError, ValueError):
        raise ValueError(f"{where}: not a valid value") from None
    if action.choices is not None and out not in action.choices:
        raise ValueError(f"{where}: expected one of {', '.join(map(str, action.choices))}")
    return out


def apply_recipe(parser: argparse.ArgumentParser, spec: str) -> str:
    """Set ``parser``'s defaults from recipe ``spec`` (see the module docstring); returns its name.
    An unknown key, or a value its flag would refuse, is a one-line ``ValueError``."""
    name, table = read_recipe(spec)
    actions = {a.dest: a for a in parser._actions if a.option_strings}
    defaults: dict[str, Any] = {}
    for key, value in table.items():
        if key in META_KEYS:
            continue
        action = actions.get(key)
        if action is None or key in _NOT_IN_RECIPES:
            raise ValueError(f"--recipe {spec!r}: {key!r} is not a flag a recipe sets")
        defaults[key] = _value(action.option_strings[0], action, value)
    parser.set_defaults(**defaults)
    return name
