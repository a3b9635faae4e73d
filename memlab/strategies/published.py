"""Published baselines, reproduced as their authors run them: ``flat_bm25``.

``flat_bm25`` is LongMemEval's ``flat-bm25`` retriever (``src/retrieval/run_retrieval.py``,
``run_flat_retrieval``, github.com/xiaowu0162/LongMemEval): ``rank_bm25.BM25Okapi`` with its
defaults (k1 = 1.5, b = 0.75, epsilon = 0.25) over the turns observed, documents and query
split on single spaces (``text.split(" ")``: no lower-casing, punctuation kept), and the
ranking ``numpy.argsort(scores)[::-1]`` (equal scores in the order that expression gives).
Its units are the turns the loader keeps: with the LongMemEval loader's defaults the user
turns, as LongMemEval indexes them. It exists so that the field's published anchor row is a
computation, not a quotation: scored by ``lme_recall_any@k`` (``memlab.eval.metrics.longmemeval``)
it is the number LongMemEval's own code prints for the same turns in the same order.

One difference stays, by memlab's data model: the replay feeds sessions in date order and
keeps a session listed twice once, while LongMemEval's corpus follows the file's order and
keeps both copies. Scores do not depend on order, so only equal scores can rank
differently, and the idf of the ten S dev questions with a repeated session differs.
``bench/bench_longmemeval.py`` records both figures side by side.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..base import Param
from ..filters import Where, filter_view, matches
from ..records import Hit, MemoryRecord
from ..strategy import Context, Strategy
from ..tokens import TokenCounter, TiktokenCounter


class FlatBM25Strategy(Strategy):
    """LongMemEval's flat-bm25 (module docstring): BM25Okapi over ``text.split(" ")``.

    ``context_k``: how many of the best turns the built context holds (in rank order);
    ``token_counter`` counts the context (memlab's default tiktoken counter when None).
    The index is rebuilt when asked after new turns (BM25Okapi has no incremental form:
    fine for one question per haystack, quadratic for many probes per dialogue).
    """

    constraints = {"context_k": Param(int, ge=1), "token_counter": Param(TokenCounter, none=True)}

    def __init__(self, context_k: int = 5, token_counter: TokenCounter | None = None):
        self.context_k = context_k
        self.token_counter = token_counter
        self._on_params_changed()

    def _on_params_changed(self) -> None:
        self._counter = self.token_counter if self.token_counter is not None else TiktokenCounter()
        self.reset()

    def reset(self) -> None:
        self._records: list[MemoryRecord] = []
        self._index: Any = None
        self._indexed = 0

    def observe(self, record: MemoryRecord) -> None:
        self._records.append(record)

    def store_size(self) -> int | None:
        return len(self._records)

    def _ranking(self, query: str) -> tuple[np.ndarray, np.ndarray]:
        from rank_bm25 import BM25Okapi

        if self._indexed != len(self._records):
            self._index = BM25Okapi([r.content.split(" ") for r in self._records])
            self._indexed = len(self._records)
        scores = self._index.get_scores(query.split(" "))
        return np.argsort(scores)[::-1], scores

    def retrieve(self, query: str, k: int = 5, *, where: Where | None = None,
                 now: float | None = None) -> list[Hit]:
        if k <= 0 or not self._records:  # BM25Okapi divides by the corpus size
            return []
        order, scores = self._ranking(query)
        hits: list[Hit] = []
        for i in order:
            record = self._records[int(i)]
            if where is not None and not matches(filter_view(record), where):
                continue
            hits.append(Hit(record, float(scores[i]), record.timestamp, rank=len(hits) + 1,
                            components={"bm25": float(scores[i])}))
            if len(hits) == k:
                break
        return hits

    def build_context(self, query: str, *, now: float | None = None) -> Context:
        return Context.of([h.memory_record for h in self.retrieve(query, self.context_k, now=now)], self._counter)
