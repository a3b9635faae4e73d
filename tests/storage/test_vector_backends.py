"""One behaviour suite for every VectorStore backend: numpy (exact), chromadb in memory and on disk.

NumpyVectorStore is the reference: chromadb answers (HNSW, approximate) must equal its exact
answers, ids and order, with scores within 1e-5.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from memlab.base import MemlabError
from memlab.filters import matches
from memlab.storage.vector import NumpyVectorStore, VectorStore

chroma = pytest.importorskip("memlab.storage.chroma")
ChromaVectorStore = chroma.ChromaVectorStore

BACKENDS = ["numpy", "chroma-memory", "chroma-disk"]


def make(name, tmp_path, **kw):
    if name == "numpy":
        return NumpyVectorStore(**kw)
    if name == "chroma-memory":
        return ChromaVectorStore(**kw)
    return ChromaVectorStore(path=str(tmp_path / "chroma"), collection="test-store", **kw)


@pytest.fixture(params=BACKENDS)
def store(request, tmp_path):
    s = make(request.param, tmp_path)
    yield s
    s.close()


def ids_of(results):
    return [i for i, _ in results]


# -- basic behaviour ------------------------------------------------------------------

V = np.array([[1, 0, 0], [1, 1, 0], [0, 1, 0], [-1, 0, 0]], dtype=np.float32)


def test_add_get_and_ids(store):
    assert isinstance(store, VectorStore)
    store.add(["a", "b", "c"], V[:3] * 2, metadatas=[{"n": 1}, {"s": "x"}, {"f": 0.5}],
              documents=["doc a", "doc b", "doc c"])
    assert store.ids() == ["a", "b", "c"]
    assert len(store) == 3 and "b" in store and "z" not in store
    got = store.get(["c", "zzz", "b"])
    assert [g["id"] for g in got] == ["c", "b"]
    np.testing.assert_allclose(got[1]["vector"], [1 / math.sqrt(2), 1 / math.sqrt(2), 0], atol=1e-6)
    assert got[1]["vector"].dtype == np.float32
    assert got[0]["metadata"] == {"f": 0.5} and got[1]["metadata"] == {"s": "x"}
    assert got[0]["document"] == "doc c"


def test_defaults_for_metadata_and_documents(store):
    store.add(["a"], V[:1])
    (got,) = store.get(["a"])
    assert (got["id"], got["metadata"], got["document"]) == ("a", {}, "")


def test_query_order_and_exact_cosine(store):
    store.add(["a", "b", "c", "d"], V)
    res = store.query(np.array([2.0, 0.0, 0.0]), k=3)
    assert ids_of(res) == ["a", "b", "c"]
    np.testing.assert_allclose([s for _, s in res], [1.0, 1 / math.sqrt(2), 0.0], atol=1e-5)
    res = store.query(np.array([0.0, 1.0, 0.0]), k=4)
    assert ids_of(res) == ["c", "b", "a", "d"]
    np.testing.assert_allclose([s for _, s in res], [1.0, 1 / math.sqrt(2), 0.0, 0.0], atol=1e-5)
    res = store.query(np.array([-3.0, 1.0, 0.0]), k=1)  # cos = 3 / sqrt(10)
    assert ids_of(res) == ["d"] and abs(res[0][1] - 3 / math.sqrt(10)) < 1e-5


def test_k_edge_cases(store):
    q = np.array([1.0, 0.0, 0.0])
    assert store.query(q, k=5) == []  # empty store
    store.add(["a", "b"], V[:2])
    assert ids_of(store.query(q, k=10)) == ["a", "b"]  # k > count: all
    assert store.query(q, k=0) == []
    assert store.query(np.zeros(3), k=2) == []  # a zero query is similar to nothing


def test_upsert_replaces(store):
    store.add(["a", "b", "c"], V[:3], metadatas=[{"v": 1}, {"v": 1}, {"v": 1}], documents=["1", "2", "3"])
    store.add(["a"], V[3:4], metadatas=[{"v": 2}], documents=["new"])
    assert len(store) == 3
    assert store.ids() == ["b", "c", "a"]  # a replaced id moves to the end
    got = store.get(["a"])[0]
    np.testing.assert_allclose(got["vector"], [-1, 0, 0], atol=1e-6)
    assert got["metadata"] == {"v": 2} and got["document"] == "new"
    res = store.query(np.array([-1.0, 0.0, 0.0]), k=1)
    assert ids_of(res) == ["a"] and abs(res[0][1] - 1.0) < 1e-5


def test_delete(store):
    store.add(["a", "b", "c"], V[:3])
    store.delete(["b", "unknown"])
    store.delete([])
    assert store.ids() == ["a", "c"]
    assert ids_of(store.query(np.array([1.0, 1.0, 0.0]), k=3)) == ["a", "c"]
    assert store.get(["b"]) == []


def test_clear(store):
    store.add(["a", "b"], V[:2])
    store.clear()
    assert store.ids() == [] and len(store) == 0
    assert store.query(np.array([1.0, 0.0, 0.0]), k=3) == []
    store.add(["x"], np.ones((1, 5)))  # a cleared store takes any dimension again
    assert ids_of(store.query(np.ones(5), k=1)) == ["x"]


def test_ties_break_by_insertion_order(store):
    """Identical vectors score the same; the earlier insertion ranks first.

    chromadb cannot promise this itself (HNSW returns ties in graph order); the store
    keeps a sequence number per record and re-sorts 2k + 10 candidates by it.
    """
    same = np.tile([0.3, 0.4, 0.5], (4, 1))
    store.add(["t3", "t1"], same[:2])
    store.add(["other"], V[1:2])
    store.add(["t4", "t2"], same[2:])
    q = np.array([0.3, 0.4, 0.5])
    assert ids_of(store.query(q, k=3)) == ["t3", "t1", "t4"]
    store.add(["t3"], same[:1])  # re-added: now the newest of the tie
    assert ids_of(store.query(q, k=5)) == ["t1", "t4", "t2", "t3", "other"]


def test_dimension_mismatch(store):
    store.add(["a"], V[:1])
    with pytest.raises(MemlabError, match="dimension 3, got 4"):
        store.add(["b"], np.ones((1, 4)))
    with pytest.raises(MemlabError, match="dimension 3, got 2"):
        store.query(np.ones(2), k=1)
    with pytest.raises(MemlabError, match=r"shape \(2, dim\)"):
        store.add(["x", "y"], np.ones((3, 3)))


def test_fixed_dim_parameter(tmp_path):
    for name in BACKENDS:
        s = make(name, tmp_path / name, dim=3)
        with pytest.raises(MemlabError, match="dimension 3, got 4"):
            s.add(["a"], np.ones((1, 4)))
        s.close()


def test_invalid_arguments(store):
    with pytest.raises(MemlabError, match="ids passed to add must be unique"):
        store.add(["a", "a"], V[:2])
    with pytest.raises(MemlabError, match="metadata 'x' must be str, int, float or bool, got list"):
        store.add(["a"], V[:1], metadatas=[{"x": [1]}])
    with pytest.raises(MemlabError, match="unknown operator '\\$like'"):
        store.query(np.ones(3), k=1, where={"a": {"$like": "x"}})


# -- filters --------------------------------------------------------------------------

def filter_corpus():
    rng = np.random.default_rng(7)
    vectors = rng.standard_normal((60, 16)).astype(np.float32)
    metadatas = []
    for i in range(60):
        md = {"speaker": ["alice", "bob", "carol"][i % 3], "session": i // 10}
        if i % 4:
            md["score"] = round(i / 7, 3)
        if i % 5 == 0:
            md["kind"] = "fact"
        metadatas.append(md)
    return [f"r{i:02d}" for i in range(60)], vectors, metadatas, rng.standard_normal(16)


FILTERS = [
    {"speaker": "bob"},
    {"session": 3},
    {"score": 2.143},
    {"speaker": {"$in": ["alice", "carol"]}},
    {"session": {"$gte": 4}},
    {"score": {"$lt": 2.0}},
    {"speaker": "bob", "session": {"$lte": 2}},
    {"$and": [{"session": {"$gt": 1}}, {"speaker": {"$ne": "alice"}}]},
    {"$or": [{"kind": "fact"}, {"session": 5}]},
    {"$or": [{"score": {"$gte": 8}}, {"$and": [{"speaker": "carol"}, {"session": 0}]}]},
    {"kind": "fact"},                       # key missing on most records
    {"kind": {"$ne": "fact"}},              # missing key does not match $ne
    {"score": {"$nin": [1.0, 2.143]}},      # nor $nin
    {"speaker": {"$in": []}},               # chromadb refuses this: evaluated by memlab
    {"session": {"$in": [1, "one"]}},       # mixed types: chromadb refuses, memlab evaluates
    {"speaker": "nobody"},
]


@pytest.fixture(scope="module")
def filter_stores(tmp_path_factory):
    ids, vectors, metadatas, _ = filter_corpus()
    stores = {name: make(name, tmp_path_factory.mktemp(name)) for name in BACKENDS}
    for s in stores.values():
        s.add(ids, vectors, metadatas=metadatas)
    yield stores
    for s in stores.values():
        s.close()


@pytest.mark.parametrize("where", FILTERS, ids=[str(f) for f in FILTERS])
def test_filters_identical_across_backends(filter_stores, where):
    ids, vectors, metadatas, q = filter_corpus()
    # the answer by brute force: cosine of every allowed record, best first
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    scores = unit @ (q / np.linalg.norm(q))
    allowed = [n for n, md in enumerate(metadatas) if matches(md, where)]
    best = sorted(allowed, key=lambda n: -scores[n])[:8]
    expected = [(ids[n], float(scores[n])) for n in best]
    for name in BACKENDS:
        got = filter_stores[name].query(q, k=8, where=where)
        assert ids_of(got) == ids_of(expected), name
        np.testing.assert_allclose([s for _, s in got], [s for _, s in expected], atol=1e-5)


def test_filter_counts_by_hand(filter_stores):
    """Hand-counted sizes, so a shared mistake in every backend would still fail."""
    q = filter_corpus()[3]
    counts = {"speaker": ("bob", 20), "kind": ("fact", 12), "session": (3, 10)}
    for name, s in filter_stores.items():
        for key, (value, n) in counts.items():
            assert len(s.query(q, k=100, where={key: value})) == n, (name, key)
        assert len(s.query(q, k=100, where={"kind": {"$ne": "fact"}})) == 0, name
        # score present on i % 4 != 0 (45 records); $nin drops i=7 (1.0) and i=15 (2.143)
        assert len(s.query(q, k=100, where={"score": {"$nin": [1.0, 2.143]}})) == 43, name
        assert len(s.query(q, k=100, where={"session": {"$in": [1, "one"]}})) == 10, name


# -- exactness on random data ---------------------------------------------------------

def test_chroma_equals_exact_search_on_random_vectors(tmp_path):
    rng = np.random.default_rng(0)
    vectors = rng.standard_normal((2000, 64)).astype(np.float32)
    queries = rng.standard_normal((20, 64)).astype(np.float32)
    ids = [f"v{i}" for i in range(2000)]
    exact = NumpyVectorStore()
    exact.add(ids, vectors)
    for name in BACKENDS[1:]:
        s = make(name, tmp_path)
        s.add(ids, vectors)
        for q in queries:
            want, got = exact.query(q, k=10), s.query(q, k=10)
            assert ids_of(got) == ids_of(want), name
            np.testing.assert_allclose([x for _, x in got], [x for _, x in want], atol=1e-5)
        s.close()


# -- chromadb specifics ---------------------------------------------------------------

def test_chroma_persistent_reopen_after_close(tmp_path):
    from chromadb.api.shared_system_client import SharedSystemClient

    path = str(tmp_path / "db")
    s = ChromaVectorStore(path=path, collection="reopen", dim=3)
    s.add(["a", "b", "c"], V[:3], metadatas=[{"n": 1}, {"n": 2}, {"n": 3}], documents=["x", "y", "z"])
    s.close()
    assert path not in SharedSystemClient._identifier_to_system  # the chromadb system really stopped
    r = ChromaVectorStore(path=path, collection="reopen")
    assert r.ids() == ["a", "b", "c"]
    assert r.get(["b"])[0]["metadata"] == {"n": 2} and r.get(["b"])[0]["document"] == "y"
    assert ids_of(r.query(np.array([1.0, 0.2, 0.0]), k=2, where={"n": {"$gte": 2}})) == ["b", "c"]
    with pytest.raises(MemlabError, match="dimension 3, got 4"):  # dimension read back from disk
        r.add(["d"], np.ones((1, 4)))
    r.add(["d"], V[:1])  # the sequence continues after the stored records
    assert r.ids() == ["a", "b", "c", "d"]
    assert ids_of(r.query(V[0], k=2)) == ["a", "d"]  # tie: older first
    r.close()
    with pytest.raises(MemlabError, match="holds vectors of dimension 3, but dim=5"):
        ChromaVectorStore(path=path, collection="reopen", dim=5).ids()


def test_chroma_collection_reopens_with_plain_chromadb(tmp_path):
    """The stored embedding-function config rebuilds memlab's embedder, so chromadb's
    default (an ONNX model download) is never used, even for text queries."""
    import chromadb
    from chromadb.config import Settings

    from memlab.embeddings.hashing import HashingEmbedder

    embedder = HashingEmbedder(n_features=32, char_ngrams=(2, 3))
    path = str(tmp_path / "db")
    s = ChromaVectorStore(embedder=embedder, path=path, collection="plain")
    texts = ["the cat sat", "dogs bark loudly"]
    s.add(["c", "d"], embedder.embed(texts), documents=texts)
    s.close()
    client = chromadb.PersistentClient(path=path, settings=Settings(anonymized_telemetry=False))
    try:
        coll = client.get_collection("plain")
        ef = coll.configuration["embedding_function"]
        assert isinstance(ef, chroma.MemlabEmbeddingFunction)
        assert ef.embedder.identity() == embedder.identity()
        res = coll.query(query_texts=["a barking dog"], n_results=1)
        assert res["ids"] == [["d"]]
    finally:
        client.close()


def test_chroma_embedding_config_never_stores_api_keys():
    from memlab.embeddings.cache import CachedEmbedder
    from memlab.embeddings.openai import OpenAIEmbedder

    inner = OpenAIEmbedder(model="m", api_key="sk-secret", base_url="http://127.0.0.1:9/v1", dimensions=8)
    config = chroma.MemlabEmbeddingFunction(CachedEmbedder(inner)).get_config()
    assert "sk-secret" not in str(config)
    rebuilt = chroma.MemlabEmbeddingFunction.build_from_config(config).embedder
    assert isinstance(rebuilt, CachedEmbedder) and rebuilt.embedder.api_key is None
    assert rebuilt.identity() == inner.identity()


def test_chroma_ephemeral_stores_do_not_share_state():
    a, b = ChromaVectorStore(collection="same"), ChromaVectorStore(collection="same")
    a.add(["x"], V[:1])
    assert b.ids() == [] and a.ids() == ["x"]
    a.close()
    b.close()


def test_chroma_reserved_metadata_key():
    s = ChromaVectorStore()
    with pytest.raises(MemlabError, match="'memlab:seq' is reserved"):
        s.add(["a"], V[:1], metadatas=[{chroma.SEQ_KEY: 1}])
    s.close()


def test_chroma_parameter_validation():
    with pytest.raises(MemlabError, match=r"ChromaVectorStore parameter 'collection': expected 3-512 characters from "
                                          r"\[A-Za-z0-9._-\], starting and ending with a letter or digit, got 'x'"):
        ChromaVectorStore(collection="x")
    with pytest.raises(MemlabError, match="ChromaVectorStore parameter 'ef_search': expected an int >= 1, got 0"):
        ChromaVectorStore(ef_search=0)
    s = ChromaVectorStore(ef_search=50)
    assert s.get_params() == {"embedder": None, "collection": "memlab", "path": None,
                              "ef_search": 50, "dim": None}
    s.add(["a"], V[:1])
    assert s._col().configuration["hnsw"]["ef_search"] == 50
    s.close()


def test_chroma_existing_collection_takes_new_ef_search(tmp_path):
    path = str(tmp_path / "db")
    ChromaVectorStore(path=path, collection="efs", ef_search=100).close()
    s = ChromaVectorStore(path=path, collection="efs", ef_search=300)
    assert s._col().configuration["hnsw"]["ef_search"] == 300
    s.close()
