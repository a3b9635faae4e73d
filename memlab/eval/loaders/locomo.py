"""LoCoMo (Maharana et al., ACL 2024) -> memlab Dataset, with every known defect normalised.

The file (``locomo10.json``, CC BY-NC 4.0) is a list of conversations::

    {sample_id, conversation: {speaker_a, speaker_b, session_N: [turn...],
     session_N_date_time: "1:56 pm on 8 May, 2023"}, qa: [{question, answer, evidence, category}]}

Normalisation (each fix is recorded in ``Dataset.report`` under the kind in brackets):

- sessions are the ``session_N`` keys, in N order; ``session_N_date_time`` keys without a
  session (conv-26 has 20..35) are ignored [dangling_date_time];
- a session starts at its date (UTC); its i-th turn (0-based) is at start + i * ``turn_spacing``
  seconds, so replay order and time order agree;
- ``speaker_a`` speaks as role "user", ``speaker_b`` as "assistant" (both are people; the
  roles only let strategies that treat user turns specially work);
- categories 1..5 become multi-hop, temporal, open-domain, single-hop, adversarial; the
  code stays in ``probe.metadata["category_code"]``; any other code (6, NaN, a string) is
  kept as category ``category-<code>`` [category_unknown];
- a missing answer (most category-5 questions) becomes None [answer_missing]; category 5's
  ``adversarial_answer`` goes to ``probe.metadata``; int answers become str [answer_int_to_str];
- evidence strings holding several ids are split ('D8:6; D9:17', 'D9:1 D4:4 D4:6')
  [evidence_split]; ids in a repairable shape are rewritten ('D:11:26' -> 'D11:26', and
  'D30:05' -> 'D30:5', whose turn is the one the question is about) [evidence_repaired];
  strings with no id ('D') are dropped [evidence_malformed_dropped]; ids of no turn
  (D10:19 in conv-42, D4:36 in conv-47) are dropped [evidence_unknown_dropped];
  a probe left with no evidence is kept unscored [evidence_empty].

Defects that cannot be normalised are errors naming the file, dialogue, session/turn or
question and field: a missing or non-string ``question``, ``dia_id``, ``speaker`` or ``text``,
a ``conversation`` that is not an object, a duplicate ``dia_id``, an impossible date; then
the checks every loader runs (``checks.check_dataset``).

Retrieval text (``Turn.content``) follows the LoCoMo retrieval protocol: a turn is indexed as
``<speaker> said, "<text>"``; with ``include_caption`` (default) a shared image adds
`` and shared <blip_caption>.`` as LoCoMo's own RAG code does (the caption carries facts some
questions ask about); ``include_date`` prefixes ``(<session date>) `` as that code also does --
off by default because the date is already the turn's timestamp, and a prefix repeated on
every turn of a session only adds shared tokens for lexical retrievers.
"""

from __future__ import annotations

import calendar
import datetime as _dt
import re
from typing import Any, Literal

from ..dataset import Dataset, DatasetError, Dialogue, LoadReport, Probe, Session, Turn
from .checks import check_dataset, get_field, got, read_json

CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}

_MONTHS = {name.lower(): i for i, name in enumerate(calendar.month_name) if name}
_DATE = re.compile(r"^\s*(\d{1,2}):(\d{2})\s*([ap]m)\s+on\s+(\d{1,2})\s+([A-Za-z]+),?\s+(\d{4})\s*$",
                   re.IGNORECASE)
_SESSION_KEY = re.compile(r"^session_(\d+)$")
_DATE_KEY = re.compile(r"^session_(\d+)_date_time$")
_ID = re.compile(r"^D:?0*(\d+):0*(\d+)$")


def parse_locomo_date(text: str) -> float:
    """'1:56 pm on 8 May, 2023' -> epoch seconds (UTC). Raises ValueError otherwise."""
    m = _DATE.match(text)
    if not m or m.group(5).lower() not in _MONTHS:
        raise ValueError(f"expected a date like '1:56 pm on 8 May, 2023', got {text!r}")
    hour, minute, ampm, day, month, year = m.groups()
    if not 1 <= int(hour) <= 12:
        raise ValueError(f"{text!r} is not a date: hour {hour} on a 12-hour clock")
    h = int(hour) % 12 + (12 if ampm.lower() == "pm" else 0)
    try:
        t = _dt.datetime(int(year), _MONTHS[month.lower()], int(day), h, int(minute),
                         tzinfo=_dt.timezone.utc)
    except ValueError as e:  # 31 June, minute 61, ...
        raise ValueError(f"{text!r} is not a date: {e}") from None
    return t.timestamp()


