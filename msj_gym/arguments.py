"""The command lines' argument parser: argparse whose refusals are one line.

argparse answers a bad argument (an unknown flag, a value of the wrong type, a missing one) by printing
the usage text and then the error, and exiting. msj_gym's commands refuse bad input in one line naming
the flag and the value, with exit code 2, before any work; so their parsers raise :class:`UsageError`
instead, and the command prints it as its other refusals (``msj-gym: error: ...``). ``--help`` and
``--version`` still print and exit as argparse does.
"""

from __future__ import annotations

import argparse
import copy
from typing import Any, NoReturn

__all__ = ["ArgumentParser", "DefaultsHelpFormatter", "UsageError"]


class UsageError(ValueError):
    """A command-line argument the parser refused."""


class DefaultsHelpFormatter(argparse.HelpFormatter):
    """Help that shows every option's default: ``(default: X)`` after the text of an option whose
    default is a value (not None, not a switch's False) and whose text does not give it already."""

    @staticmethod
    def _shows_default(action: argparse.Action) -> bool:
        default = action.default
        return bool(action.option_strings) and not (
            default is None
            or isinstance(default, bool)
            or default is argparse.SUPPRESS
            or (isinstance(default, list | tuple) and not default)  # a repeatable option given none
        )

    def _format_action(self, action: argparse.Action) -> str:
        if action.help is None and self._shows_default(action):
            # an option without a help text of its own still shows its default
            action = copy.copy(action)
            action.help = "(default: %(default)s)"
        return super()._format_action(action)

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        if not self._shows_default(action) or "default" in text:
            return action.help
        return f"{text} (default: %(default)s)"


class ArgumentParser(argparse.ArgumentParser):
    """``argparse.ArgumentParser`` whose errors are a :class:`UsageError` (one line) instead of the usage
    text and ``SystemExit``, and whose help shows every option's default
    (:class:`DefaultsHelpFormatter`); its subcommands' parsers are of this class too."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", DefaultsHelpFormatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        raise UsageError(message)
