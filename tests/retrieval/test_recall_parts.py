"""The parts of recall_plus (issue 32): time ranges and the time boost, session-plus-turn
fusion, adjacent-turn windows, keyphrase keys. Each formula of the docstrings is pinned."""

from __future__ import annotations

import datetime as dt

import pytest

from memlab import strategies
from memlab.records import MemoryRecord
from memlab.retrieval import (
    BM25Retriever,
    KeyphraseRetriever,
    NeighbourWindowRetriever,
    SessionFusionRetriever,
    TimeBoostRetriever,
)
from memlab.retrieval.keyphrases import keyphrases
from memlab.retrieval.temporal import time_ranges
from memlab.testing import check_retriever

NOW = dt.datetime(2023, 5, 30, 1, 50, tzinfo=dt.timezone.utc).timestamp()  # a Tuesday


def _days(ranges):
    day = lambda t: dt.datetime.fromtimestamp(t, tz=dt.timezone.utc).date().isoformat()  # noqa: E731
    return [(day(a), day(b)) for a, b in ranges]


@pytest.mark.parametrize("query, expected", [
    ("Which pair of shoes did I clean last month?", [("2023-04-01", "2023-05-01")]),
    ("What did I do two weeks ago?", [("2023-05-12", "2023-05-19")]),
    ("What did I buy 3 days ago?", [("2023-05-26", "2023-05-28")]),
    ("Which bike did I fix first in February?", [("2023-02-01", "2023-03-01")]),
    ("What happened on 7 May 2023?", [("2023-05-07", "2023-05-08")]),
    ("What happened on May 7, 2022?", [("2022-05-07", "2022-05-08")]),
    ("Where was I in December?", [("2022-12-01", "2023-01-01")]),
    ("How much did I spend in the past few months?", [("2023-02-27", "2023-05-31")]),
    ("in the past 2 weeks", [("2023-05-16", "2023-05-31")]),
    ("What did I eat last Tuesday?", [("2023-05-23", "2023-05-24")]),
    ("What did I cook yesterday?", [("2023-05-29", "2023-05-30")]),
    ("and the day before yesterday?", [("2023-05-28", "2023-05-29")]),
    ("What game did I beat last weekend?", [("2023-05-27", "2023-05-29")]),
    ("How many trips this year?", [("2023-01-01", "2023-05-31")]),
    ("What did I read last week?", [("2023-05-22", "2023-05-29")]),
    ("Where did we go in 2021?", [("2021-01-01", "2022-01-01")]),
    ("Logged on 2023-03-04", [("2023-03-04", "2023-03-05")]),
    ("May I ask what you may recommend?", []),
    ("What is my favourite colour?", []),
])
def test_time_ranges_resolve_against_now(query, expected):
    assert _days(time_ranges(query, NOW)) == expected


DAY = 86400.0


def _rec(i, text, day, session):
    return MemoryRecord(role="user", content=text, id=f"t{i}", timestamp=NOW - day * DAY + i,
                        metadata={"session_id": session})


def records():
    return [_rec(0, "I cooked pasta with tomato sauce", 40, "s1"),
            _rec(1, "the pasta was great, tomato sauce and basil", 40, "s1"),
            _rec(2, "I cooked pasta again for friends", 1, "s2"),
            _rec(3, "we watched a film about sailing", 1, "s2"),
            _rec(4, "my sister visited, she loves sailing boats", 10, "s3")]


def test_time_boost_adds_weight_times_the_best_score_inside_the_range():
    inner = BM25Retriever()
    inner.add(records())
    base = {h.id: h.score for h in inner.search("what pasta did I cook yesterday", 5, now=NOW)}
    boosted = TimeBoostRetriever(BM25Retriever(), weight=0.5, slack_days=0.0)
    boosted.add(records())
    hits = boosted.search("what pasta did I cook yesterday", 5, now=NOW)
    top = max(base.values())
    for h in hits:
        inside = h.id in ("t2", "t3")
        assert h.score == pytest.approx(base[h.id] + 0.5 * top * inside)
        assert h.components["time"]["in_range"] == float(inside)
    assert hits[0].id == "t2"
    # no time named: the wrapped ranking as it is
    plain = boosted.search("pasta tomato", 5, now=NOW)
    assert [h.id for h in plain] == [h.id for h in inner.search("pasta tomato", 5, now=NOW)]


