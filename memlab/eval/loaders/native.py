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

from ..dataset import (
    Dataset,
    DatasetError,
    Dialogue,
    Probe,
    Session,
    Turn,
    parse_time,
)
from .checks import (
    MAX_REPR,
    _json_type,
    _location,
    _raise,
    _short,
    _unknown,
    check_dataset,
    got,
    read_json,
)


@lru_cache(maxsize=1)
def native_schema() -> dict[str, Any]:
    """The JSON Schema of the native format (``memlab/eval/schema.json``)."""
    text = resources.files("memlab.eval").joinpath("schema.json").read_text(encoding="utf-8")
    return json.loads(text)


def load_native(path: str) -> Dataset:
    """Load and validate a native-format file (see ``datasets/README.md``)."""
    doc = read_json(path)
    default_name = os.path.splitext(os.path.basename(path))[0]
    return dataset_from_dict(doc, source=str(path), default_name=default_name)


def dataset_from_dict(doc: Any, source: str = "<dict>", default_name: str = "dataset") -> Dataset:
    """Validate a native-format document (already parsed) and build the Dataset."""
    validate_native(doc, source)
    dialogues = [_build_dialogue(d, source) for d in doc["dialogues"]]
    check_dataset(dialogues, source)
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
    if _quick_check(doc):
        return
    from jsonschema import Draft202012Validator

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


@lru_cache(maxsize=1)
def _quick_validator() -> Any:
    """The schema compiled by fastjsonschema, or None when it is not installed."""
    try:
        import fastjsonschema
    except ImportError:
        return None
    return fastjsonschema.compile(native_schema())


def _quick_check(doc: Any) -> bool:
    """True when ``doc`` is valid. Importing jsonschema costs seconds (its optional format
    plugins parse grammars at import), so a valid file is passed by a compiled validator
    and jsonschema is imported only to describe the errors of an invalid one."""
    validator = _quick_validator()
    if validator is None:
        return False
    try:
        validator(doc)
    except Exception:  # fastjsonschema.JsonSchemaException: let jsonschema name the problems
        return False
    return True


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
        # a misspelt required field ('querry'): name the typo, the line a reader can act on
        if isinstance(e.instance, dict):
            extra = sorted(set(map(str, e.instance)) - set(e.schema.get("properties", {})))
            close = difflib.get_close_matches(name, extra, n=1)
            if close:
                return [_unknown(close[0], [name], "field")]
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
        return [f"field {field!r} must be {_article(expected)}, got {got(e.instance)}"]
    if v in ("minLength", "pattern"):
        return [f"field {field!r} must not be empty, got {_short(e.instance)}"]
    if v == "minItems":
        return [f"field {field!r} must have at least {e.validator_value} item(s), got {len(e.instance)}"]
    # jsonschema's own message quotes the instance: cut it like any value
    message = e.message if len(e.message) <= 2 * MAX_REPR else e.message[:2 * MAX_REPR - 3] + "..."
    return [f"field {field!r}: {message}"]


def _article(expected: str) -> str:
    return {"string": "a string", "object": "an object", "array": "an array", "null": "null"}.get(
        expected, f"a {expected}" if " or " not in expected else expected)


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


def is_native(path: str) -> bool:
    """A JSON object with ``dialogues`` (memlab's own format)."""
    from .registry import json_sample

    sample = json_sample(path)
    return isinstance(sample, dict) and "dialogues" in sample


from .registry import register_loader  # noqa: E402  (the registry needs nothing of this module)

register_loader("native", load=load_native, detect=is_native,
                doc="memlab's own JSON: {dialogues: [{id, sessions: [{turns}], probes}]}")
