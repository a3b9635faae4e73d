"""LongTermMemory: SQLite + vector store, kept consistent; decay, conflicts, filters, repair."""

from __future__ import annotations

import math
import pickle
import sqlite3

import numpy as np
import pytest

from memlab.base import ConfigError, MemlabError
from memlab.decay import Ebbinghaus, ManualClock
from memlab.embeddings.hashing import HashingEmbedder
from memlab.memories.layered import ExtractedMemory, LongTermMemory
from memlab.storage.vector import NumpyVectorStore

DAY = 86400.0


def cos(a: str, b: str, embedder=None) -> float:
    v = (embedder or HashingEmbedder()).embed([a, b])
    return float(np.dot(v[0], v[1]))


def test_table_columns_and_validation():
    ltm = LongTermMemory()
    cols = [r[1] for r in ltm.db.execute("PRAGMA table_info(memories)")]
    assert cols == ["seq", "memory_id", "user_id", "content", "memory_type", "subject", "source_session",
                    "timestamp", "access_count", "last_accessed", "strength", "status", "supersedes",
                    "superseded_by", "source_ids", "namespace"]
    with pytest.raises(MemlabError, match="memory_type must be one of fact, preference, event_summary, got 'note'"):
        ltm.add("x", "note", timestamp=0)
    with pytest.raises(MemlabError, match="content must be a non-empty string"):
        ltm.add("  ", timestamp=0)
    with pytest.raises(ConfigError, match=r"^LongTermMemory parameter 'decay': expected a DecayModel or None, got "
                                          r"'ebbinghaus'$"):
        LongTermMemory(decay="ebbinghaus")
    assert len(ltm) == 0 and ltm.store.ids() == []


def test_search_scores_are_cosines_ties_by_insertion():
    ltm = LongTermMemory()
    a = ltm.add("Ann likes green tea", "preference", user_id="a", timestamp=0, source_ids=["D1:1"])
    b = ltm.add("Ann likes green tea", "preference", user_id="b", timestamp=0, source_ids=["D1:2"])
    c = ltm.add("Bob lives in Rome", user_id="a", timestamp=0, source_ids=["D1:3"])
    hits = ltm.search("what tea does Ann like", 3, now=0)
    assert [h.id for h in hits] == [a.id, b.id]  # c shares no word: cosine 0, not returned
    assert cos("what tea does Ann like", c.content) == 0.0
    expected = cos("what tea does Ann like", "Ann likes green tea")
    assert hits[0].score == pytest.approx(expected, abs=1e-6) and hits[1].score == hits[0].score
    assert [h.rank for h in hits] == [1, 2]
    assert hits[0].memory_record.metadata["source_ids"] == ["D1:1"]
    assert hits[0].components["long_term"] == {"score": hits[0].score, "rank": 1, "retention": 1.0}
    assert ltm.search("tea", 0) == [] and ltm.search("   ", 3) == []


def test_where_filters_push_down_or_run_on_rows():
    ltm = LongTermMemory()
    ltm.add("Ann likes tea", "preference", user_id="a", source_session="S1", timestamp=10)
    ltm.add("Ann lives in Paris", "fact", user_id="a", source_session="S2", timestamp=20)
    ltm.add("Bob likes tea", "preference", user_id="b", source_session="S1", timestamp=30)
    q = "Ann Bob tea Paris"

    def contents(where):
        return sorted(h.record.content for h in ltm.search(q, 5, where=where, reinforce="none"))

    assert contents({"user_id": "a"}) == ["Ann likes tea", "Ann lives in Paris"]
    assert contents({"memory_type": "preference"}) == ["Ann likes tea", "Bob likes tea"]
    assert contents({"timestamp": {"$gte": 15, "$lte": 25}}) == ["Ann lives in Paris"]
    assert contents({"$and": [{"source_session": "S1"}, {"user_id": {"$ne": "a"}}]}) == ["Bob likes tea"]
    assert contents({"access_count": {"$gte": 0}, "user_id": "b"}) == ["Bob likes tea"]  # row-side filter
    with pytest.raises(ConfigError, match="unknown long-term memory filter key 'userid'. Did you mean 'user_id'"):
        ltm.search(q, 5, where={"userid": "a"})


