"""Sessions as retrieval units: a hit is a whole session (LongMemEval's session-level keys).

``SessionStrategy`` observes turns like any strategy and indexes one record per session
(``metadata["session_id"]`` of the turns; turns without one form one session):

- id ``session:<session id>``; content = the optional date line ``Session of 8 May 2023``
  (``date``) followed by the session's turns, one per line as ``<role>: <text>``, in order;
- ``metadata["source_ids"]`` = the session's turn ids, so a hit covers exactly its turns
  for the metrics, and ``metadata["session_id"]`` = the session;
- timestamp = the session's first turn (its date), which decay and recency rules read.

The record of a session still open is rebuilt (removed and added again) before the next
search when more of its turns arrived; the index is causal like every memlab index. A hit's
tokens (``hit_tokens``) are those of the whole session text, so token-matched metrics
(``recall@<B>tok``) charge a session unit for its size and compare it fairly with turns.
The context holds the recalled sessions and the ``history_window`` most recent turns.
"""

from __future__ import annotations

from typing import Any

from ..base import Param
from ..filters import Where
from ..records import Hit, MemoryRecord, Role
from ..retrieval.contextual import format_date
from ..strategy import Context
from .retrieval import RetrievalStrategy

#: Prefix of a session record's id.
SESSION_PREFIX = "session:"


class SessionStrategy(RetrievalStrategy):
    """``RetrievalStrategy`` whose units are sessions (see the module docstring).

    ``date``: start the session text with its date line. Other parameters are
    ``RetrievalStrategy``'s (the retriever defaults to a ``BM25Retriever``).
    """

    constraints = {**RetrievalStrategy.constraints, "date": Param(bool)}

    def __init__(self, retriever: Any = None, date: bool = True, expansion: Any = None, decay: Any = None,
                 selection: Any = None, decay_combine: str = "multiply", decay_weight: float = 0.5,
                 reinforce: str = "used", candidates: int = 50, history_window: int = 4,
                 keep_rate: float = 0.9, context_k: int = 5, token_limit: int = 2048,
                 token_counter: Any = None, system_prompt: str | None = None):
        self.date = date
        super().__init__(retriever=retriever, expansion=expansion, decay=decay, selection=selection,
                         decay_combine=decay_combine, decay_weight=decay_weight, reinforce=reinforce,
                         candidates=candidates, history_window=history_window, keep_rate=keep_rate,
                         context_k=context_k, token_limit=token_limit, token_counter=token_counter,
                         system_prompt=system_prompt)

    def _build(self) -> None:
        super()._build()
        self._sessions: dict[str, list[MemoryRecord]] = {}
        self._dirty: dict[str, None] = {}

    def observe(self, record: MemoryRecord) -> None:
        sid = str(record.metadata.get("session_id", ""))
        self._history.append(record)
        self._sessions.setdefault(sid, []).append(record)
        self._dirty[sid] = None
        self._version += 1

    def session_record(self, session_id: str) -> MemoryRecord:
        """The record a session is indexed and shown as (see the module docstring)."""
        turns = self._sessions[session_id]
        lines = [f"Session of {format_date(turns[0].timestamp)}"] if self.date else []
        lines += [f"{t.role.value}: {t.content}" for t in turns]
        return MemoryRecord(role=Role.USER, content="\n".join(lines), id=SESSION_PREFIX + session_id,
                            timestamp=turns[0].timestamp,
                            metadata={"session_id": session_id, "source_ids": [t.id for t in turns]})

    def _flush(self) -> None:
        """Index the sessions that changed since the last search."""
        if not self._dirty:
            return
        stale = [SESSION_PREFIX + s for s in self._dirty if SESSION_PREFIX + s in self._chain]
        if stale:
            self._chain.remove(stale)
        fresh = [self.session_record(s) for s in self._dirty]
        self._chain.add(fresh)
        self._added.extend(r.id for r in fresh if r.id not in stale)
        self._dirty = {}
        self._version += 1

    def retrieve(self, query: str, k: int = 5, *, where: Where | None = None,
                 now: float | None = None) -> list[Hit]:
        self._flush()
        return super().retrieve(query, k, where=where, now=now)

    def build_context(self, query: str, *, now: float | None = None) -> Context:
        self._flush()
        return super().build_context(query, now=now)

    def store_size(self) -> int:
        """Sessions indexed (and sessions waiting to be)."""
        return len(set(self._sessions))


