"""Working memory: the retrieve -> filter -> load -> (answer) -> update pipeline.

Each step is a small Component with ``run(state, layers)`` (and ``arun`` for the
I/O-bound ones), reading and writing a ``WorkingState``. Steps are conditional:
``Retrieve`` makes no LLM call when long-term memory is empty, ``Filter`` does nothing
when nothing was retrieved, ``Update`` extracts only every ``extract_every`` turns.
``WorkingState.trace`` records what ran and what was skipped, and why.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
from dataclasses import dataclass, field
from typing import Any, Generator

from ...base import Component, ConfigError, Param
from ...context import ScoreBasedContextCreator
from ...extraction import Extractor
from ...llm.base import LLM, LLMProgram, LLMUsage, Op, UsesLLM, adrive, drive, sum_usage
from ...llm.counting import TOKEN_COUNTER, resolve_counter
from ...records import ContextRecord, Hit, MemoryRecord, Role
from ...retrieval.base import Retriever
from ...retrieval.expansion import QueryExpander, fuse_queries, query_components
from ...filters import Where
from ...retrieval.fusion import RRF, Fusion
from ...retrieval.llm_expansion import HyDEExpander, LLMQueryRewriter, MultiQueryExpander
from ...retrieval.llm_filter import LLMRelevanceFilter
from ...retrieval.selection import MMRSelector, ScoreThreshold, Selector, rerank
from ...strategy import Context
from ...tokens import REPLY_PRIMING_TOKENS, TokenCounter
from .keyed_index import KeyedIndex
from .long_term import LongTermMemory, LongTermRetriever
from .short_term import ShortTermMemory

# the LLM expanders and the filter live in memlab.retrieval; imported here for the old paths
__all__ = ["Answer", "Filter", "HyDEExpander", "Layers", "LLMQueryRewriter", "LLMRelevanceFilter", "Load",
           "LongTermRetriever", "MultiQueryExpander", "Retrieve", "Step", "Update", "WorkingState",
           "DEFAULT_SYSTEM_PROMPT", "MEMORY_HEADER", "CONFLICT_INSTRUCTION"]


@dataclass
class Layers:
    """The memories a pipeline works on (built by ``LayeredMemory``)."""

    short_term: ShortTermMemory
    long_term: LongTermMemory
    extractor: Extractor
    user_id: str = ""


@dataclass
class WorkingState:
    """Everything one pass of the pipeline reads and produces."""

    question: str
    now: float | None = None
    where: Where | None = None
    k: int | None = None               # how many hits Retrieve keeps (None: the step's k)
    query: str = ""                    # the query after rewriting
    queries: list[str] = field(default_factory=list)
    retrieved: list[Hit] = field(default_factory=list)
    selected: list[Hit] = field(default_factory=list)
    messages: list[dict[str, Any]] = field(default_factory=list)  # the agent prompt (Load): system, context, question
    context: Context | None = None     # what the memory contributes (Load); no question
    answer: str | None = None
    new_memories: list[MemoryRecord] = field(default_factory=list)
    trace: list[str] = field(default_factory=list)


def _usage_of(*parts: Any) -> LLMUsage:
    return sum_usage([p.usage for p in parts if p is not None and isinstance(getattr(p, "usage", None), LLMUsage)])


def _reset_usage(*parts: Any) -> None:
    for p in parts:
        if p is not None and callable(getattr(p, "reset_usage", None)):
            p.reset_usage()


class Step(Component):
    """One pipeline step. ``usage`` sums the LLM cost of the step's parts."""

    def run(self, state: WorkingState, layers: Layers) -> WorkingState:
        raise NotImplementedError

    async def arun(self, state: WorkingState, layers: Layers) -> WorkingState:
        return self.run(state, layers)

    def _parts(self) -> list[Any]:
        return []

    @property
    def usage(self) -> LLMUsage:
        return _usage_of(*self._parts())

    def reset_usage(self) -> None:
        _reset_usage(*self._parts())


