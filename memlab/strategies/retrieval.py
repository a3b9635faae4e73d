"""RetrievalStrategy: a retriever, optional expansion, decay and selection, and a context budget.

The pieces compose in one fixed order, which is also the order of their parameters:

    observe(turn) -> retriever.add
    retrieve(query) -> [expansion] -> retriever.search -> [decay re-scoring, reinforcement]
                    -> [selection: threshold / MMR / near-duplicate merging] -> top k
    build_context(query) -> recent history (keep_rate scores) + recalled turns (retrieval
                    scores scaled to (0, 1]) -> ScoreBasedContextCreator(token_limit)

Every piece is a constructor argument, so ``get_params`` reaches each setting by a nested
key (``retriever__k1``, ``retriever__weights``, ``decay__strength_growth``) and a sweep
records them all.

The LLM steps (an LLM expander: ``MultiQueryExpander``, ``HyDEExpander``; an
``LLMRelevanceFilter`` among the selectors) work once per query: their products (the
expanded queries, the filter's verdict) are kept for the query and reused by its later
searches, and their calls are reported by ``llm_usage``.
"""

from __future__ import annotations

import copy
import dataclasses
from contextlib import ExitStack, contextmanager
from typing import Any, Iterator

from ..base import Param
from ..capabilities import Capabilities, any_part, capabilities_of
from ..context import ScoreBasedContextCreator
from ..llm.base import UsesLLM, sum_usage
from ..records import ContextRecord, Hit, MemoryRecord, Role
from ..retrieval import DecayRetriever, ExpansionRetriever, Retriever
from ..filters import Where
from ..tokens import TiktokenCounter, TokenCounter
from ..strategy import Context, Strategy


