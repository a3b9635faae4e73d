"""``compute_metrics``: every registered metric of the asked views, one column each.

Built-in metrics are filled by their block's batch function (``registry.register_batch``:
``turns``, ``turn_budget``, ``context``, ``sessions``, ``longmemeval``), called once per row
on plain lists, without a pandas Series per row; it computes with the same scoring function
as the metrics' per-row functions (pinned equal by tests). A metric whose block has no batch
function (a user metric) is computed by calling its per-row function on each row's
``RowView``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import pandas as pd

from ...base import MemlabError
from .cuts import _check_k, budget_prefix
from .longmemeval import LONGMEMEVAL_COLUMNS
from .registry import Metric, RowView, batch_fill, expand, registered
from .sessions import SESSION_COLUMNS
from .turns import NAN, REQUIRED_COLUMNS, _ids, _unique

#: Which ``compute_metrics`` view computes the metrics of each registry view (answer and
#: lifecycle metrics with a per-row function are computed whatever the view).
_VIEW_OF = {"retrieval": "retrieval", "budget": "retrieval", "context": "context"}


_NO_ROW: dict[str, Any] = {}  # the raw row, read by user metrics only


def _is_missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


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


def selected_metrics(columns: Sequence[Any], views: Sequence[str]) -> list[Metric]:
    """The registered metrics ``compute_metrics`` computes for rows with ``columns``."""
    present = set(columns)
    return [m for m in registered() if m.fn is not None and (m.view not in _VIEW_OF or _VIEW_OF[m.view] in views)
            and all(c in present for c in m.needs)]


def compute_metrics(rows: pd.DataFrame, ks: Sequence[int] = (1, 3, 5, 10),
                    view: str | Sequence[str] = ("retrieval", "context"),
                    budgets: Sequence[int] = ()) -> pd.DataFrame:
    """Per-probe metric columns added to a copy of ``rows``.

    Reads ``gold`` (list of turn ids) and, for the "retrieval" view, ``retrieved_source_ids``
    (list of lists of source ids per ranked item) or, when that column is absent,
    ``retrieved_ids`` (also for a row whose ``retrieved_source_ids`` is None); for the
    "context" view, ``context_ids``; with ``budgets``, ``retrieved_tokens``; with
    ``gold_sessions`` and ``retrieved_sessions``, the session metrics. Adds ``n_gold`` and
    one column per registered metric and k / B (``recall@5``, ``mrr@5``,
    ``recall@512tok``, ``context_recall``, ``session_hit_rate@5``...), in registry order.
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
    metrics = selected_metrics(list(rows.columns), views)
    fills = [f for f in dict.fromkeys(batch_fill(m.batch) for m in metrics) if f is not None]
    user = [m for m in metrics if batch_fill(m.batch) is None]
    needed = {c for m in metrics if batch_fill(m.batch) is not None for c in m.needs}
    names = ["n_gold"] + expand(metrics, ks, budgets)
    retrieval = "retrieval" in views
    sessions = set(SESSION_COLUMNS) <= needed
    lme = set(LONGMEMEVAL_COLUMNS) <= needed and retrieval
    has_sources = "retrieved_source_ids" in rows.columns
    columns: dict[str, list[float]] = {name: [] for name in names}
    golds = rows["gold"].tolist()
    retrieved_col = rows["retrieved_ids"].tolist() if retrieval else None
    sources_col = rows["retrieved_source_ids"].tolist() if retrieval and has_sources else None
    tokens_col = rows["retrieved_tokens"].tolist() if (retrieval and budgets) or (
        user and "retrieved_tokens" in rows.columns) else None
    context_col = rows["context_ids"].tolist() if "context" in views else None
    gold_sessions_col = rows["gold_sessions"].tolist() if sessions or (user and "gold_sessions" in rows) else None
    sessions_col = rows["retrieved_sessions"].tolist() if sessions or (
        user and "retrieved_sessions" in rows) else None
    lme_cols = {c: rows[c].tolist() for c in LONGMEMEVAL_COLUMNS} if lme or (
        user and all(c in rows for c in LONGMEMEVAL_COLUMNS)) else None
    records = rows.to_dict("records") if user else None
    user_columns = [(m, m.column(v), v) for m in user for v in {None: [None], "k": ks, "tok": budgets}[m.param]]
    for n, raw_gold in enumerate(golds):
        gold = _unique(_as_list(raw_gold, "gold", n))
        columns["n_gold"].append(len(gold))
        items: list[list[str]] = []
        tokens: list[Any] = []
        if retrieved_col is not None:
            # Source ids when the row has them (derived memories), else the retrieved ids.
            if sources_col is not None and not _is_missing(sources_col[n]):
                retrieved = _as_list(sources_col[n], "retrieved_source_ids", n)
            else:
                retrieved = _as_list(retrieved_col[n], "retrieved_ids", n)
            items = [_ids(i) for i in retrieved]
            if tokens_col is not None:
                tokens = _as_list(tokens_col[n], "retrieved_tokens", n)
            if budgets and len(tokens) != len(retrieved):
                raise MemlabError(f"retrieved_tokens has {len(tokens)} entries for "
                                  f"{len(retrieved)} retrieved items")
        ctx: list[str] = []
        if context_col is not None:
            ctx = _unique(_as_list(context_col[n], "context_ids", n))
        item_sessions: list[list[str]] = []
        gold_sessions: list[str] = []
        if sessions_col is not None:
            item_sessions = [_ids(i) for i in _as_list(sessions_col[n], "retrieved_sessions", n)]
            gold_sessions = _unique(_as_list(gold_sessions_col[n], "gold_sessions", n))  # type: ignore[index]
        if sessions and budgets and len(item_sessions) != len(tokens):
            raise MemlabError(f"row {n}: retrieved_sessions has {len(item_sessions)} items for "
                              f"{len(tokens)} retrieved_tokens")
        source_sessions: list[list[Any]] = []
        gold_turn_sessions: list[str] = []
        if lme_cols is not None:
            source_sessions = [[None if _is_missing(s) else str(s) for s in _as_list(i, "retrieved_source_sessions", n)]
                               for i in _as_list(lme_cols["retrieved_source_sessions"][n],
                                                 "retrieved_source_sessions", n)]
            gold_turn_sessions = _unique(_as_list(lme_cols["gold_turn_sessions"][n], "gold_turn_sessions", n))
            if len(source_sessions) != len(items) or any(len(a) != len(b) for a, b in zip(source_sessions, items)):
                raise MemlabError(f"row {n}: retrieved_source_sessions must hold one session per source id of "
                                  f"each item ({[len(i) for i in items]}), got {[len(s) for s in source_sessions]}")
        row = RowView(gold=gold, items=items, tokens=[int(t) for t in tokens], context=ctx,
                      gold_sessions=gold_sessions, retrieved_sessions=item_sessions,
                      gold_turn_sessions=gold_turn_sessions, source_sessions=source_sessions,
                      row=records[n] if records is not None else _NO_ROW)
        for fill in fills:
            fill(columns, row, ks, budgets)
        for metric, col, value in user_columns:
            columns[col].append(_call(metric, row, value, col, n))
    # one concat, not a column insert per metric (dozens of inserts fragment the frame)
    new = pd.DataFrame({col: pd.Series(columns[col], index=rows.index, dtype=int if col == "n_gold" else float)
                        for col in names}, index=rows.index)
    return pd.concat([rows.drop(columns=[c for c in names if c in rows.columns]), new], axis=1)


def _call(metric: Metric, row: RowView, param: int | None, column: str, n: int) -> float:
    try:
        value = metric.fn(row, param)  # type: ignore[misc]
    except Exception as exc:
        raise MemlabError(f"metric {metric.key!r} failed on row {n} ({column}): {type(exc).__name__}: {exc}") \
            from exc
    if value is None:
        return NAN
    try:
        return float(value)
    except (TypeError, ValueError):
        raise MemlabError(f"metric {metric.key!r} returned {value!r} on row {n}; expected a number") from None
