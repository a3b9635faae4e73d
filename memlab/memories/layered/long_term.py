"""LongTermMemory: typed memories in SQLite (metadata) plus a vector store (embeddings).

The two stores are kept consistent: every write goes to both or neither (an SQLite
transaction with the vector write inside it; on failure the transaction is rolled
back and the new vectors deleted), and opening a memory checks and repairs them
(rows without a vector are embedded again, vectors without a row are deleted, and a
changed embedder re-embeds everything). ``last_repair`` says what was repaired.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import sqlite3
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

from ...base import Component, ConfigError, MemlabError, did_you_mean
from ...decay import Clock, DecayModel
from ...embeddings.base import Embedder
from ...embeddings.hashing import HashingEmbedder
from ...records import Hit, MemoryRecord, Role
from ...retrieval.conflicts import ConflictResolver
from ...retrieval.filters import Where, matches, validate_where
from ...storage.vector import NumpyVectorStore, VectorStore
from .extraction import MEMORY_TYPES, ExtractedMemory

log = logging.getLogger(__name__)

STATUSES = ("active", "outdated")
#: Keys a ``where`` filter may use (the table's columns).
FILTER_KEYS = ("memory_id", "user_id", "memory_type", "subject", "source_session", "timestamp",
               "status", "access_count", "last_accessed", "strength")
#: Keys that never change after a memory is written; these are also stored with the vector,
#: so a filter using only them is evaluated inside the vector store.
VECTOR_KEYS = ("user_id", "memory_type", "subject", "source_session", "timestamp")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS memories (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    memory_id TEXT NOT NULL UNIQUE,
    user_id TEXT NOT NULL DEFAULT '',
    content TEXT NOT NULL,
    memory_type TEXT NOT NULL CHECK (memory_type IN ('fact', 'preference', 'event_summary')),
    subject TEXT NOT NULL DEFAULT '',
    source_session TEXT NOT NULL DEFAULT '',
    timestamp REAL NOT NULL,
    access_count INTEGER NOT NULL DEFAULT 0,
    last_accessed REAL NOT NULL,
    strength REAL NOT NULL DEFAULT 1.0,
    status TEXT NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'outdated')),
    supersedes TEXT NOT NULL DEFAULT '[]',
    superseded_by TEXT,
    source_ids TEXT NOT NULL DEFAULT '[]'
);
CREATE INDEX IF NOT EXISTS memories_user_subject ON memories (user_id, subject, status);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
"""
_COLUMNS = ("seq", "memory_id", "user_id", "content", "memory_type", "subject", "source_session",
            "timestamp", "access_count", "last_accessed", "strength", "status", "supersedes",
            "superseded_by", "source_ids")
_SELECT = f"SELECT {', '.join(_COLUMNS)} FROM memories"


@dataclass
class RepairReport:
    """What ``check_and_repair`` fixed: ids re-embedded, orphan vectors deleted."""

    reembedded: list[str] = field(default_factory=list)
    deleted_vectors: list[str] = field(default_factory=list)
    embedder_changed: bool = False

    def __bool__(self) -> bool:
        return bool(self.reembedded or self.deleted_vectors or self.embedder_changed)

    def __str__(self) -> str:
        if not self:
            return "long-term memory consistent: nothing repaired"
        parts = [f"{len(self.reembedded)} row(s) without a vector re-embedded",
                 f"{len(self.deleted_vectors)} vector(s) without a row deleted"]
        if self.embedder_changed:
            parts.insert(0, "embedder changed: every vector rebuilt")
        return "long-term memory repaired: " + "; ".join(parts)


def _where_keys(where: Where) -> set[str]:
    keys: set[str] = set()
    for key, cond in where.items():
        if key in ("$and", "$or"):
            for sub in cond:
                keys |= _where_keys(sub)
        else:
            keys.add(key)
    return keys


