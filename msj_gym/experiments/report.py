"""What every report of the experiments layer writes with: numbers with their intervals, text and
Markdown tables, file names for scenarios, and the check that an output folder records the same
configuration. Shared by the leaderboards, the benchmark and the sequence protocol, so that their
tables read alike."""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

from ..atomic import atomic_write_text
from .runner import provenance

__all__ = ["Configured", "check_out", "config_difference", "fmt", "render_table", "scenario_slug"]


class Configured(Protocol):
    """A leaderboard's configuration, as its output folder records it."""

    def identity(self) -> dict[str, Any]: ...


def fmt(x: float | None, ci: float | None = None, digits: int = 4, missing_ci: str = " ± n/a") -> str:
    """``x`` to ``digits`` significant digits ("n/a" if missing or not finite), with ``± ci`` to two
    where an interval is given; an interval that is not finite is shown as ``missing_ci``."""
    if x is None or not math.isfinite(x):
        return "n/a"
    s = f"{x:.{digits}g}"
    if ci is not None:
        s += f" ± {ci:.2g}" if math.isfinite(ci) else missing_ci
    return s


def render_table(title: str, head: list[str], table: list[list[str]], markdown: bool) -> list[str]:
    """The lines of a table: a Markdown table under a ``###`` title, or plain text in columns padded
    to their widest cell; each ends with an empty line."""
    if markdown:
        out = [f"### {title}\n", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        out += ["| " + " | ".join(row) + " |" for row in table]
        return [*out, ""]
    widths = [max(len(h), *(len(row[i]) for row in table)) for i, h in enumerate(head)]
    out = [title, "  ".join(h.ljust(w) for h, w in zip(head, widths, strict=True)).rstrip()]
    out += ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in table]
    return [*out, ""]


def _stem(scenario: str) -> str:
    """A scenario file's stem; a trace's spec (``swf:FILE?options``) without its query, its colon
    replaced: not for a file name."""
    return re.sub(r"[^\w.-]+", "-", Path(scenario.split("?", 1)[0]).stem)


def scenario_slug(scenario: str, others: Sequence[str] = ()) -> str:
    """A file-name part for ``scenario``: a built-in's name (``NAME?sizes=LAW`` as ``NAME-sizes-LAW``), a
    file's stem; a file whose stem another of ``others`` shares also gets a short hash of its path, so
    that their plots do not overwrite each other."""
    if not ("/" in scenario or "." in scenario):
        return scenario.replace("?", "-").replace("=", "-")
    stem = _stem(scenario)
    if any(o != scenario and ("/" in o or "." in o) and _stem(o) == stem for o in others):
        return f"{stem}-{hashlib.sha256(str(Path(scenario).resolve()).encode()).hexdigest()[:8]}"
    return stem


def config_difference(path: Path, identity: dict[str, Any]) -> str | None:
    """None if the JSON file ``path`` records ``identity`` as its ``config``; else what differs."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError, RecursionError):  # not JSON, not UTF-8, too deep, not a file
        data = None
    old = data.get("config") if isinstance(data, dict) else None
    if old == identity:
        return None
    if not isinstance(old, dict):
        return f"unreadable {path.name}"
    return ", ".join(
        f"{k}: {old.get(k)!r} there vs {identity[k]!r} now" for k in identity if old.get(k) != identity[k]
    )


def _other_command(out: Path) -> str | None:
    """What another command left in ``out`` (a benchmark's record, a reproduced figure's table), or
    None."""
    if (out / "benchmark.json").exists():
        return "a benchmark (benchmark.json)"
    from .figures import all_figures

    made = sorted(name for name in all_figures() if (out / f"{name}.csv").exists())
    if made:
        return f"reproduced figures ({', '.join(f'{m}.csv' for m in made[:3])})"
    return None


def check_out(out: Path, config: Configured, writable: bool = True) -> None:
    """Refuse an output folder that holds a leaderboard of another configuration (or, not
    ``writable``, none at all). A folder whose ``leaderboard.json`` was deleted or is unreadable but
    whose ``runs.jsonl`` survives is taken over: every run there is keyed by its point, the content of
    its scenario and the code that made it, so the runs of this configuration are reused and no other
    run is ever read into its tables."""
    import sys

    path = out / "leaderboard.json"
    diff = config_difference(path, config.identity()) if path.exists() else "missing leaderboard.json"
    if diff is None:
        return
    readable = diff not in ("missing leaderboard.json", f"unreadable {path.name}")
    if readable:
        raise ValueError(
            f"--out {str(out)!r} holds a leaderboard of another configuration ({diff}); "
            "use another --out, or rerun the same command to resume it"
        )
    if not writable:
        raise ValueError(
            f"--out {str(out)!r}: not writable, and no readable leaderboard there; use a writable --out"
        )
    if (out / "runs.jsonl").exists():
        other = _other_command(out)
        if other is not None:  # its runs are another command's: never taken over, nor appended to
            raise ValueError(f"--out {str(out)!r} holds {other}, not a leaderboard; use another --out")
        print(
            f"msj-gym: --out {str(out)!r}: {diff.split()[0]} leaderboard.json, written anew for this "
            "configuration; its finished runs in runs.jsonl are reused",
            file=sys.stderr,
        )
    out.mkdir(parents=True, exist_ok=True)
    atomic_write_text(
        path, json.dumps({"config": config.identity(), "provenance": provenance()}, indent=2) + "\n"
    )
