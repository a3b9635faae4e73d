"""BEAM (Tavakoli et al., 2025, arXiv 2510.27246) -> memlab Dataset, from its published files.

BEAM ("Beyond a Million Tokens") publishes each conversation as a folder::

    <size>/<n>/chat.json(.gz)                                 [{batch_number, time_anchor, turns: [[message...]]}]
    <size>/<n>/probing_questions/probing_questions.json(.gz)  {ability: [{question, <answer>, source_chat_ids...}]}

A message is ``{role, id, content, [time_anchor], [index], [question_type]}``; ``id`` is an
integer unique in the conversation, and the probing questions point at messages by those ids
(``source_chat_ids``). The repository states no licence: cite the paper, never copy the data.

Two path forms, both read by ``load_beam`` (a Dataset) and ``iter_beam`` (one Dialogue at a
time; a 1M-token conversation is held alone):

- a conversation folder (``100K/1``): one Dialogue;
- a size folder (``100K``): every conversation folder in it, in numeric order. A folder with
  questions but no chat.json (26 of the 35 published 1M conversations) is skipped
  [chat_missing].

Mapping (each normalisation is recorded in the report under the kind in brackets):

- **Dialogue.** id ``<size>-<n>`` (the two folder names, e.g. ``100K-1``: the same id from
  either path form). **Sessions** are the batches (id ``batch-<batch_number>``); **turns** the
  messages in order, id = the BEAM message id as text, speaker = role. ``roles`` chooses the
  roles that become units: default both, since BEAM's references point at assistant messages
  too (most summarization references are). ``"all"`` or None keeps every role.
- **Times.** A message's ``time_anchor`` (``March-15-2024``, UTC midnight; in the published
  data the first message of every batch has one) sets the clock; each following message is
  ``turn_spacing`` seconds later. A batch with no anchor continues the clock
  [time_anchor_missing]; messages before the first anchor are dated back from it; an anchor
  earlier than the clock is clamped to it, keeping replay order and time order the same
  [time_anchor_backwards]. The anchor text stays in ``turn.metadata["time_anchor"]``.
- **Plan markers.** BEAM's generator ends most user messages with ``->-> <batch>,<bullet>``
  (the message's ``index``: the plan bullet it was written from; sometimes followed by the
  generating model's notes). The abstention questions name the same bullets
  (``plan_reference: "Batch 3, Bullet 2"``) and the referenced messages carry markers more
  often than the others, so the markers link questions to messages: they are removed from
  the turn text (``strip_markers``) [index_marker_stripped, one entry per conversation with
  the count]. The ``index`` and ``question_type`` fields stay in ``turn.metadata``, which
  no strategy is shown (``Turn.to_record``).
- **Probes.** One per question, id ``<ability>-<i>`` (1-based in the ability's list), asked
  after the last turn; ``category`` = the ability (the top-level key: abstention,
  contradiction_resolution, event_ordering, information_extraction, instruction_following,
  knowledge_update, multi_session_reasoning, preference_following, summarization,
  temporal_reasoning); ``answer`` = the ability's reference answer (``ideal_response``,
  ``ideal_answer``, ``answer`` or ``ideal_summary``); instruction_following and
  preference_following give a rubric of compliance, not an answer: None [answer_absent].
  The other fields of the question go to ``probe.metadata`` (never shown to a strategy).
- **Evidence** = the message ids in ``source_chat_ids`` (a list, or an object of named
  groups such as ``first_statement``/``second_statement``), in order:
  nested lists are flattened [evidence_nested_flattened]; an id listed twice is kept once
  [evidence_duplicate_dropped]; an id that is no integer [evidence_malformed_dropped], no
  message [evidence_unknown_dropped] or a message of a role not kept [evidence_role_dropped]
  is dropped; a named group with no id is reported [evidence_group_empty]. A question with
  no ``source_chat_ids`` takes ``conversation_sessions`` when that is a list of ids (four
  summarization questions; where both are given they agree)
  [evidence_from_conversation_sessions], else has none [evidence_absent].
  **knowledge_update**: ``updated_info`` is the evidence and ``original_info`` the
  ``stale_evidence`` (the superseded statement, read by ``memlab.eval.lifecycle``), unless
  ``stale_original`` is False (both are evidence). The same message as both is evidence
  [update_same_message]; no ``updated_info`` id leaves the question unscored: the message
  with the answer is not referenced [update_unreferenced].
  **abstention** questions reference a plan bullet, not a message: unscored
  [abstention_unscored]. Any other question left with no evidence is kept, unscored
  [evidence_empty].

Errors name the file, conversation, batch/message or question and field, what was expected
and what came: a chat.json that is not an array of batches, a batch without ``turns``, a
message that is not an object, a missing or non-string ``role`` or ``content``, a role that
is not user, assistant or system, an ``id`` that is not an integer or a string, a duplicate
message id, an impossible ``time_anchor``; a questions file that is not an object of arrays,
a question without a string ``question``; then the checks every loader runs
(``checks.check_dataset``).

Why over 400 lines: BEAM's published files have quirks that are read, not refused (they are
listed above, each with its handling), and every one of them needs its own check and message.
"""

