"""The retrieve step: search long-term memory (rewrite, expansion, fusion)."""

from __future__ import annotations

from typing import Any, Generator

from ....base import ConfigError, Param
from ....llm.base import Op, adrive, drive
from ....records import Hit
from ....retrieval.base import Retriever
from ....retrieval.expansion import QueryExpander, fuse_queries, query_components
from ....retrieval.fusion import RRF, Fusion
from ....retrieval.llm_expansion import LLMQueryRewriter
from ..keyed_index import KeyedIndex
from ..long_term import LongTermRetriever
from .state import Layers, Step, WorkingState


class Retrieve(Step):
    """Search long-term memory: optional rewrite, optional expansion, fusion of the queries.

    The question (rewritten by ``query_rewriter`` with the short-term turns, if given) is
    expanded by ``expander`` (any ``QueryExpander``; its first query is the input) and
    every query searches long-term memory ``max(k, candidates)`` deep without reinforcing;
    several lists are fused with ``fusion`` (``RRF()`` by default). The best ``k`` are
    kept. Skipped, with no LLM call, when long-term memory holds nothing.

    With a ``retriever`` (e.g. the ``bm25_plus`` or ``hybrid_plus`` retriever), queries
    search it instead of ``LongTermMemory.search``: it indexes the active memories under
    fact-augmented keys (``KeyedIndex``: a turn kept as an event is indexed with the facts
    extracted from it, and returned alone), kept in step before every search. Its scores
    are the retriever's; long-term decay does not apply to them.
    """

    constraints = {
        "query_rewriter": Param(LLMQueryRewriter, none=True),
        "expander": Param(QueryExpander, none=True),
        "k": Param(int, ge=1),
        "candidates": Param(int, ge=1),
        "fusion": Param(Fusion, none=True),
        "retriever": Param(Retriever, none=True),
    }

    def __init__(self, query_rewriter: LLMQueryRewriter | None = None,
                 expander: QueryExpander | None = None, k: int = 10, candidates: int = 20,
                 fusion: Fusion | None = None, retriever: Retriever | None = None):
        self.query_rewriter = query_rewriter
        self.expander = expander
        self.k = k
        self.candidates = candidates
        self.fusion = fusion
        self.retriever = retriever
        self._on_params_changed()

    def _on_params_changed(self) -> None:
        self._fusion = self.fusion if self.fusion is not None else RRF()
        self._index = KeyedIndex(self.retriever) if self.retriever is not None else None

    @property
    def index(self) -> KeyedIndex | None:
        """The fact-augmented index searched when ``retriever`` is set (else None)."""
        return self._index

    def _search_one(self, query: str, depth: int, state: WorkingState, layers: Layers) -> list[Hit]:
        if self._index is not None:
            return self._index.search(layers.long_term, query, depth, where=state.where, now=state.now)
        return layers.long_term.search(query, depth, where=state.where, now=state.now, reinforce="none")

    def _parts(self) -> list[Any]:
        return [self.query_rewriter, self.expander]

    def _skip(self, state: WorkingState, layers: Layers) -> bool:
        if layers.long_term.count("active") == 0:
            state.retrieved, state.queries, state.query = [], [], state.question
            state.trace.append("retrieve: skipped (long-term memory empty)")
            return True
        return False

    def _search(self, state: WorkingState, layers: Layers) -> None:
        if not state.queries or state.queries[0] != state.query:
            raise ConfigError(f"{type(self.expander).__name__}.expand must return the query first, "
                              f"got {state.queries[:1]!r}")
        k = state.k if state.k is not None else self.k
        depth = max(k, self.candidates)
        lists = [self._search_one(q, depth, state, layers) for q in state.queries]
        if len(lists) == 1:
            state.retrieved = lists[0][:k]
        else:
            by_id: dict[str, Hit] = {}
            for hits in lists:
                for h in hits:
                    by_id.setdefault(h.id, h)
            fused = fuse_queries(lists, self._fusion, self.expander)[:k]
            state.retrieved = []
            for rank, ((i, score), comps) in enumerate(
                    zip(fused, query_components([i for i, _ in fused], lists)), 1):
                h = by_id[i]
                comps["fusion"] = {"score": float(score), "rank": rank}
                state.retrieved.append(Hit(memory_record=h.record, score=float(score),
                                           timestamp=h.timestamp, rank=rank, components=comps))
        state.trace.append(f"retrieve: {len(state.queries)} quer{'y' if len(state.queries) == 1 else 'ies'}, "
                           f"{len(state.retrieved)} hit(s)")

    def _program(self, state: WorkingState, layers: Layers) -> Generator[Op, Any, WorkingState]:
        if self._skip(state, layers):
            return state
        history = layers.short_term.turns
        rewriter, expander = self.query_rewriter, self.expander
        state.query = ((yield Op(rewriter.rewrite, rewriter.arewrite, state.question, history))
                       if rewriter is not None else state.question)
        state.queries = ((yield Op(expander.expand, expander.aexpand, state.query,
                                   LongTermRetriever(layers.long_term), where=state.where, now=state.now))
                         if expander is not None else [state.query])
        self._search(state, layers)
        return state

    def run(self, state: WorkingState, layers: Layers) -> WorkingState:
        return drive(self._program(state, layers))

    def search_again(self, state: WorkingState, layers: Layers) -> WorkingState:
        """``run`` for a state whose ``query`` and ``queries`` an earlier run made for the same
        question on the same memory: the search only, no rewrite, no expansion (no LLM call).
        ``LayeredMemory`` asks it for another depth of a query it has already retrieved."""
        if not self._skip(state, layers):
            self._search(state, layers)
        return state

    async def arun(self, state: WorkingState, layers: Layers) -> WorkingState:
        return await adrive(self._program(state, layers))
