"""The strategy interface (core: memories implement it, the harness replays it).

A strategy owns a memory and decides what to recall for a query and what context to
hand the model. The harness calls, in dialogue order:

- ``observe(record)`` for every dialogue turn (``record.id`` is the turn id,
  ``record.timestamp`` the dialogue time);
- ``retrieve(query, k, now=...)`` and ``build_context(query, now=...)`` at each probe;
- ``llm_usage()`` to learn what the strategy's own LLM calls cost;
- ``reset()`` before the next dialogue.

Before all that, ``warm(texts)`` once, with every turn and query text of the dataset.

Time is explicit: ``now`` is dialogue time in epoch seconds. When it is None a strategy
uses the timestamp of the newest record it observed, so a replay never reads the wall
clock unless a strategy is configured to.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from .base import Component, Warmable
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


class Strategy(Component):
    """Base class for memory strategies. Constructor arguments are the whole configuration."""

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

    def llm_usage(self) -> dict[str, int]:
        """Tokens spent by the strategy's own LLM calls since the last reset.

        Keys: ``prompt_tokens``, ``completion_tokens``, ``calls`` (and, from
        ``LLMUsage.as_dict``, ``cached_calls``, ``cached_tokens``). A call answered by a
        response cache counts the tokens its original call cost, so the figures do not
        depend on the cache state. Zero for strategies that make no LLM calls.
        """
        return {"prompt_tokens": 0, "completion_tokens": 0, "calls": 0}

    def warm(self, texts: Sequence[str]) -> int:
        """Prepare for ``texts`` before a replay feeds them one at a time: every ``Warmable``
        in the strategy's configuration (``Component.components``; e.g. a ``CachedEmbedder``
        with a file fills its cache in batches) is warmed. Returns the most texts any part
        prepared (0: nothing to prepare). Override to warm state the configuration does not show.
        """
        texts = list(texts)
        return max((c.warm(texts) for c in self.components() if isinstance(c, Warmable)), default=0)
