"""Strategy.warm: the replay's hook for bulk preparation (persistent embedding caches)."""

from __future__ import annotations

from memlab import strategies
from memlab.embeddings.cache import CachedEmbedder
from memlab.embeddings.hashing import HashingEmbedder

TEXTS = ["I live in Paris", "I like tea", "I like tea", "where do I live?"]


def test_warm_fills_a_file_cache_found_anywhere_in_the_configuration(tmp_path):
    cache = CachedEmbedder(HashingEmbedder(), path=str(tmp_path / "c.sqlite3"))
    strategy = strategies.get("hybrid", embedder=cache)
    assert cache in list(strategy.components())
    assert strategy.warm(TEXTS) == 3           # distinct texts
    assert len(cache) == 3
    assert (cache.hits, cache.misses) == (0, 3)


def test_warm_leaves_memory_caches_and_cacheless_strategies_alone():
    cache = CachedEmbedder(HashingEmbedder())
    assert strategies.get("vector", embedder=cache).warm(TEXTS) == 0
    assert len(cache) == 0
    assert strategies.get("bm25").warm(TEXTS) == 0

