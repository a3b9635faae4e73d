import warnings

import pytest

from memlab.base import ConfigError
from memlab.context import ScoreBasedContextCreator
from memlab.memories import AgentMemory, ChatHistoryMemory
from memlab.memories.base import DEFAULT_TOKEN_LIMIT
from memlab.records import MemoryRecord, ToolCall
from memlab.storage.kv import InMemoryKeyValueStore
from memlab.tokens import TiktokenCounter


def dialogue(rec, n, system=True):
    out = [rec("s0", "be nice", role="system")] if system else []
    out += [rec(f"m{i}", f"turn {i}", role="user" if i % 2 else "assistant") for i in range(1, n + 1)]
    return out


def ids(records):
    return [r.id for r in records]


def no_warnings(fn):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return fn()


def test_retrieve_uses_window_and_keep_rate(rec):
    memory = ChatHistoryMemory(window_size=2, keep_rate=0.5)
    memory.write_records(dialogue(rec, 4))
    with pytest.warns(UserWarning, match=r"window_size=2 left out 2 older message\(s\)"):
        out = memory.retrieve()
    assert ids(out) == ["s0", "m3", "m4"] and [c.score for c in out] == [1.0, 0.5, 1.0]


def test_warning_counts_non_system_records_correctly(rec):
    # system + 5 others, window 5: nothing dropped (CAMEL compares 6 records with 5)
    memory = ChatHistoryMemory(window_size=5)
    memory.write_records(dialogue(rec, 5))
    assert ids(no_warnings(memory.retrieve)) == ["s0", "m1", "m2", "m3", "m4", "m5"]
    # system + 5 others, window 4: one dropped, and it warns (CAMEL's check misses this case)
    memory.set_params(window_size=4)
    with pytest.warns(UserWarning, match=r"left out 1 older message"):
        assert ids(memory.retrieve()) == ["s0", "m2", "m3", "m4", "m5"]
    # no system, exactly full window: nothing dropped, no warning (CAMEL warns here)
    plain = ChatHistoryMemory(window_size=3)
    plain.write_records(dialogue(rec, 3, system=False))
    assert ids(no_warnings(plain.retrieve)) == ["m1", "m2", "m3"]
    plain.write_record(rec("m4", "more"))
    with pytest.warns(UserWarning, match=r"left out 1 older message"):
        plain.retrieve()
    # no window: never warns
    assert len(no_warnings(ChatHistoryMemory().retrieve)) == 0


def test_window_zero_keeps_only_system(rec):
    memory = ChatHistoryMemory(window_size=0)
    memory.write_records(dialogue(rec, 2))
    with pytest.warns(UserWarning, match=r"left out 2"):
        assert ids(memory.retrieve()) == ["s0"]


def test_agent_id_is_stamped_on_copies(rec):
    memory = ChatHistoryMemory(agent_id="bot")
    mine, theirs = rec("m1", "hi"), rec("m2", "yo", agent_id="other")
    memory.write_records([mine, theirs])
    assert [c.memory_record.agent_id for c in memory.retrieve()] == ["bot", "other"]
    assert mine.agent_id == ""  # the caller's record is not changed
    anonymous = ChatHistoryMemory()
    anonymous.write_record(rec("m1", "hi"))
    assert anonymous.retrieve()[0].memory_record.agent_id == ""


def test_clean_tool_calls(rec):
    memory = ChatHistoryMemory()
    memory.write_records([
        rec("s0", "be nice", role="system"),
        rec("m1", "weather?"),
        rec("m2", "", role="assistant", tool_calls=[ToolCall("c1", "weather")]),
        rec("m3", "sunny", role="tool", tool_call_id="c1"),
        rec("m4", "let me check more", role="assistant", tool_calls=[ToolCall("c2", "forecast")]),
        rec("m5", "rain tomorrow", role="tool", tool_call_id="c2"),
        rec("m6", "legacy", role="function", name="old_fn"),
        rec("m7", "Sunny today, rain tomorrow.", role="assistant"),
    ])
    assert memory.clean_tool_calls() == 4
    out = memory.retrieve()
    assert ids(out) == ["s0", "m1", "m4", "m7"]
    assert out[2].memory_record.tool_calls == [] and out[2].memory_record.content == "let me check more"
    assert memory.clean_tool_calls() == 0


