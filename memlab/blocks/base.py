"""The MemoryBlock interface (CAMEL's ``camel.memories.base.MemoryBlock``).

A block is the smallest unit of memory: it stores records and can forget them. It has
no common ``retrieve``: a window over a chat history and a similarity search take
different arguments, so each block defines its own.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence

from ..base import Component, ConfigError
from ..records import MemoryRecord


class MemoryBlock(Component):
    """Stores MemoryRecords; ``pop_records`` and ``remove_records_by_indices`` are optional."""

    @abstractmethod
    def write_records(self, records: Sequence[MemoryRecord]) -> None:
        """Store ``records`` in order."""

    def write_record(self, record: MemoryRecord) -> None:
        """Store one record."""
        self.write_records([record])

    def pop_records(self, count: int) -> list[MemoryRecord]:
        """Remove the newest ``count`` records and return them chronologically."""
        raise NotImplementedError(f"{type(self).__name__} does not support pop_records")

    def remove_records_by_indices(self, indices: Sequence[int]) -> list[MemoryRecord]:
        """Remove the records at these 0-based positions and return them."""
        raise NotImplementedError(f"{type(self).__name__} does not support remove_records_by_indices")

    @abstractmethod
    def clear(self) -> None:
        """Forget every record."""


def check_records(records: Sequence[MemoryRecord], where: str) -> list[MemoryRecord]:
    """``records`` as a list, or TypeError naming the first item that is not a MemoryRecord."""
    if isinstance(records, MemoryRecord):
        raise TypeError(f"{where} expects a list of MemoryRecord; use write_record for one record")
    out = list(records)
    for i, rec in enumerate(out):
        if not isinstance(rec, MemoryRecord):
            raise TypeError(f"{where}: item {i} is {type(rec).__name__}, not MemoryRecord")
    return out


def check_count(value: object, name: str) -> int:
    """A non-negative int (bool excluded), else TypeError / ValueError naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, got {type(value).__name__} {value!r}")
    if value < 0:
        raise ConfigError(f"{name} must be non-negative, got {value}")
    return value
