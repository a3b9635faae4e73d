"""One behaviour suite for every KeyValueStore backend (in-memory, JSON lines, SQLite)."""

from __future__ import annotations

import json
import os
import sqlite3

import pytest

from memlab.base import MemlabError
from memlab.storage.kv import (
    InMemoryKeyValueStore,
    JsonlKeyValueStore,
    KeyValueStore,
    SQLiteKeyValueStore,
)

RECORDS = [
    {"role": "system", "content": "be brief", "id": "s"},
    {"role": "user", "content": "héllo 你好", "id": "u1", "metadata": {"n": 1, "tags": ["a", "b"]}},
    {"role": "assistant", "content": "hi", "id": "a1", "timestamp": 1.5},
]


def make_memory(tmp_path):
    return InMemoryKeyValueStore()


def make_jsonl(tmp_path):
    return JsonlKeyValueStore(tmp_path / "sub" / "history.jsonl")


def make_sqlite(tmp_path):
    return SQLiteKeyValueStore(tmp_path / "history.db")


def make_sqlite_memory(tmp_path):
    return SQLiteKeyValueStore(":memory:")


BACKENDS = {"memory": make_memory, "jsonl": make_jsonl, "sqlite": make_sqlite,
            "sqlite-memory": make_sqlite_memory}
PERSISTENT = {"jsonl": make_jsonl, "sqlite": make_sqlite}


@pytest.fixture(params=sorted(BACKENDS))
def store(request, tmp_path):
    s = BACKENDS[request.param](tmp_path)
    yield s
    s.close()


@pytest.fixture(params=sorted(PERSISTENT))
def factory(request, tmp_path):
    return lambda: PERSISTENT[request.param](tmp_path)


def test_is_a_key_value_store(store):
    assert isinstance(store, KeyValueStore)
    assert store.load() == []


def test_save_appends_in_order(store):
    store.save(RECORDS[:2])
    store.save([])
    store.save(RECORDS[2:])
    assert store.load() == RECORDS
    assert [r["id"] for r in store.load()] == ["s", "u1", "a1"]


def test_load_returns_copies(store):
    store.save(RECORDS)
    loaded = store.load()
    loaded[1]["metadata"]["tags"].append("changed")
    loaded.pop()
    assert store.load() == RECORDS


def test_save_copies_its_input(store):
    record = {"id": "x", "metadata": {"k": [1]}}
    store.save([record])
    record["metadata"]["k"].append(2)
    assert store.load() == [{"id": "x", "metadata": {"k": [1]}}]


def test_clear(store):
    store.save(RECORDS)
    store.clear()
    assert store.load() == []
    store.save(RECORDS[:1])
    assert store.load() == RECORDS[:1]


def test_replace(store):
    store.save(RECORDS)
    store.replace([RECORDS[2], RECORDS[0]])
    assert store.load() == [RECORDS[2], RECORDS[0]]
    store.save([RECORDS[1]])
    assert store.load() == [RECORDS[2], RECORDS[0], RECORDS[1]]
    store.replace([])
    assert store.load() == []


def test_persistent_reopen_after_close(factory):
    first = factory()
    first.save(RECORDS[:2])
    first.save(RECORDS[2:])
    first.close()
    second = factory()
    assert second.load() == RECORDS
    second.replace(RECORDS[1:])
    second.close()
    third = factory()
    assert third.load() == RECORDS[1:]
    third.clear()
    third.close()
    assert factory().load() == []


def test_persistent_save_is_written_through(factory):
    """A second store on the same file sees what the first saved, without close()."""
    first = factory()
    first.save(RECORDS)
    assert factory().load() == RECORDS
    first.close()


def test_unserialisable_record_saves_nothing(factory):
    """Persistent stores serialise a whole batch before writing any of it."""
    store = factory()
    store.save(RECORDS[:1])
    with pytest.raises(MemlabError, match="record 1 is not JSON-serialisable"):
        store.save([{"ok": 1}, {"bad": object()}])
    with pytest.raises(MemlabError, match="record 0 must be a dict, got list"):
        store.replace([[1, 2]])
    assert store.load() == RECORDS[:1]
    store.close()


