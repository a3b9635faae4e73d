import json

import pytest

from memlab.base import MemlabError
from memlab.records import ContextRecord, Hit, MemoryRecord, Role, ToolCall


def test_role_parse_and_system_flag():
    assert Role.parse("USER") is Role.USER and Role.parse(Role.TOOL) is Role.TOOL
    with pytest.raises(MemlabError, match=r"role must be one of system, developer, user, assistant, "
                                          r"tool, function, got 'bot'"):
        Role.parse("bot")
    assert [r.value for r in Role if r.is_system] == ["system", "developer"]


def test_tool_call_forms():
    tc = ToolCall("c1", "lookup", '{"q": 1}')
    assert tc.to_openai() == {"id": "c1", "type": "function",
                              "function": {"name": "lookup", "arguments": '{"q": 1}'}}
    assert ToolCall.from_dict(tc.to_openai()) == tc
    assert ToolCall.from_dict({"id": 7, "name": "f"}) == ToolCall("7", "f", "{}")


def test_record_normalisation():
    r = MemoryRecord(role="Assistant", content="hi", id=12, timestamp=3,
                     tool_calls=[{"id": "c1", "function": {"name": "f", "arguments": "{}"}}])
    assert r.role is Role.ASSISTANT and r.id == "12" and r.timestamp == 3.0
    assert isinstance(r.timestamp, float) and r.tool_calls == [ToolCall("c1", "f", "{}")]
    with pytest.raises(MemlabError, match=r"MemoryRecord.content must be a string, got NoneType"):
        MemoryRecord("user", None)
    a, b = MemoryRecord("user", "x"), MemoryRecord("user", "x")
    assert a.id != b.id and len(a.id) == 32 and a.metadata == {} and a.agent_id == ""


def test_source_ids():
    assert MemoryRecord("user", "x", id="t1").source_ids == ["t1"]
    summary = MemoryRecord("assistant", "sum", id="s", metadata={"source_ids": ["D1:1", 2]})
    assert summary.source_ids == ["D1:1", "2"]
    assert MemoryRecord("user", "x", id="t2", metadata={"source_ids": []}).source_ids == ["t2"]


def test_dict_round_trip_full_and_minimal():
    full = MemoryRecord(role="assistant", content="", id="a1", timestamp=1.5, agent_id="bot",
                        metadata={"k": [1, {"x": 2}]}, tool_calls=[ToolCall("c1", "f", '{"a": 1}')],
                        name="helper")
    d = full.to_dict()
    assert d == {"role": "assistant", "content": "", "id": "a1", "timestamp": 1.5, "agent_id": "bot",
                 "metadata": {"k": [1, {"x": 2}]},
                 "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": '{"a": 1}'}}],
                 "name": "helper"}
    assert MemoryRecord.from_dict(json.loads(json.dumps(d))) == full
    tool = MemoryRecord("tool", "42", id="t", timestamp=2.0, tool_call_id="c1")
    assert tool.to_dict() == {"role": "tool", "content": "42", "id": "t", "timestamp": 2.0, "agent_id": "",
                              "metadata": {}, "tool_call_id": "c1"}
    assert MemoryRecord.from_dict(tool.to_dict()) == tool
    d["metadata"]["new"] = 1  # to_dict copies the metadata dict (shallowly)
    assert "new" not in full.metadata


def test_from_dict_errors():
    with pytest.raises(MemlabError, match=r"unknown field\(s\) \['colour', 'size'\]"):
        MemoryRecord.from_dict({"role": "user", "content": "x", "size": 1, "colour": "red"})
    with pytest.raises(MemlabError, match=r"missing field 'content'"):
        MemoryRecord.from_dict({"role": "user"})
    minimal = MemoryRecord.from_dict({"role": "user", "content": "x"})
    assert minimal.role is Role.USER and minimal.content == "x"


def test_to_openai_messages():
    assert MemoryRecord("user", "hi", name="alice").to_openai() == {"role": "user", "content": "hi", "name": "alice"}
    assert MemoryRecord("system", "rules", name="ignored").to_openai() == {"role": "system", "content": "rules"}
    call = MemoryRecord("assistant", "", tool_calls=[ToolCall("c1", "f", "{}")])
    assert call.to_openai() == {"role": "assistant", "content": None,
                                "tool_calls": [{"id": "c1", "type": "function",
                                                "function": {"name": "f", "arguments": "{}"}}]}
    both = MemoryRecord("assistant", "checking", tool_calls=[ToolCall("c2", "g")])
    assert both.to_openai()["content"] == "checking" and both.to_openai()["tool_calls"][0]["id"] == "c2"
    assert MemoryRecord("tool", "42", tool_call_id="c1").to_openai() == \
        {"role": "tool", "content": "42", "tool_call_id": "c1"}
    assert MemoryRecord("tool", "42").to_openai()["tool_call_id"] == ""
    assert MemoryRecord("function", "out", name="fn").to_openai() == {"role": "function", "content": "out", "name": "fn"}
    # tool calls on a non-assistant record are not sent
    assert "tool_calls" not in MemoryRecord("user", "x", tool_calls=[ToolCall("c", "f")]).to_openai()


def test_context_record_and_hit():
    rec = MemoryRecord("user", "x", id="r1", timestamp=4.0)
    cr = ContextRecord(rec, score=0.5, timestamp=4.0)
    assert cr.record is rec and cr.id == "r1" and ContextRecord(rec, 1.0).timestamp == 0.0
    hit = Hit(rec, 0.9, 4.0, rank=1, components={"bm25": {"score": 2.5, "rank": 1}})
    assert isinstance(hit, ContextRecord) and hit.rank == 1 and hit.components["bm25"]["rank"] == 1
    assert Hit(rec, 0.1).rank == 0 and Hit(rec, 0.1).components == {}
