"""ConflictResolver marks superseded facts; ExcludeOutdated hides them from search."""

import pytest

from memlab.base import ConfigError
from memlab.records import MemoryRecord
from memlab.retrieval.bm25 import BM25Retriever
from memlab.retrieval.conflicts import (
    ConflictResolver,
    ExcludeOutdated,
    exclude_outdated,
    is_outdated,
)
from memlab.filters import filter_view, matches
from memlab.retrieval.hybrid import HybridRetriever


def fact(i, text, ts, **md):
    return MemoryRecord("user", text, id=i, timestamp=ts, metadata=md)


def test_same_subject_older_records_are_superseded_and_marked():
    old = fact("f1", "I live in Paris", 1.0, subject="home", user_id="u1")
    other_user = fact("f2", "I live in Rome", 2.0, subject="home", user_id="u2")
    other_subject = fact("f3", "I like tea", 2.0, subject="drink", user_id="u1")
    newer = fact("f4", "I live in Oslo", 9.0, subject="home", user_id="u1")
    new = fact("f5", "I live in Berlin", 5.0, subject="home", user_id="u1")
    out = ConflictResolver().resolve(new, [old, other_user, other_subject, newer, new])
    assert out == [old]
    assert old.metadata["status"] == "outdated" and old.metadata["superseded_by"] == "f5"
    assert new.metadata["supersedes"] == ["f1"]
    for untouched in (other_user, other_subject, newer):
        assert "status" not in untouched.metadata
    assert "status" not in new.metadata


def test_equal_timestamps_and_already_outdated_are_left_alone():
    same_time = fact("a", "x", 5.0, subject="s")
    already = fact("b", "y", 1.0, subject="s", status="outdated", superseded_by="z")
    new = fact("c", "z", 5.0, subject="s")
    assert ConflictResolver().resolve(new, [same_time, already]) == []
    assert already.metadata["superseded_by"] == "z" and "supersedes" not in new.metadata


def test_missing_user_id_on_both_sides_counts_as_same_user():
    old = fact("a", "x", 1.0, topic="t")
    new = fact("b", "y", 2.0, topic="t")
    assert ConflictResolver(subject_key="topic").resolve(new, [old]) == [old]
    assert ConflictResolver(subject_key="topic").find(fact("c", "z", 3.0, topic="t", user_id="u"), [new]) == []


def test_similarity_mode_when_there_is_no_subject():
    old = fact("a", "my favourite colour is blue", 1.0)
    unrelated = fact("b", "the train leaves at noon", 1.5)
    new = fact("c", "my favourite colour is green", 2.0)
    r = ConflictResolver(similarity_threshold=0.6)
    assert r.resolve(new, [old, unrelated]) == [old]
    assert new.metadata["supersedes"] == ["a"]
    assert ConflictResolver().resolve(fact("d", "my favourite colour is red", 3.0), [new]) == []
    with pytest.raises(ConfigError, match=r"^ConflictResolver parameter 'similarity_threshold': expected a number >= "
                                          r"-1 and <= 1 or None"):
        ConflictResolver(similarity_threshold=2.0)


def test_supersedes_accumulates_without_duplicates():
    new = fact("n", "x", 9.0, subject="s", supersedes=["old0"])
    ConflictResolver().resolve(new, [fact("a", "y", 1.0, subject="s")])
    assert new.metadata["supersedes"] == ["old0", "a"]


def test_a_ne_filter_would_hide_records_without_status():
    # why ExcludeOutdated exists: filters follow chromadb's missing-key semantics
    plain = fact("p", "x", 1.0)
    assert not matches(filter_view(plain), {"status": {"$ne": "outdated"}})
    assert not is_outdated(plain)


def test_exclude_outdated_wrapper_hides_outdated_and_refills():
    records = [fact(f"r{i}", "coffee order", float(i), subject="order") for i in range(6)]
    inner = HybridRetriever()
    r = ExcludeOutdated(inner)
    r.add(records)
    ConflictResolver().resolve(records[5], records[:5])  # marks r0..r4 after indexing
    hits = r.search("coffee", k=3)
    assert [h.id for h in hits] == ["r5"]
    assert hits[0].rank == 1 and hits[0].components["current"] == {"score": hits[0].score, "rank": 1}
    assert "hybrid" in hits[0].components
    assert len(r) == 6 and len(inner) == 6  # nothing deleted


def test_exclude_outdated_returns_k_current_hits_when_available():
    recs = [fact(f"r{i}", "tea", float(i)) for i in range(10)]
    for i in range(0, 10, 2):
        recs[i].metadata["status"] = "outdated"
    r = ExcludeOutdated(BM25Retriever())
    r.add(recs)
    assert [h.id for h in r.search("tea", k=3)] == ["r1", "r3", "r5"]
    assert [h.id for h in exclude_outdated(r.retriever.search("tea", k=4))] == ["r1", "r3"]
