"""Which token counter the LLM layer uses when none is given.

``memlab.tokens`` (tiktoken offline, or an approximate counter) is the shared source;
``FallbackTokenCounter`` is only used if that module cannot be imported, so the LLM
layer keeps working on its own.
"""

from __future__ import annotations

import re
from typing import Any, Protocol

from ..base import Param

_PIECE = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]|\w+|[^\w\s]", re.UNICODE)


class TokenCounterLike(Protocol):
    def count(self, text: str) -> int: ...

    def count_messages(self, messages: list[dict[str, Any]]) -> int: ...


class FallbackTokenCounter:
    """Approximate: one token per word, CJK character or punctuation mark, plus 3 per message."""

    def count(self, text: str) -> int:
        return len(_PIECE.findall(text or ""))

    def count_messages(self, messages: list[dict[str, Any]]) -> int:
        return sum(3 + self.count(str(m.get("content") or "")) for m in messages) + (3 if messages else 0)


def default_token_counter() -> TokenCounterLike:
    """``memlab.tokens.TiktokenCounter()`` when available, else ``FallbackTokenCounter``."""
    try:
        from ..tokens import TiktokenCounter
    except ImportError:
        return FallbackTokenCounter()
    return TiktokenCounter()


def _counts(counter: Any) -> bool:
    return all(callable(getattr(counter, method, None)) for method in ("count", "count_messages"))


# the constraint of every duck-typed ``token_counter`` parameter
TOKEN_COUNTER = Param(none=True, test=_counts,
                      expected="a token counter (with count() and count_messages()) or None")


def resolve_counter(counter: Any) -> TokenCounterLike:
    if counter is None:
        return default_token_counter()
    for method in ("count", "count_messages"):
        if not callable(getattr(counter, method, None)):
            raise TypeError(f"token_counter must have a {method}() method, got {type(counter).__name__}")
    return counter
