"""The strategy interface (core: memories implement it, the harness replays it).

A strategy owns a memory and decides what to recall for a query and what context to
hand the model. The harness calls, in dialogue order:

- ``observe(record)`` for every dialogue turn (``record.id`` is the turn id,
  ``record.timestamp`` the dialogue time);
- ``retrieve(query, k, now=...)`` and ``build_context(query, now=...)`` at each probe; when
  the metrics need a deeper ranked list than the first ``retrieve`` gave, more ``retrieve``
  calls of the same query inside ``peek()``, which change nothing (see there);
- ``llm_usage()`` to learn what the strategy's own LLM calls cost;
- ``hit_tokens(hits)`` to learn what each ranked hit costs in a context (token-matched
  metrics compare strategies at equal tokens, whatever one hit stands for);
- ``reset()`` before the next dialogue.

Before all that, ``warm(texts, queries)`` once, with every turn and question of the dataset.

Time is explicit: ``now`` is dialogue time in epoch seconds. When it is None a strategy
uses the timestamp of the newest record it observed, so a replay never reads the wall
clock unless a strategy is configured to.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, ClassVar

from .base import Component, ConfigError, Warmable
from .capabilities import Capabilities, any_part
from .filters import Where
from .records import Hit, MemoryRecord


@dataclass
class Context:
    """What the memory puts in front of the model: OpenAI messages, their token count, and
    where they came from.

    One rule for every strategy, so that ``token_count`` compares across strategies:
    ``messages`` is what the memory contributes (summaries, recalled memories, history),
    plus a system prompt only when the strategy was explicitly configured with one
    (e.g. ``RetrievalStrategy(system_prompt=...)``, ``Load(system_prompt=...)``). It never
    holds the question being asked: whoever answers (``memlab.eval.answers.Answerer``, an
    agent's own answer step) appends it, with its own instructions. ``token_count`` counts
    exactly ``messages``.

    ``record_ids`` are the memory records in the context; ``source_ids`` the dialogue
    turns they stand for (a summary or extracted fact names the turns it came from).
    """

    messages: list[dict[str, Any]]
    token_count: int
    record_ids: list[str] = field(default_factory=list)
    source_ids: list[str] = field(default_factory=list)

    @classmethod
    def of(cls, memories: Sequence[MemoryRecord], counter: Any,
           messages: Sequence[dict[str, Any]] | None = None) -> Context:
        """The context of ``memories``, the one way every strategy builds it: ``messages``
        (default: each memory as its own chat message, ``to_openai()``), ``token_count =
        counter.count_messages(messages)`` (0 when empty), ``record_ids`` the memories' ids in
        order and ``source_ids`` the turns they stand for, each once, in order."""
        shown = [r.to_openai() for r in memories] if messages is None else list(messages)
        return cls(messages=shown, token_count=int(counter.count_messages(shown)) if shown else 0,
                   record_ids=[r.id for r in memories], source_ids=source_ids(memories))


def source_ids(records: Sequence[MemoryRecord]) -> list[str]:
    """The dialogue turns a list of memories stands for, each once, in order."""
    seen: dict[str, None] = {}
    for r in records:
        for s in r.source_ids:
            seen.setdefault(s, None)
    return list(seen)


class Strategy(Component):
    """Base class for memory strategies. Constructor arguments are the whole configuration."""

    #: True only for reference strategies that read the gold answer (``oracle``): the
    #: harness then calls ``see_probe(probe)`` before asking each probe. A real memory
    #: never sees the gold, so the default is False and ``see_probe`` is never called.
    uses_gold: bool = False

    #: True for a strategy whose ``retrieve`` honours ``peek()`` (``Capabilities.honours_peek``).
    #: One whose search changes no state need not say so to be asked again.
    honours_peek: ClassVar[bool] = False

    #: Parameters read only when asked, never by ``observe`` (``Capabilities.query_time_params``);
    #: a strategy declaring some switches them with ``set_query_params``.
    query_time_params: ClassVar[frozenset[str]] = frozenset()

    #: The ``query_time_params`` that ``retrieve`` does not read, only ``build_context``
    #: (``Capabilities.context_only_params``): a sweep over them searches once per probe.
    context_only_params: ClassVar[frozenset[str]] = frozenset()

    def capabilities(self) -> Capabilities:
        """What this strategy declares: its ``query_time_params`` and ``uses_gold``, and whether
        any component of its configuration is stochastic or changes state when searched
        (``memlab.capabilities``). The harness, sweeps and ``memlab.testing`` read this."""
        parts = any_part(self.components())
        return Capabilities(query_time_params=type(self).query_time_params,
                            uses_gold=bool(self.uses_gold), stochastic=parts.stochastic,
                            search_changes_state=parts.search_changes_state,
                            honours_peek=bool(type(self).honours_peek),
                            context_only_params=type(self).context_only_params & type(self).query_time_params)

    @contextmanager
    def peek(self) -> Iterator[None]:
        """Within it, ``retrieve`` only looks: a strategy that ``honours_peek`` then changes no
        state (no reinforcement of what it returns, no access count, no forgetting) and makes
        no LLM call the same query's first, plain ``retrieve`` did not make (it reuses that
        call's LLM products: expanded queries, filter verdicts). The replay asks its deeper
        lists this way, so a probe costs one unit of LLM work and one change of state however
        deep its metrics read (``memlab.eval.replay._ranked``). Nests; ``peeking`` tells a
        strategy whether it is inside."""
        depth = self.__dict__.get("_peek_depth", 0)
        self.__dict__["_peek_depth"] = depth + 1
        try:
            yield
        finally:
            self.__dict__["_peek_depth"] = depth

    @property
    def peeking(self) -> bool:
        """True inside ``peek()``."""
        return self.__dict__.get("_peek_depth", 0) > 0

    def set_query_params(self, **params: Any) -> None:
        """Switch query-time parameters keeping what was observed; a strategy declaring
        ``query_time_params`` implements it."""
        raise ConfigError(f"{type(self).__name__} declares no query-time parameters, got {sorted(params)}")

    def see_probe(self, probe: Any) -> None:
        """Be shown the probe about to be asked (gold evidence included); only if ``uses_gold``."""

    @abstractmethod
    def reset(self) -> None:
        """Forget everything observed; afterwards the strategy behaves like a fresh clone."""

    @abstractmethod
    def observe(self, record: MemoryRecord) -> None:
        """Take in one dialogue turn."""

    @abstractmethod
    def retrieve(self, query: str, k: int = 5, *, where: Where | None = None,
                 now: float | None = None) -> list[Hit]:
        """At most ``k`` hits, best first, scores non-increasing, ranks 1..n."""

    @abstractmethod
    def build_context(self, query: str, *, now: float | None = None) -> Context:
        """The context handed to the model for ``query`` (within the strategy's token budget)."""

    def store_size(self) -> int | None:
        """How many records the memory holds now (turns, summaries, extracted memories that
        are still active); None when the strategy does not say. Lifecycle traces plot it."""
        return None

    def llm_usage(self) -> dict[str, int]:
        """Tokens spent by the strategy's own LLM calls since the last reset (the replay charges
        each probe with what changed).

        Keys: ``prompt_tokens``, ``completion_tokens``, ``calls`` (and, from
        ``LLMUsage.as_dict``, ``cached_calls``, ``cached_tokens``). A call answered by a
        response cache counts the tokens its original call cost, so the figures do not
        depend on the cache state; ``format_errors`` counts answers a step could not read.
        Zero here: a strategy whose parts call an LLM sums their ``UsesLLM.usage`` tallies
        (``memlab.llm.base.sum_usage``), as ``RetrievalStrategy`` and ``LayeredMemory`` do.
        """
        return {"prompt_tokens": 0, "completion_tokens": 0, "calls": 0}

    def hit_tokens(self, hits: list[Hit]) -> list[int]:
        """Tokens each hit takes in a context, in the strategy's token counter.

        Default: ``counter.count_message(hit.memory_record.to_openai())`` (the hit as its own
        chat message, framing included), with the strategy's ``token_counter`` parameter
        when it has one that is set, else memlab's default counter (tiktoken o200k_base).
        A strategy that shows hits differently (e.g. as lines of one memory message)
        overrides this.
        """
        counter = getattr(self, "token_counter", None)
        if counter is None or not callable(getattr(counter, "count_message", None)):
            counter = _default_counter()
        return [int(counter.count_message(h.memory_record.to_openai())) for h in hits]

    def warm(self, texts: Sequence[str], queries: Sequence[str] = ()) -> int:
        """Prepare for ``texts`` before a replay feeds them one at a time: every ``Warmable``
        in the strategy's configuration (``Component.components``; e.g. a ``CachedEmbedder``
        with a file fills its cache in batches) is warmed. Returns the most texts any part
        prepared (0: nothing to prepare). Override to warm state the configuration does not show.
        """
        texts, queries = list(texts), list(queries)
        return max((c.warm(texts, queries) for c in self.components() if isinstance(c, Warmable)), default=0)


_DEFAULT_COUNTER: Any = None


def _default_counter() -> Any:
    global _DEFAULT_COUNTER
    if _DEFAULT_COUNTER is None:  # one shared counter: its memo serves every strategy
        from .tokens import TiktokenCounter

        _DEFAULT_COUNTER = TiktokenCounter()
    return _DEFAULT_COUNTER
