"""Query expansion: turn one query into several, search each, fuse the results.

The interface is deliberately small so that LLM expanders (multi-query, HyDE) plug in:

    class MyExpander(QueryExpander):
        def expand(self, query, retriever, *, where=None, now=None) -> list[str]:
            return [query, *rewrites]           # the original query first

``retriever`` is what the expander may search (pseudo-relevance feedback does; an LLM
rewriter may ignore it). ``ExpansionRetriever`` searches every returned query and fuses
the ranked lists (RRF by default). Fusion weight i belongs to query i (the original
query is query 0). An expander may return fewer queries than there are weights (pseudo-
relevance feedback returns just the query when nothing matches): the first n weights
are used for n queries. More queries than weights is an error at search time.
"""

from __future__ import annotations

import copy
from abc import abstractmethod
from collections import Counter
from collections.abc import Sequence

from ..base import Component, ConfigError, Param
from ..records import Hit, MemoryRecord
from .base import CANDIDATES, Retriever, WrapperRetriever
from ..filters import Where
from .fusion import RRF, Fusion
from .tokenize import Tokenizer


class QueryExpander(Component):
    """Makes the queries to search for one user query."""

    @abstractmethod
    def expand(self, query: str, retriever: Retriever, *, where: Where | None = None,
               now: float | None = None) -> list[str]:
        """Queries to search, the original ``query`` first."""

    async def aexpand(self, query: str, retriever: Retriever, *, where: Where | None = None,
                      now: float | None = None) -> list[str]:
        """``expand`` for async callers; expanders that do I/O (an LLM) override it."""
        return self.expand(query, retriever, where=where, now=now)


class PseudoRelevanceFeedback(QueryExpander):
    """RM3-style pseudo-relevance feedback, no LLM.

    Search ``query`` for the top ``fb_docs`` hits H (same ``where``/``now``). With tokens
    from ``tokenizer`` (default: lower-cased words without English stop words):

    - document weight: w_d = max(s_d, 0) / sum over H of max(s, 0), or 1/|H| for every
      document when that sum is 0 (s_d is the hit's score);
    - feedback model: P_fb(t) = sum over d in H of w_d * tf(t, d) / |d| (|d| > 0);
    - query model: P_q(t) = tf(t, query) / |query|;
    - RM3 interpolation: P(t) = original_weight * P_q(t) + (1 - original_weight) * P_fb(t).

    The expanded query is the ``fb_terms`` terms with the highest P(t) (ties: the term
    seen first, reading the query, then the hits in rank order) joined by spaces, best
    first; it includes original terms when they rank. Returns ``[query, expanded]``, or
    just ``[query]`` when there is no hit, no term, or the expansion equals the query.
    """

    constraints = {
        "fb_docs": Param(int, ge=1),
        "fb_terms": Param(int, ge=1),
        "original_weight": Param(float, ge=0, le=1),
    }

    def __init__(self, fb_docs: int = 3, fb_terms: int = 10, original_weight: float = 0.5,
                 tokenizer: Tokenizer | None = None):
        self.fb_docs = fb_docs
        self.fb_terms = fb_terms
        self.original_weight = original_weight
        self.tokenizer = tokenizer
        self._on_params_changed()

    def _on_params_changed(self) -> None:
        self._tokenizer = self._resolve("tokenizer", lambda: Tokenizer(stopwords="english"))

    def term_weights(self, query: str, hits: list[Hit]) -> dict[str, float]:
        """P(t) for every term of the query and the feedback hits, in first-seen order."""
        q_tokens = self._tokenizer(query)
        weights: dict[str, float] = {}
        lam = float(self.original_weight)
        for term, tf in Counter(q_tokens).items():
            weights[term] = lam * tf / len(q_tokens)
        positive = [max(h.score, 0.0) for h in hits]
        total = sum(positive)
        doc_w = [p / total for p in positive] if total > 0 else [1.0 / len(hits)] * len(hits)
        for h, wd in zip(hits, doc_w):
            tokens = self._tokenizer(h.record.content)
            if not tokens:
                continue
            for term, tf in Counter(tokens).items():
                weights[term] = weights.get(term, 0.0) + (1 - lam) * wd * tf / len(tokens)
        return weights

    def expand(self, query: str, retriever: Retriever, *, where: Where | None = None,
               now: float | None = None) -> list[str]:
        hits = retriever.search(query, self.fb_docs, where=where, now=now)
        if not hits:
            return [query]
        weights = self.term_weights(query, hits)
        # sorted() is stable: ties keep first-seen order
        best = sorted(weights.items(), key=lambda p: -p[1])[:self.fb_terms]
        expanded = " ".join(t for t, w in best if w > 0)
        if not expanded or expanded == " ".join(self._tokenizer(query)):
            return [query]
        return [query, expanded]


