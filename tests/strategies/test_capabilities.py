"""Declared capabilities: what strategies, retrievers and stores say about themselves, and
what reads it (the memoised search, sweeps' shared observation, the check suites)."""

from __future__ import annotations

import pytest

from memlab import strategies
from memlab.capabilities import Capabilities, capabilities_of
from memlab.decay import Ebbinghaus
from memlab.eval.replay import shares_observation
from memlab.records import MemoryRecord
from memlab.retrieval import BM25Retriever, DecayRetriever, HybridRetriever, VectorRetriever
from memlab.storage.vector import NumpyVectorStore, VectorStore
from memlab.strategies.retrieval import RetrievalStrategy
from memlab.testing import check_retriever, check_strategy


def turns(n: int = 6) -> list[MemoryRecord]:
    return [MemoryRecord("user" if i % 2 == 0 else "assistant", f"turn {i} about coffee {i}", id=f"t{i}",
                         timestamp=1000.0 + i) for i in range(n)]


@pytest.mark.parametrize("name", ["window", "longterm"])
def test_set_query_params_keep_rate_reaches_the_memory_it_scores_with(name):
    s = strategies.get(name, embedder=None) if name == "longterm" else strategies.get(name)
    for record in turns():
        s.observe(record)
    s.set_query_params(keep_rate=0.5)
    memory = s._memory
    if name == "window":
        # the memory reports the keep_rate its block scores with (it reported 0.9 before)
        assert memory.keep_rate == 0.5 and memory.block.keep_rate == 0.5
        assert memory.get_params()["keep_rate"] == 0.5
    else:
        assert memory.history_block.keep_rate == 0.5
        assert memory.get_params()["chat_history_block__keep_rate"] == 0.5
    scores = [c.score for c in memory.history_block.retrieve()] if name == "longterm" else \
        [c.score for c in memory.retrieve()]
    assert scores == [0.5 ** i for i in range(5, -1, -1)]
    fresh = s.clone()
    assert fresh.keep_rate == 0.5 and fresh._memory.get_params(deep=True).get(
        "keep_rate", fresh._memory.get_params(deep=True).get("chat_history_block__keep_rate")) == 0.5


def test_declared_on_the_bases():
    assert Capabilities() == Capabilities(frozenset(), False, False, False, False)
    assert strategies.get("window").capabilities().query_time_params == {"keep_rate", "token_limit"}
    assert strategies.get("bm25").capabilities() == Capabilities(exact_search=True, honours_peek=True)
    assert strategies.get("oracle").capabilities().uses_gold
    assert capabilities_of(BM25Retriever()).exact_search
    assert capabilities_of(VectorRetriever()).exact_search  # the numpy store is exact
    assert capabilities_of(NumpyVectorStore()).exact_search and not VectorStore.exact_search
    assert not capabilities_of(HybridRetriever([BM25Retriever(), VectorRetriever()])).exact_search
    assert capabilities_of(Ebbinghaus(stochastic=True)).stochastic
    assert not capabilities_of(Ebbinghaus()).stochastic
    reinforcing = DecayRetriever(BM25Retriever(), Ebbinghaus(), reinforce="returned")
    assert capabilities_of(reinforcing).search_changes_state
    assert not capabilities_of(DecayRetriever(BM25Retriever(), Ebbinghaus(), reinforce="none")).search_changes_state
    # peek holds every DecayRetriever quiet, a user's one handed in included
    assert RetrievalStrategy(retriever=reinforcing.clone()).capabilities().honours_peek
    assert strategies.get("hybrid_decay", embedder="hashing").capabilities().honours_peek
    assert not strategies.get("window").capabilities().honours_peek  # its search changes nothing anyway
    # a composite is stochastic when a part is
    drawn = RetrievalStrategy(decay=Ebbinghaus(stochastic=True))
    assert drawn.capabilities().stochastic and not drawn._memoisable


def test_a_user_retriever_declaring_exact_search_is_served_from_a_longer_search():
    class Mine(BM25Retriever):
        exact_search = False

    assert RetrievalStrategy(retriever=BM25Retriever())._exact
    assert not RetrievalStrategy(retriever=Mine())._exact
    Mine.exact_search = True
    assert RetrievalStrategy(retriever=Mine())._exact


def test_shares_observation_reads_the_declaration():
    assert shares_observation(strategies.get("window")) == {"keep_rate", "token_limit"}
    assert shares_observation(strategies.get("bm25")) == frozenset()

    class Drawing(type(strategies.get("window"))):
        def capabilities(self):
            import dataclasses
            return dataclasses.replace(super().capabilities(), stochastic=True)

    assert shares_observation(Drawing()) == frozenset()  # asking changes state: observe per point


def test_check_suites_pick_checks_from_capabilities():
    assert "query_time_params_switch" in check_strategy(strategies.get("window"))
    assert "asking_changes_nothing" in check_strategy(strategies.get("window"))
    ran = check_strategy(strategies.get("bm25"))
    assert "query_time_params_switch" not in ran and "asking_changes_nothing" in ran
    assert "asking_changes_nothing" not in check_strategy(RetrievalStrategy(decay=Ebbinghaus(stochastic=True)))
    assert "exact_search_is_a_prefix" in check_retriever(BM25Retriever())
    assert "exact_search_is_a_prefix" not in check_retriever(HybridRetriever([BM25Retriever(), VectorRetriever()]))


def test_a_false_exact_declaration_fails_its_check():
    class Reversed(BM25Retriever):
        exact_search = True

        def search(self, query, k=5, **kw):
            hits = super().search(query, 20, **kw)[::-1][:k]
            for n, h in enumerate(hits, start=1):
                h.rank = n
                h.components[self.name] = {"score": h.score, "rank": n}
            return hits

    with pytest.raises(AssertionError, match="Reversed failed check"):
        check_retriever(Reversed())
