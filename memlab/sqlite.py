"""One way to open every SQLite file memlab writes: WAL journal and a busy timeout.

Key-value stores, the embedding cache, the response cache and the long-term store all open
their files through ``connect``, so two processes sharing a file (two sweeps, joblib
workers) wait for each other's write instead of failing with "database is locked":

- ``journal_mode=WAL``: readers never block the writer nor the writer the readers, and a
  process killed mid-transaction leaves the last committed state (the WAL is replayed or
  discarded on the next open);
- a busy timeout of ``BUSY_TIMEOUT_S`` seconds: a writer waits for another's transaction.

WAL needs a local file system (its shared-memory index does not work over NFS/SMB).
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from typing import Any, TypeVar

#: How long a connection waits for another process's write lock before failing.
BUSY_TIMEOUT_S = 60.0

T = TypeVar("T")


def _is_busy(exc: sqlite3.OperationalError) -> bool:
    text = str(exc).lower()
    return "locked" in text or "busy" in text


def retry_while(fn: Callable[[], T], busy: Callable[[Exception], bool], *, timeout: float = BUSY_TIMEOUT_S,
                first_pause: float = 0.005) -> T:
    """``fn()``, retried while it raises an error ``busy`` accepts: pauses start at
    ``first_pause`` seconds and double up to 0.5 s; the last error is raised once the next
    pause would pass ``timeout`` seconds (or at once for an error ``busy`` refuses)."""
    deadline = time.monotonic() + timeout
    pause = first_pause
    while True:
        try:
            return fn()
        except Exception as exc:
            if not busy(exc) or time.monotonic() + pause > deadline:
                raise
        time.sleep(pause)
        pause = min(pause * 2, 0.5)


def retry_busy(fn: Callable[[], T], timeout: float = BUSY_TIMEOUT_S) -> T:
    """``fn()``, retried with growing pauses while SQLite answers "database is locked".

    The busy timeout covers ordinary write contention, but SQLite returns SQLITE_BUSY at once,
    without calling the busy handler, where waiting could deadlock: switching a file to WAL
    while another process opens it, or a read transaction that must become a write. Two
    processes creating the same file at the same moment meet exactly these cases.
    """
    return retry_while(fn, lambda exc: isinstance(exc, sqlite3.OperationalError) and _is_busy(exc),
                       timeout=timeout)


def connect(target: str, *, setup: Callable[[sqlite3.Connection], Any] | None = None,
            **kwargs: Any) -> sqlite3.Connection:
    """``sqlite3.connect`` usable from worker threads, in WAL mode (files) with a busy timeout.

    ``setup(conn)`` (creating tables, migrations) runs after the journal mode is set; both are
    retried while another process holds the file (see ``retry_busy``).
    """
    conn = sqlite3.connect(target, timeout=BUSY_TIMEOUT_S, check_same_thread=False, **kwargs)
    try:
        if target != ":memory:":
            retry_busy(lambda: conn.execute("PRAGMA journal_mode=WAL"))
        if setup is not None:
            retry_busy(lambda: setup(conn))
    except BaseException:
        conn.close()
        raise
    return conn
