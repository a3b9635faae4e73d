"""LongMemEval's retrieval metrics, computed exactly as LongMemEval's own code computes them.

LongMemEval (Wu et al., ICLR 2025) scores retrieval with ``src/retrieval/run_retrieval.py``
and ``src/retrieval/eval_utils.py`` (github.com/xiaowu0162/LongMemEval). These metrics carry
its names behind an ``lme_`` prefix and equal its code on the same ranked lists
(``tests/eval/metrics/test_longmemeval_protocol.py`` feeds memlab's lists for real S dev questions to a
transcription of that code). memlab's own session metrics (``session_hit_rate@k`` ...,
``memlab.eval.metrics.sessions``) are more lenient: any turn of an evidence session counts
there.

Units and labels
----------------
LongMemEval's corpus holds one unit per *user* turn (memlab's LongMemEval loader indexes
user turns only by default). Each unit gets a label: its session, except that a turn of an
evidence ("answer") session that is not itself evidence (``has_answer`` false) gets a
label of its own (LongMemEval renames it ``noans_...``): retrieving it finds nothing, and
it takes a slot of k. In memlab's terms, with G_t the probe's gold turns (``gold``) and
S_g the sessions that hold them (``gold_turn_sessions``), a ranked item standing for
source turns with sessions (``retrieved_source_sessions``) gets, for each of its sessions
s in order, the label

    s                    if the item holds a gold turn of s, or s is not in S_g
    (non-evidence, s)    otherwise

(a one-turn item has one label, as LongMemEval's units; a source turn with no session --
no turn of the dialogue -- labels the item by itself, a non-gold unit of its own). The
gold labels are S_g. Let L = l_1, l_2, ... be the items' labels in rank order.

Session level (``evaluate_retrieval_turn2session``)
---------------------------------------------------
k counts distinct labels: the window W_k is the shortest prefix of L holding k distinct
labels (all of L when it holds fewer; LongMemEval's "effective k"). Then

- ``lme_recall_any@k`` = 1 if some label of W_k is gold, else 0
- ``lme_recall_all@k`` = 1 if every gold label is in W_k, else 0
- ``lme_ndcg_any@k``   = DCG(W_k) / IDCG, with r_i = 1 if l_i is gold (one gain per unit, so a
  gold session counts once per retrieved gold unit of it), DCG(r_1..r_n) = r_1 +
  sum_{i=2..n} r_i / log2(i) (LongMemEval's discount), and IDCG = DCG of m ones, m =
  min(|W_k|, |G_t|) when W_k reached k labels, else |G_t| (LongMemEval takes the ideal
  over its whole corpus, cut at the effective k, which runs past the corpus when the
  labels never reach k). 0 when IDCG is 0.

Turn level (``evaluate_retrieval`` with turn granularity)
---------------------------------------------------------
With T_k the first k items and an item relevant when one of its source turns is gold:

- ``lme_turn_recall_any@k`` = 1 if some item of T_k is relevant, else 0
- ``lme_turn_recall_all@k`` = 1 if T_k's source turns hold every gold turn, else 0
- ``lme_turn_ndcg_any@k``   = DCG(relevance of T_k) / DCG(min(k, |G_t|) ones), same DCG.

Questions scored
----------------
A probe without gold turns is unscored (NaN), which is LongMemEval's rule when the loader
follows it: abstention questions and questions with no user turn marked ``has_answer`` get
no gold turns (``memlab.eval.loaders.longmemeval``). ``summarize`` reports ``n_probes`` and
``n_scored`` beside every mean.

Where the row's list ends before W_k reaches k labels, W_k is the whole list: the replay
lists items until they hold ``k_max`` distinct sessions (``memlab.eval.replay``), and each
session holds at most two labels, so W_k is complete for every k <= ``k_max``. One
difference in what is ranked, not in how it is scored: LongMemEval's code ranks every unit
(zero scores last), while a memlab strategy may return only the units it scores (a lexical
index leaves out turns that share no word with the question); such a unit is then missing
from W_k however few labels the haystack holds. ``flat_bm25`` ranks every unit, as
LongMemEval's flat-bm25 does.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from .registry import RowView, register_batch, register_metric, registered

NAN = float("nan")
#: Row columns these metrics read besides ``gold`` and the ranked items.
LONGMEMEVAL_COLUMNS = ("gold_turn_sessions", "retrieved_source_sessions")
#: The cut-offs LongMemEval's run_retrieval.py reports.
LONGMEMEVAL_KS = (1, 3, 5, 10, 30, 50)


def _dcg(relevances: Sequence[float]) -> float:
    """LongMemEval's ``dcg``: r_1 + sum_{i>=2} r_i / log2(i), in its numpy arithmetic (so the
    last digit matches)."""
    r = np.asarray(relevances, dtype=float)
    if not r.size:
        return 0.0
    return float(r[0] + np.sum(r[1:] / np.log2(np.arange(2, r.size + 1))))


def item_labels(items: Sequence[Sequence[str]], item_sessions: Sequence[Sequence[Any]],
                gold: Iterable[str], gold_turn_sessions: Iterable[str]) -> list[list[Any]]:
    """Each ranked item's labels (module docstring): ``items`` are the items' source turn
    ids, ``item_sessions`` the session of each source (aligned; None for an unknown turn)."""
    g = set(gold)
    s_g = set(gold_turn_sessions)
    out: list[list[Any]] = []
    for n, (ids, sessions) in enumerate(zip(items, item_sessions)):
        order: dict[Any, None] = {}
        holds_gold = {s for t, s in zip(ids, sessions) if t in g}
        for s in sessions:
            if s is None:
                order[("unit", n)] = None
            elif s in holds_gold or s not in s_g:
                order[s] = None
            else:
                order[("noans", s)] = None
        out.append(list(order) or [("unit", n)])
    return out


def session_window(labels: Sequence[Any], k: int) -> tuple[int, bool]:
    """(length of W_k, whether W_k reached k distinct labels) over the flat label list."""
    seen: set[Any] = set()
    for i, label in enumerate(labels):
        seen.add(label)
        if len(seen) >= k:
            return i + 1, True
    return len(labels), False


def lme_session_scores(labels: Sequence[Any], gold_labels: set[str], n_gold_turns: int,
                       k: int) -> tuple[float, float, float]:
    """(recall_any, recall_all, ndcg_any) at session level over the flat label list L."""
    if not gold_labels:
        return NAN, NAN, NAN
    n, reached = session_window(labels, k)
    window = labels[:n]
    held = set(window)
    recall_any = float(any(s in held for s in gold_labels))
    recall_all = float(all(s in held for s in gold_labels))
    m = min(n, n_gold_turns) if reached else n_gold_turns
    ideal = _dcg([1.0] * m)
    ndcg = _dcg([1.0 if lab in gold_labels else 0.0 for lab in window]) / ideal if ideal else 0.0
    return recall_any, recall_all, ndcg


def lme_turn_scores(items: Sequence[Sequence[str]], gold: set[str], k: int) -> tuple[float, float, float]:
    """(recall_any, recall_all, ndcg_any) at turn level over the first k items."""
    if not gold:
        return NAN, NAN, NAN
    top = items[:k]
    relevance = [1.0 if any(t in gold for t in ids) else 0.0 for ids in top]
    covered = {t for ids in top for t in ids}
    ideal = _dcg([1.0] * min(k, len(gold)))
    return (float(any(relevance)), float(gold <= covered), _dcg(relevance) / ideal if ideal else 0.0)


def _flat(labels: Sequence[Sequence[Any]]) -> list[Any]:
    return [lab for item in labels for lab in item]


def longmemeval_into(columns: dict[str, list[float]], items: list[list[str]], item_sessions: list[list[Any]],
                     gold: set[str], gold_turn_sessions: Sequence[str], ks: Sequence[int]) -> None:
    """Append one row's LongMemEval metrics to ``columns`` (every k, both levels, one pass)."""
    labels = _flat(item_labels(items, item_sessions, gold, gold_turn_sessions))
    gold_labels = set(gold_turn_sessions) if gold else set()
    for k in ks:
        s_any, s_all, s_ndcg = lme_session_scores(labels, gold_labels, len(gold), k)
        t_any, t_all, t_ndcg = lme_turn_scores(items, gold, k)
        for name, value in (("lme_recall_any", s_any), ("lme_recall_all", s_all), ("lme_ndcg_any", s_ndcg),
                            ("lme_turn_recall_any", t_any), ("lme_turn_recall_all", t_all),
                            ("lme_turn_ndcg_any", t_ndcg)):
            columns[f"{name}@{k}"].append(value)


