"""Strategies over CAMEL-style agent memories: a chat window, and window + vector recall.

These are the strategies a keep_rate study compares. ``WindowStrategy`` has no ranking:
its "retrieval" is its window, newest first, scored ``keep_rate ** i``, and the query is
ignored. ``LongtermStrategy`` recalls by embedding similarity and lets history
(``keep_rate ** i``) and recalls (cosine similarity) compete for ``token_limit``.
"""

from __future__ import annotations

from typing import Any, Callable

from ..base import ConfigError
from ..capabilities import capabilities_of
from ..blocks.chat_history import ChatHistoryBlock
from ..blocks.vectordb import VectorDBBlock
from ..context import ScoreBasedContextCreator
from ..embeddings.base import Embedder
from ..memories.agent import ChatHistoryMemory, LongtermAgentMemory
from ..records import ContextRecord, Hit, MemoryRecord
from ..filters import Where, filter_view, matches
from ..retrieval.base import Retriever
from ..storage.vector import VectorStore
from ..tokens import TokenCounter
from ..strategy import Context, Strategy
from .history_budget import HistoryBudget, is_plain


def _hits(records: list[ContextRecord], k: int) -> list[Hit]:
    ranked = sorted(records, key=lambda c: -c.score)[:k]  # stable: ties keep memory order
    return [Hit(c.memory_record, float(c.score), c.memory_record.timestamp, rank=n,
                components={}) for n, c in enumerate(ranked, start=1)]


def _set_query_params(strategy: Strategy, params: dict[str, Any], apply: Callable[[], None]) -> None:
    """Validated assignment of query-time parameters, then ``apply`` (pushes them to the inner
    components); all or nothing, and no reset."""
    unknown = sorted(set(params) - strategy.query_time_params)
    if unknown:
        raise ConfigError(f"{type(strategy).__name__}.set_query_params: {unknown} are not query-time "
                          f"parameters; query-time: {sorted(strategy.query_time_params)}")
    old = {k: getattr(strategy, k) for k in params}
    try:
        for k, v in params.items():
            setattr(strategy, k, v)  # the Component's constraints check each value
        apply()  # the inner components check theirs
    except Exception:
        for k, v in old.items():
            object.__setattr__(strategy, k, v)
        apply()
        raise


def _context(creator: ScoreBasedContextCreator, records: list[ContextRecord]) -> Context:
    return Context.of([c.memory_record for c in creator.select(records)], creator.counter)


class WindowStrategy(Strategy):
    """The last ``window_size`` turns (all when None) within ``token_limit`` tokens.

    ``retrieve(query, k)`` returns the window newest first (the i-th newest scores
    ``keep_rate ** i``); it ignores the query, so its retrieval metrics measure what
    recency alone recalls.
    """

    def __init__(self, window_size: int | None = 10, keep_rate: float = 0.9, token_limit: int = 2048,
                 token_counter: TokenCounter | None = None):
        self.window_size = window_size
        self.keep_rate = keep_rate
        self.token_limit = token_limit
        self.token_counter = token_counter
        self._on_params_changed()

    def _on_params_changed(self) -> None:
        self._creator = ScoreBasedContextCreator(token_counter=self.token_counter,
                                                 token_limit=self.token_limit)
        self._memory = ChatHistoryMemory(context_creator=self._creator,
                                         window_size=self.window_size, keep_rate=self.keep_rate)

    #: Parameters read only when asked (scores and the context budget), never by ``observe``;
    #: asking changes no state. A sweep over them observes each dialogue once
    #: (``memlab.eval.sweep``), switching them with ``set_query_params``.
    query_time_params = frozenset({"keep_rate", "token_limit"})

    def set_query_params(self, **params: float | int) -> None:
        """Set query-time parameters (``query_time_params``) keeping what was observed."""
        def apply() -> None:
            self._creator.set_params(token_limit=self.token_limit)
            self._memory.set_params(keep_rate=self.keep_rate)  # same storage: rescoring only

        _set_query_params(self, params, apply)

    def reset(self) -> None:
        self._on_params_changed()

    def observe(self, record: MemoryRecord) -> None:
        self._memory.write_record(record)

    def _window(self) -> list[ContextRecord]:
        # the block's window, without the truncation warning the memory gives a chat agent
        return self._memory.block.retrieve(self.window_size)

    def retrieve(self, query: str, k: int = 5, *, where: Where | None = None,
                 now: float | None = None) -> list[Hit]:
        if k <= 0:
            return []
        window = [c for c in self._window() if matches(filter_view(c.memory_record), where)]
        return _hits(window[::-1], k)  # newest first, also among equal scores (keep_rate 1)

    def build_context(self, query: str, *, now: float | None = None) -> Context:
        return _context(self._creator, self._window())

    def store_size(self) -> int:
        """Records in the chat history (all observed turns: the window only limits what is shown)."""
        return len(self._memory.block)


