"""HashingEmbedder: the offline default. Lexical, not semantic.

It hashes word tokens (and, optionally, character n-grams inside words) into a fixed
number of signed buckets. Two texts are similar exactly when they share tokens, so it
behaves like a bag-of-words vector space model: good enough to exercise every code path
and to retrieve turns that repeat the question's words, blind to paraphrase. Use
``SentenceTransformerEmbedder`` for semantic similarity.
"""

from __future__ import annotations

import hashlib
import itertools
import math
import re

import numpy as np

from ..base import Param
from ..text import HAN, KANA
from .base import Embedder

_WORD = re.compile(r"\w+", re.UNICODE)
# Scripts written without spaces between words: Hiragana, Katakana, CJK ideographs.
_CJK_RANGES = KANA + HAN
_CJK = re.compile(f"[{_CJK_RANGES}]")
_CJK_RUN = re.compile(f"[{_CJK_RANGES}]+")


def _bucket(token: str, dim: int) -> tuple[int, float]:
    digest = hashlib.blake2b(token.encode("utf-8"), digest_size=8).digest()
    h = int.from_bytes(digest, "little")
    return h % dim, (1.0 if (h >> 63) & 1 else -1.0)


class HashingEmbedder(Embedder):
    """Signed feature hashing of lower-cased word tokens (CJK/kana text: characters and bigrams).

    Tokens are ``\\w+`` runs of the lower-cased text; a run containing CJK or kana
    characters yields each such character, each bigram of adjacent ones, and its other
    parts whole. With ``tf(t)`` the count of token ``t`` in the text,
    ``bucket(t) = h(t) mod n_features`` and ``sign(t) = +1 if bit 63 of h(t) is set else -1``
    (``h`` = BLAKE2b-64 of the UTF-8 token, little-endian), the raw vector is

        v[bucket(t)] += sign(t) * (1 + ln tf(t))     for every distinct token t

    With ``char_ngrams=(a, b)``, each distinct token padded with one space each side
    also adds ``char_weight`` per character n-gram of length a..b (hashed as ``"#" + gram``).
    ``embed`` scales v to unit length; a text with no tokens is the zero vector.
    """

    constraints = {
        "n_features": Param(int, ge=1),
        "char_ngrams": Param((tuple, list), none=True, each=Param(int, ge=1),
                             test=lambda v: len(v) == 2 and v[0] <= v[1],
                             expected="None or (min, max) ints with 1 <= min <= max"),
        "char_weight": Param(float, ge=0),
    }

    def __init__(self, n_features: int = 384, char_ngrams: tuple[int, int] | None = None,
                 char_weight: float = 0.5):
        self.n_features = n_features
        self.char_ngrams = char_ngrams
        self.char_weight = char_weight
        self._on_params_changed()

    def _on_params_changed(self) -> None:
        self._cache: dict[str, tuple[int, float]] = {}

    @property
    def dim(self) -> int:
        return self.n_features

    def tokens(self, text: str) -> dict[str, float]:
        counts: dict[str, float] = {}
        for word in _WORD.findall(text.lower()):
            if _CJK.search(word):
                # characters and bigrams of adjacent characters, plus the non-CJK parts whole
                pieces = []
                for run in _CJK_RUN.findall(word):
                    pieces += list(run) + [a + b for a, b in itertools.pairwise(run)]
                pieces += [w for w in _CJK_RUN.split(word) if w]
            else:
                pieces = [word]
            for piece in pieces:
                counts[piece] = counts.get(piece, 0.0) + 1.0
        weights = {t: 1.0 + math.log(c) for t, c in counts.items()}
        if self.char_ngrams:
            lo, hi = self.char_ngrams
            for word in list(counts):
                padded = f" {word} "
                for n in range(lo, hi + 1):
                    for i in range(len(padded) - n + 1):
                        g = "#" + padded[i:i + n]
                        weights[g] = weights.get(g, 0.0) + self.char_weight
        return weights

    def _embed(self, texts: list[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.n_features), dtype=np.float32)
        for row, text in enumerate(texts):
            for token, weight in self.tokens(text).items():
                slot = self._cache.get(token)
                if slot is None:
                    slot = self._cache[token] = _bucket(token, self.n_features)
                out[row, slot[0]] += slot[1] * weight
        return out
