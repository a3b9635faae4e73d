"""Pseudo-relevance feedback (RM3 weights pinned) and ExpansionRetriever fusion."""

import pytest

from memlab.base import ConfigError
from memlab.records import MemoryRecord
from memlab.retrieval.bm25 import BM25Retriever
from memlab.retrieval.expansion import (
    ExpansionRetriever,
    PseudoRelevanceFeedback,
    QueryExpander,
)
from memlab.retrieval.fusion import RRF


def rec(i, text):
    return MemoryRecord("user", text, id=str(i), timestamp=float(i))


def bm25(texts):
    r = BM25Retriever()
    r.add([rec(i, t) for i, t in enumerate(texts)])
    return r


TEXTS = ["apple banana", "apple cherry cherry", "grape", "melon", "kiwi"]


def test_rm3_term_weights_hand_computed():
    r = bm25(TEXTS)
    prf = PseudoRelevanceFeedback(fb_docs=2, fb_terms=3, original_weight=0.5)
    hits = r.search("apple", k=2)
    s0, s1 = hits[0].score, hits[1].score
    assert [h.id for h in hits] == ["0", "1"] and s0 > s1 > 0
    w0, w1 = s0 / (s0 + s1), s1 / (s0 + s1)
    weights = prf.term_weights("apple", hits)
    assert list(weights) == ["apple", "banana", "cherry"]
    assert weights["apple"] == pytest.approx(0.5 * 1 + 0.5 * (w0 / 2 + w1 / 3), abs=1e-15)
    assert weights["banana"] == pytest.approx(0.5 * w0 / 2, abs=1e-15)
    assert weights["cherry"] == pytest.approx(0.5 * w1 * 2 / 3, abs=1e-15)
    expected_order = sorted(["banana", "cherry"], key=lambda t: -weights[t])
    assert prf.expand("apple", r) == ["apple", " ".join(["apple"] + expected_order)]


def test_zero_scores_give_uniform_document_weights():
    r = bm25(["apple banana", "apple cherry", "grape", "melon"])  # idf(apple) = 0
    hits = r.search("apple", k=2)
    assert [h.score for h in hits] == [0.0, 0.0]
    weights = PseudoRelevanceFeedback(original_weight=0.0).term_weights("apple", hits)
    assert weights == pytest.approx({"apple": 0.5, "banana": 0.25, "cherry": 0.25})


def test_stopwords_are_not_expansion_terms_and_fb_terms_caps():
    r = bm25(["the apple and the pie", "nothing"])
    out = PseudoRelevanceFeedback(fb_docs=1, fb_terms=2).expand("apple", r)
    assert out == ["apple", "apple pie"]


def test_no_hits_or_no_new_terms_return_only_the_query():
    r = bm25(TEXTS)
    prf = PseudoRelevanceFeedback()
    assert prf.expand("durian", r) == ["durian"]
    assert PseudoRelevanceFeedback(fb_terms=1).expand("apple", r) == ["apple"]


def test_expansion_retriever_fuses_with_rrf():
    r = ExpansionRetriever(bm25(TEXTS), PseudoRelevanceFeedback(fb_docs=2, fb_terms=3))
    hits = r.search("banana", k=5)
    queries = r.queries("banana")
    assert queries[0] == "banana" and len(queries) == 2
    for h in hits:
        expected = sum(1 / (60 + h.components[f"query_{q}"]["rank"])
                       for q in range(2) if f"query_{q}" in h.components)
        assert h.score == pytest.approx(expected, abs=1e-15)
        assert h.components["expansion"] == {"score": h.score, "rank": h.rank}
    assert hits[0].id == "0"
    assert "1" in [h.id for h in hits]  # reached through the feedback term "apple"


class Fixed(QueryExpander):
    def __init__(self, extra: str = "cherry", keep_original: bool = True):
        self.extra = extra
        self.keep_original = keep_original

    def expand(self, query, retriever, *, where=None, now=None):
        return [query, self.extra] if self.keep_original else [self.extra]


def test_custom_expander_and_fusion_weights():
    r = ExpansionRetriever(bm25(TEXTS), Fixed(), fusion=RRF(weights=[1.0, 0.0]))
    hits = r.search("banana", k=5)
    # a weight of 0 keeps the second query's hits, at fused score 0
    assert [(h.id, h.score) for h in hits] == [("0", pytest.approx(1 / 61)), ("1", 0.0)]
    r.set_params(fusion__weights=[0.0, 1.0])
    assert r.search("banana", k=5)[0].id == "1"
    bad = ExpansionRetriever(bm25(TEXTS), Fixed(keep_original=False))
    with pytest.raises(ConfigError, match="must return the original query first"):
        bad.search("banana")


def test_add_remove_reach_the_wrapped_retriever_and_params_nest():
    inner = bm25([])
    r = ExpansionRetriever(inner, PseudoRelevanceFeedback())
    r.add([rec(0, "apple"), rec(1, "pear")])
    r.remove(["1"])
    assert [x.id for x in inner.records()] == ["0"]
    assert r.get_params()["expander__fb_terms"] == 10
    assert r.search("apple", k=0) == [] and r.search("") == []
    with pytest.raises(ConfigError, match=r"^PseudoRelevanceFeedback parameter 'original_weight': expected a number "
                                          r">= 0 and <= 1, got 2$"):
        PseudoRelevanceFeedback(original_weight=2)


def test_unknown_terms_with_two_fusion_weights_give_no_hits():
    # no feedback hits -> the expander returns only the query; weights [0.7, 0.3] must not fail
    r = ExpansionRetriever(bm25(TEXTS), PseudoRelevanceFeedback(), fusion=RRF(weights=[0.7, 0.3]))
    assert r.search("zzz unknown") == []


def test_fewer_queries_than_weights_use_the_first_weights():
    # fb_terms=1 keeps only "apple": one query, so only weight 0.7 (query 0's) applies
    r = ExpansionRetriever(bm25(TEXTS), PseudoRelevanceFeedback(fb_terms=1),
                           fusion=RRF(weights=[0.7, 0.3]))
    assert r.queries("apple") == ["apple"]
    hits = r.search("apple", k=5)
    assert [(h.id, h.score) for h in hits] == [("0", pytest.approx(0.7 / 61, abs=1e-15)),
                                               ("1", pytest.approx(0.7 / 62, abs=1e-15))]


def test_more_queries_than_weights_is_a_clear_error_at_search_time():
    r = ExpansionRetriever(bm25(TEXTS), Fixed(), fusion=RRF(weights=[1.0]))  # accepted here
    with pytest.raises(ConfigError, match=r"^Fixed returned 2 queries but RRF weights=\[1\.0\] "
                                          r"has only 1 entries; give one weight per query"):
        r.search("banana")