class SessionPriorStrategy(RetrievalStrategy):
    """Turns ranked with their session's score as a prior: sessions find, turns pinpoint.

    Two indexes over the same observed turns: the strategy's ``retriever`` over turns (the
    units returned) and ``SessionStrategy``'s session records searched by
    ``session_retriever``. For a query, the ``candidates`` best turns T and every session S
    are scored; with min-max normalisation over each list (all 1.0 when a list's scores are
    equal; a turn whose session was not scored gets 0),

        score(t) = (1 - session_weight) * minmax_T(turn score of t)
                   + session_weight * minmax_S(score of t's session)

    and the turns are returned by that score (ties: turn rank). A hit stays one turn, so
    its tokens and source ids are the turn's. ``hit.components`` keeps ``turn`` and
    ``session`` scores.
    """

    constraints = {**RetrievalStrategy.constraints, "session_weight": Param(float, ge=0, le=1),
                   "date": Param(bool)}

    def __init__(self, retriever: Any = None, session_retriever: Any = None, session_weight: float = 0.5,
                 date: bool = True, candidates: int = 100, history_window: int = 4, keep_rate: float = 0.9,
                 context_k: int = 5, token_limit: int = 2048, token_counter: Any = None,
                 system_prompt: str | None = None):
        self.session_retriever = session_retriever
        self.session_weight = session_weight
        self.date = date
        super().__init__(retriever=retriever, candidates=candidates, history_window=history_window,
                         keep_rate=keep_rate, context_k=context_k, token_limit=token_limit,
                         token_counter=token_counter, system_prompt=system_prompt)

    def _build(self) -> None:
        super()._build()
        self._exact = False  # the turn list is re-ranked: always ask for ``candidates``
        self._units = SessionStrategy(retriever=self.session_retriever, date=self.date, history_window=0)

    def observe(self, record: MemoryRecord) -> None:
        super().observe(record)
        self._units.observe(record)

    def _ranked(self, query: str, n: int, where: Where | None, now: float | None) -> list[Hit]:
        key = (query, now, self._version, n)
        if self._memo is not None and self._memo[0] == key:
            return self._memo[2]
        turns = self._chain.search(query, max(n, self.candidates), where=where, now=now)
        sessions = self._units.retrieve(query, max(len(self._units._sessions), 1), now=now)
        session_score = {h.memory_record.metadata["session_id"]: h.score for h in sessions}
        t_norm, s_norm = _minmax([h.score for h in turns]), _minmax(list(session_score.values()))
        s_of = dict(zip(session_score, s_norm))
        w = float(self.session_weight)
        rescored = []
        for rank, (hit, tn) in enumerate(zip(turns, t_norm)):
            sid = str(hit.memory_record.metadata.get("session_id", ""))
            sn = s_of.get(sid, 0.0)
            hit.components = {**hit.components, "turn": {"score": hit.score, "rank": rank + 1},
                              "session": {"score": session_score.get(sid, 0.0), "rank": 0}}
            hit.score = (1 - w) * tn + w * sn
            rescored.append((-hit.score, rank, hit))
        hits = [h for _, _, h in sorted(rescored, key=lambda x: (x[0], x[1]))][:n]
        self._memo = (key, n, hits)
        return hits


def _minmax(values: list[float]) -> list[float]:
    if not values:
        return []
    lo, hi = min(values), max(values)
    return [1.0] * len(values) if hi == lo else [(v - lo) / (hi - lo) for v in values]


__all__ = ["SESSION_PREFIX", "SessionPriorStrategy", "SessionStrategy"]
