"""The retriever interface shared by BM25, vector, hybrid and wrapper retrievers.

Contract of ``search(query, k, *, where, now)``:

- at most ``k`` hits, best first, ``rank`` 1..n, scores non-increasing;
- ties broken by insertion order, the earlier-added record first (re-adding an id
  moves it to the end, like an upsert into a vector store);
- ``hit.components[retriever.name] == {"score": s, "rank": r}`` (wrappers keep the
  components of the retriever they wrap and add their own);
- ``where`` is a filter (see ``memlab.filters``) evaluated against
  ``filter_view(record)``: scalar metadata plus ``role``, ``agent_id``, ``timestamp``
  and ``id``, the built-ins winning; the same meaning on every retriever;
- an empty index, an empty query, or ``k == 0`` give ``[]``, never an exception.

Every retriever keeps the records it was given (by reference) for ``get_record``.
"""

from __future__ import annotations

import dataclasses
from abc import abstractmethod
from collections.abc import Iterable, Sequence
from typing import Any, ClassVar

from ..base import Component, MemlabError, Param
from ..capabilities import Capabilities, any_part
from ..records import Hit, MemoryRecord
from ..filters import Where, validate_where


class Retriever(Component):
    """Base class: record bookkeeping here, indexing in ``_add``/``_remove``/``_clear``."""

    #: Short label used as the key of ``Hit.components``.
    name: ClassVar[str] = "retriever"

    #: Declared once per class: the search ranks exactly and stably, so the best ``n`` of a
    #: deeper search are its first ``n`` (``Capabilities.exact_search``).
    exact_search: ClassVar[bool] = False

    def capabilities(self) -> Capabilities:
        """``exact_search`` of the class, and whether a component of the configuration is
        stochastic or changes state when searched."""
        return dataclasses.replace(any_part(self.components()), exact_search=type(self).exact_search)

    def __init__(self) -> None:
        self._records: dict[str, MemoryRecord] = {}
        self._position: dict[str, int] = {}
        self._next_position = 0
        self._newest_timestamp: float | None = None

    # -- subclass hooks -------------------------------------------------------------
    @abstractmethod
    def _add(self, records: list[MemoryRecord]) -> None:
        """Index ``records``; their ids are new to this retriever."""

    @abstractmethod
    def _remove(self, ids: list[str]) -> None:
        """Drop ``ids`` (all known to this retriever) from the index."""

    @abstractmethod
    def _clear(self) -> None:
        """Drop the whole index."""

    @abstractmethod
    def search(self, query: str, k: int = 5, *, where: Where | None = None,
               now: float | None = None) -> list[Hit]:
        """At most ``k`` hits, best first (see the module docstring for the contract)."""

    def search_depth(self, k: int) -> int:
        """The depth ``d >= k`` whose search, at the same state, holds this search's ``k`` hits
        as its first ``k`` and costs no more: a caller that will ask again deeper may search
        ``d`` once and serve every ``k`` with ``search_depth(k) == d`` from it. ``k`` here; a
        retriever that searches a fixed depth whatever ``k`` is (a hybrid's ``candidates``)
        says so."""
        return k

    # -- public bookkeeping ---------------------------------------------------------
    def add(self, records: Iterable[MemoryRecord]) -> None:
        """Index ``records``; an id already present is replaced (and moves to the end)."""
        records = list(records)
        seen: set[str] = set()
        for record in records:
            if not isinstance(record, MemoryRecord):
                raise MemlabError(f"{type(self).__name__}.add expects MemoryRecord objects, "
                                  f"got {type(record).__name__}")
            if record.id in seen:
                raise MemlabError(f"ids passed to add must be unique, got {record.id!r} twice")
            seen.add(record.id)
        if not records:
            return
        existing = [r.id for r in records if r.id in self._records]
        if existing:
            self.remove(existing)
        self._register(records)
        self._add(records)

    def _register(self, records: list[MemoryRecord]) -> None:
        """Bookkeeping only: keep the records and give them insertion positions."""
        for record in records:
            self._records[record.id] = record
            self._position[record.id] = self._next_position
            self._next_position += 1
            if self._newest_timestamp is None or record.timestamp > self._newest_timestamp:
                self._newest_timestamp = record.timestamp

    def _sync(self, children: Sequence[Retriever]) -> None:
        """Keep a wrapper and the retrievers it wraps holding the same records.

        The wrapper first takes over records a child already holds (wrapping a filled
        retriever; ``_adopted`` is told), then every child receives the records it lacks
        (a child swapped in by ``set_params``, or the other children of a hybrid).
        """
        for child in children:
            new = [r for r in child.records() if r.id not in self._records]
            if new:
                self._register(new)
                self._adopted(new)
        records = self.records()
        for child in children:
            missing = [r for r in records if r.id not in child]
            if missing:
                child.add(missing)

    def _adopted(self, records: list[MemoryRecord]) -> None:
        """Hook: ``records`` were taken over from a wrapped retriever (and, for a
        ``WrapperRetriever``, added through it)."""

    def remove(self, ids: Iterable[str]) -> None:
        """Forget ``ids``; unknown ids are ignored."""
        known = list(dict.fromkeys(i for i in map(str, ids) if i in self._records))
        if not known:
            return
        self._remove(known)
        for i in known:
            del self._records[i]
            del self._position[i]

    def reset(self) -> None:
        """Forget every record; the configuration stays."""
        self._records.clear()
        self._position.clear()
        self._next_position = 0
        self._newest_timestamp = None
        self._clear()

    def __len__(self) -> int:
        return len(self._records)

    def __contains__(self, id: object) -> bool:
        return str(id) in self._records

    def get_record(self, id: str) -> MemoryRecord:
        """The record added under ``id``; KeyError if there is none."""
        try:
            return self._records[str(id)]
        except KeyError:
            raise KeyError(f"{type(self).__name__} has no record with id {id!r}") from None

    def records(self) -> list[MemoryRecord]:
        """Every record, in insertion order."""
        return list(self._records.values())

    def position(self, id: str) -> int:
        """Insertion sequence number of ``id`` (smaller = added earlier), for tie-breaking."""
        return self._position[str(id)]

    @property
    def newest_timestamp(self) -> float | None:
        """The largest ``record.timestamp`` ever added (dialogue time), None before any add."""
        return self._newest_timestamp

    # -- helpers for subclasses -----------------------------------------------------
    @staticmethod
    def _check_search(k: Any, where: Where | None) -> int:
        if isinstance(k, bool) or not isinstance(k, int) or k < 0:
            raise MemlabError(f"k must be a non-negative int, got {k!r}")
        validate_where(where)
        return k

    def _order(self, scored: Sequence[tuple[str, float]]) -> list[tuple[str, float]]:
        """Known ids sorted by score (desc), ties by insertion order; unknown ids dropped."""
        pos = self._position
        known = [(i, float(s)) for i, s in scored if i in pos]
        known.sort(key=lambda p: (-p[1], pos[p[0]]))
        return known

    def _hits(self, ranked: Sequence[tuple[str, float]],
              components: Sequence[dict[str, dict[str, float]]] | None = None,
              extra: Sequence[dict[str, float]] | None = None) -> list[Hit]:
        """Hits for ``ranked`` (already ordered), with ``components[self.name]`` set."""
        records, name = self._records, self.name
        hits = []
        for n, (i, score) in enumerate(ranked):
            record = records[i]
            own: dict[str, float] = {"score": score, "rank": n + 1}
            if extra:
                own.update(extra[n])
            comps = dict(components[n]) if components else {}
            comps[name] = own
            hits.append(Hit(record, score, record.timestamp, n + 1, comps))
        return hits

