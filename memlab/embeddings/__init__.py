"""Embedders: texts in, unit-length float32 vectors out.

Names load lazily, so ``import memlab.embeddings`` imports neither sentence-transformers
nor openai; each embedder imports its library when it first needs it.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "Embedder": "base", "HashingEmbedder": "hashing",
    "SentenceTransformerEmbedder": "sentence_transformer",
    "OpenAIEmbedder": "openai", "CachedEmbedder": "cache",
}

__all__ = ["CachedEmbedder", "Embedder", "HashingEmbedder", "OpenAIEmbedder",
           "SentenceTransformerEmbedder"]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'memlab.embeddings' has no attribute {name!r}")
    return getattr(importlib.import_module(f".{module}", __name__), name)


def __dir__() -> list[str]:
    return __all__
