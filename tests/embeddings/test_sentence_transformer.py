"""SentenceTransformerEmbedder with the real all-MiniLM-L6-v2 weights (loaded offline once)."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import numpy as np
import pytest

from memlab.base import MemlabError
from memlab.embeddings.sentence_transformer import MINILM, SentenceTransformerEmbedder

REFERENCE = json.loads((Path(__file__).parent / "data" / "minilm_reference.json").read_text())
HAVE_ST = importlib.util.find_spec("sentence_transformers") is not None
needs_st = pytest.mark.skipif(not HAVE_ST, reason="sentence-transformers is not installed")


def test_constructor_loads_nothing():
    e = SentenceTransformerEmbedder(model_name="no-such/model", device="cpu", batch_size=8)
    assert e._model is None
    assert SentenceTransformerEmbedder().dim == 384  # known without loading
    assert SentenceTransformerEmbedder(model_name="all-MiniLM-L6-v2").dim == 384


def test_identity_ignores_batch_size_and_device_and_spelling():
    a = SentenceTransformerEmbedder(batch_size=8, device="cpu")
    b = SentenceTransformerEmbedder(model_name="all-MiniLM-L6-v2", batch_size=128, device="cpu")
    b.__dict__["device"] = "cuda"  # a GPU need not be present: identity() reads no device
    assert a.identity() == b.identity() == f'SentenceTransformerEmbedder:{{"model_name": "{MINILM}"}}'
    assert a.identity() != SentenceTransformerEmbedder(model_name="other/model").identity()


def test_invalid_parameters():
    with pytest.raises(MemlabError, match="SentenceTransformerEmbedder parameter 'batch_size': expected an int >= 1, got 0"):
        SentenceTransformerEmbedder(batch_size=0)
    with pytest.raises(MemlabError, match="SentenceTransformerEmbedder parameter 'model_name': expected a non-empty string, got ''"):
        SentenceTransformerEmbedder(model_name="")


def test_missing_library_gives_install_hint(monkeypatch):
    from memlab.embeddings import sentence_transformer as module

    monkeypatch.setitem(sys.modules, "sentence_transformers", None)  # makes the import fail
    with pytest.raises(MemlabError, match=r"pip install memlab\[semantic\]"):
        module._load("some/model", "cpu")


@needs_st
def test_unknown_model_error_names_the_model():
    # HF_HUB_OFFLINE=1 (tests/conftest.py): a model that is not on disk cannot load
    with pytest.raises(MemlabError, match="cannot load sentence-transformers model 'memlab-test/no-such-model'"):
        SentenceTransformerEmbedder(model_name="memlab-test/no-such-model").embed(["x"])


@pytest.fixture(scope="module")
def minilm():
    if not HAVE_ST:
        pytest.skip("sentence-transformers is not installed")
    e = SentenceTransformerEmbedder()
    e.embed(["warm up"])  # the one model load of this module
    return e


@pytest.mark.semantic
def test_matches_stored_reference(minilm):
    v = minilm.embed([REFERENCE["sentence"]])[0]
    assert v.shape == (REFERENCE["dim"],) and v.dtype == np.float32
    np.testing.assert_allclose(v[:8], REFERENCE["first_8"], atol=1e-4)
    assert abs(float(v.astype(np.float64).sum()) - REFERENCE["sum"]) < 1e-3
    assert int(np.argmax(v)) == REFERENCE["argmax"]
    assert abs(np.linalg.norm(v) - 1.0) < 1e-6


@pytest.mark.semantic
def test_paraphrase_is_far_more_similar_than_unrelated(minilm):
    a, b, c = minilm.embed([*REFERENCE["paraphrase_pair"], "The stock market closed higher today."])
    assert abs(float(a @ b) - REFERENCE["paraphrase_cosine"]) < 1e-4
    assert a @ b > 0.8
    assert a @ c < 0.1 and b @ c < 0.1


@pytest.mark.semantic
def test_batch_size_does_not_change_vectors(minilm):
    texts = ["one short text", "a somewhat longer sentence about dogs and cats", "third"]
    small = minilm.clone().set_params(batch_size=1)
    assert small._model is None  # a clone shares the process-wide loaded model on first use
    np.testing.assert_allclose(small.embed(texts), minilm.embed(texts), atol=1e-5)
    assert small.model is minilm.model
