"""A probe searches once: build_context reuses the search retrieve just made, with identical results."""

from pathlib import Path

import pytest

from memlab import strategies
from memlab.eval import load_any
from memlab.eval.replay import replay_dialogue
from memlab.retrieval import BM25Retriever
from memlab.strategies import RetrievalStrategy

DATASETS = Path(__file__).resolve().parents[2] / "datasets"


class NoMemo(RetrievalStrategy):
    """The strategy as it was: every call searches afresh, for ``max(k, candidates)`` hits."""

    def _build(self):
        super()._build()
        self._memoisable = self._exact = False


class CountingBM25(BM25Retriever):
    searches = 0

    def search(self, query, k=5, **kw):
        CountingBM25.searches += 1
        return super().search(query, k, **kw)


def rows(strategy, dialogue):
    return [{k: v for k, v in r.items() if k != "latency_ms"} for r in replay_dialogue(strategy, dialogue)]


@pytest.fixture(scope="module")
def dialogues():
    return [d for name in ("long_range_facts.json", "multi_session_decay.json", "preference_change.json")
            for d in load_any(DATASETS / name).dialogues]


@pytest.mark.parametrize("name, params", [
    ("bm25", {}), ("bm25_prf", {}), ("hybrid", {}), ("vector", {}),
    ("hybrid_decay", {}), ("hybrid_decay", {"reinforce": "returned"}), ("hybrid_decay", {"reinforce": "none"}),
    ("hybrid_decay", {"decay__forget_threshold": 0.3, "decay__stochastic": True}),
    ("bm25", {"retriever": BM25Retriever(), "decay": None, "history_window": 0, "context_k": 10}),
    ("bm25", {"context_k": 60, "candidates": 3}), ("vector", {"context_k": 12}),
])
def test_memoised_search_gives_the_same_rows(dialogues, name, params):
    fast = strategies.get(name)
    fast.set_params(**params)
    slow = NoMemo(**fast.clone().get_params(deep=False))
    assert fast._memoisable is not params.get("decay__stochastic", False)
    for dialogue in dialogues:
        assert rows(fast, dialogue) == rows(slow, dialogue)


def test_a_probe_searches_once(dialogues):
    dialogue = dialogues[0]
    strategy = RetrievalStrategy(retriever=CountingBM25())
    CountingBM25.searches = 0
    replay_dialogue(strategy, dialogue)
    assert CountingBM25.searches == len(dialogue.probes) > 0
    CountingBM25.searches = 0
    replay_dialogue(NoMemo(retriever=CountingBM25()), dialogue)
    assert CountingBM25.searches == 2 * len(dialogue.probes)
