"""Events in long-term memory, fact-augmented keys (``KeyedIndex``) and ``Retrieve(retriever=...)``."""

from __future__ import annotations

from memlab import strategies
from memlab.memories.layered import (
    Layers,
    LongTermMemory,
    Retrieve,
    RuleBasedExtractor,
    ShortTermMemory,
    Update,
    WorkingState,
)
from memlab.memories.layered.keyed_index import KeyedIndex
from memlab.records import MemoryRecord
from memlab.retrieval.bm25 import BM25Retriever
from memlab.tokens import ApproxTokenCounter

DAY = 86400.0


def _layers() -> Layers:
    return Layers(ShortTermMemory(token_counter=ApproxTokenCounter()), LongTermMemory(), RuleBasedExtractor())


def _turn(n: int, text: str) -> MemoryRecord:
    return MemoryRecord("user", text, id=f"D1:{n}", timestamp=n * DAY, metadata={"session_id": "s1"})


def test_update_keeps_each_turn_as_an_event_next_to_its_facts():
    layers, update = _layers(), Update(keep_events=True)
    written = update.observe(_turn(1, "I moved to Denver last week.\n"), layers)
    events = [r for r in written if r.metadata["memory_type"] == "event_summary"]
    facts = [r for r in written if r.metadata["memory_type"] != "event_summary"]
    assert [(e.content, e.source_ids, e.timestamp, e.metadata["source_session"]) for e in events] == \
        [("I moved to Denver last week.", ["D1:1"], DAY, "s1")]
    assert facts and all(f.source_ids == ["D1:1"] for f in facts)
    assert [r.metadata["memory_type"] for r in Update().observe(_turn(2, "I moved to Denver."), _layers())] \
        .count("event_summary") == 0  # off by default


def test_facts_expand_the_key_of_their_turn_and_are_not_units_themselves():
    ltm = LongTermMemory()
    ltm.add("Caroline went to a support group.", "event_summary", source_ids=["D1:1"], timestamp=DAY)
    ltm.add("Melanie paints sunsets.", "event_summary", source_ids=["D1:2"], timestamp=2 * DAY)
    ltm.add("Caroline attends an LGBTQ support group", "fact", source_ids=["D1:1"], timestamp=DAY)
    ltm.add("A chat about support and paintings", "event_summary", source_ids=["D1:1", "D1:2"], timestamp=2 * DAY)
    ltm.add("Bob likes chess", "fact", source_ids=["D9:9"], timestamp=3 * DAY)  # no event: its own unit
    index = KeyedIndex(BM25Retriever())
    index.sync(ltm)
    ids = [r.id for r in ltm.records()]
    assert index.retriever.records()[0].content == \
        "Caroline went to a support group.\nCaroline attends an LGBTQ support group"
    assert [index.key(i) for i in (ids[1], ids[3], ids[4])] == \
        ["Melanie paints sunsets.", "A chat about support and paintings", "Bob likes chess"]
    assert len(index.retriever) == 4 and ids[2] not in index.retriever
    hits = index.search(ltm, "LGBTQ", 3)
    assert [h.id for h in hits] == [ids[0]]  # found through the fact, returned as the turn
    assert hits[0].record.content == "Caroline went to a support group."


def test_the_index_follows_long_term_memory_when_a_fact_goes_away():
    ltm = LongTermMemory()
    event = ltm.add("I moved last week.", "event_summary", source_ids=["D1:1"], timestamp=DAY)
    fact = ltm.add("lives in Denver", "fact", source_ids=["D1:1"], timestamp=DAY)
    index = KeyedIndex(BM25Retriever())
    assert [h.id for h in index.search(ltm, "Denver", 2)] == [event.id]
    ltm.delete([fact.id])
    assert index.search(ltm, "Denver", 2) == []
    assert index.key(event.id) == "I moved last week." and len(index.retriever) == 1


