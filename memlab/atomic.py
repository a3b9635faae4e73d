"""Atomic file writes: a reader sees the old complete file or the new complete file, never a torn one.

Every file memlab writes goes through ``atomic_write``: the bytes go to a temporary file in the
same folder (so the rename cannot cross file systems), are flushed and fsynced, then
``os.replace`` puts them in place. A run killed at any moment leaves at most a stray ``.tmp`` file
and the previous output intact. Several files that belong together (a sweep's results,
summaries, provenance and plots) are written inside ``atomic_files()``: every temporary file is
finished first and the renames come last, one right after another, so a killed run leaves
the old set or the new set (up to the few microseconds of those renames). Not guaranteed: durability of the rename itself on power loss
(the folder is fsynced where the OS allows) and atomicity on network file systems.

Permissions are those a plain ``open(path, "w")`` would give: a new file gets ``0o666 & ~umask``
(``-rw-r--r--`` under the usual umask 022), a replaced file keeps its mode. (``mkstemp`` alone
would leave every output ``-rw-------``.)
"""
from __future__ import annotations

import contextlib
import contextvars
import os
import stat
import tempfile
import threading
from typing import IO, Iterator

__all__ = ["atomic_files", "atomic_write", "atomic_write_text", "atomic_write_bytes", "current_umask", "output_mode"]

# (temporary file, target) pairs waiting for the end of an ``atomic_files`` block
_pending: contextvars.ContextVar[list[tuple[str, str]] | None] = contextvars.ContextVar("_pending", default=None)


@contextlib.contextmanager
def atomic_files() -> Iterator[None]:
    """Defer the renames of every ``atomic_write`` in the block to its successful end.

    All the slow work (serialising, fsyncing) happens first; the files are then renamed into
    place one after another. On an error in the block every temporary file is deleted and
    no target is touched."""
    if _pending.get() is not None:  # nested: the outer block commits
        yield
        return
    waiting: list[tuple[str, str]] = []
    token = _pending.set(waiting)
    try:
        yield
    except BaseException:
        for tmp, _ in waiting:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        raise
    finally:
        _pending.reset(token)
    for tmp, path in waiting:
        os.replace(tmp, path)
    for folder in dict.fromkeys(os.path.dirname(os.path.abspath(p)) for _, p in waiting):
        _fsync_dir(folder)


@contextlib.contextmanager
def atomic_write(path: str | os.PathLike, mode: str = "wb", encoding: str | None = None,
                 newline: str | None = None) -> Iterator[IO]:
    """Open a temporary sibling of ``path`` for writing; on success fsync it and rename it over
    ``path``; on any error (or exception in the block) delete it and leave ``path`` untouched."""
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", suffix=".tmp", dir=folder)
    try:
        _chmod(fd, tmp, output_mode(path))
        with os.fdopen(fd, mode, encoding=encoding, newline=newline) as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        waiting = _pending.get()
        if waiting is not None:  # inside atomic_files(): renamed with the others at its end
            waiting.append((tmp, path))
            return
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    _fsync_dir(folder)


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> None:
    with atomic_write(path, "wb") as fh:
        fh.write(data)


def atomic_write_text(path: str | os.PathLike, text: str, encoding: str = "utf-8") -> None:
    with atomic_write(path, "w", encoding=encoding, newline="") as fh:
        fh.write(text)


def current_umask() -> int:
    """The process umask, read without changing it where the OS tells it (Linux
    ``/proc/self/status``); elsewhere set and restored at once under a lock."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    with _umask_lock:
        mask = os.umask(0o022)
        os.umask(mask)
    return mask


_umask_lock = threading.Lock()


def output_mode(path: str | os.PathLike) -> int:
    """Permission bits for a file written to ``path``: those of the file it replaces, or
    ``0o666 & ~umask`` for a new one, as ``open(path, "w")`` would give."""
    try:
        return stat.S_IMODE(os.stat(path).st_mode)
    except OSError:
        return 0o666 & ~current_umask()


def _chmod(fd: int, tmp: str, mode: int) -> None:
    if hasattr(os, "fchmod"):
        os.fchmod(fd, mode)
    else:  # Windows before Python 3.13: only the read-only bit means anything
        os.chmod(tmp, mode)


def _fsync_dir(folder: str) -> None:
    # makes the rename itself durable on POSIX; not possible (nor needed) on Windows
    with contextlib.suppress(OSError, AttributeError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
