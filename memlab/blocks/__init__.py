"""Memory blocks: the smallest units of memory (a chat history, a vector store of records)."""

from .base import MemoryBlock
from .chat_history import ChatHistoryBlock
from .vectordb import VectorDBBlock

__all__ = ["ChatHistoryBlock", "MemoryBlock", "VectorDBBlock"]
