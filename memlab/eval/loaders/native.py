"""The native JSON format: validation (JSON Schema + semantic checks) and loading.

Every error names the file, the dialogue, the session/turn/probe and the field, e.g.
``datasets/x.json: dialogue 'coffee', session 's1', turn 3 ('t3'): field 'speaker' is required``.
Values quoted in messages are cut to ``MAX_REPR`` characters (``_short``): a wrong-format
file must not be echoed whole.
"""

from __future__ import annotations

import difflib
import json
import os
import re
from functools import lru_cache
from importlib import resources
from typing import Any

from jsonschema import Draft202012Validator

from ..dataset import (
    ROLES,
    Dataset,
    DatasetError,
    Dialogue,
    Probe,
    Session,
    Turn,
    format_time,
    parse_time,
)

#: Errors listed in one DatasetError message at most (the rest are counted).
MAX_ERRORS = 10
#: Longest repr of a value quoted in a message (longer ones end in "...").
MAX_REPR = 80


def _short(value: Any) -> str:
    """``repr(value)`` cut to ``MAX_REPR`` characters, the cut marked by "..."."""
    text = repr(value)
    return text if len(text) <= MAX_REPR else text[:MAX_REPR - 3] + "..."


@lru_cache(maxsize=1)
def native_schema() -> dict[str, Any]:
    """The JSON Schema of the native format (``memlab/eval/schema.json``)."""
    text = resources.files("memlab.eval").joinpath("schema.json").read_text(encoding="utf-8")
    return json.loads(text)


def read_json(path: str) -> Any:
    """Parse a JSON file; a syntax error names the file, line and column."""
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except FileNotFoundError:
        raise DatasetError(f"{path}: no such file") from None
    except json.JSONDecodeError as e:
        raise DatasetError(f"{path}: not valid JSON: {e.msg} at line {e.lineno}, column {e.colno}") from None


def load_native(path: str) -> Dataset:
    """Load and validate a native-format file (see ``datasets/README.md``)."""
    doc = read_json(path)
    default_name = os.path.splitext(os.path.basename(path))[0]
    return dataset_from_dict(doc, source=str(path), default_name=default_name)


def dataset_from_dict(doc: Any, source: str = "<dict>", default_name: str = "dataset") -> Dataset:
    """Validate a native-format document (already parsed) and build the Dataset."""
    validate_native(doc, source)
    dialogues = [_build_dialogue(d, source) for d in doc["dialogues"]]
    _check_dialogue_ids(dialogues, source)
    for d in dialogues:
        check_dialogue(d, source)
    return Dataset(name=doc.get("name", default_name), dialogues=dialogues, source_path=source)


def validate_native(doc: Any, source: str = "<dict>") -> None:
    """Raise DatasetError listing the schema violations of ``doc`` (in document order)."""
    if not isinstance(doc, dict):
        # most likely another format (LoCoMo and LongMemEval files are lists): say so
        # rather than list every schema error below the top level
        got = "a list" if isinstance(doc, list) else f"{_json_type(doc)} {_short(doc)}"
        raise DatasetError(f"{source}: expected a JSON object with 'dialogues' (native format), "
                           f"got {got}; is it a LoCoMo or LongMemEval file? pass --format "
                           f"(format= in Python)")
    validator = Draft202012Validator(native_schema())
    # Document order: list indices compare as numbers, keys as text.
    errors = sorted(validator.iter_errors(doc),
                    key=lambda e: [(0, p, "") if isinstance(p, int) else (1, 0, str(p)) for p in e.absolute_path])
    messages: list[str] = []
    for e in errors:
        for text in _describe(e):
            where = _where(doc, list(e.absolute_path))
            line = f"{source}: {where}: {text}" if where else f"{source}: {text}"
            if line not in messages:
                messages.append(line)
    _raise(messages)


def _raise(messages: list[str]) -> None:
    if not messages:
        return
    shown = messages[:MAX_ERRORS]
    more = len(messages) - len(shown)
    if more:
        shown.append(f"... and {more} more error(s)")
    raise DatasetError("\n".join(shown))


def _describe(e: Any) -> list[str]:
    """Readable sentences for one jsonschema error (the location is added by the caller)."""
    path = list(e.absolute_path)
    field = _field_name(path)
    v = e.validator
    if field is None and v == "type":  # a whole dialogue/session/turn/probe
        return [f"must be {_article(str(e.validator_value))}, got {_json_type(e.instance)}"]
    field = field if field is not None else "(document)"
    if v == "required":
        m = re.match(r"'(.+)' is a required property", e.message)
        name = m.group(1) if m else str(e.message)
        return [f"field {_short(name)} is required"]
    if v == "additionalProperties":
        known = sorted(e.schema.get("properties", {}))
        extra = sorted(set(e.instance) - set(known))
        return [_unknown(x, known, "field") for x in extra]
    if v == "enum":
        options = ", ".join(repr(o) for o in e.validator_value)
        return [f"field {field!r} must be one of {options}, got {_short(e.instance)}"]
    if v == "type":
        expected = e.validator_value if isinstance(e.validator_value, str) else " or ".join(e.validator_value)
        got = f"{_json_type(e.instance)} {_short(e.instance)}"
        return [f"field {field!r} must be {_article(expected)}, got {got}"]
    if v in ("minLength", "pattern"):
        return [f"field {field!r} must not be empty, got {_short(e.instance)}"]
    if v == "minItems":
        return [f"field {field!r} must have at least {e.validator_value} item(s), got {len(e.instance)}"]
    # jsonschema's own message quotes the instance: cut it like any value
    message = e.message if len(e.message) <= 2 * MAX_REPR else e.message[:2 * MAX_REPR - 3] + "..."
    return [f"field {field!r}: {message}"]