def test_session_fusion_formula():
    turns, sessions = BM25Retriever(), BM25Retriever()
    fused = SessionFusionRetriever(turns, session_retriever=sessions, weight=0.4, date=False)
    fused.add(records())
    hits = fused.search("pasta sauce", 5)
    t = {h.id: h.score for h in BM25Retriever().search("x", 1)}  # empty: sanity of the API
    assert t == {}
    ref = BM25Retriever()
    ref.add(records())
    raw = {h.id: h.score for h in ref.search("pasta sauce", 100)}
    lo, hi = min(raw.values()), max(raw.values())
    s_raw = {h.id.split(":", 1)[1]: h.score for h in sessions.search("pasta sauce", 10)}
    slo, shi = min(s_raw.values()), max(s_raw.values())
    session_of = {r.id: r.metadata["session_id"] for r in records()}
    for h in hits:
        tn = (raw[h.id] - lo) / (hi - lo)
        sn = (s_raw[session_of[h.id]] - slo) / (shi - slo) if session_of[h.id] in s_raw else 0.0
        assert h.score == pytest.approx(0.6 * tn + 0.4 * sn)
    assert sessions.get_record("session:s1").content == "\n".join(r.content for r in records()[:2])
    # pull: every turn of the best session joins the candidates (turn score 0)
    pulled = SessionFusionRetriever(BM25Retriever(), weight=0.5, pull=1, date=False)
    pulled.add(records())
    ids = [h.id for h in pulled.search("sailing film", 5)]
    assert "t2" in ids  # shares no word with the query, but its session s2 is the best one
    # a session changed after a search is re-indexed before the next
    fused.add([_rec(5, "more sauce", 1, "s2")])
    fused.search("sauce", 1)
    assert "more sauce" in sessions.get_record("session:s2").content


def test_neighbour_window_formula():
    inner = BM25Retriever()
    window = NeighbourWindowRetriever(inner, radius=1, decay=0.5, expand=10)
    window.add(records())
    ref = BM25Retriever()
    ref.add(records())
    raw = {h.id: h.score for h in ref.search("film", 10)}
    assert list(raw) == ["t3"]
    hits = {h.id: h for h in window.search("film", 10)}
    assert hits["t3"].score == pytest.approx(raw["t3"])
    # t2 is t3's neighbour in session s2; t4 (session s3) is not
    assert hits["t2"].score == pytest.approx(0.5 * raw["t3"]) and hits["t2"].components["window"]["from_neighbour"] == 1
    assert set(hits) == {"t2", "t3"}
    off = NeighbourWindowRetriever(BM25Retriever(), decay=0.0)
    off.add(records())
    assert [h.id for h in off.search("pasta", 5)] == [h.id for h in ref.search("pasta", 5)]


def test_keyphrases_by_rule():
    text = 'Caroline said, "I went to the LGBTQ support group in New York on 7 May 2023. The celebration was great!"'
    assert keyphrases(text) == ["LGBTQ", "New York", "7", "May", "2023", "celebration"]
    k = KeyphraseRetriever(BM25Retriever(), weight=2)
    k.add([MemoryRecord(role="user", content="we met Anna in Paris", id="a")])
    assert k.retriever.get_record("a").content == "we met Anna in Paris\nAnna Paris\nAnna Paris"
    assert k.search("anna", 1)[0].memory_record.content == "we met Anna in Paris"


@pytest.mark.parametrize("make", [
    lambda: TimeBoostRetriever(BM25Retriever()),
    lambda: SessionFusionRetriever(BM25Retriever()),
    lambda: SessionFusionRetriever(BM25Retriever(), pull=2),
    lambda: NeighbourWindowRetriever(BM25Retriever()),
    lambda: KeyphraseRetriever(BM25Retriever()),
], ids=["time", "session_fusion", "session_pull", "window", "keyphrases"])
def test_the_parts_pass_the_retriever_contract(make):
    assert "hits_obey_the_contract" in check_retriever(make())


