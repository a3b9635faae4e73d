"""Session-plus-turn fusion: a session's score lifts its turns; neighbour windows spread a
hit's score to the turns beside it.

Both wrappers group the records they hold by ``metadata["session_id"]`` (records without
one form one session), in insertion order, so they compose with any turn retriever
(contextual BM25, a hybrid with dense retrievers) and return turns, never sessions.
"""

from __future__ import annotations

from ..base import Param
from ..filters import Where, filter_view, matches
from ..records import Hit, MemoryRecord, Role
from .base import Retriever, WrapperRetriever
from .contextual import format_date

#: Prefix of the session records a ``SessionFusionRetriever`` indexes.
SESSION_PREFIX = "session:"


def _minmax(values: list[float]) -> list[float]:
    if not values:
        return []
    lo, hi = min(values), max(values)
    return [1.0] * len(values) if hi == lo else [(v - lo) / (hi - lo) for v in values]


class _Sessions:
    """Record ids per session key, in insertion order."""

    def __init__(self) -> None:
        self.members: dict[str, list[str]] = {}
        self.of: dict[str, str] = {}

    @staticmethod
    def key(record: MemoryRecord) -> str:
        return str(record.metadata.get("session_id", ""))

    def add(self, record: MemoryRecord) -> str:
        key = self.key(record)
        self.members.setdefault(key, []).append(record.id)
        self.of[record.id] = key
        return key

    def remove(self, id: str) -> str:
        key = self.of.pop(id)
        self.members[key].remove(id)
        if not self.members[key]:
            del self.members[key]
        return key

    def clear(self) -> None:
        self.members.clear()
        self.of.clear()


