"""Checks every dataset loader runs (native, LoCoMo, LongMemEval): reading and semantics.

``read_json`` reads a file as UTF-8 JSON, gzip-compressed or not (told by the gzip magic
bytes, whatever the name): bytes that are not UTF-8 are named by byte offset,
a syntax error by line and column, and nesting deeper than ``MAX_DEPTH`` is refused (a
200,000-deep array must be one clear line, not a RecursionError). ``iter_json_array`` reads
a file holding one JSON array element by element (the whole array is never in memory: a
278 MB LongMemEval file is read one question at a time), with the same errors. ``NaN`` and ``Infinity``
are accepted where JSON values are free-form (metadata); a NaN where a string is needed
is a type error like any other.

``check_dataset`` runs on the dialogues a loader built, whatever the format:

- every id, speaker, role, text and query is a string (ids and queries non-empty), every
  time finite; ``answer``, ``category``, ``content`` and ``after_turn`` are strings or None;
- a turn's ``text`` and ``content`` hold at most ``MAX_TEXT_CHARS`` characters;
- dialogue ids are unique in the dataset; then ``check_dialogue`` on each dialogue.

Every message names the file, the dialogue/session/turn/probe and the field.

Why over 400 lines: these are the shared checks of every loader, each with a message that
names the file, the record and the field; splitting them would give each loader several
places to look.
"""

from __future__ import annotations

import codecs
import difflib
import gzip
import json
import math
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ...text import json_problem
from ..dataset import ROLES, DatasetError, Dialogue, format_time

#: Errors listed in one DatasetError message at most (the rest are counted).
MAX_ERRORS = 10
#: Longest repr of a value quoted in a message (longer ones end in "...").
MAX_REPR = 80
#: Deepest nesting of JSON arrays/objects a dataset file may have (real files need < 10).
MAX_DEPTH = 100
#: Most characters in one turn's text (or content): about 250,000 tokens, beyond any real turn.
MAX_TEXT_CHARS = 1_000_000


#: The first two bytes of every gzip file.
GZIP_MAGIC = b"\x1f\x8b"


def _read_bytes(path: str) -> bytes:
    """The file's bytes, decompressed when it is gzip (magic bytes, not the name, decide)."""
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        raise DatasetError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise DatasetError(f"{path}: is a folder, expected a JSON file") from None
    if data.startswith(GZIP_MAGIC):
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as e:
            raise DatasetError(f"{path}: not a valid gzip file ({e})") from None
    return data


def read_json(path: str) -> Any:
    """Parse a UTF-8 JSON file, gzip-compressed or not (a leading BOM is skipped); every
    failure names the file."""
    data = _read_bytes(path)
    skip = len(codecs.BOM_UTF8) if data.startswith(codecs.BOM_UTF8) else 0
    try:
        text = data[skip:].decode("utf-8")
    except UnicodeDecodeError as e:
        offset = skip + e.start
        raise DatasetError(f"{path}: not UTF-8: byte 0x{data[offset]:02x} at byte offset {offset} "
                           f"({e.reason}); save the file as UTF-8") from None
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        raise DatasetError(f"{path}: not valid JSON: {json_problem(e)} at line {e.lineno}, column {e.colno}") from None
    except RecursionError:
        raise DatasetError(f"{path}: JSON nested deeper than {MAX_DEPTH} levels") from None
    where = _too_deep(doc)
    if where is not None:
        where = where if len(where) <= 2 * MAX_REPR else where[:2 * MAX_REPR - 3] + "..."
        raise DatasetError(f"{path}: JSON nested deeper than {MAX_DEPTH} levels at {where}")
    return doc


def _open_binary(path: str) -> Any:
    """A binary stream of the file's (decompressed) bytes."""
    try:
        raw = open(path, "rb")
    except FileNotFoundError:
        raise DatasetError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise DatasetError(f"{path}: is a folder, expected a JSON file") from None
    if raw.read(2) == GZIP_MAGIC:
        raw.seek(0)
        return gzip.GzipFile(fileobj=raw, mode="rb")
    raw.seek(0)
    return raw


def first_char(path: str) -> str:
    """The first character of the file's JSON text that is not whitespace (or a BOM); '' if none."""
    with _open_binary(path) as f:
        try:
            head = f.read(4096)
            while head and not head.lstrip(b" \t\r\n").lstrip(codecs.BOM_UTF8).lstrip(b" \t\r\n"):
                more = f.read(4096)
                if not more:
                    return ""
                head += more
        except (OSError, EOFError, zlib.error) as e:
            raise DatasetError(f"{path}: not a valid gzip file ({e})") from None
    text = head.lstrip(b" \t\r\n").lstrip(codecs.BOM_UTF8).lstrip(b" \t\r\n")
    return chr(text[0]) if text else ""


