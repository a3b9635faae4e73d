"""Recall in ``LongTermMemory``: cosine search weighted by decay, reinforcement on recall,
retention, and forgetting (``collect_garbage``)."""

from __future__ import annotations

from typing import Iterable

from ....base import ConfigError, MemlabError
from ....records import Hit
from ....retrieval.decay_retriever import REINFORCE_MODES
from ....filters import Where, matches
from .repository import VECTOR_KEYS, _where_keys


class DecaySearch:
    """``search``, ``touch``, ``retention``, ``collect_garbage``. Mixed into ``LongTermMemory``."""

    def search(self, query: str, k: int = 5, *, where: Where | None = None, now: float | None = None,
               include_outdated: bool = False, reinforce: str = "returned") -> list[Hit]:
        """At most ``k`` memories for ``query``, best first (see the class docstring).

        ``where`` filters on ``FILTER_KEYS`` (e.g. ``{"user_id": "u1", "memory_type":
        "preference", "timestamp": {"$gte": t0}}``); outdated memories are left out
        unless ``include_outdated``. ``hit.components`` holds ``vector`` (similarity and
        its rank among the candidates) and ``long_term`` (final score, rank, retention).
        ``reinforce``: ``"returned"`` recalls the memories returned, ``"none"`` changes
        nothing (the vocabulary of ``DecayRetriever`` and ``RetrievalStrategy``).
        """
        if isinstance(k, bool) or not isinstance(k, int) or k < 0:
            raise MemlabError(f"k must be a non-negative int, got {k!r}")
        if reinforce not in REINFORCE_MODES or not isinstance(reinforce, str):
            raise ConfigError(f"LongTermMemory.search parameter 'reinforce': expected one of "
                              f"{', '.join(map(repr, REINFORCE_MODES))}, got {reinforce!r}")
        self._check_where(where)
        if k == 0 or not query.strip():
            return []
        with self._lock:
            if not len(self):
                return []
            self._flush_vectors()
            t = self.resolve_now(now)
            push = where if where and _where_keys(where) <= set(VECTOR_KEYS) else None
            n = max(k, self.CANDIDATES)
            while True:
                pairs = [(h.id, h.score) for h in self._vectors.search(query, n, where=push)]
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
            if reinforce == "returned" and hits:
                self.touch([h.id for h in hits], t)
            return hits

    def touch(self, ids: Iterable[str], now: float | None = None) -> None:
        """Record a recall of ``ids``: access_count + 1, last_accessed = now (never moves
        back), strength = ``decay.reinforce(strength)`` when a decay model is set."""
        with self._lock:
            t = self.resolve_now(now)
            self._recalls = getattr(self, "_recalls", 0) + 1  # ``recalls``: what is read back moved
            for row in self._rows_for(list(dict.fromkeys(map(str, ids)))):
                strength, last = (self.decay.recalled(row["strength"], row["last_accessed"], t)
                                  if self.decay is not None else (row["strength"], max(row["last_accessed"], t)))
                self.db.execute("UPDATE memories SET access_count = access_count + 1, last_accessed = ?, "
                                "strength = ? WHERE memory_id = ?", (last, strength, row["memory_id"]))

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
            doomed = self.decay.forgotten(t, ((r["memory_id"], r["last_accessed"], r["strength"])
                                              for r in self._rows("ORDER BY seq")))
            return self.delete(doomed)
