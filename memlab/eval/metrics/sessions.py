"""Session-level retrieval metrics, memlab's own: evidence found at the granularity of sessions.

A ranked list of turns is mapped to the sessions the turns belong to, deduplicated in rank
order, and a question is answered when one of its evidence sessions is among the first k
distinct sessions: *any* turn of an evidence session counts. That is more lenient than
LongMemEval's protocol, which gives the non-evidence turns of an evidence session a label
of their own (they find nothing and take a slot of k); its metrics, under its names, are
``memlab.eval.metrics.longmemeval`` (``lme_recall_any@k`` ...). These are the same numbers
for every dataset with sessions (native, LoCoMo, LongMemEval), computed from two row columns
the replay writes:

- ``gold_sessions``: the probe's evidence sessions G_s (distinct);
- ``retrieved_sessions``: for each ranked item, the session ids of its source turns
  (an item standing for turns of several sessions lists each of them once).

Session ranking
---------------
Walk the items in rank order and, within an item, its sessions in order; keep each session
the first time it appears. The result R = (s_1, s_2, ...) ranks every session by its
first hit. With R_k its first k sessions (all of them when fewer) and G = |G_s|:

- ``session_hit_rate@k``   = 1 if R_k contains a gold session, else 0
- ``session_recall@k``     = |R_k ∩ G_s| / G
- ``session_recall_all@k`` = 1 if G_s ⊆ R_k, else 0
- ``session_ndcg@k``       = DCG_k / IDCG_k, DCG_k = sum_{i<=|R_k|} [s_i in G_s] / log2(i + 1),
  IDCG_k = sum_{i=1..min(k, G)} 1 / log2(i + 1): the binary nDCG of ``ndcg@k`` over
  distinct sessions.

k counts distinct sessions, not items: session_hit_rate@5 may read far more than five
items when the first ones share sessions. R is the ranking of
the items a row holds, so it is the first sessions of the strategy's full ranking only as
far as the row reaches: the replay (``memlab.eval.replay``) retrieves past ``k_max`` items
until they hold min(k_max, sessions observed) distinct sessions, the strategy returns
fewer items than asked, or the depth reaches ``MAX_BUDGET_DEPTH``, so for every k <= k_max
R_k does not depend on how many items ``k_max`` asked for (not for a stochastic strategy,
whose list is kept as retrieved). Where every turn of an evidence session is evidence (no
turn to split off), ``session_hit_rate@k`` and ``session_recall_all@k`` equal LongMemEval's
recall_any@k and recall_all@k (``tests/eval/test_metrics_longmemeval_check.py``).

Token-matched versions
----------------------
With T_B the items kept under a budget of B tokens (the longest prefix whose tokens sum
to at most B, exactly as for ``recall@Btok``) and S_B the union of their sessions:

- ``session_hit_rate@Btok`` = 1 if S_B contains a gold session, else 0
- ``session_recall@Btok``   = |S_B ∩ G_s| / G

A probe with no gold session (G = 0) is unscored: every session metric is NaN.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

from ...base import MemlabError
from .registry import RowView, register_metric, registered
from .cuts import _check_k, budget_prefix

NAN = float("nan")

#: Row columns the session metrics read; they are computed when both are present.
SESSION_COLUMNS = ("gold_sessions", "retrieved_sessions")


def _sessions(item: Any) -> list[str]:
    return [item] if isinstance(item, str) else [str(s) for s in item]


def session_ranking(retrieved_sessions: Sequence[Any]) -> list[str]:
    """The distinct sessions of the ranked items, each at the rank of its first hit."""
    return list(dict.fromkeys(s for item in retrieved_sessions for s in _sessions(item)))


def _gold(gold_sessions: Iterable[Any]) -> set[str]:
    return {str(s) for s in gold_sessions}


def _top(retrieved_sessions: Sequence[Any], k: int | None) -> list[str]:
    _check_k(k)
    ranking = session_ranking(retrieved_sessions)
    return ranking if k is None else ranking[:k]


def session_hit_rate_at_k(retrieved_sessions: Sequence[Any], gold_sessions: Iterable[Any],
                          k: int | None) -> float:
    """1.0 if one of the first k distinct sessions is gold, else 0.0; NaN without gold sessions."""
    g = _gold(gold_sessions)
    if not g:
        return NAN
    return float(any(s in g for s in _top(retrieved_sessions, k)))


def session_recall_at_k(retrieved_sessions: Sequence[Any], gold_sessions: Iterable[Any],
                        k: int | None) -> float:
    """|gold sessions among the first k distinct sessions| / |gold sessions|; NaN without gold."""
    g = _gold(gold_sessions)
    if not g:
        return NAN
    return sum(s in g for s in _top(retrieved_sessions, k)) / len(g)


def session_recall_all_at_k(retrieved_sessions: Sequence[Any], gold_sessions: Iterable[Any],
                            k: int | None) -> float:
    """1.0 if the first k distinct sessions hold every gold session, else 0.0; NaN without gold."""
    r = session_recall_at_k(retrieved_sessions, gold_sessions, k)
    return r if math.isnan(r) else float(r == 1.0)


def session_ndcg_at_k(retrieved_sessions: Sequence[Any], gold_sessions: Iterable[Any],
                      k: int | None) -> float:
    """Binary nDCG over the first k distinct sessions, log2(i + 1) discount (module docstring)."""
    g = _gold(gold_sessions)
    if not g:
        return NAN
    top = _top(retrieved_sessions, k)
    dcg = sum(1.0 / math.log2(i + 1) for i, s in enumerate(top, start=1) if s in g)
    n_ideal = len(g) if k is None else min(k, len(g))
    return dcg / sum(1.0 / math.log2(i + 1) for i in range(1, n_ideal + 1))


def session_metrics(retrieved_sessions: Sequence[Any], gold_sessions: Iterable[Any],
                    ks: Sequence[int]) -> dict[str, float]:
    """``<metric>@k`` for every metric of ``SESSION_METRICS`` and every k."""
    row = RowView(gold=[], gold_sessions=[str(s) for s in dict.fromkeys(gold_sessions)],
                   retrieved_sessions=[_sessions(i) for i in retrieved_sessions])
    return {m.column(k): m.fn(row, k)  # type: ignore[misc]
            for m in registered(batch="sessions", param="k") for k in ks}


def session_budget_metrics(retrieved_sessions: Sequence[Any], tokens: Sequence[int],
                           gold_sessions: Iterable[Any], budgets: Sequence[int]) -> dict[str, float]:
    """``session_hit_rate@Btok`` and ``session_recall@Btok`` for every budget B (module docstring)."""
    if len(tokens) != len(retrieved_sessions):
        raise MemlabError(f"retrieved_tokens has {len(tokens)} entries for {len(retrieved_sessions)} "
                          f"retrieved_sessions items")
    row = RowView(gold=[], tokens=[int(t) for t in tokens],
                   gold_sessions=[str(s) for s in dict.fromkeys(gold_sessions)],
                   retrieved_sessions=[_sessions(i) for i in retrieved_sessions])
    return {m.column(b): m.fn(row, b) for b in budgets  # type: ignore[misc]
            for m in registered(batch="sessions", param="tok")}


_IDCG: dict[int, float] = {}


def session_into(columns: dict[str, list[float]], items: list[list[str]], g: set[str], ks: Sequence[int],
                 prefixes: Sequence[tuple[int, int]] = ()) -> None:
    """Append one row's session metrics to ``columns`` (the functions above, in one pass).

    ``items``: the row's sessions per ranked item; ``g``: its gold sessions; ``prefixes``:
    (budget B, items kept under B) pairs.
    """
    if not g:
        for k in ks:
            for name in SESSION_METRICS:
                columns[f"{name}@{k}"].append(NAN)
        for b, _ in prefixes:
            for name in SESSION_BUDGET_METRICS:
                columns[f"{name}@{b}tok"].append(NAN)
        return
    n_gold = len(g)
    ranking = list(dict.fromkeys(s for item in items for s in item))
    for k in ks:
        found = 0
        dcg = 0.0
        for i, s in enumerate(ranking[:k], start=1):
            if s in g:
                found += 1
                dcg += 1.0 / math.log2(i + 1)
        n_ideal = min(k, n_gold)
        idcg = _IDCG.get(n_ideal)
        if idcg is None:
            idcg = _IDCG[n_ideal] = sum(1.0 / math.log2(i + 1) for i in range(1, n_ideal + 1))
        recall = found / n_gold
        columns[f"session_hit_rate@{k}"].append(float(found > 0))
        columns[f"session_recall@{k}"].append(recall)
        columns[f"session_recall_all@{k}"].append(float(recall == 1.0))
        columns[f"session_ndcg@{k}"].append(dcg / idcg)
    for b, m in prefixes:
        found = len({s for item in items[:m] for s in item} & g)
        columns[f"session_hit_rate@{b}tok"].append(float(found > 0))
        columns[f"session_recall@{b}tok"].append(found / n_gold)


_UNSCORED = "a probe without gold sessions (no gold evidence) is unscored"


def _kept(row: RowView, b: int) -> list[list[str]]:
    return row.retrieved_sessions[:budget_prefix(row.tokens, b)]


# Registration order is column order: the token-matched block, then the @k block.
for _name, _fn in (("session_hit_rate", session_hit_rate_at_k), ("session_recall", session_recall_at_k)):
    register_metric(_name, lambda row, b, _fn=_fn: _fn(_kept(row, b), row.gold_sessions, None), view="budget",
                    param="tok", needs=SESSION_COLUMNS, batch="sessions", unscored=_UNSCORED,
                    doc=f"{_fn.__name__.replace('_at_k', '')} over the sessions of the items kept under B tokens")
for _name, _fn in (("session_hit_rate", session_hit_rate_at_k), ("session_recall", session_recall_at_k),
                   ("session_recall_all", session_recall_all_at_k), ("session_ndcg", session_ndcg_at_k)):
    register_metric(_name, lambda row, k, _fn=_fn: _fn(row.retrieved_sessions, row.gold_sessions, k),
                    view="retrieval", param="k", needs=SESSION_COLUMNS, batch="sessions", unscored=_UNSCORED,
                    doc=(_fn.__doc__ or "").split("\n")[0])

#: Session metric names per k and per token budget, in column order (from the registry).
SESSION_METRICS = tuple(m.name for m in registered(batch="sessions", param="k"))
SESSION_BUDGET_METRICS = tuple(m.name for m in registered(batch="sessions", param="tok"))
