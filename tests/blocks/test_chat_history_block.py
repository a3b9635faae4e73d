import pytest

from memlab.base import ConfigError
from memlab.blocks import ChatHistoryBlock, MemoryBlock
from memlab.records import MemoryRecord, ToolCall
from memlab.storage import kv


def rec(id, role="user", ts=None):
    return MemoryRecord(role=role, content=f"content of {id}", id=id,
                        timestamp=ts if ts is not None else float(int(id[1:]) if id[1:].isdigit() else 0))


def with_system():
    # s0 (system), u1, a2, u3, a4
    return [rec("s0", "system"), rec("u1"), rec("a2", "assistant"), rec("u3"), rec("a4", "assistant")]


def block_of(records, **kw):
    block = ChatHistoryBlock(**kw)
    block.write_records(records)
    return block


def ids(context_records):
    return [c.id for c in context_records]


def scores(context_records):
    return [c.score for c in context_records]


# -- scores ---------------------------------------------------------------------------

@pytest.mark.parametrize("keep_rate,expected", [
    (0.9, [1.0, 0.729, 0.81, 0.9, 1.0]),
    (0.5, [1.0, 0.125, 0.25, 0.5, 1.0]),
    (1.0, [1.0, 1.0, 1.0, 1.0, 1.0]),
    (0.0, [1.0, 0.0, 0.0, 0.0, 1.0]),  # 0 ** 0 = 1: the newest is still 1.0
])
def test_scores_newest_is_one_and_system_is_one(keep_rate, expected):
    out = block_of(with_system(), keep_rate=keep_rate).retrieve()
    assert ids(out) == ["s0", "u1", "a2", "u3", "a4"]
    assert scores(out) == pytest.approx(expected, rel=1e-12, abs=0)
    assert all(isinstance(s, float) for s in scores(out))
    assert [c.timestamp for c in out] == [0.0, 1.0, 2.0, 3.0, 4.0]


def test_mid_history_system_message_scores_one_and_does_not_age_others():
    records = [rec("u1"), rec("s2", "developer"), rec("u3")]
    out = block_of(records, keep_rate=0.5).retrieve()
    assert scores(out) == [0.5, 1.0, 1.0]


def test_scores_restart_from_newest_within_window():
    out = block_of(with_system(), keep_rate=0.5).retrieve(window_size=2)
    assert ids(out) == ["s0", "u3", "a4"] and scores(out) == [1.0, 0.5, 1.0]


# -- windows --------------------------------------------------------------------------

@pytest.mark.parametrize("window,expected", [
    (None, ["s0", "u1", "a2", "u3", "a4"]),
    (0, ["s0"]),
    (1, ["s0", "a4"]),
    (2, ["s0", "u3", "a4"]),
    (3, ["s0", "a2", "u3", "a4"]),
    (4, ["s0", "u1", "a2", "u3", "a4"]),
    (5, ["s0", "u1", "a2", "u3", "a4"]),
    (6, ["s0", "u1", "a2", "u3", "a4"]),
    (10, ["s0", "u1", "a2", "u3", "a4"]),
])
def test_window_with_leading_system(window, expected):
    assert ids(block_of(with_system()).retrieve(window)) == expected


@pytest.mark.parametrize("window,expected", [
    (None, ["u1", "u2", "u3", "u4", "u5"]),
    (0, []),
    (3, ["u3", "u4", "u5"]),
    (5, ["u1", "u2", "u3", "u4", "u5"]),
    (7, ["u1", "u2", "u3", "u4", "u5"]),
])
def test_window_without_system(window, expected):
    records = [rec(f"u{i}") for i in range(1, 6)]
    assert ids(block_of(records).retrieve(window)) == expected


def test_developer_message_is_protected_like_system():
    records = [rec("d0", "developer"), rec("u1"), rec("u2")]
    assert ids(block_of(records).retrieve(1)) == ["d0", "u2"]
    assert ids(block_of(records).retrieve(0)) == ["d0"]


def test_empty_history():
    block = ChatHistoryBlock()
    assert block.retrieve() == [] and block.retrieve(0) == [] and block.retrieve(3) == []
    assert len(block) == 0


@pytest.mark.parametrize("bad,error,message", [
    (-1, ValueError, r"window_size must be non-negative, got -1"),
    (1.5, TypeError, r"window_size must be an int, got float 1.5"),
    (True, TypeError, r"window_size must be an int, got bool True"),
])
def test_window_validation(bad, error, message):
    with pytest.raises(error, match=message):
        ChatHistoryBlock().retrieve(bad)


# -- keep_rate ------------------------------------------------------------------------

