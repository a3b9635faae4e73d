"""LLMs by name: the offline stand-in or the real OpenAI-compatible client. Here, above
both (``memlab.llm`` below, the stand-in beside), so it imports each downward."""

from __future__ import annotations

from typing import Any

from ..base import ConfigError
from ..embeddings.named import default_cache_path


def make_llm(llm: Any):
    """An LLM by name: None, "offline", "openai", or an LLM instance."""
    from ..llm.base import LLM

    if llm is None or isinstance(llm, LLM):
        return llm
    if llm == "offline":
        from .llm import OfflineLLM

        return OfflineLLM()
    if llm == "openai":
        from pathlib import Path

        from ..llm.cache import ResponseCache
        from ..llm.openai_chat import OpenAIChat

        return OpenAIChat(cache=ResponseCache(str(Path(default_cache_path()).with_name("responses.sqlite3"))))
    raise ConfigError(f"llm must be None, 'offline', 'openai' or an LLM, got {llm!r}")
