"""Turn-level metrics: the ranked list (@k), the ranked list under a token budget (@Btok)
and the built context. Formulas: ``memlab.eval.metrics`` (the package docstring).

Their arithmetic is written once, in ``turn_scores`` (every turn-level score of a cut list in
one pass). Each public function is the reference for one metric and reads its score from
it; the built-ins are registered here (``register_metric``) with per-row functions that call
the references, and each block (``turn_budget``, ``turns``, ``context``) registers beside
them its batch function (``register_batch``), which ``compute_metrics`` calls once per row and
which calls ``turn_scores`` too (tests pin the columns to the per-row functions).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

from ...base import MemlabError
from .cuts import _check_k, budget_prefix
from .registry import Metric, RowView, register_batch, register_metric, registered

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


#: The scores ``turn_scores`` returns, in order.
SCORES = ("hit_rate", "recall", "recall_all", "relevance_ratio", "ndcg", "mrr")
_IDCG: dict[int, float] = {}


def idcg(n_ideal: int) -> float:
    """sum_{i=1..n_ideal} 1 / log2(i + 1), the ideal DCG of ``n_ideal`` relevant items (cached)."""
    value = _IDCG.get(n_ideal)
    if value is None:
        value = _IDCG[n_ideal] = sum(1.0 / math.log2(r + 1) for r in range(1, n_ideal + 1))
    return value


def turn_scores(top: Sequence[Sequence[str]], g: set[str], n_ideal: int) -> tuple[float, ...]:
    """Every turn-level score of the already-cut items ``top`` against the non-empty gold set
    ``g``, in ``SCORES`` order (formulas: the package docstring); ``n_ideal``: the relevant
    items an ideal list of this length holds, min(k, |gold|) (|gold| uncut)."""
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
    recall = len(covered) / len(g)
    return (float(relevant > 0), recall, float(recall == 1.0), relevant / len(top) if top else 0.0,
            dcg / idcg(n_ideal), 1.0 / first if first else 0.0)


_UNSCORED_ROW = (NAN,) * len(SCORES)


def _scores_at_k(retrieved: Sequence[Item], gold: Iterable[str], k: int | None) -> tuple[float, ...]:
    top = _top(retrieved, k)
    g = _gold(gold)
    if not g:
        return _UNSCORED_ROW
    return turn_scores(top, g, len(g) if k is None else min(k, len(g)))


def hit_rate_at_k(retrieved: Sequence[Item], gold: Iterable[str], k: int | None) -> float:
    """1.0 if any of the first k items is relevant, else 0.0; NaN when gold is empty."""
    return _scores_at_k(retrieved, gold, k)[0]


def recall_at_k(retrieved: Sequence[Item], gold: Iterable[str], k: int | None) -> float:
    """|gold ids covered by the first k items| / |gold|; NaN when gold is empty."""
    return _scores_at_k(retrieved, gold, k)[1]


def recall_all_at_k(retrieved: Sequence[Item], gold: Iterable[str], k: int | None) -> float:
    """1.0 if the first k items cover every gold id, else 0.0; NaN when gold is empty."""
    return _scores_at_k(retrieved, gold, k)[2]


def relevance_ratio_at_k(retrieved: Sequence[Item], gold: Iterable[str], k: int | None) -> float:
    """Relevant items among the first k / number of items among the first k (precision).

    NaN when gold is empty (unscored); 0.0 when nothing was retrieved.
    """
    return _scores_at_k(retrieved, gold, k)[3]


def ndcg_at_k(retrieved: Sequence[Item], gold: Iterable[str], k: int | None) -> float:
    """Binary-gain nDCG with log2 discount (see the module docstring); NaN if no gold."""
    return _scores_at_k(retrieved, gold, k)[4]


def mrr_at_k(retrieved: Sequence[Item], gold: Iterable[str], k: int | None) -> float:
    """1 / (1-based rank of the first relevant item among the first k), 0.0 if none; NaN if no gold."""
    return _scores_at_k(retrieved, gold, k)[5]


def budget_metrics(retrieved: Sequence[Item], tokens: Sequence[int], gold: Iterable[str],
                   budgets: Sequence[int]) -> dict[str, float]:
    """``recall@Btok``, ``hit_rate@Btok`` and ``tokens@Btok`` for every budget B (package docstring):
    every registered turn-level @Btok metric, by its per-row function."""
    if len(tokens) != len(retrieved):
        raise MemlabError(f"retrieved_tokens has {len(tokens)} entries for {len(retrieved)} retrieved items")
    row = RowView(gold=_unique(gold), items=[_ids(i) for i in retrieved], tokens=[int(t) for t in tokens])
    return {m.column(b): m.fn(row, b) for b in budgets for m in _batch("turn_budget")}  # type: ignore[misc]


def _unique(ids: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(str(i) for i in ids))


def context_metrics(context_ids: Sequence[str], gold: Iterable[str]) -> dict[str, float]:
    """The context view: hit rate, recall, recall_all, relevance ratio over the distinct context ids
    (every registered context metric of the built-in batch, by its per-row function)."""
    row = RowView(gold=_unique(gold), context=_unique(context_ids))
    return {m.name: m.fn(row, None) for m in _batch("context")}  # type: ignore[misc]


def retrieval_metrics(retrieved: Sequence[Item], gold: Iterable[str], ks: Sequence[int]) -> dict[str, float]:
    """``<metric>@k`` for every built-in turn-level @k metric (``RETRIEVAL_METRICS``) and every k."""
    row = RowView(gold=_unique(gold), items=[_ids(i) for i in retrieved])
    return {m.column(k): m.fn(row, k) for m in _batch("turns") for k in ks}  # type: ignore[misc]


def _batch(name: str) -> list[Metric]:
    return registered(batch=name)


def _budget_prefix_of(row: RowView, b: int) -> list[list[str]]:
    return row.items[:budget_prefix(row.tokens, b)]


# -- the built-ins: per-row functions, and each block's batch function beside them --------------
_UNSCORED = "a probe without gold evidence is unscored"
#: The per-row functions of the @k block, by score (``SCORES`` order is their column order).
_AT_K = dict(zip(SCORES, (hit_rate_at_k, recall_at_k, recall_all_at_k, relevance_ratio_at_k, ndcg_at_k, mrr_at_k)))
#: The context block: the first four scores over the distinct context ids, each id one item.
_CONTEXT = ("context_hit_rate", "context_recall", "context_recall_all", "context_relevance_ratio")

# Registration order is column order (``registry.expand``): the token-matched block first.
for _name, _fn, _bounded in (
        ("recall", lambda row, b: recall_at_k(_budget_prefix_of(row, b), row.gold, None), True),
        ("hit_rate", lambda row, b: hit_rate_at_k(_budget_prefix_of(row, b), row.gold, None), True),
        ("tokens", lambda row, b: float(sum(row.tokens[:budget_prefix(row.tokens, b)])), False)):
    register_metric(_name, _fn, view="budget", param="tok", bounded=_bounded, batch="turn_budget",
                    brief=_name == "recall",
                    unscored="defined for every probe" if _name == "tokens" else _UNSCORED,
                    doc=f"{_name} of the items kept under a budget of B tokens")


@register_batch("turn_budget")
def _fill_budget(columns: dict[str, list[float]], row: RowView, ks: Sequence[int], budgets: Sequence[int]) -> None:
    g = set(row.gold)
    n_gold = len(g)
    for b in budgets:
        m = row.kept(b)
        hit, recall = turn_scores(row.items[:m], g, n_gold)[:2] if g else (NAN, NAN)
        columns[f"recall@{b}tok"].append(recall)
        columns[f"hit_rate@{b}tok"].append(hit)
        columns[f"tokens@{b}tok"].append(float(sum(row.tokens[:m])))


for _name, _fn in _AT_K.items():
    register_metric(_name, lambda row, k, _fn=_fn: _fn(row.items, row.gold, k), view="retrieval", param="k",
                    batch="turns", brief=_name in ("hit_rate", "recall", "relevance_ratio", "mrr"),
                    unscored=_UNSCORED, doc=(_fn.__doc__ or "").split("\n")[0])


@register_batch("turns")
def _fill_turns(columns: dict[str, list[float]], row: RowView, ks: Sequence[int], budgets: Sequence[int]) -> None:
    g = set(row.gold)
    n_gold = len(g)
    for k in ks:
        scores = turn_scores(row.items[:k], g, min(k, n_gold)) if g else _UNSCORED_ROW
        for name, value in zip(SCORES, scores):
            columns[f"{name}@{k}"].append(value)


for _name, _fn in zip(_CONTEXT, _AT_K.values()):
    register_metric(_name, lambda row, _, _fn=_fn: _fn(row.context, row.gold, None), view="context",
                    batch="context", brief=_name == "context_recall", unscored=_UNSCORED,
                    doc=f"{_fn.__name__.replace('_at_k', '')} over the distinct source turns of the built context")


@register_batch("context")
def _fill_context(columns: dict[str, list[float]], row: RowView, ks: Sequence[int], budgets: Sequence[int]) -> None:
    g = set(row.gold)
    scores = turn_scores([[i] for i in row.context], g, len(g)) if g else _UNSCORED_ROW
    for name, value in zip(_CONTEXT, scores):
        columns[name].append(value)
