import re

import numpy as np
import pytest

from memlab.context import ScoreBasedContextCreator
from memlab.embeddings.base import Embedder
from memlab.records import MemoryRecord
from memlab.tokens import TokenCounter


class WordCounter(TokenCounter):
    """One token per whitespace-separated word, so budgets are exact arithmetic."""

    def _count(self, text):
        return len(text.split())


class KeywordEmbedder(Embedder):
    """Counts of fixed vocabulary words: cosine similarities are computable by hand."""

    def __init__(self, vocab: tuple[str, ...] = ("apple", "banana", "cherry")):
        self.vocab = vocab

    @property
    def dim(self):
        return len(self.vocab)

    def _embed(self, texts):
        words = [re.findall(r"\w+", t.lower()) for t in texts]
        return np.array([[w.count(v) for v in self.vocab] for w in words], dtype=np.float32)


@pytest.fixture
def keyword_embedder():
    return KeywordEmbedder()


@pytest.fixture
def word_creator():
    """A ScoreBasedContextCreator with WordCounter; call it with the token limit."""
    return lambda limit: ScoreBasedContextCreator(token_counter=WordCounter(), token_limit=limit)


@pytest.fixture
def rec():
    def make(id, content, role="user", ts=None, **kw):
        ts = float(id.lstrip("abcdefghijklmnopqrstuvwxyz") or 0) if ts is None else ts
        return MemoryRecord(role=role, content=content, id=id, timestamp=ts, **kw)
    return make
