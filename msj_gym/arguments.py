"""The command lines' argument parser: argparse whose refusals are one line.

argparse answers a bad argument (an unknown flag, a value of the wrong type, a missing one) by printing
the usage text and then the error, and exiting. msj_gym's commands refuse bad input in one line naming
the flag and the value, with exit code 2, before any work; so their parsers raise :class:`UsageError`
instead, and the command prints it as its other refusals (``msj-gym: error: ...``). ``--help`` and
``--version`` still print and exit as argparse does.
"""

from __future__ import annotations

import argparse
from typing import NoReturn

__all__ = ["ArgumentParser", "UsageError"]


class UsageError(ValueError):
    """A command-line argument the parser refused."""


class ArgumentParser(argparse.ArgumentParser):
    """``argparse.ArgumentParser`` whose errors are a :class:`UsageError` (one line) instead of the usage
    text and ``SystemExit``; its subcommands' parsers are of this class too."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(message)
