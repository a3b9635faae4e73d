"""Retrieval: tokenizers, BM25, vector and hybrid retrievers, fusion, expansion, decay,
selection, conflicts and metadata filters.

Names are imported lazily, so ``import memlab.retrieval`` loads no retriever (nor chromadb).
"""

from __future__ import annotations

from .._lazy import lazy_exports

_EXPORTS: dict[str, str] = {
    # metadata filters, stop words and stemming live below (``memlab.filters``, ``memlab.text``)
    "Where": ".filters", "matches": ".filters", "validate_where": ".filters",
    "to_chroma_where": ".filters", "filter_view": ".filters",
    "Tokenizer": "tokenize", "porter_stem": ".text", "ENGLISH_STOPWORDS": ".text",
    "Retriever": "base", "WrapperRetriever": "base", "RekeyedRetriever": "base",
    "BM25Retriever": "bm25",
    "VectorRetriever": "vector",
    "rrf": "fusion", "weighted_sum": "fusion", "normalize_scores": "fusion",
    "Fusion": "fusion", "RRF": "fusion", "WeightedSum": "fusion",
    "HybridRetriever": "hybrid",
    "QueryExpander": "expansion", "PseudoRelevanceFeedback": "expansion",
    "ExpansionRetriever": "expansion",
    "LLMQueryRewriter": "llm_expansion", "MultiQueryExpander": "llm_expansion",
    "HyDEExpander": "llm_expansion", "LLMRelevanceFilter": "llm_filter", "LLMReranker": "llm_rerank",
    "DecayRetriever": "decay_retriever",
    "ContextualRetriever": "contextual", "format_date": "contextual",
    "TimeBoostRetriever": "temporal", "time_ranges": "temporal",
    "SessionFusionRetriever": "session_fusion", "NeighbourWindowRetriever": "session_fusion",
    "SessionDiversityRetriever": "session_fusion",
    "KeyphraseRetriever": "keyphrases", "FactKeyRetriever": "fact_keys",
    "Selector": "selection", "mmr": "selection", "MMRSelector": "selection",
    "ScoreThreshold": "selection", "merge_near_duplicates": "selection",
    "NearDuplicateMerger": "selection",
    "ConflictResolver": "conflicts", "ExcludeOutdated": "conflicts",
    "is_outdated": "conflicts", "exclude_outdated": "conflicts",
}

__all__ = sorted(_EXPORTS)  # noqa: PLE0605 (a list, built from _EXPORTS)


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
