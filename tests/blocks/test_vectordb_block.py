import json
import math

import numpy as np
import pytest

from memlab.base import ConfigError, MemlabError
from memlab.blocks import MemoryBlock, VectorDBBlock
from memlab.blocks.vectordb import RECORD_KEY, record_metadata
from memlab.embeddings.hashing import HashingEmbedder
from memlab.records import MemoryRecord, ToolCall
from memlab.storage.vector import NumpyVectorStore
from memlab.testing.doubles import KeywordEmbedder


def make_store(kind):
    if kind == "numpy":
        return NumpyVectorStore()
    chroma = pytest.importorskip("memlab.storage.chroma")
    return chroma.ChromaVectorStore(embedder=KeywordEmbedder())


@pytest.fixture(params=["numpy", "chroma"])
def block(request):
    store = make_store(request.param)
    yield VectorDBBlock(storage=store, embedding=KeywordEmbedder())
    store.close()


def rec(id, content, role="user", ts=0.0, **kw):
    return MemoryRecord(role=role, content=content, id=id, timestamp=ts, **kw)


FRUIT = [rec("ab", "apple and banana", ts=1.0), rec("a", "an apple", ts=2.0),
         rec("c", "cherry", role="assistant", ts=3.0, agent_id="bot")]


def test_retrieve_scores_are_cosine_best_first(block):
    block.write_records(FRUIT)
    out = block.retrieve("apple", limit=2)
    assert [c.id for c in out] == ["a", "ab"]
    assert [c.score for c in out] == pytest.approx([1.0, 1 / math.sqrt(2)], abs=1e-6)
    assert [c.timestamp for c in out] == [2.0, 1.0]
    both = block.retrieve("banana apple apple", limit=3)
    # query (2, 1, 0)/sqrt(5): 'ab' (1,1,0)/sqrt(2) -> 3/sqrt(10); 'a' -> 2/sqrt(5); 'c' -> 0
    assert [c.id for c in both] == ["ab", "a", "c"]
    assert [c.score for c in both] == pytest.approx([3 / math.sqrt(10), 2 / math.sqrt(5), 0.0], abs=1e-6)


def test_full_record_is_rebuilt(block):
    call = rec("x", "apple tool", role="assistant", ts=5.5, agent_id="bot", name="helper",
               metadata={"source_ids": ["D1:1", "D1:2"], "topic": "fruit", "n": 3},
               tool_calls=[ToolCall("c1", "lookup", '{"q": "apple"}')])
    block.write_record(call)
    (hit,) = block.retrieve("apple", limit=1)
    assert hit.memory_record == call
    assert hit.memory_record.source_ids == ["D1:1", "D1:2"]


def test_blank_content_is_skipped(block):
    block.write_records([rec("e", ""), rec("w", "  \n\t"), rec("a", "apple")])
    assert len(block) == 1
    assert [c.id for c in block.retrieve("apple", limit=5)] == ["a"]
    block.write_records([rec("e2", "")])  # a batch with nothing to embed writes nothing
    assert len(block) == 1


def test_where_filters_on_scalar_metadata(block):
    records = FRUIT + [rec("t", "apple tart", ts=4.0, metadata={"topic": "dessert", "tags": ["x"]})]
    block.write_records(records)
    assert [c.id for c in block.retrieve("apple cherry", limit=5, where={"role": "assistant"})] == ["c"]
    assert [c.id for c in block.retrieve("apple", limit=5, where={"agent_id": "bot"})] == ["c"]
    assert [c.id for c in block.retrieve("apple", limit=5, where={"topic": "dessert"})] == ["t"]
    assert [c.id for c in block.retrieve("apple", limit=5, where={"timestamp": {"$gte": 2.0}, "role": "user"})] \
        == ["a", "t"]
    assert block.retrieve("apple", limit=5, where={"tags": "x"}) == []  # lists are not filterable


def test_record_metadata_layout():
    r = rec("m", "apple", ts=7.0, agent_id="bot",
            metadata={"role": "spoofed", "n": 2, "ok": True, "ids": [1], "none": None})
    md = record_metadata(r)
    assert md["role"] == "user" and md["agent_id"] == "bot" and md["timestamp"] == 7.0
    assert md["n"] == 2 and md["ok"] is True and "ids" not in md and "none" not in md
    assert MemoryRecord.from_dict(json.loads(md[RECORD_KEY])) == r
    assert md["id"] == "m"  # filterable, as on every retriever
    assert sorted(md) == sorted(["role", "agent_id", "timestamp", "id", RECORD_KEY, "n", "ok"])


