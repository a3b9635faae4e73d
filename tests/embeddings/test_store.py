"""The shared embedding store: Arrow files written once, read memory-mapped, keyed by model,
revision and text; clear errors for a malformed file."""

from __future__ import annotations

import numpy as np
import pytest

from memlab.base import MemlabError
from memlab.embeddings.cache import CachedEmbedder
from memlab.embeddings.counting import CountingEmbedder, read_log
from memlab.embeddings.hashing import HashingEmbedder
from memlab.embeddings.prefill import fill
from memlab.embeddings.store import EmbeddingStore, model_digest, reading


class Revised(HashingEmbedder):
    revision = "abc123"


def test_fill_then_read_returns_the_models_vectors_bit_for_bit(tmp_path):
    log = tmp_path / "calls.log"
    cached = CachedEmbedder(CountingEmbedder(HashingEmbedder(), path=str(log)), path=None)
    texts = [f"text number {i}" for i in range(7)]
    # partitions of 3: three files, each named by its keys
    assert fill(tmp_path / "s", [cached], texts + texts[:2], ["a question?"], partition_size=3) == 8
    assert len(list((tmp_path / "s" / model_digest(HashingEmbedder())).glob("part-*.arrow"))) == 3
    assert fill(tmp_path / "s", [cached], texts, ["a question?"]) == 0  # all stored: nothing embedded
    assert sum(read_log(str(log))[0].values()) == 8
    reader = CachedEmbedder(CountingEmbedder(HashingEmbedder(), path=str(log)), path=None)
    with reading(tmp_path / "s"):
        got = reader.embed(texts)
    assert reader.misses == 0 and sum(read_log(str(log))[0].values()) == 8
    assert np.array_equal(got, HashingEmbedder().embed(texts)) and got.dtype == np.float32


def test_the_revision_is_part_of_the_model_key(tmp_path):
    assert model_digest(Revised()) != model_digest(HashingEmbedder())
    fill(tmp_path, [CachedEmbedder(HashingEmbedder())], ["x"])
    assert EmbeddingStore(tmp_path).keys(Revised()) == set() and len(EmbeddingStore(tmp_path).keys(HashingEmbedder())) == 1


def test_a_reader_sees_files_written_after_it_opened(tmp_path):
    cached = CachedEmbedder(HashingEmbedder())
    store = EmbeddingStore(tmp_path)
    assert store.lookup(HashingEmbedder(), [cached.key("late")]) == {}
    fill(tmp_path, [cached], ["late"])
    assert list(store.lookup(HashingEmbedder(), [cached.key("late")])) == [cached.key("late")]


def test_a_malformed_part_is_a_clear_error(tmp_path):
    fill(tmp_path, [CachedEmbedder(HashingEmbedder())], ["x"])
    bad = tmp_path / model_digest(HashingEmbedder()) / "part-0000.arrow"
    bad.write_bytes(b"not arrow")
    with pytest.raises(MemlabError, match=r"part-0000.arrow'.*expected an Arrow IPC file with columns key"):
        EmbeddingStore(tmp_path).keys(HashingEmbedder())


def test_bad_arguments_are_named(tmp_path):
    with pytest.raises(MemlabError, match="partition_size must be a positive integer, got 0"):
        fill(tmp_path, [], [], partition_size=0)
    with pytest.raises(MemlabError, match=r"expected 2 vectors, got an array of shape \(1, 3\)"):
        EmbeddingStore(tmp_path).write(HashingEmbedder(), ["00" * 32, "11" * 32], np.zeros((1, 3)))
