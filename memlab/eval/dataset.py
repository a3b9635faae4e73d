"""The dataset model: dialogues of timed turns, grouped in sessions, with probes.

A *probe* is a question asked at a point of a dialogue (after a given turn), with the
gold evidence (turn ids) a memory should recall to answer it. The replay engine feeds
the turns to a strategy in order and asks each probe when its turn has been observed.

All times are float seconds since the Unix epoch (UTC); the native JSON format writes
them as ISO-8601 strings (see ``datasets/README.md``).
"""

from __future__ import annotations

import copy
import datetime as _dt
import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass, field, fields
from typing import Any, Literal

from ..base import MemlabError
from ..records import MemoryRecord, Role

ROLES = ("user", "assistant", "system")


class DatasetError(MemlabError):
    """A dataset file or object is malformed; the message names file, dialogue, turn and field."""


@dataclass
class Turn:
    """One utterance.

    ``text`` is what was said; ``content`` (optional) is the text a memory indexes and
    shows for this turn when it differs from ``text`` -- LoCoMo turns, for instance, are
    indexed as ``<speaker> said, "<text>"``. ``retrieval_text`` picks the right one.
    """

    id: str
    speaker: str
    role: str
    text: str
    timestamp: float
    session_id: str
    metadata: dict[str, Any] = field(default_factory=dict)
    content: str | None = None

    @property
    def retrieval_text(self) -> str:
        """The text stored in memory for this turn: ``content`` if set, else ``text``."""
        return self.text if self.content is None else self.content

    def to_record(self, dialogue_id: str | None = None) -> MemoryRecord:
        """The turn as a MemoryRecord: id = turn id, dialogue time, speaker/session/dia_id metadata."""
        meta: dict[str, Any] = {"speaker": self.speaker, "session_id": self.session_id,
                                "dia_id": self.id}
        if dialogue_id is not None:
            meta["dialogue_id"] = dialogue_id
        return MemoryRecord(role=Role.parse(self.role), content=self.retrieval_text, id=self.id,
                            timestamp=self.timestamp, metadata=meta)


@dataclass
class Session:
    """A stretch of conversation that starts at ``timestamp`` (epoch seconds)."""

    id: str
    timestamp: float
    turns: list[Turn] = field(default_factory=list)


@dataclass
class Probe:
    """A question asked during a dialogue.

    ``after_turn``: the turn id after which it is asked; None means after the last turn.
    ``evidence``: gold turn ids (empty = unscored: every retrieval metric is NaN).
    ``timestamp``: when it is asked; None means at the time of the turn it follows.
    ``stale_evidence``: turn ids whose statement on the probe's subject was later
    superseded (an old preference, a moved address); a memory that shows them to the
    model risks an outdated answer (see ``memlab.eval.lifecycle``). Empty = not annotated.
    """

    id: str
    after_turn: str | None
    query: str
    evidence: list[str] = field(default_factory=list)
    answer: str | None = None
    category: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    timestamp: float | None = None
    stale_evidence: list[str] = field(default_factory=list)


