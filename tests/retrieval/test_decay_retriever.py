"""DecayRetriever: re-scoring by retention, time resolution, reinforcement, garbage collection."""

import math

import pytest

from memlab.base import ConfigError
from memlab.decay import Ebbinghaus, ExponentialRecency, ManualClock, TimeWeighting
from memlab.records import MemoryRecord
from memlab.retrieval.bm25 import BM25Retriever
from memlab.retrieval.decay_retriever import DecayRetriever, scale_to_best
from memlab.retrieval.hybrid import HybridRetriever
from memlab.retrieval.vector import VectorRetriever
from memlab.storage.vector import NumpyVectorStore

DAY = 86400.0


def rec(i, text, ts):
    return MemoryRecord("user", text, id=str(i), timestamp=ts)


def two_days(**kw):
    d = DecayRetriever(BM25Retriever(), **kw)
    # "apple" in 2 of 5 records: positive idf, so relevance > 0
    d.add([rec(0, "apple pie", 0.0), rec(1, "apple pie", DAY), rec(2, "banana", DAY),
           rec(3, "cherry", DAY), rec(4, "date", DAY)])
    return d


def test_multiply_by_retention_hand_computed():
    d = two_days(reinforce="none", gc=False)
    relevance = d.retriever.search("apple")[0].score
    assert relevance > 0
    hits = d.search("apple", now=2 * DAY)
    assert [h.id for h in hits] == ["1", "0"]  # same relevance, the newer memory wins
    assert hits[0].score == pytest.approx(relevance * math.exp(-1.0), abs=1e-15)
    assert hits[1].score == pytest.approx(relevance * math.exp(-2.0), abs=1e-15)
    c = hits[1].components
    assert c["decay"]["retention"] == pytest.approx(math.exp(-2.0)) and c["decay"]["rank"] == 2
    assert c["decay"]["relevance"] == relevance and c["bm25"]["score"] == relevance


def test_add_combine_is_langchains_time_weighted_score():
    d = two_days(decay=TimeWeighting(), combine="add", reinforce="none")
    relevance = d.retriever.search("apple")[0].score
    hits = d.search("apple", now=DAY + 3600 * 5)
    assert hits[0].id == "1"
    assert hits[0].score == pytest.approx(0.99 ** 5 + relevance, abs=1e-12)
    assert hits[1].score == pytest.approx(0.99 ** 29 + relevance, abs=1e-12)


def test_weighted_combine_uses_minmax_relevance():
    d = DecayRetriever(BM25Retriever(), decay=ExponentialRecency(), combine="weighted",
                       weight=0.25, reinforce="none")
    d.add([rec(0, "kiwi kiwi", 0.0), rec(1, "kiwi melon grape", 3600.0)])
    rel = {h.id: h.score for h in d.retriever.search("kiwi")}
    hits = {h.id: h.score for h in d.search("kiwi", now=7200.0)}
    hi_id = max(rel, key=rel.get)
    lo_id = min(rel, key=rel.get)
    rec_w = {"0": 0.995 ** 2, "1": 0.995}
    assert hits[hi_id] == pytest.approx(0.75 * 1.0 + 0.25 * rec_w[hi_id], abs=1e-12)
    assert hits[lo_id] == pytest.approx(0.75 * 0.0 + 0.25 * rec_w[lo_id], abs=1e-12)


def test_prior_combine_measures_time_relative_to_the_dialogue_span():
    # span = now - oldest record = 4 days; t = age / span
    d = DecayRetriever(BM25Retriever(variant="lucene"), decay=Ebbinghaus(forget_threshold=0.0),
                       combine="prior", weight=0.2, reinforce="none")
    d.add([rec(0, "kiwi kiwi kiwi", 0.0), rec(1, "kiwi melon", 2 * DAY), rec(2, "kiwi", 3 * DAY),
           rec(3, "fig", 4 * DAY)])
    rel = {h.id: h.score for h in d.retriever.search("kiwi")}
    assert min(rel.values()) > 0  # lucene idf: relevance is divided by the best one
    hits = {h.id: h for h in d.search("kiwi", now=4 * DAY)}
    for i, age in (("0", 4.0), ("1", 2.0), ("2", 1.0)):
        expected = rel[i] / max(rel.values()) + 0.2 * math.exp(-age / 4.0)
        assert hits[i].score == pytest.approx(expected, abs=1e-12)
        assert hits[i].components["decay"]["retention"] == pytest.approx(math.exp(-age / 4.0), abs=1e-15)
    # the same dialogue stretched to 4 years gives the same scores: time is relative to the span
    y = DecayRetriever(BM25Retriever(variant="lucene"), decay=Ebbinghaus(forget_threshold=0.0),
                       combine="prior", weight=0.2, reinforce="none")
    y.add([rec(0, "kiwi kiwi kiwi", 0.0), rec(1, "kiwi melon", 2 * 365 * DAY), rec(2, "kiwi", 3 * 365 * DAY),
           rec(3, "fig", 4 * 365 * DAY)])
    assert {h.id: h.score for h in y.search("kiwi", now=4 * 365 * DAY)} == pytest.approx(
        {i: h.score for i, h in hits.items()}, abs=1e-12)


