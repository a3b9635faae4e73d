"""Embedders: texts in, unit-length float32 vectors out.

Names load lazily, so ``import memlab.embeddings`` imports neither sentence-transformers
nor openai; each embedder imports its library when it first needs it.
"""

from __future__ import annotations

from .._lazy import lazy_exports

_EXPORTS = {
    "Embedder": "base", "HashingEmbedder": "hashing",
    "SentenceTransformerEmbedder": "sentence_transformer",
    "OpenAIEmbedder": "openai", "CachedEmbedder": "cache", "E5Embedder": "e5",
}

__all__ = ["CachedEmbedder", "E5Embedder", "Embedder", "HashingEmbedder", "OpenAIEmbedder",
           "SentenceTransformerEmbedder"]


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
