"""Paired comparison of strategies on a per-probe metric, clustered by dialogue.

Probes are paired on (``dialogue_id``, ``probe_id``); a pair where either value is NaN
(an unscored probe) is left out. With d = a - b over the n pairs:

- ``diff`` = mean(d); ``mean_a``/``mean_b`` = means over the same pairs;
- ``ci_low``/``ci_high``: cluster-bootstrap percentile interval of mean(d), resampling
  dialogues (``memlab.eval.stats``; ``cluster=None`` makes every probe its own cluster);
- ``p_value``: two-sided sign-flip test flipping whole dialogues (exact up to 16
  dialogues, seeded Monte Carlo above);
- ``n_probes``, ``n_dialogues``: pairs and dialogues compared;
- wins / ties / losses: pairs with a_i > b_i, a_i == b_i, a_i < b_i.

``pairwise`` compares every pair of several strategies and adds Holm-adjusted p-values.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd

from ..base import MemlabError
from . import stats

KEYS = ("dialogue_id", "probe_id")
CLUSTER = "dialogue_id"


@dataclass
class Comparison:
    """One paired comparison of strategy ``a`` against ``b`` on ``metric``."""

    metric: str
    a: str
    b: str
    n_probes: int
    n_dialogues: int
    mean_a: float
    mean_b: float
    diff: float
    ci_low: float
    ci_high: float
    p_value: float
    wins: int
    ties: int
    losses: int


def paired_frame(df: pd.DataFrame, a: str, b: str, metric: str, strategy_col: str = "strategy",
                 keys: Sequence[str] = KEYS) -> pd.DataFrame:
    """The probes both strategies scored, in key order: the key columns plus ``a`` and ``b`` values."""
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
    joined["_0"] = pd.to_numeric(joined["_0"], errors="coerce").astype(float)
    joined["_1"] = pd.to_numeric(joined["_1"], errors="coerce").astype(float)
    joined = joined[joined["_0"].notna() & joined["_1"].notna()]
    return joined.rename(columns={"_0": "a", "_1": "b"}).reset_index(drop=True)


def paired_values(df: pd.DataFrame, a: str, b: str, metric: str, strategy_col: str = "strategy",
                  keys: Sequence[str] = KEYS) -> tuple[np.ndarray, np.ndarray]:
    """Aligned arrays (a_i, b_i) of ``metric`` for probes both strategies scored, in key order."""
    joined = paired_frame(df, a, b, metric, strategy_col, keys)
    return joined["a"].to_numpy(dtype=float), joined["b"].to_numpy(dtype=float)


def bootstrap_ci(diffs: Sequence[float], n_resamples: int = 10_000, confidence: float = 0.95,
                 seed: int = 0, clusters: Sequence[object] | None = None) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean of ``diffs``, resampling ``clusters`` (each
    value its own cluster when None); (nan, nan) when empty."""
    d = np.asarray(diffs, dtype=float)
    labels = list(range(d.size)) if clusters is None else list(clusters)
    return stats.cluster_bootstrap_ci(d, labels, n_resamples, confidence, seed)


def permutation_test(diffs: Sequence[float], n_resamples: int = 10_000, seed: int = 0,
                     exact_max_n: int = 16, clusters: Sequence[object] | None = None) -> float:
    """Two-sided paired sign-flip p-value of mean(diffs) = 0, flipping whole ``clusters``
    (each value alone when None); exact up to ``exact_max_n`` clusters."""
    d = np.asarray(diffs, dtype=float)
    labels = [f"{i:09d}" for i in range(d.size)] if clusters is None else list(clusters)
    return stats.sign_flip_p_value(d, labels, n_resamples, seed, exact_max_n)


def compare_pair(df: pd.DataFrame, a: str, b: str, metric: str, strategy_col: str = "strategy",
                 n_resamples: int = 10_000, confidence: float = 0.95, seed: int = 0,
                 exact_max_n: int = 16, keys: Sequence[str] = KEYS,
                 cluster: str | None = CLUSTER) -> Comparison:
    """Compare strategies ``a`` and ``b`` on ``metric`` (see the module docstring)."""
    joined = paired_frame(df, a, b, metric, strategy_col, keys)
    va, vb = joined["a"].to_numpy(dtype=float), joined["b"].to_numpy(dtype=float)
    d = va - vb
    n = int(d.size)
    if cluster is not None and cluster not in joined.columns:
        raise MemlabError(f"compare: cluster column {cluster!r} must be one of the keys {list(keys)}")
    clusters = joined[cluster].astype(str).tolist() if cluster is not None else None
    low, high = bootstrap_ci(d, n_resamples, confidence, seed, clusters)
    return Comparison(
        metric=metric, a=a, b=b, n_probes=n, n_dialogues=len(set(clusters)) if clusters is not None else n,
        mean_a=float(va.mean()) if n else math.nan, mean_b=float(vb.mean()) if n else math.nan,
        diff=float(d.mean()) if n else math.nan, ci_low=low, ci_high=high,
        p_value=permutation_test(d, n_resamples, seed, exact_max_n, clusters),
        wins=int(np.sum(va > vb)), ties=int(np.sum(va == vb)), losses=int(np.sum(va < vb)))


def compare(df: pd.DataFrame, a: str, b: str, metric: str | Sequence[str], strategy_col: str = "strategy",
            by: str | Sequence[str] | None = None, n_resamples: int = 10_000, confidence: float = 0.95,
            seed: int = 0, exact_max_n: int = 16, cluster: str | None = CLUSTER) -> pd.DataFrame:
    """One row per metric (and per ``by`` group, e.g. category) comparing ``a`` with ``b``.

    Columns: [by...], metric, a, b, n_probes, n_dialogues, mean_a, mean_b, diff, ci_low,
    ci_high, p_value, wins, ties, losses.
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
            result = compare_pair(part, a, b, m, strategy_col, n_resamples, confidence, seed, exact_max_n,
                                  cluster=cluster)
            rows.append({**labels, **asdict(result)})
    columns = by_cols + list(Comparison.__dataclass_fields__)
    return pd.DataFrame(rows, columns=columns)


def pairwise(df: pd.DataFrame, metric: str, strategies: Sequence[str] | None = None,
             strategy_col: str = "strategy", n_resamples: int = 10_000, confidence: float = 0.95,
             seed: int = 0, cluster: str | None = CLUSTER) -> pd.DataFrame:
    """Every pair of ``strategies`` (default: all, sorted) compared on ``metric``, with
    ``p_holm``: the p-values Holm-adjusted over the pairs (``memlab.eval.stats.holm``)."""
    names = sorted(df[strategy_col].dropna().astype(str).unique()) if strategies is None else list(strategies)
    rows = [asdict(compare_pair(df, a, b, metric, strategy_col, n_resamples, confidence, seed, cluster=cluster))
            for a, b in itertools.combinations(names, 2)]
    out = pd.DataFrame(rows, columns=list(Comparison.__dataclass_fields__))
    out.insert(out.columns.get_loc("p_value") + 1, "p_holm", stats.holm(out["p_value"].tolist()))
    return out


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
