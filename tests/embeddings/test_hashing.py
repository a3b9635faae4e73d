"""HashingEmbedder: fixed, hand-checkable output."""

from __future__ import annotations

import math

import numpy as np
import pytest

from memlab.base import MemlabError
from memlab.embeddings.base import Embedder
from memlab.embeddings.hashing import HashingEmbedder, _bucket

TEXT = "The cat sat on the mat"


def test_bucket_and_sign_are_fixed():
    """BLAKE2b-64 of the token: bucket = h mod n, sign from bit 63 (pinned values)."""
    assert [_bucket(t, 16) for t in ["the", "cat", "sat", "on", "mat"]] == [
        (14, -1.0), (3, -1.0), (7, 1.0), (8, 1.0), (10, -1.0)]
    assert _bucket("the", 384) == (222, -1.0)


def test_known_vector_by_formula():
    """'the' occurs twice: weight 1 + ln 2; the others 1. Norm sqrt((1+ln2)^2 + 4)."""
    v = HashingEmbedder(n_features=16).embed([TEXT])[0]
    assert list(np.flatnonzero(v)) == [3, 7, 8, 10, 14]
    norm = math.sqrt((1 + math.log(2)) ** 2 + 4)
    expected = np.zeros(16)
    expected[[3, 7, 8, 10, 14]] = [-1 / norm, 1 / norm, 1 / norm, -1 / norm, -(1 + math.log(2)) / norm]
    np.testing.assert_allclose(v, expected, atol=1e-7)
    assert v.dtype == np.float32


def test_deterministic_across_instances_and_calls():
    a = HashingEmbedder().embed([TEXT, "another text"])
    b = HashingEmbedder().embed(["another text", TEXT])
    assert np.array_equal(a[0], b[1]) and np.array_equal(a[1], b[0])
    assert np.array_equal(a, HashingEmbedder().embed([TEXT, "another text"]))


def test_tokens_lowercase_and_weights():
    assert HashingEmbedder().tokens("Cat cat CAT dog") == {"cat": 1 + math.log(3), "dog": 1.0}


def test_cjk_tokenisation():
    h = HashingEmbedder()
    assert h.tokens("我喜欢猫") == {"我": 1, "喜": 1, "欢": 1, "猫": 1, "我喜": 1, "喜欢": 1, "欢猫": 1}
    # mixed runs: bigrams only between adjacent CJK characters; the Latin part stays whole
    assert h.tokens("中a文") == {"中": 1, "文": 1, "a": 1}
    assert h.tokens("カタカナ") == {"カ": 1 + math.log(2), "タ": 1, "ナ": 1,
                                    "カタ": 1, "タカ": 1, "カナ": 1}
    v = h.embed(["我喜欢猫", "猫", "狗"])
    assert v[0] @ v[1] > 0.3  # share the character 猫
    assert v[0] @ v[2] == 0.0


def test_empty_text_is_the_zero_vector():
    v = HashingEmbedder(n_features=8).embed(["", "   ", "!!", "word"])
    assert not v[:3].any()
    assert abs(np.linalg.norm(v[3]) - 1.0) < 1e-6
    assert HashingEmbedder(n_features=8).embed([]).shape == (0, 8)


def test_char_ngrams():
    h = HashingEmbedder(char_ngrams=(2, 3), char_weight=0.5)
    tokens = h.tokens("cat")
    # " cat " has 4 bigrams and 3 trigrams
    assert tokens == {"cat": 1.0, "# c": 0.5, "#ca": 0.5, "#at": 0.5, "#t ": 0.5,
                      "# ca": 0.5, "#cat": 0.5, "#at ": 0.5}
    v = h.embed(["cats", "cat"])
    plain = HashingEmbedder().embed(["cats", "cat"])
    assert plain[0] @ plain[1] == 0.0  # different words, different buckets
    assert v[0] @ v[1] > 0.3  # shared n-grams make near spellings similar


def test_params_clone_and_identity():
    h = HashingEmbedder(n_features=64, char_ngrams=(3, 4))
    assert isinstance(h, Embedder)
    assert h.get_params() == {"n_features": 64, "char_ngrams": (3, 4), "char_weight": 0.5}
    c = h.clone()
    assert c is not h and c.get_params() == h.get_params()
    assert np.array_equal(c.embed([TEXT]), h.embed([TEXT]))
    assert c.identity() == h.identity()
    c.set_params(n_features=32)
    assert c.dim == 32 and c.embed([TEXT]).shape == (1, 32)
    assert c.identity() != h.identity()
    assert repr(h) == "HashingEmbedder(n_features=64, char_ngrams=(3, 4))"


@pytest.mark.parametrize("kwargs, message", [
    ({"n_features": 0}, "HashingEmbedder parameter 'n_features': expected an int >= 1, got 0"),
    ({"char_ngrams": (3, 2)}, r"HashingEmbedder parameter 'char_ngrams': expected None or \(min, max\) ints "
                              r"with 1 <= min <= max, got \(3, 2\)"),
    ({"char_ngrams": 3}, r"HashingEmbedder parameter 'char_ngrams': expected None or .*, got 3$"),
    ({"char_weight": -1.0}, "HashingEmbedder parameter 'char_weight': expected a number >= 0, got -1.0"),
])
def test_invalid_parameters(kwargs, message):
    with pytest.raises(MemlabError, match=message):
        HashingEmbedder(**kwargs)
