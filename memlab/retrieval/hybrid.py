"""Hybrid retrieval: several retrievers (BM25 + vector by default) fused into one ranking."""

from __future__ import annotations

from ..base import Param
from ..records import Hit, MemoryRecord
from .base import CANDIDATES, Retriever
from .bm25 import BM25Retriever
from ..filters import Where
from .fusion import RRF, WEIGHTS_PARAM, Fusion, check_weights
from .vector import VectorRetriever


class HybridRetriever(Retriever):
    """Asks every child for ``candidates`` hits and fuses the lists with ``fusion``.

    ``add``/``remove``/``reset`` reach every child; ``where`` and ``now`` are passed to
    every child unchanged. ``weights`` (one per retriever, overriding ``fusion.weights``)
    weigh the children in the fusion. The fused list is re-sorted with ties by insertion
    order. ``hit.components`` holds, for each child that returned the record, its name
    (``bm25``, ``vector``; a repeated name gets ``_2``, ``_3``...) mapped to its score
    and rank, plus ``hybrid`` with the fused score and rank.
    """

    name = "hybrid"

    constraints = {
        "retrievers": Param((list, tuple), nonempty=True, each=Param(Retriever), none=True),
        "fusion": Param(Fusion, none=True),
        "weights": WEIGHTS_PARAM,
        "candidates": CANDIDATES,
    }

    def __init__(self, retrievers: list[Retriever] | None = None, fusion: Fusion | None = None,
                 weights: list[float] | None = None, candidates: int = 50):
        super().__init__()
        self.retrievers = retrievers
        self.fusion = fusion
        self.weights = weights
        self.candidates = candidates
        self._on_params_changed()

    def _on_params_changed(self) -> None:
        self._retrievers = self._resolve("retrievers", lambda: [BM25Retriever(), VectorRetriever()])
        self._fusion = self._resolve("fusion", lambda: RRF())
        n = len(self._retrievers)
        check_weights(self.weights, n, "retrievers")
        fusion_weights = getattr(self._fusion, "weights", None)
        if self.weights is None and fusion_weights is not None:
            check_weights(fusion_weights, n, "retrievers")
        self._keys: list[str] = []
        for child in self._retrievers:
            key, m = child.name, 1
            while key in self._keys:
                m += 1
                key = f"{child.name}_{m}"
            self._keys.append(key)
        self._sync(list(self._retrievers))

    def _add(self, records: list[MemoryRecord]) -> None:
        for child in self._retrievers:
            child.add(records)

    def _remove(self, ids: list[str]) -> None:
        for child in self._retrievers:
            child.remove(ids)

    def _clear(self) -> None:
        for child in self._retrievers:
            child.reset()

    def search_depth(self, k: int) -> int:
        """``max(k, candidates)``: every child is asked that deep whatever ``k`` is, so the
        fused ranking is the same and a search for ``k`` is the first ``k`` of it."""
        return max(k, self.candidates)

    def search(self, query: str, k: int = 5, *, where: Where | None = None,
               now: float | None = None) -> list[Hit]:
        k = self._check_search(k, where)
        if k == 0 or not self._records:
            return []
        n = max(k, self.candidates)
        child_hits = [child.search(query, n, where=where, now=now) for child in self._retrievers]
        fused = self._fusion.fuse([[(h.id, h.score) for h in hits] for hits in child_hits], self.weights)
        ranked = self._order(fused)[:k]
        by_child = [{h.id: h for h in hits} for hits in child_hits]
        components = []
        for i, _ in ranked:
            comps = {}
            for key, found in zip(self._keys, by_child):
                h = found.get(i)
                if h is not None:
                    comps[key] = {"score": h.score, "rank": h.rank}
            components.append(comps)
        return self._hits(ranked, components)