class RetrievalStrategy(Strategy):
    """Recall dialogue turns with a retriever and pack them, with recent history, into a budget.

    Parameters
    ----------
    retriever: the index over observed turns (BM25, vector, hybrid, ...); one handed in is
        used as given: records already in it stay searchable, and ``reset`` removes only
        the turns this strategy added (None: a fresh ``BM25Retriever``).
    expansion: a ``QueryExpander``; the retriever is searched with every expanded query
        and the lists are fused (RRF).
    decay: a decay rule (``Ebbinghaus``, ``ExponentialRecency``, ``TimeWeighting``); scores
        are re-weighted by it and forgotten memories are deleted (garbage collection).
    decay_combine, decay_weight: how retention meets relevance (``DecayRetriever``):
        "multiply" (relevance * retention), "add", or "weighted"
        ((1 - decay_weight) * minmax(relevance) + decay_weight * retention), which keeps
        relevance in play when fused scores (RRF) vary little, or "prior" (relevance scaled
        to the best hit + decay_weight * retention, time relative to the dialogue's span: a
        bounded recency prior that reorders only near-equal hits).
    reinforce: which recalls strengthen a memory under ``decay``: "used" (those that made it
        into a built context: what the agent saw), "returned" (every hit ``retrieve``
        returns, after the cut to k) or "none".
    selection: a ``Selector`` or a list of them applied in order to the ranked hits.
    candidates: how many hits to ask the retriever for before selection.
    history_window: how many of the most recent turns enter the context besides the recalls.
    keep_rate: history score of the i-th most recent turn is ``keep_rate ** i`` (i = 0 newest).
    context_k: how many recalled turns are offered to the context builder.
    token_limit: budget of the built context, in tokens of ``token_counter``.
    system_prompt: optional leading system message, always kept.

    Changing a parameter with ``set_params`` starts the memory afresh: a strategy's state
    is a function of its configuration and of what it observed since.

    LLM steps and cost: an LLM expander is asked once per query (``ExpansionRetriever``
    keeps its queries while the index is unchanged), and an LLM selector (``UsesLLM``:
    ``LLMRelevanceFilter``) judges a query's candidates once: a later search of the same
    query (same where and now, nothing observed since; e.g. ``build_context`` after
    ``retrieve``) keeps, of its candidates, those the first verdict kept, in the first
    verdict's order. ``llm_usage`` sums the tallies of every ``UsesLLM`` part.

    ``peek()`` (``Strategy.peek``): a search inside it reinforces nothing, runs no garbage
    collection (every ``DecayRetriever`` of the configuration is held ``quiet``) and leaves
    the memoised search alone; the strategy ``honours_peek`` unless a retriever handed in
    changes state on search by other means.

    In the context, a recalled turn's score is its retrieval score divided by the top
    hit's score (so the best recall scores 1.0, like the newest history turn); a turn that
    is both recent and recalled keeps the higher of its two scores.
    """

    constraints = {
        "retriever": Param(Retriever, none=True),
        "reinforce": Param(choices=("used", "returned", "none")),
        "keep_rate": Param(float, ge=0, le=1),
        "decay_weight": Param(float, ge=0, le=1),
        "candidates": Param(int, ge=0),
        "history_window": Param(int, ge=0),
        "context_k": Param(int, ge=0),
        "token_limit": Param(int, ge=0),
        "system_prompt": Param(str, none=True),
    }

    def __init__(self, retriever: Retriever | None = None, expansion: Any = None, decay: Any = None,
                 selection: Any = None, decay_combine: str = "multiply", decay_weight: float = 0.5,
                 reinforce: str = "used", candidates: int = 50, history_window: int = 4,
                 keep_rate: float = 0.9, context_k: int = 5, token_limit: int = 2048,
                 token_counter: TokenCounter | None = None, system_prompt: str | None = None):
        self.retriever = retriever
        self.expansion = expansion
        self.decay = decay
        self.selection = selection
        self.decay_combine = decay_combine
        self.decay_weight = decay_weight
        self.reinforce = reinforce
        self.candidates = candidates
        self.history_window = history_window
        self.keep_rate = keep_rate
        self.context_k = context_k
        self.token_limit = token_limit
        self.token_counter = token_counter
        self.system_prompt = system_prompt
        self._on_params_changed()

    # -- configuration ---------------------------------------------------------------
    def _on_params_changed(self) -> None:
        self._build()

    def _build(self) -> None:
        from ..retrieval import BM25Retriever

        # A retriever handed in is used as given (what it holds stays searchable and is never
        # wiped); only the records this strategy added are taken out again.
        previous = getattr(self, "_base", None)
        if previous is not None:
            ours = set(self._added)
            if all(r.id in ours for r in previous.records()):
                previous.reset()  # it holds only our turns (and a service may not delete one by one)
            else:
                previous.remove(self._added)
        base = self.retriever if self.retriever is not None else BM25Retriever()
        self._base, self._added = base, []
        chain: Retriever = base
        if self.expansion is not None:
            chain = ExpansionRetriever(chain, self.expansion)
        self._decay: DecayRetriever | None = None
        if self.decay is not None:
            self.decay.reset()  # a stochastic model restarts its draws: reset gives a fresh clone
            # the strategy decides what counts as a recall (see ``reinforce``), not the search
            chain = self._decay = DecayRetriever(chain, self.decay, combine=self.decay_combine,
                                                 weight=self.decay_weight, reinforce="none")
        self._chain = chain
        # Searches that change the memory themselves (a stochastic forgetting model draws at
        # each search; a DecayRetriever that reinforces what it returns) are never memoised.
        self._memoisable = any_part([self.decay, base]).asking_changes_nothing
        # An exact retriever ranks the same way for any k (ties by insertion order), so with
        # nothing re-ranking its list the strategy asks for k hits, not ``candidates``, and
        # serves a shorter request from a longer memoised one.
        self._exact = chain is base and not self._selectors() and capabilities_of(base).exact_search
        self._history: list[MemoryRecord] = []
        self._last_recall: tuple[str, float | None] | None = None
        self._version = 0  # bumped by every change of what a search sees (observe, reinforce)
        self._memo: tuple[tuple, int, list[Hit]] | None = None
        # per LLM selector (by position): the last query's key and the hits its verdict kept
        self._verdicts: dict[int, tuple[tuple, list[Hit]]] = {}
        # what peek() holds quiet: the strategy's own decay and any DecayRetriever handed in
        self._quiet = ([self._decay] if self._decay is not None else []) + \
            [c for c in self.components() if isinstance(c, DecayRetriever)]
        self._llm_steps = list({id(c): c for c in self.components() if isinstance(c, UsesLLM)}.values())
        for step in self._llm_steps:  # llm_usage counts from the last reset
            step.reset_usage()
        self._counter = self.token_counter if self.token_counter is not None else TiktokenCounter()
        self._creator = ScoreBasedContextCreator(token_counter=self._counter,
                                                 token_limit=self.token_limit)

    def capabilities(self) -> Capabilities:
        """``Strategy.capabilities`` plus ``exact_search`` (true when the retriever searches
        exactly and nothing, expansion, decay or selection, re-ranks its list) and
        ``search_changes_state`` when ``decay`` is reinforced by recalls."""
        found = super().capabilities()
        reinforces = self.decay is not None and self.reinforce != "none"  # recalls strengthen memories
        return dataclasses.replace(found, exact_search=self._exact,
                                   search_changes_state=found.search_changes_state or reinforces,
                                   honours_peek=not self._unheld())

    def _unheld(self) -> list[Any]:
        """Parts whose searches change state in a way ``peek`` cannot hold back: those that
        declare it themselves (none of their parts does) and are no ``DecayRetriever``."""
        def changes(c: Any) -> bool:
            return capabilities_of(c).search_changes_state

        return [c for c in self.components() if changes(c) and not isinstance(c, DecayRetriever)
                and not any(changes(p) for p in c.components())]

    def llm_usage(self) -> dict[str, int]:
        """What the LLM steps of the configuration (every ``UsesLLM`` part: an LLM expander,
        an ``LLMRelevanceFilter``) spent since the last reset: the sum of their tallies."""
        return sum_usage([step.usage for step in self._llm_steps]).as_dict()

    def _selectors(self) -> list[Any]:
        if self.selection is None:
            return []
        return list(self.selection) if isinstance(self.selection, (list, tuple)) else [self.selection]

    # -- Strategy interface -----------------------------------------------------------
    def reset(self) -> None:
        self._build()

    def observe(self, record: MemoryRecord) -> None:
        self._history.append(record)
        self._chain.add([record])
        self._added.append(record.id)
        self._version += 1

    def retrieve(self, query: str, k: int = 5, *, where: Where | None = None,
                 now: float | None = None) -> list[Hit]:
        if k <= 0:
            return []
        now = self._now(now)
        # copies: the memoised list is shared by the calls of one probe and stays as searched
        n = k if self._exact else max(k, self.candidates)
        hits = [_copy_hit(h) for h in self._ranked(query, n, where, now)[:k]]
        for rank, hit in enumerate(hits, start=1):
            hit.rank = rank
        if self.reinforce == "returned" and not self.peeking and (query, now) != self._last_recall:
            self._last_recall = (query, now)
            self._reinforce([h.id for h in hits], now)
        return hits

    def _ranked(self, query: str, n: int, where: Where | None, now: float | None) -> list[Hit]:
        """Search, then selection, for ``n`` candidates: memoised until the memory changes.

        A replay calls ``retrieve(query, k)`` and then ``build_context(query)`` at each
        probe; both ask for ``max(k, candidates)`` hits at the same time, so the second
        reuses the first search (and its expansion) instead of repeating it. Searches that
        change the memory themselves (a stochastic forgetting model draws at each search; a
        user's ``DecayRetriever(reinforce="returned")`` reinforces) are never memoised.
        """
        key = (query, copy.deepcopy(where), now, self._version, len(self._chain))
        memo = self._memo
        if memo is not None and memo[0] == key and (memo[1] == n or (self._exact and memo[1] > n)):
            return memo[2][:n]
        with self._held():
            hits = self._chain.search(query, n, where=where, now=now)
        # the query's LLM products hold while nothing new was observed (reinforcement only
        # re-weighs the same candidates)
        asked = (query, key[1], now, len(self._history))
        for position, selector in enumerate(self._selectors()):
            hits = self._select(position, selector, asked, query, hits, n)
        if not self.peeking:  # a peek's deeper list must not displace the probe's own search
            self._memo = (key, n, hits) if self._memoisable else None
        return hits

    def _select(self, position: int, selector: Any, asked: tuple, query: str, hits: list[Hit],
                n: int) -> list[Hit]:
        """``selector.select``; an LLM selector's verdict on a query is asked once and reused
        (see the class docstring)."""
        if not isinstance(selector, UsesLLM):
            return selector.select(query, hits, n)
        known = self._verdicts.get(position)
        if known is not None and known[0] == asked:
            present = {h.id for h in hits}
            return [_copy_hit(h) for h in known[1] if h.id in present][:n]
        chosen = selector.select(query, hits, n)
        self._verdicts[position] = (asked, [_copy_hit(h) for h in chosen])
        return chosen

    @contextmanager
    def _held(self) -> Iterator[None]:
        """While peeking, every ``DecayRetriever`` of the chain is ``quiet``."""
        with ExitStack() as stack:
            if self.peeking:
                for part in self._quiet:
                    stack.enter_context(part.quiet())
            yield

    def store_size(self) -> int:
        """Records indexed by the retriever (fewer than observed once decay forgets some)."""
        return len(self._chain)

    def _reinforce(self, ids: list[str], now: float | None) -> None:
        if self._decay is not None and ids:
            self._decay.reinforce_ids(ids, now)
            self._version += 1

    def build_context(self, query: str, *, now: float | None = None) -> Context:
        hits = self.retrieve(query, self.context_k, now=now) if self.context_k else []
        recalled = {h.id for h in hits}
        scored: dict[str, ContextRecord] = {}
        top = max((h.score for h in hits), default=0.0)
        for hit in hits:
            score = hit.score / top if top > 0 else 0.0
            scored[hit.id] = ContextRecord(hit.memory_record, score, hit.memory_record.timestamp)
        recent = self._history[-self.history_window:] if self.history_window else []
        for i, record in enumerate(reversed(recent)):
            score = float(self.keep_rate) ** i
            current = scored.get(record.id)
            if current is None or score > current.score:
                scored[record.id] = ContextRecord(record, score, record.timestamp)
        records = sorted(scored.values(), key=lambda c: c.timestamp)
        if self.system_prompt:
            first = self._history[0].timestamp if self._history else 0.0
            system = MemoryRecord(Role.SYSTEM, self.system_prompt, id="__system__", timestamp=first - 1)
            records.insert(0, ContextRecord(system, 1.0, system.timestamp))
        kept = self._creator.select(records)
        memories = [c.memory_record for c in kept if c.id != "__system__"]
        if self.reinforce == "used":
            self._reinforce([r.id for r in memories if r.id in recalled], self._now(now))
        return Context.of(memories, self._counter, messages=[c.memory_record.to_openai() for c in kept])

    # -- helpers ----------------------------------------------------------------------
    def _now(self, now: float | None) -> float | None:
        if now is not None:
            return now
        return self._history[-1].timestamp if self._history else None


def _copy_hit(hit: Hit) -> Hit:
    """A shallow copy (dataclasses.replace re-runs __init__: ten times slower, per hit per probe)."""
    out = object.__new__(type(hit))
    out.__dict__.update(hit.__dict__)
    return out

