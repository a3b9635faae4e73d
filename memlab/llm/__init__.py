"""LLM clients: the ``LLM`` interface, ``OpenAIChat`` (any OpenAI-compatible server, with
retries and a ``ResponseCache``). ``OfflineLLM``, the deterministic stand-in, lives in
``memlab.offline`` (above the summariser and extractor it imitates); ``memlab.llm.OfflineLLM``
still finds it, looked up on first use."""

import importlib
from typing import Any

from .base import LLM, Completion, LLMError, LLMUsage, UsesLLM, sum_usage
from .cache import ResponseCache
from .openai_chat import OpenAIChat, RetryEvent

__all__ = ["LLM", "Completion", "LLMError", "LLMUsage", "UsesLLM", "sum_usage", "ResponseCache",
           "OfflineLLM", "OpenAIChat", "RetryEvent"]


def __getattr__(name: str) -> Any:
    if name == "OfflineLLM":
        return importlib.import_module("memlab.offline.llm").OfflineLLM
    raise AttributeError(f"module 'memlab.llm' has no attribute {name!r}")