from __future__ import annotations

import calendar
import datetime as _dt
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..dataset import ROLES, Dataset, DatasetError, Dialogue, LoadReport, Probe, Session, Turn
from .checks import _short, check_dataset, get_field, got, read_json

#: The file names of a conversation folder (each may be gzip-compressed, ``.gz``).
CHAT = "chat.json"
QUESTIONS = Path("probing_questions") / "probing_questions.json"
#: The field holding each ability's reference answer, in the order they are looked for.
ANSWER_FIELDS = ("ideal_response", "ideal_answer", "answer", "ideal_summary")
#: The published abilities (a file may hold others: they are kept as categories too).
ABILITIES = ("abstention", "contradiction_resolution", "event_ordering", "information_extraction",
             "instruction_following", "knowledge_update", "multi_session_reasoning", "preference_following",
             "summarization", "temporal_reasoning")

_MONTHS = {name.lower(): i for i, name in enumerate(calendar.month_name) if name}
_MONTHS.update({name.lower(): i for i, name in enumerate(calendar.month_abbr) if name})
_ANCHOR = re.compile(r"^\s*([A-Za-z]+)[-\s]+(\d{1,2}),?[-\s]+(\d{4})\s*$")
#: A plan marker: "->->", then "<batch>,<bullet>" (a number, "N/A", or nothing after the comma,
#: an optional ")"). ``_strip_markers`` first removes the message's own ``index`` when the text
#: ends with it (it may carry the generator's notes), then any marker left.
_MARKER = re.compile(r"[ \t]*->->[ \t]*(?:\d+[ \t]*,[ \t]*(?:\d+(?:[ \t]*,[ \t]*\d+)*|N/A)?\)?)?")
_DIGITS = re.compile(r"^\s*\d+\s*$")


def parse_beam_anchor(text: str) -> float:
    """'March-15-2024' -> epoch seconds (UTC midnight). Raises ValueError otherwise."""
    m = _ANCHOR.match(str(text))
    if not m or m.group(1).lower() not in _MONTHS:
        raise ValueError(f"expected a date like 'March-15-2024', got {text!r}")
    month, day, year = m.groups()
    try:
        t = _dt.datetime(int(year), _MONTHS[month.lower()], int(day), tzinfo=_dt.timezone.utc)
    except ValueError as e:  # February-30-2024, ...
        raise ValueError(f"{text!r} is not a date: {e}") from None
    return t.timestamp()


def _file(folder: Path, name: Path | str) -> Path | None:
    """``folder/name`` or ``folder/name.gz``, whichever exists (None if neither; both is an error)."""
    plain, packed = folder / name, folder / f"{name}.gz"
    if plain.is_file() and packed.is_file():
        raise DatasetError(f"{folder}: both {plain.name} and {packed.name} are here; keep one")
    return plain if plain.is_file() else packed if packed.is_file() else None


def _is_conversation(folder: Path) -> bool:
    return (folder / CHAT).is_file() or (folder / f"{CHAT}.gz").is_file()


def _folder_key(folder: Path) -> tuple[int, int, str]:
    """Numeric folder names in number order (2 before 10), then the others by name."""
    return (0, int(folder.name), "") if folder.name.isdigit() else (1, 0, folder.name)


def is_beam(path: str) -> bool:
    """Whether ``path`` looks like BEAM, from the names alone: a folder holding chat.json(.gz)
    and probing_questions/, or a folder of such folders. Reads no file."""
    p = Path(path)
    if not p.is_dir():
        return False
    if _is_conversation(p):
        return (p / "probing_questions").is_dir()
    try:
        return any(c.is_dir() and _is_conversation(c) and (c / "probing_questions").is_dir() for c in p.iterdir())
    except OSError:
        return False


