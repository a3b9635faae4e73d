"""LLM clients: the ``LLM`` interface, ``OpenAIChat`` (any OpenAI-compatible server, with
retries and a ``ResponseCache``). ``OfflineLLM``, the deterministic stand-in, lives in
``memlab.offline`` (above the summariser and extractor it imitates)."""

from .base import LLM, Completion, LLMError, LLMUsage, UsesLLM, sum_usage
from .cache import ResponseCache
from .openai_chat import OpenAIChat, RetryEvent

__all__ = ["LLM", "Completion", "LLMError", "LLMUsage", "UsesLLM", "sum_usage", "ResponseCache",
           "OpenAIChat", "RetryEvent"]
