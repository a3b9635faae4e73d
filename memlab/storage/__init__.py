"""Storage backends: key-value stores for chat history, vector stores for recall.

Names load lazily, so ``import memlab.storage`` does not import chromadb; only
``ChromaVectorStore`` (module ``memlab.storage.chroma``) does.
"""

from __future__ import annotations

from .._lazy import lazy_exports

_EXPORTS = {
    "KeyValueStore": "kv", "InMemoryKeyValueStore": "kv", "JsonlKeyValueStore": "kv",
    "SQLiteKeyValueStore": "kv",
    "VectorStore": "vector", "NumpyVectorStore": "vector",
    "ChromaVectorStore": "chroma",
}

__all__ = ["ChromaVectorStore", "InMemoryKeyValueStore", "JsonlKeyValueStore", "KeyValueStore",
           "NumpyVectorStore", "SQLiteKeyValueStore", "VectorStore"]


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