def conversation_folders(path: str, report: LoadReport | None = None) -> list[Path]:
    """The conversation folders ``load_beam(path)`` reads, in order (``path`` itself, or its
    subfolders holding a chat.json(.gz)); folders skipped go to ``report`` [chat_missing]."""
    return _conversations(Path(path), report if report is not None else LoadReport())


def conversation_files(folder: str | Path) -> list[Path]:
    """The files a conversation folder is read from: its chat.json(.gz) and its questions file."""
    return [f for f in (_file(Path(folder), CHAT), _file(Path(folder), QUESTIONS)) if f is not None]


def _conversations(path: Path, report: LoadReport) -> list[Path]:
    """The conversation folders of ``path`` (itself, or its children), in order."""
    if not path.exists():
        raise DatasetError(f"{path}: no such folder")
    if not path.is_dir():
        raise DatasetError(f"{path}: expected a BEAM folder (a conversation folder holding chat.json(.gz) and "
                           f"probing_questions/, or a folder of them such as 100K), got a file")
    if _is_conversation(path):
        return [path]
    found = []
    for child in sorted((c for c in path.iterdir() if c.is_dir()), key=_folder_key):
        if _is_conversation(child):
            found.append(child)
        elif _file(child, QUESTIONS) is not None:
            report.add("chat_missing", f"{child.name}: probing questions but no {CHAT}(.gz): skipped",
                       dialogue=_dialogue_id(child))
    if not found:
        raise DatasetError(f"{path}: no BEAM conversation here (expected {CHAT}(.gz) and "
                           f"{QUESTIONS}(.gz) in this folder or in its subfolders)")
    return found


def _dialogue_id(folder: Path) -> str:
    return f"{folder.resolve().parent.name}-{folder.name}"


def _roles(roles: tuple[str, ...] | str | None) -> tuple[str, ...] | None:
    if roles == "all" or roles is None:
        return None
    bad = roles if isinstance(roles, str) else [r for r in roles if r not in ROLES]
    if isinstance(roles, str) or not roles or bad:
        raise DatasetError(f"roles must be a non-empty list of roles among {', '.join(ROLES)} (or 'all': every "
                           f"message), got {roles!r}")
    return tuple(roles)


def iter_beam(path: str, report: LoadReport | None = None, roles: tuple[str, ...] | str | None = ("user", "assistant"),
              turn_spacing: float = 1.0, strip_markers: bool = True,
              stale_original: bool = True) -> Iterator[Dialogue]:
    """The conversations of a BEAM folder (see the module docstring) as Dialogues, read and
    checked one at a time; entries go to ``report`` (when given) as they are read."""
    kept = _roles(roles)
    if not (isinstance(turn_spacing, (int, float)) and turn_spacing > 0):
        raise DatasetError(f"turn_spacing must be > 0 seconds, got {turn_spacing!r}")
    report = report if report is not None else LoadReport()
    seen: set[str] = set()
    for folder in _conversations(Path(path), report):
        d = _conversation(folder, report, kept, float(turn_spacing), strip_markers, stale_original)
        check_dataset([d], str(folder))
        if d.id in seen:  # two paths to one folder name (a symlink): the ids would be ambiguous
            raise DatasetError(f"{folder}: dialogue {_short(d.id)}: duplicate dialogue id")
        seen.add(d.id)
        yield d


def load_beam(path: str, roles: tuple[str, ...] | str | None = ("user", "assistant"), turn_spacing: float = 1.0,
              strip_markers: bool = True, stale_original: bool = True) -> Dataset:
    """Load a BEAM conversation folder or a size folder (every conversation in it) as one
    Dataset. See ``iter_beam`` to read one conversation at a time."""
    report = LoadReport()
    dialogues = list(iter_beam(path, report, roles, turn_spacing, strip_markers, stale_original))
    check_dataset(dialogues, str(path))
    return Dataset(name="beam", dialogues=dialogues, source_path=str(path), report=report)


def _strip_markers(text: str, index: Any) -> tuple[str, bool]:
    """``text`` without its plan markers; whether there was one."""
    if "->->" not in text:
        return text, False
    if isinstance(index, str) and index.strip():
        # the whole tail, notes included, when the text ends with the message's own index
        m = re.search(r"[ \t]*->->[ \t]*" + re.escape(index.strip()) + r"\s*$", text)
        if m:
            text = text[:m.start()]
    return _MARKER.sub("", text), True


