"""``LongTermRetriever``: a read-only ``Retriever`` view of a ``LongTermMemory``."""

from __future__ import annotations

from typing import Any

from ....base import MemlabError
from ....records import Hit, MemoryRecord
from ....retrieval.base import Retriever
from ....filters import Where
from .memory import LongTermMemory


class LongTermRetriever(Retriever):
    """A read-only ``Retriever`` view of a ``LongTermMemory`` (for expanders that search,
    such as ``PseudoRelevanceFeedback``). Searching it never reinforces memories."""

    name = "long_term"

    def __init__(self, long_term: LongTermMemory):
        super().__init__()
        self.long_term = long_term

    def add(self, records: Any) -> None:
        raise MemlabError("LongTermRetriever is read-only: add memories to the LongTermMemory")

    def remove(self, ids: Any) -> None:
        raise MemlabError("LongTermRetriever is read-only: delete memories from the LongTermMemory")

    def _add(self, records: list[MemoryRecord]) -> None:  # pragma: no cover - add raises first
        raise MemlabError("LongTermRetriever is read-only")

    def _remove(self, ids: list[str]) -> None:  # pragma: no cover
        raise MemlabError("LongTermRetriever is read-only")

    def _clear(self) -> None:
        pass

    def __len__(self) -> int:
        return len(self.long_term)

    def search(self, query: str, k: int = 5, *, where: Where | None = None,
               now: float | None = None) -> list[Hit]:
        return self.long_term.search(query, k, where=where, now=now, reinforce="none")
