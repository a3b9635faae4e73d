"""ContextualRetriever: index texts with neighbours and date, causal updates, returned unit."""

import pytest

from memlab.base import ConfigError
from memlab.records import MemoryRecord
from memlab.retrieval import BM25Retriever, ContextualRetriever, Tokenizer, format_date
from memlab.retrieval.vector import VectorRetriever

T0 = 1_683_504_000.0  # 8 May 2023 00:00 UTC
TEXTS = ["did you go hiking", "yes last weekend", "where did you go", "the Alps with my sister", "nice pictures"]


def turns(sessions=("S1", "S1", "S1", "S2", "S2")):
    return [MemoryRecord("user" if i % 2 == 0 else "assistant", t, id=f"D{i}", timestamp=T0 + 86400.0 * i,
                         metadata={"session_id": s}) for i, (t, s) in enumerate(zip(TEXTS, sessions))]


def test_format_date():
    assert format_date(T0) == "8 May 2023"
    assert format_date(T0 + 86400.0 * 30) == "7 June 2023"


def test_index_texts_hold_own_text_twice_neighbours_once_and_date():
    r = ContextualRetriever(BM25Retriever())
    r.add(turns())
    assert r.index_text("D0") == "did you go hiking\ndid you go hiking\nyes last weekend\n8 May 2023"
    assert r.index_text("D1") == ("yes last weekend\nyes last weekend\ndid you go hiking\nwhere did you go\n"
                                  "9 May 2023")
    # D2 ends session S1: D3 (session S2) is not its neighbour
    assert r.index_text("D2") == "where did you go\nwhere did you go\nyes last weekend\n10 May 2023"
    assert r.index_text("D3") == ("the Alps with my sister\nthe Alps with my sister\nnice pictures\n"
                                  "11 May 2023")


def test_weights_and_window_are_configurable():
    r = ContextualRetriever(BM25Retriever(), before=2, after=0, own_weight=1, neighbour_weight=2, date=False,
                            same_session=False)
    r.add(turns())
    assert r.index_text("D3") == ("the Alps with my sister\nyes last weekend\nyes last weekend\n"
                                  "where did you go\nwhere did you go")


def test_neighbour_words_cuts_neighbours_never_the_record_itself():
    r = ContextualRetriever(BM25Retriever(), neighbour_words=2)
    r.add(turns())
    assert r.index_text("D1") == "yes last weekend\nyes last weekend\ndid you\nwhere did\n9 May 2023"
    assert r.index_text("D3") == "the Alps with my sister\nthe Alps with my sister\nnice pictures\n11 May 2023"
    r.set_params(neighbour_words=None)  # off: whole neighbours, as by default
    fresh = ContextualRetriever(BM25Retriever())
    fresh.add(turns())
    assert [r.index_text(f"D{i}") for i in range(5)] == [fresh.index_text(f"D{i}") for i in range(5)]
    with pytest.raises(ConfigError, match="neighbour_words"):
        ContextualRetriever(BM25Retriever(), neighbour_words=0)


def test_bm25_term_frequency_counts_own_text_twice():
    tok = Tokenizer()
    bm25 = BM25Retriever(tokenizer=tok)
    r = ContextualRetriever(bm25, date=False)
    r.add(turns())
    held = {rec.id: rec.content for rec in bm25.records()}
    assert held["D4"] == "nice pictures\nnice pictures\nthe Alps with my sister"
    # a neighbour's word finds the turn; the returned record is the turn itself
    hits = r.search("hiking", k=5)
    assert [h.id for h in hits] == ["D0", "D1"]
    assert hits[1].memory_record.content == "yes last weekend"
    assert set(hits[0].components) == {"bm25", "contextual"}


def test_a_probe_never_sees_a_later_turn():
    # lucene idf: on four documents okapi gives a term in half of them idf 0
    r = ContextualRetriever(BM25Retriever(variant="lucene"), date=False)
    records = turns()
    r.add(records[:3])
    # "Alps" is only in D3, which has not been observed: nothing may match it
    assert r.search("Alps sister", k=5) == []
    assert all("Alps" not in r.index_text(i) for i in ("D0", "D1", "D2"))
    assert r.index_text("D1").count("where did you go") == 1
    # D2's next turn arrives (same session): D2 is re-indexed with it
    r.add([MemoryRecord("user", "the Alps again", id="D2b", timestamp=T0 + 86400.0 * 2.5,
                        metadata={"session_id": "S1"})])
    assert r.index_text("D2") == "where did you go\nwhere did you go\nyes last weekend\nthe Alps again"
    assert [h.id for h in r.search("Alps", k=5)] == ["D2b", "D2"]


