"""LLM query transformations: a standalone rewrite of the question, multi-query
expansion (LangChain's MultiQueryRetriever) and HyDE (a hypothetical answer passage)."""

from __future__ import annotations

from ..base import Param
from ..llm.base import LLM, LLMProgram, UsesLLM
from ..llm.prompts import expand_prompt, hyde_prompt, parse_lines, rewrite_prompt
from ..records import MemoryRecord
from .base import Retriever
from .expansion import QueryExpander
from ..filters import Where


class LLMQueryRewriter(UsesLLM):
    """Rewrites the question into a standalone search query using the last ``history_turns`` turns."""

    constraints = {
        "llm": Param(LLM),
        "history_turns": Param(int, ge=0),
    }

    def __init__(self, llm: LLM, history_turns: int = 4):
        self.llm = llm
        self.history_turns = history_turns

    def _prompt(self, question: str, history: list[MemoryRecord]) -> list[dict[str, str]]:
        recent = history[-self.history_turns:] if self.history_turns else []
        return rewrite_prompt(question, recent)

    @staticmethod
    def _clean(text: str, question: str) -> str:
        lines = parse_lines(text, 1)
        return lines[0] if lines else question

    def _rewrite(self, question: str, history: list[MemoryRecord]) -> LLMProgram:
        return self._clean((yield self._prompt(question, history)), question)

    def rewrite(self, question: str, history: list[MemoryRecord]) -> str:
        return self.run_program(self._rewrite(question, history))

    async def arewrite(self, question: str, history: list[MemoryRecord]) -> str:
        return await self.arun_program(self._rewrite(question, history))


class MultiQueryExpander(UsesLLM, QueryExpander):
    """LLM multi-query expansion (LangChain's MultiQueryRetriever): ``[query, *rewrites]``,
    at most ``n`` rewrites, blank lines, numbering and repeats of the query dropped."""

    constraints = {
        "llm": Param(LLM),
        "n": Param(int, ge=1),
    }

    def __init__(self, llm: LLM, n: int = 3):
        self.llm = llm
        self.n = n

    def _queries(self, query: str, text: str) -> list[str]:
        return [query] + [q for q in parse_lines(text, self.n + 1) if q != query][:self.n]

    def _expand(self, query: str) -> LLMProgram:
        return self._queries(query, (yield expand_prompt(query, self.n)))

    def expand(self, query: str, retriever: Retriever | None = None, *, where: Where | None = None,
               now: float | None = None) -> list[str]:
        return self.run_program(self._expand(query))

    async def aexpand(self, query: str, retriever: Retriever | None = None, *,
                      where: Where | None = None, now: float | None = None) -> list[str]:
        return await self.arun_program(self._expand(query))


class HyDEExpander(UsesLLM, QueryExpander):
    """HyDE: search with a hypothetical answer passage too: ``[query, passage]``."""

    constraints = {
        "llm": Param(LLM),
    }

    def __init__(self, llm: LLM):
        self.llm = llm

    @staticmethod
    def _queries(query: str, text: str) -> list[str]:
        passage = " ".join(text.split())
        return [query, passage] if passage and passage != query else [query]

    def _expand(self, query: str) -> LLMProgram:
        return self._queries(query, (yield hyde_prompt(query)))

    def expand(self, query: str, retriever: Retriever | None = None, *, where: Where | None = None,
               now: float | None = None) -> list[str]:
        return self.run_program(self._expand(query))

    async def aexpand(self, query: str, retriever: Retriever | None = None, *,
                      where: Where | None = None, now: float | None = None) -> list[str]:
        return await self.arun_program(self._expand(query))