@dataclass
class Dialogue:
    """Sessions of turns in replay order, and the probes asked along the way."""

    id: str
    sessions: list[Session] = field(default_factory=list)
    probes: list[Probe] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)

    def turns(self) -> list[Turn]:
        """All turns, in replay order (sessions in order, turns in order)."""
        return list(self._index()[0])

    @property
    def n_turns(self) -> int:
        return sum(len(s.turns) for s in self.sessions)

    def _index(self) -> tuple[list[Turn], dict[str, int]]:
        """(turns in replay order, turn id -> position), built once and reused.

        A replay asks for a probe's position and time at every probe; rebuilding the
        list and the dict each time made a replay quadratic. The cache is keyed by the
        session and turn-list objects and their lengths (O(sessions) to check), so adding,
        removing or replacing sessions or turns rebuilds it; positions are also checked
        against the turn found there before they are used.
        """
        sessions = self.sessions
        cached = self.__dict__.get("_index_cache")
        if cached is not None:
            key = cached[0]  # (session, its turn list, its length); holding them keeps ids unique
            if len(key) != len(sessions) or not all(
                    k[0] is s and k[1] is s.turns and k[2] == len(s.turns) for k, s in zip(key, sessions)):
                cached = None
        if cached is None:
            turns = [t for s in sessions for t in s.turns]
            cached = ([(s, s.turns, len(s.turns)) for s in sessions], turns,
                      {t.id: i for i, t in enumerate(turns)})
            self.__dict__["_index_cache"] = cached
        return cached[1], cached[2]

    def __getstate__(self) -> dict[str, Any]:
        # copies and pickles (joblib workers) carry the data, not the cache
        state = dict(self.__dict__)
        state.pop("_index_cache", None)
        return state

    def _position_of(self, turn_id: str) -> int | None:
        turns, positions = self._index()
        n = positions.get(turn_id)
        if n is None or turns[n].id != turn_id:  # a miss, or ids changed in place: look again
            self.__dict__.pop("_index_cache", None)
            turns, positions = self._index()
            n = positions.get(turn_id)
        return n

    def turn_positions(self) -> dict[str, int]:
        """Turn id -> 0-based position in replay order."""
        return {t.id: i for i, t in enumerate(self._index()[0])}

    def turn(self, turn_id: str) -> Turn:
        n = self._position_of(turn_id)
        if n is None:
            raise DatasetError(f"dialogue {self.id!r} has no turn {turn_id!r}")
        return self._index()[0][n]

    def to_records(self) -> list[MemoryRecord]:
        """One MemoryRecord per turn, in replay order (see ``Turn.to_record``)."""
        return [t.to_record(self.id) for t in self._index()[0]]

    def probe_position(self, probe: Probe) -> int:
        """Number of turns observed when ``probe`` is asked (all turns if ``after_turn`` is None)."""
        if probe.after_turn is None:
            return self.n_turns
        n = self._position_of(probe.after_turn)
        if n is None:
            raise DatasetError(f"dialogue {self.id!r}, probe {probe.id!r}: "
                               f"after_turn {probe.after_turn!r} is not a turn of the dialogue")
        return n + 1

    def probe_time(self, probe: Probe) -> float:
        """When ``probe`` is asked: its own timestamp, else the time of the turn it follows."""
        if probe.timestamp is not None:
            return probe.timestamp
        n = self.probe_position(probe)
        return self._index()[0][n - 1].timestamp if n > 0 else (
            self.sessions[0].timestamp if self.sessions else 0.0)

    def timeline(self) -> list[tuple[Literal["turn", "probe"], Turn | Probe]]:
        """Replay order: ``("turn", t)`` and ``("probe", p)`` events.

        A probe comes right after its ``after_turn`` (probes sharing a turn keep their
        list order); probes with ``after_turn`` None come after the last turn.
        """
        by_position: dict[int, list[Probe]] = {}
        for p in self.probes:
            by_position.setdefault(self.probe_position(p), []).append(p)
        events: list[tuple[Literal["turn", "probe"], Turn | Probe]] = []
        events.extend(("probe", p) for p in by_position.get(0, []))
        for i, t in enumerate(self._index()[0], start=1):
            events.append(("turn", t))
            events.extend(("probe", p) for p in by_position.get(i, []))
        return events


@dataclass
class LoadReport:
    """What a loader fixed or dropped while normalising a source file.

    Each entry is a dict with ``kind`` (e.g. ``"evidence_split"``), ``dialogue``,
    optionally ``probe``/``session``, and ``detail`` (a human-readable sentence).
    """

    entries: list[dict[str, Any]] = field(default_factory=list)

    def add(self, kind: str, detail: str, **where: Any) -> None:
        self.entries.append({"kind": kind, **where, "detail": detail})

    def counts(self) -> dict[str, int]:
        """Entries per kind, sorted by kind."""
        out: dict[str, int] = {}
        for e in self.entries:
            out[e["kind"]] = out.get(e["kind"], 0) + 1
        return dict(sorted(out.items()))

    def of_kind(self, kind: str) -> list[dict[str, Any]]:
        return [e for e in self.entries if e["kind"] == kind]

    def __len__(self) -> int:
        return len(self.entries)

    def summary(self) -> str:
        if not self.entries:
            return "nothing fixed or dropped"
        return "; ".join(f"{k}: {n}" for k, n in self.counts().items())

    def to_frame(self):  # -> pandas.DataFrame (imported lazily: dataset loading needs no pandas)
        import pandas as pd
        return pd.DataFrame(self.entries)