# -- the steps ---------------------------------------------------------------------------------
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

    async def arun(self, state: WorkingState, layers: Layers) -> WorkingState:
        return await adrive(self._program(state, layers))


class Filter(Step):
    """Keep the retrieved memories worth loading, at most ``k``.

    In order: ``min_score`` drops hits scoring below it (``ScoreThreshold``), ``mmr`` (an
    ``MMRSelector``) diversifies, ``llm_filter`` (``LLMRelevanceFilter``) keeps what the
    model calls relevant; then the first ``k`` remain. Skipped when nothing was
    retrieved (no LLM call).
    """

    constraints = {
        "llm_filter": Param(Selector, none=True),
        "min_score": Param(float, none=True),
        "mmr": Param(Selector, none=True),
        "k": Param(int, ge=0),
    }

    def __init__(self, llm_filter: Selector | None = None, min_score: float | None = None,
                 mmr: MMRSelector | None = None, k: int = 5):
        self.llm_filter = llm_filter
        self.min_score = min_score
        self.mmr = mmr
        self.k = k

    def _parts(self) -> list[Any]:
        return [self.llm_filter]

    def _pre(self, state: WorkingState) -> list[Hit] | None:
        if not state.retrieved:
            state.selected = []
            state.trace.append("filter: skipped (nothing retrieved)")
            return None
        hits = list(state.retrieved)
        if self.min_score is not None:
            hits = ScoreThreshold(self.min_score).select(state.question, hits, len(hits))
        if self.mmr is not None and hits:
            hits = self.mmr.select(state.question, hits, len(hits))
        return hits

    def _post(self, state: WorkingState, hits: list[Hit]) -> WorkingState:
        state.selected = rerank(hits[:self.k], None, "filter")
        state.trace.append(f"filter: kept {len(state.selected)} of {len(state.retrieved)}")
        return state

    def _program(self, state: WorkingState) -> Generator[Op, Any, WorkingState]:
        hits = self._pre(state)
        if hits is None:
            return state
        if self.llm_filter is not None and hits:
            hits = yield Op(self.llm_filter.select, self.llm_filter.aselect, state.question, hits, self.k)
        return (yield from self._finish(state, hits))

    def _finish(self, state: WorkingState, hits: list[Hit]) -> Generator[Op, Any, WorkingState]:
        """The program's last part, given the selected hits (a subclass may yield Ops here)."""
        return self._post(state, hits)
        yield  # unreachable: makes this a generator, like the overrides that do yield

    def run(self, state: WorkingState, layers: Layers) -> WorkingState:
        return drive(self._program(state))

    async def arun(self, state: WorkingState, layers: Layers) -> WorkingState:
        return await adrive(self._program(state))


DEFAULT_SYSTEM_PROMPT = (
    "You are a helpful assistant with a memory of earlier conversations. Use the memories "
    "below when they help. If they contradict each other, trust the newest and most specific "
    "one, and say so if it matters.")
MEMORY_HEADER = "Relevant memories (oldest first):"
#: What ``Load(conflict_instruction=...)`` usually says (the seed's "prefer the newest information").
CONFLICT_INSTRUCTION = "If memories disagree, prefer the newest information (the later date)."


