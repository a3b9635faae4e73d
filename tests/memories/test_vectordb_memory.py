import math

import pytest

from memlab.base import ConfigError
from memlab.embeddings.hashing import HashingEmbedder
from memlab.memories import VectorDBMemory
from memlab.storage.vector import NumpyVectorStore


def ids(records):
    return [r.id for r in records]


def fruit(rec):
    return [rec("m1", "apple and banana"), rec("m2", "cherry", role="assistant"),
            rec("m3", "banana")]


def test_query_defaults_to_last_user_message(rec, keyword_embedder):
    memory = VectorDBMemory(embedding=keyword_embedder, retrieve_limit=2)
    assert memory.retrieve() == []  # no user message yet
    memory.write_records(fruit(rec))
    assert memory.current_topic == "banana"
    out = memory.retrieve()
    # as in CAMEL, the current message is its own best match
    assert ids(out) == ["m3", "m1"]
    assert [c.score for c in out] == pytest.approx([1.0, 1 / math.sqrt(2)], abs=1e-6)
    memory.write_record(rec("m4", "cherry", role="assistant"))  # not a user message
    assert memory.current_topic == "banana"


def test_explicit_query_and_where(rec, keyword_embedder):
    memory = VectorDBMemory(embedding=keyword_embedder, retrieve_limit=3)
    memory.write_records(fruit(rec))
    assert ids(memory.retrieve("cherry"))[0] == "m2"
    assert ids(memory.retrieve("apple banana", where={"role": "user"})) == ["m1", "m3"]
    assert memory.retrieve("") == []


def test_get_context_is_chronological(rec, keyword_embedder, word_creator):
    memory = VectorDBMemory(context_creator=word_creator(100), embedding=keyword_embedder, retrieve_limit=2)
    memory.write_records(fruit(rec))
    messages, tokens = memory.get_context()
    assert [m["content"] for m in messages] == ["apple and banana", "banana"]
    assert tokens == (3 + 1 + 3) + (3 + 1 + 1) + 3
    messages, _ = memory.get_context("cherry")  # m2 (1.0), then m1 (0.0 ties, first inserted)
    assert messages == [{"role": "user", "content": "apple and banana"},
                        {"role": "assistant", "content": "cherry"}]


def test_clear_agent_id_and_contract(rec):
    store = NumpyVectorStore()
    memory = VectorDBMemory(storage=store, agent_id="bot")
    memory.write_record(rec("m1", "where is the red umbrella"))
    hit = memory.retrieve()[0]
    assert hit.id == "m1" and hit.memory_record.agent_id == "bot"
    assert isinstance(memory.block.embedder, HashingEmbedder) and memory.block.store is store
    assert memory.get_params(deep=False) == {"context_creator": None, "storage": store, "embedding": None,
                                             "retrieve_limit": 3, "agent_id": "bot"}
    memory.set_params(retrieve_limit=1)  # same storage: records stay
    assert ids(memory.retrieve()) == ["m1"]
    memory.clear()
    assert memory.current_topic == "" and memory.retrieve("umbrella") == [] and len(store) == 0
    with pytest.raises(ValueError, match=r"retrieve_limit must be non-negative, got -2"):
        VectorDBMemory(retrieve_limit=-2)
    with pytest.raises(ConfigError, match=r"^VectorDBMemory parameter 'agent_id': expected a string, got 3$"):
        VectorDBMemory(agent_id=3)
