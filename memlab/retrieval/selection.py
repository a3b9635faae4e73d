"""Post-retrieval selection: diversify (MMR), threshold, merge near-duplicates.

Every selector implements ``select(query, hits, k) -> hits``: at most ``k`` hits, ranks
renumbered 1..n, scores non-increasing, each hit's ``components`` kept and extended
with the selector's own entry.
"""

from __future__ import annotations

import dataclasses
from abc import abstractmethod
from collections.abc import Sequence

import numpy as np

from ..base import Component, ConfigError, Param
from ..embeddings.base import Embedder
from ..embeddings.hashing import HashingEmbedder
from ..records import Hit, MemoryRecord

KEEP_MODES = ("newest", "first")


class Selector(Component):
    """Reorders or filters a ranked hit list."""

    name: str = "selector"

    @abstractmethod
    def select(self, query: str, hits: list[Hit], k: int) -> list[Hit]: ...

    async def aselect(self, query: str, hits: list[Hit], k: int) -> list[Hit]:
        """``select`` for async callers; selectors that do I/O (an LLM) override it."""
        return self.select(query, hits, k)


def rerank(hits: Sequence[Hit], scores: Sequence[float] | None, name: str) -> list[Hit]:
    """Copies of ``hits`` in the given order, ranks 1..n, ``components[name]`` added.

    ``scores`` replace the hits' scores when given (they must already be non-increasing).
    """
    out = []
    for n, h in enumerate(hits):
        score = float(scores[n]) if scores is not None else h.score
        comps = dict(h.components)
        comps[name] = {"score": score, "rank": n + 1}
        out.append(dataclasses.replace(h, score=score, rank=n + 1, components=comps))
    return out


def _check_k(k: object) -> int:
    if isinstance(k, bool) or not isinstance(k, int) or k < 0:
        raise ConfigError(f"k must be a non-negative int, got {k!r}")
    return k


def mmr(query_vec: np.ndarray | None, candidate_vecs: np.ndarray, scores: Sequence[float] | None,
        k: int, lambda_: float = 0.5) -> list[tuple[int, float]]:
    """Maximal marginal relevance (Carbonell & Goldstein 1998): (index, MMR value) pairs.

    Greedily picks ``argmax_i [lambda_ * rel_i - (1 - lambda_) * max_{j in S} cos(i, j)]``
    over the candidates not yet selected (S is the selected set), ``k`` times. The max is
    the true maximum cosine, negative ones included (a candidate pointing away from
    everything selected gains); only for the first pick, S empty, the redundancy term is
    0. ``rel_i = scores[i]`` when ``scores`` is given, else the cosine of candidate i with
    ``query_vec``. Ties go to the lower index. Vectors are taken to be unit length
    (``Embedder.embed`` returns such). For ``lambda_`` in [0, 1] the values are
    non-increasing from the second pick on (S only grows, so each max only grows); the
    second value can exceed the first when its max cosine with the first pick is negative.
    """
    if not 0 <= lambda_ <= 1:
        raise ConfigError(f"lambda_ must be in [0, 1], got {lambda_}")
    _check_k(k)
    vecs = np.asarray(candidate_vecs, dtype=np.float64)
    n = len(vecs)
    if scores is not None:
        rel = np.asarray(scores, dtype=np.float64)
        if rel.shape != (n,):
            raise ConfigError(f"scores must have one entry per candidate ({n}), got {rel.shape}")
    elif query_vec is None:
        raise ConfigError("mmr needs query_vec or scores")
    else:
        rel = vecs @ np.asarray(query_vec, dtype=np.float64).reshape(-1) if n else np.zeros(0)
    sim = vecs @ vecs.T if n else np.zeros((0, 0))
    # -inf = "S is empty"; replaced by the true max cosine once S has a member
    max_sim = np.full(n, -np.inf)
    chosen = np.zeros(n, dtype=bool)
    picks: list[tuple[int, float]] = []
    for step in range(min(k, n)):
        value = lambda_ * rel - (1 - lambda_) * (max_sim if step else 0.0)
        value = np.where(chosen, -np.inf, value)
        i = int(np.argmax(value))  # argmax returns the first maximum: lower index wins ties
        picks.append((i, float(value[i])))
        chosen[i] = True
        max_sim = np.maximum(max_sim, sim[i])
    return picks


class MMRSelector(Selector):
    """Diversifies hits with ``mmr``: relevance = cosine(query, hit), both embedded.

    Hits come in MMR pick order. The hit's score becomes ``min(v_1, ..., v_n)`` over the
    MMR values of the picks so far (only the second value can exceed the first, see
    ``mmr``), so scores stay non-increasing as every selector's do;
    ``components["mmr"]`` records that score (the retriever's own entries stay).
    """

    name = "mmr"

    constraints = {
        "lambda_": Param(float, ge=0, le=1),
    }

    def __init__(self, embedder: Embedder | None = None, lambda_: float = 0.5):
        self.embedder = embedder
        self.lambda_ = lambda_
        self._on_params_changed()

    def _on_params_changed(self) -> None:
        self._embedder = self._resolve("embedder", lambda: HashingEmbedder())

    def select(self, query: str, hits: list[Hit], k: int) -> list[Hit]:
        _check_k(k)
        if not hits or k == 0:
            return []
        vecs = self._embedder.embed([query] + [h.record.content for h in hits])
        picks = mmr(vecs[0], vecs[1:], None, k, self.lambda_)
        scores = np.minimum.accumulate([v for _, v in picks]).tolist()
        return rerank([hits[i] for i, _ in picks], scores, self.name)


