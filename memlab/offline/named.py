"""LLMs by name: the offline stand-in or the real OpenAI-compatible client. Here, above
both (``memlab.llm`` below, the stand-in beside), so it imports each downward."""

from __future__ import annotations

from typing import Any

from ..base import ConfigError
from ..embeddings.named import default_cache_path


def make_llm(llm: Any):
    """An LLM by name: None, "offline", "openai", "local" (``LocalLLM``: the bundled Gemma 3 270M
    through llama.cpp), "local:PATH.gguf" (``LocalLLM`` over that GGUF), or an LLM instance.
    "openai" and "local" answer repeated requests from a response cache in the memlab cache folder."""
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
    if isinstance(llm, str) and (llm == "local" or llm.startswith("local:")):
        from pathlib import Path

        from ..llm.cache import ResponseCache
        from ..llm.local import LocalLLM

        return LocalLLM(model_path=llm[len("local:"):] or None if ":" in llm else None,
                        cache=ResponseCache(str(Path(default_cache_path()).with_name("responses.sqlite3"))))
    raise ConfigError(f"llm must be None, 'offline', 'openai', 'local', 'local:PATH.gguf' or an LLM, got {llm!r}")