def fuse_queries(per_query: Sequence[Sequence[Hit]], fusion: Fusion,
                 expander: object = None) -> list[tuple[str, float]]:
    """Fuse one ranked hit list per query (query 0 is the original) with ``fusion``.

    Fusion weight i belongs to query i: with n queries the first n of ``fusion.weights``
    apply (None: equal weights); more queries than weights is a ConfigError naming the
    ``expander``. Returns (id, fused score), best first as ``fusion`` orders them. The one
    implementation of multi-query fusion (``ExpansionRetriever``, the layered memory's
    ``Retrieve`` step).
    """
    weights = getattr(fusion, "weights", None)
    if weights is not None:
        weights = list(weights)
        if len(per_query) > len(weights):
            raise ConfigError(
                f"{type(expander).__name__} returned {len(per_query)} queries but "
                f"{type(fusion).__name__} weights={weights!r} has only {len(weights)} "
                f"entries; give one weight per query (the original query first)")
        weights = weights[:len(per_query)]
    return fusion.fuse([[(h.id, h.score) for h in hits] for hits in per_query], weights)


def query_components(ids: Sequence[str], per_query: Sequence[Sequence[Hit]]) -> list[dict[str, dict[str, float]]]:
    """For each id, ``{"query_i": {"score", "rank"}}`` from every query list that found it."""
    by_query = [{h.id: h for h in hits} for hits in per_query]
    return [{f"query_{q}": {"score": found[i].score, "rank": found[i].rank}
             for q, found in enumerate(by_query) if i in found} for i in ids]


class ExpansionRetriever(WrapperRetriever):
    """Searches every query from ``expander`` on ``retriever`` and fuses the lists.

    Each query asks for ``max(k, candidates)`` hits; the fused list (``fusion``, default
    ``RRF()``) is re-sorted with ties by insertion order. ``hit.components`` holds
    ``query_0`` (the original query), ``query_1``... with the score and rank each query's
    search gave, plus ``expansion`` with the fused score and rank. With n queries the
    first n of ``fusion.weights`` apply (see the module docstring). Put a reinforcing
    ``DecayRetriever`` outside this wrapper, not inside: feedback searches would
    reinforce what they read.

    A query is expanded once while the index is unchanged: the expansion of the last
    (query, where, now) is kept until a record is added or removed, so searching it again,
    deeper or after a reinforcement moved the scores above, asks the expander (an LLM's
    one call per query) for nothing and gets the same queries.
    """

    name = "expansion"

    constraints = {"expander": Param(QueryExpander), "fusion": Param(Fusion, none=True),
                   "candidates": CANDIDATES}

    def __init__(self, retriever: Retriever, expander: QueryExpander, fusion: Fusion | None = None,
                 candidates: int = 50):
        super().__init__()
        self.retriever = retriever
        self.expander = expander
        self.fusion = fusion
        self.candidates = candidates
        self._on_params_changed()

    def _on_params_changed(self) -> None:
        self._fusion = self._resolve("fusion", lambda: RRF())
        self._expanded: tuple[tuple, list[str]] | None = None
        self._sync([self.retriever])

    # an expansion may read the index (pseudo-relevance feedback): any change forgets the last one
    def _add(self, records: list[MemoryRecord]) -> None:
        self._expanded = None
        super()._add(records)

    def _remove(self, ids: list[str]) -> None:
        self._expanded = None
        super()._remove(ids)

    def _clear(self) -> None:
        self._expanded = None
        super()._clear()

    def queries(self, query: str, *, where: Where | None = None, now: float | None = None) -> list[str]:
        """The expanded queries (original first, as the expander returns them); the last
        query's are reused while the index is unchanged (see the class docstring)."""
        key = (query, copy.deepcopy(where), now)
        if self._expanded is not None and self._expanded[0] == key:
            return list(self._expanded[1])
        queries = list(self.expander.expand(query, self.retriever, where=where, now=now))
        if not queries or queries[0] != query:
            raise ConfigError(f"{type(self.expander).__name__}.expand must return the original "
                              f"query first, got {queries[:1]!r}")
        self._expanded = (key, list(queries))
        return queries

    def search(self, query: str, k: int = 5, *, where: Where | None = None,
               now: float | None = None) -> list[Hit]:
        k = self._check_search(k, where)
        if k == 0 or not self._records or not query.strip():
            return []
        queries = self.queries(query, where=where, now=now)
        n = max(k, self.candidates)
        per_query = [self.retriever.search(q, n, where=where, now=now) for q in queries]
        ranked = self._order(fuse_queries(per_query, self._fusion, self.expander))[:k]
        return self._hits(ranked, query_components([i for i, _ in ranked], per_query))
