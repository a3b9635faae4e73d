"""The vector-store interface and the exact in-memory numpy store (the default)."""

from __future__ import annotations

import math
from abc import abstractmethod
from typing import Any, ClassVar, Mapping, Sequence

import numpy as np

from ..base import Component, MemlabError
from ..capabilities import Capabilities
from ..filters import Where, matches, validate_where

Scalar = str | int | float | bool


class VectorStore(Component):
    """Vectors with ids, metadata and documents, searched by cosine similarity.

    ``add`` is an upsert: an existing id is replaced (chromadb's own ``add`` would
    silently keep the old entry). Metadata values are str, int, float or bool.
    """

    #: Declared once per class: ``query`` returns the exact top k, ties by insertion order
    #: (``Capabilities.exact_search``); False for approximate indexes.
    exact_search: ClassVar[bool] = False

    def capabilities(self) -> Capabilities:
        return Capabilities(exact_search=type(self).exact_search)

    @abstractmethod
    def add(self, ids: Sequence[str], vectors: np.ndarray,
            metadatas: Sequence[Mapping[str, Scalar]] | None = None,
            documents: Sequence[str] | None = None) -> None: ...

    @abstractmethod
    def delete(self, ids: Sequence[str]) -> None:
        """Remove ``ids``; unknown ids are ignored."""

    @abstractmethod
    def query(self, vector: np.ndarray, k: int,
              where: Where | None = None) -> list[tuple[str, float]]:
        """Up to ``k`` (id, cosine similarity) pairs, best first; ties by insertion order."""

    @abstractmethod
    def get(self, ids: Sequence[str]) -> list[dict[str, Any]]:
        """For each known id, ``{"id", "vector", "metadata", "document"}``, in the order asked."""

    @abstractmethod
    def ids(self) -> list[str]:
        """Every stored id, in insertion order."""

    @abstractmethod
    def clear(self) -> None: ...

    def close(self) -> None:
        """Release files or clients; a persistent store can be reopened afterwards."""

    def __len__(self) -> int:
        return len(self.ids())

    def __contains__(self, id: object) -> bool:
        return bool(self.get([str(id)]))


def check_add_args(ids, vectors, metadatas, documents, dim: int | None) -> np.ndarray:
    """Validate ``add`` arguments the same way for every backend; return vectors as float32."""
    ids = list(ids)
    vectors = np.asarray(vectors, dtype=np.float32)
    if vectors.ndim != 2 or vectors.shape[0] != len(ids):
        raise MemlabError(f"vectors must have shape ({len(ids)}, dim), got {vectors.shape}")
    if dim is not None and vectors.shape[1] != dim:
        raise MemlabError(f"vectors must have dimension {dim}, got {vectors.shape[1]}")
    if len(set(ids)) != len(ids):
        raise MemlabError("ids passed to add must be unique")
    for name, seq in (("metadatas", metadatas), ("documents", documents)):
        if seq is not None and len(seq) != len(ids):
            raise MemlabError(f"{name} must have one entry per id ({len(ids)}), got {len(seq)}")
    for md in metadatas or []:
        for key, value in md.items():
            if not isinstance(value, (str, int, float, bool)):
                raise MemlabError(f"metadata {key!r} must be str, int, float or bool, "
                                  f"got {type(value).__name__}")
    return vectors


class NumpyVectorStore(VectorStore):
    """Exact brute-force cosine search in memory. Vectors are normalised on add."""

    exact_search = True

    def __init__(self, dim: int | None = None):
        self.dim = dim
        self._on_params_changed()

    def _on_params_changed(self) -> None:
        self._ids: list[str] = []
        self._index: dict[str, int] = {}
        # rows [0, len(ids)) of a buffer whose capacity doubles: amortised O(1) appends
        self._buf = np.zeros((0, self.dim or 0), dtype=np.float32)
        self._vectors = self._buf
        self._metadatas: list[dict[str, Scalar]] = []
        self._documents: list[str] = []

    def add(self, ids, vectors, metadatas=None, documents=None) -> None:
        ids = [str(i) for i in ids]
        if not ids:
            return
        vectors = check_add_args(ids, vectors, metadatas, documents, self.dim or (
            self._vectors.shape[1] if self._ids else None))
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        vectors = np.divide(vectors, norms, out=np.zeros_like(vectors), where=norms > 0)
        self.delete([i for i in ids if i in self._index])
        if not self._ids:
            self._buf = np.zeros((0, vectors.shape[1]), dtype=np.float32)
        start = len(self._ids)
        end = start + len(ids)
        if end > self._buf.shape[0]:
            grown = np.zeros((max(end, 2 * self._buf.shape[0], 16), vectors.shape[1]), dtype=np.float32)
            grown[:start] = self._buf[:start]
            self._buf = grown
        self._buf[start:end] = vectors
        self._vectors = self._buf[:end]
        self._ids.extend(ids)
        self._index.update({i: start + n for n, i in enumerate(ids)})
        self._metadatas.extend(dict(m) for m in (metadatas or [{}] * len(ids)))
        self._documents.extend(documents or [""] * len(ids))

    def delete(self, ids) -> None:
        drop = {self._index[i] for i in map(str, ids) if i in self._index}
        if not drop:
            return
        keep = [n for n in range(len(self._ids)) if n not in drop]
        self._ids = [self._ids[n] for n in keep]
        self._buf = self._vectors[keep]
        self._vectors = self._buf
        self._metadatas = [self._metadatas[n] for n in keep]
        self._documents = [self._documents[n] for n in keep]
        self._index = {i: n for n, i in enumerate(self._ids)}

    def query(self, vector, k, where=None):
        validate_where(where)
        if k <= 0 or not self._ids:
            return []
        q = np.asarray(vector, dtype=np.float32).reshape(-1)
        if q.shape[0] != self._vectors.shape[1]:
            raise MemlabError(f"query vector must have dimension {self._vectors.shape[1]}, got {q.shape[0]}")
        norm = math.sqrt(float(q @ q))  # np.linalg.norm's checks cost more than the dot at small n
        if norm == 0:
            return []
        scores = self._vectors @ (q / norm)
        if where:
            allowed = np.array([matches(m, where) for m in self._metadatas])
            candidates = np.flatnonzero(allowed)
            if candidates.size == 0:
                return []
            cand_scores = scores[candidates]
        else:  # every row is a candidate: no index array, no copy of the scores
            candidates, cand_scores = None, scores
        size = cand_scores.size
        if size > k:
            # keep every candidate scoring at least the k-th best (ties included), then the
            # stable sort below orders only those: O(n + k log k) instead of O(n log n)
            kth = np.partition(cand_scores, size - k)[size - k]
            top = np.flatnonzero(cand_scores >= kth)
            candidates = top if candidates is None else candidates[top]
            cand_scores = cand_scores[top]
        elif candidates is None:
            candidates = np.arange(size)
        # stable sort on -score keeps insertion order among ties
        order = candidates[np.argsort(-cand_scores, kind="stable")][:k]
        return [(self._ids[n], float(scores[n])) for n in order]

    def get(self, ids):
        out = []
        for i in map(str, ids):
            n = self._index.get(i)
            if n is not None:
                out.append({"id": i, "vector": self._vectors[n].copy(),
                            "metadata": dict(self._metadatas[n]), "document": self._documents[n]})
        return out

    def ids(self):
        return list(self._ids)

    def clear(self) -> None:
        self._on_params_changed()