#: Characters read at a time by ``iter_json_array`` (doubled while one element does not fit).
STREAM_CHUNK = 1 << 20


def iter_json_array(path: str, chunk: int = STREAM_CHUNK) -> Iterator[Any]:
    """The elements of a file holding one JSON array, parsed one at a time.

    Only the element being parsed (and a read-ahead of ``chunk`` characters) is held; the
    file may be gzip-compressed. Errors name the file: not an array, a syntax error (line
    and column), bytes that are not UTF-8, nesting deeper than ``MAX_DEPTH``.
    """
    decoder = json.JSONDecoder()
    with _open_binary(path) as raw:
        utf8 = codecs.getincrementaldecoder("utf-8")()
        buf, pos, eof, lines_before, line_start, read_bytes = "", 0, False, 0, 0, 0

        def fill(size: int) -> bool:
            nonlocal buf, pos, eof, lines_before, line_start, read_bytes
            if eof:
                return False
            try:
                data = raw.read(size)
            except (OSError, EOFError, zlib.error) as e:
                raise DatasetError(f"{path}: not a valid gzip file ({e})") from None
            skip = len(codecs.BOM_UTF8) if read_bytes == 0 and data.startswith(codecs.BOM_UTF8) else 0
            try:
                more = utf8.decode(data[skip:], final=not data)
            except UnicodeDecodeError as e:
                offset = read_bytes - utf8.getstate()[0].__len__() + skip + max(e.start, 0)
                byte = (e.object[e.start] if e.start < len(e.object) else 0)
                raise DatasetError(f"{path}: not UTF-8: byte 0x{byte:02x} at byte offset {offset} "
                                   f"({e.reason}); save the file as UTF-8") from None
            read_bytes += len(data)
            dropped = buf[:pos]
            n = dropped.count("\n")
            if n:
                lines_before += n
                line_start = len(dropped) - dropped.rfind("\n") - 1
            else:
                line_start += len(dropped)
            buf, pos = buf[pos:] + more, 0
            eof = not data
            return bool(data)

        def where(offset: int) -> str:
            head = buf[:offset]
            n = head.count("\n")
            col = (offset - head.rfind("\n")) if n else (line_start + offset + 1)
            return f"line {lines_before + n + 1}, column {col}"

        def skip_ws() -> str:
            nonlocal pos
            while True:
                while pos < len(buf) and buf[pos] in " \t\r\n":
                    pos += 1
                if pos < len(buf):
                    return buf[pos]
                if not fill(chunk):
                    return ""

        if skip_ws() != "[":
            raise DatasetError(f"{path}: not a JSON array (expected '[' at {where(pos)})")
        pos += 1
        index = 0
        while True:
            c = skip_ws()
            if c == "]":
                pos += 1
                if skip_ws():
                    raise DatasetError(f"{path}: not valid JSON: extra data at {where(pos)}")
                return
            if index:
                if c != ",":
                    raise DatasetError(f"{path}: not valid JSON: expected ',' or ']' at {where(pos)}")
                pos += 1
                c = skip_ws()
            if not c:
                raise DatasetError(f"{path}: not valid JSON: the array is not closed (end of file)")
            size = chunk
            while True:
                try:
                    item, end = decoder.raw_decode(buf, pos)
                    break
                except json.JSONDecodeError as e:
                    if not fill(size):  # the whole rest of the file is in buf: a real error
                        raise DatasetError(f"{path}: not valid JSON: {json_problem(e)} at {where(e.pos)}") from None
                    size *= 2
                except RecursionError:
                    raise DatasetError(f"{path}: JSON nested deeper than {MAX_DEPTH} levels") from None
            deep = _too_deep(item)
            if deep is not None:
                raise DatasetError(f"{path}: JSON nested deeper than {MAX_DEPTH} levels at [{index}]{deep}")
            pos = end
            index += 1
            yield item


def _too_deep(doc: Any) -> str | None:
    """The path of the first container nested deeper than MAX_DEPTH, else None (no recursion)."""
    stack: list[tuple[Any, int, str]] = [(doc, 1, "")]
    while stack:
        node, depth, where = stack.pop()
        items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
        for key, value in items:
            if isinstance(value, (dict, list)):
                path = f"{where}[{key!r}]"
                if depth + 1 > MAX_DEPTH:
                    return path
                stack.append((value, depth + 1, path))
    return None


