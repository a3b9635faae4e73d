"""The key-value store interface and the in-memory store.

A key-value store holds an ordered list of JSON-compatible dicts (CAMEL's
``BaseKeyValueStorage``: save appends, load returns all, clear empties), which is
all a chat history needs. Persistent stores write through, so nothing already
saved is lost when a process dies.
"""

from __future__ import annotations

import copy
from abc import abstractmethod
from typing import Any

from ..base import Component


class KeyValueStore(Component):
    """An append-only list of dict records, with load, clear and replace."""

    @abstractmethod
    def save(self, records: list[dict[str, Any]]) -> None:
        """Append ``records`` (each JSON-serialisable)."""

    @abstractmethod
    def load(self) -> list[dict[str, Any]]:
        """Every record saved so far, in order (copies: mutating them changes nothing)."""

    @abstractmethod
    def clear(self) -> None: ...

    def replace(self, records: list[dict[str, Any]]) -> None:
        """Make ``records`` the whole content (used by deletions)."""
        self.clear()
        self.save(records)

    def close(self) -> None:
        """Release files; a persistent store can be reopened afterwards."""


class InMemoryKeyValueStore(KeyValueStore):
    """Records in a Python list; gone when the process ends."""

    def __init__(self) -> None:
        self._records: list[dict[str, Any]] = []

    def save(self, records):
        self._records.extend(copy.deepcopy(list(records)))

    def load(self):
        return copy.deepcopy(self._records)

    def clear(self):
        self._records = []
