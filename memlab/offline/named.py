"""LLMs by name: the offline stand-in or the real OpenAI-compatible client. Here, above
both (``memlab.llm`` below, the stand-in beside), so it imports each downward."""

from __future__ import annotations

from typing import Any

from ..base import ConfigError
from ..embeddings.named import default_cache_path


def make_llm(llm: Any, kv_slot: str | None = None):
    """An LLM by name: None, "offline", "openai", "local" (``LocalLLM``: the default local model,
    Qwen2.5-Coder-1.5B-Instruct, through llama.cpp), "local:NAME" (a model of
    ``memlab.llm.models.MODELS``, e.g. "local:gemma-3-270m"), "local:PATH.gguf" (``LocalLLM`` over
    that GGUF), or an LLM instance. "openai" and "local" answer repeated requests from a response
    cache in the memlab cache folder. ``kv_slot``: the llama.cpp context a local model uses
    (the CLI gives its judge its own, so the answerer's prompts do not evict the judge's prefix)."""
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
        from ..llm.models import MODELS

        rest = llm[len("local:"):] if ":" in llm else ""
        where = {"model": rest} if rest in MODELS else {"model_path": rest or None}
        slot = {"kv_slot": kv_slot} if kv_slot else {}
        return LocalLLM(**where, **slot,
                        cache=ResponseCache(str(Path(default_cache_path()).with_name("responses.sqlite3"))))
    raise ConfigError(f"llm must be None, 'offline', 'openai', 'local', 'local:NAME' (a model name), "
                      f"'local:PATH.gguf' or an LLM, got {llm!r}")
