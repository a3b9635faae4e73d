"""Storage backends: key-value stores for chat history, vector stores for recall.

Names load lazily, so ``import memlab.storage`` does not import chromadb; only
``ChromaVectorStore`` (module ``memlab.storage.chroma``) does.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "KeyValueStore": "kv", "InMemoryKeyValueStore": "kv", "JsonlKeyValueStore": "kv",
    "SQLiteKeyValueStore": "kv",
    "VectorStore": "vector", "NumpyVectorStore": "vector",
    "ChromaVectorStore": "chroma",
}

__all__ = ["ChromaVectorStore", "InMemoryKeyValueStore", "JsonlKeyValueStore", "KeyValueStore",
           "NumpyVectorStore", "SQLiteKeyValueStore", "VectorStore"]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'memlab.storage' has no attribute {name!r}")
    return getattr(importlib.import_module(f".{module}", __name__), name)


def __dir__() -> list[str]:
    return __all__
