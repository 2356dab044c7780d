"""Every flag of the agents' scripts says what it is for in ``--help``: a flag is kept only if it has
help text and a reason to exist."""

from __future__ import annotations

import importlib

import pytest

from msj_gym.arguments import ArgumentParser

SCRIPTS = (
    "assign_search", "checkpoint", "evaluate", "expert", "explain", "generalist", "hpc_search", "improve",
    "plot_curves", "train",
)  # fmt: skip


class _Parsed(Exception):
    """Raised instead of parsing: the parser is built, nothing runs."""


@pytest.mark.parametrize("script", SCRIPTS)
def test_every_flag_has_help_text(script: str, monkeypatch: pytest.MonkeyPatch) -> None:
    built: list[ArgumentParser] = []

    def parse_args(self: ArgumentParser, *args: object, **kwargs: object) -> None:
        built.append(self)
        raise _Parsed

    monkeypatch.setattr(ArgumentParser, "parse_args", parse_args)
    module = importlib.import_module(f"msj_gym.agents.{script}")
    with pytest.raises(_Parsed):
        module.main(["--help"])
    (parser,) = built
    silent = [a.option_strings[0] for a in parser._actions if a.option_strings and not (a.help or "").strip()]
    assert not silent, f"{script}: flags without help text: {silent}"
