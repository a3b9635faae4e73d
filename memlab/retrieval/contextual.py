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


class ContextualRetriever(WrapperRetriever):
    """Wraps ``retriever``; each record is indexed under its context, returned as itself.

    Neighbours of a record are the ``before`` records added just before it and the
    ``after`` records added just after it, in insertion order, counting only records of
    the same session (``metadata["session_id"]``; records without one form one session)
    when ``same_session``. The index text of a record ``r`` is the lines::

        content(r) repeated own_weight times
        content(n) repeated neighbour_weight times, for each neighbour n in order
        format_date(r.timestamp)                      if date

    so with BM25 a term's frequency counts own text ``own_weight`` times and a
    neighbour's ``neighbour_weight`` times. Causality: when a record arrives, only
    records already added can be its neighbours, and the records whose neighbourhood it
    joins (the ``before`` ones preceding it, whose "after" side it fills) are re-indexed
    then; a removed record likewise re-indexes its old neighbours. At any moment every
    index text is made of records present in the retriever.

    ``hit.components["contextual"]`` holds score and rank; the wrapped retriever's
    components are kept. ``index_text(id)`` shows what a record is indexed under.
    """

    name = "contextual"

    constraints = {
        "before": Param(int, ge=0),
        "after": Param(int, ge=0),
        "own_weight": Param(int, ge=1),
        "neighbour_weight": Param(int, ge=0),
        "date": Param(bool),
        "same_session": Param(bool),
    }

    def __init__(self, retriever: Retriever, before: int = 1, after: int = 1, own_weight: int = 2,
                 neighbour_weight: int = 1, date: bool = True, same_session: bool = True):
        super().__init__()
        self.retriever = retriever
        self.before = before
        self.after = after
        self.own_weight = own_weight
        self.neighbour_weight = neighbour_weight
        self.date = date
        self.same_session = same_session
        self._order_ids: list[str] = []
        self._texts: dict[str, str] = {}
        self._on_params_changed()

    def _on_params_changed(self) -> None:
        self._sync([self.retriever])
        if self._records:  # a changed setting or wrapped retriever: every index text is rebuilt
            self._texts = {}
            self._reindex(list(self._order_ids))

    # -- index texts -------------------------------------------------------------------
    def _session(self, id: str) -> object:
        return self._records[id].metadata.get("session_id") if self.same_session else None

    def _neighbours(self, pos: int) -> tuple[list[str], list[str]]:
        ids, session = self._order_ids, self._session(self._order_ids[pos])
        prev, nxt = [], []
        j = pos - 1
        while len(prev) < self.before and j >= 0:
            if self._session(ids[j]) == session:
                prev.append(ids[j])
            j -= 1
        j = pos + 1
        while len(nxt) < self.after and j < len(ids):
            if self._session(ids[j]) == session:
                nxt.append(ids[j])
            j += 1
        return prev[::-1], nxt

    def _text(self, pos: int) -> str:
        record = self._records[self._order_ids[pos]]
        prev, nxt = self._neighbours(pos)
        lines = [record.content] * self.own_weight
        for n in prev + nxt:
            lines.extend([self._records[n].content] * self.neighbour_weight)
        if self.date:
            lines.append(format_date(record.timestamp))
        return "\n".join(lines)

    def index_text(self, id: str) -> str:
        """The text ``id`` is currently indexed under in the wrapped retriever."""
        try:
            return self._texts[str(id)]
        except KeyError:
            raise KeyError(f"ContextualRetriever has no record with id {id!r}") from None

    def _affected(self, positions: set[int]) -> set[int]:
        """``positions`` and every position within reach of them (either side)."""
        n, reach = len(self._order_ids), max(self.before, self.after)
        out: set[int] = set()
        for p in positions:
            lo = p
            # walk out far enough to pass `reach` same-session records on each side
            found, j = 0, p - 1
            while j >= 0 and found < reach:
                if self._session(self._order_ids[j]) == self._session(self._order_ids[p]):
                    found += 1
                    lo = j
                j -= 1
            hi, found, j = p, 0, p + 1
            while j < n and found < reach:
                if self._session(self._order_ids[j]) == self._session(self._order_ids[p]):
                    found += 1
                    hi = j
                j += 1
            out.update(range(lo, hi + 1))
        return out

    def _positions(self) -> dict[str, int]:
        """Record id -> position in ``_order_ids``, extended as the list grows (rebuilding it
        at every append made indexing quadratic); reset whenever the list is replaced."""
        pos = self.__dict__.get("_pos_cache")
        if pos is None or len(pos) > len(self._order_ids):
            pos = self.__dict__["_pos_cache"] = {}
        order = self._order_ids
        for p in range(len(pos), len(order)):
            pos[order[p]] = p
        return pos

    def _reindex(self, ids: list[str]) -> None:
        """Rebuild the index texts of ``ids``; re-add to the wrapped retriever those that changed."""
        where = self._positions()
        changed = []
        for i in ids:
            text = self._text(where[i])
            if self._texts.get(i) != text or i not in self.retriever:
                self._texts[i] = text
                r = self._records[i]
                changed.append(MemoryRecord(role=r.role, content=text, id=r.id, timestamp=r.timestamp,
                                            metadata=r.metadata, tool_calls=r.tool_calls))
        if changed:
            self.retriever.add(changed)

    # -- Retriever hooks ---------------------------------------------------------------
    def _add(self, records: list[MemoryRecord]) -> None:
        start = len(self._order_ids)
        self._order_ids.extend(r.id for r in records)
        touched = self._affected(set(range(start, len(self._order_ids))))
        self._reindex([self._order_ids[p] for p in sorted(touched)])

    def _adopted(self, records: list[MemoryRecord]) -> None:
        # records the wrapped retriever already held (indexed raw): index them in context
        self._order_ids.extend(r.id for r in records)

    def _remove(self, ids: list[str]) -> None:
        gone = set(ids)
        where = self._positions()
        around = self._affected({where[i] for i in ids})
        neighbours = [self._order_ids[p] for p in sorted(around) if self._order_ids[p] not in gone]
        self.retriever.remove(ids)
        self._order_ids = [i for i in self._order_ids if i not in gone]
        self.__dict__["_pos_cache"] = None
        for i in ids:
            self._texts.pop(i, None)
        self._reindex(neighbours)  # index texts come from _order_ids, which no longer has them

    def _clear(self) -> None:
        self.retriever.reset()
        self._order_ids = []
        self.__dict__["_pos_cache"] = None
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
