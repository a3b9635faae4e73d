"""``compute_metrics`` and ``add_stale_metrics`` walk plain lists in one pass per row; these
tests pin every value they produce to a straightforward reference: the per-metric functions
of ``memlab.eval.metrics`` / ``memlab.eval.lifecycle`` applied row by row with ``iterrows``
(the implementation before the rewrite), over replays of every shipped dataset and of
hand-made rows with derived items, duplicates, empty lists and unscored probes."""

from __future__ import annotations

import glob
import math
from pathlib import Path

import pandas as pd
import pytest

from memlab import strategies
from memlab.eval import replay
from memlab.eval.lifecycle import add_stale_metrics, stale_metrics
from memlab.eval.metrics import (CONTEXT_METRICS, RETRIEVAL_METRICS, budget_metrics, compute_metrics,
                                 context_metrics, metric_columns, retrieval_metrics)
from memlab.eval.metrics.longmemeval import LONGMEMEVAL_COLUMNS, LONGMEMEVAL_METRICS, lme_session_scores, \
    lme_turn_scores, item_labels
from memlab.eval.metrics.sessions import (SESSION_BUDGET_METRICS, SESSION_METRICS, session_budget_metrics,
                                          session_metrics)
from memlab.eval import load_any

ROOT = Path(__file__).resolve().parents[3]
DATASETS = sorted(glob.glob(str(ROOT / "datasets" / "*.json")))
KS = (1, 3, 5, 10)
BUDGETS = (64, 512)


def _list(value):
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return []
    return list(value)


def reference_metrics(rows: pd.DataFrame, ks=KS, budgets=BUDGETS) -> pd.DataFrame:
    names = ["n_gold"] + [f"{m}@{b}tok" for b in budgets for m in ("recall", "hit_rate", "tokens")]
    names += [f"{m}@{k}" for m in RETRIEVAL_METRICS for k in ks] + list(CONTEXT_METRICS)
    sessions = "gold_sessions" in rows.columns and "retrieved_sessions" in rows.columns
    if sessions:
        names += [f"{m}@{b}tok" for b in budgets for m in SESSION_BUDGET_METRICS]
        names += [f"{m}@{k}" for m in SESSION_METRICS for k in ks]
    lme = all(c in rows.columns for c in LONGMEMEVAL_COLUMNS)
    if lme:
        names += [f"{m}@{k}" for m in LONGMEMEVAL_METRICS for k in ks]
    records = []
    for _, row in rows.iterrows():
        gold = list(dict.fromkeys(str(g) for g in _list(row["gold"])))
        sources = row["retrieved_source_ids"] if "retrieved_source_ids" in rows.columns else None
        retrieved = _list(sources) if sources is not None and not (isinstance(sources, float)
                                                                   and math.isnan(sources)) \
            else _list(row["retrieved_ids"])
        values = {"n_gold": float(len(gold))}
        values.update(retrieval_metrics(retrieved, gold, ks))
        values.update(budget_metrics(retrieved, _list(row["retrieved_tokens"]), gold, budgets))
        values.update(context_metrics(_list(row["context_ids"]), gold))
        if sessions:
            items, gold_sessions = _list(row["retrieved_sessions"]), _list(row["gold_sessions"])
            values.update(session_metrics(items, gold_sessions, ks))
            values.update(session_budget_metrics(items, _list(row["retrieved_tokens"]), gold_sessions, budgets))
        if lme:
            units = [[i] if isinstance(i, str) else list(i) for i in retrieved]
            labels = [lab for item in item_labels(units, _list(row["retrieved_source_sessions"]), gold,
                                                  _list(row["gold_turn_sessions"])) for lab in item]
            gold_labels = set(_list(row["gold_turn_sessions"])) if gold else set()
            for k in ks:
                s_scores = lme_session_scores(labels, gold_labels, len(gold), k)
                t_scores = lme_turn_scores(units, set(gold), k)
                for name, value in zip(LONGMEMEVAL_METRICS, s_scores + t_scores):
                    values[f"{name}@{k}"] = value
        records.append(values)
    metrics = pd.DataFrame.from_records(records, index=rows.index, columns=names)
    out = rows.copy()
    for col in names:
        out[col] = metrics[col].astype(int if col == "n_gold" else float)
    return out


