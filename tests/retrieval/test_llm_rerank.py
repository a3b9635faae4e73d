"""LLMReranker: the hits a model names move to the front, in its order; nothing is dropped."""

from __future__ import annotations

import json

import pytest

from memlab.base import ConfigError
from memlab.llm.prompts import FILTER, task_of
from memlab.offline import OfflineLLM
from memlab.records import Hit, MemoryRecord
from memlab.retrieval.bm25 import BM25Retriever
from memlab.retrieval.llm_rerank import LLMReranker, shown
from memlab.strategies.retrieval import RetrievalStrategy

TEXTS = ["we talked about the weather", "the bakery opens at seven", "Ann moved to Oslo in May",
         "Bob has two cats", "nothing much today", "Ann lives in Oslo near the harbour"]


def hits(texts=TEXTS, names=None):
    out = []
    for n, t in enumerate(texts):
        r = MemoryRecord("user", t, id=f"m{n}", name=(names or [None] * len(texts))[n])
        out.append(Hit(memory_record=r, score=1.0 - n / 10, rank=n + 1, components={"bm25": {"score": 1.0 - n / 10}}))
    return out


def test_the_named_hits_lead_in_the_models_order_and_the_rest_keep_theirs():
    """OfflineLLM names the memories sharing words with the question, most shared first:
    "Ann lives in Oslo ..." (the sixth hit), then "Ann moved to Oslo ..." (the third)."""
    llm = OfflineLLM()
    reranker = LLMReranker(llm, window=6)
    out = reranker.select("Where does Ann live in Oslo?", hits(), 6)
    assert [h.id for h in out] == ["m5", "m2", "m0", "m1", "m3", "m4"]
    assert [h.score for h in out] == [h.score for h in hits()]  # position i keeps the i-th score
    assert [h.rank for h in out] == [1, 2, 3, 4, 5, 6]
    assert out[0].components["llm_rerank"] == {"score": 1.0, "rank": 1} and "bm25" in out[0].components
    assert reranker.usage.calls == 1 and reranker.usage.format_errors == 0
    one = LLMReranker(llm, window=6, max_named=1).select("Where does Ann live in Oslo?", hits(), 6)
    assert [h.id for h in one] == ["m5", "m0", "m1", "m2", "m3", "m4"]  # the model may name one
    capped = LLMReranker(llm, window=6, max_named=1)._order(hits(), 6, json.dumps({"relevant": [3, 2]}))
    assert [h.id for h in capped] == ["m2", "m0", "m1", "m3", "m4", "m5"]  # a longer answer is read to max_named


def test_hits_below_the_window_keep_their_places_and_k_cuts_the_list():
    reranker = LLMReranker(OfflineLLM(), window=3)
    out = reranker.select("Where does Ann live in Oslo?", hits(), 5)
    # the window is m0..m2: only m2 shares words, so it leads; m3, m4 stay where they were; m5 is cut by k
    assert [h.id for h in out] == ["m2", "m0", "m1", "m3", "m4"]
    assert reranker.select("anything", [], 5) == [] and reranker.select("x", hits(), 0) == []


def test_the_model_reads_the_window_with_speakers_under_the_filter_task():
    seen = []

    class Recording(OfflineLLM):
        def complete(self, messages, **params):
            seen.append((messages, params))
            return super().complete(messages, **params)

    names = ["Caroline", None, "Mel", None, None, None]
    LLMReranker(Recording(), window=4).select("What did Caroline paint?", hits(names=names), 6)
    (messages, params), = seen
    assert task_of(messages) == FILTER
    user = messages[-1]["content"]
    assert "[1] Caroline: we talked about the weather" in user and "[3] Mel: Ann moved to Oslo" in user
    assert "[5]" not in user  # only the window is shown
    assert shown(hits(names=names)[1]) == "the bakery opens at seven"


def test_an_answer_that_is_not_the_asked_json_is_read_for_its_numbers_and_counted():
    reranker = LLMReranker(OfflineLLM(), window=4)
    out = reranker._order(hits(), 4, "I would say 3, then 9 and 1")  # 9 is outside the window
    assert [h.id for h in out] == ["m2", "m0", "m1", "m3"] and reranker.usage.format_errors == 1
    out = reranker._order(hits(), 4, json.dumps({"relevant": [2, 2, 4]}))  # a repeat counts once
    assert [h.id for h in out] == ["m1", "m3", "m0", "m2"] and reranker.usage.format_errors == 1


def test_window_is_validated_and_the_verdict_is_asked_once_per_query_in_a_strategy():
    with pytest.raises(ConfigError, match="window"):
        LLMReranker(OfflineLLM(), window=0)
    with pytest.raises(ConfigError, match="max_named"):
        LLMReranker(OfflineLLM(), max_named=0)
    reranker = LLMReranker(OfflineLLM(), window=3)
    strategy = RetrievalStrategy(retriever=BM25Retriever(), selection=reranker, candidates=10)
    for n, t in enumerate(TEXTS):
        strategy.observe(MemoryRecord("user", t, id=f"m{n}"))
    first = strategy.retrieve("Where does Ann live in Oslo?", k=3)
    strategy.build_context("Where does Ann live in Oslo?")
    assert strategy.retrieve("Where does Ann live in Oslo?", k=3)[0].id == first[0].id
    assert strategy.llm_usage()["calls"] == 1 and reranker.usage.calls == 1


def test_max_words_cuts_what_the_model_reads_and_returns_whole_hits():
    seen = []

    class Recording(OfflineLLM):
        def complete(self, messages, **params):
            seen.append(messages[-1]["content"])
            return super().complete(messages, **params)

    long = ["one two three four five six", "Ann lives in Oslo", "a b c"]
    out = LLMReranker(Recording(), window=3, max_words=4).select("Where does Ann live?", hits(long, ["Bo", None, None]), 3)
    user, = seen
    assert "[1] Bo: one two three four ...\n" in user + "\n" and "five" not in user
    assert "[2] Ann lives in Oslo" in user and "[3] a b c" in user and "Oslo ..." not in user  # exactly 4 words: whole
    assert {h.record.content for h in out} == set(long)  # the hits come back whole
    assert shown(hits(long)[0], 2) == "one two ..." and shown(hits(long)[0]) == long[0]
    with pytest.raises(ConfigError, match="max_words"):
        LLMReranker(OfflineLLM(), max_words=0)
