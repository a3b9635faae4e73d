"""Key-value stores: the interface, an in-memory list, a JSON-lines file and SQLite.

A key-value store holds an ordered list of JSON-compatible dicts (CAMEL's
``BaseKeyValueStorage``: save appends, load returns all, clear empties), which is
all a chat history needs. Persistent stores write through, so nothing already
saved is lost when a process dies.
"""

from __future__ import annotations

import copy
import json
import os
import re
import sqlite3
import tempfile
import threading
import warnings
from abc import abstractmethod
from pathlib import Path
from typing import Any

from ..atomic import output_mode
from ..base import Component, MemlabError, Param
from ..sqlite import connect


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


def _encode_records(records: list[dict[str, Any]], where: str) -> list[str]:
    """One JSON text per record; fails before anything is written if one is not serialisable."""
    lines = []
    for n, record in enumerate(records):
        if not isinstance(record, dict):
            raise MemlabError(f"{where}: record {n} must be a dict, got {type(record).__name__}")
        try:
            lines.append(json.dumps(record, ensure_ascii=False, allow_nan=False))
        except (TypeError, ValueError) as exc:
            raise MemlabError(f"{where}: record {n} is not JSON-serialisable: {exc}") from None
    return lines


class JsonlKeyValueStore(KeyValueStore):
    """Records as JSON lines in one file, appended as they are saved.

    Opening reads the existing file (a line that is not a JSON object raises
    MemlabError naming the file and line), except for a torn last line -- one without its
    newline that is not valid JSON, which only a crash during ``save`` leaves: it is cut
    off, every complete line is kept, and a RuntimeWarning and ``recovered`` say what was
    dropped. ``save`` appends and flushes, so a crash
    loses nothing already saved; ``replace`` and ``clear`` write a temporary file in
    the same directory and swap it in with ``os.replace``, so the file is always
    either the old or the new content.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = path
        self._on_params_changed()

    def _on_params_changed(self) -> None:
        self._path = Path(self.path)
        self.recovered: dict[str, Any] | None = None  # what opening dropped (see _drop_torn_tail)
        self._records: list[dict[str, Any]] = self._read() if self._path.exists() else []
        # a file written elsewhere may lack the final newline; appending must not glue lines
        self._needs_newline = self._path.exists() and self._ends_without_newline()

    def _ends_without_newline(self) -> bool:
        with open(self._path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            if fh.tell() == 0:
                return False
            fh.seek(-1, os.SEEK_END)
            return fh.read(1) != b"\n"

    def _read(self) -> list[dict[str, Any]]:
        data = self._path.read_bytes()
        lines = data.split(b"\n")
        records = []
        offset = 0  # byte offset of the current line
        for lineno, raw in enumerate(lines, start=1):
            start, offset = offset, offset + len(raw) + 1
            if not raw.strip():
                continue
            try:
                record = json.loads(raw.decode("utf-8"))
            except (UnicodeDecodeError, json.JSONDecodeError) as exc:
                if lineno == len(lines):  # the last line has no newline: an append cut short
                    self._drop_torn_tail(start, raw, lineno, len(records))
                    break
                reason = exc.msg if isinstance(exc, json.JSONDecodeError) else "not UTF-8"
                raise MemlabError(f"{self._path}, line {lineno}: not valid JSON ({reason})") from None
            if not isinstance(record, dict):
                raise MemlabError(f"{self._path}, line {lineno}: expected a JSON object, "
                                  f"got {type(record).__name__}")
            records.append(record)
        return records

    def _drop_torn_tail(self, start: int, raw: bytes, lineno: int, kept: int) -> None:
        """Cut the file after its last complete line; say what was dropped (``self.recovered``).

        Every ``save`` writes whole lines ending in a newline, so a last line without one that
        is not valid JSON can only be a write a crash interrupted: no ``save`` returned for it.
        """
        self.recovered = {"line": lineno, "bytes": len(raw), "dropped": raw[:200].decode("utf-8", "replace"),
                          "kept_records": kept}
        with open(self._path, "r+b") as fh:
            fh.truncate(start)
            fh.flush()
            os.fsync(fh.fileno())
        warnings.warn(f"{self._path}: dropped a torn last line (line {lineno}, {len(raw)} bytes) left by "
                      f"an interrupted write; kept the {kept} complete record(s)", RuntimeWarning, stacklevel=4)

    def save(self, records):
        records = list(records)
        lines = _encode_records(records, str(self._path))
        if not lines:
            return
        self._path.parent.mkdir(parents=True, exist_ok=True)
        with open(self._path, "a", encoding="utf-8") as fh:
            fh.write(("\n" if self._needs_newline else "") + "".join(line + "\n" for line in lines))
            fh.flush()
        self._needs_newline = False
        # keep what was written, not the caller's objects (tuples become lists, as on reload)
        self._records.extend(json.loads(line) for line in lines)

    def load(self):
        return copy.deepcopy(self._records)

    def clear(self):
        self.replace([])

    def replace(self, records):
        records = list(records)
        lines = _encode_records(records, str(self._path))
        self._path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=self._path.name + ".", suffix=".tmp", dir=self._path.parent)
        try:
            os.chmod(tmp, output_mode(self._path))  # the umask's mode (or the file's), not mkstemp's 0600
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write("".join(line + "\n" for line in lines))
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, self._path)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise
        self._records = [json.loads(line) for line in lines]
        self._needs_newline = False


_TABLE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class SQLiteKeyValueStore(KeyValueStore):
    """Records as JSON text in one SQLite table, kept in insertion order.

    ``path`` is a database file (created if missing) or ``":memory:"``. Each ``save``
    and ``replace`` is one committed transaction. After ``close`` the store refuses
    further use; open a new one on the same path to see the data again.
    """

    constraints = {"table": Param(str, test=_TABLE_NAME.fullmatch,
                                  expected="a SQL identifier (letters, digits, _)")}

    def __init__(self, path: str | os.PathLike[str], table: str = "records") -> None:
        self.path = path
        self.table = table
        self._conn: sqlite3.Connection | None = None
        self._on_params_changed()

    def _on_params_changed(self) -> None:
        self.close()
        target = str(self.path)
        if target != ":memory:":
            Path(target).parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        # check_same_thread=False plus our own lock: evaluations may run in worker threads
        def setup(conn: sqlite3.Connection) -> None:
            with conn:
                conn.execute(f'CREATE TABLE IF NOT EXISTS "{self.table}" '
                             "(seq INTEGER PRIMARY KEY AUTOINCREMENT, data TEXT NOT NULL)")

        self._conn = connect(target, setup=setup)

    def _db(self) -> sqlite3.Connection:
        if self._conn is None:
            raise MemlabError(f"SQLiteKeyValueStore({str(self.path)!r}) is closed; open a new store")
        return self._conn

    def _insert(self, conn: sqlite3.Connection, lines: list[str]) -> None:
        conn.executemany(f'INSERT INTO "{self.table}" (data) VALUES (?)', [(line,) for line in lines])

    def save(self, records):
        lines = _encode_records(list(records), f"{self.path}:{self.table}")
        if not lines:
            return
        with self._lock, self._db() as conn:
            self._insert(conn, lines)

    def load(self):
        with self._lock:
            rows = self._db().execute(f'SELECT seq, data FROM "{self.table}" ORDER BY seq').fetchall()
        out = []
        for seq, data in rows:
            try:
                out.append(json.loads(data))
            except json.JSONDecodeError as exc:
                raise MemlabError(f"{self.path}: table {self.table!r}, row seq={seq}: "
                                  f"not valid JSON ({exc.msg})") from None
        return out

    def clear(self):
        self.replace([])

    def replace(self, records):
        lines = _encode_records(list(records), f"{self.path}:{self.table}")
        with self._lock, self._db() as conn:  # one transaction: old content or new, never neither
            conn.execute(f'DELETE FROM "{self.table}"')
            self._insert(conn, lines)

    def close(self) -> None:
        conn, self._conn = getattr(self, "_conn", None), None
        if conn is not None:
            conn.close()
