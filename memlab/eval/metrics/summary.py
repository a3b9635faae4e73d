"""Aggregation of per-probe metrics: ``summarize`` (means per group, with cluster-bootstrap
intervals) and ``nan_notes`` (why a mean is NaN, in words). Which columns are metrics is
the registry's answer (``metric_columns``)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from ...base import MemlabError
from .compute import _as_list
from .registry import close_metric_columns, is_metric_column, nan_reason

#: Per-probe cost columns that ``summarize`` averages as well, when present.
COST_COLUMNS = ("context_tokens", "llm_prompt_tokens", "llm_completion_tokens", "latency_ms",
                "answer_prompt_tokens", "answer_completion_tokens", "judge_tokens")


def metric_columns(df: pd.DataFrame) -> list[str]:
    """The metric columns of ``df`` (registered metrics, as ``compute_metrics`` names them), in column order."""
    return [c for c in df.columns if is_metric_column(c)]


def summarize(df: pd.DataFrame, by: Sequence[str] | str = ("strategy",), metrics: Sequence[str] | None = None,
              per_category: bool = False, category_col: str = "category", ci: bool = False,
              cluster: str = "dialogue_id", n_resamples: int = 2000, confidence: float = 0.95,
              seed: int = 0) -> pd.DataFrame:
    """Mean of each metric per group (NaN -- unscored probes -- excluded), one row per group.

    Columns: the ``by`` columns, [``category_col``], ``n_probes`` (rows in the group),
    ``n_scored`` (rows with gold and no ``error``), [``n_failed`` (rows whose LLM step failed:
    ``error`` set; with an ``error`` column)], then the metric means and the cost means
    (``COST_COLUMNS`` present in ``df``), [``llm_format_errors``: their total].
    ``metrics`` defaults to every metric column. With ``per_category``
    each group gets one row per category and one with category "all" (listed first).
    Groups are sorted by their keys.

    With ``ci``, ``n_dialogues`` follows ``n_scored`` and each mean ``m`` is followed by
    ``m_ci_low`` and ``m_ci_high``: the cluster-bootstrap percentile interval resampling the
    ``cluster`` column (dialogues; ``memlab.eval.stats``), seeded, so reproducible.
    """
    by = [by] if isinstance(by, str) else list(by)
    missing = [c for c in by + ([category_col] if per_category else []) + ([cluster] if ci else [])
               if c not in df.columns]
    if missing:
        raise MemlabError(f"summarize: no column(s) {missing}; columns: {', '.join(map(str, df.columns))}")
    if metrics is None:
        metrics = metric_columns(df)
    else:
        absent = [m for m in metrics if m not in df.columns]
        if absent:
            close = close_metric_columns(str(absent[0]), metric_columns(df))
            hint = f"did you mean {close[0]!r}?" if close else f"metric columns: {metric_columns(df)}"
            raise MemlabError(f"summarize: no metric column(s) {absent}; {hint}")
    metrics = list(metrics) + [c for c in COST_COLUMNS if c in df.columns and c not in metrics]
    frame = df.copy()
    if "n_gold" not in frame.columns:
        frame["n_gold"] = [len(_as_list(g, "gold", i)) for i, g in enumerate(frame["gold"])] \
            if "gold" in frame.columns else 1
    options = dict(cluster=cluster, n_resamples=n_resamples, confidence=confidence, seed=seed) if ci else None
    parts = [_aggregate(frame, by, metrics, options)]
    if per_category:
        parts[0].insert(len(by), category_col, "all")
        cats = frame.assign(**{category_col: frame[category_col].fillna("(none)").astype(str)})
        parts.append(_aggregate(cats, by + [category_col], metrics, options))
        result = pd.concat(parts, ignore_index=True)
        order = result[category_col].map(lambda c: (c != "all", c))
        result = result.assign(_order=order)
        result = result.sort_values(by + ["_order"], kind="stable").drop(columns="_order")
        return result.reset_index(drop=True)
    return parts[0]


def _aggregate(df: pd.DataFrame, keys: list[str], metrics: list[str],
               ci: dict[str, Any] | None = None) -> pd.DataFrame:
    values = df[metrics].apply(pd.to_numeric, errors="coerce").astype(float)
    failed = df["error"].notna() if "error" in df.columns else pd.Series(False, index=df.index)
    scored = (df["n_gold"] > 0) & ~failed
    totals = {"n_failed": failed.astype(int)} if "error" in df.columns else {}
    if "llm_format_errors" in df.columns:
        totals["llm_format_errors"] = pd.to_numeric(df["llm_format_errors"], errors="coerce").fillna(0).astype(int)
    work = pd.concat([df[keys], values, scored.rename("_scored"), pd.DataFrame(totals, index=df.index)], axis=1)
    if keys:
        grouped = work.groupby(keys, sort=True, dropna=False)
        means = grouped[metrics].mean()  # pandas' mean skips NaN
        counts = grouped.size().rename("n_probes")
        scored_n = grouped["_scored"].sum().astype(int).rename("n_scored")
        sums = {name: grouped[name].sum().astype(int) for name in totals}
        failed_n = [sums["n_failed"]] if "n_failed" in sums else []
        format_n = [sums["llm_format_errors"]] if "llm_format_errors" in sums else []
        out = pd.concat([counts, scored_n, *failed_n, means, *format_n], axis=1).reset_index()
        numbers = grouped.ngroup().to_numpy()  # with sort=True: the row order of ``out``
        groups = [np.flatnonzero(numbers == i) for i in range(len(out))]
    else:
        first = {"n_failed": int(totals["n_failed"].sum())} if "n_failed" in totals else {}
        last = {"llm_format_errors": int(totals["llm_format_errors"].sum())} if "llm_format_errors" in totals else {}
        out = pd.DataFrame([{"n_probes": len(work), "n_scored": int(work["_scored"].sum()), **first,
                             **values.mean().to_dict(), **last}])
        groups = [np.arange(len(work))]
    if not ci:
        return out
    from ..stats import cluster_bootstrap_ci

    clusters = df[ci["cluster"]].astype(str).to_numpy()
    matrix = values.to_numpy(dtype=float)
    lows, highs, n_dialogues = [], [], []
    for idx in groups:
        bounds = cluster_bootstrap_ci(matrix[idx], clusters[idx], ci["n_resamples"], ci["confidence"],
                                      ci["seed"])
        lows.append(bounds[:, 0])
        highs.append(bounds[:, 1])
        n_dialogues.append(len(set(clusters[idx])))
    out.insert(out.columns.get_loc("n_scored") + 1, "n_dialogues", n_dialogues)
    columns = [c for c in out.columns if c not in metrics]
    data = {c: out[c] for c in columns}
    for j, m in enumerate(metrics):
        columns += [m, f"{m}_ci_low", f"{m}_ci_high"]
        data[m] = out[m]
        data[f"{m}_ci_low"] = [low[j] for low in lows]
        data[f"{m}_ci_high"] = [high[j] for high in highs]
    return pd.DataFrame(data, columns=columns)


def nan_notes(summary: pd.DataFrame, by: Sequence[str] | str = ("strategy",),
              metrics: Sequence[str] | None = None) -> list[str]:
    """One sentence per NaN mean of a ``summarize`` table: which metric, which group, and why.

    The reason is "no scored probes" when the group has none (``n_scored`` 0: no probe has
    gold evidence, or every probe failed), else what the metric leaves unscored (its
    registry entry's ``unscored``: e.g. stale metrics score only probes naming stale
    evidence). Empty when every mean is a number.
    """
    by = [by] if isinstance(by, str) else list(by)
    notes = []
    for _, row in summary.iterrows():
        reasons = row_nan_notes(row, metrics)
        if reasons:
            group = ", ".join(f"{k} {row[k]}" for k in by if k in summary.columns) or "all probes"
            if "category" in summary.columns and "category" not in by and row.get("category") != "all":
                group += f", category {row['category']}"
            notes += [f"{group}: {r}" for r in reasons]
    return notes


def row_nan_notes(row: pd.Series, metrics: Sequence[str] | None = None) -> list[str]:
    """The reasons of one summary row's NaN means (``nan_notes`` without the group)."""
    names = [m for m in (metrics if metrics is not None else [c for c in row.index if is_metric_column(c)])
             if m in row.index]
    empty = [m for m in names if _nan(row[m])]
    if not empty:
        return []
    if "n_scored" in row.index and not _nan(row["n_scored"]) and int(row["n_scored"]) == 0:
        failed = int(row["n_failed"]) if "n_failed" in row.index and not _nan(row["n_failed"]) else 0
        why = (f"no scored probes ({failed} of {int(row['n_probes'])} failed)" if failed else
               f"no scored probes (none of its {int(row['n_probes'])} probes has gold evidence)")
        return [f"{', '.join(empty)}: no mean: {why}"]
    return [f"{m}: no mean: no probe has a value ({nan_reason(m)})" for m in empty]


def _nan(value: Any) -> bool:
    return value is None or (isinstance(value, (float, np.floating)) and math.isnan(value))
