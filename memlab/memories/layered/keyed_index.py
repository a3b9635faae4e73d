"""``KeyedIndex``: long-term memory searched by a ``Retriever`` over fact-augmented keys.

LongTermMemory's own search is cosine over each memory's content. A stronger search (the
contextual BM25 + e5 hybrid of the built-ins) needs the memories in a ``Retriever``; this
keeps one in step with the long-term memory, and indexes each turn under a richer key:

- an *event* is the raw turn kept in long-term memory (``Update(keep_events=True)``): an
  active ``event_summary`` memory whose ``source_ids`` are exactly one turn ``[s]``;
- a fact or preference whose ``source_ids`` include a turn ``s`` that has an event is
  not indexed on its own: its content is appended to that event's key (fact-augmented
  keys, as in LongMemEval), so the unit found and returned stays the turn;
- every other active memory (chunk summaries, abstractions, facts of turns without an
  event) is a unit of its own, keyed by its content.

The key of a unit is its content, then the contents of its facts (oldest first), one per
line. Units enter the retriever in long-term order (``seq``), with
``metadata["session_id"]`` = their ``source_session``, so a ``ContextualRetriever`` sees
the dialogue's neighbours. ``sync`` runs before each search: new units are added; when a
unit left (outdated, deleted, cleared) or its key changed, the index is rebuilt, so it
always equals what a fresh index of the current memories would be. The memories are read
again only when ``LongTermMemory.version`` moved (a write, here or by another connection);
the units a search returns are read fresh, so their access columns are current.

A ``where`` filter applies to the units (their long-term columns in metadata): a fact
folded into its turn's key is found only through that turn, so ``{"memory_type":
"preference"}`` matches only preferences indexed as units of their own.
"""

from __future__ import annotations

from ...filters import Where
from ...records import Hit, MemoryRecord
from ...retrieval.base import Retriever
from .long_term import LongTermMemory

EVENT_TYPE = "event_summary"


def _units(records: list[MemoryRecord]) -> list[tuple[MemoryRecord, str]]:
    """(unit, key) for the active memories ``records`` (oldest first): see the module docstring."""
    events = {r.source_ids[0]: r.id for r in records
              if r.metadata.get("memory_type") == EVENT_TYPE and len(r.source_ids) == 1}
    extra: dict[str, list[str]] = {}
    units = []
    for r in records:
        if r.metadata.get("memory_type") != EVENT_TYPE:
            owners = list(dict.fromkeys(events[s] for s in r.source_ids if s in events))
            if owners:
                for owner in owners:
                    extra.setdefault(owner, []).append(r.content)
                continue
        units.append(r)
    return [(u, "\n".join([u.content] + extra.get(u.id, []))) for u in units]


class KeyedIndex:
    """A ``retriever`` kept in step with a ``LongTermMemory`` (see the module docstring)."""

    def __init__(self, retriever: Retriever):
        self.retriever = retriever
        self._keys: dict[str, str] = {}
        self._units: dict[str, MemoryRecord] = {}
        self._synced: tuple[LongTermMemory, tuple[int, int]] | None = None

    def sync(self, long_term: LongTermMemory) -> None:
        version = long_term.version
        if self._synced is not None and self._synced[0] is long_term and self._synced[1] == version:
            return
        self._synced = (long_term, version)
        wanted = _units(long_term.records(include_outdated=False))
        keys = {u.id: key for u, key in wanted}
        stale = (len(self.retriever) != len(self._keys)
                 or any(keys.get(i) != key for i, key in self._keys.items()))
        if stale:
            self.retriever.reset()
            self._keys = {}
        new = [(u, key) for u, key in wanted if u.id not in self._keys]
        if new:
            self.retriever.add([MemoryRecord(role=u.role, content=key, id=u.id, timestamp=u.timestamp,
                                             agent_id=u.agent_id,
                                             metadata={**u.metadata, "session_id": u.metadata.get("source_session")})
                                for u, key in new])
            self._keys.update((u.id, key) for u, key in new)
        self._units = {u.id: u for u, _ in wanted}

    def key(self, id: str) -> str:
        """The text memory ``id`` is indexed under (before any contextual expansion)."""
        return self._keys[str(id)]

    def search(self, long_term: LongTermMemory, query: str, k: int, *, where: Where | None = None,
               now: float | None = None) -> list[Hit]:
        """The retriever's best ``k`` units as long-term memories (their own content, not the key)."""
        self.sync(long_term)
        if k == 0 or not query.strip() or not self._units:
            return []
        hits = self.retriever.search(query, k, where=where, now=now)
        fresh = {r.id: r for r in long_term.get_many([h.id for h in hits])}
        out = []
        for h in hits:
            unit = fresh.get(h.id, self._units[h.id])
            out.append(Hit(memory_record=unit, score=float(h.score), timestamp=unit.timestamp,
                           rank=len(out) + 1, components=h.components))
        return out
