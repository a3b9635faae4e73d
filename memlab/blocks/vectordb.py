"""VectorDBBlock: CAMEL's vector block, a facade over ``VectorRetriever``."""

from __future__ import annotations

from collections.abc import Sequence

from ..base import Param
from ..embeddings.base import Embedder
from ..filters import Where
from ..records import ContextRecord, MemoryRecord
from ..retrieval.vector import RECORD_KEY, VectorRetriever
from ..retrieval.vector import stored_metadata as record_metadata
from ..storage.vector import VectorStore
from .base import MemoryBlock, check_count, check_records

__all__ = ["RECORD_KEY", "VectorDBBlock", "record_metadata"]


class VectorDBBlock(MemoryBlock):
    """Embeds each record's content with ``embedding`` into ``storage`` (CAMEL's arg names).

    A facade over ``VectorRetriever(embedder=embedding, vector_store=storage)``: indexing,
    stored metadata (``record_metadata``), filters and tie-breaking are the retriever's.
    Defaults are offline: ``NumpyVectorStore()`` and ``HashingEmbedder()`` (CAMEL defaults
    to OpenAI embeddings, which need the network). The vector id is the record id, so
    writing a record again replaces it. Records with empty or whitespace-only content are
    skipped (a blank rewrite leaves the stored version). ``retrieve`` scores are cosine
    similarities. A store that already holds records written by memlab (a reopened
    persistent chroma folder) gives them back; entries written by others are never
    recalled, counted or deleted.

    The vector store keeps no order, so ``pop_records`` and ``remove_records_by_indices``
    raise NotImplementedError (as in CAMEL); use ``remove_records_by_ids``.
    """

    constraints = {"storage": Param(VectorStore, none=True), "embedding": Param(Embedder, none=True)}

    def __init__(self, storage: VectorStore | None = None, embedding: Embedder | None = None):
        self.storage = storage
        self.embedding = embedding
        self._retriever: VectorRetriever | None = None
        self._on_params_changed()

    def _on_params_changed(self) -> None:
        if self._retriever is None:
            self._retriever = VectorRetriever(embedder=self.embedding, vector_store=self.storage)
        else:  # the retriever keeps its records and moves them to a new store or embedder
            self._retriever.set_params(embedder=self.embedding, vector_store=self.storage)

    @property
    def retriever(self) -> VectorRetriever:
        """The retriever behind the block (``memlab``'s one index-and-search interface)."""
        assert self._retriever is not None
        return self._retriever

    @property
    def store(self) -> VectorStore:
        """The vector store in use (the default one when ``storage`` is None)."""
        return self.retriever.store

    @property
    def embedder(self) -> Embedder:
        """The embedder in use (the default one when ``embedding`` is None)."""
        return self.retriever._embedder

    def __len__(self) -> int:
        return len(self.retriever)

    def write_records(self, records: Sequence[MemoryRecord]) -> None:
        """Embed and store every record whose content is not blank (upsert by record id)."""
        records = [r for r in check_records(records, "VectorDBBlock.write_records") if r.content.strip()]
        # a repeated id within one batch: the last version wins, as with separate writes
        latest = {r.id: r for r in records}
        self.retriever.add(list(latest.values()))

    def retrieve(self, keyword: str, limit: int = 3, where: Where | None = None) -> list[ContextRecord]:
        """Up to ``limit`` records most similar to ``keyword``, best first.

        ``score`` is the cosine similarity; ties keep insertion order. ``where`` filters on
        the metadata described in ``record_metadata``. A blank ``keyword`` recalls nothing.
        """
        if not isinstance(keyword, str):
            raise TypeError(f"keyword must be a string, got {type(keyword).__name__}")
        check_count(limit, "limit")
        return [ContextRecord(memory_record=h.record, score=float(h.score), timestamp=h.record.timestamp)
                for h in self.retriever.search(keyword, limit, where=where)]

    def remove_records_by_ids(self, ids: Sequence[str]) -> None:
        """Delete these record ids; unknown ids are ignored."""
        self.retriever.remove([str(i) for i in ids])

    def clear(self) -> None:
        """Forget every record this block holds (a store's other entries stay)."""
        self.retriever.reset()
