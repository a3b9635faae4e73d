"""Rank fusion: combine several ranked lists of (id, score) into one.

Pure functions (``rrf``, ``weighted_sum``) and Component wrappers (``RRF``,
``WeightedSum``) with ``fuse(lists, weights=None)``. Every input list is taken to be
ordered best first; within a list only the first occurrence of an id counts. Output is
sorted by fused score, descending; ties keep the order in which ids first appear when
reading list 0 top to bottom, then list 1, and so on (deterministic). A retriever that
wants ties by insertion order re-sorts stably (``HybridRetriever`` does).
"""

from __future__ import annotations

import math
from abc import abstractmethod
from collections.abc import Sequence

from ..base import Component, ConfigError, Param

Ranked = Sequence[tuple[str, float]]
NORMALIZATIONS = ("minmax", "zscore", "none")


def check_weights(weights: Sequence[float] | None, n: int, what: str = "lists") -> list[float]:
    """``weights`` as floats, one per list (all 1.0 when None); a clear error otherwise."""
    if weights is None:
        return [1.0] * n
    weights = list(weights)
    if len(weights) != n:
        raise ConfigError(f"weights has {len(weights)} entries but there are {n} {what}")
    out = []
    for w in weights:
        if isinstance(w, bool) or not isinstance(w, (int, float)) or not math.isfinite(w):
            raise ConfigError(f"weights must be finite numbers, got {w!r}")
        out.append(float(w))
    return out


def _first_occurrences(ranked: Ranked) -> list[tuple[str, float]]:
    seen: set[str] = set()
    out = []
    for i, s in ranked:
        if i not in seen:
            seen.add(i)
            out.append((i, float(s)))
    return out


def _sorted(totals: dict[str, float]) -> list[tuple[str, float]]:
    # dicts keep first-appearance order; a stable sort on -score keeps it among ties
    return sorted(totals.items(), key=lambda p: -p[1])


def rrf(ranked_lists: Sequence[Ranked], weights: Sequence[float] | None = None,
        k: float = 60) -> list[tuple[str, float]]:
    """Reciprocal rank fusion: score(d) = sum_i w_i / (k + rank_i(d)).

    rank_i(d) is d's 1-based position in list i; a list without d adds 0. Input scores
    are ignored. Weights default to 1.0 each.
    """
    if isinstance(k, bool) or not isinstance(k, (int, float)) or k < 0:
        raise ConfigError(f"k must be a non-negative number, got {k!r}")
    w = check_weights(weights, len(ranked_lists))
    totals: dict[str, float] = {}
    for wi, ranked in zip(w, ranked_lists):
        for rank, (i, _) in enumerate(_first_occurrences(ranked), start=1):
            totals[i] = totals.get(i, 0.0) + wi / (k + rank)
    return _sorted(totals)


def normalize_scores(scores: Sequence[float], normalization: str = "minmax") -> list[float]:
    """One list's scores rescaled.

    "minmax": (s - min) / (max - min); a constant list (one item included) gives 1.0 for
    every item, since each is as good as the best. "zscore": (s - mean) / std with the
    population std; std 0 gives 0.0 for every item. "none": unchanged.
    """
    if normalization not in NORMALIZATIONS:
        raise ConfigError(f"normalization must be one of {', '.join(NORMALIZATIONS)}, "
                          f"got {normalization!r}")
    values = [float(s) for s in scores]
    if not values or normalization == "none":
        return values
    if normalization == "minmax":
        lo, hi = min(values), max(values)
        if hi == lo:
            return [1.0] * len(values)
        return [(v - lo) / (hi - lo) for v in values]
    mean = math.fsum(values) / len(values)
    std = math.sqrt(math.fsum((v - mean) ** 2 for v in values) / len(values))
    if std == 0:
        return [0.0] * len(values)
    return [(v - mean) / std for v in values]


MISSING = ("zero", "min")


def weighted_sum(ranked_lists: Sequence[Ranked], weights: Sequence[float] | None = None,
                 normalization: str = "minmax", missing: str = "zero") -> list[tuple[str, float]]:
    """Convex fusion: score(d) = sum_i w_i * norm_i(s_i(d)), over every d in any list.

    ``norm_i`` is ``normalize_scores`` over list i (see there for constant lists). A list
    without d adds ``w_i * m_i``: m_i = 0 with ``missing="zero"``; with ``missing="min"``,
    m_i = the lowest normalised score of list i (d ranked below its cut-off is taken to be
    no better than its last item; for z-scores, 0 would rank an unseen d as average). An
    empty list adds 0.
    """
    if missing not in MISSING:
        raise ConfigError(f"missing must be one of {', '.join(MISSING)}, got {missing!r}")
    w = check_weights(weights, len(ranked_lists))
    per_list = []
    for ranked in ranked_lists:
        items = _first_occurrences(ranked)
        per_list.append((items, normalize_scores([s for _, s in items], normalization)))
    totals: dict[str, float] = {}
    for items, _ in per_list:  # first-appearance order, for ties
        for i, _ in items:
            totals.setdefault(i, 0.0)
    for wi, (items, normed) in zip(w, per_list):
        floor = min(normed) if (missing == "min" and normed) else 0.0
        seen = {i for i, _ in items}
        for (i, _), v in zip(items, normed):
            totals[i] += wi * v
        if floor:
            for i in totals:
                if i not in seen:
                    totals[i] += wi * floor
    return _sorted(totals)


class Fusion(Component):
    """Combines ranked lists; ``weights`` given to ``fuse`` override the configured ones."""

    @abstractmethod
    def fuse(self, ranked_lists: Sequence[Ranked],
             weights: Sequence[float] | None = None) -> list[tuple[str, float]]: ...


WEIGHTS_PARAM = Param(each=Param(float, finite=True), none=True)


class RRF(Fusion):
    """Reciprocal rank fusion (see ``rrf``)."""

    constraints = {"k": Param(float, ge=0), "weights": WEIGHTS_PARAM}

    def __init__(self, k: float = 60, weights: list[float] | None = None):
        self.k = k
        self.weights = weights
        self._on_params_changed()

    def fuse(self, ranked_lists, weights=None):
        return rrf(ranked_lists, weights if weights is not None else self.weights, self.k)


class WeightedSum(Fusion):
    """Weighted sum of normalised scores (see ``weighted_sum``)."""

    constraints = {"weights": WEIGHTS_PARAM, "normalization": Param(choices=NORMALIZATIONS),
                   "missing": Param(choices=MISSING)}

    def __init__(self, weights: list[float] | None = None, normalization: str = "minmax",
                 missing: str = "zero"):
        self.weights = weights
        self.normalization = normalization
        self.missing = missing
        self._on_params_changed()

    def fuse(self, ranked_lists, weights=None):
        return weighted_sum(ranked_lists, weights if weights is not None else self.weights,
                            self.normalization, self.missing)


__all__ = [
    "RRF",
    "Fusion",
    "WeightedSum",
    "check_weights",
    "normalize_scores",
    "rrf",
    "weighted_sum",
]
