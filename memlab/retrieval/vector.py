"""Dense retrieval: embed records into any VectorStore, search by cosine similarity."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from ..capabilities import Capabilities, capabilities_of
from ..embeddings.base import Embedder
from ..embeddings.hashing import HashingEmbedder
from ..filters import Where, filter_view
from ..records import Hit, MemoryRecord
from ..storage.vector import NumpyVectorStore, VectorStore
from .base import Retriever

#: Metadata key holding the whole record as JSON, so a reopened store gives back exact records.
RECORD_KEY = "memlab_record"


def stored_metadata(record: MemoryRecord) -> dict[str, Any]:
    """What a ``VectorRetriever`` stores with a record's vector (every backend, chromadb too).

    ``filter_view(record)`` (its scalar metadata plus ``role``, ``agent_id``, ``timestamp``
    and ``id``, the built-ins winning), which ``where`` filters see, and under
    ``RECORD_KEY`` the whole record as JSON; non-scalar metadata (lists such as
    ``source_ids``, dicts, None) lives only there. Values JSON cannot hold are written as
    their ``str``.
    """
    md: dict[str, Any] = dict(filter_view(record))
    md[RECORD_KEY] = json.dumps(record.to_dict(), ensure_ascii=False, sort_keys=True, default=str)
    return md


class VectorRetriever(Retriever):
    """Cosine similarity between the embedded query and embedded record contents.

    ``embedder`` defaults to the offline ``HashingEmbedder()``, ``vector_store`` to an exact
    ``NumpyVectorStore()``; any ``VectorStore`` (chromadb included) works the same way.
    Records with blank content are not indexed (as in CAMEL's VectorDBBlock) and are not
    kept. The store receives ``stored_metadata(record)`` as metadata, and ``where`` is
    passed down to the store, so filtering happens where the vectors are. A store that
    already holds entries when it is bound (a reopened persistent folder, a store handed
    in) gives back the records written there by a ``VectorRetriever`` (they carry
    ``RECORD_KEY``): they are searchable, counted and listed again, in the store's order;
    entries without it are someone else's and are skipped by search.
    ``reset()`` deletes the vectors of the records held here, never others a store handed
    in holds. Records are embedded as passages
    (``embedder.embed``), the query in the embedder's query mode (``embed_queries``).
    """

    name = "vector"

    def __init__(self, embedder: Embedder | None = None, vector_store: VectorStore | None = None):
        super().__init__()
        self.embedder = embedder
        self.vector_store = vector_store
        self._bound: tuple[int, str, int] | None = None
        self._on_params_changed()

    def _on_params_changed(self) -> None:
        self._embedder = self._resolve("embedder", lambda: HashingEmbedder())
        self._store = self._resolve("vector_store", lambda: NumpyVectorStore())
        bound = (id(self._embedder), self._embedder.identity(), id(self._store))
        if self._bound is not None and bound != self._bound and self._records:
            if bound[:2] != self._bound[:2]:
                self._store.delete(list(self._records))  # old vectors may even have another dimension
            # A new embedder or store: put every kept record into it, embedded anew.
            self._index(list(self._records.values()))
        if self._bound is None or bound[2] != self._bound[2]:
            self._restore()
        self._bound = bound

    def capabilities(self) -> Capabilities:
        """Exact when its vector store is (``VectorStore.exact_search``: the numpy store is,
        an HNSW index is not)."""
        return dataclasses.replace(super().capabilities(), exact_search=capabilities_of(self._store).exact_search)

    @property
    def store(self) -> VectorStore:
        """The vector store in use (the default one while ``vector_store`` is None)."""
        return self._store

    def _restore(self) -> None:
        """Take back the records a newly bound store already holds (see the class doc)."""
        store = self._store
        if not len(store):
            return
        ids = [i for i in store.ids() if i not in self._records]
        records = [MemoryRecord.from_dict(json.loads(entry["metadata"][RECORD_KEY]))
                   for entry in store.get(ids) if RECORD_KEY in entry["metadata"]]
        self._register(records)

    def add(self, records) -> None:
        records = list(records)
        # A blank record replacing an indexed one removes it: blank content is never indexed.
        self.remove([r.id for r in records if isinstance(r, MemoryRecord)
                     and not r.content.strip() and r.id in self._records])
        super().add([r for r in records if not isinstance(r, MemoryRecord) or r.content.strip()])

    def _index(self, records: list[MemoryRecord]) -> None:
        if not records:
            return
        vectors = self._embedder.embed([r.content for r in records])
        self._store.add([r.id for r in records], vectors,
                       metadatas=[stored_metadata(r) for r in records],
                       documents=[r.content for r in records])

    def _add(self, records: list[MemoryRecord]) -> None:
        self._index(records)

    def _remove(self, ids: list[str]) -> None:
        self._store.delete(ids)

    def reset(self) -> None:
        ids = list(self._records)
        super().reset()
        self._store.delete(ids)

    def _clear(self) -> None:
        pass  # reset deletes the ids it knew (a store handed in may hold others' vectors)

    def search(self, query: str, k: int = 5, *, where: Where | None = None,
               now: float | None = None) -> list[Hit]:
        k = self._check_search(k, where)
        if k == 0 or not self._records or not query.strip():
            return []
        vector = self._embedder.embed_queries([query])[0]
        n = k
        while True:  # a shared store may hold others' vectors: ask again for more if they crowd in
            pairs = self._store.query(vector, n, where=where)
            ranked = self._order(pairs)
            if len(ranked) >= k or len(pairs) < n:
                return self._hits(ranked[:k])
            n *= 4
