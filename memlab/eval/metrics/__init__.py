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
- ``recall_all@k``      = 1 if C_k = gold, else 0
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

Sessions
--------
With ``gold_sessions`` and ``retrieved_sessions`` in the rows (every replay writes them),
the session-level metrics of ``memlab.eval.metrics.sessions`` are added as well
(``session_hit_rate@k``: some turn of an evidence session among the first k sessions; ``session_recall@k``,
``session_recall_all@k``, ``session_ndcg@k``, ``session_hit_rate@Btok``,
``session_recall@Btok``; formulas there). These are memlab's own: any turn of an
evidence session counts. LongMemEval's protocol, under its names (``lme_recall_any@k``,
``lme_recall_all@k``, ``lme_ndcg_any@k`` and their ``lme_turn_`` forms), is
``memlab.eval.metrics.longmemeval``: it splits an evidence session into its evidence
turns and the rest, so a non-evidence turn of it finds nothing and takes a slot of k.

The registry
------------
Every metric above is a ``Metric`` object registered by name in
``memlab.eval.metrics.registry`` (view, bounded or not, parameter kind, per-row function);
the tables, summaries, comparisons, sweeps, CLI and plots ask the registry which columns
are metrics. A user metric is one function and one ``register_metric`` call.

Layout (one job per module, imports downward only): ``registry`` (the Metric objects),
``turns`` (turn-level metrics), ``sessions`` (session-level metrics), ``replayed`` (the
metrics the replay writes itself), ``compute`` (``compute_metrics``), ``summary``
(``summarize``, ``metric_columns``, ``nan_notes``).
"""

from __future__ import annotations

from .compute import compute_metrics
from .cuts import budget_prefix
from .registry import (BOUNDED, Metric, MetricColumn, RowView, expand, get_metric, is_bounded, is_metric_column,
                       metrics_snapshot, nan_reason, parse_column, register_metric, registered, report_columns,
                       restore_metrics, unregister_metric)
from .longmemeval import LONGMEMEVAL_COLUMNS, LONGMEMEVAL_KS, LONGMEMEVAL_METRICS
from .replayed import ANSWER_METRICS, LIFECYCLE_METRICS
from .sessions import (SESSION_BUDGET_METRICS, SESSION_COLUMNS, SESSION_METRICS, session_budget_metrics,
                       session_hit_rate_at_k, session_metrics, session_ndcg_at_k, session_ranking,
                       session_recall_all_at_k, session_recall_at_k)
from .summary import COST_COLUMNS, metric_columns, nan_notes, summarize
from .turns import (NAN, REQUIRED_COLUMNS, Item, budget_metrics, context_metrics, hit_rate_at_k,
                    mrr_at_k, ndcg_at_k, recall_all_at_k, recall_at_k, relevance_ratio_at_k, retrieval_metrics)

#: Derived from the registry, kept for code that imports them: the built-in metric names of
#: the retrieval view (``<name>@<k>``), the token-matched ones (``<name>@<B>tok``) and the
#: context view.
RETRIEVAL_METRICS = tuple(m.name for m in registered(batch="turns"))
BUDGET_METRICS = tuple(m.name for m in registered(batch="turn_budget"))
CONTEXT_METRICS = tuple(m.name for m in registered(batch="context"))

__all__ = [
    "ANSWER_METRICS", "BOUNDED", "BUDGET_METRICS", "CONTEXT_METRICS", "COST_COLUMNS", "LIFECYCLE_METRICS", "LONGMEMEVAL_COLUMNS",
    "LONGMEMEVAL_KS", "LONGMEMEVAL_METRICS", "Metric",
    "Item", "MetricColumn", "NAN", "RowView", "REQUIRED_COLUMNS", "RETRIEVAL_METRICS", "SESSION_BUDGET_METRICS",
    "SESSION_COLUMNS", "SESSION_METRICS", "budget_metrics", "budget_prefix", "compute_metrics", "context_metrics",
    "expand", "get_metric", "hit_rate_at_k", "is_bounded", "is_metric_column", "metric_columns", "metrics_snapshot",
    "mrr_at_k",
    "nan_notes", "nan_reason", "ndcg_at_k", "parse_column", "recall_all_at_k", "recall_at_k", "register_metric",
    "registered", "relevance_ratio_at_k", "report_columns", "restore_metrics", "retrieval_metrics", "session_budget_metrics",
    "session_hit_rate_at_k", "session_metrics", "session_ndcg_at_k", "session_ranking", "session_recall_all_at_k",
    "session_recall_at_k", "summarize", "unregister_metric",
]
