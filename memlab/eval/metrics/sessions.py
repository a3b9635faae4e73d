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
recall_any@k and recall_all@k (``tests/eval/metrics/test_longmemeval.py``).

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
from .cuts import _check_k, budget_prefix
from .registry import RowView, register_batch, register_metric, registered
from .turns import idcg

NAN = float("nan")

#: Row columns the session metrics read; they are computed when both are present.
SESSION_COLUMNS = ("gold_sessions", "retrieved_sessions")


def _sessions(item: Any) -> list[str]:
    return [item] if isinstance(item, str) else [str(s) for s in item]


def session_ranking(retrieved_sessions: Sequence[Any]) -> list[str]:
    """The distinct sessions of the ranked items, each at the rank of its first hit."""
    return _ranking([_sessions(item) for item in retrieved_sessions])


def _ranking(items: Sequence[Sequence[str]]) -> list[str]:
    """``session_ranking`` of items already lists of session ids (a ``RowView``'s)."""
    return list(dict.fromkeys(s for item in items for s in item))


def _gold(gold_sessions: Iterable[Any]) -> set[str]:
    return {str(s) for s in gold_sessions}


#: The scores ``session_scores`` returns, in order.
SCORES = ("session_hit_rate", "session_recall", "session_recall_all", "session_ndcg")
_UNSCORED_ROW = (NAN,) * len(SCORES)


def session_scores(top: Sequence[str], g: set[str], n_ideal: int) -> tuple[float, ...]:
    """Every session score of the already-cut distinct sessions ``top`` against the non-empty
    gold sessions ``g``, in ``SCORES`` order (module docstring); ``n_ideal``: min(k, |G_s|)
    (|G_s| uncut)."""
    found = 0
    dcg = 0.0
    for i, s in enumerate(top, start=1):
        if s in g:
            found += 1
            dcg += 1.0 / math.log2(i + 1)
    recall = found / len(g)
    return float(found > 0), recall, float(recall == 1.0), dcg / idcg(n_ideal)


def _scores_at_k(retrieved_sessions: Sequence[Any], gold_sessions: Iterable[Any], k: int | None) -> tuple[float, ...]:
    _check_k(k)
    g = _gold(gold_sessions)
    if not g:
        return _UNSCORED_ROW
    ranking = session_ranking(retrieved_sessions)
    return session_scores(ranking if k is None else ranking[:k], g, len(g) if k is None else min(k, len(g)))


def session_hit_rate_at_k(retrieved_sessions: Sequence[Any], gold_sessions: Iterable[Any],
                          k: int | None) -> float:
    """1.0 if one of the first k distinct sessions is gold, else 0.0; NaN without gold sessions."""
    return _scores_at_k(retrieved_sessions, gold_sessions, k)[0]


def session_recall_at_k(retrieved_sessions: Sequence[Any], gold_sessions: Iterable[Any],
                        k: int | None) -> float:
    """|gold sessions among the first k distinct sessions| / |gold sessions|; NaN without gold."""
    return _scores_at_k(retrieved_sessions, gold_sessions, k)[1]


def session_recall_all_at_k(retrieved_sessions: Sequence[Any], gold_sessions: Iterable[Any],
                            k: int | None) -> float:
    """1.0 if the first k distinct sessions hold every gold session, else 0.0; NaN without gold."""
    return _scores_at_k(retrieved_sessions, gold_sessions, k)[2]


def session_ndcg_at_k(retrieved_sessions: Sequence[Any], gold_sessions: Iterable[Any],
                      k: int | None) -> float:
    """Binary nDCG over the first k distinct sessions, log2(i + 1) discount (module docstring)."""
    return _scores_at_k(retrieved_sessions, gold_sessions, k)[3]


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


_UNSCORED = "a probe without gold sessions (no gold evidence) is unscored"


def _kept(row: RowView, b: int) -> list[list[str]]:
    return row.retrieved_sessions[:budget_prefix(row.tokens, b)]


#: The per-row functions, by score (``SCORES`` order is their column order).
_AT_K = dict(zip(SCORES, (session_hit_rate_at_k, session_recall_at_k, session_recall_all_at_k, session_ndcg_at_k)))
#: The token-matched block: the first two scores over the sessions of the kept items.
_BUDGET = SCORES[:2]

# Registration order is column order: the token-matched block, then the @k block.
for _name in _BUDGET:
    _fn = _AT_K[_name]
    register_metric(_name, lambda row, b, _fn=_fn: _fn(_kept(row, b), row.gold_sessions, None), view="budget",
                    param="tok", needs=SESSION_COLUMNS, batch="sessions", unscored=_UNSCORED,
                    doc=f"{_fn.__name__.replace('_at_k', '')} over the sessions of the items kept under B tokens")
for _name, _fn in _AT_K.items():
    register_metric(_name, lambda row, k, _fn=_fn: _fn(row.retrieved_sessions, row.gold_sessions, k),
                    view="retrieval", param="k", needs=SESSION_COLUMNS, batch="sessions", unscored=_UNSCORED,
                    doc=(_fn.__doc__ or "").split("\n")[0])


@register_batch("sessions")
def _fill_sessions(columns: dict[str, list[float]], row: RowView, ks: Sequence[int], budgets: Sequence[int]) -> None:
    """Every session column of one row (the block's batch function): ``session_scores`` over
    the session ranking at each k, and over the kept items' sessions at each budget."""
    g = set(row.gold_sessions)
    n_gold = len(g)
    ranking = _ranking(row.retrieved_sessions)
    for k in ks:
        scores = session_scores(ranking[:k], g, min(k, n_gold)) if g else _UNSCORED_ROW
        for name, value in zip(SCORES, scores):
            columns[f"{name}@{k}"].append(value)
    for b in budgets:
        scores = session_scores(_ranking(_kept(row, b)), g, n_gold) if g else _UNSCORED_ROW
        for name, value in zip(_BUDGET, scores):
            columns[f"{name}@{b}tok"].append(value)

#: Session metric names per k and per token budget, in column order (from the registry).
SESSION_METRICS = tuple(m.name for m in registered(batch="sessions", param="k"))
SESSION_BUDGET_METRICS = tuple(m.name for m in registered(batch="sessions", param="tok"))
