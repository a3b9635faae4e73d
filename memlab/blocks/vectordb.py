"""VectorDBBlock: records embedded into a vector store and recalled by similarity."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from ..base import MemlabError, Param
from ..embeddings.base import Embedder
from ..embeddings.hashing import HashingEmbedder
from ..records import ContextRecord, MemoryRecord
from ..filters import Where
from ..storage.vector import NumpyVectorStore, VectorStore
from .base import MemoryBlock, check_count, check_records

#: Metadata key holding the whole record as JSON, so a hit rebuilds the exact record.
RECORD_KEY = "memlab_record"
#: Metadata keys memlab sets for filtering; they win over same-named keys of record.metadata.
RESERVED_KEYS = ("role", "agent_id", "timestamp", RECORD_KEY)

_UNSET = object()


def record_metadata(record: MemoryRecord) -> dict[str, Any]:
    """Scalar metadata stored with a record's vector (every backend, chromadb included).

    ``role``, ``agent_id``, ``timestamp`` and the scalar (str, int, float, bool) entries of
    ``record.metadata`` are filterable with a ``where`` dict; non-scalar entries (lists such
    as ``source_ids``, dicts, None) are only kept inside the record JSON.
    """
    md: dict[str, Any] = {k: v for k, v in record.metadata.items()
                          if isinstance(k, str) and isinstance(v, (str, int, float, bool))}
    md.update(role=record.role.value, agent_id=record.agent_id, timestamp=record.timestamp,
              **{RECORD_KEY: json.dumps(record.to_dict(), ensure_ascii=False, sort_keys=True)})
    return md


class VectorDBBlock(MemoryBlock):
    """Embeds each record's content with ``embedding`` into ``storage`` (CAMEL's arg names).

    Defaults are offline: ``NumpyVectorStore()`` and ``HashingEmbedder()`` (CAMEL defaults
    to OpenAI embeddings, which need the network). The vector id is the record id, so
    writing a record again replaces it. Records with empty or whitespace-only content are
    skipped. ``retrieve`` scores are cosine similarities.

    The vector store keeps no order, so ``pop_records`` and ``remove_records_by_indices``
    raise NotImplementedError (as in CAMEL); use ``remove_records_by_ids``.
    """

    constraints = {"storage": Param(VectorStore, none=True), "embedding": Param(Embedder, none=True)}

    def __init__(self, storage: VectorStore | None = None, embedding: Embedder | None = None):
        self.storage = storage
        self.embedding = embedding
        self._on_params_changed()

    def _on_params_changed(self) -> None:
        if getattr(self, "_storage_arg", _UNSET) is not self.storage:
            self._store = self.storage if self.storage is not None else NumpyVectorStore()
            self._storage_arg = self.storage
        self._embedder = self.embedding if self.embedding is not None else HashingEmbedder()

    @property
    def store(self) -> VectorStore:
        """The vector store in use (the default one when ``storage`` is None)."""
        return self._store

    @property
    def embedder(self) -> Embedder:
        """The embedder in use (the default one when ``embedding`` is None)."""
        return self._embedder

    def __len__(self) -> int:
        return len(self._store)

    def write_records(self, records: Sequence[MemoryRecord]) -> None:
        """Embed and store every record whose content is not blank (upsert by record id)."""
        records = [r for r in check_records(records, "VectorDBBlock.write_records") if r.content.strip()]
        if not records:
            return
        # a repeated id within one batch: the last version wins, as with separate writes
        latest = {r.id: r for r in records}
        records = list(latest.values())
        vectors = self._embedder.embed([r.content for r in records])
        self._store.add([r.id for r in records], vectors,
                        metadatas=[record_metadata(r) for r in records],
                        documents=[r.content for r in records])

    def retrieve(self, keyword: str, limit: int = 3, where: Where | None = None) -> list[ContextRecord]:
        """Up to ``limit`` records most similar to ``keyword``, best first.

        ``score`` is the cosine similarity; ties keep insertion order. ``where`` filters on
        the metadata described in ``record_metadata``. A blank ``keyword`` recalls nothing.
        """
        if not isinstance(keyword, str):
            raise TypeError(f"keyword must be a string, got {type(keyword).__name__}")
        check_count(limit, "limit")
        if limit == 0 or not keyword.strip():
            return []
        pairs = self._store.query(self._embedder.embed_queries([keyword])[0], limit, where)
        if not pairs:
            return []
        entries = {e["id"]: e for e in self._store.get([i for i, _ in pairs])}
        out = []
        for id_, score in pairs:
            entry = entries.get(id_)
            if entry is None or RECORD_KEY not in entry["metadata"]:
                raise MemlabError(f"vector store entry {id_!r} has no {RECORD_KEY!r} metadata; "
                                  f"it was not written by a VectorDBBlock")
            record = MemoryRecord.from_dict(json.loads(entry["metadata"][RECORD_KEY]))
            out.append(ContextRecord(memory_record=record, score=float(score), timestamp=record.timestamp))
        return out

    def remove_records_by_ids(self, ids: Sequence[str]) -> None:
        """Delete these record ids; unknown ids are ignored."""
        self._store.delete([str(i) for i in ids])

    def clear(self) -> None:
        self._store.clear()
