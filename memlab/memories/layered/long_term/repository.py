"""The SQLite side of ``LongTermMemory``: schema, rows and records, the vector index (a
``VectorRetriever`` over the memory's vector store) kept in step with the rows
(``check_and_repair``), pickling and time."""

from __future__ import annotations

import json
import logging
import os
import sqlite3
import threading
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from ....base import ConfigError, MemlabError, did_you_mean
from ....records import MEMORY_TYPES, MemoryRecord, Role
from ....filters import Where, matches, validate_where
from ....sqlite import connect
from ....embeddings.hashing import HashingEmbedder
from ....storage.vector import NumpyVectorStore, VectorStore

log = logging.getLogger("memlab.memories.layered.long_term")

STATUSES = ("active", "outdated")
#: Keys a ``where`` filter may use (the table's columns).
FILTER_KEYS = ("memory_id", "user_id", "memory_type", "subject", "source_session", "timestamp",
               "status", "access_count", "last_accessed", "strength")
#: Keys that never change after a memory is written: a filter using only them is evaluated
#: inside the vector store (which also holds the others, as they were when written).
VECTOR_KEYS = ("user_id", "memory_type", "subject", "source_session", "timestamp")

_SCHEMA_TEMPLATE = """
CREATE TABLE IF NOT EXISTS memories (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    memory_id TEXT NOT NULL UNIQUE,
    user_id TEXT NOT NULL DEFAULT '',
    content TEXT NOT NULL,
    memory_type TEXT NOT NULL CHECK (memory_type IN ({types})),
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
# Added apart from the table so that files written before namespaces existed gain the column.
_NAMESPACE = ("ALTER TABLE memories ADD COLUMN namespace TEXT NOT NULL DEFAULT ''",
              "CREATE INDEX IF NOT EXISTS memories_namespace ON memories (namespace, seq)")
# Lookups made at every write (the exact-duplicate check) and every question (counts by
# status): without them each walks every row of the namespace.
_LOOKUPS = ("CREATE INDEX IF NOT EXISTS memories_content ON memories (namespace, content)",
            "CREATE INDEX IF NOT EXISTS memories_status ON memories (namespace, status)")
# the CHECK lists MEMORY_TYPES, so the table and the code agree on the memory types
_SCHEMA = _SCHEMA_TEMPLATE.format(types=", ".join(f"'{t}'" for t in MEMORY_TYPES))
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


class Repository:
    """Rows of the ``memories`` table as dicts and ``MemoryRecord``s, and the vector index
    that mirrors them: ``_vectors``, a ``VectorRetriever`` (embedder ``_embedder``, store
    ``_store``) holding each row as its record. Mixed into ``LongTermMemory``, which sets
    ``path``, ``clock``, ``_store``, ``_embedder``, ``_vectors``, ``_lock`` and ``_db``."""

    def _connect(self) -> sqlite3.Connection:
        target = ":memory:" if self.path is None else str(self.path)
        if self.path is not None:
            folder = os.path.dirname(os.path.abspath(target))
            if not os.path.isdir(folder):
                raise ConfigError(f"path {self.path!r}: folder {folder!r} does not exist")
        try:
            def setup(conn: sqlite3.Connection) -> set[str]:
                conn.executescript(_SCHEMA)
                columns = {r[1] for r in conn.execute("PRAGMA table_info(memories)")}
                if "namespace" not in columns:
                    try:
                        conn.execute(_NAMESPACE[0])
                    except sqlite3.OperationalError as exc:
                        # another process added the column between our look and our ALTER
                        if "duplicate column" not in str(exc):
                            raise
                conn.execute(_NAMESPACE[1])
                for statement in _LOOKUPS:
                    conn.execute(statement)
                return columns

            columns: set[str] = set()
            conn = connect(target, isolation_level=None, setup=lambda c: columns.update(setup(c)))
            missing = set(_COLUMNS) - columns
        except sqlite3.DatabaseError as exc:
            raise MemlabError(f"path {self.path!r} is not a usable SQLite file: {exc}") from exc
        if missing:
            conn.close()
            raise MemlabError(f"path {self.path!r}: table 'memories' lacks column(s) {sorted(missing)}")
        return conn

    def _begin(self) -> None:
        """Open a write transaction (and count it, see ``version``)."""
        self.db.execute("BEGIN IMMEDIATE")
        self._writes += 1

    @property
    def rewrites(self) -> tuple[int, int]:
        """Changes when a write may have changed or removed memories already stored: write
        transactions that were not pure appends (a batch of ``add_many`` that only inserted
        rows is one), and SQLite's ``data_version``. While it stays equal, the memories
        stored so far are as they were and new ones were only appended after them
        (``appended_after``), which lets an index keep up with the new rows alone."""
        return self._writes - getattr(self, "_appends", 0), int(self.db.execute("PRAGMA data_version").fetchone()[0])

    def appended_after(self, seq: int) -> tuple[list[MemoryRecord], int]:
        """The active memories stored after position ``seq`` (oldest first), and the last
        position (``seq`` when there are none); positions count the rows of this store."""
        rows = self._rows("WHERE seq > ? ORDER BY seq", (int(seq),))
        last = max((int(r["seq"]) for r in rows), default=int(seq))
        return [self.to_record(r) for r in rows if r["status"] == "active"], last

    def last_position(self) -> int:
        """The position of the newest row of this namespace (0 when empty)."""
        return int(self.db.execute("SELECT COALESCE(MAX(seq), 0) FROM memories WHERE namespace = ?",
                                   (self.namespace,)).fetchone()[0])

    @property
    def version(self) -> tuple[int, int]:
        """Changes when the set of memories or what they say may have changed: the count of
        this object's write transactions (adds, deletes, clears, consolidations; not recalls,
        which only move the access columns) and SQLite's ``data_version`` (commits by other
        connections). Equal versions mean the same memories, so an index built from them
        (``KeyedIndex``) need not be read again."""
        return self._writes, int(self.db.execute("PRAGMA data_version").fetchone()[0])

    @property
    def recalls(self) -> int:
        """How many recalls (``touch``: the access columns moved) this object has made. With
        ``version``, it changes whenever a memory read back may differ: equal ``version`` and
        ``recalls`` mean every memory reads as it did (``KeyedIndex`` keeps what it read)."""
        return getattr(self, "_recalls", 0)

    def get_many(self, ids: Sequence[str]) -> list[MemoryRecord]:
        """The memories ``ids`` of this namespace, in the order asked (unknown ids left out)."""
        rows = {r["memory_id"]: r for r in self._rows_for([str(i) for i in ids])}
        return [self.to_record(rows[str(i)]) for i in ids if str(i) in rows]

    @property
    def db(self) -> sqlite3.Connection:
        if self._db is None:
            raise MemlabError("LongTermMemory is closed")
        return self._db

    @property
    def store(self) -> VectorStore:
        with self._lock:
            self._flush_vectors()
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
        self._writes = getattr(self, "_writes", 0) + 1
        self._last_repair = self.check_and_repair()

    def close(self) -> None:
        db, self._db = getattr(self, "_db", None), None
        self._pending: list[list[dict[str, Any]]] = []  # a closed store takes no vectors
        if db is not None:
            db.close()
            self._store.close()

    # -- consistency -------------------------------------------------------------------
    def check_and_repair(self) -> RepairReport:
        """Make the vector store hold exactly one vector per row, from the current embedder."""
        with self._lock:
            self._flush_vectors()
            report = RepairReport()
            identity = self._embedder.identity()
            stored = self.db.execute("SELECT value FROM meta WHERE key = 'embedder'").fetchone()
            if stored is not None and stored[0] != identity:
                report.embedder_changed = True
                self._vectors.reset()
                self._store.clear()
            # a vector store may be shared by the namespaces of one file: only a vector whose
            # id is in no namespace is an orphan; only this namespace's rows are re-embedded
            rows = self.db.execute(_SELECT + " WHERE namespace = ? ORDER BY seq", (self.namespace,)).fetchall()
            row_ids = {r[0] for r in self.db.execute("SELECT memory_id FROM memories")}
            vector_ids = self._store.ids()
            report.deleted_vectors = [i for i in vector_ids if i not in row_ids]
            if report.deleted_vectors:
                # through the index for the vectors it holds, straight for those it never wrote
                self._store.delete([i for i in report.deleted_vectors if i not in self._vectors])
                self._unindex(report.deleted_vectors)
            # rows the index does not hold (no vector, or a vector without its record)
            missing = [self._row(r) for r in rows if r[1] not in self._vectors]
            report.reembedded = [r["memory_id"] for r in missing]
            for start in range(0, len(missing), 256):
                self._vectors.add([self.to_record(r) for r in missing[start:start + 256]])
            self.db.execute("INSERT OR REPLACE INTO meta VALUES ('embedder', ?)", (identity,))
            if report:
                log.warning("%s (path=%r)", report, self.path)
            return report

    def _index(self, ids: list[str]) -> None:
        """Put these rows (of this namespace, oldest first) into the vector index."""
        if ids:
            self._index_rows(sorted(self._rows_for(ids), key=lambda r: r["seq"]))

    def _index_rows(self, rows: list[dict[str, Any]]) -> None:
        """Put these rows (of this namespace, oldest first) into the vector index: now, or,
        when ``_deferred``, as one batch of ``_pending`` written by ``_flush_vectors``."""
        if not rows:
            return
        if self._deferred:
            self._pending.append(list(rows))
        else:
            self._vectors.add([self.to_record(r) for r in rows])

    @property
    def _deferred(self) -> bool:
        """Vectors of new rows wait until the vector index is first read (``search``,
        ``store``, ``check_and_repair``) only with the default parts exactly: an in-memory
        ``NumpyVectorStore`` (nobody else reads it) and the ``HashingEmbedder`` (local, it
        cannot fail on a text). A run that never searches by vector (``Retrieve`` with a
        ``retriever``) then never embeds; any other store or embedder is written inside
        the write transaction, as the class docstring says."""
        return type(self._store) is NumpyVectorStore and type(self._embedder) is HashingEmbedder

    def _flush_vectors(self) -> None:
        """Write the deferred vectors, batch by batch as they were written (the same calls
        to the vector index, only later)."""
        pending = self.__dict__.get("_pending")
        if pending:
            self._pending = []
            for rows in pending:
                self._vectors.add([self.to_record(r) for r in rows])

    def _unindex(self, ids: list[str]) -> None:
        """Drop ``ids`` from the vector index and from the deferred vectors."""
        drop = set(ids)
        pending = self.__dict__.get("_pending")
        if pending:
            self._pending = [kept for kept in ([r for r in rows if r["memory_id"] not in drop] for rows in pending)
                             if kept]
        self._vectors.remove(ids)

    # -- time --------------------------------------------------------------------------
    def resolve_now(self, now: float | None = None) -> float:
        if now is not None:
            return float(now)
        if self.clock is not None:
            return float(self.clock.now())
        row = self.db.execute("SELECT MAX(MAX(timestamp), MAX(last_accessed)) FROM memories WHERE namespace = ?",
                              (self.namespace,)).fetchone()
        return float(row[0]) if row and row[0] is not None else 0.0

    # -- rows and records ----------------------------------------------------------------
    @staticmethod
    def _row(values: Sequence[Any]) -> dict[str, Any]:
        row = dict(zip(_COLUMNS, values))
        # most memories supersede nothing: "[]" is read without the JSON parser
        row["supersedes"] = [] if row["supersedes"] == "[]" else json.loads(row["supersedes"])
        row["source_ids"] = [] if row["source_ids"] == "[]" else json.loads(row["source_ids"])
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
        """Rows of this namespace: ``sql`` is "WHERE ..." and/or "ORDER BY ..."."""
        if sql.startswith("WHERE "):
            sql = "WHERE namespace = ? AND " + sql[len("WHERE "):]
        else:
            sql = "WHERE namespace = ? " + sql
        return [self._row(r) for r in self.db.execute(f"{_SELECT} {sql}", (self.namespace, *args)).fetchall()]

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
        return int(self.db.execute("SELECT COUNT(*) FROM memories WHERE namespace = ?",
                                   (self.namespace,)).fetchone()[0])

    def count(self, status: str | None = None) -> int:
        if status is None:
            return len(self)
        return int(self.db.execute("SELECT COUNT(*) FROM memories WHERE namespace = ? AND status = ?",
                                   (self.namespace, status)).fetchone()[0])

    @staticmethod
    def _view(row: Mapping[str, Any]) -> dict[str, Any]:
        return {k: row[k] for k in FILTER_KEYS}

    @staticmethod
    def _check_where(where: Where | None) -> None:
        validate_where(where)
        for key in sorted(_where_keys(where or {})):
            if key not in FILTER_KEYS:
                raise ConfigError(did_you_mean(key, list(FILTER_KEYS), "long-term memory filter key"))

    def _rows_for(self, ids: list[str]) -> list[dict[str, Any]]:
        """The rows of ``ids`` in this namespace (each chunk of 500 ids in ``seq`` order).

        ``+namespace`` keeps SQLite from walking the namespace's index (every row of it,
        which it prefers from five ids on) instead of looking each id up."""
        out: list[dict[str, Any]] = []
        for start in range(0, len(ids), 500):
            chunk = ids[start:start + 500]
            rows = self.db.execute(f"{_SELECT} WHERE memory_id IN ({', '.join('?' * len(chunk))}) "
                                   f"AND +namespace = ? ORDER BY seq", (*chunk, self.namespace)).fetchall()
            out += [self._row(r) for r in rows]
        return out
