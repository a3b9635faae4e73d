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

from .extras import EXTRAS, PEER_STRATEGIES, available, require
from .recipes import camel_chat_history, camel_longterm, http_memory, langchain_ensemble

__all__ = ["EXTRAS", "PEER_STRATEGIES", "available", "camel_chat_history", "camel_longterm", "http_memory",
           "langchain_ensemble", "require"]