def test_retrieve_with_a_retriever_searches_the_keyed_index():
    layers, update = _layers(), Update(keep_events=True)
    for n, text in enumerate(["My sister lives in Paris.", "I love green tea.", "We played chess."], 1):
        update.observe(_turn(n, text), layers)
    state = Retrieve(retriever=BM25Retriever(), k=2).run(WorkingState(question="Where does the sister live?"),
                                                          layers)
    assert [h.record.source_ids for h in state.retrieved] == [["D1:1"]]
    assert state.retrieved[0].record.content == "My sister lives in Paris."


def test_layered_builtin_recalls_turns_under_fact_augmented_keys():
    from memlab.testing import check_records

    s, plain = strategies.get("layered", embedder=None), strategies.get("bm25_plus")
    for r in check_records():
        s.observe(r)
        plain.observe(r)
    hits = s.retrieve("green tea", 3)
    # bm25_plus ranks D1:10 first; the fact extracted from D1:9 lifts that turn above it
    assert [h.id for h in plain.retrieve("green tea", 2)] == ["D1:10", "D1:9"]
    assert [h.record.source_ids for h in hits] == [["D1:9"], ["D1:10"], ["D1:11"]]
    assert hits[0].record.content == "Actually I switched from coffee to green tea last month."
    assert s.steps["retrieve"].index.key(hits[0].id) == \
        "Actually I switched from coffee to green tea last month.\nUser switched to green tea last month"


def test_version_moves_on_writes_only_and_the_index_reads_memories_again_only_then(tmp_path):
    path = str(tmp_path / "ltm.sqlite")
    ltm = LongTermMemory(path=path)
    a = ltm.add("Caroline went to a support group.", "event_summary", source_ids=["D1:1"], timestamp=DAY)
    v0 = ltm.version
    ltm.touch([a.id], now=2 * DAY)
    ltm.search("support group", 1)  # recalls (touch) are not writes of memories
    assert ltm.version == v0
    b = ltm.add("Melanie paints sunsets.", "event_summary", source_ids=["D1:2"], timestamp=2 * DAY)
    v1 = ltm.version
    assert v1 != v0
    ltm.delete([b.id])
    assert ltm.version not in (v0, v1)

    index = KeyedIndex(BM25Retriever())
    reads = []
    original = ltm.records
    ltm.records = lambda **kw: reads.append(1) or original(**kw)  # count full reads of the table
    assert [h.id for h in index.search(ltm, "support", 1)] == [a.id]
    assert [h.id for h in index.search(ltm, "support", 1)] == [a.id] and len(reads) == 1
    ltm.touch([a.id], now=3 * DAY)
    (hit,) = index.search(ltm, "support", 1)
    assert len(reads) == 1 and hit.record.metadata["access_count"] == 3  # returned units are read fresh
    other = LongTermMemory(path=path)  # another connection writes: the index sees it
    c = other.add("Caroline plans a support walk.", "event_summary", source_ids=["D1:3"], timestamp=3 * DAY)
    assert c.id in [h.id for h in index.search(ltm, "support walk", 2)] and len(reads) == 2
    other.close()


def test_an_index_kept_in_step_by_appends_equals_a_fresh_one():
    """``sync`` reads only the memories appended since the last sync when it can, and rebuilds
    when an append changes a unit already indexed: after every write, the index holds the
    same units, keys and order as an index built from scratch."""
    import random

    rng = random.Random(7)
    ltm = LongTermMemory()
    kept = KeyedIndex(BM25Retriever())
    appended = 0
    original = kept._append

    def counting(long_term):
        nonlocal appended
        done = original(long_term)
        appended += done
        return done

    kept._append = counting
    for step in range(120):
        turn = f"D1:{rng.randrange(40)}"
        kind = rng.random()
        if kind < 0.4:
            ltm.add(f"turn {step} about {rng.choice(['tea', 'chess', 'Lyon', 'cats'])}", "event_summary",
                    source_ids=[turn], timestamp=step * DAY, source_session=f"s{step // 10}")
        elif kind < 0.8:
            ltm.add_many([{"content": f"fact {step} on {turn}", "memory_type": "fact", "source_ids": [turn]},
                          {"content": f"fact {step}b", "memory_type": "fact", "source_ids": [f"D2:{step}"]}],
                         timestamp=step * DAY)
        elif kind < 0.9:
            ltm.add(f"summary {step}", "event_summary", source_ids=[turn, f"D1:{rng.randrange(40)}"],
                    timestamp=step * DAY)
        else:
            ids = [r.id for r in ltm.records()]
            if ids:
                ltm.delete([rng.choice(ids)])
        kept.sync(ltm)
        fresh = KeyedIndex(BM25Retriever())
        fresh.sync(ltm)
        assert [(r.id, r.content) for r in kept.retriever.records()] == \
            [(r.id, r.content) for r in fresh.retriever.records()], f"step {step}"
        assert kept.search(ltm, "tea chess", 5) == fresh.search(ltm, "tea chess", 5)
    assert appended > 20  # the incremental path was taken, not only rebuilds


