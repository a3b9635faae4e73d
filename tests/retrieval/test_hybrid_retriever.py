"""HybridRetriever: fusion of children, components, weights, add/remove everywhere."""

import pytest

from memlab.base import ConfigError
from memlab.embeddings.hashing import HashingEmbedder
from memlab.records import MemoryRecord
from memlab.retrieval.bm25 import BM25Retriever
from memlab.retrieval.fusion import RRF, WeightedSum
from memlab.retrieval.hybrid import HybridRetriever
from memlab.retrieval.vector import VectorRetriever
from memlab.storage.vector import NumpyVectorStore

TEXTS = ["the red fox jumps", "a red car", "blue fox den", "green grass", "red red fox"]


def rec(i, text, ts=0.0):
    return MemoryRecord("user", text, id=str(i), timestamp=ts)


def filled(**kw):
    # the parts are passed in (None would be stored as given): tests below reach into them
    kw.setdefault("retrievers", [BM25Retriever(), VectorRetriever(embedder=HashingEmbedder(),
                                                                  vector_store=NumpyVectorStore())])
    kw.setdefault("fusion", RRF())
    h = HybridRetriever(**kw)
    h.add([rec(i, t) for i, t in enumerate(TEXTS)])
    return h


def test_rrf_scores_from_child_ranks():
    h = filled()
    hits = h.search("red fox", k=5)
    assert [x.rank for x in hits] == list(range(1, len(hits) + 1))
    for hit in hits:
        c = hit.components
        expected = sum(1 / (60 + c[name]["rank"]) for name in ("bm25", "vector") if name in c)
        assert hit.score == pytest.approx(expected, abs=1e-15)
        assert c["hybrid"] == {"score": hit.score, "rank": hit.rank}
    scores = [x.score for x in hits]
    assert scores == sorted(scores, reverse=True)


def test_child_scores_are_the_childs_own():
    h = filled()
    bm25 = {x.id: x for x in h.retrievers[0].search("red fox", k=50)}
    for hit in h.search("red fox", k=5):
        if "bm25" in hit.components:
            assert hit.components["bm25"] == {"score": bm25[hit.id].score, "rank": bm25[hit.id].rank}


def test_absent_child_is_absent_from_components():
    h = filled()
    # "grass": bm25 finds only record 3; the vector child ranks every record
    hits = h.search("grass", k=5)
    assert hits[0].id == "3" and set(hits[0].components) == {"bm25", "vector", "hybrid"}
    assert all("bm25" not in x.components for x in hits[1:])


def test_weights_change_the_fusion_and_are_validated():
    h = filled(weights=[1.0, 0.0])
    hits = h.search("red fox", k=3)
    bm25_order = [x.id for x in h.retrievers[0].search("red fox", k=3)]
    assert [x.id for x in hits] == bm25_order
    with pytest.raises(ConfigError, match="weights has 3 entries but there are 2 retrievers"):
        HybridRetriever(weights=[1, 1, 1])
    with pytest.raises(ConfigError, match="weights has 1 entries but there are 2 retrievers"):
        HybridRetriever(fusion=RRF(weights=[1.0]))


def test_weighted_sum_fusion():
    h = filled(fusion=WeightedSum(), weights=[0.5, 0.5])
    hits = h.search("red fox", k=5)
    bm = {x.id: x.score for x in h.retrievers[0].search("red fox", k=50)}
    lo, hi = min(bm.values()), max(bm.values())
    vec = {x.id: x.score for x in h.retrievers[1].search("red fox", k=50)}
    vlo, vhi = min(vec.values()), max(vec.values())
    for x in hits:
        want = 0.5 * ((bm[x.id] - lo) / (hi - lo) if x.id in bm else 0.0) + 0.5 * (vec[x.id] - vlo) / (vhi - vlo)
        assert x.score == pytest.approx(want, abs=1e-9)


def test_add_remove_reset_reach_every_child():
    h = filled()
    h.remove(["1", "4"])
    for child in h.retrievers:
        assert "1" not in child and "4" not in child
    assert h.retrievers[1].vector_store.ids() == ["0", "2", "3"]
    assert {x.id for x in h.search("red", k=10)} <= {"0", "2", "3"}
    h.reset()
    assert len(h) == 0 and all(len(c) == 0 for c in h.retrievers)


def test_ties_by_insertion_order_and_k():
    h = HybridRetriever()
    h.add([rec(i, "same text") for i in range(3)])
    assert [x.id for x in h.search("same text", k=2)] == ["0", "1"]
    assert h.search("same text", k=0) == [] and HybridRetriever().search("x") == []


def test_repeated_child_names_get_suffixes():
    h = HybridRetriever([BM25Retriever(), BM25Retriever(k1=1.2)])
    h.add([rec(0, "word")])
    assert set(h.search("word")[0].components) == {"bm25", "bm25_2", "hybrid"}


def test_nested_params_and_new_children_get_the_records():
    h = filled()
    params = h.get_params()
    assert params["retrievers__0__k1"] == 1.5 and params["fusion__k"] == 60
    h.set_params(retrievers__0__k1=1.2)
    assert h.retrievers[0].k1 == 1.2
    h.set_params(retrievers=[BM25Retriever(), VectorRetriever()])
    assert all(len(c) == 5 for c in h.retrievers)
    c = h.clone()
    assert len(c) == 0 and all(len(x) == 0 for x in c.retrievers)


def test_deterministic_across_runs():
    a, b = filled(), filled()
    assert [(x.id, x.score) for x in a.search("red fox den", k=5)] == \
           [(x.id, x.score) for x in b.search("red fox den", k=5)]