def locomo_turn_content(speaker: str, text: str, caption: str | None = None,
                        date: str | None = None) -> str:
    """The LoCoMo retrieval unit: ``[(date) ]<speaker> said, "<text>"[ and shared <caption>.]``."""
    out = f'{speaker} said, "{text}"'
    if caption:
        out += f" and shared {caption}."
    if date:
        out = f"({date}) {out}"
    return out


def normalise_evidence(raw: list[Any], known: set[str], report: LoadReport, dialogue: str,
                       probe: str) -> list[str]:
    """Split, repair and filter LoCoMo evidence strings; every change goes to ``report``."""
    out: list[str] = []
    for item in raw:
        text = str(item).strip()
        parts = [p for p in re.split(r"[;,\s]+", text) if p]
        if len(parts) > 1:
            report.add("evidence_split", f"{text!r} -> {parts}", dialogue=dialogue, probe=probe)
        for part in parts or [text]:
            m = _ID.match(part)
            if not m:
                report.add("evidence_malformed_dropped", f"{part!r} names no turn",
                           dialogue=dialogue, probe=probe)
                continue
            ident = f"D{int(m.group(1))}:{int(m.group(2))}"
            if ident != part:
                report.add("evidence_repaired", f"{part!r} -> {ident!r}", dialogue=dialogue, probe=probe)
            if ident not in known:
                report.add("evidence_unknown_dropped", f"{ident!r} is not a turn of {dialogue}",
                           dialogue=dialogue, probe=probe)
            elif ident in out:
                report.add("evidence_duplicate_dropped", f"{ident!r} listed twice",
                           dialogue=dialogue, probe=probe)
            else:
                out.append(ident)
    if not out:
        report.add("evidence_empty", "no evidence left: probe kept, unscored",
                   dialogue=dialogue, probe=probe)
    return out


def load_locomo(path: str, probe_position: Literal["end", "after_evidence"] = "end",
                include_caption: bool = True, include_date: bool = False,
                turn_spacing: float = 1.0) -> Dataset:
    """Load ``locomo10.json`` (see the module docstring for every normalisation).

    ``probe_position``: "end" asks every question after the last turn (LoCoMo's protocol);
    "after_evidence" right after its latest evidence turn (unscored probes stay at the end).
    """
    if probe_position not in ("end", "after_evidence"):
        raise DatasetError(f"probe_position must be 'end' or 'after_evidence', got {probe_position!r}")
    if not turn_spacing > 0:
        raise DatasetError(f"turn_spacing must be > 0 seconds, got {turn_spacing!r}")
    doc = read_json(path)
    if not isinstance(doc, list) or not all(isinstance(c, dict) and "conversation" in c for c in doc):
        raise DatasetError(f"{path}: not a LoCoMo file (expected a list of objects with "
                           f"'sample_id', 'conversation' and 'qa')")
    report = LoadReport()
    dialogues = [_conversation(c, i, str(path), report, probe_position, include_caption,
                               include_date, turn_spacing) for i, c in enumerate(doc)]
    check_dataset(dialogues, str(path))
    return Dataset(name="locomo", dialogues=dialogues, source_path=str(path), report=report)