@pytest.mark.parametrize("bad,message", [
    (1.5, r"^ChatHistoryBlock parameter 'keep_rate': expected a number >= 0 and <= 1, got 1.5$"),
    (-0.1, r"^ChatHistoryBlock parameter 'keep_rate': expected a number >= 0 and <= 1, got -0.1$"),
    (float("nan"), r"^ChatHistoryBlock parameter 'keep_rate': expected a number >= 0 and <= 1, got nan$"),
    ("0.5", r"^ChatHistoryBlock parameter 'keep_rate': expected a number >= 0 and <= 1, got '0.5'$"),
    (True, r"^ChatHistoryBlock parameter 'keep_rate': expected a number >= 0 and <= 1, got True$"),
    (None, r"^ChatHistoryBlock parameter 'keep_rate': expected a number >= 0 and <= 1, got None$"),
])
def test_keep_rate_validation(bad, message):
    with pytest.raises(ValueError, match=message):
        ChatHistoryBlock(keep_rate=bad)
    block = ChatHistoryBlock()
    with pytest.raises(ConfigError, match=message):
        block.set_params(keep_rate=bad)


def test_keep_rate_int_bounds_are_valid():
    assert scores(block_of([rec("u1"), rec("u2")], keep_rate=0).retrieve()) == [0.0, 1.0]
    assert scores(block_of([rec("u1"), rec("u2")], keep_rate=1).retrieve()) == [1.0, 1.0]


# -- pop_records ----------------------------------------------------------------------

def test_pop_records_from_the_end_chronologically():
    block = block_of(with_system())
    popped = block.pop_records(2)
    assert [r.id for r in popped] == ["u3", "a4"]
    assert [r.id for r in block.records()] == ["s0", "u1", "a2"]
    assert [r.id for r in block.pop_records(10)] == ["u1", "a2"]
    assert block.pop_records(1) == []  # the leading system message is never popped
    assert [r.id for r in block.records()] == ["s0"]


def test_pop_records_without_system_and_zero():
    block = block_of([rec("u1"), rec("u2")])
    assert block.pop_records(0) == []
    assert [r.id for r in block.pop_records(5)] == ["u1", "u2"]
    assert len(block) == 0


@pytest.mark.parametrize("bad,error,message", [
    ("2", TypeError, r"count must be an int, got str '2'"),
    (2.0, TypeError, r"count must be an int, got float 2.0"),
    (True, TypeError, r"count must be an int, got bool True"),
    (-1, ValueError, r"count must be non-negative, got -1"),
])
def test_pop_records_validation(bad, error, message):
    block = block_of(with_system())
    with pytest.raises(error, match=message):
        block.pop_records(bad)
    assert len(block) == 5


# -- remove_records_by_indices ----------------------------------------------------------

def test_remove_by_indices_protects_leading_system():
    block = block_of(with_system())
    removed = block.remove_records_by_indices([3, 0, 1, 3])
    assert [r.id for r in removed] == ["u1", "u3"]
    assert [r.id for r in block.records()] == ["s0", "a2", "a4"]
    assert block.remove_records_by_indices([0]) == []


def test_remove_by_indices_index_zero_without_system():
    block = block_of([rec("u1"), rec("u2")])
    assert [r.id for r in block.remove_records_by_indices([0])] == ["u1"]
    assert [r.id for r in block.records()] == ["u2"]


@pytest.mark.parametrize("bad,error,message", [
    ([1, 5], IndexError, r"index 5 out of range for a history of 5 records"),
    ([-1], IndexError, r"index -1 out of range for a history of 5 records"),
    ([True], TypeError, r"indices must be ints, got bool True"),
    (["1"], TypeError, r"indices must be ints, got str '1'"),
])
def test_remove_by_indices_validation_removes_nothing(bad, error, message):
    block = block_of(with_system())
    with pytest.raises(error, match=message):
        block.remove_records_by_indices(bad)
    assert len(block) == 5


# -- storage and contract -----------------------------------------------------------

def test_records_are_stored_as_dicts_and_round_trip():
    call = MemoryRecord("assistant", "", id="a1", timestamp=1.0, tool_calls=[ToolCall("c1", "f", '{"x": 1}')],
                        metadata={"k": [1, 2]}, agent_id="bot")
    tool = MemoryRecord("tool", "42", id="t1", timestamp=2.0, tool_call_id="c1")
    store = kv.InMemoryKeyValueStore()
    block = ChatHistoryBlock(storage=store)
    block.write_records([call, tool])
    assert store.load() == [call.to_dict(), tool.to_dict()]
    assert [c.memory_record for c in block.retrieve()] == [call, tool]


