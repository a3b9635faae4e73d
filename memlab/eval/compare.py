"""Paired comparison of two strategies on a per-probe metric.

Probes are paired on (``dialogue_id``, ``probe_id``); a pair where either value is NaN
(an unscored probe) is left out. With d_i = a_i - b_i over the n pairs:

- ``diff`` = mean(d); ``mean_a``/``mean_b`` = means over the same pairs;
- bootstrap CI: percentile interval of mean(d*) over ``n_resamples`` resamples of the pairs
  drawn with replacement (``numpy.random.default_rng(seed)``);
- permutation p-value (two-sided, sign-flip): p = share of sign vectors s in {-1, +1}^n with
  |mean(s * d)| >= |mean(d)|. For n <= ``exact_max_n`` all 2^n vectors are enumerated
  (exact); above, p = (1 + hits) / (1 + n_resamples) over random sign vectors;
- wins / ties / losses: pairs with a_i > b_i, a_i == b_i, a_i < b_i.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd

from ..base import MemlabError

KEYS = ("dialogue_id", "probe_id")
#: Resamples drawn per block, to bound memory; fixed so results do not depend on n.
_BLOCK = 512


@dataclass
class Comparison:
    """One paired comparison of strategy ``a`` against ``b`` on ``metric``."""

    metric: str
    a: str
    b: str
    n: int
    mean_a: float
    mean_b: float
    diff: float
    ci_low: float
    ci_high: float
    p_value: float
    wins: int
    ties: int
    losses: int


def paired_values(df: pd.DataFrame, a: str, b: str, metric: str, strategy_col: str = "strategy",
                  keys: Sequence[str] = KEYS) -> tuple[np.ndarray, np.ndarray]:
    """Aligned arrays (a_i, b_i) of ``metric`` for probes both strategies scored, in key order."""
    keys = list(keys)
    for col in [strategy_col, metric, *keys]:
        if col not in df.columns:
            raise MemlabError(f"compare: no column {col!r}; columns: {', '.join(map(str, df.columns))}")
    present = sorted(df[strategy_col].dropna().astype(str).unique())
    sides: list[pd.DataFrame] = []
    for name in (a, b):
        if name not in present:
            raise MemlabError(f"compare: strategy {name!r} not in column {strategy_col!r}; "
                              f"values: {', '.join(present)}")
        part = df[df[strategy_col].astype(str) == name][keys + [metric]]
        dup = part.duplicated(keys)
        if dup.any():
            first = tuple(part[dup].iloc[0][keys])
            raise MemlabError(f"compare: strategy {name!r} has several rows for {dict(zip(keys, first))}; "
                              f"filter to one configuration first (e.g. one parameter value)")
        sides.append(part.rename(columns={metric: f"_{len(sides)}"}))
    joined = sides[0].merge(sides[1], on=keys, how="inner").sort_values(keys, kind="stable")
    va = pd.to_numeric(joined["_0"], errors="coerce").to_numpy(dtype=float)
    vb = pd.to_numeric(joined["_1"], errors="coerce").to_numpy(dtype=float)
    keep = ~(np.isnan(va) | np.isnan(vb))
    return va[keep], vb[keep]


def bootstrap_ci(diffs: Sequence[float], n_resamples: int = 10_000, confidence: float = 0.95,
                 seed: int = 0) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean of ``diffs``; (nan, nan) when empty."""
    d = np.asarray(diffs, dtype=float)
    _check(n_resamples, confidence)
    if d.size == 0:
        return (math.nan, math.nan)
    rng = np.random.default_rng(seed)
    means = np.empty(n_resamples)
    for start in range(0, n_resamples, _BLOCK):
        stop = min(start + _BLOCK, n_resamples)
        idx = rng.integers(0, d.size, size=(stop - start, d.size))
        means[start:stop] = d[idx].mean(axis=1)
    alpha = 1.0 - confidence
    low, high = np.quantile(means, [alpha / 2, 1 - alpha / 2])
    return float(low), float(high)


def permutation_test(diffs: Sequence[float], n_resamples: int = 10_000, seed: int = 0,
                     exact_max_n: int = 16) -> float:
    """Two-sided paired sign-flip p-value of mean(diffs) = 0 (see the module docstring)."""
    d = np.asarray(diffs, dtype=float)
    _check(n_resamples, 0.5)
    if d.size == 0:
        return math.nan
    observed = abs(d.mean())
    # Means equal up to rounding must count as "as extreme": compare with a tolerance.
    tol = 1e-12 * max(1.0, float(np.abs(d).max()))
    if d.size <= exact_max_n:
        bits = (np.arange(2 ** d.size)[:, None] >> np.arange(d.size)) & 1
        signs = 1.0 - 2.0 * bits  # row j: the j-th of all 2^n sign vectors
        return float(np.mean(np.abs(signs @ d / d.size) >= observed - tol))
    rng = np.random.default_rng(seed)
    hits = 0
    for start in range(0, n_resamples, _BLOCK):
        size = min(_BLOCK, n_resamples - start)
        signs = rng.choice(np.array([1.0, -1.0]), size=(size, d.size))
        hits += int(np.sum(np.abs(signs @ d / d.size) >= observed - tol))
    return (1 + hits) / (1 + n_resamples)


