"""LayeredMemory: short-term, long-term and working memory as one evaluable strategy."""

from __future__ import annotations

import json
from typing import Any, Generator

from ...base import Param
from ...llm.base import LLM, LLMUsage, Op, adrive, drive, sum_usage
from ...records import Hit, MemoryRecord
from ...filters import Where, validate_where
from ...strategy import Context, Strategy
from ...extraction import Extractor, LLMExtractor, RuleBasedExtractor
from .long_term import LongTermMemory
from .short_term import ShortTermMemory
from ...summarizers import LLMSummarizer
from ...retrieval.llm_filter import LLMRelevanceFilter
from .steps.answer import Answer
from .steps.filter import Filter
from .steps.load import Load
from .steps.retrieve import Retrieve
from .steps.state import Layers, WorkingState
from .steps.update import Update


class LayeredMemory(Strategy):
    """The seed's three layers, replayable by the evaluation harness.

    - ``observe(turn)``: ``update_step`` appends it to ``short_term`` (which folds old turns
      into a running summary), archives folded chunks in ``long_term`` as event
      summaries, and every ``update_step.extract_every`` turns runs ``extractor`` and stores
      the typed memories it finds (conflicts and duplicates handled by long-term memory).
    - ``retrieve(query, k)``: ``retrieve_step`` over long-term memory (after
      extracting any buffered turns when ``flush_on_retrieve``); memories do not get
      reinforced by it. Each hit is a long-term memory whose
      ``metadata["source_ids"]`` names the dialogue turns it came from.
    - ``build_context(query)``: retrieve -> ``filter_step`` -> ``load_step``; the context is
      what the memory contributes (the selected memories, the short-term summary and turns,
      and a system prompt only when ``Load(system_prompt=...)`` sets one), never the
      question, like every strategy's (``memlab.strategy.Context``). The selected
      memories are reinforced (recalled at ``now``).
    - ``respond(message)``: the full agent loop: build the context, ``answer_step`` (if
      configured) on the agent prompt (``last_state.messages``: system prompt, context,
      the message), then ``update_step`` with the message and the answer.

    Defaults are offline: ``ShortTermMemory()`` (extractive summaries),
    ``LongTermMemory()`` (in memory, hashing embedder, no decay), ``RuleBasedExtractor()``,
    ``Retrieve()``, ``Filter()``, ``Load()``, ``Update()``, no answer step. With ``llm``,
    the parts left as None use it instead: ``LLMSummarizer(llm)`` in the short-term
    memory, ``LLMExtractor(llm, on_failure="skip")`` and
    ``Filter(llm_filter=LLMRelevanceFilter(llm))``. ``user_id`` is written on every memory
    and, when set, restricts retrieval to it; ``where`` is a further long-term filter.
    ``reset()`` removes from a ``long_term`` handed in only the memories it wrote (data
    already there stays); ``clone()`` gets a long-term memory of its own (see
    ``LongTermMemory.clone``). Retrieval results are memoised per (query, k, where, now)
    until the memory changes, so ``retrieve`` followed by ``build_context`` searches once;
    the query's rewrite and expansions (LLM calls) are kept per (query, where, now) until
    the memory changes, so a search of the same query at another depth makes no LLM call.
    Inside ``peek()`` (``Strategy.peek``) ``retrieve`` runs no extraction of buffered turns
    and leaves the memo alone; retrieval never reinforces, so nothing else moves.
    """

    honours_peek = True

    constraints = {
        "short_term": Param(ShortTermMemory, none=True),
        "long_term": Param(LongTermMemory, none=True),
        "extractor": Param(Extractor, none=True),
        "retrieve_step": Param(Retrieve, none=True),
        "filter_step": Param(Filter, none=True),
        "load_step": Param(Load, none=True),
        "answer_step": Param(Answer, none=True),
        "update_step": Param(Update, none=True),
        "llm": Param(LLM, none=True, expected="an LLM (OpenAIChat, OfflineLLM) or None"),
        "user_id": Param(str),
        "flush_on_retrieve": Param(bool),
    }

    def __init__(self, short_term: ShortTermMemory | None = None, long_term: LongTermMemory | None = None,
                 extractor: Extractor | None = None, retrieve_step: Retrieve | None = None,
                 filter_step: Filter | None = None, load_step: Load | None = None,
                 answer_step: Answer | None = None, update_step: Update | None = None,
                 llm: LLM | None = None, user_id: str = "", where: Where | None = None,
                 flush_on_retrieve: bool = True):
        self.short_term = short_term
        self.long_term = long_term
        self.extractor = extractor
        self.retrieve_step = retrieve_step
        self.filter_step = filter_step
        self.load_step = load_step
        self.answer_step = answer_step
        self.update_step = update_step
        self.llm = llm
        self.user_id = user_id
        self.where = where
        self.flush_on_retrieve = flush_on_retrieve
        self._on_params_changed()

    def _on_params_changed(self) -> None:
        validate_where(self.where)
        llm = self.llm
        # (``is None`` tests, not ``or``: an empty memory is falsy)
        self._short = self.short_term if self.short_term is not None else (
            ShortTermMemory(summarizer=LLMSummarizer(llm)) if llm is not None else ShortTermMemory())
        self._long = self.long_term if self.long_term is not None else LongTermMemory()
        self._handed_in = {r.id for r in self.long_term.records()} if self.long_term is not None else set()
        self._extractor = self.extractor if self.extractor is not None else (
            LLMExtractor(llm, on_failure="skip") if llm is not None else RuleBasedExtractor())
        self._retrieve = self.retrieve_step if self.retrieve_step is not None else Retrieve()
        self._filter = self.filter_step if self.filter_step is not None else (
            Filter(llm_filter=LLMRelevanceFilter(llm)) if llm is not None else Filter())
        self._load = self.load_step if self.load_step is not None else Load()
        self._answer = self.answer_step
        self._update = self.update_step if self.update_step is not None else Update()
        self._layers = Layers(self._short, self._long, self._extractor, str(self.user_id or ""))
        self._clear_state()

    def _clear_state(self) -> None:
        self._memo: tuple[Any, WorkingState] | None = None
        self._products: tuple[Any, str, list[str]] | None = None  # the last query's rewrite, expansions
        self._version = 0
        self._newest: float | None = None
        self._last_state: WorkingState | None = None
        self._stats = {"probes": 0, "retrieved": 0, "selected": 0}

    # -- Strategy interface ------------------------------------------------------------------
    def reset(self) -> None:
        self._short.clear()
        if self.long_term is None:
            self._long.clear()  # its own memory: everything in it came from this strategy
        else:
            # a memory handed in may hold its owner's data: remove only what was written since
            self._long.delete([r.id for r in self._long.records() if r.id not in self._handed_in])
        self._update.reset_state()
        for part in self._usage_parts():
            part.reset_usage()
        self._clear_state()

    # Each operation is written once, as a program of Ops (see memlab.llm.base.Op), and run
    # with blocking calls by the plain method or awaited by its ``a``-prefixed twin.
    def _observe(self, record: MemoryRecord) -> Generator[Op, Any, None]:
        self._seen(record)
        yield Op(self._update.observe, self._update.aobserve, record, self._layers)

    def observe(self, record: MemoryRecord) -> None:
        drive(self._observe(record))

    async def aobserve(self, record: MemoryRecord) -> None:
        await adrive(self._observe(record))

    def _retrieval(self, query: str, k: int, where: Where | None, now: float | None
                   ) -> Generator[Op, Any, WorkingState]:
        """The retrieve step's state for ``query`` at depth ``max(k, retrieve_step.k)``."""
        if self.flush_on_retrieve and self._update.pending and not self.peeking:
            yield Op(self._update.flush, self._update.aflush, self._layers)
            self._version += 1
        key, state = self._new_state(query, k, where, now)
        if self._memo is not None and self._memo[0] == key:
            return self._memo[1]
        asked = key[:1] + key[2:]  # the key but the depth: what the rewrite and expansions depend on
        known = self._products
        if known is not None and known[0] == asked and known[2]:  # (none: the memory was empty)
            state.query, state.queries = known[1], list(known[2])
            done = self._retrieve.search_again(state, self._layers)
        else:
            done = yield Op(self._retrieve.run, self._retrieve.arun, state, self._layers)
            self._products = (asked, done.query, list(done.queries))
        if not self.peeking:  # a peek's deeper search must not displace the probe's own
            self._memo = (key, done)
        return done

    def _retrieved(self, query: str, k: int, where: Where | None, now: float | None
                   ) -> Generator[Op, Any, list[Hit]]:
        return (yield from self._retrieval(query, k, where, now)).retrieved[:k]

    def retrieve(self, query: str, k: int = 5, *, where: Where | None = None,
                 now: float | None = None) -> list[Hit]:
        return drive(self._retrieved(query, k, where, now))

    async def aretrieve(self, query: str, k: int = 5, *, where: Where | None = None,
                        now: float | None = None) -> list[Hit]:
        return await adrive(self._retrieved(query, k, where, now))

    def hit_tokens(self, hits: list[Hit]) -> list[int]:
        """Tokens of each hit as its line of the memory message (``Load.line_tokens``)."""
        return [self._load.line_tokens(h) for h in hits]

    def _context(self, query: str, now: float | None) -> Generator[Op, Any, Context]:
        state = self._prepare(query, now)
        self._copy_retrieval(state, (yield from self._retrieval(query, self._retrieve.k, None, now)))
        yield Op(self._filter.run, self._filter.arun, state, self._layers)
        self._load.run(state, self._layers)
        return self._finish(state).context  # type: ignore[return-value]

    def build_context(self, query: str, *, now: float | None = None) -> Context:
        return drive(self._context(query, now))

    async def abuild_context(self, query: str, *, now: float | None = None) -> Context:
        return await adrive(self._context(query, now))

    def _respond(self, message: str, now: float | None) -> Generator[Op, Any, WorkingState]:
        yield from self._context(message, now)
        state = self._last_state
        assert state is not None
        if self._answer is not None:
            yield Op(self._answer.run, self._answer.arun, state, self._layers)
        state.now = self._now(now)
        yield Op(self._update.run, self._update.arun, state, self._layers)
        self._version += 1
        return state

    def respond(self, message: str, *, now: float | None = None) -> WorkingState:
        """One agent turn: build the context, answer (if ``answer`` is set), update memory."""
        return drive(self._respond(message, now))

    async def arespond(self, message: str, *, now: float | None = None) -> WorkingState:
        return await adrive(self._respond(message, now))

    def store_size(self) -> int:
        """Active long-term memories plus short-term records (the summary, if any, and kept turns)."""
        return self._long.count("active") + len(self._short.records())

    def llm_usage(self) -> dict[str, int]:
        """Tokens spent by the summariser, extractor, rewriter/expander, filter and answer step."""
        return sum_usage([p.usage for p in self._usage_parts()]).as_dict()

    @property
    def steps(self) -> dict[str, Any]:
        """The parts in use (given or default), by name."""
        return {"short_term": self._short, "long_term": self._long, "extractor": self._extractor,
                "retrieve": self._retrieve, "filter": self._filter, "load": self._load,
                "answer": self._answer, "update": self._update}

    def usage_by_step(self) -> dict[str, dict[str, int]]:
        return {"summarize": self._short.usage.as_dict(), "extract": self._extractor.usage.as_dict(),
                "retrieve": self._retrieve.usage.as_dict(), "filter": self._filter.usage.as_dict(),
                "update": self._update.usage.as_dict(),
                "answer": (self._answer.usage if self._answer is not None else LLMUsage()).as_dict()}

    # -- inspection ----------------------------------------------------------------------------
    @property
    def layers(self) -> Layers:
        return self._layers

    @property
    def last_state(self) -> WorkingState | None:
        """The WorkingState of the last build_context / respond (its ``trace`` says what ran)."""
        return self._last_state

    def monitoring(self) -> dict[str, float]:
        """The seed's monitoring figures: how much was retrieved and how much the filter kept."""
        s = self._stats
        return {**s, "selected_ratio": (s["selected"] / s["retrieved"]) if s["retrieved"] else float("nan"),
                "long_term_active": self._long.count("active"),
                "long_term_outdated": self._long.count("outdated"), "short_term_folds": self._short.folds}

    # -- helpers --------------------------------------------------------------------------------
    def _usage_parts(self) -> list[Any]:
        parts: list[Any] = [self._short.resolved_summarizer, self._extractor, self._retrieve, self._filter,
                            self._update]  # a LifecycleUpdate's merger and abstractor
        if self._answer is not None:
            parts.append(self._answer)
        return parts

    def _seen(self, record: MemoryRecord) -> None:
        self._newest = record.timestamp if self._newest is None else max(self._newest, record.timestamp)
        self._version += 1

    def _now(self, now: float | None) -> float | None:
        return float(now) if now is not None else self._newest

    def _where(self, where: Where | None) -> Where | None:
        validate_where(where)
        parts = [w for w in ({"user_id": self.user_id} if self.user_id else None, self.where, where) if w]
        if not parts:
            return None
        return parts[0] if len(parts) == 1 else {"$and": list(parts)}

    def _new_state(self, query: str, k: int, where: Where | None, now: float | None) -> tuple[Any, WorkingState]:
        depth = max(int(k), self._retrieve.k)
        full_where = self._where(where)
        t = self._now(now)
        key = (query, depth, json.dumps(full_where, sort_keys=True, default=str), t, self._version)
        return key, WorkingState(question=query, now=t, where=full_where, k=depth)

    def _prepare(self, query: str, now: float | None) -> WorkingState:
        return WorkingState(question=query, now=self._now(now), where=self._where(None))

    def _copy_retrieval(self, state: WorkingState, done: WorkingState) -> None:
        state.query, state.queries = done.query, list(done.queries)
        state.retrieved = done.retrieved[:self._retrieve.k]
        state.trace.extend(done.trace)

    def _finish(self, state: WorkingState) -> WorkingState:
        if state.selected:
            self._long.touch([h.id for h in state.selected], state.now)
            self._version += 1
        self._stats["probes"] += 1
        self._stats["retrieved"] += len(state.retrieved)
        self._stats["selected"] += len(state.selected)
        self._last_state = state
        return state


