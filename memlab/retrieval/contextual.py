"""Contextual indexing: a turn is indexed with its neighbours and its date, returned alone.

A dialogue turn is often unintelligible on its own ("Yes, last Tuesday!"): the words a
question shares with it are in the turn before or after. ``ContextualRetriever`` indexes
each record in the wrapped retriever under an *index text* built from the record, its
neighbours in the same session and its date, while search still returns the record
itself. The index is causal: a record's index text holds only records added so far, and
is rebuilt (re-indexed in the wrapped retriever) when a neighbour arrives or leaves.
"""

from __future__ import annotations

import datetime as _dt

from ..base import Param
from ..records import Hit, MemoryRecord
from .base import Retriever, WrapperRetriever
from ..filters import Where


def format_date(timestamp: float) -> str:
    """A timestamp's UTC calendar date as words: ``8 May 2023`` (day without a leading zero)."""
    d = _dt.datetime.fromtimestamp(float(timestamp), tz=_dt.timezone.utc)
    return f"{d.day} {d.strftime('%B')} {d.year}"


class _Alone:
    """The session key of a record whose session cannot be a dict key or equals nothing, not
    even itself (NaN): such a record shares no session, exactly as ``==`` decides it."""

    __slots__ = ()


class ContextualRetriever(WrapperRetriever):
    """Wraps ``retriever``; each record is indexed under its context, returned as itself.

    Neighbours of a record are the ``before`` records added just before it and the
    ``after`` records added just after it, in insertion order, counting only records of
    the same session (``metadata["session_id"]``, read when the record is added; records
    without one form one session) when ``same_session``. The index text of a record ``r``
    is the lines::

        content(r) repeated own_weight times
        content(n) repeated neighbour_weight times, for each neighbour n in order
        format_date(r.timestamp)                      if date

    so with BM25 a term's frequency counts own text ``own_weight`` times and a
    neighbour's ``neighbour_weight`` times. ``neighbour_words`` (None: whole) keeps only a
    neighbour's first ``neighbour_words`` whitespace-separated words (joined by single
    spaces), so that long neighbours (messages of hundreds of words) do not outweigh the
    record's own text; the record's own content is never cut. Causality: when a record arrives, only
    records already added can be its neighbours, and the records whose neighbourhood it
    joins (the ``after`` ones preceding it in its session, whose "after" side it fills) are
    re-indexed then; a removed record likewise re-indexes its old neighbours. At any moment
    every index text is made of records present in the retriever.

    Cost: each session is a doubly linked list of its records in insertion order (``_prev``,
    ``_next``, ``_tail``), so with B = ``before`` and A = ``after`` a neighbour lookup is
    O(B + A), an append builds O(1 + A) index texts of O(B + A) records each, and removing
    r records rebuilds O(r (A + B)) -- none of it depends on the number of records held
    (scanning the insertion order for same-session records cost O(N) at every session's
    first turns: quadratic over a dialogue of many sessions).

    ``hit.components["contextual"]`` holds score and rank; the wrapped retriever's
    components are kept. ``index_text(id)`` shows what a record is indexed under.
    """

    name = "contextual"

    constraints = {
        "before": Param(int, ge=0),
        "after": Param(int, ge=0),
        "own_weight": Param(int, ge=1),
        "neighbour_weight": Param(int, ge=0),
        "neighbour_words": Param(int, ge=1, none=True),
        "date": Param(bool),
        "same_session": Param(bool),
    }

    def __init__(self, retriever: Retriever, before: int = 1, after: int = 1, own_weight: int = 2,
                 neighbour_weight: int = 1, date: bool = True, same_session: bool = True,
                 neighbour_words: int | None = None):
        super().__init__()
        self.retriever = retriever
        self.before = before
        self.after = after
        self.own_weight = own_weight
        self.neighbour_weight = neighbour_weight
        self.neighbour_words = neighbour_words
        self.date = date
        self.same_session = same_session
        self._texts: dict[str, str] = {}
        self._clear_links()
        self._on_params_changed()

    def _on_params_changed(self) -> None:
        self._sync([self.retriever])
        # a changed ``same_session`` regroups the records, and records adopted from a filled
        # wrapped retriever join their sessions: the lists are rebuilt in insertion order
        self._clear_links()
        for record in self._records.values():
            self._link(record)
        if self._records:  # a changed setting or wrapped retriever: every index text is rebuilt
            self._texts = {}
            self._reindex(list(self._records))

    # -- sessions as linked lists -------------------------------------------------------
    # ``self._records`` (the base class's) is in insertion order: re-adding an id removes it
    # first, so a record always joins the tail of its session's list, and following the links
    # visits a session's records in insertion order.
    def _clear_links(self) -> None:
        self._prev: dict[str, str | None] = {}  # id -> the record before it in its session
        self._next: dict[str, str | None] = {}  # id -> the record after it in its session
        self._tail: dict[object, str] = {}      # session key -> its last record
        self._key: dict[str, object] = {}       # id -> its session key
        self._unhashable: list[tuple[object, _Alone]] = []  # (session value, its key)

    def _session_key(self, record: MemoryRecord) -> object:
        """What decides "same session" as a dict key: equal session values give the same key.

        A hashable value is its own key (dict lookup agrees with ``==`` for values whose
        ``__eq__`` and ``__hash__`` agree, as the built-in ones do); an unhashable one gets a
        key shared with the values ``==`` to it (a linear search over the few unhashable
        sessions seen); a value not equal to itself (NaN) a key of its own.
        """
        if not self.same_session:
            return None
        value = record.metadata.get("session_id")
        try:
            hash(value)
        except TypeError:
            for seen, key in self._unhashable:
                if seen == value:
                    return key
            key = _Alone()
            self._unhashable.append((value, key))
            return key
        return value if value == value else _Alone()

    def _link(self, record: MemoryRecord) -> None:
        """Append ``record`` at the tail of its session's list: O(1)."""
        key = self._session_key(record)
        tail = self._tail.get(key)
        self._key[record.id] = key
        self._prev[record.id] = tail
        self._next[record.id] = None
        if tail is not None:
            self._next[tail] = record.id
        self._tail[key] = record.id

    def _unlink(self, id: str) -> None:
        """Take ``id`` out of its session's list, joining its neighbours: O(1)."""
        before, after = self._prev.pop(id), self._next.pop(id)
        key = self._key.pop(id)
        if before is not None:
            self._next[before] = after
        if after is not None:
            self._prev[after] = before
        elif before is not None:
            self._tail[key] = before
        else:
            del self._tail[key]

    def _walk(self, id: str, links: dict[str, str | None], n: int) -> list[str]:
        """Up to ``n`` records following ``links`` from ``id`` (nearest first): O(n)."""
        out: list[str] = []
        j = links[id]
        while j is not None and len(out) < n:
            out.append(j)
            j = links[j]
        return out

    # -- index texts -------------------------------------------------------------------
    def _neighbours(self, id: str) -> tuple[list[str], list[str]]:
        """(the ``before`` records preceding ``id`` in its session, oldest first; the ``after``
        records following it): O(before + after)."""
        return self._walk(id, self._prev, self.before)[::-1], self._walk(id, self._next, self.after)

    def _text(self, id: str) -> str:
        record = self._records[id]
        prev, nxt = self._neighbours(id)
        lines = [record.content] * self.own_weight
        cap = self.neighbour_words
        for n in prev + nxt:
            text = self._records[n].content
            if cap is not None:
                words = text.split()
                if len(words) > cap:
                    text = " ".join(words[:cap])
            lines.extend([text] * self.neighbour_weight)
        if self.date:
            lines.append(format_date(record.timestamp))
        return "\n".join(lines)

    def index_text(self, id: str) -> str:
        """The text ``id`` is currently indexed under in the wrapped retriever."""
        try:
            return self._texts[str(id)]
        except KeyError:
            raise KeyError(f"ContextualRetriever has no record with id {id!r}") from None

    def _reindex(self, ids: list[str]) -> None:
        """Rebuild the index texts of ``ids`` (in insertion order); re-add to the wrapped
        retriever, in that order, those that changed."""
        changed = []
        for i in ids:
            text = self._text(i)
            if self._texts.get(i) != text or i not in self.retriever:
                self._texts[i] = text
                r = self._records[i]
                changed.append(MemoryRecord(role=r.role, content=text, id=r.id, timestamp=r.timestamp,
                                            metadata=r.metadata, tool_calls=r.tool_calls))
        if changed:
            self.retriever.add(changed)

    def _in_order(self, ids: set[str]) -> list[str]:
        """``ids`` in insertion order (the base class's positions), as the wrapped retriever must
        receive them: re-adding moves a record to its end, which breaks its score ties."""
        return sorted(ids, key=self._position.__getitem__)

    # -- Retriever hooks ---------------------------------------------------------------
    def _add(self, records: list[MemoryRecord]) -> None:
        # A record's index text changes only when one joins its neighbourhood, and a new record
        # joins only the "after" side of the ``after`` records preceding it in its session
        # (it is the tail): those and the new records are all that can need (re)indexing.
        for r in records:
            self._link(r)
        touched = {r.id for r in records}
        for r in records:
            touched.update(self._walk(r.id, self._prev, self.after))
        self._reindex(self._in_order(touched))

    def _remove(self, ids: list[str]) -> None:
        # Record y's text changes only if a removed record g was in its window: y is then one
        # of the ``after`` records preceding g or of the ``before`` records following g in the
        # session as it stands now (removed ones counted, as they hold window places now).
        gone = set(ids)
        around: set[str] = set()
        for g in ids:
            around.update(self._walk(g, self._prev, self.after))
            around.update(self._walk(g, self._next, self.before))
        neighbours = self._in_order(around - gone)
        self.retriever.remove(ids)
        for i in ids:
            self._unlink(i)
            self._texts.pop(i, None)
        self._reindex(neighbours)  # the links no longer hold the removed records

    def _clear(self) -> None:
        self.retriever.reset()
        self._clear_links()
        self._texts = {}

    def search(self, query: str, k: int = 5, *, where: Where | None = None,
               now: float | None = None) -> list[Hit]:
        k = self._check_search(k, where)
        if k == 0 or not self._records:
            return []
        inner = [h for h in self.retriever.search(query, k, where=where, now=now) if h.id in self._records]
        ranked = self._order([(h.id, h.score) for h in inner])[:k]
        found = {h.id: h for h in inner}
        return self._hits(ranked, [found[i].components for i, _ in ranked])
