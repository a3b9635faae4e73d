"""Dense retrieval: embed records into any VectorStore, search by cosine similarity."""

from __future__ import annotations

from ..embeddings.base import Embedder
from ..embeddings.hashing import HashingEmbedder
from ..records import Hit, MemoryRecord
from ..storage.vector import NumpyVectorStore, VectorStore
from .base import Retriever
from ..filters import Where, filter_view


class VectorRetriever(Retriever):
    """Cosine similarity between the embedded query and embedded record contents.

    ``embedder`` defaults to the offline ``HashingEmbedder()``, ``store`` to an exact
    ``NumpyVectorStore()``; any ``VectorStore`` (chromadb included) works the same way.
    Records with blank content are not indexed (as in CAMEL's VectorDBBlock) and are not
    kept. The store receives ``filter_view(record)`` as metadata, and ``where`` is passed
    down to the store, so filtering happens where the vectors are. Ids found in the store
    but never added to this retriever (a reopened persistent store) are skipped.
    ``reset()`` clears the store: the retriever owns it. Records are embedded as passages
    (``embedder.embed``), the query in the embedder's query mode (``embed_queries``).
    """

    name = "vector"

    def __init__(self, embedder: Embedder | None = None, store: VectorStore | None = None):
        super().__init__()
        # None resolves to the defaults so that get_params shows embedder__* and store__*.
        self.embedder = embedder if embedder is not None else HashingEmbedder()
        self.store = store if store is not None else NumpyVectorStore()
        self._bound: tuple[int, str, int] | None = None
        self._on_params_changed()

    def _on_params_changed(self) -> None:
        if self.embedder is None:
            self.embedder = HashingEmbedder()
        if self.store is None:
            self.store = NumpyVectorStore()
        bound = (id(self.embedder), self.embedder.identity(), id(self.store))
        if self._bound is not None and bound != self._bound and self._records:
            if bound[:2] != self._bound[:2]:
                self.store.clear()  # old vectors may even have another dimension
            # A new embedder or store: put every kept record into it, embedded anew.
            self._index(list(self._records.values()))
        self._bound = bound

    def add(self, records) -> None:
        records = list(records)
        # A blank record replacing an indexed one removes it: blank content is never indexed.
        self.remove([r.id for r in records if isinstance(r, MemoryRecord)
                     and not r.content.strip() and r.id in self._records])
        super().add([r for r in records if not isinstance(r, MemoryRecord) or r.content.strip()])

    def _index(self, records: list[MemoryRecord]) -> None:
        if not records:
            return
        vectors = self.embedder.embed([r.content for r in records])
        self.store.add([r.id for r in records], vectors,
                       metadatas=[filter_view(r) for r in records],
                       documents=[r.content for r in records])

    def _add(self, records: list[MemoryRecord]) -> None:
        self._index(records)

    def _remove(self, ids: list[str]) -> None:
        self.store.delete(ids)

    def _clear(self) -> None:
        self.store.clear()

    def search(self, query: str, k: int = 5, *, where: Where | None = None,
               now: float | None = None) -> list[Hit]:
        k = self._check_search(k, where)
        if k == 0 or not self._records or not query.strip():
            return []
        vector = self.embedder.embed_queries([query])[0]
        pairs = self.store.query(vector, k, where=where)
        return self._hits(self._order(pairs)[:k])
