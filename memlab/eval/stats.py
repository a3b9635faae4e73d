"""Statistics that respect the design: probes are nested in dialogues.

Probes of one dialogue share its people, topics and memory, so they are not independent;
a bootstrap that resamples probes one by one makes intervals too narrow. Every interval
and test here resamples whole dialogues (clusters).

Cluster bootstrap of a mean
---------------------------
Values x_ij (probe j of cluster i; NaN values -- unscored probes -- are dropped first),
clusters sorted by their label, C of them, S_i = sum_j x_ij, N_i = number of values in i.
The estimate is the mean over every value, sum_i S_i / sum_i N_i. With
``rng = numpy.random.default_rng(seed)``, resample r draws ``idx = rng.integers(0, C,
size=C)`` (C clusters with replacement; all R draws at once as ``rng.integers(0, C,
size=(R, C))``), W_ri = how often cluster i was drawn, and

    mean*_r = sum_i W_ri S_i / sum_i W_ri N_i.

The interval is the percentile interval: ``numpy.quantile(mean*, [a/2, 1 - a/2])``
(default linear interpolation) with a = 1 - confidence.

Paired comparison
-----------------
For two strategies scored on the same probes, d_ij = a_ij - b_ij. The difference's CI is
the cluster bootstrap above applied to d. The p-value is a two-sided cluster sign-flip
test: under "no difference" each dialogue's differences are as likely negated, so with
D_i = sum_j d_ij and n the number of pairs, p = share of sign vectors s in {-1, +1}^C with
|sum_i s_i D_i| / n >= |sum_i D_i| / n (up to 1e-12 relative rounding). For C <=
``exact_max_clusters`` all 2^C vectors are enumerated (exact); above, p = (1 + hits) /
(1 + n_resamples) over random sign vectors drawn with ``default_rng(seed)``.

Several pairs: Holm's step-down correction, p_(1) <= ... <= p_(m) sorted,
adjusted p_(i) = max_{j <= i} min(1, (m - j + 1) p_(j)).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..base import MemlabError

#: Defaults shared by summaries, ``memlab eval`` and ``memlab compare``.
N_RESAMPLES = 2000
CONFIDENCE = 0.95
SEED = 0
EXACT_MAX_CLUSTERS = 16
#: Resamples drawn per block, to bound memory; fixed so results do not depend on it.
_BLOCK = 512


def check_options(n_resamples: int, confidence: float) -> None:
    if isinstance(n_resamples, bool) or not isinstance(n_resamples, (int, np.integer)) or n_resamples < 1:
        raise MemlabError(f"n_resamples must be a positive int, got {n_resamples!r}")
    if not 0 < confidence < 1:
        raise MemlabError(f"confidence must be in (0, 1), got {confidence!r}")


def cluster_sums(values: Any, clusters: Any) -> tuple[np.ndarray, np.ndarray, list[Any]]:
    """(S, N, labels): per-cluster sums and counts of non-NaN values, clusters sorted by label.

    ``values`` is (n,) or (n, m) (m metrics at once); S and N are then (C,) or (C, m).
    """
    x = np.asarray(values, dtype=float)
    labels = np.asarray([str(c) for c in clusters], dtype=object)
    if x.shape[0] != labels.shape[0]:
        raise MemlabError(f"{x.shape[0]} values but {labels.shape[0]} cluster labels")
    order = sorted(set(labels.tolist()))
    index = {c: i for i, c in enumerate(order)}
    codes = np.fromiter((index[c] for c in labels), dtype=np.int64, count=labels.shape[0])
    present = ~np.isnan(x)
    filled = np.where(present, x, 0.0)
    shape = (len(order),) + x.shape[1:]
    sums = np.zeros(shape)
    counts = np.zeros(shape)
    np.add.at(sums, codes, filled)
    np.add.at(counts, codes, present.astype(float))
    return sums, counts, order


def resample_weights(n_clusters: int, n_resamples: int, seed: int) -> np.ndarray:
    """(R, C) counts W: how often each cluster is drawn in each resample (module docstring)."""
    rng = np.random.default_rng(seed)
    weights = np.zeros((n_resamples, n_clusters))
    for start in range(0, n_resamples, _BLOCK):
        stop = min(start + _BLOCK, n_resamples)
        idx = rng.integers(0, n_clusters, size=(stop - start, n_clusters))
        rows = np.repeat(np.arange(stop - start), n_clusters)
        np.add.at(weights[start:stop], (rows, idx.ravel()), 1.0)
    return weights


def cluster_bootstrap_ci(values: Any, clusters: Any, n_resamples: int = N_RESAMPLES,
                         confidence: float = CONFIDENCE, seed: int = SEED) -> Any:
    """Percentile CI of the mean, resampling clusters (module docstring).

    ``values`` (n,) gives one ``(low, high)``; (n, m) gives an (m, 2) array, one row per
    column, all from the same resamples. NaN values are ignored; a column with no value
    (or a resample drawing only clusters without values) gives NaN.
    """
    check_options(n_resamples, confidence)
    x = np.asarray(values, dtype=float)
    single = x.ndim == 1
    sums, counts, _ = cluster_sums(x.reshape(len(x), 1) if single else x, clusters)
    out = np.full((sums.shape[1], 2), np.nan)
    if sums.shape[0]:
        w = resample_weights(sums.shape[0], n_resamples, seed)
        with np.errstate(invalid="ignore", divide="ignore"):
            means = (w @ sums) / (w @ counts)
        alpha = 1.0 - confidence
        for j in range(sums.shape[1]):
            col = means[:, j]
            col = col[~np.isnan(col)]
            if col.size:
                out[j] = np.quantile(col, [alpha / 2, 1 - alpha / 2])
    if single:
        return float(out[0, 0]), float(out[0, 1])
    return out


def sign_flip_p_value(diffs: Any, clusters: Any, n_resamples: int = 10_000, seed: int = SEED,
                      exact_max_clusters: int = EXACT_MAX_CLUSTERS) -> float:
    """Two-sided cluster sign-flip p-value of mean(diffs) = 0 (module docstring); NaN if empty."""
    check_options(n_resamples, 0.5)
    d = np.asarray(diffs, dtype=float)
    keep = ~np.isnan(d)
    d = d[keep]
    if d.size == 0:
        return math.nan
    sums, _, _ = cluster_sums(d, np.asarray(list(clusters), dtype=object)[keep])
    n = d.size
    observed = abs(sums.sum()) / n
    tol = 1e-12 * max(1.0, float(np.abs(d).max()))  # means equal up to rounding count as extreme
    c = sums.size
    if c <= exact_max_clusters:
        bits = (np.arange(2 ** c)[:, None] >> np.arange(c)) & 1
        signs = 1.0 - 2.0 * bits
        return float(np.mean(np.abs(signs @ sums) / n >= observed - tol))
    rng = np.random.default_rng(seed)
    hits = 0
    for start in range(0, n_resamples, _BLOCK):
        size = min(_BLOCK, n_resamples - start)
        signs = rng.choice(np.array([1.0, -1.0]), size=(size, c))
        hits += int(np.sum(np.abs(signs @ sums) / n >= observed - tol))
    return (1 + hits) / (1 + n_resamples)


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm-adjusted p-values, in the input order (NaN stays NaN and is not counted)."""
    p = np.asarray(p_values, dtype=float)
    valid = np.flatnonzero(~np.isnan(p))
    out = np.full(p.shape, np.nan)
    m = valid.size
    running = 0.0
    for rank, i in enumerate(valid[np.argsort(p[valid], kind="stable")]):
        running = max(running, min(1.0, (m - rank) * p[i]))
        out[i] = running
    return out.tolist()
