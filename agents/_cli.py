"""The error discipline the ``python -m msj_gym.agents.<script>`` commands share with ``msj-gym``: a
refusal is one line, ``python -m msj_gym.agents.<script>: error: <field> '<value>': <problem>``, with
exit code 2, before any work starts; an operating-system failure during the work (a full disk) is one
line with exit code 1; never a traceback. The argument checks the scripts share are here too."""

from __future__ import annotations

import math
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from msj_gym.arguments import ArgumentParser, UsageError

__all__ = [
    "ArgumentParser",
    "UsageError",
    "add_queue_window",
    "check_count",
    "check_load",
    "check_net_arch",
    "check_number",
    "check_output",
    "read_round",
    "run_script",
    "write_round",
]


#: What the ``rl`` extra installs that the scripts import (a missing one is a one-line refusal).
RL_MODULES = frozenset({"torch", "stable_baselines3", "sb3_contrib", "rich"})


def run_script(prog: str, main: Callable[[list[str] | None], Any], argv: Sequence[str] | None = None) -> int:
    """Run a script's ``main(argv)`` and return its exit code: 0 when it finishes; 2 with one line on
    stderr for a ``ValueError`` (a refusal: bad input, a stale output file, an agent that does not
    load) and for a missing dependency of the ``rl`` extra (naming the install command that fits how
    msj_gym was installed); 1 with one line for an ``OSError`` (the disk is full) or a failed
    simulation; 130 when interrupted."""
    from msj_gym.core.simulator import SimulationError

    def say(message: str) -> None:
        print(f"{prog}: error: {' '.join(message.split())}", file=sys.stderr, flush=True)

    try:
        main(None if argv is None else list(argv))
    except ValueError as exc:
        say(str(exc) or type(exc).__name__)
        return 2
    except OSError as exc:
        from msj_gym.atomic import os_error_line

        say(os_error_line(exc))
        return 1
    except SimulationError as exc:
        say(f"simulation failed: {exc}")
        return 1
    except ModuleNotFoundError as exc:
        if (exc.name or "").partition(".")[0] not in RL_MODULES:
            raise
        from msj_gym.extras import install_hint

        say(f"{exc.name} is not installed: the agents' scripts need the rl extra ({install_hint('rl')})")
        return 2
    except KeyboardInterrupt:
        print(f"\n{prog}: interrupted", file=sys.stderr)
        return 130
    return 0


def add_queue_window(parser: Any) -> None:
    """``--queue-window``, the env's ``queue_window``, as the scripts that make an MSJ env take it."""
    parser.add_argument(
        "--queue-window",
        type=int,
        default=1,
        help="start actions per class: the r-th oldest waiting job for r below this (1: the oldest only)",
    )


def check_count(flag: str, value: int, lo: int = 1, hi: int = 10**9) -> int:
    """An integer flag in [lo, hi]."""
    if not lo <= value <= hi:
        raise UsageError(f"{flag} {value!r}: expected an integer in [{lo}, {hi}]")
    return value


def check_number(flag: str, value: float, lo: float, hi: float, *, open_lo: bool = False) -> float:
    """A finite number flag in [lo, hi] (``(lo, hi]`` with ``open_lo``)."""
    ok = math.isfinite(value) and (value > lo if open_lo else value >= lo) and value <= hi
    if not ok:
        raise UsageError(f"{flag} {value!r}: expected a number in {'(' if open_lo else '['}{lo:g}, {hi:g}]")
    return value


def check_load(flag: str, value: float | None) -> float | None:
    """A load to learn at: below 1, where some policy is stable (above it every queue grows, and what
    an agent learns there says nothing about scheduling)."""
    if value is not None and not (math.isfinite(value) and 0 < value < 1):
        raise UsageError(
            f"{flag} {value!r}: expected a load in (0, 1); at a load of 1 or more no policy is stable"
        )
    return value


def check_net_arch(flag: str, widths: Sequence[int]) -> list[int]:
    """Hidden layer widths: each in [1, 4096]."""
    for w in widths:
        if not 1 <= w <= 4096:
            shown = " ".join(map(str, widths))
            raise UsageError(f"{flag} {shown!r}: expected layer widths in [1, 4096], got {w}")
    return list(widths)


def check_output(flag: str, path: Path | None, suffix: str | None = None, folder: bool = False) -> None:
    """An output path the script will write at the end of a long run: the right suffix, and the
    nearest existing folder on its way a folder this process may write in (tried, not guessed from
    permission bits). ``folder``: ``path`` is a folder itself."""
    if path is None:
        return
    if suffix is not None and path.suffix != suffix:
        raise UsageError(f"{flag} {str(path)!r}: expected a {suffix} path")
    if not folder and path.is_dir():
        raise UsageError(f"{flag} {str(path)!r}: a folder is there, not a file")
    if folder and path.exists() and not path.is_dir():
        raise UsageError(f"{flag} {str(path)!r}: a file is there, not a folder")
    if not folder and path.exists() and not path.is_file():
        # a device or a pipe (/dev/full, /dev/zero): read back on a resume, it never ends
        raise UsageError(f"{flag} {str(path)!r}: not a regular file (a device or a pipe); give a file path")
    here = path if folder else path.parent
    while not here.exists() and here != here.parent:
        here = here.parent
    if not here.is_dir():
        raise UsageError(f"{flag} {str(path)!r}: {str(here)!r} is a file, not a folder")
    probe = here / f".{path.name}.{os.getpid()}.probe"
    try:
        probe.open("x").close()
        probe.unlink()
    except OSError as exc:
        why = exc.strerror or exc
        raise UsageError(f"{flag} {str(path)!r}: cannot write in {str(here)!r} ({why})") from None


def read_round(path: Path | None, key: str) -> dict[str, Any] | None:
    """A round's compared decisions kept in ``path`` (``--data``) if they were made for ``key``; None
    when there are none, they were made for other settings, or the file is damaged (a note says so:
    the round is collected again and the file replaced)."""
    import numpy as np

    if path is None or not path.exists():
        return None
    try:
        with np.load(path) as z:
            if str(z["key"]) != key:
                return None
            return {k: z[k] for k in z.files if k != "key"}
    except Exception as exc:  # a file cut short by a kill or a full disk: collect again
        why = " ".join(str(exc).split())[:80] or type(exc).__name__
        print(f"note: {str(path)!r} is unreadable ({why}); collecting the round again", file=sys.stderr)
        return None


def write_round(path: Path | None, key: str, part: dict[str, Any]) -> None:
    """Keep a round's compared decisions in ``path`` (``--data``), whole or not at all (a killed run
    redoes the round), for :func:`read_round`."""
    import numpy as np

    from msj_gym.atomic import atomic_path

    if path is None:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(path) as tmp:
        np.savez_compressed(tmp, key=np.array(key), **part)