def _conversation(c: dict[str, Any], index: int, path: str, report: LoadReport, probe_position: str,
                  include_caption: bool, include_date: bool, turn_spacing: float) -> Dialogue:
    did = str(c.get("sample_id", f"conv-{index}"))
    conv = get_field(c, "conversation", "object", path, f"dialogue {did!r}")
    speakers = [get_field(conv, f"speaker_{x}", "string", path, f"dialogue {did!r}")
                if conv.get(f"speaker_{x}") is not None else None for x in "ab"]
    roles = {speakers[0]: "user", speakers[1]: "assistant"}
    numbers = sorted(int(m.group(1)) for k in conv if (m := _SESSION_KEY.match(k)))
    for k in sorted(conv, key=lambda k: (len(k), k)):
        m = _DATE_KEY.match(k)
        if m and int(m.group(1)) not in numbers:
            report.add("dangling_date_time", f"{k} has no session_{m.group(1)}", dialogue=did)
    sessions = []
    for n in numbers:
        sid = f"session_{n}"
        where = f"dialogue {did!r}, session {sid!r}"
        date_text = get_field(conv, f"{sid}_date_time", "string", path, where)
        try:
            start = parse_locomo_date(date_text)
        except ValueError as e:
            raise DatasetError(f"{path}: {where}: field '{sid}_date_time': {e}") from None
        turns = []
        for i, t in enumerate(get_field(conv, sid, "array", path, f"dialogue {did!r}")):
            twhere = f"{where}, turn {i + 1}"
            if not isinstance(t, dict):
                raise DatasetError(f"{path}: {twhere}: must be an object, got {got(t)}")
            speaker = get_field(t, "speaker", "string", path, twhere)
            tid = get_field(t, "dia_id", "string", path, twhere)
            text = get_field(t, "text", "string", path, f"{where}, turn {i + 1} ({tid!r})")
            caption = t.get("blip_caption") if include_caption else None
            extra = {k: v for k, v in t.items() if k not in ("speaker", "dia_id", "text")}
            turns.append(Turn(
                id=tid, speaker=speaker, role=roles.get(speaker, "user"), text=text,
                timestamp=start + i * turn_spacing, session_id=sid, metadata=extra,
                content=locomo_turn_content(speaker, text, caption if isinstance(caption, str) else None,
                                            date_text if include_date else None)))
        sessions.append(Session(id=sid, timestamp=start, turns=turns))
    dialogue = Dialogue(id=did, sessions=sessions, probes=[],
                        metadata={"speaker_a": conv.get("speaker_a"), "speaker_b": conv.get("speaker_b")})
    positions = dialogue.turn_positions()
    for q_index, qa in enumerate(get_field(c, "qa", "array", path, f"dialogue {did!r}", required=False) or []):
        dialogue.probes.append(_probe(qa, q_index, did, positions, report, probe_position, path))
    return dialogue


def _probe(qa: Any, q_index: int, did: str, positions: dict[str, int], report: LoadReport,
           probe_position: str, path: str) -> Probe:
    pid = f"q{q_index + 1:03d}"
    where = f"dialogue {did!r}, question {q_index + 1}"
    if not isinstance(qa, dict):
        raise DatasetError(f"{path}: {where}: must be an object, got {got(qa)}")
    question = get_field(qa, "question", "string", path, where)
    code = qa.get("category")
    category = CATEGORIES.get(code) if isinstance(code, int) else None
    if category is None:  # NaN, a string, 6, ...: kept and reported, as the module docstring says
        category = f"category-{code}"
        report.add("category_unknown", f"category {code!r} is not 1..5", dialogue=did, probe=pid)
    answer = qa.get("answer")
    if answer is None:
        report.add("answer_missing", "no 'answer' field: answer None", dialogue=did, probe=pid)
    elif not isinstance(answer, str):
        report.add("answer_int_to_str", f"{answer!r} -> {str(answer)!r}", dialogue=did, probe=pid)
        answer = str(answer)
    raw = get_field(qa, "evidence", "array", path, where, required=False) or []
    evidence = normalise_evidence(raw, set(positions), report, did, pid)
    meta: dict[str, Any] = {"category_code": code}
    if "adversarial_answer" in qa:
        meta["adversarial_answer"] = qa["adversarial_answer"]
    if list(raw) != evidence:
        meta["evidence_raw"] = list(raw)
    after = None
    if probe_position == "after_evidence" and evidence:
        after = max(evidence, key=lambda e: positions[e])
    return Probe(id=pid, after_turn=after, query=question, evidence=evidence, answer=answer,
                 category=category, metadata=meta)


def is_locomo(path: str) -> bool:
    """A JSON array whose first element has ``conversation`` and ``qa`` (LoCoMo's schema)."""
    from .registry import json_sample

    sample = json_sample(path)
    return isinstance(sample, list) and bool(sample) and isinstance(sample[0], dict) \
        and "conversation" in sample[0] and "qa" in sample[0]


from .registry import register_loader  # noqa: E402

register_loader("locomo", load=load_locomo, detect=is_locomo,
                doc="LoCoMo (Maharana et al., ACL 2024): conversations with sessions and QA")