class SessionFusionRetriever(WrapperRetriever):
    """Turns ranked by their own score plus their session's: sessions find, turns pinpoint.

    A second index, ``session_retriever`` (default: BM25 with ``bm25_plus``'s stemmed,
    stop-worded tokenizer), holds one record per session: ``Session of <date>`` (``date``)
    then the session's records' contents, one per line, rebuilt before a search when the
    session changed. For a query, T = the wrapped retriever's ``candidates`` best turns plus
    (``pull``) every turn of the ``pull`` best sessions not already in T, and S = every
    session the session index scores. With min-max normalisation over each list (all 1.0
    when a list's scores are equal; a pulled turn and a turn whose session was not scored
    get 0 on that side),

        score(t) = (1 - weight) * minmax_T(turn score of t) + weight * minmax_S(score of t's session)

    and the turns are returned by it (ties: the wrapped rank, then insertion order). This is
    ``SessionPriorStrategy``'s formula as a composable retriever, plus ``pull``.
    ``hit.components["session"]`` holds the session's raw score. Cost per query: one
    search of the session index (one record per session) and O(|T|) arithmetic.
    """

    name = "session_fusion"

    constraints = {
        "session_retriever": Param(Retriever, none=True),
        "weight": Param(float, ge=0, le=1),
        "candidates": Param(int, ge=1),
        "pull": Param(int, ge=0),
        "date": Param(bool),
    }

    def __init__(self, retriever: Retriever, session_retriever: Retriever | None = None, weight: float = 0.5,
                 candidates: int = 100, pull: int = 0, date: bool = True):
        self._sessions = _Sessions()
        self._dirty: set[str] = set()
        super().__init__(retriever, session_retriever=session_retriever, weight=weight, candidates=candidates,
                         pull=pull, date=date)

    def _on_params_changed(self) -> None:
        from .bm25 import BM25Retriever
        from .tokenize import Tokenizer

        self._units = self._resolve("session_retriever", lambda: BM25Retriever(
            tokenizer=Tokenizer(stopwords="english", stemmer="porter", chinese="char+bigram")))
        self._units.reset()
        self._sessions.clear()
        self._adopted(self.records())
        self._sync([self.retriever])  # records taken over from the wrapped retriever are _adopted

    def _adopted(self, records: list[MemoryRecord]) -> None:
        for r in records:
            self._dirty.add(self._sessions.add(r))

    def _remove(self, ids: list[str]) -> None:
        super()._remove(ids)
        for i in ids:
            self._dirty.add(self._sessions.remove(i))

    def _clear(self) -> None:
        super()._clear()
        self._units.reset()
        self._sessions.clear()
        self._dirty = set()

    def session_text(self, key: str) -> str:
        """The text the session ``key`` is indexed under."""
        ids = self._sessions.members[key]
        lines = [f"Session of {format_date(self._records[ids[0]].timestamp)}"] if self.date else []
        return "\n".join(lines + [self._records[i].content for i in ids])

    def _flush(self) -> None:
        if not self._dirty:
            return
        self._units.remove([SESSION_PREFIX + k for k in self._dirty])
        fresh = []
        for key in sorted(self._dirty, key=lambda k: min((self._position[i] for i in self._sessions.members.get(k, [])),
                                                         default=0)):
            if key in self._sessions.members:
                first = self._records[self._sessions.members[key][0]]
                fresh.append(MemoryRecord(role=Role.USER, content=self.session_text(key), id=SESSION_PREFIX + key,
                                          timestamp=first.timestamp, metadata={"session_id": key}))
        if fresh:
            self._units.add(fresh)
        self._dirty = set()

    def _search(self, query: str, k: int, *, where: Where | None, now: float | None) -> list[Hit]:
        self._flush()
        turns = self.retriever.search(query, max(k, self.candidates), where=where, now=now)
        n_sessions = len(self._sessions.members)
        sessions = self._units.search(query, n_sessions, now=now) if n_sessions else []
        s_raw = {h.id[len(SESSION_PREFIX):]: h.score for h in sessions}
        s_norm = dict(zip(s_raw, _minmax(list(s_raw.values()))))
        t_norm = _minmax([h.score for h in turns])
        rows = [(h.id, tn, h.components) for h, tn in zip(turns, t_norm)]
        if self.pull:
            seen = {h.id for h in turns}
            for h in sessions[:self.pull]:
                for i in self._sessions.members.get(h.id[len(SESSION_PREFIX):], []):
                    if i not in seen and (where is None or matches(filter_view(self._records[i]), where)):
                        seen.add(i)
                        rows.append((i, 0.0, {}))
        w = float(self.weight)
        scored = []
        for rank, (i, tn, comps) in enumerate(rows):
            key = self._sessions.of[i]
            scored.append(((1 - w) * tn + w * s_norm.get(key, 0.0), rank, i, comps, s_raw.get(key, 0.0)))
        scored.sort(key=lambda x: (-x[0], x[1]))
        scored = scored[:k]
        return self._hits([(i, s) for s, _, i, _, _ in scored], [c for *_, c, _ in scored],
                          [{"session": ss} for *_, ss in scored])