def test_access_statistics_and_decay_scoring_exact():
    ltm = LongTermMemory(decay=Ebbinghaus())  # R = exp(-t / S), t in days, S starts at 1, +1 per recall
    old = ltm.add("Ann likes green tea", "preference", user_id="a", timestamp=0)
    new = ltm.add("Ann likes green tea", "preference", user_id="b", timestamp=DAY)
    sim = cos("green tea", "Ann likes green tea")
    hits = ltm.search("green tea", 2, now=2 * DAY)
    assert [h.id for h in hits] == [new.id, old.id]
    assert hits[0].score == pytest.approx(sim * math.exp(-1), rel=1e-6)
    assert hits[1].score == pytest.approx(sim * math.exp(-2), rel=1e-6)
    assert hits[1].components["long_term"]["retention"] == pytest.approx(math.exp(-2))
    after = ltm.get(old.id).metadata
    assert (after["access_count"], after["last_accessed"], after["strength"]) == (1, 2 * DAY, 2.0)
    # a recall never moves last_accessed back; reinforce="none" changes nothing
    ltm.touch([old.id], now=0)
    assert ltm.get(old.id).metadata["last_accessed"] == 2 * DAY and ltm.get(old.id).metadata["strength"] == 3.0
    ltm.search("green tea", 2, now=5 * DAY, reinforce="none")
    assert ltm.get(old.id).metadata["access_count"] == 2
    assert ltm.retention(old.id, now=5 * DAY) == pytest.approx(math.exp(-3 / 3))


def test_conflicts_mark_older_outdated_without_deleting():
    ltm = LongTermMemory()
    coffee = ltm.add("Ann loves coffee", "preference", subject="beverage_preference", timestamp=0)
    paris = ltm.add("Ann lives in Paris", subject="location", timestamp=1)
    tea = ltm.add("Ann switched to tea", "preference", subject="beverage_preference", timestamp=2)
    same_time = ltm.add("Ann lives in Lyon", subject="location", timestamp=1)  # not strictly newer
    assert ltm.get(coffee.id).metadata["status"] == "outdated"
    assert ltm.get(coffee.id).metadata["superseded_by"] == tea.id
    assert tea.metadata["supersedes"] == [coffee.id]
    assert ltm.get(paris.id).metadata["status"] == "active" and same_time.metadata["supersedes"] == []
    assert len(ltm) == 4 and ltm.count("outdated") == 1 and len(ltm.store.ids()) == 4
    ids = [h.id for h in ltm.search("Ann coffee tea", 5, reinforce="none")]
    assert coffee.id not in ids and tea.id in ids
    assert coffee.id in [h.id for h in ltm.search("Ann coffee tea", 5, include_outdated=True, reinforce="none")]
    # other users are never superseded
    other = ltm.add("Bo loves coffee", "preference", user_id="bo", subject="beverage_preference", timestamp=3)
    assert ltm.get(tea.id).metadata["status"] == "active" and other.metadata["supersedes"] == []


def test_duplicates_merge_and_reinforce():
    ltm = LongTermMemory(decay=Ebbinghaus())
    first = ltm.add("Ann lives in Paris", subject="location", timestamp=0, source_ids=["D1:1"])
    again = ltm.add("Ann lives in Paris", subject="location", timestamp=DAY, source_ids=["D2:4", "D1:1"])
    assert again.id == first.id and len(ltm) == 1 and len(ltm.store.ids()) == 1
    assert again.metadata["source_ids"] == ["D1:1", "D2:4"]
    assert (again.metadata["strength"], again.metadata["last_accessed"]) == (2.0, DAY)


def test_collect_garbage_deletes_from_both_stores():
    # forgotten when exp(-t / S) < 0.05, i.e. t > S * ln 20 = 2.996 S days
    ltm = LongTermMemory(decay=Ebbinghaus(forget_threshold=0.05))
    weak = ltm.add("weak memory one", timestamp=0)
    strong = ltm.add("strong memory two", timestamp=0)
    ltm.touch([strong.id], now=0)  # S = 2
    assert ltm.collect_garbage(now=2.99 * DAY) == []
    assert ltm.collect_garbage(now=3.0 * DAY) == [weak.id]
    assert [r.id for r in ltm.records()] == [strong.id] and ltm.store.ids() == [strong.id]
    assert LongTermMemory().collect_garbage(now=1e12) == []  # no decay model: nothing is forgotten


