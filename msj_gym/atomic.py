"""Output files written whole or not at all, output paths checked before a long computation, one line
for what the operating system refuses, and disk-cache entries that processes needing them at the same
time compute once (:func:`computed_once`).

Every table, picture and animation the commands write goes through :func:`atomic_path`: the content
is written to a hidden temporary file in the same folder and renamed over the target only once it is
complete (a rename within a folder is atomic), so a full disk, a read-only folder or a killed process
leaves either the old file or the new one, never a truncated one, and no temporary file behind.
"""

from __future__ import annotations

import contextlib
import errno
import os
import threading
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

__all__ = [
    "OutputError",
    "atomic_path",
    "atomic_savefig",
    "atomic_write_csv",
    "atomic_write_text",
    "cache_folder",
    "check_output_file",
    "check_output_folder",
    "computed_once",
    "os_error_line",
]


class OutputError(OSError):
    """An output file could not be written; ``str()`` is one line naming the file and the reason."""

    def __str__(self) -> str:
        return os_error_line(self)


def os_error_line(exc: OSError) -> str:
    """One line for an ``OSError``: the file and the operating system's reason (``cannot write
    'out/table.csv': No space left on device``)."""
    why = exc.strerror or (str(exc.args[0]) if exc.args else type(exc).__name__)
    name = exc.filename
    if name is None:
        return why
    verb = "write" if isinstance(exc, OutputError) else "use"
    return f"cannot {verb} {str(name)!r}: {why}"


@contextlib.contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """A temporary path to write ``path``'s new content to (same folder, same suffix, so writers that
    go by the suffix pick the right format); renamed over ``path`` if the block succeeds, removed if
    it fails. An ``OSError`` comes out as an :class:`OutputError` naming ``path`` itself."""
    target = Path(path)
    # a name of its own per writer: processes on several machines sharing a folder may share a pid
    tmp = target.with_name(f".{target.name}.{os.getpid()}.{os.urandom(3).hex()}.tmp{target.suffix}")
    try:
        yield tmp
        os.replace(tmp, target)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            tmp.unlink()
        if isinstance(exc, OSError) and not isinstance(exc, OutputError):
            raise OutputError(exc.errno or errno.EIO, exc.strerror or str(exc), str(target)) from None
        raise


def cache_folder(name: str) -> Path:
    """The folder of one of the disk caches that every process shares (solved optima, the generalists'
    plans): ``$MSJ_GYM_CACHE/name``, else ``$XDG_CACHE_HOME/msj_gym/name``, else
    ``~/.cache/msj_gym/name``. Entries are written with :func:`atomic_write_text` or
    :func:`atomic_path`, so that processes sharing one never read half an entry."""
    root = os.environ.get("MSJ_GYM_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "msj_gym"
    )
    return Path(root) / name


@contextlib.contextmanager
def computed_once(entry: Path, doing: str) -> Iterator[None]:
    """Hold the lock of the cache entry ``entry`` (an exclusive ``flock`` on ``.NAME.lock`` beside it)
    while this process computes it, so that processes needing the same entry at the same time compute
    it once: the others wait here, saying so on stderr (``doing``: what the holder is doing), and then
    find it written. Read the entry again inside the block before computing it. A lock that cannot be
    made (a read-only cache) holds nothing: each process computes its own, as without one. The OS
    releases the lock of a process that dies. Re-entrant in a thread: a flock taken twice through
    two open files would wait for itself."""
    import fcntl
    import sys

    lock = entry.with_name(f".{entry.name}.lock")
    key = str(lock.absolute())
    held: set[str] = _COMPUTING.__dict__.setdefault("entries", set())
    if key in held:
        yield
        return
    try:
        lock.parent.mkdir(parents=True, exist_ok=True)
        fh = lock.open("a")  # never removed: unlinking a lock file races with its next taker
    except OSError:
        yield
        return
    with fh:  # closing it releases the lock
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            print(f"msj-gym: another process is {doing}; waiting for its result", file=sys.stderr, flush=True)
            with contextlib.suppress(OSError):
                fcntl.flock(fh, fcntl.LOCK_EX)
        except OSError:  # a file system without locks: computed here as well
            pass
        held.add(key)
        try:
            yield
        finally:
            held.discard(key)


