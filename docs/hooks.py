"""MkDocs hook: the policy tables of ``policies.md``, generated from ``msj_gym.registry`` at build time."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
MARKERS = ("<!-- policy-registry -->", "<!-- moldable-registry -->")


def _summary(cls: type) -> str:
    """The first sentence of a class docstring, up to its first colon (the policy's name)."""
    doc = " ".join((cls.__doc__ or "").split())
    first = re.split(r"(?<!Sec)\.\s+(?=[A-Z])", doc.split(": ", 1)[0], maxsplit=1)[0]
    return first.rstrip(".").replace("|", "\\|")


def _yes(flag: bool) -> str:
    return "yes" if flag else "no"


def policy_table() -> str:
    """Every registered policy of every model (msj, compatibility, moldable)."""
    from msj_gym.registry import list_policies, policy_spec

    rows = ["| id | policy | models | preemptive | size-aware | reference |", "|---|---|---|---|---|---|"]
    for pid, cls in list_policies().items():
        models = ", ".join(policy_spec(pid).models)
        flags = f"{_yes(cls.preemptive)} | {_yes(cls.size_aware)}"
        rows.append(f"| `{pid}` | {_summary(cls)} | {models} | {flags} | {cls.reference} |")
    return "\n".join(rows)


def moldable_table() -> str:
    from msj_gym.registry import list_policies

    rows = ["| id | scheme | reference |", "|---|---|---|"]
    for pid, cls in list_policies("moldable").items():
        rows.append(f"| `{pid}` | {_summary(cls)} | {getattr(cls, 'reference', '')} |")
    return "\n".join(rows)


def on_page_markdown(markdown: str, page: Any, **kwargs: Any) -> str:
    if not any(m in markdown for m in MARKERS):
        return markdown
    if str(ROOT) not in sys.path:  # the repository's packages, installed or not
        sys.path.insert(0, str(ROOT))
    return markdown.replace(MARKERS[0], policy_table()).replace(MARKERS[1], moldable_table())