def _conversation(folder: Path, report: LoadReport, roles: tuple[str, ...] | None, spacing: float,
                  strip_markers: bool, stale_original: bool) -> Dialogue:
    did = _dialogue_id(folder)
    chat_path = _file(folder, CHAT)
    questions_path = _file(folder, QUESTIONS)
    if chat_path is None:  # _conversations only returns folders with one; a race with a deletion
        raise DatasetError(f"{folder / CHAT}: no such file")
    if questions_path is None:
        raise DatasetError(f"{folder / QUESTIONS}: no such file (nor .gz): a BEAM conversation folder holds "
                           f"its probing questions there")
    sessions, roles_of, markers = _sessions(str(chat_path), did, report, roles, spacing, strip_markers)
    if markers:
        report.add("index_marker_stripped", f"{markers} message(s) carried a '->-> <batch>,<bullet>' plan "
                   f"marker: removed from the text", dialogue=did)
    probes = _probes(str(questions_path), did, report, roles_of, roles, stale_original)
    return Dialogue(id=did, sessions=sessions, probes=probes,
                    metadata={"size": folder.resolve().parent.name, "conversation": folder.name,
                              "batches": len(sessions)})


def _sessions(path: str, did: str, report: LoadReport, roles: tuple[str, ...] | None, spacing: float,
              strip_markers: bool) -> tuple[list[Session], dict[str, str], int]:
    """(sessions, role of every message id -- kept or not --, messages whose markers were removed)."""
    doc = read_json(path)
    if not isinstance(doc, list):
        raise DatasetError(f"{path}: conversation {did!r}: expected an array of batches, got {got(doc)}")
    # first pass: read and check every message, note its anchor
    batches: list[tuple[str, list[tuple[str, dict[str, Any], float | None]]]] = []
    where_of: dict[str, str] = {}
    for b_index, batch in enumerate(doc):
        bwhere = f"conversation {did!r}, batch {b_index + 1}"
        if not isinstance(batch, dict):
            raise DatasetError(f"{path}: {bwhere}: expected an object, got {got(batch)}")
        number = batch.get("batch_number")
        if number is not None and (isinstance(number, bool) or not isinstance(number, int)):
            raise DatasetError(f"{path}: {bwhere}: field 'batch_number' must be an integer, got {got(number)}")
        sid = f"batch-{number if number is not None else b_index + 1}"
        groups = get_field(batch, "turns", "array", path, bwhere)
        batch_anchor = batch.get("time_anchor")
        messages: list[tuple[str, dict[str, Any], float | None]] = []
        n = 0
        for g_index, group in enumerate(groups):
            if not isinstance(group, list):
                raise DatasetError(f"{path}: {bwhere}: field 'turns' item {g_index + 1} must be an array of "
                                   f"messages, got {got(group)}")
            for m in group:
                n += 1
                mwhere = f"{bwhere}, message {n}"
                if not isinstance(m, dict):
                    raise DatasetError(f"{path}: {mwhere}: expected an object, got {got(m)}")
                if "id" not in m:
                    raise DatasetError(f"{path}: {mwhere}: field 'id' is required")
                raw_id = m["id"]
                if isinstance(raw_id, bool) or not isinstance(raw_id, (int, str)) or raw_id == "":
                    raise DatasetError(f"{path}: {mwhere}: field 'id' must be an integer or a non-empty string, "
                                       f"got {got(raw_id)}")
                tid = str(raw_id)
                mwhere = f"{mwhere} (id {tid})"
                if tid in where_of:
                    raise DatasetError(f"{path}: {mwhere}: duplicate message id {tid} (first at {where_of[tid]}); "
                                       f"the questions point at messages by id")
                where_of[tid] = f"batch {b_index + 1}, message {n}"
                role = get_field(m, "role", "string", path, mwhere)
                if role not in ROLES:
                    raise DatasetError(f"{path}: {mwhere}: field 'role' must be one of "
                                       f"{', '.join(map(repr, ROLES))}, got {_short(role)}")
                get_field(m, "content", "string", path, mwhere)
                anchor_text = m.get("time_anchor")
                field = f"{mwhere}: field 'time_anchor'"
                if anchor_text is None and not messages and batch_anchor is not None:
                    anchor_text = batch_anchor  # a batch-level anchor dates its first message
                    field = f"{bwhere}: field 'time_anchor'"
                anchor = None
                if anchor_text is not None:
                    if not isinstance(anchor_text, str):
                        raise DatasetError(f"{path}: {field} must be a string, got {got(anchor_text)}")
                    try:
                        anchor = parse_beam_anchor(anchor_text)
                    except ValueError as e:
                        raise DatasetError(f"{path}: {field}: {e}") from None
                messages.append((tid, m, anchor))
        batches.append((sid, messages))
    # second pass: the clock. Messages before the first anchor end just before it.
    flat = [a for _, ms in batches for _, _, a in ms]
    first = next((i for i, a in enumerate(flat) if a is not None), None)
    if first is None and flat:
        report.add("time_anchor_missing", "no message has a time_anchor: the clock starts at 1970-01-01",
                   dialogue=did)
    clock = flat[first] - first * spacing if first is not None else 0.0
    sessions: list[Session] = []
    role_of: dict[str, str] = {}
    markers = 0
    last: float | None = None
    for sid, ms in batches:
        if not ms:
            report.add("batch_empty", "a batch with no message: left out", dialogue=did, session=sid)
            continue
        if first is not None and ms[0][2] is None:
            how = "continues from the previous batch" if last is not None else "is dated back from the first anchor"
            report.add("time_anchor_missing", f"the batch's first message has no time_anchor: its clock {how}",
                       dialogue=did, session=sid)
        turns = []
        for tid, m, anchor in ms:
            if anchor is not None:
                if last is not None and anchor < last:
                    report.add("time_anchor_backwards", f"time_anchor {m.get('time_anchor')!r} of message {tid} "
                               f"is earlier than the message before it: dated right after that one",
                               dialogue=did, session=sid)
                    anchor = last + spacing
                clock = anchor
            elif last is not None:
                clock = last + spacing
            last = clock
            role_of[tid] = m["role"]
            if roles is not None and m["role"] not in roles:
                continue
            text = m["content"]
            if strip_markers:
                text, had = _strip_markers(text, m.get("index"))
                markers += had
            extra = {k: v for k, v in m.items() if k not in ("role", "id", "content")}
            turns.append(Turn(id=tid, speaker=m["role"], role=m["role"], text=text, timestamp=clock,
                              session_id=sid, metadata=extra))
        if turns:
            sessions.append(Session(id=sid, timestamp=turns[0].timestamp, turns=turns))
    return sessions, role_of, markers


