"""A user-written metric: ``f1@k``, the harmonic mean of recall@k and relevance_ratio@k.

With T_k the first k ranked items, C_k the gold turn ids they cover, G the probe's gold
ids, P = (relevant items in T_k) / |T_k| (``relevance_ratio@k``) and R = |C_k| / |G|
(``recall@k``)::

    f1@k = 2 P R / (P + R),   0 when P + R = 0 (nothing relevant retrieved)

NaN for a probe without gold (unscored, like every retrieval metric). One function and
one registration call are all it takes: from then on ``f1@5`` is a column of every replay,
a mean (with its interval) in ``memlab eval``, in sweep summaries, a metric of
``memlab compare``, and a name sweep plots accept::

    memlab eval datasets --import experiments/f1_metric.py --json        # "f1@5": ...
    # in a sweep file:  imports = ["f1_metric.py"]
"""

from __future__ import annotations

from memlab.eval.metrics import ProbeRow, register_metric


def f1_at_k(row: ProbeRow, k: int) -> float:
    """Harmonic mean of recall@k and relevance_ratio@k; NaN without gold."""
    gold = set(row.gold)
    if not gold:
        return float("nan")
    top = row.items[:k]
    relevant = sum(any(i in gold for i in ids) for ids in top)
    covered = {i for ids in top for i in ids if i in gold}
    precision = relevant / len(top) if top else 0.0
    recall = len(covered) / len(gold)
    return 0.0 if precision + recall == 0 else 2 * precision * recall / (precision + recall)


register_metric("f1", f1_at_k, view="retrieval", param="k", bounded=True)
