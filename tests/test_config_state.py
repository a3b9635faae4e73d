"""Configuration apart from state: clones never share memory, reset and strategies never
delete data memlab did not write, stores handed in are used as given."""

from __future__ import annotations

import sqlite3

import numpy as np
import pytest

from memlab.memories.layered import LayeredMemory, LongTermMemory
from memlab.records import MemoryRecord, Role
from memlab.retrieval import BM25Retriever
from memlab.embeddings.hashing import HashingEmbedder
from memlab.storage.vector import NumpyVectorStore
from memlab.strategies import LongtermStrategy, RetrievalStrategy


def turn(i: str, text: str, t: float = 0.0) -> MemoryRecord:
    return MemoryRecord(role=Role.USER, content=text, id=i, timestamp=t)


def namespaces(path) -> dict[str, int]:
    with sqlite3.connect(path) as db:
        return dict(db.execute("SELECT namespace, COUNT(*) FROM memories GROUP BY namespace ORDER BY namespace"))


def test_a_clone_of_a_file_memory_recalls_nothing_of_the_original(tmp_path):
    path = str(tmp_path / "ltm.sqlite3")
    original = LongTermMemory(path=path)
    original.add("User lives in Paris", timestamp=1.0)
    first, second = original.clone(), original.clone()
    assert (first.namespace, second.namespace) == ("clone-1", "clone-2")
    assert len(first) == 0 and first.search("Paris") == []
    first.add("User likes tea", timestamp=2.0)
    assert [h.record.content for h in original.search("Paris tea")] == ["User lives in Paris"]
    assert namespaces(path) == {"": 1, "clone-1": 1}
    # cloning again under a name already used empties it: a clone starts fresh
    assert len(original.clone(scope="clone-1")) == 0
    assert [r.content for r in LongTermMemory(path=path).records()] == ["User lives in Paris"]


def test_namespaces_nest_and_an_in_memory_clone_keeps_its_configuration(tmp_path):
    path = str(tmp_path / "ltm.sqlite3")
    assert LongTermMemory(path=path, namespace="run").clone(scope="d1").namespace == "run/d1"
    memory = LongTermMemory()
    memory.add("User lives in Paris", timestamp=1.0)
    clone = memory.clone()
    assert clone.get_params(deep=False).keys() == memory.get_params(deep=False).keys()
    assert clone.namespace == "" and len(clone) == 0


def test_layered_reset_keeps_the_memories_it_did_not_write(tmp_path):
    path = str(tmp_path / "user.sqlite3")
    seeded = LongTermMemory(path=path)
    seeded.add("User is allergic to peanuts", timestamp=1.0)
    layered = LayeredMemory(long_term=seeded)
    layered.observe(turn("t1", "I live in Paris.", 10.0))
    assert len(seeded) == 2
    layered.reset()
    assert [r.content for r in seeded.records()] == ["User is allergic to peanuts"]
    assert [r.content for r in LongTermMemory(path=path).records()] == ["User is allergic to peanuts"]


def test_layered_reset_clears_a_memory_it_made_itself():
    layered = LayeredMemory()
    layered.observe(turn("t1", "I live in Paris.", 10.0))
    assert layered.store_size() > 0
    layered.reset()
    assert layered.store_size() == 0


def test_a_retrieval_strategy_never_wipes_the_retriever_handed_in():
    mine = BM25Retriever()
    mine.add([turn("kb-1", "the office is in Lyon")])
    strategy = RetrievalStrategy(retriever=mine)
    assert [r.id for r in mine.records()] == ["kb-1"]
    strategy.observe(turn("t1", "I moved to Lyon last year"))
    assert sorted(h.id for h in strategy.retrieve("Lyon", 5)) == ["kb-1", "t1"]
    strategy.reset()
    assert [r.id for r in mine.records()] == ["kb-1"]


def test_a_longterm_strategy_never_wipes_the_vector_store_handed_in():
    store = NumpyVectorStore()
    store.add(["kb-1"], HashingEmbedder().embed(["the office is in Lyon"]))
    strategy = LongtermStrategy(vector_store=store)
    assert store.ids() == ["kb-1"]
    strategy.observe(turn("t1", "I moved to Lyon last year"))
    assert sorted(store.ids()) == ["kb-1", "t1"]
    strategy.reset()
    assert store.ids() == ["kb-1"]


def test_a_strategy_clone_shares_no_memory_through_a_file(tmp_path):
    path = str(tmp_path / "ltm.sqlite3")
    strategy = LayeredMemory(long_term=LongTermMemory(path=path))
    strategy.observe(turn("t1", "I live in Paris.", 10.0))
    clone = strategy.clone()
    assert clone.retrieve("where does the user live", 5) == []
    assert [h.record.content for h in strategy.retrieve("where does the user live", 5)] == ["User lives in Paris"]


def test_a_chroma_clone_on_disk_gets_its_own_collection(tmp_path):
    pytest.importorskip("chromadb")
    from memlab.storage.chroma import ChromaVectorStore

    store = ChromaVectorStore(path=str(tmp_path / "chroma"), collection="notes")
    store.add(["a"], np.ones((1, 4), dtype=np.float32) / 2.0)
    clone = store.clone(scope="dialogue 7")
    assert clone.collection == "notes.dialogue_7" and clone.ids() == []
    assert store.ids() == ["a"]
    clone.close()
    store.close()



def test_a_replay_over_a_file_writes_each_dialogue_to_its_own_namespace(tmp_path):
    from memlab.eval.loaders.native import dataset_from_dict
    from memlab.eval.replay import replay

    doc = {"name": "two", "dialogues": [
        {"id": d, "sessions": [{"id": "s1", "timestamp": "2024-01-01T08:00:00Z", "turns": [
            {"id": f"{d}-t1", "speaker": "Maya", "role": "user", "text": text}]}],
         "probes": [{"id": f"{d}-p1", "query": "where does Maya live?", "evidence": [f"{d}-t1"]}]}
        for d, text in (("d1", "I live in Paris."), ("d2", "I live in Lyon."))]}
    path = str(tmp_path / "ltm.sqlite3")
    strategy = LayeredMemory(long_term=LongTermMemory(path=path))
    frame = replay(strategy, dataset_from_dict(doc, source="two.json"), ks=(1,))
    assert frame["recall@1"].tolist() == [1.0, 1.0]
    assert namespaces(path) == {"d1": 1, "d2": 1}
    assert [r.content for r in LongTermMemory(path=path, namespace="d2").records()] == ["Maya lives in Lyon"]
    assert len(LongTermMemory(path=path)) == 0


def test_the_long_term_retriever_view_is_honest_about_its_records():
    from memlab.memories.layered import LongTermRetriever

    memory = LongTermMemory()
    tea = memory.add("User drinks tea", subject="drink", timestamp=1.0)
    coffee = memory.add("User drinks coffee", subject="drink", timestamp=2.0)  # supersedes tea
    view = LongTermRetriever(memory)
    assert [r.id for r in view.records()] == [coffee.id] and len(view) == 1
    assert coffee.id in view and tea.id not in view
    assert view.get_record(coffee.id).content == "User drinks coffee"
    with pytest.raises(KeyError, match="no record with id"):
        view.get_record(tea.id)
    assert [h.id for h in view.search("drinks", 5)] == [coffee.id]
