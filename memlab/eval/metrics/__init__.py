"""Retrieval metrics per probe, and their aggregation.

Items and gold
--------------
``gold`` is a probe's set of gold turn ids. ``retrieved`` is a ranked list of *items*; an
item is either one id (a turn) or a list of ids (a derived memory -- a summary, an extracted
fact -- standing for the turns in its ``source_ids``). An item is **relevant** if any of
its ids is gold; the gold ids it **covers** are its ids that are gold. Let T_k be the first
k items (all of them when fewer), C_k the gold ids covered by T_k, G = |gold|.

- ``hit_rate@k``        = 1 if some item of T_k is relevant, else 0   (TREC Success@k)
- ``recall@k``          = |C_k| / G                                     (LoCoMo's recall)
- ``recall_all@k``      = 1 if C_k = gold, else 0                       (LongMemEval's Recall@k)
- ``relevance_ratio@k`` = (relevant items in T_k) / |T_k|; 0 if nothing was retrieved
  (precision over what was actually returned, not over k: a retriever returning 2 items
  for k=5, both gold, scores 1.0; a scored probe with an empty list scores 0, so it
  stays in the mean)
- ``mrr@k``             = 1 / rank of the first relevant item of T_k (1-based), 0 if none
  (cut at k like every other metric, so it does not depend on how deep the list goes)
- ``ndcg@k``            = DCG_k / IDCG_k with binary gains and log2 discount:
  DCG_k = sum_{i<=|T_k|} g_i / log2(i + 1), g_i = 1 if item i covers a gold id that no
  higher-ranked item covered, else 0; IDCG_k = sum_{i=1..min(k, G)} 1 / log2(i + 1).
  For one-id items this is the usual binary nDCG; a repeated item earns nothing twice.

A probe with no gold (G = 0) is unscored: every metric is NaN and means skip it.

Token-matched metrics
---------------------
Items of different strategies stand for different amounts of text (a turn, a summary of
ten turns), so "top k" is not comparable across them. With ``t_i`` the tokens of item i
as the context would show it (the row's ``retrieved_tokens``, counted by the strategy's
token counter), the items kept under a budget of B tokens are the longest prefix
T_B = items 1..m with t_1 + ... + t_m <= B (the walk stops at the first item that would
overflow, even if a later, shorter one would fit). Then:

- ``hit_rate@Btok`` = 1 if some item of T_B is relevant, else 0
- ``recall@Btok``   = |gold ids covered by T_B| / G (the union of T_B's source turns)
- ``tokens@Btok``   = t_1 + ... + t_m, the tokens used (defined for unscored probes too)

Column names spell B as a number: ``recall@512tok``.

Views
-----
Rows from the replay engine describe each probe twice: the ranked retrieval
(``retrieved_source_ids``, else ``retrieved_ids``) and the built context (``context_ids``:
the source ids in the context). The "retrieval" view computes ``<metric>@k`` for each k;
the "context" view has no ranking, so it computes ``context_hit_rate``, ``context_recall``,
``context_recall_all`` and ``context_relevance_ratio`` over the whole context, each
context id being one item.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from ...base import MemlabError
from .sessions import (SESSION_BUDGET_METRICS, SESSION_COLUMNS, SESSION_METRICS, session_budget_metrics,
                       session_hit_rate_at_k, session_into, session_metrics, session_ndcg_at_k,
                       session_ranking, session_recall_all_at_k, session_recall_at_k)

Item = str | Sequence[str]
NAN = float("nan")

#: Per-k metric names of the retrieval view (columns ``<name>@<k>``).
RETRIEVAL_METRICS = ("hit_rate", "recall", "recall_all", "relevance_ratio", "ndcg", "mrr")
#: Per-budget metric names (columns ``<name>@<B>tok``).
BUDGET_METRICS = ("recall", "hit_rate", "tokens")
CONTEXT_METRICS = ("context_hit_rate", "context_recall", "context_recall_all", "context_relevance_ratio")
#: Stale-fact columns the replay adds (``memlab.eval.lifecycle``; NaN for probes naming no stale turn).
LIFECYCLE_METRICS = ("stale_in_context", "stale_only")
#: Answer-quality columns the replay adds when it is given an answerer (memlab.eval.answers).
ANSWER_METRICS = ("answer_f1", "judge_correct")
#: Per-probe cost columns that ``summarize`` averages as well, when present.
COST_COLUMNS = ("context_tokens", "llm_prompt_tokens", "llm_completion_tokens", "latency_ms",
                "answer_prompt_tokens", "answer_completion_tokens", "judge_tokens")
#: Row columns the metrics read.
REQUIRED_COLUMNS = {"retrieval": ("gold", "retrieved_ids"), "context": ("gold", "context_ids")}
_METRIC_COLUMN = re.compile(r"^(?:(?:%s)@\d+|(?:%s)@\d+tok|%s|%s|%s|n_gold)$" % (
    "|".join(RETRIEVAL_METRICS + SESSION_METRICS), "|".join(BUDGET_METRICS + SESSION_BUDGET_METRICS),
    "|".join(CONTEXT_METRICS),
    "|".join(ANSWER_METRICS), "|".join(LIFECYCLE_METRICS)))
#: Metrics bounded in [0, 1] (plots start their axis at 0 and end it at 1).
BOUNDED = re.compile(r"^(?:(?:%s)@\d+|(?:recall|hit_rate|session_recall|session_hit_rate)@\d+tok|%s|%s|%s)$" % (
    "|".join(RETRIEVAL_METRICS + SESSION_METRICS), "|".join(CONTEXT_METRICS), "|".join(ANSWER_METRICS),
    "|".join(LIFECYCLE_METRICS)))


def _ids(item: Item) -> list[str]:
    return [item] if isinstance(item, str) else [str(i) for i in item]


def _check_k(k: int | None) -> None:
    if k is not None and (isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1):
        raise MemlabError(f"k must be a positive int or None, got {k!r}")


def _top(retrieved: Sequence[Item], k: int | None) -> list[list[str]]:
    _check_k(k)
    items = list(retrieved) if k is None else list(retrieved)[:k]
    return [_ids(i) for i in items]


def _gold(gold: Iterable[str]) -> set[str]:
    return {str(g) for g in gold}


def hit_rate_at_k(retrieved: Sequence[Item], gold: Iterable[str], k: int | None) -> float:
    """1.0 if any of the first k items is relevant, else 0.0; NaN when gold is empty."""
    g = _gold(gold)
    if not g:
        return NAN
    return float(any(any(i in g for i in ids) for ids in _top(retrieved, k)))


def recall_at_k(retrieved: Sequence[Item], gold: Iterable[str], k: int | None) -> float:
    """|gold ids covered by the first k items| / |gold|; NaN when gold is empty."""
    g = _gold(gold)
    if not g:
        return NAN
    covered = {i for ids in _top(retrieved, k) for i in ids if i in g}
    return len(covered) / len(g)


def recall_all_at_k(retrieved: Sequence[Item], gold: Iterable[str], k: int | None) -> float:
    """1.0 if the first k items cover every gold id, else 0.0; NaN when gold is empty."""
    r = recall_at_k(retrieved, gold, k)
    return r if math.isnan(r) else float(r == 1.0)


def relevance_ratio_at_k(retrieved: Sequence[Item], gold: Iterable[str], k: int | None) -> float:
    """Relevant items among the first k / number of items among the first k (precision).

    NaN when gold is empty (unscored); 0.0 when nothing was retrieved.
    """
    g = _gold(gold)
    top = _top(retrieved, k)
    if not g:
        return NAN
    if not top:
        return 0.0
    return sum(any(i in g for i in ids) for ids in top) / len(top)


def mrr_at_k(retrieved: Sequence[Item], gold: Iterable[str], k: int | None) -> float:
    """1 / (1-based rank of the first relevant item among the first k), 0.0 if none; NaN if no gold."""
    g = _gold(gold)
    if not g:
        return NAN
    for rank, ids in enumerate(_top(retrieved, k), start=1):
        if any(i in g for i in ids):
            return 1.0 / rank
    return 0.0


def ndcg_at_k(retrieved: Sequence[Item], gold: Iterable[str], k: int | None) -> float:
    """Binary-gain nDCG with log2 discount (see the module docstring); NaN if no gold."""
    g = _gold(gold)
    if not g:
        return NAN
    top = _top(retrieved, k)
    covered: set[str] = set()
    dcg = 0.0
    for rank, ids in enumerate(top, start=1):
        new = {i for i in ids if i in g} - covered
        if new:
            dcg += 1.0 / math.log2(rank + 1)
            covered |= new
    n_ideal = len(g) if k is None else min(k, len(g))
    idcg = sum(1.0 / math.log2(r + 1) for r in range(1, n_ideal + 1))
    return dcg / idcg


def budget_prefix(tokens: Sequence[int], budget: int) -> int:
    """How many leading items fit in ``budget`` tokens: the largest m with t_1 + ... + t_m <= budget."""
    if isinstance(budget, bool) or not isinstance(budget, (int, np.integer)) or budget < 1:
        raise MemlabError(f"token budget must be a positive int, got {budget!r}")
    total = 0
    for m, t in enumerate(tokens):
        total += int(t)
        if total > budget:
            return m
    return len(tokens)


def budget_metrics(retrieved: Sequence[Item], tokens: Sequence[int], gold: Iterable[str],
                   budgets: Sequence[int]) -> dict[str, float]:
    """``recall@Btok``, ``hit_rate@Btok`` and ``tokens@Btok`` for every budget B (module docstring)."""
    if len(tokens) != len(retrieved):
        raise MemlabError(f"retrieved_tokens has {len(tokens)} entries for {len(retrieved)} retrieved items")
    out: dict[str, float] = {}
    for b in budgets:
        m = budget_prefix(tokens, b)
        kept = list(retrieved)[:m]
        out[f"recall@{b}tok"] = recall_at_k(kept, gold, None)
        out[f"hit_rate@{b}tok"] = hit_rate_at_k(kept, gold, None)
        out[f"tokens@{b}tok"] = float(sum(int(t) for t in tokens[:m]))
    return out


def _unique(ids: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(str(i) for i in ids))


def context_metrics(context_ids: Sequence[str], gold: Iterable[str]) -> dict[str, float]:
    """The context view: hit rate, recall, recall_all, relevance ratio over the distinct context ids."""
    items = _unique(context_ids)
    return {"context_hit_rate": hit_rate_at_k(items, gold, None),
            "context_recall": recall_at_k(items, gold, None),
            "context_recall_all": recall_all_at_k(items, gold, None),
            "context_relevance_ratio": relevance_ratio_at_k(items, gold, None)}


def retrieval_metrics(retrieved: Sequence[Item], gold: Iterable[str], ks: Sequence[int]) -> dict[str, float]:
    """``<metric>@k`` for every metric of ``RETRIEVAL_METRICS`` and every k."""
    out: dict[str, float] = {}
    for name, fn in (("hit_rate", hit_rate_at_k), ("recall", recall_at_k), ("recall_all", recall_all_at_k),
                     ("relevance_ratio", relevance_ratio_at_k), ("ndcg", ndcg_at_k), ("mrr", mrr_at_k)):
        for k in ks:
            out[f"{name}@{k}"] = fn(retrieved, gold, k)
    return out


def _as_list(value: Any, column: str, row: int) -> list[Any]:
    if _is_missing(value):
        return []
    if isinstance(value, str):
        raise MemlabError(f"column {column!r}, row {row}: expected a list, got the string {value!r}")
    return list(value)


def _views(view: str | Sequence[str]) -> list[str]:
    views = [view] if isinstance(view, str) else list(view)
    for v in views:
        if v not in REQUIRED_COLUMNS:
            raise MemlabError(f"view must be 'retrieval' or 'context' (or a list of them), got {v!r}")
    return views


def compute_metrics(rows: pd.DataFrame, ks: Sequence[int] = (1, 3, 5, 10),
                    view: str | Sequence[str] = ("retrieval", "context"),
                    budgets: Sequence[int] = ()) -> pd.DataFrame:
    """Per-probe metric columns added to a copy of ``rows``.

    Reads ``gold`` (list of turn ids) and, for the "retrieval" view, ``retrieved_source_ids``
    (list of lists of source ids per ranked item) or, when that column is absent,
    ``retrieved_ids`` (also for a row whose ``retrieved_source_ids`` is None); for the
    "context" view, ``context_ids``; with ``budgets``, ``retrieved_tokens``. Adds ``n_gold``
    and the columns named in the module docstring (``recall@5``, ``mrr@5``,
    ``recall@512tok``, ``context_recall``...).
    """
    views = _views(view)
    ks = [int(k) for k in ks]
    for k in ks:
        _check_k(k)
    budgets = [int(b) for b in budgets]
    for b in budgets:
        budget_prefix([], b)
    if budgets and "retrieval" in views and "retrieved_tokens" not in rows.columns:
        raise MemlabError("compute_metrics(budgets=...) needs column 'retrieved_tokens' "
                          "(replay rows have it)")
    for v in views:
        for col in REQUIRED_COLUMNS[v]:
            if col not in rows.columns:
                raise MemlabError(f"compute_metrics(view={v!r}) needs column {col!r}; "
                                  f"columns: {', '.join(map(str, rows.columns))}")
    sessions = "retrieval" in views and all(c in rows.columns for c in SESSION_COLUMNS)
    names = ["n_gold"]
    if "retrieval" in views:
        # token-matched metrics first: they are the ones that compare across strategies
        names += [f"{m}@{b}tok" for b in budgets for m in BUDGET_METRICS]
        names += [f"{m}@{k}" for m in RETRIEVAL_METRICS for k in ks]
    if "context" in views:
        names += list(CONTEXT_METRICS)
    if sessions:
        names += [f"{m}@{b}tok" for b in budgets for m in SESSION_BUDGET_METRICS]
        names += [f"{m}@{k}" for m in SESSION_METRICS for k in ks]
    has_sources = "retrieved_source_ids" in rows.columns
    # Plain lists, one pass per row: the same arithmetic as the per-metric functions above
    # (pinned equal by tests), without a pandas Series per row.
    columns: dict[str, list[float]] = {name: [] for name in names}
    golds = rows["gold"].tolist()
    retrieved_col = rows["retrieved_ids"].tolist() if "retrieval" in views else None
    sources_col = rows["retrieved_source_ids"].tolist() if "retrieval" in views and has_sources else None
    tokens_col = rows["retrieved_tokens"].tolist() if "retrieval" in views and budgets else None
    context_col = rows["context_ids"].tolist() if "context" in views else None
    gold_sessions_col = rows["gold_sessions"].tolist() if sessions else None
    sessions_col = rows["retrieved_sessions"].tolist() if sessions else None
    for n, raw_gold in enumerate(golds):
        gold = _unique(_as_list(raw_gold, "gold", n))
        g = set(gold)
        columns["n_gold"].append(len(gold))
        if retrieved_col is not None:
            # Source ids when the row has them (derived memories), else the retrieved ids.
            if sources_col is not None and not _is_missing(sources_col[n]):
                retrieved = _as_list(sources_col[n], "retrieved_source_ids", n)
            else:
                retrieved = _as_list(retrieved_col[n], "retrieved_ids", n)
            items = [_ids(i) for i in retrieved]
            _retrieval_into(columns, items, g, ks)
            prefixes: list[tuple[int, int]] = []
            if budgets:
                tokens = _as_list(tokens_col[n], "retrieved_tokens", n)
                if len(tokens) != len(retrieved):
                    raise MemlabError(f"retrieved_tokens has {len(tokens)} entries for "
                                      f"{len(retrieved)} retrieved items")
                for b in budgets:
                    m = budget_prefix(tokens, b)
                    prefixes.append((b, m))
                    hit, recall = _hit_recall(items[:m], g)
                    columns[f"recall@{b}tok"].append(recall)
                    columns[f"hit_rate@{b}tok"].append(hit)
                    columns[f"tokens@{b}tok"].append(float(sum(int(t) for t in tokens[:m])))
        if context_col is not None:
            ctx = _unique(_as_list(context_col[n], "context_ids", n))
            if not g:
                for name in CONTEXT_METRICS:
                    columns[name].append(NAN)
            else:
                hits = [i for i in ctx if i in g]
                recall = len(set(hits)) / len(g)
                columns["context_hit_rate"].append(float(bool(hits)))
                columns["context_recall"].append(recall)
                columns["context_recall_all"].append(float(recall == 1.0))
                columns["context_relevance_ratio"].append(len(hits) / len(ctx) if ctx else 0.0)
        if sessions_col is not None:
            item_sessions = [_ids(i) for i in _as_list(sessions_col[n], "retrieved_sessions", n)]
            if budgets and len(item_sessions) != len(tokens):
                raise MemlabError(f"row {n}: retrieved_sessions has {len(item_sessions)} items for "
                                  f"{len(tokens)} retrieved_tokens")
            gold_sessions = {str(s) for s in _as_list(gold_sessions_col[n], "gold_sessions", n)}
            session_into(columns, item_sessions, gold_sessions, ks, prefixes)
    out = rows.copy()
    for col in names:
        out[col] = pd.Series(columns[col], index=rows.index, dtype=int if col == "n_gold" else float)
    return out


def _hit_recall(items: list[list[str]], g: set[str]) -> tuple[float, float]:
    """``hit_rate_at_k`` and ``recall_at_k`` of already-cut items (NaN, NaN without gold)."""
    if not g:
        return NAN, NAN
    covered = {i for ids in items for i in ids if i in g}
    return float(any(any(i in g for i in ids) for ids in items)), len(covered) / len(g)


_IDCG: dict[int, float] = {}


def _retrieval_into(columns: dict[str, list[float]], items: list[list[str]], g: set[str],
                    ks: Sequence[int]) -> None:
    """Append ``<metric>@k`` of one row to ``columns``, as ``retrieval_metrics`` computes them."""
    if not g:
        for name in RETRIEVAL_METRICS:
            for k in ks:
                columns[f"{name}@{k}"].append(NAN)
        return
    n_gold = len(g)
    for k in ks:
        top = items[:k]
        covered: set[str] = set()
        relevant = 0
        first = 0
        dcg = 0.0
        for rank, ids in enumerate(top, start=1):
            gold_ids = [i for i in ids if i in g]
            if gold_ids:
                relevant += 1
                if not first:
                    first = rank
                new = set(gold_ids) - covered
                if new:
                    dcg += 1.0 / math.log2(rank + 1)
                    covered |= new
        recall = len(covered) / n_gold
        n_ideal = min(k, n_gold)
        idcg = _IDCG.get(n_ideal)
        if idcg is None:
            idcg = _IDCG[n_ideal] = sum(1.0 / math.log2(r + 1) for r in range(1, n_ideal + 1))
        columns[f"hit_rate@{k}"].append(float(relevant > 0))
        columns[f"recall@{k}"].append(recall)
        columns[f"recall_all@{k}"].append(float(recall == 1.0))
        columns[f"relevance_ratio@{k}"].append(relevant / len(top) if top else 0.0)
        columns[f"ndcg@{k}"].append(dcg / idcg)
        columns[f"mrr@{k}"].append(1.0 / first if first else 0.0)


def _is_missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def metric_columns(df: pd.DataFrame) -> list[str]:
    """The metric columns of ``df`` (as ``compute_metrics`` names them), in column order."""
    return [c for c in df.columns if isinstance(c, str) and _METRIC_COLUMN.match(c) and c != "n_gold"]


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
            import difflib

            close = difflib.get_close_matches(str(absent[0]), metric_columns(df), n=1)
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