class FailingStore(NumpyVectorStore):
    """A vector store whose writes fail (a full disk, a dead server)."""

    failing = True

    def add(self, ids, vectors, metadatas=None, documents=None):
        if self.failing:
            raise OSError("vector store is down")
        super().add(ids, vectors, metadatas, documents)


def test_add_writes_both_stores_or_neither():
    ltm = LongTermMemory(vector_store=FailingStore())
    with pytest.raises(OSError, match="vector store is down"):
        ltm.add_many([ExtractedMemory("Ann lives in Paris", "fact", "location", ["t1"])], timestamp=0)
    assert len(ltm) == 0 and ltm.store.ids() == []
    store = FailingStore()
    store.failing = False
    ok = LongTermMemory(vector_store=store)
    old = ok.add("Ann lives in Paris", subject="location", timestamp=0)
    store.failing = True  # the store fails after the conflict was marked in the transaction
    with pytest.raises(OSError):
        ok.add("Ann lives in Rome", subject="location", timestamp=1)
    assert len(ok) == 1 and ok.get(old.id).metadata["status"] == "active"
    # an invalid item anywhere in a batch stops the whole batch before anything is written
    fresh = LongTermMemory()
    with pytest.raises(MemlabError, match="memory_type"):
        fresh.add_many([{"content": "a", "memory_type": "fact"}, {"content": "b", "memory_type": "bad"}])
    assert len(fresh) == 0


def test_reopen_file_with_memory_store_reembeds_and_repairs(tmp_path):
    path = str(tmp_path / "ltm.sqlite")
    ltm = LongTermMemory(path=path)
    ids = [ltm.add(t, timestamp=i).id for i, t in enumerate(["Ann lives in Paris", "Ann loves tea"])]
    before = [(h.id, h.score) for h in ltm.search("Ann tea", 2, reinforce="none")]
    assert not ltm.last_repair
    ltm.close()
    again = LongTermMemory(path=path)  # a fresh NumpyVectorStore: every row lacks its vector
    assert again.last_repair.reembedded == ids and again.last_repair.deleted_vectors == []
    assert [(h.id, h.score) for h in again.search("Ann tea", 2, reinforce="none")] == before
    again.store.add(["ghost"], HashingEmbedder().embed(["boo"]))
    report = again.check_and_repair()
    assert report.deleted_vectors == ["ghost"] and "1 vector(s) without a row deleted" in str(report)
    again.close()
    small = LongTermMemory(path=path, embedder=HashingEmbedder(n_features=64))
    assert small.last_repair.embedder_changed and small.last_repair.reembedded == ids
    assert small.store.get([ids[0]])[0]["vector"].shape == (64,)


def test_persistent_chroma_store_reopens_consistent(tmp_path):
    pytest.importorskip("chromadb")
    from memlab.storage.chroma import ChromaVectorStore

    path, chroma_dir = str(tmp_path / "ltm.sqlite"), str(tmp_path / "chroma")
    ltm = LongTermMemory(path=path, vector_store=ChromaVectorStore(path=chroma_dir, collection="ltm"))
    a = ltm.add("Ann lives in Paris", user_id="ann", subject="location", timestamp=0, source_ids=["D1:1"])
    ltm.add("Bob lives in Rome", user_id="bob", subject="location", timestamp=1)
    ltm.add("Ann lives in Lyon", user_id="ann", subject="location", timestamp=2)
    before = [(h.id, round(h.score, 6)) for h in ltm.search("where does Ann live", 3, reinforce="none")]
    filtered = [h.record.content for h in ltm.search("lives", 3, where={"user_id": "ann"}, reinforce="none")]
    assert filtered == ["Ann lives in Lyon"]  # Paris is outdated
    ltm.close()
    reopened = LongTermMemory(path=path, vector_store=ChromaVectorStore(path=chroma_dir, collection="ltm"))
    assert not reopened.last_repair
    assert [(h.id, round(h.score, 6)) for h in reopened.search("where does Ann live", 3, reinforce="none")] == before
    assert reopened.get(a.id).metadata["status"] == "outdated"
    reopened.close()
    with sqlite3.connect(path) as raw:  # a row lost behind memlab's back
        raw.execute("DELETE FROM memories WHERE memory_id = ?", (a.id,))
    repaired = LongTermMemory(path=path, vector_store=ChromaVectorStore(path=chroma_dir, collection="ltm"))
    assert repaired.last_repair.deleted_vectors == [a.id] and len(repaired.store.ids()) == 2
    repaired.close()


