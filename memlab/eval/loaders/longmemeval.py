"""LongMemEval (Wu et al., ICLR 2025) -> memlab Dataset, from its published schema.

The file is a list of questions, each with its own haystack::

    {question_id, question_type, question, answer, question_date,
     haystack_session_ids, haystack_dates, haystack_sessions: [[{role, content, has_answer?}]],
     answer_session_ids}

Each question becomes one Dialogue (id = question_id) with one probe (same id) asked after
the last turn at ``question_date``. Conventions (as in LongMemEval's retrieval code):

- turn ids are ``<session_id>:<i>`` with i the 1-based position of the turn in its session
  (assistant turns count);
- dates like ``2023/05/20 (Sat) 02:21`` are UTC; turn i (0-based) of a session is at the
  session date + i * ``turn_spacing`` seconds; sessions are replayed in date order (a stable
  sort; a reordering is reported as [sessions_reordered]);
- evidence = the turns whose role is in ``evidence_roles`` (default: user, as LongMemEval
  indexes user turns) and that carry ``has_answer: true``; when there are none, the turns
  with those roles of the ``answer_session_ids`` sessions [evidence_from_answer_sessions];
  abstention questions (id ending ``_abs``) are unscored, as LongMemEval leaves them out
  of retrieval scoring [abstention_unscored]; so are questions left with no evidence
  [evidence_empty]; answer sessions absent from the haystack are reported
  [answer_session_unknown].

Errors naming the file, question, session/turn and field: a missing or non-string
``question_id``, ``question``, ``role`` or ``content``; haystack lists of different lengths;
an impossible date; then the checks every loader runs (``checks.check_dataset``: duplicate
question ids, duplicate session ids in one haystack, ...).
"""

from __future__ import annotations

import datetime as _dt
import re
from typing import Any

from ..dataset import Dataset, DatasetError, Dialogue, LoadReport, Probe, Session, Turn
from .checks import check_dataset, get_field, got, read_json

_DATE = re.compile(r"^\s*(\d{4})/(\d{1,2})/(\d{1,2})(?:\s*\([A-Za-z]+\))?(?:\s+(\d{1,2}):(\d{2}))?\s*$")
REQUIRED = ("question_id", "question", "haystack_session_ids", "haystack_dates", "haystack_sessions")


def parse_longmemeval_date(text: str) -> float:
    """'2023/05/20 (Sat) 02:21' -> epoch seconds (UTC). Raises ValueError otherwise."""
    m = _DATE.match(str(text))
    if not m:
        raise ValueError(f"expected a date like '2023/05/20 (Sat) 02:21', got {text!r}")
    y, mo, d, h, mi = m.groups()
    try:
        t = _dt.datetime(int(y), int(mo), int(d), int(h or 0), int(mi or 0), tzinfo=_dt.timezone.utc)
    except ValueError as e:  # 2023/02/30, 25:00, ...
        raise ValueError(f"{text!r} is not a date: {e}") from None
    return t.timestamp()


def load_longmemeval(path: str, evidence_roles: tuple[str, ...] = ("user",),
                     turn_spacing: float = 1.0) -> Dataset:
    """Load a LongMemEval file (``longmemeval_s.json``, ``_m``, ``_oracle`` share the schema)."""
    if not turn_spacing > 0:
        raise DatasetError(f"turn_spacing must be > 0 seconds, got {turn_spacing!r}")
    doc = read_json(path)
    if not isinstance(doc, list):
        raise DatasetError(f"{path}: not a LongMemEval file (expected a list of questions)")
    report = LoadReport()
    dialogues = [_item(item, i, str(path), report, tuple(evidence_roles), turn_spacing)
                 for i, item in enumerate(doc)]
    # Sessions sorted by date may share a minute, so a session can start before the previous
    # one's last turn: time order is LongMemEval's, not checked here.
    check_dataset(dialogues, str(path), check_times=False)
    return Dataset(name="longmemeval", dialogues=dialogues, source_path=str(path), report=report)


def _date(text: Any, path: str, where: str, field: str) -> float:
    try:
        return parse_longmemeval_date(text)
    except ValueError as e:
        raise DatasetError(f"{path}: {where}: field {field!r}: {e}") from None