def test_jsonl_file_format(tmp_path):
    path = tmp_path / "h.jsonl"
    store = JsonlKeyValueStore(path)
    store.save(RECORDS[:2])
    lines = path.read_text(encoding="utf-8").splitlines()
    assert [json.loads(line) for line in lines] == RECORDS[:2]
    assert "你好" in lines[1]  # UTF-8, not \u escapes


def test_jsonl_corrupt_line_names_file_and_line(tmp_path):
    path = tmp_path / "h.jsonl"
    path.write_text('{"a": 1}\n\n{"b": 2\n{"c": 3}\n', encoding="utf-8")
    with pytest.raises(MemlabError) as err:
        JsonlKeyValueStore(path)
    assert str(path) in str(err.value) and "line 3" in str(err.value)


def test_jsonl_line_that_is_not_an_object(tmp_path):
    path = tmp_path / "h.jsonl"
    path.write_text('{"a": 1}\n[1, 2]\n', encoding="utf-8")
    with pytest.raises(MemlabError, match=r"line 2: expected a JSON object, got list"):
        JsonlKeyValueStore(path)


def test_jsonl_appends_after_a_file_without_final_newline(tmp_path):
    path = tmp_path / "h.jsonl"
    path.write_text('{"a": 1}', encoding="utf-8")
    store = JsonlKeyValueStore(path)
    store.save([{"b": 2}])
    assert JsonlKeyValueStore(path).load() == [{"a": 1}, {"b": 2}]


def test_jsonl_replace_is_atomic_on_failure(tmp_path):
    """A replace that fails half-way (unserialisable record) leaves the file untouched."""
    path = tmp_path / "h.jsonl"
    store = JsonlKeyValueStore(path)
    store.save(RECORDS)
    before = path.read_bytes()
    with pytest.raises(MemlabError):
        store.replace([{"x": 1}, {"y": {1, 2}}])
    assert path.read_bytes() == before
    assert sorted(os.listdir(tmp_path)) == ["h.jsonl"]  # no temp file left behind


def test_sqlite_is_a_real_database_file(tmp_path):
    path = tmp_path / "h.db"
    store = SQLiteKeyValueStore(path, table="chat")
    store.save(RECORDS)
    store.close()
    with sqlite3.connect(path) as conn:
        rows = conn.execute("SELECT data FROM chat ORDER BY seq").fetchall()
    assert [json.loads(r[0]) for r in rows] == RECORDS


def test_sqlite_tables_are_independent(tmp_path):
    path = tmp_path / "h.db"
    a, b = SQLiteKeyValueStore(path, table="a"), SQLiteKeyValueStore(path, table="b")
    a.save(RECORDS[:1])
    b.save(RECORDS[1:])
    assert a.load() == RECORDS[:1] and b.load() == RECORDS[1:]


def test_sqlite_use_after_close_is_an_error(tmp_path):
    store = SQLiteKeyValueStore(tmp_path / "h.db")
    store.close()
    store.close()  # idempotent
    with pytest.raises(MemlabError, match="is closed"):
        store.load()


def test_sqlite_rejects_bad_table_name(tmp_path):
    with pytest.raises(MemlabError, match=r"SQLiteKeyValueStore parameter 'table': expected a SQL identifier "
                                          r"\(letters, digits, _\), got 'x; DROP TABLE y'"):
        SQLiteKeyValueStore(tmp_path / "h.db", table="x; DROP TABLE y")


def test_sqlite_memory_is_private_to_the_store():
    a, b = SQLiteKeyValueStore(":memory:"), SQLiteKeyValueStore(":memory:")
    a.save(RECORDS)
    assert b.load() == []


def test_params_and_clone(tmp_path):
    store = SQLiteKeyValueStore(tmp_path / "h.db", table="t")
    store.save(RECORDS)
    assert store.get_params() == {"path": tmp_path / "h.db", "table": "t"}
    clone = store.clone()
    assert clone.load() == RECORDS  # same file, same table
    jsonl = JsonlKeyValueStore(tmp_path / "x.jsonl")
    assert jsonl.get_params() == {"path": tmp_path / "x.jsonl"}