def test_the_same_search_is_ranked_once_unless_searching_changes_state():
    from memlab.retrieval.decay_retriever import DecayRetriever

    ltm = LongTermMemory()
    ltm.add("I like green tea", "event_summary", source_ids=["D1:1"], timestamp=DAY)
    ltm.add("Chess on Sundays", "event_summary", source_ids=["D1:2"], timestamp=2 * DAY)
    for retriever, searches in ((BM25Retriever(), 1), (DecayRetriever(BM25Retriever(), reinforce="returned"), 2)):
        index, calls = KeyedIndex(retriever), []
        search = retriever.search
        retriever.search = lambda *a, **kw: calls.append(a) or search(*a, **kw)
        first = index.search(ltm, "tea", 2, now=3 * DAY)
        again = index.search(ltm, "tea", 2, now=3 * DAY)
        assert len(calls) == searches and (searches == 2 or again == first)
        index.search(ltm, "tea", 2, now=4 * DAY)  # another time: searched again
        assert len(calls) == searches + 1


def test_returned_memories_are_read_once_per_state_and_again_after_a_recall():
    ltm = LongTermMemory()
    a = ltm.add("I like green tea", "event_summary", source_ids=["D1:1"], timestamp=DAY)
    ltm.add("Green tea with Mel", "event_summary", source_ids=["D1:2"], timestamp=2 * DAY)
    index, reads = KeyedIndex(BM25Retriever()), []
    get_many = ltm.get_many
    ltm.get_many = lambda ids: reads.append(list(ids)) or get_many(ids)
    first = index.search(ltm, "green tea", 1)
    deeper = index.search(ltm, "green tea", 2)
    index.search(ltm, "green tea", 2)
    # nothing changed between the searches: each memory is read once
    assert deeper[:1] == first and reads == [[first[0].id], [deeper[1].id]]
    n = len(reads)
    assert ltm.recalls == 0
    ltm.touch([a.id], now=3 * DAY)  # a recall moves the access columns: read again
    assert ltm.recalls == 1
    (hit,) = [h for h in index.search(ltm, "green tea", 2) if h.id == a.id]
    assert len(reads) == n + 1 and hit.record.metadata["access_count"] == 1


def test_deeper_requests_within_a_hybrids_candidates_are_one_search_and_equal_fresh_ones():
    from memlab.retrieval.hybrid import HybridRetriever

    ltm = LongTermMemory()
    for n, text in enumerate(["green tea at noon", "chess with Mel", "tea and chess", "a walk", "tea again"], 1):
        ltm.add(text, "event_summary", source_ids=[f"D1:{n}"], timestamp=n * DAY)
    index, calls = KeyedIndex(HybridRetriever(candidates=4)), []
    search = index.retriever.search
    index.retriever.search = lambda *a, **kw: calls.append(a[1]) or search(*a, **kw)
    lists = {k: [(h.id, h.score, h.rank) for h in index.search(ltm, "tea chess", k)] for k in (1, 2, 4, 5)}
    assert calls == [4, 5]  # depths 1, 2 and 4 are answered from the depth-4 search
    for k, got in lists.items():
        fresh = KeyedIndex(HybridRetriever(candidates=4))
        assert got == [(h.id, h.score, h.rank) for h in fresh.search(ltm, "tea chess", k)], k