def _ids(value: Any, path: list[str], out: list[tuple[Any, str]]) -> None:
    """Flatten ``value`` into (item, where) pairs; nested lists are noted in ``path`` order."""
    if isinstance(value, list):
        for i, v in enumerate(value):
            _ids(v, path + [str(i + 1)], out)
    else:
        out.append((value, "/".join(path)))


def _resolve(raw: Any, label: str, role_of: dict[str, str], kept: tuple[str, ...] | None, report: LoadReport,
             did: str, pid: str) -> list[str]:
    """The message ids of one reference list, checked and deduplicated (reported)."""
    items: list[tuple[Any, str]] = []
    _ids(raw if isinstance(raw, list) else [raw], [], items)
    if any(isinstance(v, list) for v in (raw if isinstance(raw, list) else [])):
        report.add("evidence_nested_flattened", f"{label}: nested lists flattened", dialogue=did, probe=pid)
    out: list[str] = []
    for item, _ in items:
        if isinstance(item, bool) or not (isinstance(item, int) or (isinstance(item, str) and _DIGITS.match(item))):
            report.add("evidence_malformed_dropped", f"{label}: {_short(item)} is not a message id",
                       dialogue=did, probe=pid)
            continue
        tid = str(int(item))
        if tid not in role_of:
            report.add("evidence_unknown_dropped", f"{label}: {tid} is not a message of {did}", dialogue=did, probe=pid)
        elif kept is not None and role_of[tid] not in kept:
            report.add("evidence_role_dropped", f"{label}: message {tid} is a {role_of[tid]} message, not kept "
                       f"(roles={list(kept)})", dialogue=did, probe=pid)
        elif tid in out:
            report.add("evidence_duplicate_dropped", f"{label}: {tid} listed twice", dialogue=did, probe=pid)
        else:
            out.append(tid)
    return out


