"""VectorRetriever over the numpy store and, when it imports, chromadb."""

import json

import numpy as np
import pytest

from memlab.base import MemlabError
from memlab.embeddings.hashing import HashingEmbedder
from memlab.records import MemoryRecord
from memlab.retrieval.vector import RECORD_KEY, VectorRetriever
from memlab.storage.vector import NumpyVectorStore

try:
    from memlab.storage.chroma import ChromaVectorStore
except ImportError:  # chromadb missing: numpy only
    ChromaVectorStore = None

STORES = ["numpy"] + (["chroma"] if ChromaVectorStore is not None else [])


def make(kind):
    if kind == "numpy":
        return VectorRetriever(vector_store=NumpyVectorStore())
    return VectorRetriever(vector_store=ChromaVectorStore(collection="vr-test"))


def rec(i, text, ts=0.0, **md):
    return MemoryRecord("user", text, id=str(i), timestamp=ts, metadata=md)


@pytest.fixture(params=STORES)
def retriever(request):
    r = make(request.param)
    yield r
    r.vector_store.close()


def test_scores_are_cosine_similarities(retriever):
    texts = ["red apple pie", "green apple", "blue sky"]
    retriever.add([rec(i, t) for i, t in enumerate(texts)])
    hits = retriever.search("apple", k=3)
    emb = HashingEmbedder()
    q = emb.embed(["apple"])[0]
    expected = {str(i): float(emb.embed([t])[0] @ q) for i, t in enumerate(texts)}
    assert [h.id for h in hits][:2] == ["1", "0"]
    for h in hits:
        assert h.score == pytest.approx(expected[h.id], abs=1e-5)
        assert h.components["vector"] == {"score": h.score, "rank": h.rank}
    assert [h.rank for h in hits] == list(range(1, len(hits) + 1))


def test_blank_content_is_skipped_and_records_kept(retriever):
    retriever.add([rec(0, "   "), rec(1, "hello there"), rec(2, "")])
    assert len(retriever) == 1 and "0" not in retriever
    assert retriever.get_record("1").content == "hello there"
    assert retriever.vector_store.ids() == ["1"]
    retriever.add([rec(1, " ")])  # a blank replacement removes the old one
    assert len(retriever) == 0 and retriever.vector_store.ids() == []


def test_ties_by_insertion_order_and_k(retriever):
    retriever.add([rec(i, "same words") for i in range(4)])
    assert [h.id for h in retriever.search("same words", k=3)] == ["0", "1", "2"]
    retriever.add([rec(0, "same words")])  # re-added: moves last
    assert [h.id for h in retriever.search("same words", k=4)] == ["1", "2", "3", "0"]


def test_remove_and_reset(retriever):
    retriever.add([rec(0, "alpha"), rec(1, "alpha beta")])
    retriever.remove(["0"])
    assert [h.id for h in retriever.search("alpha")] == ["1"]
    assert retriever.vector_store.ids() == ["1"]
    retriever.reset()
    assert len(retriever) == 0 and retriever.vector_store.ids() == [] and retriever.search("alpha") == []


def test_empty_cases_return_nothing(retriever):
    assert retriever.search("anything") == []
    retriever.add([rec(0, "words")])
    assert retriever.search("") == [] and retriever.search("  !! ") == []
    assert retriever.search("words", k=0) == []


def test_store_gets_filter_view_as_metadata():
    r = VectorRetriever(vector_store=NumpyVectorStore())
    r.add([MemoryRecord("assistant", "hi", id="a", timestamp=5.0, agent_id="bot",
                        metadata={"topic": "x", "tags": ["no"], "id": "fake"})])
    md = r.vector_store.get(["a"])[0]["metadata"]
    whole = md.pop(RECORD_KEY)
    assert md == {"topic": "x", "role": "assistant", "agent_id": "bot", "timestamp": 5.0, "id": "a"}
    assert MemoryRecord.from_dict(json.loads(whole)) == r.get_record("a")


def test_a_store_handed_in_gives_back_the_records_a_vector_retriever_wrote():
    store = NumpyVectorStore()
    store.add(["theirs"], HashingEmbedder().embed(["alpha"]))
    first = VectorRetriever(vector_store=store)
    first.add([rec(0, "alpha beta"), rec(1, "gamma")])
    again = VectorRetriever(vector_store=store)  # e.g. a persistent folder opened again
    assert [r.id for r in again.records()] == ["0", "1"] and "theirs" not in again
    assert again.get_record("1") == first.get_record("1")
    assert [h.id for h in again.search("alpha", k=1)] == ["0"]
    again.add([rec(2, "alpha")])
    assert [h.id for h in again.search("alpha", k=2)] == ["2", "0"]  # restored and new records rank together


def test_changing_the_embedder_reembeds_everything():
    r = VectorRetriever(embedder=HashingEmbedder(), vector_store=NumpyVectorStore())
    r.add([rec(0, "alpha beta"), rec(1, "gamma")])
    r.set_params(embedder__n_features=64)
    assert r.vector_store.get(["0"])[0]["vector"].shape == (64,)
    assert r.search("gamma")[0].id == "1"
    r.set_params(vector_store=NumpyVectorStore())
    assert r.vector_store.ids() == ["0", "1"]


def test_none_is_stored_as_given_and_resolved_at_use():
    r = VectorRetriever()
    assert r.get_params() == {"embedder": None, "vector_store": None}
    r.add([rec(0, "alpha beta")])
    assert r.search("alpha")[0].id == "0"
    r.set_params(vector_store=NumpyVectorStore())  # the records move into the store handed in
    assert r.vector_store.ids() == ["0"]


def test_reset_deletes_only_its_own_vectors_from_a_store_handed_in():
    store = NumpyVectorStore()
    store.add(["theirs"], HashingEmbedder().embed(["alpha"]))
    r = VectorRetriever(vector_store=store)
    r.add([rec(0, "alpha beta")])
    assert [h.id for h in r.search("alpha")] == ["0"]  # ids it never added are skipped
    r.reset()
    assert store.ids() == ["theirs"]


def test_params_show_in_get_params_and_clone_is_empty():
    r = VectorRetriever(embedder=HashingEmbedder(), vector_store=NumpyVectorStore())
    r.add([rec(0, "x")])
    params = r.get_params()
    assert params["embedder__n_features"] == 384 and "vector_store__dim" in params
    c = r.clone()
    assert len(c) == 0 and c.vector_store.ids() == [] and c.vector_store is not r.vector_store
    with pytest.raises(MemlabError, match="k must be a non-negative int"):
        r.search("x", k=1.5)


def test_query_vector_is_the_embedded_query():
    r = VectorRetriever(embedder=HashingEmbedder())
    r.add([rec(0, "one two three")])
    v = r.embedder.embed(["one two"])[0]
    assert r.search("one two")[0].score == pytest.approx(float(np.dot(
        v, r.embedder.embed(["one two three"])[0])), abs=1e-6)
