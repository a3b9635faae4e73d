"""LongMemEval (Wu et al., ICLR 2025) -> memlab Dataset, from its published schema.

The file is a list of questions, each with its own haystack::

    {question_id, question_type, question, answer, question_date,
     haystack_session_ids, haystack_dates, haystack_sessions: [[{role, content, has_answer?}]],
     answer_session_ids}

It may be gzip-compressed (``longmemeval_s_cleaned.json.gz``). ``iter_longmemeval`` reads
it one question at a time (the S file is 278 MB of JSON; only one question's haystack is
held); ``load_longmemeval`` keeps them all. Each question becomes one Dialogue (id =
question_id) with one probe (same id) asked after the last turn. Conventions:

- **Neutral session ids.** The published evidence session ids begin with ``answer_``, a
  label leak (LongMemEval's own retrieval code marks gold by that text). Every haystack
  session id ``sid`` becomes ``neutral_session_id(sid)`` = ``"s"`` + the first 10 hex
  digits of sha256(sid), the same id wherever the session recurs; turn ids are
  ``<neutral id>:<i>`` with i the 1-based position of the turn in its session (assistant
  turns count). No published session id reaches a turn, a record, a probe's metadata or
  anything a strategy sees; the map back (neutral -> published) is the dialogue's
  ``metadata["session_ids"]``, which the replay never shows a strategy.
- **Times.** Dates like ``2023/05/20 (Sat) 02:21`` are UTC; turn i (0-based) of a session
  is at the session date + i * ``turn_spacing`` seconds; sessions are replayed in date
  order (a stable sort; a reordering is reported as [sessions_reordered]). The probe is
  asked at ``question_date``, or at its last turn when the question is dated earlier (43
  of the 500 published oracle questions are) [question_before_last_turn]; the published
  text is kept as ``probe.metadata["question_date"]``.
- **Duplicated sessions.** A session listed twice with the same turns is kept once, at the
  earlier of its dates (the published S file dates some copies days apart)
  [duplicate_session_dropped]; the same id with different turns is an error.
- **Units.** ``roles`` keeps only the turns of those roles; the default ``("user",)``
  indexes user turns only, as LongMemEval's turn-level retrieval does (its keys are user
  turns; the gold turns are user turns too, see below). ``None`` (or ``"all"``, the spelling
  a sweep file's TOML and ``memlab eval --option roles=all`` can give) keeps every turn: the
  assistant turns, long and many, then fill a token budget first (the "every turn" rows of
  ``bench/bench_longmemeval.py`` measure what that costs).
  Dropped turns keep their place in the numbering (turn ids do not change).
- **Evidence.** The kept turns whose role is in ``evidence_roles`` (default: user) and
  that carry ``has_answer: true`` (a turn without the field counts as false: the oracle
  file marks only the true ones). ``probe.metadata["evidence_sessions"]`` = the neutral
  ids of ``answer_session_ids`` (the session-level gold of memlab's own session metrics).
  The questions LongMemEval's retrieval scoring skips are unscored here too, at every
  level: abstention questions (id ending ``_abs``) [abstention_unscored], and questions
  with no evidence turn -- with the default roles, no user turn marked ``has_answer``
  [evidence_empty]. Answer sessions absent from the haystack are reported
  [answer_session_unknown].

Errors naming the file, question, session/turn and field: a missing or non-string
``question_id``, ``question``, ``role`` or ``content``; a role that is not user, assistant
or system; haystack lists of different lengths; an impossible date; then the checks every
loader runs (``checks.check_dataset``: duplicate question ids, ...).
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import re
from collections.abc import Iterator
from typing import Any

from ..dataset import ROLES, Dataset, DatasetError, Dialogue, LoadReport, Probe, Session, Turn
from .checks import _short, check_dataset, get_field, got, iter_json_array

_DATE = re.compile(r"^\s*(\d{4})/(\d{1,2})/(\d{1,2})(?:\s*\([A-Za-z]+\))?(?:\s+(\d{1,2}):(\d{2}))?\s*$")
REQUIRED = ("question_id", "question", "haystack_session_ids", "haystack_dates", "haystack_sessions")
#: Hex digits of sha256(published id) in a neutral session id.
NEUTRAL_DIGITS = 10


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


def neutral_session_id(session_id: str) -> str:
    """``"s"`` + the first ``NEUTRAL_DIGITS`` hex digits of sha256(session_id, UTF-8)."""
    return "s" + hashlib.sha256(session_id.encode("utf-8")).hexdigest()[:NEUTRAL_DIGITS]


def _check_options(evidence_roles: tuple[str, ...], turn_spacing: float,
                   roles: tuple[str, ...] | None) -> None:
    if not turn_spacing > 0:
        raise DatasetError(f"turn_spacing must be > 0 seconds, got {turn_spacing!r}")
    for name, value in (("evidence_roles", evidence_roles), ("roles", roles)):
        if value is None and name == "roles":
            continue
        bad = [r for r in value if r not in ROLES]  # type: ignore[union-attr]
        if isinstance(value, str) or not value or bad:
            every = " (or 'all': every turn)" if name == "roles" else ""
            raise DatasetError(f"{name} must be a non-empty list of roles among {', '.join(ROLES)}{every}, "
                               f"got {value!r}")


def iter_longmemeval(path: str, evidence_roles: tuple[str, ...] = ("user",), turn_spacing: float = 1.0,
                     roles: tuple[str, ...] | str | None = ("user",),
                     report: LoadReport | None = None) -> Iterator[Dialogue]:
    """The questions of a LongMemEval file as Dialogues, parsed and checked one at a time.

    Entries go to ``report`` (when given) as questions are read. Each dialogue passes
    ``check_dialogue``; question ids are checked to be unique across the file.
    """
    evidence_roles = tuple(evidence_roles) if not isinstance(evidence_roles, str) else evidence_roles
    if roles == "all":
        roles = None
    roles = tuple(roles) if roles is not None and not isinstance(roles, str) else roles
    _check_options(evidence_roles, turn_spacing, roles)
    report = report if report is not None else LoadReport()
    seen: set[str] = set()
    for i, item in enumerate(iter_json_array(str(path))):
        d = _item(item, i, str(path), report, evidence_roles, turn_spacing, roles)
        check_dataset([d], str(path), check_times=False)
        if d.id in seen:
            raise DatasetError(f"{path}: dialogue {_short(d.id)}: duplicate dialogue id")
        seen.add(d.id)
        yield d


def load_longmemeval(path: str, evidence_roles: tuple[str, ...] = ("user",),
                     turn_spacing: float = 1.0, roles: tuple[str, ...] | str | None = ("user",)) -> Dataset:
    """Load a LongMemEval file (``longmemeval_s.json``, ``_m``, ``_oracle`` share the schema;
    ``.json.gz`` too). See ``iter_longmemeval`` to read one question at a time."""
    report = LoadReport()
    dialogues = list(iter_longmemeval(path, evidence_roles, turn_spacing, roles, report))
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
          turn_spacing: float, roles: tuple[str, ...] | None) -> Dialogue:
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
    # a session listed twice: identical copies are kept once, different content is an error
    first_of: dict[str, int] = {}
    keep: list[int] = []
    for i, sid in enumerate(ids):
        if sid not in first_of:
            first_of[sid] = i
            keep.append(i)
            continue
        j = first_of[sid]
        if raw_sessions[i] == raw_sessions[j]:
            if starts[i] < starts[j]:  # the copy kept is dated at the earlier of the two dates
                keep[keep.index(j)] = i
                first_of[sid] = i
            report.add("duplicate_session_dropped", f"session {sid!r} listed twice with identical "
                       f"turns (dated {dates[j]!r} and {dates[i]!r}): kept once, at the earlier "
                       f"date", dialogue=qid, session=sid)
        else:
            raise DatasetError(f"{path}: dialogue {qid!r}, session {sid!r}: duplicate session id with "
                               f"different content (items {j + 1} and {i + 1} of haystack_sessions)")
    order = sorted(keep, key=lambda i: starts[i])
    if order != keep:
        report.add("sessions_reordered", "haystack sessions sorted by date", dialogue=qid)
    neutral: dict[str, str] = {}
    for sid in first_of:
        n = neutral_session_id(sid)
        if n in neutral:
            raise DatasetError(f"{path}: {where}: sessions {neutral[n]!r} and {sid!r} have the same "
                               f"neutral id {n!r}; rename one")
        neutral[n] = sid
    to_neutral = {v: k for k, v in neutral.items()}
    sessions: list[Session] = []
    has_answer: list[str] = []
    for i in order:
        sid = str(ids[i])
        nid = to_neutral[sid]
        turns = []
        for j, t in enumerate(raw_sessions[i]):
            twhere = f"{where}, session {sid!r}, turn {j + 1}"
            if not isinstance(t, dict):
                raise DatasetError(f"{path}: {twhere}: must be an object, got {got(t)}")
            role = get_field(t, "role", "string", path, twhere)
            get_field(t, "content", "string", path, twhere)
            if role not in ROLES:
                raise DatasetError(f"{path}: {where}, session {sid!r}, turn {j + 1} ({sid + ':' + str(j + 1)!r}): "
                                   f"field 'role' must be one of {', '.join(map(repr, ROLES))}, got {_short(role)}")
            if roles is not None and role not in roles:
                continue
            tid = f"{nid}:{j + 1}"
            extra = {k: v for k, v in t.items() if k not in ("role", "content")}
            turns.append(Turn(id=tid, speaker=role, role=role, text=t["content"],
                              timestamp=starts[i] + j * turn_spacing, session_id=nid, metadata=extra))
            if t.get("has_answer") is True and role in evidence_roles:
                has_answer.append(tid)
        sessions.append(Session(id=nid, timestamp=starts[i], turns=turns))
    evidence = has_answer
    answer_sessions = ([] if item.get("answer_session_ids") is None else
                       [str(s) for s in get_field(item, "answer_session_ids", "array", path, where)])
    for s in answer_sessions:
        if s not in to_neutral:
            report.add("answer_session_unknown", f"answer session {s!r} is not in the haystack",
                       dialogue=qid, probe=qid)
    gold_sessions = list(dict.fromkeys(to_neutral[s] for s in answer_sessions if s in to_neutral))
    abstention = qid.endswith("_abs")
    if abstention and (evidence or gold_sessions):
        # LongMemEval leaves abstention questions out of retrieval scoring: the asked fact
        # was never said, so no turn (and no session) is gold.
        report.add("abstention_unscored", "abstention question: evidence cleared", dialogue=qid, probe=qid)
        evidence, gold_sessions = [], []
    elif not evidence:
        # LongMemEval's run_retrieval.py skips a question with no user turn marked has_answer
        # (in S dev: 40 single-session-assistant questions); scoring the answer sessions' turns
        # instead would average over questions its figures leave out.
        report.add("evidence_empty", f"no kept turn with a role in {list(evidence_roles)} is marked "
                   f"has_answer: probe kept, unscored", dialogue=qid, probe=qid)
    answer = item.get("answer")
    if answer is not None and not isinstance(answer, str):
        report.add("answer_int_to_str", f"{answer!r} -> {str(answer)!r}", dialogue=qid, probe=qid)
        answer = str(answer)
    meta: dict[str, Any] = {"evidence_sessions": gold_sessions, "abstention": abstention}
    asked = None
    if item.get("question_date") is not None:
        asked = _date(item["question_date"], path, where, "question_date")
        meta["question_date"] = item["question_date"]
        last = max((t.timestamp for s in sessions for t in s.turns), default=None)
        if last is not None and asked < last:
            report.add("question_before_last_turn", f"question_date {item['question_date']!r} is earlier "
                       f"than the last turn: asked at the last turn's time", dialogue=qid, probe=qid)
            meta["dated_before_last_turn"] = True
            asked = last
    probe = Probe(id=qid, after_turn=None, query=question, evidence=evidence, answer=answer,
                  category=item.get("question_type"), metadata=meta, timestamp=asked)
    return Dialogue(id=qid, sessions=sessions, probes=[probe], metadata={"session_ids": neutral})


def is_longmemeval(path: str) -> bool:
    """A JSON array whose first element has ``question_id`` and ``haystack_sessions``."""
    from .registry import json_sample

    sample = json_sample(path)
    return isinstance(sample, list) and bool(sample) and isinstance(sample[0], dict) \
        and "haystack_sessions" in sample[0] and "question_id" in sample[0]


from .registry import register_loader  # noqa: E402

register_loader("longmemeval", load=load_longmemeval, detect=is_longmemeval, iterate=iter_longmemeval,
                doc="LongMemEval (Wu et al., ICLR 2025): one haystack per question; streams")

__all__ = ["is_longmemeval", "iter_longmemeval", "load_longmemeval", "neutral_session_id",
           "parse_longmemeval_date"]
