"""Offline stand-ins, above what they imitate: ``OfflineLLM`` answers memlab's own prompts
with the rules of the extractive summariser and the rule-based extractor, and
``LoopbackServer`` serves OpenAI-compatible answers on 127.0.0.1 for the real ``openai``
client. ``make_llm`` builds an LLM by name (the stand-in or the real client).

Names load lazily, so importing this package imports neither.
"""

from __future__ import annotations

from .._lazy import lazy_exports

_EXPORTS = {"OfflineLLM": "llm", "LoopbackServer": "loopback", "OfflineChat": "loopback", "make_llm": "named"}

__all__ = ["LoopbackServer", "OfflineChat", "OfflineLLM", "make_llm"]


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
