"""Time-aware retrieval: re-score any retriever's hits by a forgetting curve, reinforce, forget."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator
from contextlib import contextmanager

from ..base import Param
from ..capabilities import Capabilities
from ..decay import Clock, DecayModel, Ebbinghaus
from ..records import Hit, MemoryRecord
from .base import Retriever, WrapperRetriever
from ..filters import Where
from .fusion import normalize_scores

COMBINE_MODES = ("multiply", "add", "weighted", "prior")
REINFORCE_MODES = ("returned", "none")


def scale_to_best(scores: list[float]) -> list[float]:
    """``(s - lo) / (hi - lo)`` with hi = max, lo = min(0, min); all 1.0 when hi == lo."""
    hi, lo = max(scores), min(0.0, min(scores))
    if hi == lo:
        return [1.0] * len(scores)
    return [(s - lo) / (hi - lo) for s in scores]


class DecayRetriever(WrapperRetriever):
    """Wraps ``retriever`` and weighs its relevance scores by memory retention.

    Per record: ``strength`` (``decay.initial()`` at add), ``last_recall`` (the record's
    timestamp at add) and ``access_count``. At search time, ``now`` is the explicit
    ``now``, else ``clock.now()`` if a clock is given, else the newest record timestamp
    seen (dialogue time). With retention ``w = decay.weight(now, last_recall, strength)``
    and relevance ``r`` (the wrapped retriever's score), the final score is:

    - ``combine="multiply"``: ``r * w``;
    - ``combine="add"``: ``r + w`` (LangChain's time-weighted score with ``TimeWeighting``);
    - ``combine="weighted"``: ``(1 - weight) * minmax(r) + weight * w``, min-max over the
      candidate list (a constant list gives 1.0). ``weight`` is used by this mode only.

    - ``combine="prior"``: ``scaled(r) + weight * R``, a bounded recency prior, with
      ``scaled(r) = (r - lo) / (hi - lo)``, ``hi`` = the best relevance among the candidates,
      ``lo = min(0, lowest relevance)`` (so non-negative scores are divided by the best one
      and near-equal hits stay near-equal; 1.0 when hi == lo), and ``R =
      decay.retention(t, strength)`` with ``t = max(0, now - last_recall) / span``, where
      ``span = now - (timestamp of the oldest record held)`` (t in [0, 1]: time is measured
      relative to the dialogue's length, not in ``decay.time_unit``, so a dialogue of months
      and one of hours get the same prior; span 0 gives t = 0). Two hits' priors differ by
      at most ``weight``, so recency only reorders hits whose scaled relevance differs by
      less than that (an update beats the statement it replaces; old evidence that matches
      clearly better still wins).

    "multiply" and "add" assume relevance >= 0. A negative relevance (a negative cosine;
    okapi BM25 on a tiny corpus whose average idf is negative) times a smaller retention
    moves towards 0, so the older memory would rank higher: use "weighted" there.

    The wrapped retriever is asked for ``max(k, candidates)`` hits. With
    ``reinforce="returned"`` every returned record is reinforced: strength =
    ``decay.reinforce(strength)``, last_recall = now, access_count + 1; with "none",
    callers use ``reinforce_ids(ids, now)`` for what they really used (the method is not
    called ``reinforce``: that name is the constructor parameter). With ``gc=True``
    every search first runs ``collect_garbage(now)``, which deletes forgotten records
    from the wrapped retriever (every child of a hybrid). ``hit.components["decay"]``
    adds ``retention`` and ``relevance`` to score and rank. Inside ``quiet()`` a search
    only looks: no garbage collection (nor its random draws) and no reinforcement.
    """

    name = "decay"

    constraints = {
        "retriever": Param(Retriever),
        "decay": Param(DecayModel, none=True),
        "combine": Param(choices=COMBINE_MODES),
        "weight": Param(float, ge=0, le=1),
        "reinforce": Param(choices=REINFORCE_MODES),
        "clock": Param(Clock, none=True),
        "gc": Param(bool),
        "candidates": Param(int, ge=1),
    }

    def __init__(self, retriever: Retriever, decay: DecayModel | None = None,
                 combine: str = "multiply", weight: float = 0.5, reinforce: str = "returned",
                 clock: Clock | None = None, gc: bool = True, candidates: int = 50):
        super().__init__()
        self.retriever = retriever
        self.decay = decay
        self.combine = combine
        self.weight = weight
        self.reinforce = reinforce
        self.clock = clock
        self.gc = gc
        self.candidates = candidates
        self._state: dict[str, list[float]] = {}
        self._oldest_cache: float | None = None
        self._on_params_changed()

    def capabilities(self) -> Capabilities:
        """A search changes state when it reinforces what it returns (``reinforce != "none"``)."""
        found = super().capabilities()
        return dataclasses.replace(found, search_changes_state=found.search_changes_state or self.reinforce != "none")

    def _on_params_changed(self) -> None:
        self._decay = self._resolve("decay", lambda: Ebbinghaus())
        self._sync([self.retriever])

    @contextmanager
    def quiet(self) -> Iterator[None]:
        """Searches inside it change nothing: no garbage collection, no reinforcement, whatever
        ``gc`` and ``reinforce`` say (``Strategy.peek``: a deeper look at a ranking already
        asked for, whose first search did both). Nests."""
        depth = self.__dict__.get("_quiet_depth", 0)
        self.__dict__["_quiet_depth"] = depth + 1
        try:
            yield
        finally:
            self.__dict__["_quiet_depth"] = depth

    # -- state ------------------------------------------------------------------------
    def _add(self, records: list[MemoryRecord]) -> None:
        self.retriever.add(records)
        self._adopted(records)

    def _adopted(self, records: list[MemoryRecord]) -> None:
        for r in records:
            self._state[r.id] = [self._decay.initial(), r.timestamp, 0]
        if self._oldest_cache is not None and records:  # an add can only lower the minimum
            self._oldest_cache = min(self._oldest_cache, min(r.timestamp for r in records))

    def _oldest(self) -> float:
        """The smallest timestamp among the records held (for ``combine="prior"``)."""
        if self._oldest_cache is None:
            self._oldest_cache = min(r.timestamp for r in self._records.values())
        return self._oldest_cache

    def _remove(self, ids: list[str]) -> None:
        self.retriever.remove(ids)
        for i in ids:
            self._state.pop(i, None)
        self._oldest_cache = None

    def _clear(self) -> None:
        self.retriever.reset()
        self._decay.reset()
        self._state = {}
        self._oldest_cache = None

    def memory_state(self, id: str) -> dict[str, float]:
        """``{"strength", "last_recall", "access_count"}`` of a record."""
        if id not in self._state:
            raise KeyError(f"DecayRetriever has no record with id {id!r}")
        strength, last, count = self._state[id]
        return {"strength": strength, "last_recall": last, "access_count": int(count)}

    def resolve_now(self, now: float | None = None) -> float:
        """The explicit ``now``, else the clock's, else the newest record timestamp (0 if none)."""
        if now is not None:
            return float(now)
        if self.clock is not None:
            return float(self.clock.now())
        return self.newest_timestamp if self.newest_timestamp is not None else 0.0

    def retention(self, id: str, now: float | None = None) -> float:
        """The record's current retention weight."""
        strength, last, _ = self._state[id]
        return self._decay.weight(self.resolve_now(now), last, strength)

    def reinforce_ids(self, ids: Iterable[str], now: float | None = None) -> None:
        """Recall ``ids``: strength grows, last_recall = now (never moves back), count + 1."""
        t = self.resolve_now(now)
        for i in ids:
            state = self._state.get(i)
            if state is None:
                continue
            state[0], state[1] = self._decay.recalled(state[0], state[1], t)
            state[2] += 1

    def collect_garbage(self, now: float | None = None) -> list[str]:
        """Delete every record the decay model forgets at ``now``; returns their ids.

        Records are examined in insertion order (so a stochastic model draws in a fixed
        order) and removed from this retriever and the wrapped one.
        """
        t = self.resolve_now(now)
        state = self._state
        doomed = self._decay.forgotten(t, ((i, state[i][1], state[i][0]) for i in self._records))
        self.remove(doomed)
        return doomed

    # -- search -----------------------------------------------------------------------
    def search(self, query: str, k: int = 5, *, where: Where | None = None,
               now: float | None = None) -> list[Hit]:
        k = self._check_search(k, where)
        if k == 0 or not self._records:
            return []
        t = self.resolve_now(now)
        quiet = self.__dict__.get("_quiet_depth", 0) > 0
        if self.gc and not quiet:
            self.collect_garbage(t)
        inner = self.retriever.search(query, max(k, self.candidates), where=where, now=t)
        inner = [h for h in inner if h.id in self._state]
        if not inner:
            return []
        relevance = [h.score for h in inner]
        if self.combine == "prior":
            span = t - self._oldest()
            retention = [self._decay.retention(max(0.0, t - self._state[h.id][1]) / span if span > 0 else 0.0,
                                              self._state[h.id][0]) for h in inner]
        else:
            retention = [self._decay.weight(t, self._state[h.id][1], self._state[h.id][0]) for h in inner]
        if self.combine == "prior":
            final = [r + self.weight * w for r, w in zip(scale_to_best(relevance), retention)]
        elif self.combine == "multiply":
            final = [r * w for r, w in zip(relevance, retention)]
        elif self.combine == "add":
            final = [r + w for r, w in zip(relevance, retention)]
        else:
            normed = normalize_scores(relevance, "minmax")
            final = [(1 - self.weight) * r + self.weight * w for r, w in zip(normed, retention)]
        info = {h.id: (h, r, w) for h, r, w in zip(inner, relevance, retention)}
        ranked = self._order([(h.id, f) for h, f in zip(inner, final)])[:k]
        hits = self._hits(ranked, [info[i][0].components for i, _ in ranked],
                          [{"retention": info[i][2], "relevance": info[i][1]} for i, _ in ranked])
        if self.reinforce == "returned" and not quiet:
            self.reinforce_ids([h.id for h in hits], t)
        return hits
