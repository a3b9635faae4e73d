"""Evaluating another system: rank_bm25's ``BM25Okapi`` as a user-written peer adapter.

The pattern for any retrieval library or service: subclass ``memlab.adapters.base.PeerRetriever``,
implement three methods, register a name. memlab's replay, metrics, token budget and
check suite then apply to it as to its own strategies.

- ``_open()``: build the library objects, in attributes named ``_lib*`` (not pickled;
  rebuilt on first use after unpickling, after ``reset`` and after a parameter change);
- ``_index(records)``: give new ``MemoryRecord`` turns to the library;
- ``_query(query, n)``: at most ``n`` ``(record id, score)`` pairs, best first.

``BM25Okapi`` cannot add documents, so ``_index`` only collects them and ``_query``
rebuilds the index when turns arrived since the last search (what a rank_bm25 user does).
Scores are exactly ``BM25Okapi(corpus, k1, b).get_scores(tokens)``; ties keep corpus order.

Run it::

    memlab eval datasets --import experiments/peer_rank_bm25.py --strategy rank_bm25
    memlab eval ../shared/datasets/locomo/locomo10.json --format locomo \\
        --import experiments/peer_rank_bm25.py --strategy rank_bm25 --set retriever__k1=1.2
"""

from __future__ import annotations

import re

from memlab.adapters.base import PeerRetriever
from memlab.base import ConfigError
from memlab.records import MemoryRecord
from memlab.strategies import RetrievalStrategy, register


def lower_words(text: str) -> list[str]:
    """Lower-cased ``\\w+`` tokens (the LoCoMo reference BM25's tokenisation)."""
    return re.findall(r"\w+", text.lower())


class RankBM25Retriever(PeerRetriever):
    """rank_bm25's Okapi BM25 over the observed turns (``k1``, ``b``: its parameters)."""

    name = "rank_bm25"

    def __init__(self, k1: float = 1.5, b: float = 0.75):
        super().__init__()
        self.k1 = k1
        self.b = b
        self._on_params_changed()

    def _on_params_changed(self) -> None:
        if not 0.0 <= self.b <= 1.0:
            raise ConfigError(f"b must be in [0, 1], got {self.b!r}")
        if self.k1 < 0:
            raise ConfigError(f"k1 must be >= 0, got {self.k1!r}")
        super()._on_params_changed()  # the library is rebuilt, with every kept turn

    def _open(self) -> None:
        self._lib_ids: list[str] = []
        self._lib_corpus: list[list[str]] = []
        self._lib_index = None

    def _index(self, records: list[MemoryRecord]) -> None:
        for record in records:
            self._lib_ids.append(record.id)
            self._lib_corpus.append(lower_words(record.content))
        self._lib_index = None  # rebuilt by the next search

    def _query(self, query: str, n: int) -> list[tuple[str, float]]:
        from rank_bm25 import BM25Okapi

        if self._lib_index is None:
            self._lib_index = BM25Okapi(self._lib_corpus, k1=self.k1, b=self.b)
        scores = self._lib_index.get_scores(lower_words(query))
        order = sorted(range(len(scores)), key=lambda i: -scores[i])  # stable: ties in corpus order
        return [(self._lib_ids[i], float(scores[i])) for i in order[:n]]


@register("rank_bm25")
def rank_bm25(k1: float = 1.5, b: float = 0.75) -> RetrievalStrategy:
    """rank_bm25's BM25Okapi (a user-written peer adapter, experiments/peer_rank_bm25.py)."""
    return RetrievalStrategy(retriever=RankBM25Retriever(k1=k1, b=b))