def test_recall_plus_is_registered_and_each_part_turns_off_at_zero():
    from memlab.retrieval import ContextualRetriever

    s = strategies.get("recall_plus")
    assert type(s.retriever).__name__ == "TimeBoostRetriever"
    bare = strategies.get("recall_plus", session_weight=0, time_weight=0, window_decay=0, keyphrase_weight=0,
                          turn_weight=0)
    assert isinstance(bare.retriever, ContextualRetriever)
    default = [type(c).__name__ for c in s.retriever.components()]
    assert {"SessionFusionRetriever", "HybridRetriever"} <= set(default)  # own-turn keys fused with the contextual
    assert not {"NeighbourWindowRetriever", "KeyphraseRetriever"} & set(default)
    full = strategies.get("recall_plus", window_decay=0.5, keyphrase_weight=1)
    names = [type(c).__name__ for c in full.retriever.components()]
    assert {"SessionFusionRetriever", "NeighbourWindowRetriever", "KeyphraseRetriever"} <= set(names)


def test_session_diversity_formula():
    from memlab.retrieval import SessionDiversityRetriever

    ref = BM25Retriever()
    ref.add(records())
    raw = ref.search("pasta sauce tomato", 10)
    div = SessionDiversityRetriever(BM25Retriever(), penalty=0.5)
    div.add(records())
    hits = {h.id: h for h in div.search("pasta sauce tomato", 10)}
    seen: dict[str, int] = {}
    for h in raw:
        s = h.memory_record.metadata["session_id"]
        j = seen.get(s, 0)
        seen[s] = j + 1
        assert hits[h.id].score == pytest.approx(h.score * 0.5 ** j)
        assert hits[h.id].components["diversity"]["same_session_above"] == j
    assert "hits_obey_the_contract" in check_retriever(SessionDiversityRetriever(BM25Retriever()))


@pytest.mark.parametrize("make", [SessionFusionRetriever, NeighbourWindowRetriever], ids=["fusion", "window"])
def test_a_session_wrapper_of_a_filled_retriever_holds_each_turn_once(make):
    """Wrapping a retriever that already holds records (``WrapperRetriever._sync``): each turn
    joins its session once, as when the records are added through the wrapper."""
    filled = BM25Retriever()
    filled.add(records())
    taken_over, added = make(filled), make(BM25Retriever())
    added.add(records())
    assert taken_over._sessions.members == added._sessions.members
    assert all(len(ids) == len(set(ids)) for ids in taken_over._sessions.members.values())
    assert [(h.id, h.score) for h in taken_over.search("pasta sauce", 5)] == \
        [(h.id, h.score) for h in added.search("pasta sauce", 5)]


def test_own_turn_keys_formula():
    """turn_weight: minmax(contextual keys) + turn_weight * minmax(BM25 over the turn's own
    text), each over its own candidates; b reaches both BM25s; off at 0."""
    from memlab.retrieval import ContextualRetriever, HybridRetriever

    plain = strategies.get("recall_plus", session_weight=0, time_weight=0, window_decay=0, keyphrase_weight=0,
                           turn_weight=0, b=1.0)
    assert isinstance(plain.retriever, ContextualRetriever) and plain.retriever.retriever.b == 1.0
    s = strategies.get("recall_plus", session_weight=0, time_weight=0, window_decay=0, keyphrase_weight=0,
                       turn_weight=0.5, b=1.0)
    assert isinstance(s.retriever, HybridRetriever)
    keys, own = s.retriever.retrievers
    assert isinstance(keys, ContextualRetriever) and type(own) is BM25Retriever and own.b == keys.retriever.b == 1.0
    s.retriever.add(records())
    query = "pasta sauce"
    k = {h.id: h.score for h in keys.search(query, 100)}
    o = {h.id: h.score for h in own.search(query, 100)}

    def mm(d, i):
        lo, hi = min(d.values()), max(d.values())
        return (d[i] - lo) / (hi - lo) if i in d and hi > lo else 0.0

    hits = s.retriever.search(query, 10)
    assert hits and {h.id for h in hits} == set(k) | set(o)
    for h in hits:
        assert h.score == pytest.approx(mm(k, h.id) + 0.5 * mm(o, h.id))
    from memlab.base import ConfigError

    with pytest.raises(ConfigError, match="'turn_weight': expected a number >= 0"):
        strategies.get("recall_plus", turn_weight=-1.0)
