"""Fact-augmented keys (``FactKeyRetriever``): the index text formula, the extractor asked
once per record as it is added, its cost in a strategy's ``llm_usage``, and recall_plus's
``fact_weight`` / ``fact_extractor``. A real model under the extraction schema is in
tests/llm/test_structured_local.py."""

from __future__ import annotations

import pytest

from memlab import strategies
from memlab.base import ConfigError
from memlab.extraction import LLMExtractor, RuleBasedExtractor
from memlab.extraction.base import ExtractedMemory, Extractor
from memlab.offline.llm import OfflineLLM
from memlab.records import MemoryRecord
from memlab.retrieval import BM25Retriever, FactKeyRetriever
from memlab.testing import check_retriever


class Listed(Extractor):
    """Facts given by hand, per record content; counts its calls and what each call saw."""

    def __init__(self, facts: dict[str, list[str]] | None = None):
        self.facts = facts or {}
        self.seen: list[list[str]] = []

    def extract(self, records):
        self.seen.append([r.id for r in records])
        return [ExtractedMemory(f, source_ids=[r.id for r in records])
                for r in records for f in self.facts.get(r.content, [])]


def turn(id: str, text: str, name: str = "Ann") -> MemoryRecord:
    return MemoryRecord(role="user", content=text, id=id, name=name)


def test_index_text_is_the_content_then_the_facts_weight_times_and_search_returns_the_record():
    ex = Listed({"moved last month": ["Ann lives in Oslo", "Ann moved in May", "Ann rents a flat"]})
    keys = FactKeyRetriever(BM25Retriever(), ex, weight=2, max_facts=2)
    keys.add([turn("a", "moved last month"), turn("b", "nice weather")])
    assert keys.retriever.get_record("a").content == ("moved last month\nAnn lives in Oslo\nAnn moved in May"
                                                      "\nAnn lives in Oslo\nAnn moved in May")
    assert keys.retriever.get_record("b").content == "nice weather"  # no fact: the content alone
    assert keys.facts("a") == ["Ann lives in Oslo", "Ann moved in May", "Ann rents a flat"]  # before the cut
    assert ex.seen == [["a"], ["b"]]  # one call per record, each shown alone
    hit = keys.search("where does Ann live, Oslo?", 1)[0]
    assert hit.id == "a" and hit.memory_record.content == "moved last month"
    keys.set_params(weight=0)
    assert keys.retriever.get_record("a").content == "moved last month"
    keys.remove(["a"])
    assert keys.facts("a") == [] and [h.id for h in keys.search("weather", 5)] == ["b"]


def test_the_rule_extractor_gives_keys_offline_and_the_part_passes_the_contract():
    keys = FactKeyRetriever(BM25Retriever(), RuleBasedExtractor())
    keys.add([turn("a", "I live in Paris and I love sushi", "Bo")])
    assert keys.facts("a") == ["Bo lives in Paris", "Bo loves sushi"]
    assert keys.retriever.get_record("a").content == "I live in Paris and I love sushi\nBo lives in Paris\nBo loves sushi"
    assert "hits_obey_the_contract" in check_retriever(FactKeyRetriever(BM25Retriever(), RuleBasedExtractor()))


def test_an_llm_extractor_is_asked_once_per_observed_turn_and_counted_in_llm_usage():
    s = strategies.get("recall_plus", fact_weight=0.5, fact_extractor="offline")
    found = [c for c in s.retriever.components() if isinstance(c, FactKeyRetriever)]
    assert len(found) == 1 and isinstance(found[0].extractor, LLMExtractor)
    turns = [turn("t1", "I live in Paris with my cat."), turn("t2", "Lovely! Paris is great.", "Bo"),
             turn("t3", "I love sushi.")]
    for t in turns:
        s.observe(t)
    usage = s.llm_usage()
    assert usage["calls"] == 3 and usage["format_errors"] == 0 and usage["prompt_tokens"] > 0
    assert found[0].facts("t1") == ["Ann lives in Paris with my cat"]  # the offline model's rules, via the prompt
    s.retrieve("where does Ann live?", 5)
    assert s.llm_usage()["calls"] == 3  # nothing per query
    s.reset()
    assert s.llm_usage()["calls"] == 0 and found[0].facts("t1") == []


def test_fact_keys_move_a_turn_whose_facts_match_and_are_off_by_default():
    turns = [turn("t1", "We finally got the keys to the new place in Oslo!"),
             turn("t2", "Where is the best bakery in Bergen?", "Bo"),
             turn("t3", "I work at a bakery now.")]
    ex = Listed({turns[0].content: ["Ann moved to a new home in Oslo"]})

    def ranked(s):
        for t in turns:
            s.observe(t)
        return [h.id for h in s.retrieve("Where did Ann move to?", 3)]

    off = strategies.get("recall_plus")
    assert not [c for c in off.retriever.components() if isinstance(c, FactKeyRetriever)]
    on = strategies.get("recall_plus", fact_weight=0.5, fact_extractor=ex)
    assert "t1" not in ranked(off)  # "move" is in no turn's words
    assert ranked(on)[0] == "t1"


@pytest.mark.parametrize("params,match", [
    ({"fact_weight": -1}, r"recall_plus parameter 'fact_weight': expected a number >= 0 \(0: off\), got -1"),
    ({"fact_weight": True}, r"'fact_weight': expected a number >= 0 \(0: off\), got True"),
    ({"fact_weight": 0.5, "fact_extractor": "gpt"},
     r"recall_plus parameter 'fact_extractor': expected None, 'rules', an Extractor or an LLM name .*got 'gpt'"),
])
def test_bad_fact_settings_are_one_clear_error(params, match):
    with pytest.raises(ConfigError, match=match):
        strategies.get("recall_plus", **params)


def test_an_offline_llm_in_the_extractor_is_named_in_the_configuration():
    s = strategies.get("recall_plus", fact_weight=0.5, fact_extractor=OfflineLLM())
    params = s.get_params(deep=True)
    assert any(isinstance(v, OfflineLLM) for v in params.values())
