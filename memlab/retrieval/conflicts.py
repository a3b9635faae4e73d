"""Conflict handling: a newer fact supersedes older ones; superseded records stay, marked.

Nothing is deleted. A superseded record gets ``metadata["status"] = "outdated"`` and
``metadata["superseded_by"] = <new id>``; the new record gets
``metadata["supersedes"] = [ids]``. ``ExcludeOutdated`` (or ``exclude_outdated``) hides
outdated records from search.

Why not a filter: filters follow chromadb, where a record without the key never
matches, so ``{"status": {"$ne": "outdated"}}`` would also hide every record that has
no status at all. Filters also see metadata as it was when a record was added, while
the resolver marks records already indexed. ``ExcludeOutdated`` therefore checks each
hit's live ``record.metadata`` after the search: a record without ``status`` is current.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..base import Component, Param
from ..embeddings.base import Embedder
from ..embeddings.hashing import HashingEmbedder
from ..records import Hit, MemoryRecord
from .base import Retriever, WrapperRetriever
from ..filters import Where

OUTDATED = "outdated"


def is_outdated(record: MemoryRecord) -> bool:
    """True when a resolver marked ``record`` as superseded."""
    return record.metadata.get("status") == OUTDATED


def exclude_outdated(hits: Sequence[Hit]) -> list[Hit]:
    """The hits whose records are not outdated (ranks left as they were)."""
    return [h for h in hits if not is_outdated(h.record)]


class ConflictResolver(Component):
    """Finds and marks the existing records that a new record supersedes.

    An existing record ``e`` is superseded by ``new`` when ``e`` is not ``new`` itself,
    not already outdated, strictly older (``e.timestamp < new.timestamp``), has the
    same ``metadata.get("user_id")`` (both missing counts as the same), and either

    - ``new.metadata`` has ``subject_key`` and ``e.metadata.get(subject_key)`` equals it; or
    - ``new`` has no ``subject_key``, ``similarity_threshold`` is set, and the cosine
      of the embedded contents is above it (``>``), embedded with ``embedder``
      (default ``HashingEmbedder()``).
    """

    constraints = {
        "subject_key": Param(str),
        "similarity_threshold": Param(float, ge=-1, le=1, none=True),
    }

    def __init__(self, subject_key: str = "subject", similarity_threshold: float | None = None,
                 embedder: Embedder | None = None):
        self.subject_key = subject_key
        self.similarity_threshold = similarity_threshold
        self.embedder = embedder
        self._on_params_changed()

    def _on_params_changed(self) -> None:
        self._embedder = self._resolve("embedder", lambda: HashingEmbedder())

    def find(self, new: MemoryRecord, existing: Sequence[MemoryRecord]) -> list[MemoryRecord]:
        """The records ``new`` supersedes, in the order given; nothing is marked."""
        user = new.metadata.get("user_id")
        pool = [e for e in existing if e.id != new.id and not is_outdated(e)
                and e.timestamp < new.timestamp and e.metadata.get("user_id") == user]
        if self.subject_key in new.metadata:
            subject = new.metadata[self.subject_key]
            return [e for e in pool if self.subject_key in e.metadata
                    and e.metadata[self.subject_key] == subject]
        if self.similarity_threshold is None or not pool:
            return []
        vecs = self._embedder.embed([new.content] + [e.content for e in pool])
        sims = np.asarray(vecs[1:], dtype=np.float64) @ np.asarray(vecs[0], dtype=np.float64)
        return [e for e, s in zip(pool, sims) if s > self.similarity_threshold]

    def resolve(self, new: MemoryRecord, existing: Sequence[MemoryRecord]) -> list[MemoryRecord]:
        """Mark and return the records ``new`` supersedes (see the class docstring)."""
        superseded = self.find(new, existing)
        if not superseded:
            return []
        for e in superseded:
            e.metadata["status"] = OUTDATED
            e.metadata["superseded_by"] = new.id
        ids = [str(i) for i in new.metadata.get("supersedes", [])]
        ids += [e.id for e in superseded if e.id not in ids]
        new.metadata["supersedes"] = ids
        return superseded


class ExcludeOutdated(WrapperRetriever):
    """Wraps ``retriever`` and drops hits whose record is outdated (live metadata).

    Asks for ``k`` hits, and asks again for twice as many while outdated ones leave
    fewer than ``k`` and the wrapped retriever could return more. Scores and the wrapped
    retriever's components are kept; ``components["current"]`` holds the new rank.
    """

    name = "current"

    def __init__(self, retriever: Retriever):
        super().__init__(retriever)

    def _on_params_changed(self) -> None:
        self._sync([self.retriever])

    def _search(self, query: str, k: int, *, where: Where | None, now: float | None) -> list[Hit]:
        n = k
        while True:
            hits = self.retriever.search(query, n, where=where, now=now)
            current = [h for h in exclude_outdated(hits) if h.id in self._records]
            if len(current) >= k or len(hits) < n or n >= len(self.retriever):
                break
            n *= 2
        current = current[:k]
        return self._hits([(h.id, h.score) for h in current], [h.components for h in current])
