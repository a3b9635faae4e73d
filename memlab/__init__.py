"""memlab: evaluate memory strategies of LLM agents.

Public names are imported lazily, so ``import memlab`` stays fast and optional
dependencies (sentence-transformers, chromadb) load only when used.
"""

from __future__ import annotations

from . import _compat
from ._lazy import lazy_exports

__version__ = "0.1.0"

_EXPORTS: dict[str, str] = {
    # configuration and records
    "Component": "base", "Registry": "registry", "MemlabError": "base", "ConfigError": "base",
    "MemoryRecord": "records", "ContextRecord": "records", "Hit": "records",
    "Role": "records", "ToolCall": "records",
    # token counting and context building
    "TokenCounter": "tokens", "TiktokenCounter": "tokens", "ApproxTokenCounter": "tokens",
    "ScoreBasedContextCreator": "context", "ContextBudgetError": "context",
    # storage
    "KeyValueStore": "storage.kv", "InMemoryKeyValueStore": "storage.kv",
    "JsonlKeyValueStore": "storage.kv", "SQLiteKeyValueStore": "storage.kv",
    "VectorStore": "storage.vector", "NumpyVectorStore": "storage.vector",
    "ChromaVectorStore": "storage.chroma", "MemlabEmbeddingFunction": "storage.chroma",
    # embeddings
    "Embedder": "embeddings.base", "HashingEmbedder": "embeddings.hashing",
    "SentenceTransformerEmbedder": "embeddings.sentence_transformer",
    "OpenAIEmbedder": "embeddings.openai", "CachedEmbedder": "embeddings.cache",
    # blocks and memories
    "MemoryBlock": "blocks.base", "AgentMemory": "memories.base",
    "ChatHistoryBlock": "blocks.chat_history", "VectorDBBlock": "blocks.vectordb",
    "ChatHistoryMemory": "memories.agent", "VectorDBMemory": "memories.agent",
    "LongtermAgentMemory": "memories.agent",
    # layered memory and LLMs
    "ShortTermMemory": "memories.layered", "LongTermMemory": "memories.layered",
    "LayeredMemory": "memories.layered",
    "LLM": "llm.base", "OpenAIChat": "llm.openai_chat", "OfflineLLM": "offline.llm",
    "ResponseCache": "llm.cache", "LoopbackServer": "offline.loopback", "LocalLLM": "llm.local",
    # retrieval and decay
    "BM25Retriever": "retrieval", "VectorRetriever": "retrieval", "HybridRetriever": "retrieval",
    "Tokenizer": "retrieval", "RRF": "retrieval", "WeightedSum": "retrieval",
    "Ebbinghaus": "decay", "ManualClock": "decay",
    # strategies
    "Strategy": "strategy", "Context": "strategy",
    "strategies": "strategies",
}

__all__ = sorted(_EXPORTS) + ["__version__"]


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

_compat.install()  # old import paths still resolve, with a DeprecationWarning