def _check(n_resamples: int, confidence: float) -> None:
    if isinstance(n_resamples, bool) or not isinstance(n_resamples, (int, np.integer)) or n_resamples < 1:
        raise MemlabError(f"n_resamples must be a positive int, got {n_resamples!r}")
    if not 0 < confidence < 1:
        raise MemlabError(f"confidence must be in (0, 1), got {confidence!r}")


def compare_pair(df: pd.DataFrame, a: str, b: str, metric: str, strategy_col: str = "strategy",
                 n_resamples: int = 10_000, confidence: float = 0.95, seed: int = 0,
                 exact_max_n: int = 16, keys: Sequence[str] = KEYS) -> Comparison:
    """Compare strategies ``a`` and ``b`` on ``metric`` (see the module docstring)."""
    va, vb = paired_values(df, a, b, metric, strategy_col, keys)
    d = va - vb
    n = int(d.size)
    low, high = bootstrap_ci(d, n_resamples, confidence, seed)
    return Comparison(
        metric=metric, a=a, b=b, n=n,
        mean_a=float(va.mean()) if n else math.nan, mean_b=float(vb.mean()) if n else math.nan,
        diff=float(d.mean()) if n else math.nan, ci_low=low, ci_high=high,
        p_value=permutation_test(d, n_resamples, seed, exact_max_n),
        wins=int(np.sum(va > vb)), ties=int(np.sum(va == vb)), losses=int(np.sum(va < vb)))


def compare(df: pd.DataFrame, a: str, b: str, metric: str | Sequence[str], strategy_col: str = "strategy",
            by: str | Sequence[str] | None = None, n_resamples: int = 10_000, confidence: float = 0.95,
            seed: int = 0, exact_max_n: int = 16) -> pd.DataFrame:
    """One row per metric (and per ``by`` group, e.g. category) comparing ``a`` with ``b``.

    Columns: [by...], metric, a, b, n, mean_a, mean_b, diff, ci_low, ci_high, p_value,
    wins, ties, losses.
    """
    metrics = [metric] if isinstance(metric, str) else list(metric)
    groups: list[tuple[dict[str, object], pd.DataFrame]]
    if by is None:
        by_cols: list[str] = []
        groups = [({}, df)]
    else:
        by_cols = [by] if isinstance(by, str) else list(by)
        missing = [c for c in by_cols if c not in df.columns]
        if missing:
            raise MemlabError(f"compare: no column(s) {missing} to group by")
        groups = [(dict(zip(by_cols, k if isinstance(k, tuple) else (k,))), g)
                  for k, g in df.groupby(by_cols, sort=True)]
    rows = []
    for labels, part in groups:
        for m in metrics:
            result = compare_pair(part, a, b, m, strategy_col, n_resamples, confidence, seed, exact_max_n)
            rows.append({**labels, **asdict(result)})
    columns = by_cols + list(Comparison.__dataclass_fields__)
    return pd.DataFrame(rows, columns=columns)


def to_markdown(df: pd.DataFrame, floatfmt: str = ".3f", index: bool = False) -> str:
    """A GitHub Markdown table of ``df``; numbers right-aligned, floats with ``floatfmt``.

    NaN shows as ``nan``; ``|`` in cells is escaped.
    """
    frame = df.reset_index() if index else df
    headers = [str(c) for c in frame.columns]
    numeric = [pd.api.types.is_numeric_dtype(frame[c]) and not pd.api.types.is_bool_dtype(frame[c])
               for c in frame.columns]

    def cell(value: object) -> str:
        if isinstance(value, (float, np.floating)):
            text = "nan" if math.isnan(value) else format(float(value), floatfmt)
        else:
            text = str(value)
        return text.replace("|", "\\|").replace("\n", " ")

    body = [[cell(v) for v in row] for row in frame.itertuples(index=False, name=None)]
    lines = ["| " + " | ".join(h.replace("|", "\\|") for h in headers) + " |",
             "|" + "|".join("---:" if num else ":---" for num in numeric) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in body]
    return "\n".join(lines)
