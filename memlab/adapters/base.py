"""PeerRetriever: the interface to implement to evaluate a retrieval system of your own.

A peer retriever hands memlab's dialogue turns to another library or service and asks it
for the best ones. Plug it into ``RetrievalStrategy`` and memlab's replay, metrics and
context budget apply to it exactly as to its own retrievers::

    class MySystem(PeerRetriever):
        name = "my_system"
        def __init__(self, top_n: int = 100):
            super().__init__()
            self.top_n = top_n                     # configuration: constructor arguments
            self._on_params_changed()
        def _open(self):                           # build the library objects (lazily)
            self._lib = TheirIndex()
        def _index(self, records):                 # memlab MemoryRecords -> their index
            self._lib.add([(r.id, r.content) for r in records])
        def _query(self, query, n):                # -> [(record id, score)], best first
            return self._lib.search(query, n)

    register("my_system", lambda: RetrievalStrategy(retriever=MySystem()))

What the base class does for you: keeps the records (so hits carry memlab records and
their dialogue-turn ids), calls ``_open`` on first use and again after ``reset`` or a
parameter change, answers an empty index, blank query or ``k == 0`` with ``[]``, applies
``where`` filters to what the library returns, and pickles without the library objects
(attributes whose names start with ``_lib``): after unpickling, ``_open`` runs again and
the records are indexed again, unless ``keeps_index`` says the index lives elsewhere (a
server). Optional hooks: ``_drop(ids)`` (default: reopen and index the remaining
records) and ``_close()`` (called by ``reset`` before the library objects are dropped, also when they
were never opened since unpickling, so it must cope with that).

The library's order is kept as it is, ties included; ids the library returns that were
never added, and repeats of an id, are skipped. Scores must be non-increasing.
"""

from __future__ import annotations

from typing import Any, ClassVar

from ..base import MemlabError
from ..records import Hit, MemoryRecord
from ..retrieval.base import Retriever
from ..filters import Where, filter_view, matches


class PeerRetriever(Retriever):
    """Base class for retrievers backed by another library or service (see the module doc)."""

    name: ClassVar[str] = "peer"

    def __init__(self) -> None:
        super().__init__()
        self._opened = False
        self._replay = False

    # -- hooks ------------------------------------------------------------------------
    def _open(self) -> None:
        """Build the library objects (store them in ``_lib*`` attributes)."""
        raise NotImplementedError

    def _index(self, records: list[MemoryRecord]) -> None:
        """Give ``records`` (new ids) to the library."""
        raise NotImplementedError

    def _query(self, query: str, n: int) -> list[tuple[str, float]]:
        """At most ``n`` (record id, score) pairs for ``query``, best first."""
        raise NotImplementedError

    def _drop(self, ids: list[str]) -> None:
        """Remove ``ids`` from the library; the default rebuilds it from the other records."""
        self._close()
        self._open()
        left = [r for r in self.records() if r.id not in set(ids)]
        if left:
            self._index(left)

    def _close(self) -> None:
        """Release the library objects (called before they are dropped)."""

    def keeps_index(self) -> bool:
        """True when the index outlives this object (a server): no re-indexing after unpickling."""
        return False

    # -- machinery --------------------------------------------------------------------
    def _on_params_changed(self) -> None:
        # a new configuration: the library is rebuilt on next use, with every kept record
        if self._opened:
            self._close()
        self._drop_library()
        self._replay = bool(self._records)

    def _drop_library(self) -> None:
        for key in [k for k in self.__dict__ if k.startswith("_lib")]:
            self.__dict__[key] = None
        self._opened = False

    def _ensure(self) -> None:
        if not self._opened:
            self._open()
            self._opened = True
            if self._replay:
                self._replay = False
                if self._records:
                    self._index(self.records())

    def __getstate__(self) -> dict[str, Any]:
        state = {k: (None if k.startswith("_lib") else v) for k, v in self.__dict__.items()}
        state["_opened"] = False
        state["_replay"] = bool(self._records) and not self.keeps_index()
        return state

    def _add(self, records: list[MemoryRecord]) -> None:
        self._ensure()
        self._index(records)

    def _remove(self, ids: list[str]) -> None:
        self._ensure()
        self._drop(ids)

    def _clear(self) -> None:
        self._close()  # also when not opened since unpickling: a server may hold the records
        self._drop_library()
        self._replay = False

    def search(self, query: str, k: int = 5, *, where: Where | None = None,
               now: float | None = None) -> list[Hit]:
        k = self._check_search(k, where)
        if k == 0 or not query.strip() or not self._records:
            return []
        self._ensure()
        n = k if where is None else len(self._records)
        ranked: list[tuple[str, float]] = []
        seen: set[str] = set()
        for doc_id, score in self._query(query, n):
            doc_id = str(doc_id)
            if doc_id in seen or doc_id not in self._records:
                continue
            if where is not None and not matches(filter_view(self._records[doc_id]), where):
                continue
            seen.add(doc_id)
            ranked.append((doc_id, float(score)))
        scores = [s for _, s in ranked]
        if any(a < b for a, b in zip(scores, scores[1:])):
            raise MemlabError(f"{type(self).__name__}._query must return scores best first, got {scores[:10]}")
        return self._hits(ranked[:k])
