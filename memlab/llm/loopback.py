"""Kept for code that imports from here: the loopback OpenAI-compatible server lives in
``memlab.offline.loopback``, above the summariser and extractor it imitates. Names are looked up
there on first use; nothing in memlab imports this module."""

from __future__ import annotations

import importlib
from typing import Any


def __getattr__(name: str) -> Any:
    return getattr(importlib.import_module("memlab.offline.loopback"), name)