@dataclass
class Dataset:
    """Named dialogues, where they came from, and the loader's report."""

    name: str
    dialogues: list[Dialogue]
    source_path: str | None = None
    report: LoadReport = field(default_factory=LoadReport)

    def __len__(self) -> int:
        return len(self.dialogues)

    def __iter__(self) -> Iterator[Dialogue]:
        return iter(self.dialogues)

    def dialogue(self, dialogue_id: str) -> Dialogue:
        for d in self.dialogues:
            if d.id == dialogue_id:
                return d
        ids = [d.id for d in self.dialogues]
        shown = ", ".join(ids[:8]) + (f", ... ({len(ids)} in all)" if len(ids) > 8 else "")
        where = f" ({self.source_path})" if self.source_path else ""
        raise DatasetError(f"dataset {self.name!r}{where} has no dialogue {dialogue_id!r}; dialogues: {shown}")

    @property
    def n_probes(self) -> int:
        return sum(len(d.probes) for d in self.dialogues)

    @property
    def n_turns(self) -> int:
        return sum(d.n_turns for d in self.dialogues)

    @property
    def n_sessions(self) -> int:
        return sum(len(d.sessions) for d in self.dialogues)

    @property
    def hash(self) -> str:
        """sha256 (hex) of the canonical JSON of the dialogues (name, path and report excluded).

        Canonical = ``json.dumps`` of the dataclass fields with sorted keys, no spaces,
        ``ensure_ascii=False``, UTF-8; timestamps as floats. Same content -> same hash.
        """
        payload = [_fields(d) for d in self.dialogues]
        text = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"),
                          allow_nan=True)  # NaN in free-form metadata is valid data
        return hashlib.sha256(text.encode("utf-8")).hexdigest()

    def categories(self) -> list[str]:
        """The probe categories present, sorted (probes without one are left out)."""
        return sorted({p.category for d in self.dialogues for p in d.probes if p.category is not None})

    def subset(self, dialogues: list[str] | int | None = None, categories: list[str] | None = None,
               max_probes: int | None = None) -> Dataset:
        """A copy restricted to some dialogues (ids, or the first n), probe categories,
        and at most ``max_probes`` probes per dialogue (the first ones)."""
        chosen = self.dialogues
        if isinstance(dialogues, int):
            chosen = chosen[:dialogues]
        elif dialogues is not None:
            chosen = [self.dialogue(i) for i in dialogues]
        if categories is not None:
            unknown = sorted(set(categories) - set(self.categories()))
            if unknown:
                raise DatasetError(f"unknown categories {unknown}; available: {self.categories()}")
        out = []
        for d in chosen:
            d = copy.deepcopy(d)
            if categories is not None:
                d.probes = [p for p in d.probes if p.category in categories]
            if max_probes is not None:
                d.probes = d.probes[:max_probes]
            out.append(d)
        return Dataset(self.name, out, self.source_path, self.report)

    def to_dict(self) -> dict[str, Any]:
        """The dataset in the native JSON format (timestamps as ISO-8601 UTC strings)."""
        return {"name": self.name, "dialogues": [_dialogue_to_native(d) for d in self.dialogues]}

    def save(self, path: str) -> None:
        """Write the dataset in the native format (UTF-8, indented)."""
        from ..atomic import atomic_write_text
        atomic_write_text(path, json.dumps(self.to_dict(), ensure_ascii=False, indent=1) + "\n")

    def __repr__(self) -> str:
        return (f"Dataset(name={self.name!r}, dialogues={len(self.dialogues)}, "
                f"turns={self.n_turns}, probes={self.n_probes}, hash={self.hash[:12]})")


def _fields(value: Any) -> Any:
    """What ``dataclasses.asdict`` gives for JSON, without its deep copy of every leaf (5x faster)."""
    if hasattr(value, "__dataclass_fields__") and not isinstance(value, type):
        return {f.name: _fields(getattr(value, f.name)) for f in fields(value)}
    if isinstance(value, (list, tuple)):
        return [_fields(v) for v in value]
    if isinstance(value, dict):
        return {k: _fields(v) for k, v in value.items()}
    return value


def format_time(ts: float) -> str:
    """Epoch seconds -> ISO-8601 UTC string (``2024-01-05T10:00:00Z``; microseconds if any)."""
    t = _dt.datetime.fromtimestamp(ts, tz=_dt.timezone.utc)
    text = t.isoformat(timespec="microseconds" if t.microsecond else "seconds")
    return text.replace("+00:00", "Z")


def parse_time(text: str) -> float:
    """ISO-8601 string -> epoch seconds. A trailing Z means UTC; no offset also means UTC.

    Raises ValueError when ``text`` is not ISO-8601.
    """
    if not isinstance(text, str):
        raise ValueError(f"expected an ISO-8601 string, got {text!r}")
    s = text.strip()
    if s.endswith(("Z", "z")):
        s = s[:-1] + "+00:00"
    t = _dt.datetime.fromisoformat(s)
    if t.tzinfo is None:
        t = t.replace(tzinfo=_dt.timezone.utc)
    return t.timestamp()


def _dialogue_to_native(d: Dialogue) -> dict[str, Any]:
    sessions = []
    for s in d.sessions:
        turns = []
        for t in s.turns:
            turn: dict[str, Any] = {"id": t.id, "speaker": t.speaker, "role": t.role, "text": t.text,
                                    "timestamp": format_time(t.timestamp)}
            if t.content is not None:
                turn["content"] = t.content
            if t.metadata:
                turn["metadata"] = t.metadata
            turns.append(turn)
        sessions.append({"id": s.id, "timestamp": format_time(s.timestamp), "turns": turns})
    probes = []
    for p in d.probes:
        probe: dict[str, Any] = {"id": p.id, "after_turn": p.after_turn, "query": p.query,
                                 "evidence": list(p.evidence), "answer": p.answer,
                                 "category": p.category}
        if p.stale_evidence:
            probe["stale_evidence"] = list(p.stale_evidence)
        if p.timestamp is not None:
            probe["timestamp"] = format_time(p.timestamp)
        if p.metadata:
            probe["metadata"] = p.metadata
        probes.append(probe)
    out: dict[str, Any] = {"id": d.id, "sessions": sessions, "probes": probes}
    if d.metadata:
        out["metadata"] = d.metadata
    return out
