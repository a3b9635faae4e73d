"""RuleBasedExtractor (offline) and LLMExtractor (JSON validated, retried) via the loopback server."""

from __future__ import annotations

import asyncio
import json

import pytest

from memlab.base import ConfigError, MemlabError
from memlab.offline import OfflineLLM
from memlab.memories.layered import ExtractedMemory, LLMExtractor, RuleBasedExtractor
from memlab.extraction import parse_extraction
from memlab.records import MemoryRecord


@pytest.mark.parametrize("text, expected", [
    ("I live in Paris now.", [("fact", "location", "Ann lives in Paris")]),
    ("I've moved to Berlin, finally!", [("fact", "location", "Ann moved to Berlin")]),
    ("I love coffee!", [("preference", "beverage_preference", "Ann loves coffee")]),
    ("I like hiking and painting", [("preference", "opinion:hiking and painting", "Ann likes hiking and painting")]),
    ("I don't like sushi anymore.", [("preference", "opinion:sushi", "Ann doesn't like sushi")]),
    ("I prefer window seats.", [("preference", "prefers:window seats", "Ann prefers window seats")]),
    ("I switched to green tea.", [("preference", "beverage_preference", "Ann switched to green tea")]),
    ("My favorite color is blue.", [("preference", "favorite color", "Ann's favorite color is blue")]),
    ("My sister's name is Eva.", [("fact", "sister's name", "Ann's sister's name is Eva")]),
    ("I'm a teacher and I work at Acme Corp.",
     [("fact", "employer", "Ann works at Acme Corp"), ("fact", "occupation", "Ann is a teacher")]),
    ("I work as a nurse.", [("fact", "occupation", "Ann works as a nurse")]),
    ("I'm 32 years old.", [("fact", "age", "Ann is 32 years old")]),
    ("My name is Ann Lee.", [("fact", "name", "Ann's name is Ann Lee")]),
    ("I'm a bit tired.", []),
    ("I live in Paris and I love it.", [("fact", "location", "Ann lives in Paris")]),
    ("Do you live in Paris?", []),
    ("I would like a table.", []),
    ("我叫张三。", [("fact", "name", "Ann叫张三")]),
    ("我住在北京，我喜欢喝咖啡。", [("fact", "location", "Ann住在北京"),
                            ("preference", "beverage_preference", "Ann喜欢喝咖啡")]),
    ("我不喜欢吃辣", [("preference", "opinion:辣", "Ann不喜欢吃辣")]),
    ("我的猫是橘猫。", [("fact", "猫", "Ann的猫是橘猫")]),
    ("我是老师", [("fact", "occupation", "Ann是老师")]),
    ("我在腾讯工作", [("fact", "employer", "Ann在腾讯工作")]),
    ("我现在改喝茶了", [("preference", "beverage_preference", "Ann现在改喝茶")]),
])
def test_rules(text, expected):
    assert RuleBasedExtractor().statements(text, "Ann") == expected


def test_extract_attributes_speaker_roles_and_sources():
    turns = [MemoryRecord("user", 'Caroline said, "I live in Boston."', id="D1:1", metadata={"speaker": "Caroline"}),
             MemoryRecord("assistant", "I love jazz.", id="D1:2"),
             MemoryRecord("user", "我住在上海", id="D1:3"),
             MemoryRecord("user", "I live in Boston.", id="D1:4", metadata={"speaker": "Caroline"})]
    got = RuleBasedExtractor().extract(turns)
    assert got == [ExtractedMemory("Caroline lives in Boston", "fact", "location", ["D1:1"]),
                   ExtractedMemory("User loves jazz", "preference", "opinion:jazz", ["D1:2"]),
                   ExtractedMemory("用户住在上海", "fact", "location", ["D1:3"])]  # the repeat is dropped
    assert [m.source_ids for m in RuleBasedExtractor(roles=("user",)).extract(turns)] == [["D1:1"], ["D1:3"]]
    with pytest.raises(MemlabError, match="role must be one of"):
        RuleBasedExtractor(roles=("human",))


