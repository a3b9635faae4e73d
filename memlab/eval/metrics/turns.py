"""Turn-level metrics: the ranked list (@k), the ranked list under a token budget (@Btok)
and the built context. Formulas: ``memlab.eval.metrics`` (the package docstring).

Each public function is the reference for one metric; the built-ins are registered here
(``register_metric``) with per-row functions that call them, and ``retrieval_into`` is the
one-pass path ``compute_metrics`` uses for a whole row at once (pinned equal by tests).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any


from ...base import MemlabError
from .cuts import _check_k, budget_prefix
from .registry import Metric, ProbeRow, register_metric, registered

Item = str | Sequence[str]
NAN = float("nan")
#: Row columns the metrics of each view read.
REQUIRED_COLUMNS = {"retrieval": ("gold", "retrieved_ids"), "context": ("gold", "context_ids")}


def _ids(item: Item) -> list[str]:
    return [item] if isinstance(item, str) else [str(i) for i in item]


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


def budget_metrics(retrieved: Sequence[Item], tokens: Sequence[int], gold: Iterable[str],
                   budgets: Sequence[int]) -> dict[str, float]:
    """``recall@Btok``, ``hit_rate@Btok`` and ``tokens@Btok`` for every budget B (package docstring):
    every registered turn-level @Btok metric, by its per-row function."""
    if len(tokens) != len(retrieved):
        raise MemlabError(f"retrieved_tokens has {len(tokens)} entries for {len(retrieved)} retrieved items")
    row = ProbeRow(gold=_unique(gold), items=[_ids(i) for i in retrieved], tokens=[int(t) for t in tokens])
    return {m.column(b): m.fn(row, b) for b in budgets for m in _batch("turn_budget")}  # type: ignore[misc]


def _unique(ids: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(str(i) for i in ids))


def context_metrics(context_ids: Sequence[str], gold: Iterable[str]) -> dict[str, float]:
    """The context view: hit rate, recall, recall_all, relevance ratio over the distinct context ids
    (every registered context metric of the built-in batch, by its per-row function)."""
    row = ProbeRow(gold=_unique(gold), context=_unique(context_ids))
    return {m.name: m.fn(row, None) for m in _batch("context")}  # type: ignore[misc]


def retrieval_metrics(retrieved: Sequence[Item], gold: Iterable[str], ks: Sequence[int]) -> dict[str, float]:
    """``<metric>@k`` for every built-in turn-level @k metric (``RETRIEVAL_METRICS``) and every k."""
    row = ProbeRow(gold=_unique(gold), items=[_ids(i) for i in retrieved])
    return {m.column(k): m.fn(row, k) for m in _batch("turns") for k in ks}  # type: ignore[misc]


def _batch(name: str) -> list[Metric]:
    return registered(batch=name)


def _hit_recall(items: list[list[str]], g: set[str]) -> tuple[float, float]:
    """``hit_rate_at_k`` and ``recall_at_k`` of already-cut items (NaN, NaN without gold)."""
    if not g:
        return NAN, NAN
    covered = {i for ids in items for i in ids if i in g}
    return float(any(any(i in g for i in ids) for ids in items)), len(covered) / len(g)


_IDCG: dict[int, float] = {}


def retrieval_into(columns: dict[str, list[float]], items: list[list[str]], g: set[str],
                    ks: Sequence[int]) -> None:
    """Append ``<metric>@k`` of one row to ``columns``, as ``retrieval_metrics`` computes them."""
    if not g:
        for name in _K_NAMES:
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




def _budget_prefix_of(row: ProbeRow, b: int) -> list[list[str]]:
    return row.items[:budget_prefix(row.tokens, b)]


_UNSCORED = "a probe without gold evidence is unscored"
# Registration order is column order (``registry.expand``): the token-matched block first.
for _name, _fn, _bounded in (
        ("recall", lambda row, b: recall_at_k(_budget_prefix_of(row, b), row.gold, None), True),
        ("hit_rate", lambda row, b: hit_rate_at_k(_budget_prefix_of(row, b), row.gold, None), True),
        ("tokens", lambda row, b: float(sum(row.tokens[:budget_prefix(row.tokens, b)])), False)):
    register_metric(_name, _fn, view="budget", param="tok", bounded=_bounded, batch="turn_budget",
                    brief=_name == "recall",
                    unscored="defined for every probe" if _name == "tokens" else _UNSCORED,
                    doc=f"{_name} of the items kept under a budget of B tokens")
for _name, _fn in (("hit_rate", hit_rate_at_k), ("recall", recall_at_k), ("recall_all", recall_all_at_k),
                   ("relevance_ratio", relevance_ratio_at_k), ("ndcg", ndcg_at_k), ("mrr", mrr_at_k)):
    register_metric(_name, lambda row, k, _fn=_fn: _fn(row.items, row.gold, k), view="retrieval", param="k",
                    batch="turns", brief=_name in ("hit_rate", "recall", "relevance_ratio", "mrr"),
                    unscored=_UNSCORED, doc=(_fn.__doc__ or "").split("\n")[0])
for _name, _fn in (("context_hit_rate", hit_rate_at_k), ("context_recall", recall_at_k),
                   ("context_recall_all", recall_all_at_k), ("context_relevance_ratio", relevance_ratio_at_k)):
    register_metric(_name, lambda row, _, _fn=_fn: _fn(row.context, row.gold, None), view="context",
                    batch="context", brief=_name == "context_recall", unscored=_UNSCORED,
                    doc=f"{_fn.__name__.replace('_at_k', '')} over the distinct source turns of the built context")

#: The built-in metric names of each block, in column order (derived from the registry).
_K_NAMES = tuple(m.name for m in registered(batch="turns"))


def budget_into(columns: dict[str, list[float]], items: list[list[str]], g: set[str], tokens: list[Any],
                budgets: Sequence[int]) -> list[tuple[int, int]]:
    """Append one row's ``<metric>@Btok`` to ``columns`` (as ``budget_metrics``); the
    (B, items kept) pairs, which the session metrics reuse."""
    prefixes = []
    for b in budgets:
        m = budget_prefix(tokens, b)
        prefixes.append((b, m))
        hit, recall = _hit_recall(items[:m], g)
        columns[f"recall@{b}tok"].append(recall)
        columns[f"hit_rate@{b}tok"].append(hit)
        columns[f"tokens@{b}tok"].append(float(sum(int(t) for t in tokens[:m])))
    return prefixes


def context_into(columns: dict[str, list[float]], ctx: list[str], g: set[str]) -> None:
    """Append one row's context metrics to ``columns`` (as ``context_metrics``); ``ctx`` distinct."""
    if not g:
        for name in _CONTEXT_NAMES:
            columns[name].append(NAN)
        return
    hits = [i for i in ctx if i in g]
    recall = len(set(hits)) / len(g)
    columns["context_hit_rate"].append(float(bool(hits)))
    columns["context_recall"].append(recall)
    columns["context_recall_all"].append(float(recall == 1.0))
    columns["context_relevance_ratio"].append(len(hits) / len(ctx) if ctx else 0.0)


_CONTEXT_NAMES = tuple(m.name for m in registered(batch="context"))