# ``candidates``: how many hits a wrapper or a fusion asks its children for
CANDIDATES = Param(int, ge=1)


_NOT_GIVEN: Any = object()


class WrapperRetriever(Retriever):
    """A retriever around another one (``self.retriever``): indexing is delegated to it.

    What every wrapper shares is here. ``WrapperRetriever.__init__(self, retriever, **params)``
    stores the wrapped retriever and the wrapper's own parameters (each checked against
    ``constraints`` as it is set, in the order given) and runs ``_on_params_changed``, where a
    wrapper rebuilds its derived state and calls ``self._sync([self.retriever])`` (so the
    wrapper and the wrapped retriever hold the same records; a wrapper of a filled retriever
    takes its records over). Records added, removed or reset through the wrapper reach the
    wrapped retriever (and, for a hybrid, every child); records the wrapper takes in, added
    through it or taken over, are passed to ``_adopted``. ``search`` checks ``k`` and
    ``where`` and answers ``[]`` for ``k == 0`` or an empty index before calling ``_search``,
    where a subclass re-scores, filters or fuses. A subclass may instead set its attributes
    itself (calling ``super().__init__()`` with no argument) and override ``search`` whole;
    one without ``_on_params_changed`` is rebuilt by ``set_params`` through its constructor.
    """

    retriever: Retriever
    constraints = {"retriever": Param(Retriever)}

    def __init__(self, retriever: Any = _NOT_GIVEN, **params: Any) -> None:
        super().__init__()
        if retriever is _NOT_GIVEN:  # the subclass sets its attributes itself
            return
        self.retriever = retriever
        for name, value in params.items():
            setattr(self, name, value)
        self._on_params_changed()

    def _add(self, records: list[MemoryRecord]) -> None:
        self.retriever.add(records)
        self._adopted(records)

    def _remove(self, ids: list[str]) -> None:
        self.retriever.remove(ids)

    def _clear(self) -> None:
        self.retriever.reset()

    def search(self, query: str, k: int = 5, *, where: Where | None = None,
               now: float | None = None) -> list[Hit]:
        k = self._check_search(k, where)
        if k == 0 or not self._records:
            return []
        return self._search(query, k, where=where, now=now)

    def _search(self, query: str, k: int, *, where: Where | None, now: float | None) -> list[Hit]:
        """The wrapper's search for a checked ``k`` >= 1 over a non-empty index."""
        raise NotImplementedError(f"{type(self).__name__} implements neither search nor _search")