class NeighbourWindowRetriever(WrapperRetriever):
    """Adjacent-turn windows at search time: a hit's score spreads to the turns beside it.

    For short-turn chats, where the answer is in the turn after the one the question's
    words match. Of the wrapped retriever's ``candidates`` best hits H (scores s), the
    ``expand`` best spread to the records within ``radius`` places of them in their session
    (insertion order):

        score(r) = max(s(r) if r in H else 0, max over h in the first ``expand`` of H with
                       0 < |pos(h) - pos(r)| <= radius of decay ** |pos(h) - pos(r)| * s(h))

    and the records are returned by that score (ties: the record reached first, the wrapped
    rank). ``decay`` 0 returns the wrapped ranking. Records reached only through a
    neighbour must satisfy ``where``. ``hit.components["window"]["from_neighbour"]`` is 1
    for them. Cost per query: O(expand * radius) lookups.
    """

    name = "window"

    constraints = {
        "radius": Param(int, ge=0),
        "decay": Param(float, ge=0, le=1),
        "expand": Param(int, ge=0),
        "candidates": Param(int, ge=1),
    }

    def __init__(self, retriever: Retriever, radius: int = 1, decay: float = 0.5, expand: int = 10,
                 candidates: int = 50):
        self._sessions = _Sessions()
        super().__init__(retriever, radius=radius, decay=decay, expand=expand, candidates=candidates)

    def _on_params_changed(self) -> None:
        self._sessions.clear()
        self._adopted(self.records())
        self._sync([self.retriever])  # records taken over from the wrapped retriever are _adopted

    def _adopted(self, records: list[MemoryRecord]) -> None:
        for r in records:
            self._sessions.add(r)

    def _remove(self, ids: list[str]) -> None:
        super()._remove(ids)
        for i in ids:
            self._sessions.remove(i)

    def _clear(self) -> None:
        super()._clear()
        self._sessions.clear()

    def _search(self, query: str, k: int, *, where: Where | None, now: float | None) -> list[Hit]:
        inner = self.retriever.search(query, max(k, self.candidates), where=where, now=now)
        best: dict[str, list] = {}  # id -> [score, order, components, from_neighbour]
        order = 0
        for h in inner:
            best[h.id] = [h.score, order, h.components, 0.0]
            order += 1
        if self.decay > 0 and self.radius > 0:
            for h in inner[:self.expand]:
                members = self._sessions.members[self._sessions.of[h.id]]
                at = members.index(h.id)
                for d in range(1, self.radius + 1):
                    spread = h.score * self.decay ** d
                    for j in (at - d, at + d):
                        if not 0 <= j < len(members):
                            continue
                        i = members[j]
                        cur = best.get(i)
                        if cur is None:
                            if where is not None and not matches(filter_view(self._records[i]), where):
                                continue
                            best[i] = [spread, order, {}, 1.0]
                            order += 1
                        elif spread > cur[0]:
                            cur[0] = spread
        ranked = sorted(best.items(), key=lambda p: (-p[1][0], p[1][1]))[:k]
        return self._hits([(i, v[0]) for i, v in ranked], [v[2] for _, v in ranked],
                          [{"from_neighbour": v[3]} for _, v in ranked])


class SessionDiversityRetriever(WrapperRetriever):
    """Spreads the first places over sessions: each further turn of a session already ranked
    counts a little less.

    For questions whose evidence lies in several sessions (LongMemEval's multi-session
    questions, scored by ``lme_recall_all@k`` over the first k distinct sessions). Of the
    wrapped retriever's ``candidates`` hits in rank order, with j(t) the number of turns of
    t's session ranked above t and s(t) its score,

        score(t) = s(t) * (1 - penalty) ** j(t)

    and the hits are re-ranked by it (ties: the wrapped rank). ``penalty`` 0 keeps the
    ranking; 1 puts every session's best turn first. A negative score is left as it is
    (only the order among a session's turns is kept then). ``hit.components["diversity"]``
    holds j. Cost per query: O(candidates).
    """

    name = "diversity"

    constraints = {"penalty": Param(float, ge=0, le=1), "candidates": Param(int, ge=1)}

    def __init__(self, retriever: Retriever, penalty: float = 0.3, candidates: int = 100):
        super().__init__(retriever, penalty=penalty, candidates=candidates)

    def _on_params_changed(self) -> None:
        self._sync([self.retriever])

    def _search(self, query: str, k: int, *, where: Where | None, now: float | None) -> list[Hit]:
        inner = self.retriever.search(query, max(k, self.candidates), where=where, now=now)
        seen: dict[str, int] = {}
        scored = []
        keep = 1.0 - float(self.penalty)
        for rank, h in enumerate(inner):
            key = _Sessions.key(self._records[h.id])
            j = seen.get(key, 0)
            seen[key] = j + 1
            score = h.score * keep ** j if h.score > 0 else h.score
            scored.append((score, rank, h, j))
        scored.sort(key=lambda x: (-x[0], x[1]))
        scored = scored[:k]
        return self._hits([(h.id, s) for s, _, h, _ in scored], [h.components for _, _, h, _ in scored],
                          [{"same_session_above": float(j)} for *_, j in scored])
