"""What extraction produces (``ExtractedMemory``) and the ``Extractor`` interface.

Extraction turns dialogue turns into typed long-term memories: a self-contained
sentence, its ``memory_type`` (one of ``memlab.records.MEMORY_TYPES``), a ``subject``
(the attribute it sets; two memories with the same subject conflict, the newer
superseding the older) and the ``source_ids`` of the turns it came from.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from ..base import Component, MemlabError
from ..llm.base import LLMUsage
from ..records import MEMORY_TYPES, MemoryRecord


@dataclass
class ExtractedMemory:
    """One memory worth keeping, before it is stored."""

    content: str
    memory_type: str = "fact"
    subject: str = ""
    source_ids: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.memory_type not in MEMORY_TYPES:
            raise MemlabError(f"memory_type must be one of {', '.join(MEMORY_TYPES)}, "
                              f"got {self.memory_type!r}")
        if not isinstance(self.content, str) or not self.content.strip():
            raise MemlabError("ExtractedMemory.content must be a non-empty string")
        self.source_ids = [str(s) for s in self.source_ids]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class Extractor(Component):
    """Reads turns, returns memories. ``usage`` is the LLM cost (zero without an LLM)."""

    def extract(self, records: list[MemoryRecord]) -> list[ExtractedMemory]:
        raise NotImplementedError

    async def aextract(self, records: list[MemoryRecord]) -> list[ExtractedMemory]:
        return self.extract(records)

    @property
    def usage(self) -> LLMUsage:
        return LLMUsage()

    def reset_usage(self) -> None:
        pass
