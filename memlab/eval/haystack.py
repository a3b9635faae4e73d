"""Haystack scaling: the same questions asked over histories of growing length.

``grow_haystack(dialogue, size, filler)`` gives the question's dialogue with a history of
``size`` sessions:

- ``"evidence"``: only its evidence sessions (``probe.metadata["evidence_sessions"]`` and the
  sessions holding gold turns), i.e. LongMemEval's oracle setting;
- an int n up to the haystack's own length: the evidence sessions plus the first
  n - (evidence sessions) other sessions of its own haystack in date order, replayed in
  date order (never fewer than the evidence sessions);
- an int beyond it: the whole haystack plus filler sessions (``filler``: sessions of
  *other* questions, taken in the given order, skipping ids already present), re-dated to
  precede the question's first session: filler i of m starts at
  first_session_time - (m - i) * ``FILLER_SPACING`` seconds, its turns spaced as loaded
  (turn j at the session start + j seconds). The question, its evidence and its time are
  unchanged.

``scaling_study(path, questions, strategies, sizes, budget)`` streams a LongMemEval file,
keeps the chosen questions and a pool of filler sessions (the non-evidence sessions of the
other questions, in file order, as many as the largest size needs), and replays every
strategy at every size. One result row per (strategy, size): the mean number of sessions,
turn-level ``recall@<budget>tok`` and ``session_hit_rate@<budget>tok`` (token-matched, with
95% bootstrap intervals clustered by question, seed 0) and seconds per question (the
replay's wall time divided by the questions; the only figure that is not reproducible).
"""

from __future__ import annotations

import copy
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ..base import MemlabError
from .dataset import Dataset, Dialogue, Session, Turn

#: Seconds between the starts of consecutive filler sessions.
FILLER_SPACING = 3600.0


def evidence_sessions(dialogue: Dialogue) -> list[str]:
    """Ids of the sessions the question's evidence is in (metadata sessions first)."""
    probe = dialogue.probes[0]
    gold = set(probe.evidence)
    named = [str(s) for s in probe.metadata.get("evidence_sessions", [])]
    holding = [s.id for s in dialogue.sessions if any(t.id in gold for t in s.turns)]
    return list(dict.fromkeys(named + holding))


def _redated(session: Session, start: float) -> Session:
    shift = start - session.timestamp
    turns = [Turn(id=t.id, speaker=t.speaker, role=t.role, text=t.text, timestamp=t.timestamp + shift,
                  session_id=t.session_id, metadata=dict(t.metadata), content=t.content) for t in session.turns]
    return Session(id=session.id, timestamp=start, turns=turns)


def grow_haystack(dialogue: Dialogue, size: int | str, filler: Sequence[Session] = ()) -> Dialogue:
    """The dialogue with a history of ``size`` sessions (see the module docstring)."""
    if len(dialogue.probes) != 1:
        raise MemlabError(f"grow_haystack needs one question per dialogue, {dialogue.id!r} has "
                          f"{len(dialogue.probes)}")
    evidence = set(evidence_sessions(dialogue))
    own = sorted(dialogue.sessions, key=lambda s: s.timestamp)
    if size == "evidence":
        kept = [s for s in own if s.id in evidence]
        extra: list[Session] = []
    elif isinstance(size, int) and not isinstance(size, bool) and size >= 1:
        others = [s for s in own if s.id not in evidence]
        room = max(size - len(evidence), 0)
        chosen = {s.id for s in others[:room]}
        kept = [s for s in own if s.id in evidence or s.id in chosen]
        extra = []
        if size > len(own):
            present = {s.id for s in own}
            unique: dict[str, Session] = {}
            for s in filler:  # each id once, the first kept
                if s.id not in present:
                    unique.setdefault(s.id, s)
            pool = list(unique.values())
            need = size - len(own)
            if len(pool) < need:
                raise MemlabError(f"grow_haystack: {need} filler sessions needed for size {size}, "
                                  f"{len(pool)} given")
            first = own[0].timestamp if own else 0.0
            extra = [_redated(s, first - (need - i) * FILLER_SPACING) for i, s in enumerate(pool[:need])]
    else:
        raise MemlabError(f"size must be 'evidence' or an int >= 1, got {size!r}")
    out = copy.copy(dialogue)
    out.sessions = extra + kept
    out.probes = [copy.deepcopy(p) for p in dialogue.probes]
    out.metadata = dict(dialogue.metadata)
    out.__dict__.pop("_index_cache", None)
    return out


def collect(path: str, questions: Iterable[str], n_filler: int,
            roles: tuple[str, ...] | None = ("user",)) -> tuple[list[Dialogue], list[Session]]:
    """The chosen questions of a LongMemEval file and up to ``n_filler`` filler sessions
    (non-evidence sessions of the other questions, file order, each id once), streamed."""
    from .loaders import iter_longmemeval

    wanted = list(questions)
    chosen: dict[str, Dialogue] = {}
    filler: dict[str, Session] = {}
    for d in iter_longmemeval(path, roles=roles):
        if d.id in wanted:
            chosen[d.id] = d
        elif len(filler) < n_filler:
            ev = set(evidence_sessions(d))
            for s in d.sessions:
                if s.id not in ev and s.id not in filler and len(filler) < n_filler:
                    filler[s.id] = s
        if len(chosen) == len(wanted) and len(filler) >= n_filler:
            break
    missing = [q for q in wanted if q not in chosen]
    if missing:
        raise MemlabError(f"{path}: no question {missing[0]!r}")
    return [chosen[q] for q in wanted], list(filler.values())


def scaling_study(path: str, questions: Sequence[str], strategies: Mapping[str, tuple[str, dict[str, Any]]],
                  sizes: Sequence[int | str] = ("evidence", 5, 10, 20, 50, 100, 200, 500), budget: int = 1024,
                  roles: tuple[str, ...] | None = ("user",), filler_margin: int = 100) -> dict[str, Any]:
    """Replay each strategy (``label -> (registered name, params)``) at each history size."""
    from ..strategies import get
    from .metrics import summarize
    from .replay import replay

    largest = max((s for s in sizes if isinstance(s, int)), default=0)
    dialogues, filler = collect(path, questions, largest + filler_margin, roles)
    rows_out: list[dict[str, Any]] = []
    recall, session = f"recall@{budget}tok", f"session_hit_rate@{budget}tok"
    for size in sizes:
        grown = [grow_haystack(d, size, filler) for d in dialogues]
        ds = Dataset("longmemeval-scaling", grown)
        for label, (name, params) in strategies.items():
            start = time.perf_counter()
            rows = replay(get(name, **params), ds, ks=(5,), budgets=(budget,), label=label, provenance={})
            seconds = time.perf_counter() - start
            s = summarize(rows, by=["strategy"], ci=True).iloc[0]
            rows_out.append({
                "strategy": label, "size": size, "mean_sessions": sum(len(d.sessions) for d in grown) / len(grown),
                "mean_turns": sum(d.n_turns for d in grown) / len(grown), "n_scored": int(s["n_scored"]),
                recall: float(s[recall]), f"{recall}_ci": [float(s[f"{recall}_ci_low"]), float(s[f"{recall}_ci_high"])],
                session: float(s[session]),
                f"{session}_ci": [float(s[f"{session}_ci_low"]), float(s[f"{session}_ci_high"])],
                "seconds_per_question": seconds / len(grown),
            })
    return {"questions": list(questions), "sizes": list(sizes), "budget": budget, "rows": rows_out}


__all__ = ["FILLER_SPACING", "collect", "evidence_sessions", "grow_haystack", "scaling_study"]