class Load(Step):
    """Assemble the memory's context and the agent prompt around it.

    ``state.context`` (what ``LayeredMemory.build_context`` returns, see
    ``memlab.strategy.Context``) holds what the memory contributes, in order:
    ``system_prompt`` when one is given, the selected memories as one marked system message
    (``MEMORY_HEADER``, one ``- [date] content`` line each, oldest first; the date is the
    memory's UTC day when ``include_dates``), and the short-term messages (summary and
    turns). Never the question: whoever answers adds it. With ``conflict_instruction``
    (e.g. ``CONFLICT_INSTRUCTION``) that line follows the header, so whoever answers is
    told to prefer the newest memory; it is part of the context. ``token_count`` counts exactly
    these messages with ``token_counter`` (memlab's default counter when None).

    ``state.messages`` is the agent prompt the ``Answer`` step sends: a system prompt
    (``system_prompt``, or ``DEFAULT_SYSTEM_PROMPT`` when it is None), the memory and
    short-term messages, then the question as the final user message. ``system_prompt=""``
    leaves out the system prompt in both.

    ``token_limit=None`` (the default) keeps everything. With a ``token_limit`` L the context
    always has ``token_count <= L``, chosen by ``ScoreBasedContextCreator`` (the one budgeted
    context builder every memory uses) with this step's counter, which must then be a
    ``memlab.tokens.TokenCounter`` (the creator counts message by message). The rule: the
    conversation under way ranks above every memory, and memories fill what is left by score.

    1. Short-term first: ``ScoreBasedContextCreator(counter, token_limit=L).select`` over the
       configured system prompt (a non-empty ``system_prompt``: the protected first record;
       if ``count_messages([it]) > L``, ``ContextBudgetError`` names both numbers) and every
       short-term record (summary and turns), each scored ``float("inf")``: the newest are
       kept first (the creator's tie rule), a tool call stays with its results, and a
       leading summary is not protected (``protect_first`` only with a system prompt).
    2. Then memories: ``header = count_message({"role": "system", "content": MEMORY_HEADER
       [+ "\n" + conflict_instruction]})``, what the memory message costs without lines. The
       creator with ``token_limit=L - header`` selects among the records kept in 1 (scored
       inf, so walked first) and one record per selected memory: score = the hit's score,
       timestamp = the memory's, cost = ``line_tokens(hit) = count(memory_line(hit) + "\n")``
       (its line, not a message of its own). Memories are kept highest score first (ties:
       the newer), each one that still fits. If the header does not fit beside the records
       kept in 1, no memory is shown (a memory never displaces a short-term message).
    3. The kept lines make the memory message (oldest first, as without a limit), the kept
       short-term records keep their order. The result is recounted exactly; while it
       exceeds L (BPE may join a line to its neighbour), the kept memory with the lowest
       score (ties: the older) is dropped. No memory kept: no memory message.

    Memories dropped for the budget are removed from ``state.selected`` (so
    ``LayeredMemory`` does not reinforce memories the model never saw); ``record_ids`` and
    ``source_ids`` list what was kept, and the trace says how many were dropped.
    """

    constraints = {
        "system_prompt": Param(str, none=True),
        "include_dates": Param(bool),
        "conflict_instruction": Param(str, none=True),
        "token_counter": TOKEN_COUNTER,
        "token_limit": Param(int, ge=1, none=True),
    }

    def __init__(self, system_prompt: str | None = None, include_dates: bool = True,
                 token_counter: Any = None, conflict_instruction: str | None = None,
                 token_limit: int | None = None):
        self.system_prompt = system_prompt
        self.include_dates = include_dates
        self.token_counter = token_counter
        self.conflict_instruction = conflict_instruction
        self.token_limit = token_limit
        self._on_params_changed()

    def _on_params_changed(self) -> None:
        self._counter = resolve_counter(self.token_counter)
        if self.token_limit is not None and not isinstance(self._counter, TokenCounter):
            raise ConfigError(f"Load parameter 'token_counter': expected a memlab.tokens.TokenCounter when "
                              f"token_limit is set (the budget counts message by message), "
                              f"got {type(self._counter).__name__}")

    def memory_message(self, hits: list[Hit]) -> dict[str, Any] | None:
        if not hits:
            return None
        lines = self._header_lines()
        lines += [self.memory_line(h) for h in sorted(hits, key=lambda h: (h.record.timestamp, h.rank))]
        return {"role": "system", "content": "\n".join(lines)}

    def _header_lines(self) -> list[str]:
        return [MEMORY_HEADER] + ([self.conflict_instruction] if self.conflict_instruction else [])

    def memory_line(self, hit: Hit) -> str:
        """How one memory is shown in the memory message: ``- [date] content``."""
        date = ""
        if self.include_dates and hit.record.timestamp > 0:
            day = _dt.datetime.fromtimestamp(hit.record.timestamp, _dt.timezone.utc).date()
            date = f"[{day.isoformat()}] "
        return f"- {date}{' '.join(hit.record.content.split())}"

    def line_tokens(self, hit: Hit) -> int:
        """Tokens of ``memory_line(hit)`` plus its line break, in this step's counter."""
        return int(self._counter.count(self.memory_line(hit) + "\n"))

    def run(self, state: WorkingState, layers: Layers) -> WorkingState:
        short = layers.short_term.records()
        budget = ""
        if self.token_limit is not None:
            hits, kept_short = self._fit(list(state.selected), short)
            budget = (f"; token_limit={self.token_limit} dropped {len(state.selected) - len(hits)} of "
                      f"{len(state.selected)} memories and {len(short) - len(kept_short)} of {len(short)} "
                      f"short-term messages")
            state.selected, short = hits, kept_short
        memory = self._memory(state.selected, short)
        configured = self._configured()
        agent = self.system_prompt if self.system_prompt is not None else DEFAULT_SYSTEM_PROMPT
        context = configured + memory
        state.messages = ([{"role": "system", "content": agent}] if agent else []) + memory \
            + [{"role": "user", "content": state.question}]
        state.context = Context.of([h.record for h in state.selected] + short, self._counter, messages=context)
        state.trace.append(f"load: {len(context)} context message(s), {state.context.token_count} tokens{budget}")
        return state

    def _configured(self) -> list[dict[str, Any]]:
        return [{"role": "system", "content": self.system_prompt}] if self.system_prompt else []

    def _memory(self, hits: list[Hit], short: list[MemoryRecord]) -> list[dict[str, Any]]:
        """The memory message (if any hit) followed by the short-term messages."""
        selected = self.memory_message(hits)
        return ([selected] if selected is not None else []) + [r.to_openai() for r in short]

    # -- the token budget (see the class doc) ----------------------------------------------
    def _fit(self, hits: list[Hit], short: list[MemoryRecord]) -> tuple[list[Hit], list[MemoryRecord]]:
        """The hits (in their given order) and short-term records kept within ``token_limit``."""
        limit = int(self.token_limit)  # type: ignore[arg-type]
        counter = self._counter
        head: list[ContextRecord] = []
        if self.system_prompt:
            system = MemoryRecord(Role.SYSTEM, self.system_prompt, id="s", timestamp=0.0)
            head = [ContextRecord(system, float("inf"), 0.0)]
        # fresh ids ("t<i>", "m<i>"): a memory and a turn sharing an id are still two
        # candidates (the creator dedupes by id), and kept ids map back to positions
        turns = [ContextRecord(dataclasses.replace(r, id=f"t{i}"), float("inf"), r.timestamp)
                 for i, r in enumerate(short)]
        lines = [ContextRecord(MemoryRecord(Role.SYSTEM, self.memory_line(h), id=f"m{i}",
                                            timestamp=h.record.timestamp), float(h.score), h.record.timestamp)
                 for i, h in enumerate(hits)]
        costs = {c.id: self.line_tokens(h) for c, h in zip(lines, hits)}

        def cost(record: ContextRecord) -> int:
            if record.id in costs:
                return costs[record.id]
            return int(counter.count_message(record.memory_record.to_openai()))

        # protect_first rather than roles that cannot be protected: the short-term summary
        # is truly a system message, and without a configured system prompt neither it
        # nor a memory line may take the protected place (and raise ContextBudgetError)
        protect = bool(head)
        # 1. the conversation under way, within the whole limit, as if there were no memories
        base = ScoreBasedContextCreator(token_counter=counter, token_limit=limit)
        kept = {c.id for c in base.select(head + turns, protect_first=protect)}
        kept_short = [r for c, r in zip(turns, short) if c.id in kept]
        turns = [c for c in turns if c.id in kept]
        header = int(counter.count_message({"role": "system", "content": "\n".join(self._header_lines())}))
        floor = (counter.count_message(head[0].memory_record.to_openai()) + REPLY_PRIMING_TOKENS) if head else 1
        if not lines or limit - header < floor:
            return [], kept_short
        # 2. the same records (scored inf, so walked first) and the memory lines, in what is
        #    left once the memory message's header is paid for
        creator = ScoreBasedContextCreator(token_counter=counter, token_limit=limit - header)
        chosen = {c.id for c in creator.select(head + turns + lines, protect_first=protect, cost=cost)}
        if not kept <= chosen:
            return [], kept_short  # the header would push out a turn: turns rank above memories
        kept_hits = [h for c, h in zip(lines, hits) if c.id in chosen]
        # exact recount: BPE may join a line with its neighbour; drop the weakest line
        while kept_hits and counter.count_messages(
                self._configured() + self._memory(kept_hits, kept_short)) > limit:
            weakest = min(kept_hits, key=lambda h: (float(h.score), h.record.timestamp))
            kept_hits = [h for h in kept_hits if h is not weakest]
        return kept_hits, kept_short


