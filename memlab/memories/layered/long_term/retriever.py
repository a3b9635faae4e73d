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
    such as ``PseudoRelevanceFeedback``). Searching it never reinforces memories.

    Honest about what it holds: ``records()``, ``len``, ``in`` and ``get_record`` answer
    from the memory's active memories (what ``search`` can return), read at call time.
    """

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
        return self.long_term.count("active")

    def records(self) -> list[MemoryRecord]:
        return self.long_term.records(include_outdated=False)

    def __contains__(self, id: object) -> bool:
        record = self.long_term.get(str(id))
        return record is not None and record.metadata["status"] == "active"

    def get_record(self, id: str) -> MemoryRecord:
        record = self.long_term.get(str(id))
        if record is None or record.metadata["status"] != "active":
            raise KeyError(f"LongTermRetriever has no record with id {id!r}")
        return record

    def search(self, query: str, k: int = 5, *, where: Where | None = None,
               now: float | None = None) -> list[Hit]:
        return self.long_term.search(query, k, where=where, now=now, reinforce="none")