def test_rewrite_same_id_replaces(block):
    block.write_records(FRUIT)
    block.write_record(rec("a", "cherry now", ts=9.0))
    assert len(block) == 3
    top = block.retrieve("cherry", limit=1)[0]
    # 'a' and 'c' tie at 1.0; the rewritten 'a' is the newest insertion, so 'c' comes first
    assert top.id == "c"
    ids = {c.id: c.memory_record.content for c in block.retrieve("cherry", limit=3)}
    assert ids["a"] == "cherry now"


def test_ties_keep_insertion_order(block):
    block.write_records([rec("first", "apple"), rec("second", "apple"), rec("third", "apple")])
    assert [c.id for c in block.retrieve("apple", limit=3)] == ["first", "second", "third"]


def test_limit_keyword_and_removal(block):
    block.write_records(FRUIT)
    assert block.retrieve("apple", limit=0) == []
    assert block.retrieve("   ", limit=3) == []
    assert block.retrieve("durian", limit=3) == []  # no known word: zero vector, nothing similar
    with pytest.raises(ValueError, match=r"limit must be non-negative, got -1"):
        block.retrieve("apple", limit=-1)
    with pytest.raises(TypeError, match=r"keyword must be a string, got NoneType"):
        block.retrieve(None)
    block.remove_records_by_ids(["a", "unknown"])
    out = block.retrieve("apple", limit=3)
    assert [c.id for c in out] == ["ab", "c"]
    assert [c.score for c in out] == pytest.approx([1 / math.sqrt(2), 0.0], abs=1e-6)
    block.clear()
    assert len(block) == 0 and block.retrieve("apple") == []


def test_pop_and_index_removal_are_not_supported(block):
    with pytest.raises(NotImplementedError, match="VectorDBBlock does not support pop_records"):
        block.pop_records(1)
    with pytest.raises(NotImplementedError, match="does not support remove_records_by_indices"):
        block.remove_records_by_indices([0])


def test_foreign_store_entries_are_never_recalled_counted_or_deleted():
    store = NumpyVectorStore()
    store.add(["alien"], np.array([[1.0, 0.0, 0.0]]), metadatas=[{"role": "user"}])
    block = VectorDBBlock(storage=store, embedding=KeywordEmbedder())
    assert len(block) == 0 and block.retrieve("apple") == []
    block.write_records([rec("a", "an apple")])
    assert [c.id for c in block.retrieve("apple", limit=5)] == ["a"] and len(block) == 1
    block.clear()
    assert store.ids() == ["alien"]  # not memlab's to delete


def test_a_reopened_persistent_store_gives_its_records_back(tmp_path):
    chroma = pytest.importorskip("memlab.storage.chroma")
    path = str(tmp_path / "chroma")
    first = VectorDBBlock(storage=chroma.ChromaVectorStore(path=path, collection="blk"),
                          embedding=KeywordEmbedder())
    first.write_records(FRUIT)
    first.store.close()
    again = VectorDBBlock(storage=chroma.ChromaVectorStore(path=path, collection="blk"),
                          embedding=KeywordEmbedder())
    assert len(again) == 3
    (hit,) = again.retrieve("cherry", limit=1)
    assert hit.memory_record == FRUIT[2] and hit.score == pytest.approx(1.0, abs=1e-6)
    assert [c.id for c in again.retrieve("apple", limit=2)] == ["a", "ab"]
    again.remove_records_by_ids(["a"])
    assert len(again) == 2 and again.store.ids() == ["ab", "c"]
    again.store.close()


def test_offline_defaults_and_contract():
    block = VectorDBBlock()
    assert isinstance(block, MemoryBlock)
    assert isinstance(block.store, NumpyVectorStore) and isinstance(block.embedder, HashingEmbedder)
    assert block.get_params(deep=False) == {"storage": None, "embedding": None}
    block.write_records([rec("q", "where is the red umbrella"), rec("o", "the weather is fine")])
    assert block.retrieve("red umbrella", limit=1)[0].id == "q"
    block.set_params(embedding=HashingEmbedder(n_features=384))  # same storage: records stay
    assert len(block) == 2
    assert len(block.clone()) == 0
    with pytest.raises(ConfigError, match=r"VectorDBBlock parameter 'storage': expected a VectorStore or None, got \{\}"):
        VectorDBBlock(storage={})
    with pytest.raises(ConfigError, match=r"VectorDBBlock parameter 'embedding': expected an Embedder or None, got 'hashing'"):
        VectorDBBlock(embedding="hashing")
