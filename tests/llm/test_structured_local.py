"""Structured output with the base Gemma 3 270M (by name): under the grammar built from a step's schema the
model's answers are ones the step reads (judge labels, an extraction, a relevance choice), where the
same model unconstrained (``structured_output=False``) answers the judge with prose and the
extraction with a copy of the prompt's format line. Format errors are counted the same way both
times. A handful of short calls: the module takes seconds on an idle machine.

llama-cpp-python is installed by scripts/setup.sh (memlab[local]): if it is missing these tests
fail rather than skip (as tests/llm/test_local.py)."""

from __future__ import annotations

import json
import math

import jsonschema
import pandas as pd
import pytest

from memlab.eval.answers import judge_rows
from memlab.extraction.llm import LLMExtractor
from memlab.llm import ResponseCache
from memlab.llm.local import LocalLLM
from memlab.llm.prompts import JUDGE_SCHEMA, LENIENT_JUDGE_PROMPT, filter_prompt, filter_schema
from memlab.records import Hit, MemoryRecord, Role
from memlab.retrieval.llm_filter import LLMRelevanceFilter
from memlab.retrieval.llm_rerank import LLMReranker

#: (question, gold, generated answer): the unconstrained model answers the second with prose.
CASES = [("What did Caroline paint?", "a sunrise", "Caroline painted a sunrise over the lake."),
         ("Where does Ann live?", "Oslo", "I don't know"),
         ("When did Mel go camping?", "June 2023", "User said: we went camping in the mountains")]
TURNS = [MemoryRecord(role=Role.USER, content="I moved to Oslo last month and I work at a bakery now.", id="t1", name="Ann"),
         MemoryRecord(role=Role.ASSISTANT, content="That sounds lovely! Do you like it?", id="t2", name="Bob"),
         MemoryRecord(role=Role.USER, content="Yes, and I drink green tea every morning.", id="t3", name="Ann")]


@pytest.fixture(scope="module")
def models():
    on = LocalLLM(model="gemma-3-270m", n_ctx=2048, max_tokens=256)
    off = LocalLLM(model="gemma-3-270m", n_ctx=2048, max_tokens=256, structured_output=False)
    yield on, off
    on.close()  # (both share one loaded model)


def _rows() -> pd.DataFrame:
    return pd.DataFrame({"query": [q for q, _, _ in CASES], "answer": [g for _, g, _ in CASES],
                         "prediction": [p for _, _, p in CASES]})


def test_judge_labels_are_all_readable_under_the_schema(models):
    on, off = models
    prompts = {"lenient": LENIENT_JUDGE_PROMPT}
    constrained, free = judge_rows(_rows(), on, prompts), judge_rows(_rows(), off, prompts)
    assert int(constrained["judge_format_errors:lenient"].sum()) == 0
    assert all(v in (0.0, 1.0) for v in constrained["judge:lenient"])
    # the same model unconstrained: "I don't know" is neither label, counted as before
    assert int(free["judge_format_errors:lenient"].sum()) >= 1
    assert math.isnan(free["judge:lenient"][1])
    text = on.complete([{"role": "user", "content": "Say anything."}], max_tokens=16, schema=JUDGE_SCHEMA).text
    jsonschema.validate(json.loads(text), JUDGE_SCHEMA)


def test_extraction_is_readable_under_the_schema_and_not_without(models):
    on, off = models
    results = {}
    for name, llm in (("on", on), ("off", off)):
        extractor = LLMExtractor(llm, max_attempts=1, on_failure="skip")
        found = extractor.extract(TURNS)
        results[name] = (found, extractor.usage.format_errors, extractor.failures)
    found, errors, failures = results["on"]
    assert (errors, failures) == (0, 0) and found
    assert all(m.memory_type in ("fact", "preference", "event_summary") for m in found)
    assert results["off"][1:] == (1, 1)  # the unconstrained answer does not parse: one format error


def test_fact_keys_from_a_local_model_take_one_readable_call_per_turn(models):
    """recall_plus's fact keys with a real model: each observed turn is one extraction call,
    answered under the schema (no format error, nothing given up), and a turn's key is its
    text followed by what the model wrote for it."""
    from memlab import strategies
    from memlab.retrieval.fact_keys import FactKeyRetriever

    on, _ = models
    s = strategies.get("recall_plus", fact_weight=0.5, fact_extractor=on)
    keys = next(c for c in s.retriever.components() if isinstance(c, FactKeyRetriever))
    for t in TURNS:
        s.observe(t)
    usage = s.llm_usage()
    assert (usage["calls"], usage["format_errors"], keys.extractor.failures) == (3, 0, 0)
    for t in TURNS:
        assert keys.retriever.get_record(t.id).content == "\n".join([t.content, *keys.facts(t.id)[:keys.max_facts]])
    assert any(keys.facts(t.id) for t in TURNS)


def test_relevance_filter_answer_is_bounded_by_the_schema(models):
    on, off = models
    texts = ["Ann works at a bakery", "Ann moved to Oslo", "Bob likes cats"]
    hits = [Hit(memory_record=MemoryRecord(role=Role.USER, content=t, id=f"m{i}"), score=1.0 - i / 10, rank=i + 1)
            for i, t in enumerate(texts)]
    selector = LLMRelevanceFilter(on)
    chosen = selector.select("Where does Ann live?", hits, 2)
    assert selector.usage.format_errors == 0 and len(chosen) <= 2
    text = on.complete(filter_prompt("Where does Ann live?", texts, 2), schema=filter_schema(3, 2)).text
    jsonschema.validate(json.loads(text), filter_schema(3, 2))  # unconstrained, it counts on past 80


def test_a_local_models_rerank_is_read_without_format_errors_and_drops_nothing(models):
    on, _ = models
    texts = ["Bob likes cats", "the bakery opens at seven", "Ann moved to Oslo", "Ann works at a bakery"]
    hits = [Hit(memory_record=MemoryRecord(role=Role.USER, content=t, id=f"m{i}"), score=1.0 - i / 10, rank=i + 1)
            for i, t in enumerate(texts)]
    reranker = LLMReranker(on, window=3)
    out = reranker.select("Where does Ann live?", hits, 4)
    assert reranker.usage.calls == 1 and reranker.usage.format_errors == 0
    assert sorted(h.id for h in out) == ["m0", "m1", "m2", "m3"] and out[3].id == "m3"  # below the window: kept


def test_cache_keeps_constrained_and_unconstrained_answers_apart():
    cache = ResponseCache()
    on = LocalLLM(model="gemma-3-270m", n_ctx=2048, max_tokens=16, cache=cache)
    off = LocalLLM(model="gemma-3-270m", n_ctx=2048, max_tokens=16, cache=cache, structured_output=False)
    ask = [{"role": "user", "content": LENIENT_JUDGE_PROMPT.format(question=CASES[1][0], gold=CASES[1][1],
                                                                   prediction=CASES[1][2])}]
    a, b = on.complete(ask, schema=JUDGE_SCHEMA), off.complete(ask, schema=JUDGE_SCHEMA)
    assert len(cache) == 2 and not b.cached and a.text != b.text
    assert on.complete(ask, schema=JUDGE_SCHEMA).text == a.text and on.usage.cached_calls == 1
    assert off.complete(ask).cached  # the schema never reached the unconstrained request
