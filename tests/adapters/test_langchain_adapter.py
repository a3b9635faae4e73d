"""langchain_ensemble: LangChain's EnsembleRetriever (RRF) over its BM25Retriever and InMemoryVectorStore."""

from __future__ import annotations

import pickle

import pytest

pytest.importorskip("langchain_community", reason="the langchain extra is not installed: "
                                                  "pip install 'memlab[langchain]'")

from memlab import ConfigError, strategies  # noqa: E402
from memlab.adapters.langchain import LangChainEnsembleRetriever  # noqa: E402
from memlab.records import MemoryRecord, Role  # noqa: E402
from memlab.testing import check_records, check_retriever, check_strategy  # noqa: E402
from memlab.testing.doubles import KeywordEmbedder  # noqa: E402


def _records(texts: list[str]) -> list[MemoryRecord]:
    return [MemoryRecord(Role.USER, t, id=f"t{i}", timestamp=100.0 + i) for i, t in enumerate(texts)]


def test_passes_the_check_suites() -> None:
    assert check_strategy(strategies.get("langchain_ensemble"))[9:] == [
        "context", "asking_changes_nothing"]  # the generic checks, then one chosen by capabilities
    assert check_retriever(LangChainEnsembleRetriever())[-1] == "search_depth_serves_its_prefix"


def test_scores_are_langchains_weighted_rrf_computed_by_hand() -> None:
    # vocabulary (apple, banana, cherry): t0 = apple, t1 = banana, t2 = apple apple cherry
    retriever = LangChainEnsembleRetriever(embedder=KeywordEmbedder(), weights=[0.25, 0.75], c=10)
    retriever.add(_records(["apple", "banana", "apple apple cherry"]))
    hits = retriever.search("apple", 3)
    # BM25 ("apple" in t0 and t2; rank_bm25's top-n): t2 (tf 2) > t0 (tf 1, but shorter doc)?
    bm25 = [d.metadata["memlab_id"] for d in retriever.ensemble(3).retrievers[0].invoke("apple")]
    # vector: cos(apple, t0) = 1, cos(apple, t2) = 2/sqrt(5), cos(apple, t1) = 0
    vector = [d.metadata["memlab_id"] for d in retriever.ensemble(3).retrievers[1].invoke("apple")]
    assert vector == ["t0", "t2", "t1"]
    expected = {}
    for w, ranked in ((0.25, bm25), (0.75, vector)):
        for rank, doc_id in enumerate(ranked, start=1):
            expected[doc_id] = expected.get(doc_id, 0.0) + w / (10 + rank)
    assert [(h.id, h.score) for h in hits] == sorted(expected.items(), key=lambda p: -p[1])
    assert hits[0].id == "t0" and hits[0].score == pytest.approx(0.25 / (10 + bm25.index("t0") + 1) + 0.75 / 11)


def test_identical_texts_stay_distinct_and_new_turns_are_found() -> None:
    retriever = LangChainEnsembleRetriever(embedder=KeywordEmbedder())
    retriever.add(_records(["apple pie", "apple pie", "banana", "cherry", "banana split"]))
    assert sorted(h.id for h in retriever.search("apple", 3)[:2]) == ["t0", "t1"]
    retriever.add([MemoryRecord(Role.USER, "cherry cherry", id="late", timestamp=200.0)])
    assert retriever.search("cherry", 1)[0].id == "late"  # BM25 rebuilt after the new turn
    retriever.remove(["late"])
    assert "late" not in [h.id for h in retriever.search("cherry", 4)]


def test_bm25_tokens_are_langchains_whitespace_split_unless_memlab_is_asked() -> None:
    records = _records(["Tea, please.", "coffee", "more coffee"])
    plain = LangChainEnsembleRetriever(weights=[1.0, 0.0])
    plain.add(records)
    ours = LangChainEnsembleRetriever(weights=[1.0, 0.0], bm25_preprocess="memlab")
    ours.add(records)
    # "tea" does not match the token "Tea," under text.split(): rank_bm25 scores 0 for all
    # and keeps corpus order; memlab's tokenizer finds it
    assert ours.search("tea", 1)[0].id == "t0"
    assert [h.id for h in plain.search("coffee", 2)] == ["t1", "t2"]


def test_pickled_retriever_rebuilds_langchain_objects() -> None:
    s = strategies.get("langchain_ensemble")
    for r in check_records():
        s.observe(r)
    before = [(h.id, h.score) for h in s.retrieve("Where does the sister live?", 5)]
    restored = pickle.loads(pickle.dumps(s))
    assert restored.retriever._lib_store is None
    assert [(h.id, h.score) for h in restored.retrieve("Where does the sister live?", 5)] == before


def test_bad_parameters_are_named() -> None:
    with pytest.raises(ConfigError, match=r"LangChainEnsembleRetriever parameter 'bm25_preprocess': expected one of "
                                          r"'whitespace', 'memlab', got 'x'"):
        strategies.get("langchain_ensemble", bm25_preprocess="x")
    with pytest.raises(ConfigError, match=r"LangChainEnsembleRetriever parameter 'weights': expected two non-negative "
                                          r"numbers \[bm25, vector\], not both 0, or None, got \[1.0\]"):
        strategies.get("langchain_ensemble", weights=[1.0])
