"""Gist compression in the filter step: each kept memory shown as one sentence, and the
memories kept while their gists fit a token budget.

``FirstSentenceGist`` (offline) and ``LLMGist`` write the gists; ``GistFilter`` is the
``Filter`` step that applies them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Generator
from typing import Any

from ...base import Component, Param
from ...llm.base import LLM, LLMProgram, LLMUsage, Op, UsesLLM
from ...llm.counting import TOKEN_COUNTER, resolve_counter
from ...llm.prompts import gist_prompt, parse_numbered
from ...text import cut_words, first_sentence
from ...records import Hit
from ...retrieval.selection import rerank
from .steps.filter import Filter
from .steps.state import WorkingState

class FirstSentenceGist(Component):
    """Offline gist: the memory's first sentence, cut to ``max_words`` words.

    Honest about it: a memory that puts its point in a later sentence (an event summary
    that starts with a greeting) loses it; nothing is rephrased. ``LLMGist`` rewrites.
    """

    constraints = {"max_words": Param(int, ge=1)}

    def __init__(self, max_words: int = 20):
        self.max_words = max_words

    def gists(self, texts: list[str]) -> list[str]:
        return [first_sentence(t, self.max_words) for t in texts]

    async def agists(self, texts: list[str]) -> list[str]:
        return self.gists(texts)  # no I/O

    @property
    def usage(self) -> LLMUsage:
        return LLMUsage()

    def reset_usage(self) -> None:
        pass


class LLMGist(UsesLLM, FirstSentenceGist):
    """Ask ``llm`` for one sentence of at most ``max_words`` words per memory, all memories in
    one call (numbered in, numbered out). A missing or empty line falls back to the offline
    gist of that memory; every gist is cut to ``max_words`` words."""

    constraints = {"llm": Param(LLM), "max_tokens": Param(int, ge=16)}

    def __init__(self, llm: LLM, max_words: int = 20, max_tokens: int = 400):
        self.llm = llm
        self.max_tokens = max_tokens
        super().__init__(max_words=max_words)

    def gists(self, texts: list[str]) -> list[str]:
        return self.run_program(self._gists(texts))

    async def agists(self, texts: list[str]) -> list[str]:
        return await self.arun_program(self._gists(texts))

    def _gists(self, texts: list[str]) -> LLMProgram:
        if not texts:
            return []
        answer = yield gist_prompt(texts, self.max_words), {"max_tokens": self.max_tokens}
        lines = parse_numbered(answer)
        offline = FirstSentenceGist.gists(self, texts)
        return [cut_words(lines[i].strip(), self.max_words) if i < len(lines) and lines[i].strip() else offline[i]
                for i in range(len(texts))]


class GistFilter(Filter):
    """``Filter`` that shows each kept memory as its gist and keeps memories within a budget.

    After ``Filter``'s selection (``min_score``, ``mmr``, ``llm_filter``, ``k``),
    every kept memory's content is replaced by ``gist`` (default ``FirstSentenceGist()``);
    the full text stays in ``record.metadata["full_content"]``. With ``token_budget`` B,
    memories are kept in rank order while the running sum of ``token_counter.count(gist)``
    stays <= B (a memory that does not fit is skipped, a shorter later one may still fit).
    The gists' tokens are what the context then counts (``Load`` shows the gist).
    """

    constraints = {"gist": Param(FirstSentenceGist, none=True, expected="a FirstSentenceGist or LLMGist or None"),
                   "token_budget": Param(int, ge=1, none=True), "token_counter": TOKEN_COUNTER}

    def __init__(self, gist: Any = None, token_budget: int | None = None, token_counter: Any = None,
                 llm_filter: Any = None, min_score: float | None = None, mmr: Any = None, k: int = 5):
        self.gist = gist
        self.token_budget = token_budget
        self.token_counter = token_counter
        super().__init__(llm_filter=llm_filter, min_score=min_score, mmr=mmr, k=k)
        self._on_params_changed()

    def _on_params_changed(self) -> None:
        getattr(super(), "_on_params_changed", lambda: None)()
        self._gist = self.gist if self.gist is not None else FirstSentenceGist()
        self._counter = resolve_counter(self.token_counter)

    def _parts(self) -> list[Any]:
        return [self.llm_filter, self._gist]

    def _finish(self, state: WorkingState, hits: list[Hit]) -> Generator[Op, Any, WorkingState]:
        kept = hits[:self.k]
        texts = yield Op(self._gist.gists, self._gist.agists, [h.record.content for h in kept])
        out: list[Hit] = []
        used = 0
        for h, text in zip(kept, texts):
            cost = int(self._counter.count(text))
            if self.token_budget is not None and used + cost > self.token_budget:
                continue
            used += cost
            record = dataclasses.replace(h.record, content=text,
                                         metadata={**h.record.metadata, "full_content": h.record.content})
            out.append(dataclasses.replace(h, memory_record=record))
        state.selected = rerank(out, None, "filter")
        state.trace.append(f"filter: kept {len(out)} of {len(state.retrieved)} as gists ({used} tokens)")
        return state
