"""ChatHistoryBlock: the chat history in a key-value store, read back through a window."""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Sequence

from ..base import Param
from ..records import ContextRecord, MemoryRecord, Role
from ..storage.kv import InMemoryKeyValueStore, KeyValueStore
from .base import MemoryBlock, check_count, check_records

_UNSET = object()


# ``keep_rate`` wherever it is configured; a refusal is a ConfigError, a ValueError as CAMEL raises
KEEP_RATE = Param(float, ge=0, le=1)


class ChatHistoryBlock(MemoryBlock):
    """Every message in order, in a KeyValueStore (``storage``; default in memory).

    ``retrieve(window_size)`` scores what it returns (memlab fixes CAMEL's off-by-one,
    whose newest message gets ``keep_rate`` instead of 1.0)::

        score = 1.0                 for SYSTEM and DEVELOPER messages
        score = keep_rate ** i      otherwise, i = number of newer non-system messages
                                    among those returned (newest: i = 0, score 1.0;
                                    0 ** 0 = 1, so keep_rate = 0 still keeps the newest at 1)

    With keep_rate 0.9 the newest three non-system messages score 1.0, 0.9, 0.81.
    A leading SYSTEM/DEVELOPER message (the first record) is protected: windows always
    include it and pop/remove never delete it.

    The block keeps the parsed history in memory next to the store (a replay retrieves
    after every turn; parsing the whole store each time made retrieval quadratic), so
    write through the block, not to its store directly.
    """

    constraints = {"storage": Param(KeyValueStore, none=True), "keep_rate": KEEP_RATE}

    def __init__(self, storage: KeyValueStore | None = None, keep_rate: float = 0.9):
        self.storage = storage
        self.keep_rate = keep_rate
        self._on_params_changed()

    def _on_params_changed(self) -> None:
        # keep the records unless the storage itself was replaced
        if getattr(self, "_storage_arg", _UNSET) is not self.storage:
            self._store = self.storage if self.storage is not None else InMemoryKeyValueStore()
            self._storage_arg = self.storage
            self._parsed: list[MemoryRecord] | None = None

    @property
    def store(self) -> KeyValueStore:
        """The key-value store in use (the default one when ``storage`` is None)."""
        return self._store

    def _history(self) -> list[MemoryRecord]:
        if self._parsed is None:
            self._parsed = [MemoryRecord.from_dict(d) for d in self._store.load()]
        return self._parsed

    def view(self) -> Sequence[MemoryRecord]:
        """Every stored record, chronologically, without copying: read it, never change it
        (``records`` gives copies)."""
        return self._history()

    def records(self) -> list[MemoryRecord]:
        """Every stored record, chronologically (copies: changing them changes nothing)."""
        return [_copy(r) for r in self._history()]

    def __len__(self) -> int:
        return len(self._history())

    def write_records(self, records: Sequence[MemoryRecord]) -> None:
        records = check_records(records, "ChatHistoryBlock.write_records")
        if records:
            dicts = [r.to_dict() for r in records]
            self._store.save(dicts)
            if self._parsed is not None:
                self._parsed.extend(MemoryRecord.from_dict(d) for d in dicts)

    def retrieve(self, window_size: int | None = None) -> list[ContextRecord]:
        """Scored records, chronologically.

        ``None``: all records. ``0``: only a leading SYSTEM/DEVELOPER message (or []).
        ``N``: the leading SYSTEM/DEVELOPER message, if any, plus the last N other records.
        An empty history gives [] (CAMEL also warns; memlab stays quiet so replays are clean).
        """
        if window_size is not None:
            check_count(window_size, "window_size")
        history = self._history()
        lead = _leading_system(history)
        start = lead if window_size is None else max(lead, len(history) - window_size)
        # copy only what is returned: a replay asks for a short window after every turn
        records = [_copy(r) for r in history[:lead]] + [_copy(r) for r in history[start:]]
        out: list[ContextRecord] = []
        newer = 0  # non-system messages newer than the current one
        for rec in reversed(records):
            if rec.role.is_system:
                score = 1.0
            else:
                score = self.keep_rate ** newer
                newer += 1
            out.append(ContextRecord(memory_record=rec, score=float(score), timestamp=rec.timestamp))
        out.reverse()
        return out

    def pop_records(self, count: int) -> list[MemoryRecord]:
        """Remove the newest ``count`` records (never the leading system message).

        TypeError if ``count`` is not an int (bool included), ValueError if negative.
        Returns the removed records chronologically (fewer if the history is shorter).
        """
        check_count(count, "count")
        dicts = self._store.load()
        lead = _leading_system_dicts(dicts)
        n = min(count, len(dicts) - lead)
        if n == 0:
            return []
        removed = dicts[len(dicts) - n:]
        self._store.replace(dicts[:len(dicts) - n])
        self._parsed = None
        return [MemoryRecord.from_dict(d) for d in removed]

    def remove_records_by_indices(self, indices: Sequence[int]) -> list[MemoryRecord]:
        """Remove records at 0-based ``indices`` of the current history; return them in order.

        Index 0 is skipped (kept) when it is a SYSTEM/DEVELOPER message. An index outside
        ``0 .. len-1`` (negative ones included) raises IndexError before anything is removed.
        Repeated indices remove the record once.
        """
        dicts = self._store.load()
        wanted = set()
        for index in indices:
            if isinstance(index, bool) or not isinstance(index, int):
                raise TypeError(f"indices must be ints, got {type(index).__name__} {index!r}")
            if not 0 <= index < len(dicts):
                raise IndexError(f"index {index} out of range for a history of {len(dicts)} records")
            wanted.add(index)
        if _leading_system_dicts(dicts):
            wanted.discard(0)
        if not wanted:
            return []
        self._store.replace([d for i, d in enumerate(dicts) if i not in wanted])
        self._parsed = None
        return [MemoryRecord.from_dict(dicts[i]) for i in sorted(wanted)]

    def replace_records(self, records: Sequence[MemoryRecord]) -> None:
        """Make ``records`` the whole history (used by ``ChatHistoryMemory.clean_tool_calls``)."""
        records = check_records(records, "ChatHistoryBlock.replace_records")
        self._store.replace([r.to_dict() for r in records])
        self._parsed = None

    def clear(self) -> None:
        self._store.clear()
        self._parsed = None


def _copy(record: MemoryRecord) -> MemoryRecord:
    return dataclasses.replace(record, metadata=copy.deepcopy(record.metadata),
                               tool_calls=list(record.tool_calls))


def _leading_system(records: list[MemoryRecord]) -> int:
    """1 if the first record is SYSTEM/DEVELOPER (protected), else 0."""
    return 1 if records and records[0].role.is_system else 0


def _leading_system_dicts(dicts: list[dict]) -> int:
    return 1 if dicts and Role.parse(dicts[0]["role"]).is_system else 0