def test_parse_extraction_errors():
    with pytest.raises(MemlabError, match="not JSON"):
        parse_extraction("here you go", ["t"])
    with pytest.raises(MemlabError, match="must have a 'memories' list, got keys \\['items'\\]"):
        parse_extraction('{"items": []}', ["t"])
    with pytest.raises(MemlabError, match="invalid at 0/memory_type: 'place' is not one of"):
        parse_extraction('[{"content": "x", "memory_type": "place", "subject": ""}]', ["t"])
    with pytest.raises(MemlabError, match="invalid at 0: 'subject' is a required property"):
        parse_extraction('{"memories": [{"content": "x", "memory_type": "fact"}]}', ["t"])
    ok = parse_extraction('```json\n[{"content": " x ", "memory_type": "fact", "subject": "s"}]\n```', ["t"])
    assert ok == [ExtractedMemory("x", "fact", "s", ["t"])]


TURNS = [MemoryRecord("user", "I live in Paris.", id="D1:1", name="Ann"),
         MemoryRecord("user", "I love coffee.", id="D1:2", name="Ann")]
VALID = json.dumps({"memories": [{"content": "Ann lives in Paris", "memory_type": "fact",
                                  "subject": "location", "source_ids": ["D1:1", "D9:9"]},
                                 {"content": "Ann loves coffee", "memory_type": "preference",
                                  "subject": "beverage_preference", "source_ids": ["nope"]}]})


def test_llm_extractor_retries_malformed_then_valid(server, chat_llm):
    server.chat.push("not json", '{"memories": [{"content": "x", "memory_type": "place", "subject": ""}]}', VALID)
    ex = LLMExtractor(chat_llm)
    got = ex.extract(TURNS)
    assert got == [ExtractedMemory("Ann lives in Paris", "fact", "location", ["D1:1"]),
                   ExtractedMemory("Ann loves coffee", "preference", "beverage_preference", ["D1:1", "D1:2"])]
    assert len(server.requests) == 3
    third = server.requests[2]["body"]["messages"]
    # the model sees its earlier answers and what was wrong with them
    assert third[2] == {"role": "assistant", "content": "not json"}
    assert "'place' is not one of" in third[5]["content"]
    assert ex.usage.calls == 3 and ex.usage.prompt_tokens == sum(
        sum(len(str(m["content"]).split()) for m in r["body"]["messages"]) for r in server.requests)


def test_llm_extractor_gives_up_or_skips(server, chat_llm):
    server.chat.push("nope", "still nope")
    with pytest.raises(MemlabError, match="no valid answer after 2 attempt\\(s\\); last problem: "
                                          "extraction answer is not JSON"):
        LLMExtractor(chat_llm, max_attempts=2).extract(TURNS)
    server.chat.push("x", "y")
    skipping = LLMExtractor(chat_llm, max_attempts=2, on_failure="skip")
    assert skipping.extract(TURNS) == [] and skipping.failures == 1
    assert LLMExtractor(chat_llm).extract([]) == []
    with pytest.raises(ConfigError, match=r"^LLMExtractor parameter 'max_attempts': expected an int >= 1, got 0$"):
        LLMExtractor(chat_llm, max_attempts=0)


def test_llm_extractor_with_offline_answers_matches_rules(server, chat_llm):
    rules = RuleBasedExtractor().extract(TURNS)
    assert LLMExtractor(OfflineLLM()).extract(TURNS) == rules
    assert LLMExtractor(chat_llm).extract(TURNS) == rules  # loopback answers like OfflineLLM
    ex = LLMExtractor(chat_llm)
    server.chat.push("{}", VALID)
    got = asyncio.run(ex.aextract(TURNS))
    assert [m.content for m in got] == ["Ann lives in Paris", "Ann loves coffee"] and ex.usage.calls == 2