def _session_fn(index: int):
    def fn(row: RowView, k: int) -> float:
        labels = _flat(item_labels(row.items, row.source_sessions, row.gold, row.gold_turn_sessions))
        gold_labels = set(row.gold_turn_sessions) if row.gold else set()
        return lme_session_scores(labels, gold_labels, len(set(row.gold)), k)[index]
    return fn


def _turn_fn(index: int):
    def fn(row: RowView, k: int) -> float:
        return lme_turn_scores(row.items, set(row.gold), k)[index]
    return fn


_UNSCORED = ("a question without gold turns is unscored (LongMemEval skips abstention questions and "
             "those with no user turn marked has_answer)")
_DOCS = {
    "lme_recall_any": "LongMemEval's session recall_any@k: a gold session among the first k distinct labels",
    "lme_recall_all": "LongMemEval's session recall_all@k: every gold session among the first k distinct labels",
    "lme_ndcg_any": "LongMemEval's session ndcg_any@k (one gain per retrieved gold unit, its discount)",
    "lme_turn_recall_any": "LongMemEval's turn recall_any@k: a gold turn among the first k units",
    "lme_turn_recall_all": "LongMemEval's turn recall_all@k: every gold turn among the first k units",
    "lme_turn_ndcg_any": "LongMemEval's turn ndcg_any@k (its discount)",
}
for _i, _name in enumerate(("lme_recall_any", "lme_recall_all", "lme_ndcg_any")):
    register_metric(_name, _session_fn(_i), view="retrieval", param="k", needs=LONGMEMEVAL_COLUMNS,
                    batch="longmemeval", unscored=_UNSCORED, doc=_DOCS[_name], brief=_name == "lme_recall_any")
for _i, _name in enumerate(("lme_turn_recall_any", "lme_turn_recall_all", "lme_turn_ndcg_any")):
    register_metric(_name, _turn_fn(_i), view="retrieval", param="k", needs=LONGMEMEVAL_COLUMNS,
                    batch="longmemeval", unscored=_UNSCORED, doc=_DOCS[_name])


@register_batch("longmemeval")
def _fill_longmemeval(columns: dict[str, list[float]], row: RowView, ks: Sequence[int],
                      budgets: Sequence[int]) -> None:
    """The block's batch function: ``longmemeval_into`` on the row's lists."""
    longmemeval_into(columns, row.items, row.source_sessions, set(row.gold), row.gold_turn_sessions, ks)


#: The LongMemEval metric names, in column order (from the registry).
LONGMEMEVAL_METRICS = tuple(m.name for m in registered(batch="longmemeval"))

__all__ = ["LONGMEMEVAL_COLUMNS", "LONGMEMEVAL_KS", "LONGMEMEVAL_METRICS", "item_labels", "lme_session_scores",
           "lme_turn_scores", "longmemeval_into", "session_window"]
