import math

import pytest

from memlab.base import ConfigError
from memlab.blocks import ChatHistoryBlock, VectorDBBlock
from memlab.memories import LongtermAgentMemory
from memlab.storage.vector import NumpyVectorStore

SQRT_HALF = 1 / math.sqrt(2)


def ids(records):
    return [r.id for r in records]


def memory_with(keyword_embedder, **kw):
    vectors = VectorDBBlock(storage=NumpyVectorStore(), embedding=keyword_embedder)
    return LongtermAgentMemory(vector_db_block=vectors, **kw)


def conversation(rec):
    # m1 and m2 are old and relevant to the final question m7 ("apple"); m3..m6 are not
    return [rec("s0", "be nice", role="system"),
            rec("m1", "apple banana"), rec("m2", "apple pie", role="assistant"),
            rec("m3", "filler three"), rec("m4", "filler four", role="assistant"),
            rec("m5", "filler five"), rec("m6", "filler six", role="assistant"),
            rec("m7", "apple please")]


def test_layout_is_system_then_recalls_then_history(rec, keyword_embedder):
    memory = memory_with(keyword_embedder, window_size=2, retrieve_limit=1)
    memory.write_records(conversation(rec))
    out = memory.retrieve()
    assert ids(out) == ["s0", "m2", "m6", "m7"]
    assert [c.score for c in out] == pytest.approx([1.0, 1.0, 0.9, 1.0], abs=1e-6)


def test_query_message_does_not_recall_itself_nor_crowd_out_recalls(rec, keyword_embedder):
    memory = memory_with(keyword_embedder, window_size=2, retrieve_limit=2)
    memory.write_records(conversation(rec))
    out = memory.retrieve()
    # CAMEL would recall m7 (the query itself, cosine 1.0) and m2; memlab recalls m2 and m1
    assert ids(out) == ["s0", "m2", "m1", "m6", "m7"]
    assert [c.score for c in out[1:3]] == pytest.approx([1.0, SQRT_HALF], abs=1e-6)
    assert len(set(ids(out))) == len(out)


def test_window_none_boosts_relevant_history_and_never_duplicates(rec, keyword_embedder):
    memory = memory_with(keyword_embedder, retrieve_limit=1, chat_history_block=ChatHistoryBlock(keep_rate=0.5))
    memory.write_records(conversation(rec))
    out = memory.retrieve()
    assert ids(out) == ["s0", "m1", "m2", "m3", "m4", "m5", "m6", "m7"]  # everything is history
    # history scores 0.5 ** i, except m2, the top similar record (query not counted): max(0.5**5, 1.0)
    assert [c.score for c in out] == pytest.approx(
        [1.0, 0.5 ** 6, 1.0, 0.5 ** 4, 0.5 ** 3, 0.25, 0.5, 1.0], abs=1e-6)


def test_boost_never_lowers_a_history_score(rec, keyword_embedder):
    memory = memory_with(keyword_embedder, retrieve_limit=2)
    memory.write_records([rec("m1", "apple banana"), rec("m2", "apple"), rec("m3", "banana please")])
    # query 'banana please' ~ (0, 1, 0): m1 is the top similar record (0.707) but its
    # history score 0.81 is higher and stays
    out = memory.retrieve()
    assert ids(out) == ["m1", "m2", "m3"]
    assert [c.score for c in out] == pytest.approx([0.81, 0.9, 1.0], abs=1e-12)


def test_explicit_query_excludes_only_the_window(rec, keyword_embedder):
    memory = memory_with(keyword_embedder, window_size=1, retrieve_limit=2)
    memory.write_records(conversation(rec))
    out = memory.retrieve("cherry banana apple")
    # window holds m7; m1 (cos 2/sqrt(6)) and m2 (1/sqrt(3)) are the recalls
    assert ids(out) == ["s0", "m1", "m2", "m7"]
    assert [c.score for c in out[1:3]] == pytest.approx([2 / math.sqrt(6), 1 / math.sqrt(3)], abs=1e-6)
    # user messages only; recalls fill up with zero-similarity records as in CAMEL
    out = memory.retrieve("apple", where={"role": "user"})
    assert ids(out) == ["s0", "m1", "m3", "m7"]
    assert [c.score for c in out] == pytest.approx([1.0, SQRT_HALF, 0.0, 1.0], abs=1e-6)


