"""The parts the built-in recipes assemble: retrievers by kind, the strong tokenizer, the
contextual BM25 of ``bm25_plus`` and the fused retriever of ``hybrid_plus``."""

from __future__ import annotations

from typing import Any

from ..base import ConfigError
from ..embeddings.named import make_embedder


def basic_retriever(kind: str, embedder: Any = "hashing", weights: list[float] | None = None,
               fusion: str = "rrf"):
    from ..retrieval import (
        RRF,
        BM25Retriever,
        HybridRetriever,
        VectorRetriever,
        WeightedSum,
    )

    if kind == "bm25":
        return BM25Retriever()
    if kind == "vector":
        return VectorRetriever(embedder=make_embedder(embedder))
    if fusion not in ("rrf", "wsum"):
        raise ConfigError(f"fusion must be 'rrf' or 'wsum', got {fusion!r}")
    fuser = RRF(weights=weights) if fusion == "rrf" else WeightedSum(weights=weights)
    return HybridRetriever(retrievers=[BM25Retriever(), VectorRetriever(embedder=make_embedder(embedder))],
                           fusion=fuser)


def strong_tokenizer(chinese: str = "char+bigram"):
    """English stop words, Porter stemming, Chinese as characters and character pairs (strong built-ins)."""
    from ..retrieval import Tokenizer

    return Tokenizer(stopwords="english", stemmer="porter", chinese=chinese)


def contextual_bm25(k1: float = 1.5, b: float = 0.75, before: int = 2, after: int = 1, own_weight: int = 2,
                    neighbour_weight: int = 1, date: bool = True, chinese: str = "char+bigram",
                    neighbour_words: int | None = None):
    """BM25 with the strong tokenizer over contextual index texts (see ``ContextualRetriever``)."""
    from ..retrieval import BM25Retriever, ContextualRetriever

    return ContextualRetriever(BM25Retriever(tokenizer=strong_tokenizer(chinese), k1=k1, b=b), before=before,
                               after=after, own_weight=own_weight, neighbour_weight=neighbour_weight, date=date,
                               neighbour_words=neighbour_words)


def hybrid_plus_retriever(embedders: list[Any] | None = None, weights: list[float] | None = None,
                          normalization: str = "minmax", candidates: int = 50, before: int = 2, after: int = 1,
                          own_weight: int = 2, date: bool = True, chinese: str = "char+bigram"):
    """The retriever of ``hybrid_plus`` (see there), for strategies that recall with it."""
    from ..retrieval import HybridRetriever, VectorRetriever, WeightedSum

    names = ["e5"] if embedders is None else list(embedders)
    if weights is None:
        weights = [1.0] + [0.7] * len(names)
    children = [contextual_bm25(before=before, after=after, own_weight=own_weight, date=date, chinese=chinese)]
    children += [VectorRetriever(embedder=make_embedder(e)) for e in names]
    return HybridRetriever(children, fusion=WeightedSum(normalization=normalization), weights=weights,
                           candidates=candidates)


def recall_retriever(embedder: Any):
    """``bm25_plus``'s retriever when ``embedder`` is None, else ``hybrid_plus``'s with it (a name or a list)."""
    if embedder is None:
        return contextual_bm25()
    return hybrid_plus_retriever(embedders=list(embedder) if isinstance(embedder, (list, tuple)) else [embedder])
