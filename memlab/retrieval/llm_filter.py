"""``LLMRelevanceFilter``: a ``Selector`` that asks a model which hits are relevant."""

from __future__ import annotations

from ..base import Param
from ..llm.base import LLM, LLMProgram, UsesLLM
from ..llm.prompts import filter_prompt, filter_schema, is_selection_json, parse_selection
from ..records import Hit
from .selection import Selector, rerank


class LLMRelevanceFilter(UsesLLM, Selector):
    """Asks ``llm`` which hits are relevant to the question (at most ``k``).

    The chosen hits keep the retriever's order and scores (so the list stays sorted);
    ``components["llm_filter"]`` holds the new rank. An empty choice keeps nothing.
    """

    name = "llm_filter"

    constraints = {
        "llm": Param(LLM),
    }

    def __init__(self, llm: LLM):
        self.llm = llm

    def _choose(self, hits: list[Hit], k: int, text: str) -> list[Hit]:
        if not is_selection_json(text):  # read what numbers it has, but count it: never silent
            self._format_error()
        chosen = sorted(parse_selection(text, len(hits))[:k])
        return rerank([hits[i] for i in chosen], None, self.name)

    def _select(self, query: str, hits: list[Hit], k: int) -> LLMProgram:
        if not hits or k <= 0:
            return []
        return self._choose(hits, k, (yield filter_prompt(query, [h.record.content for h in hits], k),
                                      {"schema": filter_schema(len(hits), k)}))

    def select(self, query: str, hits: list[Hit], k: int) -> list[Hit]:
        return self.run_program(self._select(query, hits, k))

    async def aselect(self, query: str, hits: list[Hit], k: int) -> list[Hit]:
        return await self.arun_program(self._select(query, hits, k))
