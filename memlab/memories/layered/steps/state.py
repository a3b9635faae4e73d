"""What the pipeline steps share: the layers they work on, the state one pass reads and
writes, and the ``Step`` base class."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ....base import Component
from ....extraction import Extractor
from ....llm.base import LLMUsage, sum_usage
from ....records import Hit, MemoryRecord
from ....filters import Where
from ....strategy import Context
from ..long_term import LongTermMemory
from ..short_term import ShortTermMemory


@dataclass
class Layers:
    """The memories a pipeline works on (built by ``LayeredMemory``)."""

    short_term: ShortTermMemory
    long_term: LongTermMemory
    extractor: Extractor
    user_id: str = ""


@dataclass
class WorkingState:
    """Everything one pass of the pipeline reads and produces."""

    question: str
    now: float | None = None
    where: Where | None = None
    k: int | None = None               # how many hits Retrieve keeps (None: the step's k)
    query: str = ""                    # the query after rewriting
    queries: list[str] = field(default_factory=list)
    retrieved: list[Hit] = field(default_factory=list)
    selected: list[Hit] = field(default_factory=list)
    messages: list[dict[str, Any]] = field(default_factory=list)  # the agent prompt (Load): system, context, question
    context: Context | None = None     # what the memory contributes (Load); no question
    answer: str | None = None
    new_memories: list[MemoryRecord] = field(default_factory=list)
    trace: list[str] = field(default_factory=list)


def _usage_of(*parts: Any) -> LLMUsage:
    return sum_usage([p.usage for p in parts if p is not None and isinstance(getattr(p, "usage", None), LLMUsage)])


def _reset_usage(*parts: Any) -> None:
    for p in parts:
        if p is not None and callable(getattr(p, "reset_usage", None)):
            p.reset_usage()


class Step(Component):
    """One pipeline step. ``usage`` sums the LLM cost of the step's parts."""

    def run(self, state: WorkingState, layers: Layers) -> WorkingState:
        raise NotImplementedError

    async def arun(self, state: WorkingState, layers: Layers) -> WorkingState:
        return self.run(state, layers)

    def _parts(self) -> list[Any]:
        return []

    @property
    def usage(self) -> LLMUsage:
        return _usage_of(*self._parts())

    def reset_usage(self) -> None:
        _reset_usage(*self._parts())
