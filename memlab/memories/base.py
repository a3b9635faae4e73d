"""The AgentMemory interface (CAMEL's ``camel.memories.base.AgentMemory``).

An agent memory stores the conversation in one or more blocks, ``retrieve`` returns
scored ContextRecords, and its context creator turns them into the budgeted message
list: ``get_context() = get_context_creator().create_context(retrieve())``.
"""

from __future__ import annotations

import dataclasses
from abc import abstractmethod
from collections.abc import Sequence
from typing import Any

from ..base import Component, Param
from ..context import ScoreBasedContextCreator
from ..records import ContextRecord, MemoryRecord
from ..tokens import TiktokenCounter

#: token_limit of the default context creator: gpt-4o's 128k context window, so that by
#: default nothing is cut; give a ScoreBasedContextCreator to study a tighter budget.
DEFAULT_TOKEN_LIMIT = 128_000


def default_context_creator() -> ScoreBasedContextCreator:
    """``ScoreBasedContextCreator(TiktokenCounter(), token_limit=128_000)``.

    TiktokenCounter (o200k_base) counts exactly and loads offline from memlab's package data.
    """
    return ScoreBasedContextCreator(token_counter=TiktokenCounter(), token_limit=DEFAULT_TOKEN_LIMIT)


class AgentMemory(Component):
    """Base class of agent memories. Subclasses set ``self._context_creator``."""

    _context_creator: ScoreBasedContextCreator
    # every agent memory takes these two (a duck-typed creator, as CAMEL's are)
    constraints = {
        "agent_id": Param(str),
        "context_creator": Param(none=True, test=lambda c: hasattr(c, "create_context"),
                                 expected="an object with create_context(records), or None"),
    }

    @abstractmethod
    def retrieve(self) -> list[ContextRecord]:
        """Scored records for the next model call."""

    @abstractmethod
    def write_records(self, records: Sequence[MemoryRecord]) -> None:
        """Store records in order."""

    def write_record(self, record: MemoryRecord) -> None:
        self.write_records([record])

    @abstractmethod
    def clear(self) -> None:
        """Forget everything."""

    def get_context_creator(self) -> ScoreBasedContextCreator:
        """The context creator (the default one when ``context_creator`` is None)."""
        return self._context_creator

    def get_context(self) -> tuple[list[dict[str, Any]], int]:
        """``(messages, token_count)`` of ``retrieve()`` within the creator's budget."""
        return self.get_context_creator().create_context(self.retrieve())

    def _set_context_creator(self, creator: Any) -> None:
        self._context_creator = creator if creator is not None else default_context_creator()




def with_agent_id(records: Sequence[MemoryRecord], agent_id: str) -> list[MemoryRecord]:
    """Copies of records without an agent_id stamped with ``agent_id`` (the caller's stay as they are)."""
    if not agent_id:
        return list(records)
    return [dataclasses.replace(r, agent_id=agent_id) if r.agent_id == "" else r for r in records]
