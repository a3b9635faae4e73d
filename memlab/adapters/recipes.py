"""The peer adapters' factories, registered by name in ``memlab.strategies`` through a lazy
name table (``memlab.strategies.registry.ADAPTERS``): importing this module registers nothing.
Each imports its peer library only when called."""

from __future__ import annotations

from typing import Any

from ..embeddings.named import make_embedder
from ..strategies.retrieval import RetrievalStrategy
from .extras import require


def camel_chat_history(window_size: int | None = 10, keep_rate: float = 0.9, token_limit: int = 2048) -> Any:
    """CAMEL's own ChatHistoryMemory (camel-ai): the last window_size turns, CAMEL's scores."""
    require("camel", "camel_chat_history")
    from .camel import CamelChatHistoryStrategy

    return CamelChatHistoryStrategy(window_size=window_size, keep_rate=keep_rate, token_limit=token_limit)


def camel_longterm(keep_rate: float = 0.9, retrieve_limit: int = 3, token_limit: int = 512,
                   embedder: Any = "hashing") -> Any:
    """CAMEL's own LongtermAgentMemory (camel-ai): history + vector recall, CAMEL's context."""
    require("camel", "camel_longterm")
    from .camel import CamelLongtermStrategy

    return CamelLongtermStrategy(keep_rate=keep_rate, retrieve_limit=retrieve_limit, token_limit=token_limit,
                                 embedder=make_embedder(embedder))


def langchain_ensemble(embedder: Any = "hashing", weights: list[float] | None = None, c: int = 60,
                       bm25_preprocess: str = "whitespace") -> Any:
    """LangChain's EnsembleRetriever (RRF) over its BM25Retriever and an in-memory vector store."""
    require("langchain", "langchain_ensemble")
    from .langchain import LangChainEnsembleRetriever

    return RetrievalStrategy(retriever=LangChainEnsembleRetriever(
        embedder=make_embedder(embedder), weights=weights, c=c, bm25_preprocess=bm25_preprocess))


def http_memory(base_url: str | None = None, timeout: float = 10.0) -> Any:
    """A memory service over HTTP (mem0-style add/search); no base_url: memlab's loopback service."""
    from .http import HTTPMemoryRetriever

    return RetrievalStrategy(retriever=HTTPMemoryRetriever(base_url=base_url, timeout=timeout))