def test_prior_is_bounded_an_update_beats_what_it_replaces_but_not_a_much_better_match():
    d = DecayRetriever(BM25Retriever(variant="lucene"), decay=Ebbinghaus(forget_threshold=0.0),
                       combine="prior", weight=0.3, reinforce="none")
    d.add([rec(0, "my coffee is a latte", 0.0), rec(1, "my coffee is a mocha", 10 * DAY),
           rec(2, "the weather", 20 * DAY)])
    assert [h.id for h in d.search("coffee", now=20 * DAY)] == ["1", "0"]  # equal match: newer first
    e = DecayRetriever(BM25Retriever(variant="lucene"), decay=Ebbinghaus(forget_threshold=0.0),
                       combine="prior", weight=0.3, reinforce="none")
    e.add([rec(0, "latte coffee order", 0.0), rec(1, "coffee", 10 * DAY), rec(2, "tea", 20 * DAY)])
    assert [h.id for h in e.search("latte coffee order", now=20 * DAY)] == ["0", "1"]


def test_scale_to_best():
    assert scale_to_best([4.0, 2.0, 1.0]) == [1.0, 0.5, 0.25]
    assert scale_to_best([2.0, -2.0]) == [1.0, 0.0]
    assert scale_to_best([1.0, 0.0, -1.0]) == [1.0, 0.5, 0.0]
    assert scale_to_best([0.0, 0.0]) == [1.0, 1.0]


def test_now_resolution_explicit_clock_then_newest_timestamp():
    d = two_days(reinforce="none", gc=False)
    assert d.resolve_now() == DAY  # newest record seen
    assert d.resolve_now(5.0) == 5.0
    d.set_params(clock=ManualClock(start=3 * DAY))
    assert d.resolve_now() == 3 * DAY and d.resolve_now(1.0) == 1.0
    assert d.retention("0") == pytest.approx(math.exp(-3.0))


def test_returned_hits_are_reinforced():
    d = two_days(gc=False)
    d.search("apple", k=1, now=2 * DAY)
    assert d.memory_state("1") == {"strength": 2.0, "last_recall": 2 * DAY, "access_count": 1}
    assert d.memory_state("0") == {"strength": 1.0, "last_recall": 0.0, "access_count": 0}
    # strength 2 and recalled at 2 days: retention one day later is exp(-1/2)
    assert d.retention("1", now=3 * DAY) == pytest.approx(math.exp(-0.5))


def test_reinforce_none_and_explicit_reinforce_ids():
    d = two_days(reinforce="none", gc=False)
    d.search("apple", now=2 * DAY)
    assert d.memory_state("1")["access_count"] == 0
    d.reinforce_ids(["0", "unknown"], now=DAY / 2)
    assert d.memory_state("0") == {"strength": 2.0, "last_recall": DAY / 2, "access_count": 1}
    d.reinforce_ids(["0"], now=0.0)  # last_recall never moves back
    assert d.memory_state("0")["last_recall"] == DAY / 2


def test_collect_garbage_deletes_from_every_store():
    d = DecayRetriever(HybridRetriever([BM25Retriever(), VectorRetriever(vector_store=NumpyVectorStore())]),
                       reinforce="none")
    d.add([rec(0, "old fact", 0.0), rec(1, "new fact", 2.5 * DAY)])
    # at 3 days: record 0 has exp(-3) < 0.05, record 1 exp(-0.5)
    assert d.collect_garbage(now=3 * DAY) == ["0"]
    bm25, vector = d.retriever.retrievers
    assert "0" not in d and "0" not in d.retriever and "0" not in bm25 and "0" not in vector
    assert vector.vector_store.ids() == ["1"] and bm25.scores("old") == {}
    assert [h.id for h in d.search("fact", now=3 * DAY)] == ["1"]