def reference_stale(rows: pd.DataFrame) -> pd.DataFrame:
    values = [stale_metrics([str(i) for i in _list(r["context_ids"])], [str(i) for i in _list(r["gold"])],
                            [str(i) for i in _list(r["stale_evidence"])]) for _, r in rows.iterrows()]
    out = rows.copy()
    for name in ("stale_in_context", "stale_only"):
        out[name] = pd.Series([v[name] for v in values], index=rows.index, dtype=float)
    return out


@pytest.mark.parametrize("path", DATASETS, ids=[Path(p).stem for p in DATASETS])
@pytest.mark.parametrize("name", ["bm25", "layered"])  # layered: derived items (source ids)
def test_replay_metrics_equal_reference(path, name):
    strategy = strategies.get(name, embedder=None) if name == "layered" else strategies.get(name)
    frame = replay(strategy, load_any(path), ks=KS, budgets=BUDGETS)
    assert name == "bm25" or frame["retrieved_source_ids"].notna().any()
    raw = frame.drop(columns=metric_columns(frame) + ["n_gold"])
    assert "recall@5" not in raw.columns and "stale_evidence" in raw.columns
    expected = reference_stale(reference_metrics(raw))
    got = add_stale_metrics(compute_metrics(raw, ks=KS, budgets=BUDGETS))
    pd.testing.assert_frame_equal(got, expected, check_exact=True)
    assert frame["n_gold"].gt(0).any()


def test_hand_made_rows_equal_reference():
    rows = pd.DataFrame({
        "gold": [["t1", "t2"], ["t1"], [], None, ["t3", "t3", "t4"], ["t9"]],
        "retrieved_ids": [["a", "t2", "t1"], [], ["t1"], ["t1"], ["s1", "t4", "t3"], ["x", "y"]],
        "retrieved_source_ids": [[["t5", "t2"], ["t2"], ["t1"]], None, None, None,
                                 [["t3", "t4"], ["t4"], ["t3"]], float("nan")],
        "retrieved_tokens": [[30, 40, 600], [], [5], [5], [20, 20, 20], [70, 1]],
        "context_ids": [["t2", "t2", "t1"], [], ["t1"], [], ["x"], ["t9", "y"]],
        "stale_evidence": [["t2"], None, [], ["t1"], ["x"], ["t0"]],
        "gold_sessions": [["s1", "s2"], ["s1"], [], None, ["s2"], ["s9"]],
        "retrieved_sessions": [[["s3", "s2"], ["s2"], ["s1"]], [], [[]], [["s1"]], [["s2"], [], ["s2", "s1"]],
                               [["s9"], ["s9"]]],
    })
    expected = reference_stale(reference_metrics(rows))
    got = add_stale_metrics(compute_metrics(rows, ks=KS, budgets=BUDGETS))
    pd.testing.assert_frame_equal(got, expected, check_exact=True)
    # the values the reference gives, spelled out for two cells
    assert got.loc[0, "ndcg@3"] == (1.0 + 1.0 / math.log2(4)) / (1.0 + 1.0 / math.log2(3))
    assert got.loc[4, "relevance_ratio@3"] == 1.0 and got.loc[0, "recall@64tok"] == 0.5
    assert got.loc[0, "session_ndcg@3"] == (1.0 / math.log2(3) + 1.0 / math.log2(4)) / (1.0 + 1.0 / math.log2(3))
    assert got.loc[0, "session_recall@64tok"] == 0.5 and math.isnan(got.loc[2, "session_recall@1"])
