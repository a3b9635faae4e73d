"""Kept for code that imports from here: OfflineLLM, the offline stand-in for a chat model, lives in
``memlab.offline.llm``, above the summariser and extractor it imitates. Names are looked up
there on first use; nothing in memlab imports this module."""

from __future__ import annotations

import importlib
from typing import Any


def __getattr__(name: str) -> Any:
    return getattr(importlib.import_module("memlab.offline.llm"), name)