def _unknown(name: str, known: list[str], what: str) -> str:
    """'unknown turn id 't9' (did you mean 't8'?)' without listing every id."""
    close = difflib.get_close_matches(name, known, n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return f"unknown {what} {_short(name)}{hint}"


def _article(expected: str) -> str:
    return {"string": "a string", "object": "an object", "array": "an array", "null": "null"}.get(
        expected, f"a {expected}" if " or " not in expected else expected)


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    names: dict[type, str] = {str: "string", list: "array", dict: "object"}
    return names.get(type(value), type(value).__name__)


def _field_name(path: list[Any]) -> str | None:
    """The field part of a path: after the innermost dialogue/session/turn/probe element.

    None when the path ends at such an element (or is the whole document)."""
    cut = 0
    for i, p in enumerate(path):
        if isinstance(p, int) and i > 0 and path[i - 1] in ("dialogues", "sessions", "turns", "probes"):
            cut = i + 1
    rest = path[cut:]
    out = ""
    for p in rest:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out or None


def _label(obj: Any, index: int) -> str:
    ident = obj.get("id") if isinstance(obj, dict) else None
    return _short(ident) if isinstance(ident, str) else str(index + 1)


def _where(doc: Any, path: list[Any]) -> str:
    """'dialogue 'x', session 's1', turn 3 ('t3')' for a path into the document."""
    parts: list[str] = []
    node = doc
    i = 0
    while i < len(path) - 1:
        key, index = path[i], path[i + 1]
        if key in ("dialogues", "sessions", "probes", "turns") and isinstance(index, int):
            try:
                item = node[key][index]
            except (KeyError, IndexError, TypeError):
                break
            if key == "turns":
                ident = item.get("id") if isinstance(item, dict) else None
                parts.append(f"turn {index + 1}" + (f" ({_short(ident)})" if isinstance(ident, str) else ""))
            else:
                parts.append(f"{key[:-1]} {_label(item, index)}")
            node = item
            i += 2
        else:
            break
    return ", ".join(parts)


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


def _time(value: str, source: str, where: str, field: str) -> float:
    try:
        return parse_time(value)
    except ValueError:
        raise DatasetError(f"{source}: {where}: field {field!r} must be an ISO-8601 date-time "
                           f"(e.g. '2024-03-02T09:15:00Z'), got {_short(value)}") from None


def _build_dialogue(d: dict[str, Any], source: str) -> Dialogue:
    sessions = []
    for s in d["sessions"]:
        where = _location(d["id"], s["id"])
        start = _time(s["timestamp"], source, where, "timestamp")
        turns: list[Turn] = []
        for i, t in enumerate(s["turns"]):
            twhere = _location(d["id"], s["id"], (i + 1, t["id"]))
            if "timestamp" in t:
                ts = _time(t["timestamp"], source, twhere, "timestamp")
            else:  # the session start, then one second after the previous turn
                ts = start if not turns else turns[-1].timestamp + 1.0
            turns.append(Turn(id=t["id"], speaker=t["speaker"], role=t["role"], text=t["text"],
                              timestamp=ts, session_id=s["id"], metadata=dict(t.get("metadata", {})),
                              content=t.get("content")))
        sessions.append(Session(id=s["id"], timestamp=start, turns=turns))
    probes = []
    for p in d.get("probes", []):
        asked = (_time(p["timestamp"], source, _location(d["id"], probe=p["id"]), "timestamp")
                 if "timestamp" in p else None)
        probes.append(Probe(id=p["id"], after_turn=p.get("after_turn"), query=p["query"],
                            evidence=list(p["evidence"]), answer=p.get("answer"),
                            category=p.get("category"), metadata=dict(p.get("metadata", {})),
                            timestamp=asked, stale_evidence=list(p.get("stale_evidence", []))))
    return Dialogue(id=d["id"], sessions=sessions, probes=probes, metadata=dict(d.get("metadata", {})))


def _check_dialogue_ids(dialogues: list[Dialogue], source: str) -> None:
    seen: set[str] = set()
    for d in dialogues:
        if d.id in seen:
            raise DatasetError(f"{source}: dialogue {_short(d.id)}: duplicate dialogue id")
        seen.add(d.id)


def check_dialogue(d: Dialogue, source: str = "<dataset>") -> None:
    """Semantic checks the schema cannot express; raise DatasetError listing the problems.

    - session ids and turn ids unique in the dialogue; probe ids unique;
    - roles valid; turn times non-decreasing in replay order;
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
            if previous is not None and t.timestamp < previous:
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