def test_clock_pickle_clear_and_delete():
    clock = ManualClock(start=500.0)
    ltm = LongTermMemory(clock=clock)
    m = ltm.add("Ann lives in Paris")
    assert m.timestamp == 500.0 and ltm.resolve_now() == 500.0
    clock.advance(100)
    ltm.search("Paris", 1)
    assert ltm.get(m.id).metadata["last_accessed"] == 600.0
    copy = pickle.loads(pickle.dumps(ltm))
    assert [h.id for h in copy.search("Paris", 1, reinforce="none")] == [m.id]
    copy.add("Ann likes tea")
    assert len(copy) == 2 and len(ltm) == 1  # the copy has its own table
    assert ltm.delete([m.id, "nope"]) == [m.id] and len(ltm) == 0 and ltm.store.ids() == []
    ltm.add("a b", timestamp=0)
    ltm.clear()
    assert len(ltm) == 0 and ltm.store.ids() == []
    assert ltm.add("a b", timestamp=0).id == LongTermMemory().add("a b", timestamp=0).id  # ids restart


def test_reinforce_is_one_of_the_shared_modes():
    ltm = LongTermMemory()
    ltm.add("User lives in Paris", timestamp=1.0)
    with pytest.raises(ConfigError, match=r"parameter 'reinforce': expected one of 'returned', 'none', got False"):
        ltm.search("Paris", 1, reinforce=False)
    ltm.search("Paris", 1, now=2.0, reinforce="none")
    assert ltm.get(ltm.records()[0].id).metadata["access_count"] == 0
    ltm.search("Paris", 1, now=2.0)
    assert ltm.get(ltm.records()[0].id).metadata["access_count"] == 1


class EagerStore(NumpyVectorStore):
    """The default store under another type: vectors are written inside each transaction."""


def test_deferred_vectors_equal_vectors_written_in_the_transaction():
    # the defaults defer the vectors of new rows until the vector index is read; every
    # answer (records, searches, the store's ids and vectors) equals the eager path's
    def run(ltm):
        out = []
        first = ltm.add_many([ExtractedMemory("Ann lives in Paris", "fact", "location", ["t1"]),
                              ExtractedMemory("Ann loves coffee", "preference", "drink", ["t1"])], timestamp=0)
        ltm.add("Ann lives in Paris", subject="location", timestamp=1, source_ids=["t2"])  # a duplicate
        ltm.add("Ann moved to Rome", subject="location", timestamp=2, source_ids=["t3"])  # supersedes
        ltm.add("Bo plays chess on Sundays", user_id="bo", timestamp=3, memory_id="m-bo")
        ltm.add("Bo plays chess at the club", user_id="bo", timestamp=3.5)
        ltm.delete([first[1].id])
        ltm.consolidate([r.id for r in ltm.records() if r.agent_id == "bo"], "Bo plays chess", timestamp=4)
        out.append([(h.id, h.score, h.record.metadata) for h in ltm.search("Ann Rome Paris chess", 10)])
        ltm.add("Cy sings", timestamp=5)
        out.append([(r.id, r.metadata) for r in ltm.add_many([{"content": "Dee reads", "timestamp": 6}])])
        out.append([(h.id, h.score) for h in ltm.search("Cy sings Dee reads", 10, include_outdated=True)])
        out.append((ltm.store.ids(), [e["vector"].tolist() for e in ltm.store.get(ltm.store.ids())]))
        out.append([(r.id, r.metadata) for r in ltm.records()])
        ltm.clear()
        out.append((len(ltm), ltm.store.ids()))
        return out

    deferred, eager = LongTermMemory(), LongTermMemory(vector_store=EagerStore())
    assert deferred._deferred and not eager._deferred
    deferred.add("Ann lives in Paris", timestamp=0)
    assert len(deferred._vectors) == 0 and deferred._pending  # not embedded yet
    assert deferred.store.ids() == [deferred.records()[0].id] and not deferred._pending
    deferred.clear()
    assert run(deferred) == run(eager)
    # a pending vector travels with a pickled memory and is written on load
    ltm = LongTermMemory()
    memory = ltm.add("Ann lives in Paris", timestamp=0)
    again = pickle.loads(pickle.dumps(ltm))
    assert again.store.ids() == [memory.id] and [h.id for h in again.search("Paris", 1)] == [memory.id]
