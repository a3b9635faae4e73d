"""The filter step: an optional LLM filter, a score threshold and MMR over what was retrieved."""

from __future__ import annotations

from typing import Any, Generator

from ....base import Param
from ....llm.base import Op, adrive, drive
from ....records import Hit
from ....retrieval.selection import MMRSelector, ScoreThreshold, Selector, rerank
from .state import Layers, Step, WorkingState


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