def test_get_context_with_default_creator_counts_tiktoken(rec):
    memory = ChatHistoryMemory()
    memory.write_records([rec("s0", "You are a helpful assistant.", role="system"), rec("m1", "hello world")])
    messages, tokens = memory.get_context()
    assert messages == [{"role": "system", "content": "You are a helpful assistant."},
                        {"role": "user", "content": "hello world"}]
    assert tokens == 10 + 6 + 3
    creator = memory.get_context_creator()
    assert isinstance(creator, ScoreBasedContextCreator) and creator.token_limit == DEFAULT_TOKEN_LIMIT == 128_000
    assert isinstance(creator.counter, TiktokenCounter) and creator.counter.encoding_name == "o200k_base"


def test_get_context_under_budget_keeps_newest(rec, word_creator):
    memory = ChatHistoryMemory(context_creator=word_creator(3 + 6 + 6 + 6))  # system + 2 turns
    memory.write_records(dialogue(rec, 4))
    messages, tokens = memory.get_context()
    assert [m["content"] for m in messages] == ["be nice", "turn 3", "turn 4"] and tokens == 21


def test_pop_remove_clear_delegate(rec):
    memory = ChatHistoryMemory()
    memory.write_records(dialogue(rec, 4))
    assert ids(memory.pop_records(1)) == ["m4"]
    assert ids(memory.remove_records_by_indices([0, 1])) == ["m1"]
    assert ids(memory.retrieve()) == ["s0", "m2", "m3"]
    memory.clear()
    assert memory.retrieve() == []


def test_component_contract(rec):
    memory = ChatHistoryMemory(window_size=3, keep_rate=0.5, agent_id="bot")
    assert isinstance(memory, AgentMemory)
    assert memory.get_params(deep=False) == {"context_creator": None, "storage": None, "window_size": 3,
                                             "keep_rate": 0.5, "agent_id": "bot"}
    assert repr(memory) == "ChatHistoryMemory(window_size=3, keep_rate=0.5, agent_id='bot')"
    memory.write_records(dialogue(rec, 2, system=False))
    memory.set_params(keep_rate=1.0)  # rescoring keeps the history
    assert [c.score for c in memory.retrieve()] == [1.0, 1.0]
    assert memory.clone().retrieve() == []
    store = InMemoryKeyValueStore()
    memory.set_params(storage=store)
    assert memory.retrieve() == [] and memory.block.store is store


@pytest.mark.parametrize("params,error,message", [
    ({"window_size": -1}, ValueError, r"window_size must be non-negative, got -1"),
    ({"window_size": 2.0}, TypeError, r"window_size must be an int, got float"),
    ({"keep_rate": 1.5}, ValueError, r"ChatHistoryMemory parameter 'keep_rate': expected a number >= 0 and <= 1, got 1.5"),
    ({"agent_id": None}, ConfigError, r"^ChatHistoryMemory parameter 'agent_id': expected a string, got None$"),
    ({"context_creator": 4096}, ConfigError, r"^ChatHistoryMemory parameter 'context_creator': expected an object with "
                                            r"create_context\(records\), or None, got 4096$"),
])
def test_validation(params, error, message):
    with pytest.raises(error, match=message):
        ChatHistoryMemory(**params)


def test_write_records_type_errors():
    memory = ChatHistoryMemory()
    with pytest.raises(TypeError, match=r"ChatHistoryMemory.write_records: item 0 is str"):
        memory.write_records(["hello"])
    with pytest.raises(TypeError, match=r"use write_record"):
        memory.write_records(MemoryRecord("user", "hi"))
