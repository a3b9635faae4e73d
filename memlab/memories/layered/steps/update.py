"""The update step: extraction into long-term memory and archiving of summaries."""

from __future__ import annotations

from typing import Any, Generator

from ....base import Param
from ....llm.base import Op, adrive, drive
from ....records import MemoryRecord, Role
from .state import Layers, Step, WorkingState


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
