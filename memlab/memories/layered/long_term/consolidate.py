"""Consolidation in ``LongTermMemory``: a merged memory that supersedes its originals, and
abstract memories whose evidence (the memories supporting them) is recorded.

Merging replaces: the originals become ``outdated`` (``superseded_by`` = the merged
memory), the merged memory ``supersedes`` them and keeps the union of their source turns.
Abstraction adds: the supporting memories stay active, and the abstraction's evidence is
kept in a side table (``memory_evidence``: one row per abstraction, its memory ids as a
JSON list) in the same SQLite database, so it travels with the memory (files, pickles).
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from typing import Any, Sequence

from ....base import MemlabError
from ....records import MEMORY_TYPES, MemoryRecord

_EVIDENCE_SCHEMA = "CREATE TABLE IF NOT EXISTS memory_evidence (memory_id TEXT PRIMARY KEY, evidence TEXT NOT NULL)"


class Consolidation:
    """``consolidate``, ``add_abstraction``, ``evidence``, ``abstractions``. Mixed into
    ``LongTermMemory`` (which provides the rows, the vector index and the lock)."""

    def consolidate(self, ids: Sequence[str], content: str, *, memory_type: str | None = None,
                    subject: str | None = None, timestamp: float | None = None) -> MemoryRecord:
        """Replace the active memories ``ids`` (two or more) by one memory with ``content``.

        The new memory's ``source_ids`` = the originals' source ids (first seen first),
        ``supersedes`` = ``ids``; ``memory_type`` defaults to the most common among the
        originals (ties: the first), ``subject`` to theirs when they all share one (else
        ""), ``timestamp`` to the newest original's, ``user_id`` and ``source_session`` to
        the newest original's. Originals become outdated, superseded by it. One
        transaction across SQLite and the vector index.
        """
        originals = self._active(ids, "consolidate")
        if len(originals) < 2:
            raise MemlabError(f"consolidate needs at least two memories, got {len(originals)}")
        subjects = {r["subject"] for r in originals}
        row = self._derived_row(originals, content, memory_type,
                                subject if subject is not None else (subjects.pop() if len(subjects) == 1 else ""),
                                timestamp)
        row["supersedes"] = [r["memory_id"] for r in originals]
        with self._lock:
            self._transaction(row, lambda db: db.executemany(
                "UPDATE memories SET status = 'outdated', superseded_by = ? WHERE memory_id = ?",
                [(row["memory_id"], r["memory_id"]) for r in originals]))
        return self.get(row["memory_id"])  # type: ignore[return-value,attr-defined]

    def add_abstraction(self, content: str, evidence: Sequence[str], *, memory_type: str | None = None,
                        subject: str = "", timestamp: float | None = None,
                        replaces: Sequence[str] = ()) -> MemoryRecord:
        """Store an abstract memory supported by the active memories ``evidence`` (two or more).

        They stay active; ``evidence(id)`` lists them. ``source_ids`` = their source ids,
        ``timestamp`` defaults to the newest one's, ``memory_type`` to their most common type.
        With a ``subject``, the active abstractions of the same user and subject are
        replaced: marked outdated, superseded by the new one; so are the active
        abstractions named in ``replaces``.
        """
        support = self._active(evidence, "add_abstraction")
        if len(support) < 2:
            raise MemlabError(f"an abstraction needs at least two supporting memories, got {len(support)}")
        row = self._derived_row(support, content, memory_type, subject, timestamp)
        ids = [r["memory_id"] for r in support]
        with self._lock:
            known = self.abstractions()
            unknown = [str(i) for i in replaces if str(i) not in known]
            if unknown:
                raise MemlabError(f"add_abstraction: {unknown[0]!r} is not an abstraction")
            replaced = [i for i in known if (subject and self._is_active_with(i, row))
                        or (i in {str(r) for r in replaces} and self._rows_for([i])[0]["status"] == "active")]
            row["supersedes"] = replaced

            def also(db: Any) -> None:
                db.execute("INSERT OR REPLACE INTO memory_evidence VALUES (?, ?)", (row["memory_id"], json.dumps(ids)))
                db.executemany("UPDATE memories SET status = 'outdated', superseded_by = ? WHERE memory_id = ?",
                               [(row["memory_id"], i) for i in replaced])

            self._transaction(row, also)
        return self.get(row["memory_id"])  # type: ignore[return-value,attr-defined]

    def evidence(self, memory_id: str) -> list[str]:
        """The memories supporting the abstraction ``memory_id`` ([] for any other memory)."""
        return self.abstractions().get(str(memory_id), [])

    def abstractions(self) -> dict[str, list[str]]:
        """Abstraction id -> evidence ids, for every abstraction still stored (oldest first)."""
        with self._lock:
            self.db.execute(_EVIDENCE_SCHEMA)  # type: ignore[attr-defined]
            rows = self.db.execute(  # type: ignore[attr-defined]
                "SELECT e.memory_id, e.evidence FROM memory_evidence e JOIN memories m "
                "ON m.memory_id = e.memory_id ORDER BY m.seq").fetchall()
        return {i: json.loads(ev) for i, ev in rows}

    def clear(self) -> None:
        super().clear()  # type: ignore[misc]
        with self._lock:
            self.db.execute(_EVIDENCE_SCHEMA)  # type: ignore[attr-defined]
            self.db.execute("DELETE FROM memory_evidence")  # type: ignore[attr-defined]

    # -- helpers ---------------------------------------------------------------------------
    def _is_active_with(self, memory_id: str, row: dict[str, Any]) -> bool:
        found = self._rows_for([memory_id])  # type: ignore[attr-defined]
        return bool(found) and found[0]["status"] == "active" and found[0]["subject"] == row["subject"] \
            and found[0]["user_id"] == row["user_id"]

    def _active(self, ids: Sequence[str], what: str) -> list[dict[str, Any]]:
        wanted = list(dict.fromkeys(str(i) for i in ids))
        rows = {r["memory_id"]: r for r in self._rows_for(wanted)}  # type: ignore[attr-defined]
        missing = [i for i in wanted if i not in rows]
        if missing:
            raise MemlabError(f"{what}: no memory with id {missing[0]!r}")
        outdated = [i for i in wanted if rows[i]["status"] != "active"]
        if outdated:
            raise MemlabError(f"{what}: memory {outdated[0]!r} is outdated")
        return sorted((rows[i] for i in wanted), key=lambda r: r["seq"])

    def _derived_row(self, parts: list[dict[str, Any]], content: str, memory_type: str | None,
                     subject: str, timestamp: float | None) -> dict[str, Any]:
        if not isinstance(content, str) or not content.strip():
            raise MemlabError(f"memory content must be a non-empty string, got {content!r}")
        kind = memory_type if memory_type is not None else Counter(r["memory_type"] for r in parts).most_common(1)[0][0]
        if kind not in MEMORY_TYPES:
            raise MemlabError(f"memory_type must be one of {', '.join(MEMORY_TYPES)}, got {kind!r}")
        newest = max(parts, key=lambda r: (r["timestamp"], r["seq"]))
        ts = float(timestamp) if timestamp is not None else float(newest["timestamp"])
        key = "\x1f".join(["derived", content.strip(), repr(ts)] + [r["memory_id"] for r in parts])
        return {"memory_id": "mem-" + hashlib.sha1(key.encode("utf-8")).hexdigest()[:16],
                "user_id": newest["user_id"], "content": content.strip(), "memory_type": kind,
                "subject": str(subject or ""), "source_session": newest["source_session"], "timestamp": ts,
                "source_ids": list(dict.fromkeys(s for r in parts for s in r["source_ids"]))}

    def _transaction(self, row: dict[str, Any], also: Any) -> None:
        db = self.db  # type: ignore[attr-defined]
        db.execute(_EVIDENCE_SCHEMA)
        if db.execute("SELECT 1 FROM memories WHERE memory_id = ?", (row["memory_id"],)).fetchone():
            raise MemlabError(f"memory_id {row['memory_id']!r} already exists")
        self._begin()  # type: ignore[attr-defined]
        try:
            db.execute("INSERT INTO memories (namespace, memory_id, user_id, content, memory_type, subject, "
                       "source_session, timestamp, access_count, last_accessed, strength, status, supersedes, "
                       "superseded_by, source_ids) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 0, ?, ?, 'active', ?, NULL, ?)",
                       (self.namespace, row["memory_id"], row["user_id"],  # type: ignore[attr-defined]
                        row["content"], row["memory_type"], row["subject"],
                        row["source_session"], row["timestamp"], row["timestamp"],
                        self.decay.initial() if self.decay is not None else 1.0,  # type: ignore[attr-defined]
                        json.dumps(row["supersedes"]), json.dumps(row["source_ids"])))
            also(db)
            self._index([row["memory_id"]])  # type: ignore[attr-defined]
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            try:
                self._unindex([row["memory_id"]])  # type: ignore[attr-defined]
            except Exception:  # the next check_and_repair deletes what is left
                pass
            raise
