"""Diagnosis: why each probe missed, from the replay rows alone (``miss_reasons``), counted by
group (``miss_counts``) and crossed between two runs (``miss_crosstab``).

Reads replay rows (one per probe; see ``memlab.eval.replay``): ``gold``, ``retrieved_ids``,
``retrieved_source_ids``, ``retrieved_scores``, ``retrieved_tokens`` and ``context_ids``.

Ranked items, gold and the cut
------------------------------
As in ``memlab.eval.metrics``: item i of the ranked list stands for the turns
``retrieved_source_ids[i]`` (``[retrieved_ids[i]]`` when the row has no source ids) and is
**gold** when one of them is a gold turn. The list is as deep as the replay asked for
(``k_max``, deeper with token budgets): its **depth** is its length. With a cut-off ``k``
and a token budget ``B`` (each may be None: no limit) the items **kept** are the first
``min(k, m_B)``, where ``m_B = budget_prefix(retrieved_tokens, B)`` is the longest prefix
whose tokens sum to at most B. ``first_gold_rank`` r is the 1-based rank of the first gold
item in the whole list (None when none is).

Why it missed
-------------
Every scored probe (gold given, no ``error``) gets one ``reason``, checked in this order:

- ``not_retrieved``: no gold item in the ranked list (r is None), within the depth replayed;
- ``below_k``: r > k;
- ``cut_by_budget``: r <= k (or k is None) but r > m_B: retrieved, then cut by the budget;
- ``found``: r <= min(k, m_B).

So the share of ``found`` is ``hit_rate@k`` (no budget) or ``hit_rate@Btok`` (k None),
over the same probes. ``miss_counts`` counts the reasons by category or question type;
``miss_crosstab`` crosses the reasons of two runs probe by probe.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from ..base import MemlabError
from .compare import KEYS
from .metrics import budget_prefix
from .question_form import question_type

__all__ = ["REASONS", "cutoff_of", "miss_counts", "miss_crosstab", "miss_reasons"]

#: The reasons, from the worst to found (the order of ``miss_counts`` columns).
REASONS = ("not_retrieved", "below_k", "cut_by_budget", "found")
_ROW_COLUMNS = ("gold", "retrieved_ids")


def check_cut(k: int | None, budget: int | None) -> None:
    if k is not None and (isinstance(k, bool) or not isinstance(k, int) or k < 1):
        raise MemlabError(f"k must be a positive int or None, got {k!r}")
    if budget is not None and (isinstance(budget, bool) or not isinstance(budget, int) or budget < 1):
        raise MemlabError(f"budget must be a positive number of tokens or None, got {budget!r}")


def is_missing(v: Any) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v))


def as_list(v: Any) -> list[Any]:
    return [] if is_missing(v) else list(v)


def ranked_items(row: dict[str, Any]) -> list[list[str]]:
    """The ranked items' turn ids: source ids when the row has them, else the retrieved ids."""
    ids = as_list(row.get("retrieved_ids"))
    sources = row.get("retrieved_source_ids")
    if not is_missing(sources):
        return [[str(i) for i in s] if not isinstance(s, str) else [s] for s in sources]
    return [[str(i)] for i in ids]


def _cut(row: dict[str, Any], n_items: int, k: int | None, budget: int | None) -> int:
    kept = n_items if k is None else min(k, n_items)
    if budget is not None:
        tokens = as_list(row.get("retrieved_tokens"))
        if len(tokens) != n_items:
            raise MemlabError(f"dialogue {row.get('dialogue_id')!r}, probe {row.get('probe_id')!r}: a budget "
                              f"needs retrieved_tokens for every item ({len(tokens)} for {n_items})")
        kept = min(kept, budget_prefix(tokens, budget))
    return kept


def diagnose(row: dict[str, Any], k: int | None, budget: int | None) -> dict[str, Any]:
    """depth, first_gold_rank, kept, reason (None when unscored or failed) of one row."""
    gold = {str(g) for g in as_list(row.get("gold"))}
    items = ranked_items(row)
    rank = next((i for i, ids in enumerate(items, start=1) if gold & set(ids)), None) if gold else None
    kept = _cut(row, len(items), k, budget)
    failed = not is_missing(row.get("error")) if "error" in row else False
    if not gold or failed:
        reason = None
    elif rank is None:
        reason = "not_retrieved"
    elif k is not None and rank > k:
        reason = "below_k"
    elif rank > kept:
        reason = "cut_by_budget"
    else:
        reason = "found"
    return {"depth": len(items), "first_gold_rank": rank, "kept": kept, "reason": reason}


def replay_rows(results: Any, what: str = "results") -> pd.DataFrame:
    if isinstance(results, pd.DataFrame):
        df = results
    elif isinstance(results, (str, Path)):
        from .results import load_results

        df = load_results(str(results))
    else:
        raise MemlabError(f"{what} must be a DataFrame or a results file path, got {type(results).__name__}")
    missing = [c for c in (*KEYS, *_ROW_COLUMNS) if c not in df.columns]
    if missing:
        raise MemlabError(f"{what}: not replay rows (no column(s) {missing}); pass the per-probe table of "
                          f"replay / memlab eval --output / a sweep's results.parquet")
    return df


