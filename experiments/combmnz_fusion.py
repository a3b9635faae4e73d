"""A user-written fusion rule, CombMNZ, and a strategy that uses it: ``hybrid_combmnz``.

CombMNZ (Fox & Shaw, TREC-2, 1994) rewards documents that several retrievers agree on.
With ``norm_i`` the per-list score normalisation (min-max by default, see
``memlab.retrieval.fusion.normalize_scores``) and ``n(d)`` the number of lists that
contain ``d``::

    score(d) = n(d) * sum_i w_i * norm_i(s_i(d))        (a list without d adds 0)

Compared with memlab's ``WeightedSum`` (the same sum without the ``n(d)`` factor) a turn
found by both BM25 and the vector retriever counts double; compared with RRF it uses
the scores, not only the ranks.

Run it with ``memlab sweep experiments/hybrid_combmnz.toml``, or from Python::

    from memlab.eval.user_modules import import_user_module
    import_user_module("experiments/combmnz_fusion.py")   # runs the @register below
    from memlab import strategies
    s = strategies.get("hybrid_combmnz", weights=[1.0, 0.5])
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from memlab.base import ConfigError
from memlab.retrieval import BM25Retriever, HybridRetriever, VectorRetriever
from memlab.retrieval.fusion import Fusion, Ranked, check_weights, normalize_scores
from memlab.strategies import RetrievalStrategy, make_embedder, register

#: CombMNZ multiplies scores, so they must not be negative: z-scores are not offered.
COMBMNZ_NORMALIZATIONS = ("minmax", "none")


def combmnz(ranked_lists: Sequence[Ranked], weights: Sequence[float] | None = None,
            normalization: str = "minmax") -> list[tuple[str, float]]:
    """score(d) = n(d) * sum_i w_i * norm_i(s_i(d)), best first.

    Within a list only the first occurrence of an id counts. Ties keep the order in
    which ids first appear reading list 0 top to bottom, then list 1, ... (like
    memlab's own fusion functions), so the result is deterministic.
    """
    if normalization not in COMBMNZ_NORMALIZATIONS:
        raise ConfigError(f"normalization must be one of {', '.join(COMBMNZ_NORMALIZATIONS)}, "
                          f"got {normalization!r}")
    w = check_weights(weights, len(ranked_lists))
    sums: dict[str, float] = {}  # insertion order = first appearance, used for ties
    counts: dict[str, int] = {}
    for wi, ranked in zip(w, ranked_lists):
        seen: set[str] = set()
        items = []
        for doc_id, score in ranked:
            if doc_id not in seen:
                seen.add(doc_id)
                items.append((doc_id, float(score)))
        normed = normalize_scores([s for _, s in items], normalization)
        for (doc_id, _), s in zip(items, normed):
            sums[doc_id] = sums.get(doc_id, 0.0) + wi * s
            counts[doc_id] = counts.get(doc_id, 0) + 1
    fused = {doc_id: counts[doc_id] * total for doc_id, total in sums.items()}
    return sorted(fused.items(), key=lambda pair: -pair[1])  # stable: ties keep first appearance


class CombMNZ(Fusion):
    """CombMNZ fusion (see ``combmnz``); ``weights`` given to ``fuse`` override the configured ones."""

    def __init__(self, weights: list[float] | None = None, normalization: str = "minmax"):
        self.weights = weights
        self.normalization = normalization
        self._on_params_changed()

    def _on_params_changed(self) -> None:
        if self.normalization not in COMBMNZ_NORMALIZATIONS:
            raise ConfigError(f"normalization must be one of {', '.join(COMBMNZ_NORMALIZATIONS)}, "
                              f"got {self.normalization!r}")
        if self.weights is not None:
            check_weights(self.weights, len(self.weights))

    def fuse(self, ranked_lists: Sequence[Ranked],
             weights: Sequence[float] | None = None) -> list[tuple[str, float]]:
        return combmnz(ranked_lists, weights if weights is not None else self.weights, self.normalization)


@register("hybrid_combmnz")
def hybrid_combmnz(embedder: Any = "hashing", weights: list[float] | None = None,
                   normalization: str = "minmax") -> RetrievalStrategy:
    """BM25 + vector fused by CombMNZ (experiments/combmnz_fusion.py)."""
    retriever = HybridRetriever(retrievers=[BM25Retriever(), VectorRetriever(embedder=make_embedder(embedder))],
                                fusion=CombMNZ(normalization=normalization), weights=weights)
    return RetrievalStrategy(retriever=retriever)
