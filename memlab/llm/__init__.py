"""LLM clients: the ``LLM`` interface, ``OpenAIChat`` (any OpenAI-compatible server, with
retries and a ``ResponseCache``), and ``OfflineLLM`` (a deterministic stand-in)."""

from .base import LLM, Completion, LLMError, LLMUsage, UsesLLM, sum_usage
from .cache import ResponseCache
from .offline import OfflineLLM
from .openai_chat import OpenAIChat, RetryEvent

__all__ = ["LLM", "Completion", "LLMError", "LLMUsage", "UsesLLM", "sum_usage", "ResponseCache",
           "OfflineLLM", "OpenAIChat", "RetryEvent"]
