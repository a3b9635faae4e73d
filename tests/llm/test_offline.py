"""OfflineLLM: deterministic answers to memlab's own prompts, with token accounting."""

from __future__ import annotations

import asyncio
import json
import math

from memlab.offline import OfflineLLM
from memlab.offline.llm import inflect
from memlab.llm.prompts import (
    expand_prompt,
    extract_prompt,
    filter_prompt,
    hyde_prompt,
    rewrite_prompt,
    summarize_prompt,
)
from memlab.text import stem
from memlab.records import MemoryRecord
from memlab.tokens import ApproxTokenCounter, TiktokenCounter

TURNS = [
    MemoryRecord("user", "Hi there! I live in Paris and I love coffee.", id="D1:1", name="Ann"),
    MemoryRecord("assistant", "Great, noted.", id="D1:2"),
    MemoryRecord("user", "We agreed to meet on Friday at 3pm.", id="D1:3", name="Ann"),
]


def test_summarize_is_extractive():
    c = OfflineLLM().complete(summarize_prompt(TURNS, "", 60))
    # "Hi there!" and "Great, noted." have fewer than 2 content terms: dropped
    assert c.text == "Ann: I live in Paris and I love coffee. Ann: We agreed to meet on Friday at 3pm."


def test_extract_returns_rule_based_json():
    data = json.loads(OfflineLLM().complete(extract_prompt(TURNS)).text)
    assert data == {"memories": [
        {"content": "Ann lives in Paris", "memory_type": "fact", "subject": "location", "source_ids": ["D1:1"]},
        {"content": "Ann loves coffee", "memory_type": "preference", "subject": "beverage_preference",
         "source_ids": ["D1:1"]}]}


def test_rewrite_expand_hyde_are_lexical_variants():
    llm = OfflineLLM()
    assert llm.complete(rewrite_prompt("Where does Ann live?", TURNS)).text == "ann live"
    # a pronoun pulls in the last turn's content terms
    assert llm.complete(rewrite_prompt("When is it?", TURNS)).text == "agreed meet friday 3pm"
    assert llm.complete(expand_prompt("Where does Ann live?", 3)).text == "ann live\nanns lives\nann live anns lives"
    assert llm.complete(expand_prompt("Where does Ann live?", 1)).text == "ann live"
    assert llm.complete(hyde_prompt("Where does Ann live?")).text == "ann live anns lives."
    assert (stem("lives"), stem("working"), stem("is"), stem("北京"), inflect("live"), inflect("box")) == \
        ("live", "work", "is", "北京", "lives", "boxes")


def test_filter_keeps_overlapping_memories_most_overlap_first():
    memories = ["Bob likes tea", "Ann lives in Paris", "Ann loves coffee", "Ann lives in Paris now"]
    text = OfflineLLM().complete(filter_prompt("Where does Ann live in Paris?", memories, 2)).text
    # overlaps: 0, 2 (ann, paris), 1 (ann), 2 -> best two, ties by position
    assert json.loads(text) == {"relevant": [2, 4]}


def test_plain_chat_answers_with_the_most_relevant_sentence():
    llm = OfflineLLM()
    msgs = [{"role": "system", "content": "Memories:\n- Ann lives in Paris.\n- Ann loves coffee."},
            {"role": "user", "content": "What does Ann love?"}]
    assert llm.complete(msgs).text == "Ann loves coffee."
    assert llm.complete([{"role": "user", "content": "zzz"}]).text == "I don't know."


def test_tokens_counted_with_the_token_counter_and_usage_kept():
    counter = ApproxTokenCounter(chars_per_token=4)
    llm = OfflineLLM(token_counter=counter)
    msgs = [{"role": "user", "content": "What does Ann love?"}]  # 19 chars -> 5 tokens
    c = llm.complete(msgs)
    # message: 3 framing + role "user" (1) + content (5); + 3 reply priming = 12
    assert c.prompt_tokens == 12 and c.completion_tokens == math.ceil(len(c.text) / 4) == 4
    llm.complete(msgs)
    assert llm.usage.as_dict() == {"prompt_tokens": 24, "completion_tokens": 8, "calls": 2, "cached_calls": 0,
            "cached_tokens": 0, "format_errors": 0}
    default = OfflineLLM().complete(msgs)
    assert default.prompt_tokens == TiktokenCounter().count_messages(msgs)


def test_deterministic_and_async():
    msgs = summarize_prompt(TURNS, "Ann: I am 30 years old.", 40)
    a, b = OfflineLLM().complete(msgs), OfflineLLM().complete(msgs)
    assert a == b
    llm = OfflineLLM()
    c = asyncio.run(llm.acomplete(msgs))
    assert c == a and llm.usage.calls == 1


def test_question_is_the_text_after_the_last_question_marker():
    from memlab.offline.llm import question_of

    assert question_of("Answer briefly.\n\nQuestion: Where did the user stay?") == "Where did the user stay?"
    assert question_of("Question: a?\nQuestion: b?") == "b?"
    assert question_of("  What does Ann love? ") == "What does Ann love?"


def test_answers_ignore_the_instruction_words():
    from memlab.eval.answers import Answerer

    context = [{"role": "user", "content": "Let's add a short tempo section. I stayed at the Ibis in Hamburg."}]
    # the instruction's "short" no longer picks the first sentence: the question's "stay" picks the second
    assert Answerer(OfflineLLM()).answer(context, "Where did the user stay?").text == \
        "I stayed at the Ibis in Hamburg."


def test_answers_never_echo_the_question():
    from memlab.eval.answers import Answerer

    llm = OfflineLLM()
    # a layered context ends with the question as a user message: that message is skipped
    context = [{"role": "system", "content": "Relevant memories:\n- [2024-05-01] I stayed at the Ibis."},
               {"role": "user", "content": "Where did the user stay?"}]
    assert Answerer(llm).answer(context, "Where did the user stay?").text == "I stayed at the Ibis."
    # a sentence equal to, or contained in, the question is never the answer
    said = [{"role": "assistant", "content": "Where did I stay in Hamburg? You stayed at the Ibis."},
            {"role": "user", "content": "So, where did I stay in Hamburg?"}]
    assert llm.complete(said).text == "You stayed at the Ibis."
    # the final user message's own sentences are never candidates
    assert llm.complete([{"role": "user", "content": "Paris is nice. Where is Paris?"}]).text == "I don't know."