def test_incremental_and_batch_indexing_agree():
    one = ContextualRetriever(BM25Retriever())
    for rec in turns():
        one.add([rec])
    batch = ContextualRetriever(BM25Retriever())
    batch.add(turns())
    assert {i: one.index_text(i) for i in one._texts} == {i: batch.index_text(i) for i in batch._texts}
    q = "where did you go hiking"
    assert [(h.id, h.score) for h in one.search(q, 5)] == [(h.id, h.score) for h in batch.search(q, 5)]


def test_remove_reindexes_neighbours_and_reset_clears():
    r = ContextualRetriever(BM25Retriever(), date=False)
    r.add(turns())
    r.remove(["D1"])
    assert r.index_text("D0") == "did you go hiking\ndid you go hiking\nwhere did you go"
    assert r.index_text("D2") == "where did you go\nwhere did you go\ndid you go hiking"
    assert "D1" not in r and "D1" not in r.retriever
    with pytest.raises(KeyError, match="no record with id 'D1'"):
        r.index_text("D1")
    r.reset()
    assert len(r) == 0 and len(r.retriever) == 0 and r.search("hiking") == []


def test_set_params_rebuilds_every_index_text_and_clone_is_empty():
    r = ContextualRetriever(BM25Retriever())
    r.add(turns())
    r.set_params(date=False, own_weight=1)
    assert r.index_text("D0") == "did you go hiking\nyes last weekend"
    assert r.retriever.get_record("D0").content == "did you go hiking\nyes last weekend"
    fresh = r.clone()
    assert len(fresh) == 0 and fresh.get_params()["own_weight"] == 1


def test_wrapping_a_filled_retriever_indexes_its_records_in_context():
    bm25 = BM25Retriever()
    bm25.add(turns())
    r = ContextualRetriever(bm25, date=False)
    assert len(r) == 5
    assert bm25.get_record("D4").content == "nice pictures\nnice pictures\nthe Alps with my sister"


def test_works_over_a_vector_retriever_and_filters():
    r = ContextualRetriever(VectorRetriever(), date=False)
    r.add(turns())
    hits = r.search("hiking", k=5, where={"session_id": "S1"})
    assert hits and {h.id for h in hits} <= {"D0", "D1", "D2"}
    assert hits[0].id == "D0"


@pytest.mark.parametrize("kwargs, message", [
    ({"before": -1}, "^ContextualRetriever parameter 'before': expected an int >= 0, got -1$"),
    ({"own_weight": 0}, "^ContextualRetriever parameter 'own_weight': expected an int >= 1, got 0$"),
    ({"neighbour_weight": 1.5}, "^ContextualRetriever parameter 'neighbour_weight': expected an int >= 0, got 1.5$"),
    ({"date": "yes"}, "^ContextualRetriever parameter 'date': expected a bool, got 'yes'$"),
])
def test_bad_parameters_are_named(kwargs, message):
    with pytest.raises(ConfigError, match=message):
        ContextualRetriever(BM25Retriever(), **kwargs)


def test_session_links_kept_up_to_date_through_adds_and_removes():
    from memlab.records import MemoryRecord
    from memlab.retrieval import BM25Retriever
    from memlab.retrieval.contextual import ContextualRetriever

    r = ContextualRetriever(BM25Retriever())
    made = [MemoryRecord("user", f"turn {i} about topic {i % 3}", id=f"t{i}", timestamp=float(i),
                         metadata={"session_id": f"s{i // 4}"}) for i in range(12)]
    for rec in made[:6]:
        r.add([rec])
    r.remove(["t2", "t4"])
    r.add(made[6:])
    r.remove(["t9"])
    r.add([made[2]])
    order = [rec.id for rec in r.records()]
    # each session's linked list holds its records in insertion order, and nothing else
    for session in {m.metadata["session_id"] for m in made}:
        ids = [i for i in order if r.get_record(i).metadata["session_id"] == session]
        walked, j = [], r._tail.get(session)
        while j is not None:
            walked.append(j)
            j = r._prev[j]
        assert walked[::-1] == ids
        assert all(r._next[a] == b for a, b in zip(ids, ids[1:] + [None]))
    assert set(r._prev) == set(r._next) == set(order)
    fresh = ContextualRetriever(BM25Retriever())
    for i in order:
        fresh.add([next(m for m in made if m.id == i)])
    assert {i: r.index_text(i) for i in order} == {i: fresh.index_text(i) for i in order}
    assert [h.id for h in r.search("topic 1 turn", 12)] == [h.id for h in fresh.search("topic 1 turn", 12)]