def _item(item: Any, index: int, path: str, report: LoadReport, evidence_roles: tuple[str, ...],
          turn_spacing: float) -> Dialogue:
    if not isinstance(item, dict):
        raise DatasetError(f"{path}: question {index + 1}: expected an object, got {type(item).__name__}")
    qid = item.get("question_id")
    where = f"question {qid!r}" if isinstance(qid, str) else f"question {index + 1}"
    for f in REQUIRED:
        if f not in item:
            raise DatasetError(f"{path}: {where}: field {f!r} is required")
    qid = get_field(item, "question_id", "string", path, where)
    where = f"question {qid!r}"
    question = get_field(item, "question", "string", path, where)
    ids = get_field(item, "haystack_session_ids", "array", path, where)
    dates = get_field(item, "haystack_dates", "array", path, where)
    raw_sessions = get_field(item, "haystack_sessions", "array", path, where)
    if not len(ids) == len(dates) == len(raw_sessions):
        raise DatasetError(f"{path}: {where}: haystack_session_ids, haystack_dates and haystack_sessions "
                           f"must have the same length, got {len(ids)}, {len(dates)}, {len(raw_sessions)}")
    for i, (sid, session) in enumerate(zip(ids, raw_sessions)):
        if not isinstance(sid, str):
            raise DatasetError(f"{path}: {where}: field 'haystack_session_ids': item {i + 1} must be "
                               f"a string, got {got(sid)}")
        if not isinstance(session, list):
            raise DatasetError(f"{path}: {where}, session {sid!r}: field 'haystack_sessions' item "
                               f"{i + 1} must be an array of turns, got {got(session)}")
    starts = [_date(d, path, f"{where}, session {str(s)!r}", "haystack_dates") for s, d in zip(ids, dates)]
    order = sorted(range(len(ids)), key=lambda i: starts[i])
    if order != list(range(len(ids))):
        report.add("sessions_reordered", "haystack sessions sorted by date", dialogue=qid)
    sessions: list[Session] = []
    has_answer: list[str] = []
    for i in order:
        sid = str(ids[i])
        turns = []
        for j, t in enumerate(raw_sessions[i]):
            twhere = f"{where}, session {sid!r}, turn {j + 1}"
            if not isinstance(t, dict):
                raise DatasetError(f"{path}: {twhere}: must be an object, got {got(t)}")
            get_field(t, "role", "string", path, twhere)
            get_field(t, "content", "string", path, twhere)
            tid = f"{sid}:{j + 1}"
            extra = {k: v for k, v in t.items() if k not in ("role", "content")}
            turns.append(Turn(id=tid, speaker=t["role"], role=t["role"], text=t["content"],
                              timestamp=starts[i] + j * turn_spacing, session_id=sid, metadata=extra))
            if t.get("has_answer") is True and t["role"] in evidence_roles:
                has_answer.append(tid)
        sessions.append(Session(id=sid, timestamp=starts[i], turns=turns))
    evidence = has_answer
    answer_sessions = ([] if item.get("answer_session_ids") is None else
                       [str(s) for s in get_field(item, "answer_session_ids", "array", path, where)])
    known_sessions = {s.id: s for s in sessions}
    for s in answer_sessions:
        if s not in known_sessions:
            report.add("answer_session_unknown", f"answer session {s!r} is not in the haystack",
                       dialogue=qid, probe=qid)
    if not evidence and answer_sessions:
        evidence = [t.id for s in answer_sessions if s in known_sessions
                    for t in known_sessions[s].turns if t.role in evidence_roles]
        if evidence:
            report.add("evidence_from_answer_sessions", "no has_answer turn: answer sessions' turns used",
                       dialogue=qid, probe=qid)
    if qid.endswith("_abs") and evidence:
        # LongMemEval leaves abstention questions out of retrieval scoring: the asked fact
        # was never said, so no turn is gold.
        report.add("abstention_unscored", "abstention question: evidence cleared", dialogue=qid, probe=qid)
        evidence = []
    elif not evidence:
        report.add("evidence_empty", "no evidence: probe kept, unscored", dialogue=qid, probe=qid)
    answer = item.get("answer")
    if answer is not None and not isinstance(answer, str):
        report.add("answer_int_to_str", f"{answer!r} -> {str(answer)!r}", dialogue=qid, probe=qid)
        answer = str(answer)
    asked = (_date(item["question_date"], path, where, "question_date")
             if item.get("question_date") is not None else None)
    meta: dict[str, Any] = {"answer_session_ids": answer_sessions,
                            "abstention": qid.endswith("_abs")}
    probe = Probe(id=qid, after_turn=None, query=question, evidence=evidence, answer=answer,
                  category=item.get("question_type"), metadata=meta, timestamp=asked)
    return Dialogue(id=qid, sessions=sessions, probes=[probe])
