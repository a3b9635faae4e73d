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
from typing import Any

#: How long a connection waits for another process's write lock before failing.
BUSY_TIMEOUT_S = 60.0


def connect(target: str, **kwargs: Any) -> sqlite3.Connection:
    """``sqlite3.connect`` usable from worker threads, in WAL mode (files) with a busy timeout."""
    conn = sqlite3.connect(target, timeout=BUSY_TIMEOUT_S, check_same_thread=False, **kwargs)
    if target != ":memory:":
        conn.execute("PRAGMA journal_mode=WAL")
    return conn