def _probes(path: str, did: str, report: LoadReport, role_of: dict[str, str], kept: tuple[str, ...] | None,
            stale_original: bool) -> list[Probe]:
    doc = read_json(path)
    if not isinstance(doc, dict):
        raise DatasetError(f"{path}: conversation {did!r}: expected an object of questions by ability, got {got(doc)}")
    probes = []
    for ability, items in doc.items():
        if not isinstance(items, list):
            raise DatasetError(f"{path}: conversation {did!r}: field {ability!r} must be an array of questions, "
                               f"got {got(items)}")
        for i, item in enumerate(items):
            pid = f"{ability}-{i + 1}"
            where = f"conversation {did!r}, question {pid!r}"
            if not isinstance(item, dict):
                raise DatasetError(f"{path}: {where}: expected an object, got {got(item)}")
            query = get_field(item, "question", "string", path, where)
            if not query.strip():
                raise DatasetError(f"{path}: {where}: field 'question' must not be empty")
            evidence, stale = _evidence(item, ability, role_of, kept, report, did, pid, stale_original)
            answer = next((item[f] for f in ANSWER_FIELDS if item.get(f) is not None), None)
            if answer is None:
                report.add("answer_absent", f"no {'/'.join(ANSWER_FIELDS)} field: answer None (a {ability} question "
                           f"is judged by its rubric)", dialogue=did, probe=pid)
            elif not isinstance(answer, str):
                report.add("answer_int_to_str", f"{answer!r} -> {str(answer)!r}", dialogue=did, probe=pid)
                answer = str(answer)
            meta = {k: v for k, v in item.items() if k != "question"}
            probes.append(Probe(id=pid, after_turn=None, query=query, evidence=evidence, answer=answer,
                                category=ability, metadata=meta, stale_evidence=stale))
    return probes


def _evidence(item: dict[str, Any], ability: str, role_of: dict[str, str], kept: tuple[str, ...] | None,
              report: LoadReport, did: str, pid: str, stale_original: bool) -> tuple[list[str], list[str]]:
    """(evidence, stale_evidence) of one question (see the module docstring)."""
    if ability == "abstention":
        # the asked detail was never said: the question points at a plan bullet, not at a message
        report.add("abstention_unscored", "abstention question: no message holds the answer; unscored",
                   dialogue=did, probe=pid)
        return [], []
    raw = item.get("source_chat_ids")
    if raw is None:
        fallback = item.get("conversation_sessions")
        if isinstance(fallback, list) and fallback:
            report.add("evidence_from_conversation_sessions", "no source_chat_ids: the ids of "
                       "conversation_sessions are the evidence", dialogue=did, probe=pid)
            raw = fallback
        else:
            report.add("evidence_absent", "no source_chat_ids: probe kept, unscored", dialogue=did, probe=pid)
            return [], []
    stale: list[str] = []
    if isinstance(raw, dict):
        groups = {str(k): _resolve(v, f"source_chat_ids.{k}", role_of, kept, report, did, pid) for k, v in raw.items()}
        for k, v in raw.items():
            if v == [] or v is None:
                report.add("evidence_group_empty", f"source_chat_ids.{k} lists no message", dialogue=did, probe=pid)
        if ability == "knowledge_update" and "updated_info" in groups and "original_info" in groups:
            updated, original = groups["updated_info"], groups["original_info"]
            same = [t for t in original if t in updated]
            if same:
                report.add("update_same_message", f"message(s) {', '.join(same)} are both original_info and "
                           f"updated_info: evidence", dialogue=did, probe=pid)
            if not updated:
                report.add("update_unreferenced", "no updated_info message: the answer's message is not "
                           "referenced; unscored", dialogue=did, probe=pid)
                return [], ([t for t in original] if stale_original else [])
            if stale_original:
                return updated, [t for t in original if t not in updated]
        evidence: list[str] = []
        for label, ids in groups.items():
            for t in ids:
                if t in evidence:
                    report.add("evidence_duplicate_dropped", f"source_chat_ids.{label}: {t} is also in another "
                               f"group", dialogue=did, probe=pid)
                else:
                    evidence.append(t)
    else:
        evidence = _resolve(raw, "source_chat_ids", role_of, kept, report, did, pid)
    if not evidence:
        report.add("evidence_empty", "no message left as evidence: probe kept, unscored", dialogue=did, probe=pid)
    return evidence, stale


__all__ = ["ABILITIES", "conversation_files", "conversation_folders", "is_beam", "iter_beam", "load_beam",
           "parse_beam_anchor"]


# The loader registry (memlab.eval.loaders.registry) is being added on main; this branch must
# still import without it, so the registration is skipped where the module is absent.
try:
    from .registry import register_loader
except ImportError:
    register_loader = None  # type: ignore[assignment]

if register_loader is not None:
    register_loader("beam", load=load_beam, detect=is_beam, iterate=iter_beam,
                    doc="BEAM (Tavakoli et al., 2025): a conversation folder (chat.json(.gz) and "
                        "probing_questions/) or a size folder of them (100K, 500K, 1M); probes by memory "
                        "ability, evidence = the messages their source_chat_ids name")
