"""CachedEmbedder: only misses reach the inner embedder; values are bit-identical."""

from __future__ import annotations

import hashlib
import pickle
import sqlite3

import numpy as np
import pytest

from memlab.base import MemlabError
from memlab.embeddings.base import Embedder
from memlab.embeddings.cache import CachedEmbedder
from memlab.embeddings.hashing import HashingEmbedder


class CountingEmbedder(HashingEmbedder):
    """A real HashingEmbedder that records every batch it is asked to embed."""

    def __init__(self, n_features: int = 32):
        super().__init__(n_features=n_features)

    def _on_params_changed(self) -> None:
        super()._on_params_changed()
        self._calls: list[list[str]] = []

    def _embed(self, texts):
        self._calls.append(list(texts))
        return super()._embed(texts)


def test_hits_misses_and_batching():
    inner = CountingEmbedder()
    cache = CachedEmbedder(inner)
    assert isinstance(cache, Embedder)
    out = cache.embed(["a b", "c", "a b", "d"])
    assert inner._calls == [["a b", "c", "d"]]  # one batch, first-seen order, duplicate once
    assert (cache.misses, cache.hits) == (3, 1)
    out2 = cache.embed(["d", "e", "c"])
    assert inner._calls[-1] == ["e"]
    assert (cache.misses, cache.hits) == (4, 3)
    assert np.array_equal(out2[0], out[3]) and np.array_equal(out2[2], out[1])
    cache.embed(["a b", "c"])
    assert len(inner._calls) == 2 and (cache.misses, cache.hits) == (4, 5)
    assert len(cache) == 4


def test_values_bit_identical_to_uncached():
    texts = ["The cat sat on the mat", "", "dogs", "我喜欢猫", "The cat sat on the mat"]
    plain = HashingEmbedder(n_features=48).embed(texts)
    cache = CachedEmbedder(HashingEmbedder(n_features=48))
    first, second = cache.embed(texts), cache.embed(texts)
    assert first.dtype == np.float32 and first.shape == (5, 48)
    assert first.tobytes() == plain.tobytes()
    assert second.tobytes() == plain.tobytes()
    assert cache.embed([]).shape == (0, 48)


def test_reopen_keeps_the_cache(tmp_path):
    path = tmp_path / "cache" / "emb.db"
    first = CachedEmbedder(CountingEmbedder(), path=path)
    values = first.embed(["x", "y"])
    first.close()
    inner = CountingEmbedder()
    second = CachedEmbedder(inner, path=path)
    again = second.embed(["y", "x", "z"])
    assert inner._calls == [["z"]]
    assert (second.hits, second.misses) == (2, 1)
    assert again[1].tobytes() == values[0].tobytes() and again[0].tobytes() == values[1].tobytes()


def test_key_is_sha256_of_identity_and_text(tmp_path):
    path = tmp_path / "emb.db"
    inner = HashingEmbedder(n_features=8)
    cache = CachedEmbedder(inner, path=path)
    vector = cache.embed(["hello"])[0]
    key = hashlib.sha256((inner.identity() + "\0" + "hello").encode("utf-8")).hexdigest()
    with sqlite3.connect(path) as conn:
        rows = conn.execute("SELECT key, vector FROM embeddings").fetchall()
    assert rows == [(key, vector.astype("<f4").tobytes())]


def test_identity_change_is_a_miss(tmp_path):
    path = tmp_path / "emb.db"
    a = CachedEmbedder(CountingEmbedder(n_features=32), path=path)
    a.embed(["same text"])
    b = CachedEmbedder(CountingEmbedder(n_features=16), path=path)
    assert b.identity() != a.identity()
    assert b.embed(["same text"]).shape == (1, 16)
    assert (b.hits, b.misses) == (0, 1)
    assert len(b) == 2  # both identities live side by side


def test_delegates_dim_identity_and_params():
    inner = HashingEmbedder(n_features=24)
    cache = CachedEmbedder(inner)
    assert cache.dim == 24 and cache.identity() == inner.identity()
    assert cache.get_params()["embedder__n_features"] == 24
    cache.set_params(embedder__n_features=12)
    assert cache.dim == 12 and cache.embed(["a"]).shape == (1, 12)
    clone = cache.clone()
    assert clone.embedder is not inner and (clone.hits, clone.misses) == (0, 0)


def test_pickle_reopens_the_file(tmp_path):
    cache = CachedEmbedder(HashingEmbedder(n_features=8), path=tmp_path / "emb.db")
    cache.embed(["a"])
    copy = pickle.loads(pickle.dumps(cache))
    assert copy.embed(["a"]).tobytes() == cache.embed(["a"]).tobytes()
    assert (copy.hits, copy.misses) == (1, 1)  # the miss counted before pickling travelled


def test_errors():
    with pytest.raises(MemlabError, match="CachedEmbedder parameter 'embedder': expected an Embedder, got 'hashing'"):
        CachedEmbedder("hashing")
    cache = CachedEmbedder(HashingEmbedder())
    cache.close()
    with pytest.raises(MemlabError, match="is closed"):
        cache.embed(["a"])
