"""NumpyVectorStore.query ranks exactly like a full stable sort: ties by insertion order, any k, filters."""

import numpy as np
import pytest

from memlab.storage.vector import NumpyVectorStore


@pytest.mark.parametrize("seed", range(6))
def test_query_equals_a_full_stable_sort(seed):
    rng = np.random.default_rng(seed)
    base = rng.standard_normal((7, 8)).astype(np.float32)
    vectors = base[rng.integers(0, 7, 60)]  # repeated rows: many exact ties
    store = NumpyVectorStore()
    store.add([f"v{i}" for i in range(60)], vectors, metadatas=[{"even": i % 2 == 0} for i in range(60)])
    normed = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    for q in rng.standard_normal((4, 8)).astype(np.float32):
        scores = normed @ (q / np.linalg.norm(q))
        for k in (1, 3, 10, 59, 60, 80):
            order = np.argsort(-scores, kind="stable")[:k]
            assert [i for i, _ in store.query(q, k)] == [f"v{n}" for n in order]
            even = [n for n in np.argsort(-scores, kind="stable") if n % 2 == 0][:k]
            assert [i for i, _ in store.query(q, k, where={"even": True})] == [f"v{n}" for n in even]