class RekeyedRetriever(WrapperRetriever):
    """A wrapper that indexes each record under another text, ``key_text(record)``, in the
    wrapped retriever, and returns the records themselves. A subclass writes ``key_text``;
    its ``_on_params_changed`` calls ``_rekey`` to index every record again."""

    def key_text(self, record: MemoryRecord) -> str:
        raise NotImplementedError(f"{type(self).__name__} implements no key_text")

    def key_record(self, r: MemoryRecord) -> MemoryRecord:
        """``r`` with its content replaced by its key text (what the wrapped retriever indexes)."""
        return MemoryRecord(role=r.role, content=self.key_text(r), id=r.id, timestamp=r.timestamp,
                            metadata=r.metadata, tool_calls=r.tool_calls, name=r.name)

    def _rekey(self) -> None:
        self.retriever.reset()
        if self._records:
            self.retriever.add([self.key_record(r) for r in self._records.values()])

    def _add(self, records: list[MemoryRecord]) -> None:
        self.retriever.add([self.key_record(r) for r in records])

    def search(self, query: str, k: int = 5, *, where: Where | None = None,
               now: float | None = None) -> list[Hit]:
        k = self._check_search(k, where)
        if k == 0 or not self._records:
            return []
        inner = [h for h in self.retriever.search(query, k, where=where, now=now) if h.id in self._records]
        return self._hits([(h.id, h.score) for h in inner], [h.components for h in inner])