def got(value: Any) -> str:
    """'null', 'number 5', "string 'x'": how a wrong value is quoted in messages."""
    return "null" if value is None else f"{_json_type(value)} {_short(value)}"


_KINDS: dict[str, type | tuple[type, ...]] = {"string": str, "object": dict, "array": list}


def get_field(obj: dict[str, Any], name: str, kind: str, source: str, where: str,
              required: bool = True) -> Any:
    """``obj[name]`` checked to be a JSON ``kind`` ('string', 'object', 'array').

    A missing field is None when not ``required``; otherwise, like a wrong kind, an error
    naming file, place and field."""
    if name not in obj:
        if required:
            raise DatasetError(f"{source}: {where}: field {name!r} is required")
        return None
    value = obj[name]
    if not isinstance(value, _KINDS[kind]):
        article = "an" if kind[0] in "aeiou" else "a"
        raise DatasetError(f"{source}: {where}: field {name!r} must be {article} {kind}, got {got(value)}")
    return value


def check_dataset(dialogues: list[Dialogue], source: str, check_times: bool = True) -> None:
    """The checks every loader runs on the dialogues it built (see the module docstring)."""
    problems: list[str] = []
    seen: set[Any] = set()
    for d in dialogues:
        problems.extend(_field_problems(d, source))
        if d.id in seen:
            problems.append(f"{source}: dialogue {_short(d.id)}: duplicate dialogue id")
        elif isinstance(d.id, str):
            seen.add(d.id)
    _raise(problems)
    for d in dialogues:
        check_dialogue(d, source, check_times)


def _field_problems(d: Dialogue, source: str) -> list[str]:
    out: list[str] = []

    def need(value: Any, where: str, name: str, optional: bool = False, empty: bool = True) -> None:
        if value is None and optional:
            return
        if not isinstance(value, str):
            out.append(f"{source}: {where}: field {name!r} must be a string, got {got(value)}")
        elif not empty and not value.strip():
            out.append(f"{source}: {where}: field {name!r} must not be empty")

    def finite(value: Any, where: str, name: str) -> None:
        if value is not None and not (isinstance(value, (int, float)) and math.isfinite(value)):
            out.append(f"{source}: {where}: field {name!r} must be a finite time, got {got(value)}")

    def limit(value: Any, where: str, name: str) -> None:
        if isinstance(value, str) and len(value) > MAX_TEXT_CHARS:
            out.append(f"{source}: {where}: field {name!r} has {len(value):,} characters; "
                       f"the limit is {MAX_TEXT_CHARS:,} (MAX_TEXT_CHARS)")

    need(d.id, f"dialogue {_short(d.id)}", "id", empty=False)
    for s in d.sessions:
        where = _location(d.id, s.id)
        need(s.id, where, "id", empty=False)
        finite(s.timestamp, where, "timestamp")
        for i, t in enumerate(s.turns):
            where = _location(d.id, s.id, (i + 1, t.id))
            need(t.id, where, "id", empty=False)
            need(t.speaker, where, "speaker")
            need(t.role, where, "role")
            need(t.text, where, "text")
            need(t.content, where, "content", optional=True)
            limit(t.text, where, "text")
            limit(t.content, where, "content")
            finite(t.timestamp, where, "timestamp")
    for p in d.probes:
        where = _location(d.id, probe=p.id)
        need(p.id, where, "id", empty=False)
        need(p.query, where, "query", empty=False)
        need(p.after_turn, where, "after_turn", optional=True)
        need(p.answer, where, "answer", optional=True)
        need(p.category, where, "category", optional=True)
        finite(p.timestamp, where, "timestamp")
        for name in ("evidence", "stale_evidence"):
            ids = getattr(p, name)
            for e in ids if isinstance(ids, list) else [ids]:
                need(e, where, name)
    return out