def miss_reasons(results: Any, k: int | None = 5, budget: int | None = None) -> pd.DataFrame:
    """Why each scored probe missed (module docstring): one row per scored probe (and run).

    ``results``: replay rows (a DataFrame or a results file), one or several strategies.
    Columns: [strategy], dialogue_id, probe_id, category, question_type, n_gold, depth,
    first_gold_rank (nullable int), kept, reason (ordered categorical of ``REASONS``).
    Unscored probes (no gold) and failed ones (``error`` set) are left out.
    """
    check_cut(k, budget)
    df = replay_rows(results)
    out = []
    for row in df.to_dict("records"):
        d = diagnose(row, k, budget)
        if d["reason"] is None:
            continue
        out.append({**({"strategy": row["strategy"]} if "strategy" in row else {}),
                    "dialogue_id": row["dialogue_id"], "probe_id": row["probe_id"],
                    "category": row.get("category"), "question_type": question_type(row.get("query")),
                    "n_gold": len({str(g) for g in as_list(row["gold"])}), **d})
    columns = (["strategy"] if "strategy" in df.columns else []) + [
        "dialogue_id", "probe_id", "category", "question_type", "n_gold", "depth", "first_gold_rank", "kept",
        "reason"]
    frame = pd.DataFrame(out, columns=columns)
    frame["first_gold_rank"] = frame["first_gold_rank"].astype("Int64")
    frame["reason"] = pd.Categorical(frame["reason"], categories=list(REASONS), ordered=True)
    return frame


def miss_counts(reasons: pd.DataFrame, by: str | Sequence[str] = "category", share: bool = False) -> pd.DataFrame:
    """Probes per reason (columns ``REASONS``) for each group of ``by`` (and strategy), plus ``n``.

    ``reasons`` is a ``miss_reasons`` table. Rows: one per strategy and group, then one
    with the group "all". With ``share`` the counts are divided by ``n`` (rows sum to 1).
    """
    by = [by] if isinstance(by, str) else list(by)
    keys = (["strategy"] if "strategy" in reasons.columns else []) + by
    missing = [c for c in keys + ["reason"] if c not in reasons.columns]
    if missing:
        raise MemlabError(f"miss_counts: no column(s) {missing} (pass a miss_reasons table); "
                          f"columns: {', '.join(map(str, reasons.columns))}")
    frame = reasons.copy()
    for col in by:
        frame[col] = frame[col].astype(object).where(frame[col].notna(), "(none)").astype(str)
    reason = pd.Categorical(frame["reason"], categories=list(REASONS), ordered=True)
    parts = [pd.crosstab([frame[c] for c in keys], reason, dropna=False)]
    total = frame.assign(**{c: "all" for c in by})
    parts.insert(0, pd.crosstab([total[c] for c in keys], reason, dropna=False))
    table = pd.concat(parts).reindex(columns=list(REASONS), fill_value=0)
    table = table[table.sum(axis=1) > 0]
    table.columns = list(REASONS)
    table.columns.name = None
    table["n"] = table[list(REASONS)].sum(axis=1)
    if share:
        table[list(REASONS)] = table[list(REASONS)].div(table["n"], axis=0)
    table = table.reset_index()
    if "strategy" in keys:  # each strategy's rows together, its "all" row first
        order = list(dict.fromkeys(frame["strategy"]))
        table = table.assign(_s=table["strategy"].map(order.index)).sort_values("_s", kind="stable")
        table = table.drop(columns="_s").reset_index(drop=True)
    return table


def miss_crosstab(reasons: pd.DataFrame, a: str | None = None, b: str | None = None) -> pd.DataFrame:
    """Probes by the reason of run ``a`` (rows) and of run ``b`` (columns), paired by probe.

    ``reasons``: a ``miss_reasons`` table of two strategies (``a``/``b`` name them; default:
    the two strategies, in order of appearance). Only probes both runs scored count.
    """
    if "strategy" not in reasons.columns:
        raise MemlabError("miss_crosstab: the reasons need a 'strategy' column (two runs)")
    names = list(dict.fromkeys(reasons["strategy"].astype(str)))
    if a is None and b is None:
        if len(names) != 2:
            raise MemlabError(f"miss_crosstab: the reasons hold {len(names)} strategies ({names}); name two with a=, b=")
        a, b = names
    for name in (a, b):
        if name not in names:
            raise MemlabError(f"miss_crosstab: no strategy {name!r} in the reasons; strategies: {names}")
    side = {n: reasons[reasons["strategy"].astype(str) == n].set_index(list(KEYS))["reason"] for n in (a, b)}
    joined = pd.concat([side[a].rename(str(a)), side[b].rename(str(b))], axis=1, join="inner")
    table = pd.crosstab(pd.Categorical(joined[str(a)], categories=list(REASONS)),
                        pd.Categorical(joined[str(b)], categories=list(REASONS)), dropna=False)
    table.index = pd.Index(list(REASONS), name=str(a))
    table.columns = pd.Index(list(REASONS), name=str(b))
    return table


def cutoff_of(metric: str) -> tuple[int | None, int | None]:
    """The (k, budget) cut a metric reads: ``recall@5`` -> (5, None), ``recall@256tok`` ->
    (None, 256), anything else (``context_recall``, ``answer_f1``, an unregistered name) ->
    (None, None). The metric registry parses the name (``parse_column``)."""
    from .metrics import parse_column

    parsed = parse_column(str(metric))
    return (None, None) if parsed is None else (parsed.k, parsed.budget)