class Answer(UsesLLM, Step):
    """Generate the reply from the loaded messages with ``llm`` (``max_tokens`` caps it)."""

    constraints = {
        "max_tokens": Param(int, ge=1, none=True),
    }

    def __init__(self, llm: LLM, max_tokens: int | None = None):
        self.llm = llm
        self.max_tokens = max_tokens

    def _params(self) -> dict[str, Any]:
        return {} if self.max_tokens is None else {"max_tokens": self.max_tokens}

    def _answer(self, state: WorkingState) -> LLMProgram:
        state.answer = yield state.messages, self._params()
        state.trace.append("answer")
        return state

    def run(self, state: WorkingState, layers: Layers) -> WorkingState:
        return self.run_program(self._answer(state))

    async def arun(self, state: WorkingState, layers: Layers) -> WorkingState:
        return await self.arun_program(self._answer(state))


class Update(Step):
    """Take in a turn: append it to short-term memory, archive folded turns, extract memories.

    - Every turn goes to short-term memory (which may fold old turns into its summary).
    - With ``archive_summaries``, each folded chunk is also stored in long-term memory as
      an ``event_summary`` (the short-term summariser's summary of that chunk alone,
      ``source_ids`` = the turns it draws on, timestamp = the chunk's newest turn).
    - Turns wait in a buffer; every ``extract_every`` turns (and on ``flush``) the
      extractor reads the buffer and its memories are added to long-term memory, each
      timestamped with its newest source turn (``source_session`` from that turn's
      ``metadata["session_id"]`` or ``["session"]``).
    - With ``keep_events``, every turn with text is also kept in long-term memory as it
      is, an *event*: an ``event_summary`` of that one turn (content = the turn's text,
      ``source_ids`` = the turn's), so no evidence is lost to extraction or summaries;
      ``Retrieve(retriever=...)`` indexes it with the facts extracted from it.
    """

    constraints = {
        "extract_every": Param(int, ge=1),
        "archive_summaries": Param(bool),
        "keep_events": Param(bool),
    }

    def __init__(self, extract_every: int = 1, archive_summaries: bool = True, keep_events: bool = False):
        self.extract_every = extract_every
        self.archive_summaries = archive_summaries
        self.keep_events = keep_events
        self._on_params_changed()

    def _on_params_changed(self) -> None:
        self.reset_state()

    def reset_state(self) -> None:
        self._pending: list[MemoryRecord] = []
        self._exchanges = 0

    @property
    def pending(self) -> list[MemoryRecord]:
        """Turns not yet read by the extractor."""
        return list(self._pending)

    def _observe(self, record: MemoryRecord, layers: Layers) -> Generator[Op, Any, list[MemoryRecord]]:
        short = layers.short_term
        yield Op(short.add, short.aadd, record)
        written: list[MemoryRecord] = self._event(layers, record) if self.keep_events else []
        for chunk in self._chunks(layers):
            summarizer = short.resolved_summarizer
            text, sources = yield Op(summarizer.summarize_with_sources, summarizer.asummarize_with_sources, chunk)
            written += self._archive(layers, chunk, text, sources)
        self._pending.append(record)
        if len(self._pending) >= self.extract_every:
            written += yield from self._flush(layers)
        return written

    def _flush(self, layers: Layers) -> Generator[Op, Any, list[MemoryRecord]]:
        if not self._pending:
            return []
        batch, self._pending = self._pending, []
        items = yield Op(layers.extractor.extract, layers.extractor.aextract, batch)
        return self._store(layers, batch, items)

    def observe(self, record: MemoryRecord, layers: Layers) -> list[MemoryRecord]:
        """Take in one turn; returns the long-term memories written because of it."""
        return drive(self._observe(record, layers))

    async def aobserve(self, record: MemoryRecord, layers: Layers) -> list[MemoryRecord]:
        return await adrive(self._observe(record, layers))

    def flush(self, layers: Layers) -> list[MemoryRecord]:
        """Extract from the buffered turns now; returns the memories written."""
        return drive(self._flush(layers))

    async def aflush(self, layers: Layers) -> list[MemoryRecord]:
        return await adrive(self._flush(layers))

    # -- pipeline mode ------------------------------------------------------------------
    def run(self, state: WorkingState, layers: Layers) -> WorkingState:
        for record in self._exchange(state):
            state.new_memories += self.observe(record, layers)
        return self._traced(state)

    async def arun(self, state: WorkingState, layers: Layers) -> WorkingState:
        for record in self._exchange(state):
            state.new_memories += await self.aobserve(record, layers)
        return self._traced(state)

    @staticmethod
    def _traced(state: WorkingState) -> WorkingState:
        n = len(state.new_memories)
        state.trace.append(f"update: {n} new memor{'y' if n == 1 else 'ies'}")
        return state

    def _exchange(self, state: WorkingState) -> list[MemoryRecord]:
        # ids are numbered, not random, so that a replayed conversation is identical
        self._exchanges += 1
        t = float(state.now) if state.now is not None else 0.0
        turns = [MemoryRecord(role=Role.USER, content=state.question, timestamp=t,
                              id=f"exchange-{self._exchanges}-user")]
        if state.answer is not None:
            turns.append(MemoryRecord(role=Role.ASSISTANT, content=state.answer, timestamp=t,
                                      id=f"exchange-{self._exchanges}-assistant"))
        return turns

    # -- helpers -----------------------------------------------------------------------
    def _chunks(self, layers: Layers) -> list[list[MemoryRecord]]:
        chunks = layers.short_term.drain_folded()
        return chunks if self.archive_summaries else []

    @staticmethod
    def _event(layers: Layers, record: MemoryRecord) -> list[MemoryRecord]:
        text = " ".join(record.content.split())
        if not text:
            return []
        return layers.long_term.add_many(
            [{"content": text, "memory_type": "event_summary", "source_ids": list(record.source_ids)}],
            user_id=layers.user_id, source_session=_session(record), timestamp=record.timestamp)

    @staticmethod
    def _archive(layers: Layers, chunk: list[MemoryRecord], text: str, sources: list[str]) -> list[MemoryRecord]:
        if not text.strip():
            return []
        newest = max(chunk, key=lambda r: r.timestamp)
        sources = sources or [s for r in chunk for s in r.source_ids]
        return layers.long_term.add_many(
            [{"content": text, "memory_type": "event_summary", "source_ids": sources}],
            user_id=layers.user_id, source_session=_session(newest), timestamp=newest.timestamp)

    @staticmethod
    def _store(layers: Layers, batch: list[MemoryRecord], items: list[Any]) -> list[MemoryRecord]:
        """All of one extraction's memories in one transaction, each timed by its newest turn."""
        if not items:
            return []
        by_source = {s: r for r in batch for s in r.source_ids}
        rows = []
        for item in items:
            turns = [by_source[s] for s in item.source_ids if s in by_source] or [batch[-1]]
            newest = max(turns, key=lambda r: r.timestamp)
            rows.append({**item.to_dict(), "timestamp": newest.timestamp,
                         "source_session": _session(newest)})
        return layers.long_term.add_many(rows, user_id=layers.user_id)


def _session(record: MemoryRecord) -> str:
    return str(record.metadata.get("session_id", record.metadata.get("session", "")) or "")
