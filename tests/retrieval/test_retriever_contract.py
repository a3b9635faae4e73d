"""The search contract (memlab.testing.check_retriever), checked on every retriever and wrapper."""

import pytest

from memlab.decay import Ebbinghaus, ManualClock
from memlab.retrieval.bm25 import BM25Retriever
from memlab.retrieval.conflicts import ExcludeOutdated
from memlab.retrieval.contextual import ContextualRetriever
from memlab.retrieval.decay_retriever import DecayRetriever
from memlab.retrieval.expansion import ExpansionRetriever, PseudoRelevanceFeedback
from memlab.retrieval.fusion import WeightedSum
from memlab.retrieval.hybrid import HybridRetriever
from memlab.retrieval.vector import VectorRetriever
from memlab.testing import T0, check_retriever, retriever_records

FACTORIES = {
    "bm25": lambda: BM25Retriever(),
    "vector": lambda: VectorRetriever(),
    "hybrid": lambda: HybridRetriever(),
    "hybrid_wsum": lambda: HybridRetriever(fusion=WeightedSum(), weights=[0.3, 0.7]),
    "decay": lambda: DecayRetriever(HybridRetriever(), decay=Ebbinghaus(stochastic=True, seed=1)),
    "decay_clock": lambda: DecayRetriever(BM25Retriever(), clock=ManualClock(T0 + 86400.0)),
    "expansion": lambda: ExpansionRetriever(BM25Retriever(), PseudoRelevanceFeedback()),
    "current": lambda: ExcludeOutdated(HybridRetriever()),
    "contextual": lambda: ContextualRetriever(BM25Retriever()),
    "contextual_cap": lambda: ContextualRetriever(BM25Retriever(), neighbour_words=1),
    "contextual_hybrid": lambda: HybridRetriever([ContextualRetriever(BM25Retriever()), VectorRetriever()],
                                                 fusion=WeightedSum(normalization="zscore")),
}


@pytest.mark.parametrize("name", sorted(FACTORIES))
def test_every_retriever_passes_check_retriever(name):
    retriever = FACTORIES[name]()
    assert check_retriever(retriever) == [
        "is_retriever", "parts_are_parameters", "hits_obey_the_contract", "records_are_honest", "deterministic", "reset_is_fresh",
        "picklable", "params_unchanged_by_use", "search_depth_serves_its_prefix"] + ["exact_search_is_a_prefix"] * retriever.capabilities().exact_search


def test_check_retriever_names_the_failed_check():
    class Unsorted(BM25Retriever):
        def search(self, query, k=5, *, where=None, now=None):
            return list(reversed(super().search(query, k, where=where, now=now)))

    with pytest.raises(AssertionError, match=r"^Unsorted failed check 'hits_obey_the_contract': ranks must be"):
        check_retriever(Unsorted())


class Shallow(HybridRetriever):
    """Claims a depth whose search asks its children deeper, so its fused ranking differs."""

    def search_depth(self, k):
        return k + 60


def test_a_search_depth_whose_prefix_differs_fails_its_check():
    assert Shallow().search_depth(3) == 63
    with pytest.raises(AssertionError, match=r"^Shallow failed check 'search_depth_serves_its_prefix'"):
        check_retriever(Shallow(candidates=2))


def test_a_hybrid_searches_its_candidates_whatever_k_is():
    assert HybridRetriever(candidates=50).search_depth(10) == 50
    assert HybridRetriever(candidates=50).search_depth(80) == 80
    assert BM25Retriever().search_depth(7) == 7


def test_wrapping_a_filled_retriever_adopts_its_records():
    records = retriever_records()
    inner = BM25Retriever()
    inner.add(records)
    d = DecayRetriever(inner, reinforce="none", gc=False)
    assert len(d) == len(records) and d.memory_state("D1:4")["last_recall"] == T0 + 3 * 3600.0
    assert d.search("coffee", 1)[0].id == "D1:7"
    h = HybridRetriever([inner, VectorRetriever()])
    assert len(h) == len(records) and len(h.retrievers[1]) == len(records) - 1  # blank skipped