class ScoreThreshold(Selector):
    """Keeps hits with ``score >= min_score`` (then the first ``k``)."""

    name = "threshold"

    def __init__(self, min_score: float = 0.0):
        self.min_score = min_score

    def select(self, query: str, hits: list[Hit], k: int) -> list[Hit]:
        _check_k(k)
        return rerank([h for h in hits if h.score >= self.min_score][:k], None, self.name)


def near_duplicate_groups(vectors: np.ndarray, threshold: float) -> list[list[int]]:
    """Greedy grouping in input order: each item joins the first group whose first member
    has cosine > ``threshold`` with it, else starts a new group. Groups in first-member order."""
    vecs = np.asarray(vectors, dtype=np.float64)
    heads: list[int] = []
    groups: list[list[int]] = []
    for i in range(len(vecs)):
        if heads:
            sims = vecs[heads] @ vecs[i]
            above = np.flatnonzero(sims > threshold)
            if above.size:
                groups[int(above[0])].append(i)
                continue
        heads.append(i)
        groups.append([i])
    return groups


def _survivor(group: list[int], records: Sequence[MemoryRecord], keep: str) -> int:
    if keep == "first":
        return group[0]
    # newest timestamp; among equal timestamps the earliest in the input
    return max(group, key=lambda i: (records[i].timestamp, -i))


def _with_merged(record: MemoryRecord, absorbed: list[MemoryRecord]) -> MemoryRecord:
    merged = [str(i) for i in record.metadata.get("merged_ids", [])]
    for other in absorbed:
        for i in [other.id] + [str(x) for x in other.metadata.get("merged_ids", [])]:
            if i not in merged and i != record.id:
                merged.append(i)
    return dataclasses.replace(record, metadata={**record.metadata, "merged_ids": merged})


def merge_near_duplicates(records: Sequence[MemoryRecord], embedder: Embedder,
                          threshold: float = 0.95, keep: str = "newest") -> list[MemoryRecord]:
    """One record per group of near-duplicates (cosine of contents > ``threshold``).

    Groups are formed by ``near_duplicate_groups`` in input order. Each group keeps its
    newest record (``keep="newest"``, ties: earliest in the input) or its first
    (``keep="first"``); the survivor is returned as a copy whose ``metadata["merged_ids"]``
    lists the other members' ids (and the ids they had merged), in input order. Records
    without a duplicate are returned unchanged. The input records are never modified;
    output follows the order of each group's first member.
    """
    if keep not in KEEP_MODES:
        raise ConfigError(f"keep must be one of {', '.join(KEEP_MODES)}, got {keep!r}")
    records = list(records)
    if not records:
        return []
    groups = near_duplicate_groups(embedder.embed([r.content for r in records]), threshold)
    out = []
    for group in groups:
        s = _survivor(group, records, keep)
        if len(group) == 1:
            out.append(records[s])
        else:
            out.append(_with_merged(records[s], [records[i] for i in group if i != s]))
    return out


class NearDuplicateMerger(Selector):
    """Merges near-duplicate hits (see ``merge_near_duplicates``).

    A group stands at the position of its best-ranked member and carries that member's
    score, so the list stays sorted; the record shown is the group's survivor
    (``keep``), with ``metadata["merged_ids"]`` on a copy. ``merge(records)`` applies
    the same rule when writing.
    """

    name = "dedup"

    constraints = {
        "threshold": Param(float, ge=-1, le=1),
        "keep": Param(choices=KEEP_MODES),
    }

    def __init__(self, embedder: Embedder | None = None, threshold: float = 0.95, keep: str = "newest"):
        self.embedder = embedder
        self.threshold = threshold
        self.keep = keep
        self._on_params_changed()

    def _on_params_changed(self) -> None:
        self._embedder = self._resolve("embedder", lambda: HashingEmbedder())

    def merge(self, records: Sequence[MemoryRecord]) -> list[MemoryRecord]:
        return merge_near_duplicates(records, self._embedder, self.threshold, self.keep)

    def select(self, query: str, hits: list[Hit], k: int) -> list[Hit]:
        _check_k(k)
        if not hits or k == 0:
            return []
        records = [h.record for h in hits]
        groups = near_duplicate_groups(self._embedder.embed([r.content for r in records]), self.threshold)
        out = []
        for group in groups[:k]:
            s = _survivor(group, records, self.keep)
            best = hits[group[0]]
            record = records[s] if len(group) == 1 else _with_merged(
                records[s], [records[i] for i in group if i != s])
            out.append(dataclasses.replace(best, memory_record=record, timestamp=record.timestamp,
                                           components=dict(best.components)))
        return rerank(out, None, self.name)
