"""``where`` means the same on BM25, vector (numpy, chromadb) and hybrid retrievers."""

import pytest

from memlab.base import MemlabError
from memlab.records import MemoryRecord
from memlab.retrieval.bm25 import BM25Retriever
from memlab.filters import filter_view, matches
from memlab.retrieval.hybrid import HybridRetriever
from memlab.retrieval.vector import VectorRetriever

try:
    from memlab.storage.chroma import ChromaVectorStore
except ImportError:
    ChromaVectorStore = None

RECORDS = [
    MemoryRecord("user", "common alpha", id="r0", timestamp=10.0, agent_id="a",
                 metadata={"topic": "food", "n": 1, "tags": ["x"]}),
    MemoryRecord("assistant", "common beta", id="r1", timestamp=20.0, agent_id="b",
                 metadata={"topic": "travel", "n": 2, "flag": True}),
    MemoryRecord("user", "common gamma", id="r2", timestamp=30.0, agent_id="a",
                 metadata={"n": 3, "id": "fake", "role": "system"}),
    MemoryRecord("system", "common delta", id="r3", timestamp=40.0, agent_id="",
                 metadata={"topic": "food", "status": "outdated"}),
]

WHERES = [
    None,
    {"role": "user"},
    {"agent_id": "a", "topic": "food"},
    {"timestamp": {"$gte": 20.0}},
    {"timestamp": {"$lt": 30}},
    {"id": {"$in": ["r1", "r2"]}},
    {"id": "r2"},  # the built-in id wins over metadata "id"
    {"role": "system"},  # ... and the built-in role over metadata "role"
    {"topic": {"$ne": "food"}},  # records without topic do not match ($ne included)
    {"topic": {"$nin": ["travel"]}},
    {"$or": [{"n": {"$gt": 2}}, {"flag": True}]},
    {"$and": [{"role": "user"}, {"n": {"$lte": 1}}]},
    {"tags": "x"},  # list metadata is invisible to filters
    {"status": {"$ne": "outdated"}},
    {"missing": 1},
]


def expected(where):
    return {r.id for r in RECORDS if matches(filter_view(r), where)}


def retrievers():
    out = [BM25Retriever(), VectorRetriever(), HybridRetriever()]
    if ChromaVectorStore is not None:
        from memlab.retrieval.vector import VectorRetriever as V

        out.append(V(vector_store=ChromaVectorStore(collection="filters")))
        out.append(HybridRetriever([BM25Retriever(), V(vector_store=ChromaVectorStore(collection="filters2"))]))
    return out


@pytest.fixture(scope="module")
def indexed():
    rs = retrievers()
    for r in rs:
        r.add(RECORDS)
    return rs


@pytest.mark.parametrize("where", WHERES, ids=[str(w) for w in WHERES])
def test_same_filter_same_result_everywhere(indexed, where):
    want = expected(where)
    for r in indexed:
        got = {h.id for h in r.search("common", k=10, where=where)}
        assert got == want, (r, where)


def test_expected_sets_are_the_documented_ones():
    assert expected({"id": "r2"}) == {"r2"}
    assert expected({"role": "system"}) == {"r3"}
    assert expected({"topic": {"$ne": "food"}}) == {"r1"}
    assert expected({"tags": "x"}) == set()
    assert expected({"status": {"$ne": "outdated"}}) == set()


def test_malformed_filters_raise_on_every_retriever(indexed):
    for r in indexed:
        with pytest.raises(MemlabError, match="unknown operator"):
            r.search("common", where={"n": {"$regex": "x"}})
    assert BM25Retriever().search("x", where={"a": 1}) == []


def test_filter_view_snapshot_is_taken_at_add():
    r = BM25Retriever()
    record = MemoryRecord("user", "word", id="x", metadata={"topic": "a"})
    r.add([record])
    record.metadata["topic"] = "b"
    assert [h.id for h in r.search("word", where={"topic": "a"})] == ["x"]
    r.add([record])
    assert [h.id for h in r.search("word", where={"topic": "b"})] == ["x"]
