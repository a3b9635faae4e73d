"""Atomic file writes: a reader sees the old complete file or the new complete file, never a torn one.

Every file memlab writes goes through ``atomic_write``: the bytes go to a temporary file in the
same folder (so the rename cannot cross file systems), are flushed and fsynced, then
``os.replace`` puts them in place. A run killed at any moment leaves at most a stray ``.tmp`` file
and the previous output intact. Not guaranteed: durability of the rename itself on power loss
(the folder is fsynced where the OS allows) and atomicity on network file systems.
"""
from __future__ import annotations

import contextlib
import os
import tempfile
from typing import IO, Iterator

__all__ = ["atomic_write", "atomic_write_text", "atomic_write_bytes"]


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
        with os.fdopen(fd, mode, encoding=encoding, newline=newline) as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
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


def _fsync_dir(folder: str) -> None:
    # makes the rename itself durable on POSIX; not possible (nor needed) on Windows
    with contextlib.suppress(OSError, AttributeError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
