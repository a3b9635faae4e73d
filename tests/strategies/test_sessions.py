"""Sessions as retrieval units (bm25_sessions) and as a prior on turns (bm25_session_prior)."""

from __future__ import annotations

import pytest

from memlab.eval.loaders.native import dataset_from_dict
from memlab.eval.replay import replay
from memlab.records import MemoryRecord
from memlab.retrieval import BM25Retriever
from memlab.strategies import SessionStrategy, get
from memlab.strategies.sessions import SessionPriorStrategy


def turns():
    rows = [("a", "user", "I adopted a cat called Miso."), ("a", "assistant", "Lovely name for a cat."),
            ("a", "user", "She likes tuna."), ("b", "user", "My car needs new tyres."),
            ("b", "user", "The garage says the cat flap is broken too.")]
    return [MemoryRecord(role=r, content=t, id=f"{s}:{i}", timestamp=86400.0 * (s == "b") + i,
                         metadata={"session_id": s}) for i, (s, r, t) in enumerate(rows)]


def test_a_session_unit_covers_its_turns_and_is_rebuilt_as_turns_arrive():
    s = SessionStrategy(date=False)
    for r in turns()[:4]:
        s.observe(r)
    hit = s.retrieve("cat", 1)[0]
    assert hit.id == "session:a" and hit.memory_record.source_ids == ["a:0", "a:1", "a:2"]
    assert hit.memory_record.content == "user: I adopted a cat called Miso.\nassistant: Lovely name for a cat.\nuser: She likes tuna."
    assert hit.memory_record.timestamp == 0.0
    s.observe(turns()[4])
    assert [h.memory_record.source_ids for h in s.retrieve("flap", 2)][0] == ["b:3", "b:4"]
    assert s.store_size() == 2 and len(s._chain) == 2
    dated = SessionStrategy()
    dated.observe(turns()[3])
    assert dated.retrieve("car", 1)[0].memory_record.content.splitlines()[0] == "Session of 2 January 1970"


def test_the_session_prior_formula():
    s = SessionPriorStrategy(retriever=BM25Retriever(), session_retriever=BM25Retriever(), session_weight=0.4,
                             date=False)
    for r in turns():
        s.observe(r)
    hits = s.retrieve("cat tuna", 5)
    t_index, s_index = BM25Retriever(), SessionStrategy(retriever=BM25Retriever(), date=False)
    t_index.add(turns())
    for r in turns():
        s_index.observe(r)
    t_scores = {h.id: h.score for h in t_index.search("cat tuna", 100)}
    s_scores = {h.memory_record.metadata["session_id"]: h.score for h in s_index.retrieve("cat tuna", 10)}
    lo, hi = min(t_scores.values()), max(t_scores.values())
    slo, shi = min(s_scores.values()), max(s_scores.values())
    expected = {i: 0.6 * (v - lo) / (hi - lo) + 0.4 * ((s_scores[i[0]] - slo) / (shi - slo) if shi > slo else 1.0)
                for i, v in t_scores.items()}
    assert {h.id: h.score for h in hits} == pytest.approx(expected)
    assert [h.id for h in hits] == sorted(expected, key=lambda i: -expected[i])
    assert hits[0].components["turn"]["score"] == t_scores[hits[0].id]


def test_registered_and_replayed():
    doc = {"name": "t", "dialogues": [{"id": "d", "sessions": [
        {"id": "s1", "timestamp": "2024-01-01T08:00:00Z", "turns": [
            {"id": "t1", "speaker": "u", "role": "user", "text": "I drink espresso every morning."},
            {"id": "t2", "speaker": "u", "role": "user", "text": "Espresso with oat milk."}]},
        {"id": "s2", "timestamp": "2024-02-01T08:00:00Z", "turns": [
            {"id": "t3", "speaker": "u", "role": "user", "text": "My cat is called Miso."}]}],
        "probes": [{"id": "p", "after_turn": None, "query": "What is the cat called?", "evidence": ["t3"]}]}]}
    ds = dataset_from_dict(doc, source="t.json", default_name="t")
    for name in ("bm25_sessions", "bm25_session_prior"):
        rows = replay(get(name), ds, ks=(1,), budgets=(64,))
        assert rows["recall@1"].iloc[0] == 1.0 and rows["session_hit_rate@1"].iloc[0] == 1.0
    units = replay(get("bm25_sessions"), ds, ks=(1,))
    assert units["retrieved_source_ids"].iloc[0][0] == ["t3"] and units["retrieved_sessions"].iloc[0][0] == ["s2"]
