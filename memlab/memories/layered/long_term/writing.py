"""The write path of ``LongTermMemory``: one transaction per batch across SQLite and the
vector index, exact duplicates merged, conflicting memories (same subject) superseded."""

from __future__ import annotations

import hashlib
import json
import time
from typing import Any, Iterable, Mapping, Sequence

from ....base import MemlabError
from ....extraction import ExtractedMemory
from ....records import MEMORY_TYPES, MemoryRecord
from .repository import log


class WritePath:
    """``add``, ``add_many``, ``delete`` and ``clear``. Mixed into ``LongTermMemory``."""

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
            self._updated = False
            self._begin()
            try:
                for row in prepared:
                    out_ids.append(self._insert(row, written))
                # the rows as stored: built from what was inserted when no statement of this
                # batch changed a row afterwards (a merge or a supersession), else read back
                stored = ([self._written_row(r) for r in written] if not self._updated
                          else sorted(self._rows_for([r["memory_id"] for r in written]), key=lambda r: r["seq"]))
                self._index_rows(stored)
                db.execute("COMMIT")
                if not self._updated:  # rows inserted, none changed: ``rewrites`` stays
                    self._appends = getattr(self, "_appends", 0) + 1
            except BaseException:
                db.execute("ROLLBACK")
                try:
                    self._unindex([r["memory_id"] for r in written])
                except Exception:  # the next check_and_repair deletes what is left
                    log.exception("could not undo vector writes after a failed add")
                raise
            # what was just committed: the rows of this batch as indexed, others read again
            by_id = {r["memory_id"]: r for r in stored}
            return [self.to_record(by_id[i]) if i in by_id else self.get(i)  # type: ignore[misc]
                    for i in out_ids]

    @staticmethod
    def _written_row(row: dict[str, Any]) -> dict[str, Any]:
        """A row inserted by ``_insert`` as ``_rows`` reads it back (SQLite's types)."""
        return {"seq": row["seq"], "memory_id": row["memory_id"], "user_id": row["user_id"],
                "content": row["content"], "memory_type": row["memory_type"], "subject": row["subject"],
                "source_session": row["source_session"], "timestamp": row["timestamp"], "access_count": 0,
                "last_accessed": row["timestamp"], "strength": row["strength"], "status": "active",
                "supersedes": list(row["supersedes"]), "superseded_by": None,
                "source_ids": list(row["source_ids"])}

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
        dup = self._rows("WHERE content = ? AND user_id = ? AND memory_type = ? AND +status = 'active' ORDER BY seq",
                         (row["content"], row["user_id"], row["memory_type"]))  # +: by content's index
        if dup:
            old = dup[0]
            sources = list(dict.fromkeys(old["source_ids"] + row["source_ids"]))
            strength = self.decay.reinforce(old["strength"]) if self.decay is not None else old["strength"]
            self._updated = True
            db.execute("UPDATE memories SET source_ids = ?, strength = ?, last_accessed = ? WHERE memory_id = ?",
                       (json.dumps(sources), strength, max(old["last_accessed"], row["timestamp"]),
                        old["memory_id"]))
            return old["memory_id"]
        if not row["memory_id"]:
            n = db.execute("SELECT COALESCE(MAX(seq), 0) + 1 FROM memories WHERE namespace = ?",
                           (self.namespace,)).fetchone()[0]
            parts = [row["user_id"], row["memory_type"], row["content"], repr(row["timestamp"]), str(n)]
            # the default namespace keeps the ids it always had; another one names itself in them
            key = "\x1f".join(parts + ([self.namespace] if self.namespace else []))
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
                self._updated = True
                db.execute("UPDATE memories SET status = 'outdated', superseded_by = ? WHERE memory_id = ?",
                           (row["memory_id"], superseded.id))
            supersedes = [str(i) for i in new.metadata.get("supersedes", [])]
        strength = self.decay.initial() if self.decay is not None else 1.0
        cursor = db.execute("INSERT INTO memories (namespace, memory_id, user_id, content, memory_type, subject, "
                   "source_session, timestamp, access_count, last_accessed, strength, status, supersedes, "
                   "superseded_by, source_ids) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 0, ?, ?, 'active', ?, NULL, ?)",
                   (self.namespace, row["memory_id"], row["user_id"], row["content"], row["memory_type"],
                    row["subject"],
                    row["source_session"], row["timestamp"], row["timestamp"], strength,
                    json.dumps(supersedes), json.dumps(row["source_ids"])))
        # what the row holds, for ``_written_row`` (a REAL column reads back as a float; an id
        # given as another type than str is read back to learn how SQLite stored it)
        self._updated = self._updated or not isinstance(row["memory_id"], str)
        row.update(seq=cursor.lastrowid, strength=float(strength), supersedes=supersedes)
        written.append(row)
        return row["memory_id"]

    def delete(self, ids: Iterable[str]) -> list[str]:
        """Delete memories from both stores (unknown ids ignored); returns the deleted ids."""
        ids = [str(i) for i in ids]
        with self._lock:
            known = [i for i in ids if self.db.execute(
                "SELECT 1 FROM memories WHERE memory_id = ? AND namespace = ?", (i, self.namespace)).fetchone()]
            if not known:
                return []
            self._begin()
            try:
                self.db.executemany("DELETE FROM memories WHERE memory_id = ?", [(i,) for i in known])
                self._unindex(known)
                self.db.execute("COMMIT")
            except BaseException:
                self.db.execute("ROLLBACK")
                self.check_and_repair()  # vectors already deleted are rebuilt from the rows
                raise
            return known

    def clear(self) -> None:
        """Delete every memory of this namespace (both stores)."""
        with self._lock:
            ids = [r[0] for r in self.db.execute("SELECT memory_id FROM memories WHERE namespace = ?",
                                                 (self.namespace,))]
            self._begin()
            try:
                self.db.execute("DELETE FROM memories WHERE namespace = ?", (self.namespace,))
                if not self.db.execute("SELECT 1 FROM memories LIMIT 1").fetchone():
                    # restart the sequence so that a cleared memory numbers (and names) as a new one
                    self.db.execute("DELETE FROM sqlite_sequence WHERE name = 'memories'")
                self._unindex(ids)
                self.db.execute("COMMIT")
            except BaseException:
                self.db.execute("ROLLBACK")
                self.check_and_repair()
                raise
