"""HashingEmbedder: the offline default. Lexical, not semantic.

It hashes word tokens (and, optionally, character n-grams inside words) into a fixed
number of signed buckets. Two texts are similar exactly when they share tokens, so it
behaves like a bag-of-words vector space model: good enough to exercise every code path
and to retrieve turns that repeat the question's words, blind to paraphrase. Use
``SentenceTransformerEmbedder`` for semantic similarity.
"""

from __future__ import annotations

import hashlib
import math
import re

import numpy as np

from .base import Embedder

_WORD = re.compile(r"\w+", re.UNICODE)
_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")


def _bucket(token: str, dim: int) -> tuple[int, float]:
    digest = hashlib.blake2b(token.encode("utf-8"), digest_size=8).digest()
    h = int.from_bytes(digest, "little")
    return h % dim, (1.0 if (h >> 63) & 1 else -1.0)


class HashingEmbedder(Embedder):
    """Signed feature hashing of lower-cased word tokens (CJK text: single characters and bigrams).

    Term weight is ``1 + log(tf)`` (sublinear), each token hashed with BLAKE2b into one of
    ``n_features`` buckets with a sign. With ``char_ngrams=(a, b)``, character n-grams of
    lengths a..b of each word (padded with spaces) are added at weight ``char_weight``.
    """

    def __init__(self, n_features: int = 384, char_ngrams: tuple[int, int] | None = None,
                 char_weight: float = 0.5):
        self.n_features = n_features
        self.char_ngrams = char_ngrams
        self.char_weight = char_weight
        self._on_params_changed()

    def _on_params_changed(self) -> None:
        if not isinstance(self.n_features, int) or self.n_features < 1:
            raise ValueError(f"n_features must be a positive int, got {self.n_features!r}")
        self._cache: dict[str, tuple[int, float]] = {}

    @property
    def dim(self) -> int:
        return self.n_features

    def tokens(self, text: str) -> dict[str, float]:
        counts: dict[str, float] = {}
        for word in _WORD.findall(text.lower()):
            if _CJK.search(word):
                chars = _CJK.findall(word)
                pieces = chars + [a + b for a, b in zip(chars, chars[1:])]
                pieces += [w for w in re.split(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+", word) if w]
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