def test_gc_runs_before_search_when_enabled():
    d = two_days(reinforce="none")
    # at 3.5 days record 0 has exp(-3.5) < 0.05; records 1 and 2 have exp(-2.5) > 0.05
    assert [h.id for h in d.search("apple", now=3.5 * DAY)] == ["1"]
    assert [r.id for r in d.records()] == ["1", "2", "3", "4"] and "0" not in d.retriever
    d2 = two_days(reinforce="none", gc=False)
    assert [h.id for h in d2.search("apple", now=3.5 * DAY)] == ["1", "0"]


def test_stochastic_gc_is_deterministic_and_reset_reseeds():
    def run():
        d = DecayRetriever(BM25Retriever(), decay=Ebbinghaus(stochastic=True, seed=3),
                           reinforce="none", gc=False)
        d.add([rec(i, f"w{i}", 0.0) for i in range(30)])
        return d, d.collect_garbage(now=DAY * 0.7)
    (d1, a), (_, b) = run(), run()
    assert a == b and 0 < len(a) < 30
    d1.reset()
    d1.add([rec(i, f"w{i}", 0.0) for i in range(30)])
    assert d1.collect_garbage(now=DAY * 0.7) == a


def test_params_nest_and_validate():
    d = DecayRetriever(BM25Retriever(), decay=Ebbinghaus())
    params = d.get_params()
    assert params["decay__strength_growth"] == 1.0 and params["retriever__k1"] == 1.5
    d.set_params(decay__strength_growth=2.0)
    assert d.decay.strength_growth == 2.0
    with pytest.raises(ConfigError, match=r"^DecayRetriever parameter 'combine': expected one of 'multiply', "
                                          r"'add', 'weighted', 'prior', got 'max'$"):
        DecayRetriever(BM25Retriever(), combine="max")
    with pytest.raises(ConfigError, match=r"^DecayRetriever parameter 'reinforce': expected one of 'returned', "
                                          r"'none', got 'all'$"):
        DecayRetriever(BM25Retriever(), reinforce="all")
    c = d.clone()
    assert len(c) == 0 and c.decay.strength_growth == 2.0


def test_empty_and_k_zero():
    d = DecayRetriever(BM25Retriever())
    assert d.search("x") == []
    d.add([rec(0, "x", 0.0)])
    assert d.search("x", k=0) == []


def test_negative_relevance_times_retention_favours_older_memories_documented():
    # okapi on a tiny corpus: "apple" in 2 of 3 records, negative average idf -> negative scores
    d = DecayRetriever(BM25Retriever(), reinforce="none", gc=False)
    d.add([rec(0, "apple pie", 0.0), rec(1, "apple pie", DAY), rec(2, "banana", DAY)])
    assert d.retriever.search("apple")[0].score < 0
    assert [h.id for h in d.search("apple", now=2 * DAY)] == ["0", "1"]
    w = DecayRetriever(BM25Retriever(), combine="weighted", reinforce="none", gc=False)
    w.add([rec(0, "apple pie", 0.0), rec(1, "apple pie", DAY), rec(2, "banana", DAY)])
    assert [h.id for h in w.search("apple", now=2 * DAY)] == ["1", "0"]


def test_garbage_collection_skips_its_scan_when_the_model_cannot_forget():
    from memlab.decay import DecayModel, Ebbinghaus, ExponentialRecency, TimeWeighting

    class Counting(Ebbinghaus):
        calls = 0

        def should_forget(self, t, strength):
            Counting.calls += 1
            return super().should_forget(t, strength)

    class Custom(DecayModel):
        def retention(self, t, strength=1.0):
            return 1.0

        def should_forget(self, t, strength):
            return t > 1.0

    assert [Ebbinghaus(forget_threshold=0.0).forgets(), Ebbinghaus().forgets(),
            Ebbinghaus(forget_threshold=0.0, stochastic=True).forgets(), ExponentialRecency().forgets(),
            TimeWeighting().forgets(), Custom().forgets()] == [False, True, True, False, False, True]
    from memlab.records import MemoryRecord
    from memlab.retrieval import BM25Retriever, DecayRetriever

    records = [MemoryRecord("user", f"note {i}", id=f"r{i}", timestamp=0.0) for i in range(5)]
    for threshold, scans, kept in [(0.0, 0, 5), (0.5, 5, 0)]:
        Counting.calls = 0
        retriever = DecayRetriever(BM25Retriever(), Counting(time_unit=1.0, forget_threshold=threshold))
        retriever.add(records)
        assert retriever.collect_garbage(now=10.0) == ([] if kept else [r.id for r in records])
        assert Counting.calls == scans and len(retriever) == kept