def kv_stores(tmp_path):
    out = [kv.InMemoryKeyValueStore()]
    if hasattr(kv, "JsonlKeyValueStore"):
        out.append(kv.JsonlKeyValueStore(tmp_path / "history.jsonl"))
    if hasattr(kv, "SQLiteKeyValueStore"):
        out.append(kv.SQLiteKeyValueStore(tmp_path / "history.sqlite"))
    return out


def test_same_behaviour_on_every_key_value_store(tmp_path):
    for store in kv_stores(tmp_path):
        block = ChatHistoryBlock(storage=store, keep_rate=0.5)
        block.write_records(with_system())
        assert [r.id for r in block.pop_records(1)] == ["a4"]
        assert [r.id for r in block.remove_records_by_indices([1])] == ["u1"]
        out = block.retrieve(5)
        assert ids(out) == ["s0", "a2", "u3"] and scores(out) == [1.0, 0.5, 1.0]
        store.close()


def test_write_record_and_type_errors():
    block = ChatHistoryBlock()
    block.write_record(rec("u1"))
    assert ids(block.retrieve()) == ["u1"]
    with pytest.raises(TypeError, match="use write_record for one record"):
        block.write_records(rec("u2"))
    with pytest.raises(TypeError, match=r"item 1 is dict, not MemoryRecord"):
        block.write_records([rec("u2"), {"role": "user", "content": "x"}])
    assert len(block) == 1
    block.clear()
    assert block.retrieve() == []


def test_component_contract():
    block = block_of(with_system(), keep_rate=0.5)
    assert isinstance(block, MemoryBlock)
    assert block.get_params() == {"storage": None, "keep_rate": 0.5}
    assert repr(block) == "ChatHistoryBlock(keep_rate=0.5)"
    block.set_params(keep_rate=1.0)  # rescoring keeps the history
    assert scores(block.retrieve()) == [1.0] * 5
    assert len(block.clone()) == 0  # a clone has the configuration, not the data
    new_store = kv.InMemoryKeyValueStore()
    block.set_params(storage=new_store)
    assert len(block) == 0 and block.store is new_store
    with pytest.raises(ConfigError, match=r"ChatHistoryBlock parameter 'storage': expected a KeyValueStore or None, got \[\]"):
        ChatHistoryBlock(storage=[])


def test_parsed_history_stays_in_step_with_writes_pops_removes_and_clear():
    from memlab.blocks.chat_history import ChatHistoryBlock
    from memlab.records import MemoryRecord

    block = ChatHistoryBlock(keep_rate=0.5)
    block.write_records([MemoryRecord("user", f"m{i}", id=f"m{i}", timestamp=float(i)) for i in range(4)])
    assert [r.id for r in block.records()] == ["m0", "m1", "m2", "m3"]
    block.write_record(MemoryRecord("user", "m4", id="m4", timestamp=4.0))
    assert len(block) == 5 and [c.score for c in block.retrieve(2)] == [0.5, 1.0]
    block.pop_records(1)
    block.remove_records_by_indices([0])
    assert [r.id for r in block.records()] == ["m1", "m2", "m3"]
    block.records()[0].metadata["x"] = 1  # a copy: the history is unchanged
    assert block.records()[0].metadata == {}
    block.clear()
    assert block.records() == [] and len(block) == 0


def _reference_window(block, window_size):
    """The window as first written: every record copied, then sliced and scored."""
    records = block.records()
    lead = 1 if records and records[0].role.is_system else 0
    if window_size is not None:
        rest = records[lead:]
        records = records[:lead] + rest[max(0, len(rest) - window_size):]
    out, newer = [], 0
    for rec in reversed(records):
        score = 1.0 if rec.role.is_system else block.keep_rate ** newer
        newer += 0 if rec.role.is_system else 1
        out.append((rec.id, float(score)))
    return out[::-1]


@pytest.mark.parametrize("keep_rate", [0.0, 0.5, 1.0])
@pytest.mark.parametrize("leading_system", [False, True])
def test_window_equals_slicing_the_whole_history(keep_rate, leading_system):
    block = ChatHistoryBlock(keep_rate=keep_rate)
    roles = ["system"] if leading_system else []
    roles += ["user", "assistant", "system", "user", "assistant", "user"]
    block.write_records([MemoryRecord(role, f"m{i}", id=f"r{i}", timestamp=float(i), metadata={"n": [i]})
                         for i, role in enumerate(roles)])
    for window in [None, 0, 1, 2, 3, 5, 6, 7, 50]:
        got = block.retrieve(window)
        assert [(c.id, c.score) for c in got] == _reference_window(block, window)
        if got:  # what is returned is a copy
            got[-1].memory_record.metadata["n"].append(99)
            assert block.retrieve(window)[-1].memory_record.metadata["n"] == [int(got[-1].id[1:])]
