"""``LLMReranker``: a ``Selector`` that moves the hits a model judges relevant to the front."""

from __future__ import annotations

from ..base import Param
from ..llm.base import LLM, LLMProgram, UsesLLM
from ..llm.prompts import filter_prompt, filter_schema, is_selection_json, parse_selection
from ..records import Hit
from .selection import Selector, rerank


def shown(hit: Hit, max_words: int | None = None) -> str:
    """What the model reads of a hit: ``<name>: <content>`` (the speaker matters to questions
    such as "What did Caroline paint?"), or the content alone when the record has no name;
    with ``max_words``, the content's first ``max_words`` words (split on whitespace) and
    " ..." when it had more."""
    record = hit.record
    content = record.content
    if max_words is not None:
        words = content.split()
        if len(words) > max_words:
            content = " ".join(words[:max_words]) + " ..."
    return f"{record.name}: {content}" if record.name else content


class LLMReranker(UsesLLM, Selector):
    """Shows ``llm`` the first ``window`` hits and asks which are relevant to the question,
    most relevant first (the relevance filter's prompt and answer schema, at most
    ``max_named`` numbers: fewer numbers to write is most of a small model's time). The hits it
    names come first, in its order; then the window's other hits and every hit after the
    window, in the retriever's order. Nothing is dropped, so hits below
    the window keep their places and recall at any depth >= ``window`` is unchanged.

    Scores: the hit at position i takes the i-th score of the retriever's list, so the list
    stays non-increasing; ``components["llm_rerank"]`` holds the new rank. One call per query:
    ``RetrievalStrategy`` keeps the verdict for the query's later searches, and ``usage``
    counts the calls and tokens (an answer that is not the asked JSON is read for what
    numbers it has and counted in ``usage.format_errors``).

    ``max_words`` (None: whole hits) cuts each hit the model reads to its first words, so that
    a window of long messages fits the model's context (LongMemEval's haystacks hold user
    turns of thousands of words); the hits returned are whole.
    """

    name = "llm_rerank"

    constraints = {
        "llm": Param(LLM),
        "window": Param(int, ge=1),
        "max_named": Param(int, ge=1),
        "max_words": Param(int, ge=1, none=True),
    }

    def __init__(self, llm: LLM, window: int = 10, max_named: int = 5, max_words: int | None = None):
        self.llm = llm
        self.window = window
        self.max_named = max_named
        self.max_words = max_words

    def _order(self, hits: list[Hit], k: int, text: str) -> list[Hit]:
        top = hits[:self.window]
        if not is_selection_json(text):
            self._format_error()
        chosen = parse_selection(text, len(top))[:self.max_named]
        picked = set(chosen)
        ranked = [top[i] for i in chosen] + [h for i, h in enumerate(top) if i not in picked] + hits[self.window:]
        return rerank(ranked[:k], [h.score for h in hits[:k]], self.name)

    def _select(self, query: str, hits: list[Hit], k: int) -> LLMProgram:
        if not hits or k <= 0:
            return []
        top = hits[:self.window]
        named = min(self.max_named, len(top))
        return self._order(hits, k, (yield filter_prompt(query, [shown(h, self.max_words) for h in top], named),
                                     {"schema": filter_schema(len(top), named)}))

    def select(self, query: str, hits: list[Hit], k: int) -> list[Hit]:
        return self.run_program(self._select(query, hits, k))

    async def aselect(self, query: str, hits: list[Hit], k: int) -> list[Hit]:
        return await self.arun_program(self._select(query, hits, k))