_COMPUTING = threading.local()  # the entries each thread holds


def atomic_write_text(path: str | Path, text: str) -> None:
    """Write ``text`` to ``path`` whole or not at all (see :func:`atomic_path`)."""
    with atomic_path(path) as tmp:
        tmp.write_text(text)


def atomic_write_csv(path: str | Path, header: Sequence[Any], rows: Iterable[Sequence[Any]]) -> None:
    """Write a CSV of ``header`` and ``rows`` to ``path`` whole or not at all (see :func:`atomic_path`)."""
    import csv

    with atomic_path(path) as tmp, tmp.open("w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(header)
        writer.writerows(rows)


def atomic_savefig(fig: Any, path: str | Path, **kwargs: Any) -> Path:
    """``fig.savefig(path, **kwargs)`` whole or not at all; the figure is closed either way."""
    import matplotlib.pyplot as plt

    try:
        with atomic_path(path) as tmp:
            fig.savefig(tmp, **kwargs)
    finally:
        plt.close(fig)
    return Path(path)


def check_output_file(flag: str, path: str | Path, suffixes: tuple[str, ...] = ()) -> Path:
    """Refuse, with a one-line ``ValueError`` naming ``flag`` and the path, an output file that could
    not be written: a suffix not in ``suffixes`` (if given), a missing parent folder, a folder in its
    place, or a folder this process may not write to (tried by creating a temporary file there, since
    permission bits do not tell for root or read-only mounts). Call it before a long computation."""
    out = Path(path)
    if suffixes and out.suffix.lower() not in suffixes:
        raise ValueError(f"{flag}: expected a file ending in {' or '.join(suffixes)}, got {str(path)!r}")
    folder = out.parent
    if not folder.is_dir():
        what = "is not a folder" if folder.exists() else "does not exist"
        raise ValueError(f"{flag} {str(path)!r}: folder {str(folder)!r} {what}")
    if out.is_dir():
        raise ValueError(f"{flag} {str(path)!r}: a folder is there, not a file")
    probe = folder / f".{out.name}.{os.getpid()}.probe"
    try:
        probe.open("x").close()
    except OSError as exc:
        raise ValueError(
            f"{flag} {str(path)!r}: cannot write in folder {str(folder)!r} ({exc.strerror or exc})"
        ) from None
    with contextlib.suppress(OSError):
        probe.unlink()
    return out


def _can_write_in(folder: Path) -> str | None:
    """None if this process can create a file in ``folder``, else the reason."""
    probe = folder / f".msj-gym.{os.getpid()}.probe"
    try:
        probe.open("x").close()
    except OSError as exc:
        return exc.strerror or type(exc).__name__
    with contextlib.suppress(OSError):
        probe.unlink()
    return None


def check_output_folder(flag: str, folder: str | Path, record: str | None = None) -> None:
    """Refuse, with a one-line ``ValueError``, an output folder a command could not write, before its
    planning (which may solve optima for minutes): a file in its place or on its way, or a folder that
    cannot be created or written, unless it already holds ``record`` (a finished folder on read-only
    media is read, not written)."""
    out = Path(folder)
    if out.exists() and not out.is_dir():
        raise ValueError(f"{flag} {str(out)!r}: a file is there, not a folder; use another {flag}")
    here = out
    while not here.exists() and here != here.parent:
        here = here.parent
    if not here.is_dir():
        raise ValueError(
            f"{flag} {str(out)!r}: cannot be made a folder ({str(here)!r} is a file); use another {flag}"
        )
    why = _can_write_in(here)
    if why is not None and not (record is not None and (out / record).is_file()):
        raise ValueError(f"{flag} {str(out)!r}: not writable ({why}); use a writable {flag}")