class LongTermMemory(Component):
    """Persistent typed memories searched by meaning, with decay, conflicts and repair.

    Columns: memory_id, user_id, content, memory_type ('fact' | 'preference' |
    'event_summary'), subject, source_session, timestamp, access_count, last_accessed
    (the creation time until the first recall), strength, status ('active' |
    'outdated'), supersedes (JSON list), superseded_by, source_ids (JSON list).

    - ``path=None`` keeps the table in memory; ``vector_store`` defaults to
      ``NumpyVectorStore()`` (in memory: reopening a file then re-embeds every row),
      ``embedder`` to ``HashingEmbedder()``. The memory owns both stores.
    - ``add``: an exact duplicate (same user, type and content, active) is not stored
      twice: the existing memory takes the new source_ids and is reinforced. A memory
      with a ``subject`` is checked by ``conflict_resolver`` (default
      ``ConflictResolver()``: same user and subject, strictly older) against the active
      memories; those it supersedes are marked outdated (``superseded_by``), not deleted.
    - ``search`` scores by cosine similarity ``sim`` (memories with ``sim <= 0`` share
      nothing with the query and are not returned); with ``decay`` the score is
      ``sim * decay.weight(now, last_accessed, strength)`` (Ebbinghaus: ``exp(-t / S)``).
      Ties go to the older memory. Returned memories are recalled (``reinforce=True``):
      access_count + 1, last_accessed = now, strength = ``decay.reinforce(strength)``.
    - ``now``: the argument, else ``clock.now()``, else the newest timestamp or recall
      time stored (dialogue time; the wall clock is never read implicitly, except by
      ``add`` without a timestamp and without a clock).
    """

    #: Candidates asked from the vector store per search (doubled while filters leave too few).
    CANDIDATES = 50

    def __init__(self, path: str | None = None, vector_store: VectorStore | None = None,
                 embedder: Embedder | None = None, decay: DecayModel | None = None,
                 conflict_resolver: ConflictResolver | None = None, clock: Clock | None = None):
        self.path = path
        self.vector_store = vector_store
        self.embedder = embedder
        self.decay = decay
        self.conflict_resolver = conflict_resolver
        self.clock = clock
        self._db: sqlite3.Connection | None = None
        self._on_params_changed()

    def _on_params_changed(self) -> None:
        for name, value, kind in (("vector_store", self.vector_store, VectorStore),
                                  ("embedder", self.embedder, Embedder),
                                  ("decay", self.decay, DecayModel),
                                  ("conflict_resolver", self.conflict_resolver, ConflictResolver),
                                  ("clock", self.clock, Clock)):
            if value is not None and not isinstance(value, kind):
                raise ConfigError(f"{name} must be a {kind.__name__} or None, got {type(value).__name__}")
        self.close()
        self._lock = threading.RLock()
        self._store = self.vector_store if self.vector_store is not None else NumpyVectorStore()
        self._embedder = self.embedder if self.embedder is not None else HashingEmbedder()
        self._resolver = self.conflict_resolver if self.conflict_resolver is not None else ConflictResolver()
        self._db = self._connect()
        self._last_repair = self.check_and_repair()

    def _connect(self) -> sqlite3.Connection:
        target = ":memory:" if self.path is None else str(self.path)
        if self.path is not None:
            folder = os.path.dirname(os.path.abspath(target))
            if not os.path.isdir(folder):
                raise ConfigError(f"path {self.path!r}: folder {folder!r} does not exist")
        try:
            conn = sqlite3.connect(target, check_same_thread=False, isolation_level=None)
            conn.executescript(_SCHEMA)
            missing = set(_COLUMNS) - {r[1] for r in conn.execute("PRAGMA table_info(memories)")}
        except sqlite3.DatabaseError as exc:
            raise MemlabError(f"path {self.path!r} is not a usable SQLite file: {exc}") from exc
        if missing:
            conn.close()
            raise MemlabError(f"path {self.path!r}: table 'memories' lacks column(s) {sorted(missing)}")
        return conn

    @property
    def db(self) -> sqlite3.Connection:
        if self._db is None:
            raise MemlabError("LongTermMemory is closed")
        return self._db

    @property
    def store(self) -> VectorStore:
        return self._store

    @property
    def last_repair(self) -> RepairReport:
        """What the last ``check_and_repair`` (run on open) fixed."""
        return self._last_repair

    # -- pickling: an in-memory table travels as its SQL dump; a file is reopened ---------------
    def __getstate__(self) -> dict[str, Any]:
        state = {k: v for k, v in self.__dict__.items() if k not in ("_db", "_lock")}
        state["_dump"] = "\n".join(self.db.iterdump()) if self.path is None else None
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        dump = state.pop("_dump", None)
        self.__dict__.update(state)
        self._lock = threading.RLock()
        if dump:
            conn = sqlite3.connect(":memory:", check_same_thread=False, isolation_level=None)
            conn.executescript(dump)
            self._db = conn
        else:
            self._db = self._connect()
        self._last_repair = self.check_and_repair()

    def close(self) -> None:
        db, self._db = getattr(self, "_db", None), None
        if db is not None:
            db.close()
            self._store.close()

    # -- consistency -------------------------------------------------------------------
    def check_and_repair(self) -> RepairReport:
        """Make the vector store hold exactly one vector per row, from the current embedder."""
        with self._lock:
            report = RepairReport()
            identity = self._embedder.identity()
            stored = self.db.execute("SELECT value FROM meta WHERE key = 'embedder'").fetchone()
            if stored is not None and stored[0] != identity:
                report.embedder_changed = True
                self._store.clear()
            rows = self.db.execute(_SELECT + " ORDER BY seq").fetchall()
            row_ids = {r[1] for r in rows}
            vector_ids = self._store.ids()
            report.deleted_vectors = [i for i in vector_ids if i not in row_ids]
            if report.deleted_vectors:
                self._store.delete(report.deleted_vectors)
            have = set(vector_ids)
            missing = [self._row(r) for r in rows if r[1] not in have]
            report.reembedded = [r["memory_id"] for r in missing]
            for start in range(0, len(missing), 256):
                self._write_vectors(missing[start:start + 256])
            self.db.execute("INSERT OR REPLACE INTO meta VALUES ('embedder', ?)", (identity,))
            if report:
                log.warning("%s (path=%r)", report, self.path)
            return report

    def _write_vectors(self, rows: list[dict[str, Any]]) -> None:
        if not rows:
            return
        vectors = self._embedder.embed([r["content"] for r in rows])
        self._store.add([r["memory_id"] for r in rows], vectors,
                        metadatas=[{k: r[k] for k in VECTOR_KEYS} for r in rows],
                        documents=[r["content"] for r in rows])

    # -- time --------------------------------------------------------------------------
    def resolve_now(self, now: float | None = None) -> float:
        if now is not None:
            return float(now)
        if self.clock is not None:
            return float(self.clock.now())
        row = self.db.execute("SELECT MAX(MAX(timestamp), MAX(last_accessed)) FROM memories").fetchone()
        return float(row[0]) if row and row[0] is not None else 0.0

    # -- rows and records ----------------------------------------------------------------
    @staticmethod
    def _row(values: Sequence[Any]) -> dict[str, Any]:
        row = dict(zip(_COLUMNS, values))
        row["supersedes"] = json.loads(row["supersedes"])
        row["source_ids"] = json.loads(row["source_ids"])
        return row

    @staticmethod
    def to_record(row: Mapping[str, Any]) -> MemoryRecord:
        """A stored memory as a MemoryRecord (id = memory_id; every column in metadata)."""
        metadata = {k: row[k] for k in _COLUMNS if k not in ("seq", "memory_id", "content")}
        metadata["kind"] = "memory"
        metadata["supersedes"] = list(row["supersedes"])
        metadata["source_ids"] = list(row["source_ids"])
        return MemoryRecord(role=Role.SYSTEM, content=row["content"], id=row["memory_id"],
                            timestamp=row["timestamp"], agent_id=row["user_id"], metadata=metadata)

    def _rows(self, sql: str = "", args: Sequence[Any] = ()) -> list[dict[str, Any]]:
        return [self._row(r) for r in self.db.execute(f"{_SELECT} {sql}", tuple(args)).fetchall()]

    def get(self, memory_id: str) -> MemoryRecord | None:
        rows = self._rows("WHERE memory_id = ?", (str(memory_id),))
        return self.to_record(rows[0]) if rows else None

    def records(self, where: Where | None = None, include_outdated: bool = True) -> list[MemoryRecord]:
        """Every memory (oldest first) matching ``where``."""
        self._check_where(where)
        rows = self._rows("ORDER BY seq")
        return [self.to_record(r) for r in rows if (include_outdated or r["status"] == "active")
                and matches(self._view(r), where)]

    def __len__(self) -> int:
        return int(self.db.execute("SELECT COUNT(*) FROM memories").fetchone()[0])

    def count(self, status: str | None = None) -> int:
        if status is None:
            return len(self)
        return int(self.db.execute("SELECT COUNT(*) FROM memories WHERE status = ?", (status,)).fetchone()[0])

    @staticmethod
    def _view(row: Mapping[str, Any]) -> dict[str, Any]:
        return {k: row[k] for k in FILTER_KEYS}

    @staticmethod
    def _check_where(where: Where | None) -> None:
        validate_where(where)
        for key in sorted(_where_keys(where or {})):
            if key not in FILTER_KEYS:
                raise ConfigError(did_you_mean(key, list(FILTER_KEYS), "long-term memory filter key"))

    # -- writing -----------------------------------------------------------------------
    def add(self, content: str, memory_type: str = "fact", *, user_id: str = "", subject: str = "",
            source_session: str = "", source_ids: Sequence[str] | None = None,
            timestamp: float | None = None, memory_id: str | None = None) -> MemoryRecord:
        """Store one memory (see the class docstring); returns it as stored."""
        item = {"content": content, "memory_type": memory_type, "subject": subject,
                "source_ids": list(source_ids or []), "memory_id": memory_id}
        return self.add_many([item], user_id=user_id, source_session=source_session, timestamp=timestamp)[0]

    def add_many(self, items: Iterable[ExtractedMemory | Mapping[str, Any]], *, user_id: str = "",
                 source_session: str = "", timestamp: float | None = None) -> list[MemoryRecord]:
        """Store several memories in one transaction: all of them or none."""
        prepared = [self._prepare(item, user_id, source_session, timestamp) for item in items]
        if not prepared:
            return []
        with self._lock:
            db = self.db
            written: list[dict[str, Any]] = []
            out_ids: list[str] = []
            db.execute("BEGIN IMMEDIATE")
            try:
                for row in prepared:
                    out_ids.append(self._insert(row, written))
                self._write_vectors(written)
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                try:
                    self._store.delete([r["memory_id"] for r in written])
                except Exception:  # the next check_and_repair deletes what is left
                    log.exception("could not undo vector writes after a failed add")
                raise
            return [self.get(i) for i in out_ids]  # type: ignore[misc]

    def _prepare(self, item: ExtractedMemory | Mapping[str, Any], user_id: str, source_session: str,
                 timestamp: float | None) -> dict[str, Any]:
        data = item.to_dict() if isinstance(item, ExtractedMemory) else dict(item)
        content = data.get("content")
        if not isinstance(content, str) or not content.strip():
            raise MemlabError(f"memory content must be a non-empty string, got {content!r}")
        memory_type = data.get("memory_type", "fact")
        if memory_type not in MEMORY_TYPES:
            raise MemlabError(f"memory_type must be one of {', '.join(MEMORY_TYPES)}, got {memory_type!r}")
        ts = data.get("timestamp", timestamp)
        if ts is None:
            ts = self.clock.now() if self.clock is not None else time.time()
        return {"memory_id": data.get("memory_id"), "user_id": str(data.get("user_id", user_id) or ""),
                "content": content.strip(), "memory_type": memory_type,
                "subject": str(data.get("subject") or ""),
                "source_session": str(data.get("source_session", source_session) or ""),
                "timestamp": float(ts), "source_ids": [str(s) for s in data.get("source_ids") or []]}

    def _insert(self, row: dict[str, Any], written: list[dict[str, Any]]) -> str:
        db = self.db
        dup = self._rows("WHERE user_id = ? AND memory_type = ? AND content = ? AND status = 'active'",
                         (row["user_id"], row["memory_type"], row["content"]))
        if dup:
            old = dup[0]
            sources = list(dict.fromkeys(old["source_ids"] + row["source_ids"]))
            strength = self.decay.reinforce(old["strength"]) if self.decay is not None else old["strength"]
            db.execute("UPDATE memories SET source_ids = ?, strength = ?, last_accessed = ? WHERE memory_id = ?",
                       (json.dumps(sources), strength, max(old["last_accessed"], row["timestamp"]),
                        old["memory_id"]))
            return old["memory_id"]
        if not row["memory_id"]:
            n = db.execute("SELECT COALESCE(MAX(seq), 0) + 1 FROM memories").fetchone()[0]
            key = "\x1f".join([row["user_id"], row["memory_type"], row["content"], repr(row["timestamp"]), str(n)])
            row["memory_id"] = "mem-" + hashlib.sha1(key.encode("utf-8")).hexdigest()[:16]
        elif db.execute("SELECT 1 FROM memories WHERE memory_id = ?", (row["memory_id"],)).fetchone():
            raise MemlabError(f"memory_id {row['memory_id']!r} already exists")
        supersedes: list[str] = []
        if row["subject"]:
            new = self.to_record({**row, "access_count": 0, "last_accessed": row["timestamp"],
                                  "strength": 1.0, "status": "active", "supersedes": [],
                                  "superseded_by": None})
            existing = [self.to_record(r) for r in self._rows(
                "WHERE user_id = ? AND subject = ? AND status = 'active' ORDER BY seq",
                (row["user_id"], row["subject"]))]
            for superseded in self._resolver.resolve(new, existing):
                db.execute("UPDATE memories SET status = 'outdated', superseded_by = ? WHERE memory_id = ?",
                           (row["memory_id"], superseded.id))
            supersedes = [str(i) for i in new.metadata.get("supersedes", [])]
        strength = self.decay.initial() if self.decay is not None else 1.0
        db.execute("INSERT INTO memories (memory_id, user_id, content, memory_type, subject, source_session, "
                   "timestamp, access_count, last_accessed, strength, status, supersedes, superseded_by, "
                   "source_ids) VALUES (?, ?, ?, ?, ?, ?, ?, 0, ?, ?, 'active', ?, NULL, ?)",
                   (row["memory_id"], row["user_id"], row["content"], row["memory_type"], row["subject"],
                    row["source_session"], row["timestamp"], row["timestamp"], strength,
                    json.dumps(supersedes), json.dumps(row["source_ids"])))
        written.append(row)
        return row["memory_id"]

    def delete(self, ids: Iterable[str]) -> list[str]:
        """Delete memories from both stores (unknown ids ignored); returns the deleted ids."""
        ids = [str(i) for i in ids]
        with self._lock:
            known = [i for i in ids if self.db.execute("SELECT 1 FROM memories WHERE memory_id = ?",
                                                          (i,)).fetchone()]
            if not known:
                return []
            self.db.execute("BEGIN IMMEDIATE")
            try:
                self.db.executemany("DELETE FROM memories WHERE memory_id = ?", [(i,) for i in known])
                self._store.delete(known)
                self.db.execute("COMMIT")
            except BaseException:
                self.db.execute("ROLLBACK")
                self.check_and_repair()  # vectors already deleted are rebuilt from the rows
                raise
            return known

    def clear(self) -> None:
        """Delete every memory (both stores)."""
        with self._lock:
            self.db.execute("BEGIN IMMEDIATE")
            try:
                self.db.execute("DELETE FROM memories")
                # restart the sequence so that a cleared memory numbers (and names) as a new one
                self.db.execute("DELETE FROM sqlite_sequence WHERE name = 'memories'")
                self._store.clear()
                self.db.execute("COMMIT")
            except BaseException:
                self.db.execute("ROLLBACK")
                self.check_and_repair()
                raise

    # -- recall ------------------------------------------------------------------------
    def search(self, query: str, k: int = 5, *, where: Where | None = None, now: float | None = None,
               include_outdated: bool = False, reinforce: bool = True) -> list[Hit]:
        """At most ``k`` memories for ``query``, best first (see the class docstring).

        ``where`` filters on ``FILTER_KEYS`` (e.g. ``{"user_id": "u1", "memory_type":
        "preference", "timestamp": {"$gte": t0}}``); outdated memories are left out
        unless ``include_outdated``. ``hit.components`` holds ``vector`` (similarity and
        its rank among the candidates) and ``long_term`` (final score, rank, retention).
        """
        if isinstance(k, bool) or not isinstance(k, int) or k < 0:
            raise MemlabError(f"k must be a non-negative int, got {k!r}")
        self._check_where(where)
        if k == 0 or not query.strip():
            return []
        with self._lock:
            if not len(self):
                return []
            t = self.resolve_now(now)
            vector = self._embedder.embed([query])[0]
            push = where if where and _where_keys(where) <= set(VECTOR_KEYS) else None
            n = max(k, self.CANDIDATES)
            while True:
                pairs = self._store.query(vector, n, where=push)
                found = {r["memory_id"]: r for r in self._rows_for([i for i, _ in pairs])}
                candidates = [(found[i], s, rank) for rank, (i, s) in enumerate(pairs, 1) if i in found
                              and s > 0.0 and (include_outdated or found[i]["status"] == "active")
                              and matches(self._view(found[i]), where)]
                if len(candidates) >= k or len(pairs) < n:
                    break
                n *= 2
            scored = []
            for row, sim, vrank in candidates:
                retention = (self.decay.weight(t, row["last_accessed"], row["strength"])
                             if self.decay is not None else 1.0)
                scored.append((sim * retention, row, sim, vrank, retention))
            scored.sort(key=lambda x: (-x[0], x[1]["seq"]))
            hits = []
            for rank, (score, row, sim, vrank, retention) in enumerate(scored[:k], 1):
                record = self.to_record(row)
                hits.append(Hit(memory_record=record, score=float(score), timestamp=record.timestamp,
                                rank=rank, components={
                                    "vector": {"score": float(sim), "rank": vrank},
                                    "long_term": {"score": float(score), "rank": rank,
                                                  "retention": float(retention)}}))
            if reinforce and hits:
                self.touch([h.id for h in hits], t)
            return hits

    def _rows_for(self, ids: list[str]) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for start in range(0, len(ids), 500):
            chunk = ids[start:start + 500]
            out += self._rows(f"WHERE memory_id IN ({', '.join('?' * len(chunk))})", chunk)
        return out

    def touch(self, ids: Iterable[str], now: float | None = None) -> None:
        """Record a recall of ``ids``: access_count + 1, last_accessed = now (never moves
        back), strength = ``decay.reinforce(strength)`` when a decay model is set."""
        with self._lock:
            t = self.resolve_now(now)
            for row in self._rows_for(list(dict.fromkeys(map(str, ids)))):
                strength = self.decay.reinforce(row["strength"]) if self.decay is not None else row["strength"]
                self.db.execute("UPDATE memories SET access_count = access_count + 1, last_accessed = ?, "
                                "strength = ? WHERE memory_id = ?",
                                (max(row["last_accessed"], t), strength, row["memory_id"]))

    def retention(self, memory_id: str, now: float | None = None) -> float:
        """``decay.weight(now, last_accessed, strength)`` of a memory (1.0 without decay)."""
        rows = self._rows("WHERE memory_id = ?", (str(memory_id),))
        if not rows:
            raise KeyError(f"no memory with id {memory_id!r}")
        if self.decay is None:
            return 1.0
        return self.decay.weight(self.resolve_now(now), rows[0]["last_accessed"], rows[0]["strength"])

    def collect_garbage(self, now: float | None = None) -> list[str]:
        """Delete (from both stores) every memory ``decay.should_forget`` at ``now``.

        ``should_forget(t, strength)`` with ``t = decay.elapsed(now, last_accessed)``;
        memories are examined oldest first. Without a decay model nothing is forgotten.
        Returns the deleted ids.
        """
        if self.decay is None:
            return []
        with self._lock:
            t = self.resolve_now(now)
            doomed = [r["memory_id"] for r in self._rows("ORDER BY seq")
                      if self.decay.should_forget(self.decay.elapsed(t, r["last_accessed"]), r["strength"])]
            return self.delete(doomed)
