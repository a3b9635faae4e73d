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
again only when ``LongTermMemory.version`` moved (a write, here or by another connection),
and only the new ones when the writes since the last sync were appends
(``LongTermMemory.rewrites`` unchanged) that change no unit already indexed -- a new event
whose turn already has a fact indexed alone, or a new fact of a turn whose event is already
indexed, changes an indexed key, and the index is rebuilt. The units a search returns are
as stored now, so their access columns are current: read from the store, and read again
after any write or recall (``LongTermMemory.version`` and ``recalls``). The retriever's
ranking of the last search is reused when the same search (query, depth, filter, time) is
asked again of the same index (the replay asks a probe's query again for deeper lists),
unless a search of the retriever changes its state (``Capabilities.asking_changes_nothing``);
it is searched at ``Retriever.search_depth`` of the depth asked, so deeper requests that
the retriever answers from the same depth are served by the same ranking's prefix.

A ``where`` filter applies to the units (their long-term columns in metadata): a fact
folded into its turn's key is found only through that turn, so ``{"memory_type":
"preference"}`` matches only preferences indexed as units of their own.
"""

from __future__ import annotations

import json
from typing import Any

from ...capabilities import capabilities_of
from ...filters import Where
from ...records import Hit, MemoryRecord
from ...retrieval.base import Retriever
from .long_term import LongTermMemory

EVENT_TYPE = "event_summary"


def _units(records: list[MemoryRecord], events: dict[str, str] | None = None) -> list[tuple[MemoryRecord, str]]:
    """(unit, key) for the active memories ``records`` (oldest first): see the module docstring.
    ``events``: turn id -> event id, when the events are not all among ``records``."""
    if events is None:
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
        self._rewrites: tuple[int, int] | None = None  # long_term.rewrites at the last sync
        self._last = 0  # the position of the newest memory read
        self._events: dict[str, str] = {}  # turn id -> the id of its event (a unit)
        self._loose: set[str] = set()  # turn ids of facts indexed as units of their own
        self._ranked: tuple[Any, list[Hit]] | None = None  # the last search and its ranking
        self._read: tuple[Any, dict[str, MemoryRecord]] | None = None  # memories read at a state (``_fresh``)
        # read once: the retriever is this index's own part, changed only through its owner,
        # which then builds a new index (``Retrieve._on_params_changed``)
        self._repeatable = capabilities_of(retriever).asking_changes_nothing

    def sync(self, long_term: LongTermMemory) -> None:
        version = long_term.version
        if self._synced is not None and self._synced[0] is long_term and self._synced[1] == version:
            return
        rewrites = long_term.rewrites
        if not (self._synced is not None and self._synced[0] is long_term and self._rewrites == rewrites
                and len(self.retriever) == len(self._keys) and self._append(long_term)):
            self._rebuild(long_term)
        self._synced, self._rewrites = (long_term, version), rewrites

    def _rebuild(self, long_term: LongTermMemory) -> None:
        """Bring the index to the current memories: the full read."""
        self._last = long_term.last_position()
        wanted = _units(long_term.records(include_outdated=False))
        keys = {u.id: key for u, key in wanted}
        stale = (len(self.retriever) != len(self._keys)
                 or any(keys.get(i) != key for i, key in self._keys.items()))
        if stale:
            self.retriever.reset()
            self._keys = {}
        self._index([(u, key) for u, key in wanted if u.id not in self._keys])
        self._units = {u.id: u for u, _ in wanted}
        self._events, self._loose = {}, set()
        for u, _ in wanted:
            self._note(u)

    def _note(self, unit: MemoryRecord) -> None:
        if unit.metadata.get("memory_type") == EVENT_TYPE and len(unit.source_ids) == 1:
            self._events[unit.source_ids[0]] = unit.id
        elif unit.metadata.get("memory_type") != EVENT_TYPE:
            self._loose.update(unit.source_ids)

    def _append(self, long_term: LongTermMemory) -> bool:
        """Index the memories appended since the last sync; False (nothing done) when one of
        them changes a unit already indexed (module docstring): the caller rebuilds."""
        new, last = long_term.appended_after(self._last)
        events = dict(self._events)
        for r in new:
            if r.metadata.get("memory_type") == EVENT_TYPE and len(r.source_ids) == 1:
                if r.source_ids[0] in self._loose or r.source_ids[0] in events:
                    return False
                events[r.source_ids[0]] = r.id
        pairs = _units(new, events)
        if any(u.id in self._keys for u, _ in pairs):
            return False
        wanted = {u.id for u, _ in pairs}
        if any(events[s] not in wanted for r in new if r.id not in wanted for s in r.source_ids if s in events):
            return False  # a new fact of a turn whose event is already indexed
        self._index(pairs)
        for u, _ in pairs:
            self._units[u.id] = u
            self._note(u)
        self._last = last
        return True

    def _index(self, new: list[tuple[MemoryRecord, str]]) -> None:
        if new:
            self.retriever.add([MemoryRecord(role=u.role, content=key, id=u.id, timestamp=u.timestamp,
                                             agent_id=u.agent_id,
                                             metadata={**u.metadata, "session_id": u.metadata.get("source_session")})
                                for u, key in new])
            self._keys.update((u.id, key) for u, key in new)

    def _fresh(self, long_term: LongTermMemory, ids: list[str]) -> dict[str, MemoryRecord]:
        """The memories ``ids`` as stored now: read once while nothing could change them
        (``version`` and ``recalls`` unchanged; the replay's deeper lists of one probe read
        each memory once), read again after any write or recall."""
        # ``search`` has just synced: ``_synced`` holds this store and its version
        state = (self._synced, long_term.recalls)
        if self._read is None or self._read[0] != state:
            self._read = (state, {})
        known = self._read[1]
        missing = [i for i in ids if i not in known]
        if missing:
            known.update((r.id, r) for r in long_term.get_many(missing))
        return known

    def key(self, id: str) -> str:
        """The text memory ``id`` is indexed under (before any contextual expansion)."""
        return self._keys[str(id)]

    def search(self, long_term: LongTermMemory, query: str, k: int, *, where: Where | None = None,
               now: float | None = None) -> list[Hit]:
        """The retriever's best ``k`` units as long-term memories (their own content, not the key)."""
        self.sync(long_term)
        if k == 0 or not query.strip() or not self._units:
            return []
        # the same search of the same index ranks the same, unless searching changes state;
        # searched at the retriever's own depth for k, so that a deeper request that the
        # retriever answers from the same depth (the replay's k, 2k, 4k ... within a hybrid's
        # candidates) is the same ranking, served by its prefix
        depth = self.retriever.search_depth(k)
        asked = (query, depth, json.dumps(where, sort_keys=True, default=str), now, self._synced)
        if self._ranked is not None and self._ranked[0] == asked:
            hits = self._ranked[1][:k]
        else:
            hits = self.retriever.search(query, depth, where=where, now=now)
            self._ranked = (asked, hits) if self._repeatable else None
            hits = hits[:k]
        fresh = self._fresh(long_term, [h.id for h in hits])
        out = []
        for h in hits:
            unit = fresh.get(h.id, self._units[h.id])
            out.append(Hit(memory_record=unit, score=float(h.score), timestamp=unit.timestamp,
                           rank=len(out) + 1, components=dict(h.components)))  # its own map: a ranking may be served twice
        return out
