"""The embedder interface: texts in, L2-normalised float32 vectors out.

Some models embed a search query differently from the passages it should find (e5 and
bge prefix them with "query: " / "passage: " or an instruction). ``embed`` is the passage
side (what is stored); ``embed_queries`` the query side. For a symmetric embedder
(``asymmetric`` False, the default) both are the same function.
"""

from __future__ import annotations

import json
from abc import abstractmethod

import numpy as np

from ..base import Component


class Embedder(Component):
    """Turns texts into unit-length vectors, so a dot product is cosine similarity."""

    @property
    @abstractmethod
    def dim(self) -> int:
        """Length of every vector this embedder returns."""

    @abstractmethod
    def _embed(self, texts: list[str]) -> np.ndarray:
        """Raw vectors, shape (len(texts), dim); normalised by ``embed``."""

    def embed(self, texts: list[str]) -> np.ndarray:
        """Vectors of shape (len(texts), dim), float32, each of unit length (zero stays zero)."""
        texts = list(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        vectors = np.asarray(self._embed(texts), dtype=np.float32)
        if vectors.shape != (len(texts), self.dim):
            raise ValueError(f"{type(self).__name__} returned shape {vectors.shape}, "
                             f"expected ({len(texts)}, {self.dim})")
        return normalize(vectors)

    def embed_one(self, text: str) -> np.ndarray:
        return self.embed([text])[0]

    @property
    def asymmetric(self) -> bool:
        """True when ``embed_queries`` differs from ``embed`` (query/passage modes or prefixes)."""
        return False

    def _embed_queries(self, texts: list[str]) -> np.ndarray:
        """Raw query vectors; symmetric embedders use ``_embed``."""
        return self._embed(texts)

    def embed_queries(self, texts: list[str]) -> np.ndarray:
        """Search queries as unit vectors, shape (len(texts), dim), in the model's query mode."""
        texts = list(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        if not self.asymmetric:
            return self.embed(texts)
        vectors = np.asarray(self._embed_queries(texts), dtype=np.float32)
        if vectors.shape != (len(texts), self.dim):
            raise ValueError(f"{type(self).__name__} returned shape {vectors.shape}, "
                             f"expected ({len(texts)}, {self.dim})")
        return normalize(vectors)

    def identity(self) -> str:
        """A stable string naming this embedder and every parameter that changes its output.

        Used as part of the embedding cache key.
        """
        params = {k: v for k, v in self.get_params(deep=False).items() if k not in self._identity_ignores()}
        return f"{type(self).__name__}:" + json.dumps(params, sort_keys=True, default=repr)

    def _identity_ignores(self) -> set[str]:
        """Parameters that do not change the vectors (batch sizes, clients, caches)."""
        return set()


def normalize(vectors: np.ndarray) -> np.ndarray:
    """Rows scaled to unit L2 norm; all-zero rows stay zero."""
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return np.divide(vectors, norms, out=np.zeros_like(vectors), where=norms > 0)