class LongtermStrategy(Strategy):
    """CAMEL's LongtermAgentMemory under a token budget: history plus vector recalls.

    ``build_context(query)`` packs ``history[:1] + recalls + history[1:]`` (see
    ``LongtermAgentMemory``) into ``token_limit`` tokens, history scored ``keep_rate ** i``
    and recalls by cosine similarity, so keep_rate sets how recent turns trade against
    relevant old ones. ``retrieve(query, k)`` is the vector recall alone, ranked.

    A ``vector_store`` handed in is used as given: vectors already in it are recalled too,
    and ``reset`` deletes only those of the turns this strategy wrote (never the rest).

    With a ``retriever`` (any ``Retriever``; the ``longterm`` built-in gives it the
    contextual hybrid of ``hybrid_plus``) the recalls come from it instead of the vector
    block, which then stores nothing (``embedder`` and ``vector_store`` are unused). The
    shape stays CAMEL's: ``retrieve`` is the recall ranked by the retriever's scores, and in
    ``build_context`` recall ``i`` of a search scores ``s_i / s_1`` (its score over the
    best one's, so the best recall scores 1.0 like a perfect cosine) against history's
    ``keep_rate ** j``; the newest user turn (the message being answered) never recalls
    itself, and a recalled history record keeps one entry with the higher score.
    """

    def __init__(self, keep_rate: float = 0.9, window_size: int | None = None, retrieve_limit: int = 3,
                 token_limit: int = 512, embedder: Embedder | None = None,
                 vector_store: VectorStore | None = None, token_counter: TokenCounter | None = None,
                 retriever: Retriever | None = None):
        self.keep_rate = keep_rate
        self.window_size = window_size
        self.retrieve_limit = retrieve_limit
        self.token_limit = token_limit
        self.embedder = embedder
        self.vector_store = vector_store
        self.token_counter = token_counter
        self.retriever = retriever
        self._on_params_changed()

    def _on_params_changed(self) -> None:
        self._creator = ScoreBasedContextCreator(token_counter=self.token_counter,
                                                 token_limit=self.token_limit)
        store = self.vector_store
        if store is not None:
            store.delete(getattr(self, "_written", []))
        self._written: list[str] = []
        self._memory = LongtermAgentMemory(
            context_creator=self._creator,
            chat_history_block=ChatHistoryBlock(keep_rate=self.keep_rate),
            vector_db_block=VectorDBBlock(storage=store, embedding=self.embedder),
            retrieve_limit=self.retrieve_limit, window_size=self.window_size)
        if self.retriever is not None:
            self.retriever.reset()
        self._budget = HistoryBudget(self._creator.counter)
        self._ids: set[str] = set()
        self._plain = True   # every record plain, ids unique, timestamps in order: see _fast_context
        self._last_time = float("-inf")
        self._version = 0
        self._position_index: dict[str, int] = {}
        self._recall_memo: tuple[tuple[str, int], int, list[ContextRecord]] | None = None
        self._retrieve_memo: tuple[tuple[str, int, int], list[Hit]] | None = None

    #: As ``WindowStrategy.query_time_params``: keep_rate and token_limit only score and pack
    #: the history when a context is built; the recall search does not read them.
    query_time_params = frozenset({"keep_rate", "token_limit"})
    #: ...so a sweep over them searches once per probe (``replay_dialogue`` shares the ranked
    #: list; tests/eval/test_sweep_context_only.py holds the tables equal to separate replays)
    context_only_params = frozenset({"keep_rate", "token_limit"})

    def set_query_params(self, **params: float | int) -> None:
        """Set query-time parameters (``query_time_params``) keeping what was observed."""
        def apply() -> None:
            self._creator.set_params(token_limit=self.token_limit)
            self._memory.set_params(chat_history_block__keep_rate=self.keep_rate)  # rescoring only

        _set_query_params(self, params, apply)

    def reset(self) -> None:
        self._on_params_changed()

    def observe(self, record: MemoryRecord) -> None:
        if self.retriever is None:
            self._memory.write_record(record)
            self._written.append(record.id)
        else:  # the retriever is the recall index: the vector block stays empty
            self._memory.history_block.write_records([record])
            self.retriever.add([record])
        self._version += 1
        if self._plain:
            self._plain = (is_plain(record) and record.id not in self._ids
                           and record.timestamp >= self._last_time)
            self._ids.add(record.id)
            self._last_time = record.timestamp

    def _recall(self, query: str, limit: int) -> list[ContextRecord]:
        """The ``limit`` most similar records, best first; retrieve and build_context share one search.

        An exact store (the numpy one) ranks stably (ties by insertion order), so the best ``limit``
        are the first ``limit`` of any longer list searched at the same state.
        """
        key = (query, self._version)
        memo = self._recall_memo
        if memo is not None and memo[0] == key and (memo[1] == limit or (
                memo[1] > limit and capabilities_of(self._memory.vector_block.store).exact_search)):
            return memo[2][:limit]
        found = self._search(query, limit)
        self._recall_memo = (key, limit, found)
        return found

    def _search(self, query: str, limit: int, where: Where | None = None) -> list[ContextRecord]:
        if self.retriever is None:
            return self._memory.vector_block.retrieve(query, limit=limit, where=where)
        hits = self.retriever.search(query, limit, where=where)
        best = hits[0].score if hits and hits[0].score > 0 else 1.0
        return [ContextRecord(memory_record=h.record, score=float(h.score) / best, timestamp=h.timestamp) for h in hits]

    def retrieve(self, query: str, k: int = 5, *, where: Where | None = None,
                 now: float | None = None) -> list[Hit]:
        if k <= 0 or not query.strip():
            return []
        if self.retriever is not None:
            if where is not None:
                return self.retriever.search(query, k, where=where)
            # the same search at the same state gives the same hits: asked again (a sweep's
            # query-time variants at one probe) it is answered from the last one
            key = (query, k, self._version)
            memo = self._retrieve_memo
            if memo is None or memo[0] != key:
                memo = self._retrieve_memo = (key, self.retriever.search(query, k))
            return list(memo[1])
        if where is not None:
            return _hits(self._memory.vector_block.retrieve(query, limit=k, where=where), k)
        return _hits(self._recall(query, k), k)

    def build_context(self, query: str, *, now: float | None = None) -> Context:
        # the fast path needs the strategy's own (numpy) store, holding only observed records
        if query.strip() and self.window_size is None and self._plain and self.vector_store is None:
            return self._fast_context(query)
        if self.retriever is not None:
            return _context(self._creator, self._retriever_context(query))
        records = self._memory.retrieve(query) if query.strip() else self._memory.history_block.retrieve(
            self.window_size)
        return _context(self._creator, records)

    def _retriever_context(self, query: str) -> list[ContextRecord]:
        """``history[:1] + recalls + history[1:]`` as ``LongtermAgentMemory.retrieve`` builds it."""
        import dataclasses

        history = self._memory.history_block.retrieve(self.window_size)
        if not query.strip() or not self.retrieve_limit:
            return history
        position = {r.id: n for n, r in enumerate(history)}
        candidates = self._search(query, self.retrieve_limit + len(position))
        for cand in candidates[:self.retrieve_limit]:
            n = position.get(cand.id)
            if n is not None and cand.score > history[n].score:
                history[n] = dataclasses.replace(history[n], score=cand.score)
        recalls = [c for c in candidates if c.id not in position][:self.retrieve_limit]
        return history[:1] + recalls + history[1:]

    def _fast_context(self, query: str) -> Context:
        """``build_context`` for the whole history without reading all of it (same result).

        With ``window_size=None`` the memory's history is every record, so its recalls
        only raise the scores of the ``retrieve_limit`` most similar records (each is in
        the history); ``HistoryBudget`` then packs the history as the context creator
        would, walking it from the newest end. With a ``retriever`` the recalls are its best
        ``retrieve_limit`` hits: the general path's deeper search gives the same ones for
        an exact retriever, but a fusing one (hybrid) may rank a deeper search differently.
        """
        history = self._memory.history_block.view()
        raised: dict[int, float] = {}
        if self.retrieve_limit:
            n = len(history)
            for cand in self._recall(query, self.retrieve_limit):
                j = self._position(history, cand.id)
                if cand.score > float(self.keep_rate ** (n - 1 - j)):
                    raised[j] = cand.score
        kept = self._budget.select(history, self.keep_rate, self.token_limit, raised)
        return Context.of([history[j] for j in kept], self._creator.counter)

    def _position(self, history: list[MemoryRecord], id: str) -> int:
        index = self._position_index
        for j in range(len(index), len(history)):  # extended as the history grows
            index[history[j].id] = j
        return index[id]

    def store_size(self) -> int:
        """Records in the chat history plus records in the recall index (vector block or retriever)."""
        index = len(self.retriever) if self.retriever is not None else len(self._memory.vector_block)
        return len(self._memory.history_block) + index

