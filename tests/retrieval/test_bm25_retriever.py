"""BM25Retriever: hand-computed scores, rank_bm25 parity under appends and deletes, edge cases."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rank_bm25 import BM25Okapi

from memlab.base import ConfigError, MemlabError
from memlab.records import MemoryRecord
from memlab.retrieval.bm25 import BM25Retriever
from memlab.retrieval.tokenize import Tokenizer


def rec(i, text, ts=0.0, **md):
    return MemoryRecord("user", text, id=str(i), timestamp=ts, metadata=md)


def corpus(texts):
    r = BM25Retriever()
    r.add([rec(i, t) for i, t in enumerate(texts)])
    return r


# d0 = "a b", d1 = "a c c", d2 = "d": N = 3, |d| = 2, 3, 1, avgdl = 2.
# idf(a) = ln(1.5) - ln(2.5) < 0 -> floored to 0.25 * average_idf,
# average_idf = (ln(0.6) + 3 * ln(5/3)) / 4 = ln(5/3) / 2.
EPS = 0.25 * math.log(5 / 3) / 2


def test_hand_computed_scores_for_a_rare_term():
    r = corpus(["a b", "a c c", "d"])
    # d1: tf 2, |d| 3: 2 * 2.5 / (2 + 1.5 * (0.25 + 0.75 * 3 / 2)) = 5 / 4.0625
    assert r.scores("c") == {"1": pytest.approx(math.log(5 / 3) * 5 / 4.0625, abs=1e-12)}
    hits = r.search("c")
    assert [h.id for h in hits] == ["1"] and hits[0].rank == 1


def test_negative_idf_is_floored_to_epsilon_times_average_idf():
    r = corpus(["a b", "a c c", "d"])
    scores = r.scores("a")
    # d0: 2.5 / (1 + 1.5 * (0.25 + 0.75 * 2 / 2)) = 1.0; d1: 2.5 / (1 + 1.5 * 1.375)
    assert scores["0"] == pytest.approx(EPS * 1.0, abs=1e-12)
    assert scores["1"] == pytest.approx(EPS * 2.5 / 3.0625, abs=1e-12)
    assert "2" not in scores  # documents without a query term are not returned
    assert [h.id for h in r.search("a")] == ["0", "1"]


def test_term_in_exactly_half_the_documents_scores_zero_but_is_returned():
    r = corpus(["x y", "x z", "w", "v"])
    hits = r.search("x")
    assert [(h.id, h.score) for h in hits] == [("0", 0.0), ("1", 0.0)]


def test_negative_average_idf_gives_negative_scores_like_rank_bm25():
    r = corpus(["a", "a"])
    expected = BM25Okapi([["a"], ["a"]]).get_scores(["a"])
    assert expected[0] < 0
    assert [h.score for h in r.search("a")] == pytest.approx(list(expected), abs=1e-12)


def test_repeated_query_terms_count_twice():
    r = corpus(["a b", "a c c", "d"])
    assert r.scores("c c")["1"] == pytest.approx(2 * r.scores("c")["1"], abs=1e-12)


def test_lucene_variant_idf():
    r = BM25Retriever(variant="lucene")
    r.add([rec(i, t) for i, t in enumerate(["a b", "a c c", "d"])])
    # idf(a) = ln(1 + (3 - 2 + 0.5) / (2 + 0.5)) = ln(1.6); tf part of d0 = 1.0
    assert r.scores("a")["0"] == pytest.approx(math.log(1.6), abs=1e-12)


def test_empty_index_query_and_unknown_terms_give_empty_lists():
    r = BM25Retriever()
    assert r.search("anything") == []
    r.add([rec(0, "hello world")])
    assert r.search("") == []
    assert r.search("!!! ...") == []
    assert r.search("unknown words only") == []
    assert r.search("hello", k=0) == []


def test_blank_records_count_in_n_and_avgdl_like_rank_bm25():
    r = corpus(["a b", "", "c"])
    expected = BM25Okapi([["a", "b"], [], ["c"]]).get_scores(["a"])
    assert r.scores("a")["0"] == pytest.approx(expected[0], abs=1e-12)
    assert len(r) == 3


def test_ranks_scores_and_ties_by_insertion_order():
    r = corpus(["x q", "x", "x q", "q q x"])
    hits = r.search("x", k=10)
    assert [h.rank for h in hits] == [1, 2, 3, 4]
    scores = [h.score for h in hits]
    assert scores == sorted(scores, reverse=True)
    # "x q" twice: equal scores, the earlier added first
    ids = [h.id for h in hits]
    assert ids.index("0") < ids.index("2")
    assert hits[0].components == {"bm25": {"score": hits[0].score, "rank": 1}}
    assert [h.id for h in r.search("x", k=2)] == ids[:2]


def test_readding_an_id_replaces_it_and_moves_it_last():
    r = corpus(["x", "x", "x"])
    r.add([rec(0, "x")])
    assert [h.id for h in r.search("x", k=5)] == ["1", "2", "0"]
    r.add([rec(1, "zzz")])
    assert [h.id for h in r.search("x", k=5)] == ["2", "0"]
    assert r.get_record("1").content == "zzz"


def test_remove_forgets_terms_and_unknown_ids_are_ignored():
    r = corpus(["alpha beta", "beta gamma", "delta"])
    r.remove(["0", "nope"])
    assert "0" not in r and len(r) == 2
    assert r.search("alpha") == []
    assert r.scores("beta") == pytest.approx(
        {"1": BM25Okapi([["beta", "gamma"], ["delta"]]).get_scores(["beta"])[0]}, abs=1e-12)
    with pytest.raises(KeyError, match="no record with id '0'"):
        r.get_record("0")


def test_compaction_after_many_deletes_keeps_scores_and_order():
    texts = [f"w{i % 7} w{i % 11} common" for i in range(1500)]
    r = corpus(texts)
    r.remove([str(i) for i in range(0, 1500, 3)] + [str(i) for i in range(1, 1500, 3)][:700])
    assert r._dead < 1024  # compaction ran
    survivors = [i for i in range(1500) if i % 3 == 2 or (i % 3 == 1 and i >= 3 * 700)]
    oracle = BM25Okapi([texts[i].split() for i in survivors]).get_scores(["w3", "w5"])
    got = r.scores("w3 w5")
    for n, i in enumerate(survivors):
        if str(i) in got:
            assert got[str(i)] == pytest.approx(oracle[n], abs=1e-9)
    r.add([rec("new", "w3")])
    assert r.records()[-1].id == "new"


def test_changing_tokenizer_reindexes():
    r = BM25Retriever(tokenizer=Tokenizer())
    r.add([rec(i, t) for i, t in enumerate(["Running dogs", "ran"])])
    assert r.search("run") == []
    r.set_params(tokenizer__stemmer="porter")
    assert [h.id for h in r.search("run")] == ["0"]
    assert r.get_params()["tokenizer__stemmer"] == "porter"


def test_changing_k1_rescores():
    r = corpus(["a b", "a c c", "d"])
    r.set_params(k1=1.2)
    oracle = BM25Okapi([["a", "b"], ["a", "c", "c"], ["d"]], k1=1.2).get_scores(["c"])
    assert r.scores("c")["1"] == pytest.approx(oracle[1], abs=1e-12)


def test_config_errors_name_the_parameter():
    with pytest.raises(ConfigError, match=r"^BM25Retriever parameter 'variant': expected one of 'okapi', 'lucene', "
                                          r"got 'bm42'$"):
        BM25Retriever(variant="bm42")
    with pytest.raises(ConfigError, match=r"^BM25Retriever parameter 'b': expected a number >= 0 and <= 1, got 1.5$"):
        BM25Retriever(b=1.5)
    with pytest.raises(MemlabError, match="k must be a non-negative int, got -1"):
        BM25Retriever().search("x", k=-1)
    with pytest.raises(MemlabError, match="unique"):
        BM25Retriever().add([rec(1, "a"), rec(1, "b")])


def test_clone_is_empty_with_same_config():
    r = BM25Retriever(k1=1.2, tokenizer=Tokenizer(stopwords="english"))
    r.add([rec(0, "the cat")])
    c = r.clone()
    assert len(c) == 0 and c.k1 == 1.2 and c.tokenizer.stopwords == "english"
    assert c.tokenizer is not r.tokenizer


# -- parity with rank_bm25 under random appends and deletes ---------------------------

WORDS = ["a", "b", "c", "d", "e", "f", "g", "h"]
doc = st.lists(st.sampled_from(WORDS), min_size=0, max_size=8)
op = st.one_of(st.tuples(st.just("add"), doc), st.tuples(st.just("del"), st.integers(0, 40)))


@settings(max_examples=100, deadline=None)
@given(ops=st.lists(op, min_size=1, max_size=40),
       query=st.lists(st.sampled_from(WORDS + ["zz"]), min_size=1, max_size=5),
       k1=st.sampled_from([0.5, 1.2, 1.5, 2.0]), b=st.sampled_from([0.0, 0.5, 0.75, 1.0]))
def test_scores_equal_rank_bm25_after_random_appends_and_deletes(ops, query, k1, b):
    r = BM25Retriever(k1=k1, b=b)
    alive: dict[str, list[str]] = {}  # insertion order = surviving corpus order
    next_id = 0
    for kind, arg in ops:
        if kind == "add":
            r.add([rec(next_id, " ".join(arg))])
            alive[str(next_id)] = arg
            next_id += 1
        elif alive:
            victim = list(alive)[arg % len(alive)]
            r.remove([victim])
            del alive[victim]
    got = r.scores(" ".join(query))
    if not any(alive.values()):  # rank_bm25 divides by zero on an empty vocabulary
        assert got == {} and r.search(" ".join(query)) == []
        return
    with np.errstate(invalid="ignore"):  # rank_bm25 gives NaN for empty documents when b = 1
        oracle = BM25Okapi(list(alive.values()), k1=k1, b=b).get_scores(query)
    expected = {i: s for (i, toks), s in zip(alive.items(), oracle) if set(toks) & set(query)}
    assert set(got) == set(expected)
    for i, s in expected.items():
        assert abs(got[i] - s) <= 1e-9
    hits = r.search(" ".join(query), k=100)
    order = list(alive)
    assert [h.id for h in hits] == sorted(expected, key=lambda i: (-got[i], order.index(i)))
