"""ResponseCache: a persistent SQLite cache of chat completions.

The key is ``sha256`` of the canonical JSON of ``{"model", "messages", "params"}``
(keys sorted, no whitespace, UTF-8), so the same request always finds the same
answer and a replay of an experiment makes no model calls the second time. ``params`` are the
request's as the client sends them, a schema constraining the answer included (the clients put
it there as ``response_format``): a constrained and an unconstrained call are different requests
with different answers, and never share a row.

Each row keeps the tokens the original call cost (``prompt_tokens``,
``completion_tokens``, as the server reported them; 0 when it reported none) and a hit
returns them on its ``Completion`` (``cached=True``). Usage tallies count a hit at those
tokens, so a run reports the same cost on a cold and a warm cache, and count the hit
apart as well (``LLMUsage.cached_calls``, ``cached_tokens``: what the cache saved).
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import threading
import time
from typing import Any

from ..base import Component, MemlabError
from ..sqlite import connect
from .base import Completion

_SCHEMA = """
CREATE TABLE IF NOT EXISTS responses (
    key TEXT PRIMARY KEY,
    model TEXT NOT NULL,
    request TEXT NOT NULL,
    text TEXT NOT NULL,
    prompt_tokens INTEGER NOT NULL,
    completion_tokens INTEGER NOT NULL,
    created REAL NOT NULL
)
"""


def cache_key(model: str, messages: list[dict[str, Any]], params: dict[str, Any]) -> str:
    """sha256 hex of the canonical JSON of the request."""
    return hashlib.sha256(_canonical(model, messages, params).encode("utf-8")).hexdigest()


def _canonical(model: str, messages: list[dict[str, Any]], params: dict[str, Any]) -> str:
    return json.dumps({"model": model, "messages": messages, "params": params},
                      sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


class ResponseCache(Component):
    """Completions by request; ``path=None`` keeps them in memory for this process only."""

    def __init__(self, path: str | None = None):
        self.path = path
        self._on_params_changed()

    def _on_params_changed(self) -> None:
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None

    def _db(self) -> sqlite3.Connection:
        if self._conn is None:
            target = ":memory:" if self.path is None else str(self.path)
            if self.path is not None:  # like every cache: a first run creates its folder
                folder = os.path.dirname(os.path.abspath(target))
                try:
                    os.makedirs(folder, exist_ok=True)
                except OSError as exc:
                    raise MemlabError(f"ResponseCache path {self.path!r}: cannot create folder "
                                      f"{folder!r}: {exc.strerror}") from None
            try:
                def setup(conn: sqlite3.Connection) -> None:
                    conn.execute(_SCHEMA)
                    conn.commit()

                conn = connect(target, setup=setup)
            except sqlite3.DatabaseError as exc:
                raise MemlabError(f"ResponseCache path {self.path!r} is not a usable SQLite file: {exc}") from exc
            self._conn = conn
        return self._conn

    def __getstate__(self) -> dict[str, Any]:
        # the connection does not travel: a file cache reopens, an in-memory one starts empty
        return {k: v for k, v in self.__dict__.items() if k not in ("_lock", "_conn")}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock, self._conn = threading.Lock(), None

    def get(self, model: str, messages: list[dict[str, Any]], params: dict[str, Any]) -> Completion | None:
        key = cache_key(model, messages, params)
        with self._lock:
            row = self._db().execute(
                "SELECT text, prompt_tokens, completion_tokens, model FROM responses WHERE key = ?",
                (key,)).fetchone()
        if row is None:
            return None
        # (a NULL count, from a file another tool wrote, reads as 0: unknown, not an error)
        return Completion(text=row[0], prompt_tokens=int(row[1] or 0), completion_tokens=int(row[2] or 0),
                          model=row[3], cached=True)

    def put(self, model: str, messages: list[dict[str, Any]], params: dict[str, Any],
            completion: Completion) -> None:
        key = cache_key(model, messages, params)
        with self._lock:
            db = self._db()
            db.execute("INSERT OR REPLACE INTO responses VALUES (?, ?, ?, ?, ?, ?, ?)",
                       (key, model, _canonical(model, messages, params), completion.text,
                        int(completion.prompt_tokens), int(completion.completion_tokens), time.time()))
            db.commit()

    def __len__(self) -> int:
        with self._lock:
            return int(self._db().execute("SELECT COUNT(*) FROM responses").fetchone()[0])

    def clear(self) -> None:
        with self._lock:
            db = self._db()
            db.execute("DELETE FROM responses")
            db.commit()

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None
