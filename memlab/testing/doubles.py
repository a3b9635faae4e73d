"""Test doubles with hand-computable outputs, for exact budget and similarity arithmetic in tests:
``WordCounter`` (one token per word) and ``KeywordEmbedder`` (counts of a fixed vocabulary)."""

from __future__ import annotations

import re

import numpy as np

from ..embeddings.base import Embedder
from ..tokens import TokenCounter


class WordCounter(TokenCounter):
    """One token per whitespace-separated word, so budgets are exact arithmetic."""

    def _count(self, text: str) -> int:
        return len(text.split())


class KeywordEmbedder(Embedder):
    """Counts of fixed vocabulary words: cosine similarities are computable by hand."""

    def __init__(self, vocab: tuple[str, ...] = ("apple", "banana", "cherry")):
        self.vocab = vocab

    @property
    def dim(self) -> int:
        return len(self.vocab)

    def _embed(self, texts: list[str]) -> np.ndarray:
        words = [re.findall(r"\w+", t.lower()) for t in texts]
        return np.array([[w.count(v) for v in self.vocab] for w in words], dtype=np.float32)


__all__ = ["KeywordEmbedder", "WordCounter"]
