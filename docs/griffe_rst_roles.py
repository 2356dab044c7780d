"""Griffe extension: the reST cross-reference roles of the docstrings (``:class:`X```, ``:meth:`x```, ...)
rendered as links on the site.

The docstrings are written for ``help()`` and editors, which show reST roles as they are; mkdocstrings
renders docstrings as Markdown, where a role would show as literal text. This extension rewrites each role,
at load time and for the site only, into an mkdocs-autorefs cross-reference to the object's canonical path:
a link where that object is rendered on the site, inline code where it is not (the ``optional`` form, so an
object the site does not render is never a broken-link warning). The source files keep one style.
"""

from __future__ import annotations

import html
import importlib
import re
from typing import Any

import griffe

# Sphinx's Python-domain roles, with or without the `py:` domain; the body is `target`, `~target`
# (show the last component), `.target`, `!target` (no link) or `title <target>`.
ROLE = re.compile(
    r":(?:py:)?(?P<role>class|meth|func|mod|data|attr|obj|exc|const|type):`(?P<body>[^`]+)`",
)
EXPLICIT_TITLE = re.compile(r"^(?P<title>.+?)\s*<(?P<target>[^<>]+)>$")


def _canonical(obj: griffe.Object, target: str) -> str | None:
    """The canonical path of `target` as written in `obj`'s docstring, or None where it does not resolve."""
    head, _, rest = target.partition(".")
    try:
        path = obj.resolve(head) if head else None
    except griffe.NameResolutionError:
        path = None
    candidates = [f"{path}.{rest}" if rest else path] if path else []
    candidates.append(target)  # an absolute dotted path (msj_gym.env.render.DecisionFrames)
    for candidate in candidates:
        try:
            found = obj.modules_collection.get_member(candidate)
        except (KeyError, ValueError, AttributeError):
            continue
        try:
            return found.final_target.path if found.is_alias else found.path
        except griffe.AliasResolutionError:
            return candidate
    if target.split(".", 1)[0] == obj.package.name:
        return _runtime_path(target)
    return None


def _runtime_path(target: str) -> str | None:
    """Where an object of the package that static analysis cannot see is defined (a lazy export of a
    module's ``__getattr__``, such as ``msj_gym.PolicyAgent``), found by importing it."""
    parts = target.split(".")
    for split in range(len(parts), 0, -1):
        try:
            value: Any = importlib.import_module(".".join(parts[:split]))
        except ImportError:
            continue
        try:
            for name in parts[split:]:
                value = getattr(value, name)
        except AttributeError:
            return None
        if isinstance(value, type(importlib)):
            return value.__name__
        module, qualname = getattr(value, "__module__", None), getattr(value, "__qualname__", None)
        return f"{module}.{qualname}" if module and qualname else None
    return None


def _replace(obj: griffe.Object, match: re.Match[str]) -> str:
    body = match["body"].strip()
    explicit = EXPLICIT_TITLE.match(body)
    if explicit:
        title, target = explicit["title"], explicit["target"].strip()
    else:
        target = body
        title = None
    no_link = target.startswith("!")
    target = target.lstrip("!~.")
    if title is None:
        title = target.rsplit(".", 1)[-1] if body.lstrip("!").startswith("~") else target
    if match["role"] in ("meth", "func"):
        title += "()"
    code = f"<code>{html.escape(title)}</code>"
    path = None if no_link else _canonical(obj, target)
    if path is None:
        return f"`{title}`"
    return f'<autoref identifier="{html.escape(path)}" optional>{code}</autoref>'


def convert(obj: griffe.Object, text: str) -> str:
    """`text` with every reST role replaced by an optional cross-reference (or inline code)."""
    return ROLE.sub(lambda m: _replace(obj, m), text)


class ReSTRoles(griffe.Extension):
    """Rewrites reST roles in every docstring of a loaded package."""

    def on_package(self, *, pkg: griffe.Module, **kwargs: Any) -> None:
        self._walk(pkg)

    def _walk(self, obj: griffe.Object) -> None:
        if obj.docstring is not None:
            obj.docstring.value = convert(obj, obj.docstring.value)
        for member in obj.members.values():
            if not member.is_alias:
                self._walk(member)  # type: ignore[arg-type]
