"""``LifecycleUpdate``: the update step plus the periodic parts of a memory's lifecycle.

Every observed turn goes through ``Update`` (short-term memory, archived folds,
extraction). Then, counting observed turns n = 1, 2, ...:

- every ``summarize_every`` turns, the whole short-term memory (its running summary and
  kept turns) is summarised by the short-term summariser (``fold``: the running summary
  is the previous summary, so what is kept from it keeps its source turns) and stored in long-term memory
  as an ``event_summary`` with subject ``"short-term summary"``: the newest supersedes the
  previous one (same subject), so one light summary of the recent conversation stays
  active, timestamped with the newest turn it covers;
- every ``consolidate_every`` turns, buffered turns are extracted first, then ``merger``
  merges similar memories and ``abstractor`` writes abstractions (each when set).

``usage`` counts the merger's and abstractor's LLM calls; the periodic summaries are
counted by the short-term summariser, like its folds.
"""

from __future__ import annotations

from typing import Any

from ...base import Param
from ...records import MemoryRecord
from .abstraction import Abstractor
from .merge import Merger
from ...summarizers import pieces_sources, pieces_text
from .steps.state import Layers
from .steps.update import Update, _session

SUMMARY_SUBJECT = "short-term summary"


class LifecycleUpdate(Update):
    """``Update`` with periodic summaries, merging and abstraction (module docstring)."""

    constraints = {
        "summarize_every": Param(int, ge=1, none=True),
        "consolidate_every": Param(int, ge=1, none=True),
        "merger": Param(Merger, none=True, expected="a Merger or LLMMerger or None"),
        "abstractor": Param(Abstractor, none=True, expected="an Abstractor or LLMAbstractor or None"),
    }

    def __init__(self, extract_every: int = 1, archive_summaries: bool = True, summarize_every: int | None = None,
                 consolidate_every: int | None = None, merger: Merger | None = None,
                 abstractor: Abstractor | None = None):
        self.summarize_every = summarize_every
        self.consolidate_every = consolidate_every
        self.merger = merger
        self.abstractor = abstractor
        super().__init__(extract_every=extract_every, archive_summaries=archive_summaries)

    def reset_state(self) -> None:
        super().reset_state()
        self._observed = 0

    def _parts(self) -> list[Any]:
        return [self.merger, self.abstractor]

    def observe(self, record: MemoryRecord, layers: Layers) -> list[MemoryRecord]:
        written = super().observe(record, layers)
        return written + self._periodic(layers)

    async def aobserve(self, record: MemoryRecord, layers: Layers) -> list[MemoryRecord]:
        written = await super().aobserve(record, layers)
        return written + self._periodic(layers)  # the periodic parts run synchronously

    def _periodic(self, layers: Layers) -> list[MemoryRecord]:
        self._observed += 1
        written: list[MemoryRecord] = []
        if self.summarize_every and self._observed % self.summarize_every == 0:
            written += self.summarize(layers)
        if self.consolidate_every and self._observed % self.consolidate_every == 0:
            written += self.consolidate(layers)
        return written

    def summarize(self, layers: Layers) -> list[MemoryRecord]:
        """Store a summary of the whole short-term memory now (see the module docstring)."""
        short = layers.short_term
        turns = short.turns
        if not turns and not short.summary_pieces:
            return []
        # the running summary enters as pieces, so the sentences kept from it keep their turns
        pieces = short.resolved_summarizer.fold(turns, short.summary_pieces)
        text, sources = pieces_text(pieces), pieces_sources(pieces)
        if not text.strip():
            return []
        newest = max(short.records(), key=lambda r: r.timestamp)
        return layers.long_term.add_many(
            [{"content": text, "memory_type": "event_summary", "subject": SUMMARY_SUBJECT, "source_ids": sources}],
            user_id=layers.user_id, source_session=_session(newest), timestamp=newest.timestamp)

    def consolidate(self, layers: Layers) -> list[MemoryRecord]:
        """Extract what is buffered, then merge and abstract now; returns what was written."""
        written = self.flush(layers)
        if self.merger is not None:
            written += self.merger.merge(layers.long_term, layers.user_id)
        if self.abstractor is not None:
            written += self.abstractor.abstract(layers.long_term, layers.user_id)
        return written
