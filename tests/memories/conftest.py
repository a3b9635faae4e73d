import pytest

from memlab.context import ScoreBasedContextCreator
from memlab.records import MemoryRecord
from memlab.testing.doubles import KeywordEmbedder, WordCounter


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