def test_get_context_has_each_message_once(rec, keyword_embedder, word_creator):
    memory = memory_with(keyword_embedder, window_size=2, retrieve_limit=2, context_creator=word_creator(1000))
    memory.write_records(conversation(rec))
    messages, tokens = memory.get_context()
    assert [m["content"] for m in messages] == ["be nice", "apple banana", "apple pie", "filler six", "apple please"]
    assert tokens == 5 * 6 + 3
    messages, _ = memory.get_context("filler")  # no vocabulary word: no recalls
    assert [m["content"] for m in messages] == ["be nice", "filler six", "apple please"]


def test_pop_and_remove_touch_history_only(rec, keyword_embedder):
    memory = memory_with(keyword_embedder, retrieve_limit=3)
    memory.write_records(conversation(rec))
    assert ids(memory.pop_records(1)) == ["m7"]
    assert ids(memory.remove_records_by_indices([0, 1])) == ["m1"]
    assert len(memory.history_block) == 6 and len(memory.vector_block) == 8
    out = memory.retrieve("apple")
    # m1 is gone from the history, so the vector store recalls it; m7 is recalled too
    assert ids(out) == ["s0", "m7", "m1", "m2", "m3", "m4", "m5", "m6"]
    memory.clear()
    assert memory.retrieve() == [] and memory.current_topic == "" and len(memory.vector_block) == 0


def test_agent_id_and_defaults(rec):
    memory = LongtermAgentMemory(agent_id="bot")
    memory.write_record(rec("m1", "where is the red umbrella"))
    assert memory.retrieve()[0].memory_record.agent_id == "bot"
    assert memory.get_params(deep=False) == {
        "context_creator": None, "chat_history_block": None, "vector_db_block": None,
        "retrieve_limit": 3, "window_size": None, "agent_id": "bot"}
    # an empty block given by the caller is used (blocks define __len__, so it is falsy)
    block = ChatHistoryBlock(keep_rate=0.3)
    memory = LongtermAgentMemory(chat_history_block=block)
    assert memory.history_block is block
    assert memory.get_params()["chat_history_block__keep_rate"] == 0.3
    memory.write_records([rec("m1", "a"), rec("m2", "b")])
    memory.set_params(chat_history_block__keep_rate=0.5)
    assert [c.score for c in memory.retrieve("zzz")] == [0.5, 1.0]


@pytest.mark.parametrize("params,error,message", [
    ({"retrieve_limit": -1}, ValueError, r"retrieve_limit must be non-negative, got -1"),
    ({"window_size": "3"}, TypeError, r"window_size must be an int, got str"),
    ({"chat_history_block": VectorDBBlock()}, ConfigError,
     r"LongtermAgentMemory parameter 'chat_history_block': expected a ChatHistoryBlock or None, "
     r"got VectorDBBlock\(\)"),
    ({"vector_db_block": ChatHistoryBlock()}, ConfigError,
     r"LongtermAgentMemory parameter 'vector_db_block': expected a VectorDBBlock or None, "
     r"got ChatHistoryBlock\(\)"),
])
def test_validation(params, error, message):
    with pytest.raises(error, match=message):
        LongtermAgentMemory(**params)


def test_memory_pickles_with_its_records(rec, keyword_embedder):
    """Sweeps ship strategies to worker processes; a used memory must survive pickling."""
    import pickle

    memory = memory_with(keyword_embedder, window_size=2, retrieve_limit=2)
    memory.write_records(conversation(rec))
    copy = pickle.loads(pickle.dumps(memory))
    assert ids(copy.retrieve()) == ids(memory.retrieve()) == ["s0", "m2", "m1", "m6", "m7"]
    assert copy.get_context() == memory.get_context()
