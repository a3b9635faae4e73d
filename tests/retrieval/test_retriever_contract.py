"""The search contract, checked on every retriever and wrapper."""

import pickle

import pytest

from memlab.decay import Ebbinghaus, ManualClock
from memlab.records import MemoryRecord
from memlab.retrieval.bm25 import BM25Retriever
from memlab.retrieval.conflicts import ExcludeOutdated
from memlab.retrieval.contextual import ContextualRetriever
from memlab.retrieval.decay_retriever import DecayRetriever
from memlab.retrieval.expansion import ExpansionRetriever, PseudoRelevanceFeedback
from memlab.retrieval.fusion import WeightedSum
from memlab.retrieval.hybrid import HybridRetriever
from memlab.retrieval.vector import VectorRetriever

T0 = 1_700_000_000.0
TEXTS = ["I planned a trip to Japan", "Kyoto and Osaka in spring", "my sister lives in Osaka",
         "strong black coffee", "switched from coffee to green tea", "a window seat please",
         "coffee coffee coffee", "", "Osaka Osaka trip"]
RECORDS = [MemoryRecord("user" if i % 2 == 0 else "assistant", t, id=f"D1:{i + 1}",
                        timestamp=T0 + 3600.0 * i, metadata={"session": i // 3})
           for i, t in enumerate(TEXTS)]
QUERIES = ["coffee", "Osaka trip", "where does the sister live", "zzz unknown", "", "   "]

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
    "contextual_hybrid": lambda: HybridRetriever([ContextualRetriever(BM25Retriever()), VectorRetriever()],
                                                 fusion=WeightedSum(normalization="zscore")),
}


def run(retriever, k=4):
    retriever.add(RECORDS)
    return [[(h.id, h.score, h.rank, h.components) for h in retriever.search(q, k)] for q in QUERIES]


@pytest.fixture(params=sorted(FACTORIES))
def factory(request):
    return FACTORIES[request.param]


def test_hits_obey_the_contract(factory):
    r = factory()
    assert r.search("coffee") == []  # empty index
    r.add(RECORDS)
    for q in QUERIES:
        for k in (0, 1, 3, 20):
            hits = r.search(q, k)
            assert len(hits) <= k
            assert [h.rank for h in hits] == list(range(1, len(hits) + 1))
            scores = [h.score for h in hits]
            assert scores == sorted(scores, reverse=True)
            assert len({h.id for h in hits}) == len(hits)
            for h in hits:
                assert h.components[r.name] == {**h.components[r.name], "score": h.score, "rank": h.rank}
                assert h.record is r.get_record(h.id) and h.timestamp == h.record.timestamp
    assert [h.id for h in r.search("coffee", 1)] != []


def test_deterministic_bit_for_bit(factory):
    assert run(factory()) == run(factory())


def test_reset_clone_and_pickle(factory):
    r = factory()
    first = run(r)
    r.reset()
    assert len(r) == 0 and r.search("coffee") == []
    assert run(r) == first
    c = factory().clone()
    assert len(c) == 0 and run(c) == first
    p = pickle.loads(pickle.dumps(factory()))
    assert run(p) == first


def test_params_survive_use(factory):
    r = factory()
    before = repr(r.get_params())
    run(r)
    assert repr(r.get_params()) == before


def test_wrapping_a_filled_retriever_adopts_its_records():
    inner = BM25Retriever()
    inner.add(RECORDS)
    d = DecayRetriever(inner, reinforce="none", gc=False)
    assert len(d) == len(RECORDS) and d.memory_state("D1:4")["last_recall"] == T0 + 3 * 3600.0
    assert d.search("coffee", 1)[0].id == "D1:7"
    h = HybridRetriever([inner, VectorRetriever()])
    assert len(h) == len(RECORDS) and len(h.retrievers[1]) == len(RECORDS) - 1  # blank skipped
