"""ResponseCache keys and persistence; prompt rendering and answer parsing."""

from __future__ import annotations

import hashlib
import json
import pickle

import pytest

from memlab.base import MemlabError
from memlab.llm import Completion, ResponseCache
from memlab.llm.cache import cache_key
from memlab.llm.prompts import (
    filter_prompt,
    parse_lines,
    parse_numbered,
    parse_sections,
    parse_selection,
    parse_turns,
    render_turns,
    strip_fences,
    summarize_prompt,
    task_of,
)
from memlab.records import MemoryRecord

MSGS = [{"role": "user", "content": "héllo"}]


def test_key_is_sha256_of_canonical_json():
    expected = hashlib.sha256(json.dumps(
        {"model": "m", "messages": MSGS, "params": {"a": 1, "b": 2}}, sort_keys=True,
        separators=(",", ":"), ensure_ascii=False).encode("utf-8")).hexdigest()
    assert cache_key("m", MSGS, {"b": 2, "a": 1}) == expected
    assert cache_key("m", MSGS, {"a": 1}) != cache_key("m2", MSGS, {"a": 1})


def test_cache_roundtrip_persists_and_clears(tmp_path):
    path = str(tmp_path / "c.sqlite")
    cache = ResponseCache(path)
    assert cache.get("m", MSGS, {}) is None
    cache.put("m", MSGS, {}, Completion("hi", 5, 1, "m"))
    assert cache.get("m", MSGS, {}) == Completion("hi", 5, 1, "m", cached=True)
    cache.close()
    reopened = ResponseCache(path)
    assert len(reopened) == 1 and reopened.get("m", MSGS, {}).text == "hi"
    restored = pickle.loads(pickle.dumps(reopened))
    assert restored.get("m", MSGS, {}).text == "hi"
    reopened.clear()
    assert len(reopened) == 0


def test_cache_creates_a_missing_folder_like_memlab_cache_dir_on_a_first_run(tmp_path):
    cache = ResponseCache(str(tmp_path / "missing" / "deeper" / "c.sqlite"))
    assert cache.get("m", MSGS, {}) is None
    cache.put("m", MSGS, {}, Completion("hi", 3, 1))
    assert ResponseCache(cache.path).get("m", MSGS, {}).text == "hi"


def test_cache_bad_paths(tmp_path):
    (tmp_path / "file").write_text("x")
    with pytest.raises(MemlabError, match="cannot create folder"):
        ResponseCache(str(tmp_path / "file" / "c.sqlite")).get("m", MSGS, {})
    bad = tmp_path / "bad.sqlite"
    bad.write_text("this is not a database" * 100)
    with pytest.raises(MemlabError, match="not a usable SQLite file"):
        ResponseCache(str(bad)).get("m", MSGS, {})


def test_prompts_carry_task_and_sections():
    turns = [MemoryRecord("user", "I live\nin Paris.", id="t1", name="Ann"), MemoryRecord("assistant", "Ok", id="t2")]
    msgs = summarize_prompt(turns, "", 50)
    assert task_of(msgs) == "summarize" and task_of([{"role": "user", "content": "x"}]) is None
    assert "agreements and decisions" in msgs[0]["content"] and "to-dos" in msgs[0]["content"]
    sections = parse_sections(msgs[1]["content"])
    assert sections == {"Previous summary": "(none)", "Conversation": "[t1] Ann: I live in Paris.\n[t2] assistant: Ok"}
    assert parse_turns(render_turns(turns)) == [("t1", "Ann", "I live in Paris."), ("t2", "assistant", "Ok")]
    numbered = parse_sections(filter_prompt("q", ["a b", "c"], 2)[1]["content"])["Memories"]
    assert parse_numbered(numbered) == ["a b", "c"]


def test_answer_parsers():
    assert strip_fences('```json\n{"a": 1}\n```') == '{"a": 1}'
    assert parse_lines("1. alpha\n- beta\n\nalpha\n[3] gamma", 5) == ["alpha", "beta", "gamma"]
    assert parse_selection('{"relevant": [3, 1, 9, 1]}', 3) == [2, 0]
    assert parse_selection("Relevant: 2 and 1", 3) == [1, 0]
    assert parse_selection('```json\n{"relevant": []}\n```', 3) == []
    with pytest.raises(MemlabError, match="must list item numbers"):
        parse_selection('{"relevant": "two"}', 3)
