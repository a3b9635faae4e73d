"""ShortTermMemory: the recent turns verbatim, older ones folded into a running summary."""

from __future__ import annotations

from typing import Any

from ...base import Component, ConfigError, MemlabError, Param
from ...llm.base import LLMUsage, Op, adrive, drive
from ...llm.counting import TOKEN_COUNTER, resolve_counter
from ...records import MemoryRecord, Role
from ...tokens import REPLY_PRIMING_TOKENS, TokenCounter
from ...summarizers import (
    ExtractiveSummarizer,
    Summarizer,
    SummaryPiece,
    pieces_sources,
    pieces_text,
)

SUMMARY_PREFIX = "[Summary of the earlier conversation] "
SUMMARY_ID = "short-term-summary"


class ShortTermMemory(Component):
    """A rolling window of turns with overflow summarisation.

    After each ``add``, the memory folds when the window is too long: when
    ``len(turns) > max_turns`` (if set) or when the tokens of ``messages()`` (summary
    included) exceed ``summarize_at * token_budget``. Folding hands the oldest turns,
    all but the newest ``keep_recent``, with the previous summary to ``summarizer``
    (``ExtractiveSummarizer()`` by default) and keeps its answer as the new summary
    (``Summarizer.fold``: the summary is kept as pieces, each with its own sources).

    The summary is the first message, role ``system``, its content starting with
    ``SUMMARY_PREFIX``; as a record its metadata is ``{"kind": "summary", "source_ids":
    [...]}``, the source ids being exactly the turns the current summary draws on: for
    ``ExtractiveSummarizer``, the turns its kept sentences came from (a sentence carried
    over keeps its original turn); for ``LLMSummarizer``, whose attribution is unknown,
    all turns folded so far. An empty summary is no message and has no sources.
    The summary's tokens count against the budget. If the newest ``keep_recent`` turns
    and the summary alone exceed the threshold, nothing more is folded (``over_budget``
    says so): the newest turns are never summarised away.
    Folded chunks wait in ``drain_folded()`` for whoever archives them (the layered memory).
    """

    constraints = {
        "max_turns": Param(int, ge=1, none=True),
        "token_budget": Param(int, ge=1),
        "summarize_at": Param(float, gt=0, le=1),
        "keep_recent": Param(int, ge=0),
        "summarizer": Param(Summarizer, none=True),
        "token_counter": TOKEN_COUNTER,
    }

    def __init__(self, max_turns: int | None = None, token_budget: int = 4000,
                 summarize_at: float = 0.8, keep_recent: int = 4,
                 summarizer: Summarizer | None = None, token_counter: Any = None):
        self.max_turns = max_turns
        self.token_budget = token_budget
        self.summarize_at = summarize_at
        self.keep_recent = keep_recent
        self.summarizer = summarizer
        self.token_counter = token_counter
        self._on_params_changed()

    def _on_params_changed(self) -> None:
        if self.max_turns is not None and self.keep_recent >= self.max_turns:
            raise ConfigError(f"keep_recent must be < max_turns ({self.max_turns}), got {self.keep_recent}")
        self._summarizer = self.summarizer if self.summarizer is not None else ExtractiveSummarizer()
        self._counter = resolve_counter(self.token_counter)
        self.clear()

    # -- state -----------------------------------------------------------------------
    def clear(self) -> None:
        self._turns: list[MemoryRecord] = []
        self._pieces: list[SummaryPiece] = []
        self._summary_time = 0.0
        self._folded: list[list[MemoryRecord]] = []
        self._folds = 0
        self._turn_tokens: dict[int, tuple[MemoryRecord, dict[str, Any], int]] = {}  # see token_count
        self._summary_tokens: tuple[Any, float, int | None] | None = None

    @property
    def turns(self) -> list[MemoryRecord]:
        """The turns kept verbatim, oldest first."""
        return list(self._turns)

    @property
    def summary(self) -> str:
        return pieces_text(self._pieces)

    @property
    def summary_pieces(self) -> list[SummaryPiece]:
        """The summary as (text, source ids) pieces: one per kept sentence for the extractive
        summariser, one for the whole summary for an LLM."""
        return list(self._pieces)

    @property
    def folds(self) -> int:
        """How many times turns were folded into the summary."""
        return self._folds

    @property
    def summary_record(self) -> MemoryRecord | None:
        if not self._pieces:
            return None
        return MemoryRecord(role=Role.SYSTEM, content=SUMMARY_PREFIX + self.summary, id=SUMMARY_ID,
                            timestamp=self._summary_time,
                            metadata={"kind": "summary", "source_ids": pieces_sources(self._pieces)})

    def records(self) -> list[MemoryRecord]:
        """The summary record (if any) followed by the kept turns."""
        summary = self.summary_record
        return ([summary] if summary else []) + list(self._turns)

    def messages(self) -> list[dict[str, Any]]:
        return [r.to_openai() for r in self.records()]

    def token_count(self) -> int:
        """``count_messages(messages())``. With a ``TokenCounter`` whose ``count_messages``
        is the sum of ``count_message`` over the messages (plus the reply priming), as
        memlab's are, each message is counted once: a turn while its message stays the
        same, the summary until the next fold (checked at every add)."""
        counter = self._counter
        if not (isinstance(counter, TokenCounter) and type(counter).count_messages is TokenCounter.count_messages):
            return int(counter.count_messages(self.messages()))
        summary = self.__dict__.get("_summary_tokens")
        if summary is None or summary[0] is not self._pieces or summary[1] != self._summary_time:
            record = self.summary_record
            summary = self._summary_tokens = (self._pieces, self._summary_time,
                                              counter.count_message(record.to_openai()) if record else None)
        total, n = (0, 0) if summary[2] is None else (summary[2], 1)
        known = self._turn_tokens
        for record in self._turns:
            message = record.to_openai()
            hit = known.get(id(record))
            if hit is None or hit[0] is not record or hit[1] != message:
                hit = known[id(record)] = (record, message, counter.count_message(message))
            total += hit[2]
            n += 1
        return int(total + REPLY_PRIMING_TOKENS) if n else 0

    @property
    def threshold(self) -> float:
        """Folding starts above ``summarize_at * token_budget`` tokens."""
        return self.summarize_at * self.token_budget

    @property
    def over_budget(self) -> bool:
        return self.token_count() > self.threshold

    @property
    def resolved_summarizer(self) -> Summarizer:
        """The summariser in use (``summarizer`` or the default ``ExtractiveSummarizer()``)."""
        return self._summarizer

    @property
    def usage(self) -> LLMUsage:
        return self._summarizer.usage

    def drain_folded(self) -> list[list[MemoryRecord]]:
        """The chunks of turns folded since the last call (each oldest first)."""
        chunks, self._folded = self._folded, []
        return chunks

    # -- adding ----------------------------------------------------------------------
    def _add(self, record: MemoryRecord):
        chunk = self._append(record)
        if chunk:
            self._apply(chunk, (yield Op(self._summarizer.fold, self._summarizer.afold, chunk, self._pieces)))
        return chunk

    def add(self, record: MemoryRecord) -> list[MemoryRecord]:
        """Append ``record``; returns the turns folded into the summary (often none)."""
        return drive(self._add(record))

    async def aadd(self, record: MemoryRecord) -> list[MemoryRecord]:
        return await adrive(self._add(record))

    def _append(self, record: MemoryRecord) -> list[MemoryRecord]:
        if not isinstance(record, MemoryRecord):
            raise MemlabError(f"ShortTermMemory.add expects a MemoryRecord, got {type(record).__name__}")
        self._turns.append(record)
        too_many = self.max_turns is not None and len(self._turns) > self.max_turns
        if not (too_many or self.over_budget) or len(self._turns) <= self.keep_recent:
            return []
        cut = len(self._turns) - self.keep_recent
        return self._turns[:cut]

    def _apply(self, chunk: list[MemoryRecord], pieces: list[SummaryPiece]) -> None:
        self._turns = self._turns[len(chunk):]
        kept = {id(r) for r in self._turns}
        self._turn_tokens = {i: v for i, v in self._turn_tokens.items() if i in kept}
        self._pieces = [(text.strip(), tuple(ids)) for text, ids in pieces if text.strip()]
        self._summary_time = max([self._summary_time] + [r.timestamp for r in chunk])
        self._folded.append(chunk)
        self._folds += 1
