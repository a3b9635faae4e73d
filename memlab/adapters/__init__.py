"""Adapters: other projects' memories, replayed and measured in memlab's harness.

Each adapter is a ``Strategy`` registered by name that drives the real library (or
service), so its scores come from the original code, under memlab's replay, metrics and
token counting:

- ``camel_chat_history``: CAMEL's ``ChatHistoryMemory`` (extra ``camel``);
- ``camel_longterm``: CAMEL's ``LongtermAgentMemory`` (extra ``camel``);
- ``langchain_ensemble``: LangChain's ``EnsembleRetriever`` over ``BM25Retriever`` and
  ``InMemoryVectorStore`` (extra ``langchain``);
- ``http_memory``: any memory service with add and search HTTP endpoints (no extra).

The peer libraries are imported only when an adapter is built, so ``import memlab`` stays
light and works without them; building one whose extra is missing raises a ``ConfigError``
naming the extra. To evaluate a system of your own, subclass ``PeerRetriever``
(``memlab.adapters.base``) or ``Strategy``; the README section "Evaluating another system"
shows both.
"""

from __future__ import annotations

import importlib
from typing import Any

from ..base import ConfigError
from ..strategies.base import registry

#: Which extra provides which importable module.
EXTRAS = {"camel": "camel", "langchain": "langchain_community"}


def require(extra: str, what: str) -> None:
    """Raise a ConfigError naming the extra to install when its library is missing."""
    module = EXTRAS[extra]
    try:
        importlib.import_module(module)
    except ImportError as exc:
        raise ConfigError(f"{what} needs the {extra!r} extra (the {module} package is not importable: "
                          f"{exc}); install it with: pip install 'memlab[{extra}]'") from None


def available(extra: str) -> bool:
    """Whether the library of ``extra`` ("camel", "langchain") can be imported."""
    try:
        importlib.import_module(EXTRAS[extra])
    except ImportError:
        return False
    return True


@registry.register("camel_chat_history")
def camel_chat_history(window_size: int | None = 10, keep_rate: float = 0.9, token_limit: int = 2048) -> Any:
    """CAMEL's own ChatHistoryMemory (camel-ai): the last window_size turns, CAMEL's scores."""
    require("camel", "camel_chat_history")
    from .camel import CamelChatHistoryStrategy

    return CamelChatHistoryStrategy(window_size=window_size, keep_rate=keep_rate, token_limit=token_limit)


@registry.register("camel_longterm")
def camel_longterm(keep_rate: float = 0.9, retrieve_limit: int = 3, token_limit: int = 512,
                   embedder: Any = "hashing") -> Any:
    """CAMEL's own LongtermAgentMemory (camel-ai): history + vector recall, CAMEL's context."""
    require("camel", "camel_longterm")
    from ..strategies.builtins import make_embedder
    from .camel import CamelLongtermStrategy

    return CamelLongtermStrategy(keep_rate=keep_rate, retrieve_limit=retrieve_limit, token_limit=token_limit,
                                 embedder=make_embedder(embedder))


@registry.register("langchain_ensemble")
def langchain_ensemble(embedder: Any = "hashing", weights: list[float] | None = None, c: int = 60,
                       bm25_preprocess: str = "whitespace") -> Any:
    """LangChain's EnsembleRetriever (RRF) over its BM25Retriever and an in-memory vector store."""
    require("langchain", "langchain_ensemble")
    from ..strategies import RetrievalStrategy
    from ..strategies.builtins import make_embedder
    from .langchain import LangChainEnsembleRetriever

    return RetrievalStrategy(retriever=LangChainEnsembleRetriever(
        embedder=make_embedder(embedder), weights=weights, c=c, bm25_preprocess=bm25_preprocess))


@registry.register("http_memory")
def http_memory(base_url: str | None = None, timeout: float = 10.0) -> Any:
    """A memory service over HTTP (mem0-style add/search); no base_url: memlab's loopback service."""
    from ..strategies import RetrievalStrategy
    from .http import HTTPMemoryRetriever

    return RetrievalStrategy(retriever=HTTPMemoryRetriever(base_url=base_url, timeout=timeout))


#: The extra each adapter needs (None: nothing beyond memlab).
PEER_STRATEGIES: dict[str, str | None] = {"camel_chat_history": "camel", "camel_longterm": "camel",
                                          "langchain_ensemble": "langchain", "http_memory": None}

__all__ = ["EXTRAS", "PEER_STRATEGIES", "available", "require"]