def check_dialogue(d: Dialogue, source: str = "<dataset>", check_times: bool = True) -> None:
    """Semantic checks the schema cannot express; raise DatasetError listing the problems.

    - session ids and turn ids unique in the dialogue; probe ids unique;
    - roles valid; turn times non-decreasing in replay order (unless ``check_times`` is False);
    - a probe's ``after_turn`` and every evidence and stale_evidence id are turns of the
      dialogue, said at or before the point where the probe is asked; no id is listed
      twice, nor as both evidence and stale_evidence;
    - a probe's ``timestamp``, when given, is not earlier than the time of the turn it
      follows (``after_turn``, or the last turn when ``after_turn`` is None).
    """
    problems: list[str] = []
    seen_sessions: set[str] = set()
    positions: dict[str, int] = {}
    times: dict[str, float] = {}
    last: str | None = None  # id of the last turn in replay order
    previous: float | None = None
    n = 0
    for s in d.sessions:
        if s.id in seen_sessions:
            problems.append(f"{source}: {_location(d.id, s.id)}: duplicate session id")
        seen_sessions.add(s.id)
        for i, t in enumerate(s.turns):
            where = _location(d.id, s.id, (i + 1, t.id))
            if t.id in positions:
                problems.append(f"{source}: {where}: duplicate turn id {_short(t.id)}")
            else:
                positions[t.id] = n
                times[t.id] = t.timestamp
            last = t.id
            if t.role not in ROLES:
                problems.append(f"{source}: {where}: field 'role' must be one of "
                                f"{', '.join(map(repr, ROLES))}, got {_short(t.role)}")
            if check_times and previous is not None and t.timestamp < previous:
                problems.append(f"{source}: {where}: field 'timestamp' goes back in time "
                                f"(earlier than the previous turn)")
            previous = t.timestamp
            n += 1
    seen_probes: set[str] = set()
    known = list(positions)
    for p in d.probes:
        where = f"{source}: {_location(d.id, probe=p.id)}"
        if p.id in seen_probes:
            problems.append(f"{where}: duplicate probe id")
        seen_probes.add(p.id)
        asked_at = n
        if p.after_turn is not None:
            if p.after_turn not in positions:
                problems.append(f"{where}: field 'after_turn': "
                                f"{_unknown(p.after_turn, known, 'turn id')}")
                continue
            asked_at = positions[p.after_turn] + 1
        follows = p.after_turn if p.after_turn is not None else last
        if p.timestamp is not None and follows is not None and p.timestamp < times[follows]:
            which = (f"after_turn {_short(follows)}" if p.after_turn is not None
                     else f"the last turn {_short(follows)} (after_turn is None)")
            problems.append(f"{where}: field 'timestamp' {format_time(p.timestamp)} is earlier "
                            f"than {which} at {format_time(times[follows])}")
        for name, ids in (("evidence", p.evidence), ("stale_evidence", p.stale_evidence)):
            for e in ids:
                if e not in positions:
                    problems.append(f"{where}: field {name!r}: {_unknown(e, known, 'turn id')}")
                elif positions[e] >= asked_at:
                    problems.append(f"{where}: field {name!r}: turn {_short(e)} comes after the "
                                    f"probe is asked (after_turn {_short(p.after_turn)})")
            if len(set(ids)) != len(ids):
                problems.append(f"{where}: field {name!r} lists a turn id twice")
        both = sorted(set(p.evidence) & set(p.stale_evidence))
        if both:
            problems.append(f"{where}: field 'stale_evidence': turn {_short(both[0])} is also gold "
                            f"evidence (a turn is either current or stale)")
    _raise(problems)



def _location(dialogue: str, session: str | None = None, turn: tuple[int, str] | None = None,
              probe: str | None = None) -> str:
    parts = [f"dialogue {_short(dialogue)}"]
    if session is not None:
        parts.append(f"session {_short(session)}")
    if turn is not None:
        parts.append(f"turn {turn[0]} ({_short(turn[1])})")
    if probe is not None:
        parts.append(f"probe {_short(probe)}")
    return ", ".join(parts)


def _raise(messages: list[str]) -> None:
    if not messages:
        return
    shown = messages[:MAX_ERRORS]
    more = len(messages) - len(shown)
    if more:
        shown.append(f"... and {more} more error(s)")
    raise DatasetError("\n".join(shown))


def _unknown(name: str, known: list[str], what: str) -> str:
    """'unknown turn id 't9' (did you mean 't8'?)' without listing every id."""
    close = difflib.get_close_matches(name, known, n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return f"unknown {what} {_short(name)}{hint}"


def _short(value: Any) -> str:
    """``repr(value)`` cut to ``MAX_REPR`` characters, the cut marked by "..."."""
    text = repr(value)
    return text if len(text) <= MAX_REPR else text[:MAX_REPR - 3] + "..."


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    names: dict[type, str] = {str: "string", list: "array", dict: "object"}
    return names.get(type(value), type(value).__name__)
