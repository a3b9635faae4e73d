"""Retrieval metrics against hand-computed values."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from memlab.base import MemlabError
from memlab.eval.metrics import (
    compute_metrics,
    context_metrics,
    hit_rate_at_k,
    metric_columns,
    budget_metrics,
    budget_prefix,
    mrr_at_k,
    ndcg_at_k,
    recall_all_at_k,
    recall_at_k,
    relevance_ratio_at_k,
    summarize,
)

RANKED = ["a", "g1", "b", "g2"]
GOLD = {"g1", "g2", "g3"}
L2, L3, L5 = math.log2(2), math.log2(3), math.log2(5)


def test_hit_rate():
    assert hit_rate_at_k(RANKED, GOLD, 1) == 0.0
    assert hit_rate_at_k(RANKED, GOLD, 2) == 1.0
    assert hit_rate_at_k(RANKED, GOLD, None) == 1.0


def test_recall_and_recall_all():
    assert recall_at_k(RANKED, GOLD, 1) == 0.0
    assert recall_at_k(RANKED, GOLD, 2) == 1 / 3
    assert recall_at_k(RANKED, GOLD, 4) == 2 / 3
    assert recall_at_k(RANKED, GOLD, 100) == 2 / 3
    assert recall_all_at_k(RANKED, GOLD, 4) == 0.0
    assert recall_all_at_k(RANKED, {"g1", "g2"}, 4) == 1.0
    assert recall_all_at_k(RANKED, {"g1", "g2"}, 3) == 0.0


def test_relevance_ratio_divides_by_items_returned():
    assert relevance_ratio_at_k(RANKED, GOLD, 1) == 0.0
    assert relevance_ratio_at_k(RANKED, GOLD, 2) == 1 / 2
    assert relevance_ratio_at_k(RANKED, GOLD, 3) == 1 / 3
    assert relevance_ratio_at_k(RANKED, GOLD, 10) == 2 / 4     # 4 returned, not 10
    assert relevance_ratio_at_k([], GOLD, 5) == 0.0              # nothing returned: 0, stays in the mean
    assert math.isnan(relevance_ratio_at_k([], set(), 5))        # no gold: unscored


def test_mrr_is_cut_at_k():
    assert mrr_at_k(RANKED, GOLD, None) == 1 / 2
    assert mrr_at_k(RANKED, GOLD, 2) == 1 / 2
    assert mrr_at_k(RANKED, GOLD, 1) == 0.0       # the first gold item is at rank 2, beyond k
    assert mrr_at_k(["g3"], GOLD, 5) == 1.0
    assert mrr_at_k(["x", "y", "z"], GOLD, 5) == 0.0


def test_ndcg_binary_log2():
    dcg = 1 / L3 + 1 / L5                    # gold at ranks 2 and 4
    assert ndcg_at_k(RANKED, GOLD, 4) == pytest.approx(dcg / (1 / L2 + 1 / L3 + 1 / 2), abs=1e-15)
    assert ndcg_at_k(RANKED, GOLD, 2) == pytest.approx((1 / L3) / (1 / L2 + 1 / L3), abs=1e-15)
    assert ndcg_at_k(RANKED, GOLD, 1) == 0.0
    assert ndcg_at_k(["g1", "g2"], {"g1", "g2"}, 5) == 1.0     # ideal ranking, IDCG uses min(k, |gold|)
    assert ndcg_at_k(["g1", "g1"], {"g1", "g2"}, 2) == pytest.approx(1 / (1 + 1 / L3), abs=1e-15)


def test_items_standing_for_several_turns():
    items = [["x", "g1", "g2"], ["g1"], ["y"]]
    gold = {"g1", "g2"}
    assert hit_rate_at_k(items, gold, 1) == 1.0
    assert recall_at_k(items, gold, 1) == 1.0
    assert recall_all_at_k(items, gold, 1) == 1.0
    assert relevance_ratio_at_k(items, gold, 3) == 2 / 3          # the repeat is still a relevant item
    assert mrr_at_k(items, gold, 3) == 1.0
    assert ndcg_at_k(items, gold, 3) == pytest.approx(1 / (1 + 1 / L3), abs=1e-15)  # the repeat earns nothing
    assert recall_at_k([["x"], ["y", "g2"]], gold, 2) == 1 / 2


def test_no_gold_is_nan_not_zero():
    for fn in (hit_rate_at_k, recall_at_k, recall_all_at_k, relevance_ratio_at_k, ndcg_at_k):
        assert math.isnan(fn(RANKED, [], 5))
    assert math.isnan(mrr_at_k(RANKED, set(), 5))
    assert all(math.isnan(v) for v in context_metrics(["a"], []).values())


def test_nothing_retrieved_with_gold():
    assert (hit_rate_at_k([], GOLD, 5), recall_at_k([], GOLD, 5), mrr_at_k([], GOLD, 5), ndcg_at_k([], GOLD, 5)) == \
        (0.0, 0.0, 0.0, 0.0)


@pytest.mark.parametrize("k", [0, -1, 1.5, True])
def test_bad_k(k):
    with pytest.raises(MemlabError, match="k must be a positive int or None"):
        recall_at_k(RANKED, GOLD, k)


def test_context_metrics_over_distinct_ids():
    m = context_metrics(["t1", "g1", "t1", "t2"], {"g1", "g2"})
    assert m == {"context_hit_rate": 1.0, "context_recall": 0.5, "context_recall_all": 0.0,
                 "context_relevance_ratio": 1 / 3}


def rows() -> pd.DataFrame:
    return pd.DataFrame({
        "strategy": ["bm25", "bm25", "bm25", "window", "window", "window"],
        "dialogue_id": ["d1", "d1", "d2"] * 2,
        "probe_id": ["p1", "p2", "p1"] * 2,
        "category": ["single-hop", "multi-hop", "single-hop"] * 2,
        "gold": [["t1"], ["t2", "t3"], [], ["t1"], ["t2", "t3"], []],
        "retrieved_ids": [["m1", "t9"], ["t3", "t2"], ["t1"], ["t8"], [], ["t1"]],
        "retrieved_source_ids": [[["t1", "t4"], ["t9"]], [["t3"], ["t2"]], [["t1"]], [["t8"]], [], [["t1"]]],
        "context_ids": [["t1", "t4", "t9"], ["t3"], ["t1"], ["t7", "t8"], ["t2", "t3"], ["t1"]],
        "context_tokens": [30, 20, 10, 40, 40, 40],
        "llm_prompt_tokens": [0, 0, 0, 0, 0, 0],
        "llm_completion_tokens": [0, 0, 0, 0, 0, 0],
        "latency_ms": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0],
    })


def test_compute_metrics_columns_and_values():
    given = rows()
    out = compute_metrics(given, ks=(1, 2))
    assert list(given.columns) == list(rows().columns)               # input untouched
    expected = ["n_gold"] + [f"{m}@{k}" for m in ("hit_rate", "recall", "recall_all", "relevance_ratio", "ndcg",
                                                  "mrr") for k in (1, 2)] + [
        "context_hit_rate", "context_recall", "context_recall_all", "context_relevance_ratio"]
    assert list(out.columns) == list(rows().columns) + expected
    assert metric_columns(out) == expected[1:]
    assert out["n_gold"].tolist() == [1, 2, 0, 1, 2, 0]
    # row 0 uses source ids: the summary m1 stands for t1 -> hit at rank 1.
    assert out.loc[0, ["hit_rate@1", "recall@1", "relevance_ratio@2", "mrr@1"]].tolist() == [1.0, 1.0, 0.5, 1.0]
    assert out.loc[1, ["recall@1", "recall@2", "recall_all@1", "recall_all@2", "ndcg@2"]].tolist() == \
        [0.5, 1.0, 0.0, 1.0, 1.0]
    assert out.loc[2, expected[1:]].isna().all()                   # no gold: unscored
    assert out.loc[4, ["hit_rate@2", "mrr@2"]].tolist() == [0.0, 0.0]
    assert out.loc[4, "relevance_ratio@2"] == 0.0                  # nothing retrieved: 0, not NaN
    assert out.loc[0, "context_relevance_ratio"] == 1 / 3
    assert out.loc[4, ["context_recall", "context_recall_all"]].tolist() == [1.0, 1.0]
    assert out.loc[3, "context_hit_rate"] == 0.0
    assert out.dtypes["recall@1"] == np.float64 and out.dtypes["n_gold"] == np.int64


def test_compute_metrics_views_and_fallback():
    r = rows().drop(columns=["retrieved_source_ids"])
    out = compute_metrics(r, ks=[1], view="retrieval")
    assert "context_recall" not in out.columns
    assert out.loc[0, "hit_rate@1"] == 0.0          # without source ids, 'm1' is not gold
    ctx = compute_metrics(r.drop(columns=["retrieved_ids"]), view="context")
    assert "mrr@10" not in ctx.columns and ctx.loc[1, "context_recall"] == 0.5
    with pytest.raises(MemlabError, match="compute_metrics\\(view='context'\\) needs column 'context_ids'"):
        compute_metrics(r.drop(columns=["context_ids"]), view="context")
    with pytest.raises(MemlabError, match="view must be 'retrieval' or 'context'"):
        compute_metrics(r, view="ranked")
    with pytest.raises(MemlabError, match="column 'gold', row 0: expected a list, got the string 't1'"):
        compute_metrics(r.assign(gold=["t1"] * 6), view="retrieval")


def test_summarize_means_skip_unscored():
    out = compute_metrics(rows(), ks=(1,))
    s = summarize(out, by="strategy", metrics=["recall@1", "mrr@1", "context_recall"])
    assert list(s.columns) == ["strategy", "n_probes", "n_scored", "recall@1", "mrr@1", "context_recall",
                               "context_tokens", "llm_prompt_tokens", "llm_completion_tokens", "latency_ms"]
    assert s["strategy"].tolist() == ["bm25", "window"]
    assert s["n_probes"].tolist() == [3, 3] and s["n_scored"].tolist() == [2, 2]
    assert s["recall@1"].tolist() == [(1.0 + 0.5) / 2, 0.0]
    assert s["mrr@1"].tolist() == [1.0, 0.0]
    assert s["context_recall"].tolist() == [(1.0 + 0.5) / 2, (0.0 + 1.0) / 2]
    assert s["context_tokens"].tolist() == [20.0, 40.0]       # costs average over every probe


def test_summarize_per_category():
    out = compute_metrics(rows(), ks=(1,))
    s = summarize(out, by=["strategy"], metrics=["recall@1"], per_category=True)
    assert s[["strategy", "category"]].values.tolist() == [
        ["bm25", "all"], ["bm25", "multi-hop"], ["bm25", "single-hop"],
        ["window", "all"], ["window", "multi-hop"], ["window", "single-hop"]]
    assert s["recall@1"].tolist() == [0.75, 0.5, 1.0, 0.0, 0.0, 0.0]
    assert s["n_scored"].tolist() == [2, 1, 1, 2, 1, 1]
    assert s["n_probes"].tolist() == [3, 1, 2, 3, 1, 2]
    with pytest.raises(MemlabError, match=r"summarize: no column\(s\) \['config'\]"):
        summarize(out, by=["config"])
    with pytest.raises(MemlabError, match=r"no metric column\(s\) \['recall@7'\]"):
        summarize(out, metrics=["recall@7"])


def test_compute_metrics_empty_and_row_fallback():
    empty = compute_metrics(rows().iloc[:0], ks=(5,))
    assert "recall@5" in empty.columns and "context_recall" in empty.columns and len(empty) == 0
    r = rows()
    r["retrieved_source_ids"] = r["retrieved_source_ids"].astype(object)
    r.at[0, "retrieved_source_ids"] = None           # this row has no source ids: use retrieved_ids
    out = compute_metrics(r, ks=(1,), view="retrieval")
    assert out.loc[0, "hit_rate@1"] == 0.0 and out.loc[1, "recall@1"] == 0.5


def test_budget_prefix_stops_at_first_overflow():
    assert budget_prefix([10, 20, 5], 30) == 2      # 10 + 20 = 30 <= 30
    assert budget_prefix([10, 20, 5], 29) == 1      # 20 overflows; the later 5 is not taken
    assert budget_prefix([40, 1], 30) == 0
    assert budget_prefix([], 30) == 0
    assert budget_prefix([10, 20], 1000) == 2
    with pytest.raises(MemlabError, match="token budget must be a positive int, got 0"):
        budget_prefix([1], 0)


def test_budget_metrics_over_the_union_of_source_turns():
    items = [["x"], ["g1", "y"], ["g2"]]          # a summary standing for two turns at rank 2
    tokens = [100, 300, 50]
    gold = {"g1", "g2", "g3"}
    m = budget_metrics(items, tokens, gold, [99, 100, 400, 449, 450])
    assert [m[f"recall@{b}tok"] for b in (99, 100, 400, 449, 450)] == [0.0, 0.0, 1 / 3, 1 / 3, 2 / 3]
    assert [m[f"hit_rate@{b}tok"] for b in (99, 100, 400, 449, 450)] == [0.0, 0.0, 1.0, 1.0, 1.0]
    assert [m[f"tokens@{b}tok"] for b in (99, 100, 400, 449, 450)] == [0.0, 100.0, 400.0, 400.0, 450.0]
    unscored = budget_metrics(items, tokens, [], [400])
    assert math.isnan(unscored["recall@400tok"]) and unscored["tokens@400tok"] == 400.0
    with pytest.raises(MemlabError, match="retrieved_tokens has 2 entries for 3 retrieved items"):
        budget_metrics(items, [1, 2], gold, [10])


def test_compute_metrics_with_budgets():
    r = rows().assign(retrieved_tokens=[[15, 8], [5, 30], [4], [9], [], [3]])
    out = compute_metrics(r, ks=(1,), budgets=[20])
    assert ["recall@20tok", "hit_rate@20tok", "tokens@20tok"] == [c for c in out.columns if c.endswith("tok")]
    assert out["tokens@20tok"].tolist() == [15.0, 5.0, 4.0, 9.0, 0.0, 3.0]
    assert out.loc[[0, 1, 3, 4], "recall@20tok"].tolist() == [1.0, 0.5, 0.0, 0.0]
    assert "recall@20tok" in metric_columns(out) and "tokens@20tok" in metric_columns(out)
    with pytest.raises(MemlabError, match="needs column 'retrieved_tokens'"):
        compute_metrics(rows(), budgets=[20])


def test_summarize_with_cluster_bootstrap_ci():
    from memlab.eval.stats import cluster_bootstrap_ci

    out = compute_metrics(rows(), ks=(1,))
    s = summarize(out, by="strategy", metrics=["recall@1"], ci=True, n_resamples=400, seed=3)
    assert list(s.columns[:8]) == ["strategy", "n_probes", "n_scored", "n_dialogues", "recall@1",
                                   "recall@1_ci_low", "recall@1_ci_high", "context_tokens"]
    assert s["n_dialogues"].tolist() == [2, 2]
    bm25 = out[out["strategy"] == "bm25"]
    expected = cluster_bootstrap_ci(bm25["recall@1"], bm25["dialogue_id"], n_resamples=400, seed=3)
    assert (s.loc[0, "recall@1_ci_low"], s.loc[0, "recall@1_ci_high"]) == expected
    # bm25 scored probes: d1 has recall 1.0 and 0.5, d2 only an unscored probe -> one cluster of values
    assert expected == (0.75, 0.75)
    again = summarize(out, by="strategy", metrics=["recall@1"], ci=True, n_resamples=400, seed=3)
    assert again.equals(s)
    per = summarize(out, by="strategy", metrics=["recall@1"], per_category=True, ci=True, n_resamples=50)
    assert "recall@1_ci_low" in per.columns and len(per) == 6


def test_summarize_metric_typo_did_you_mean():
    out = compute_metrics(rows(), ks=(1,))
    with pytest.raises(MemlabError, match="no metric column\\(s\\) \\['recal@1'\\]; did you mean 'recall@1'\\?"):
        summarize(out, metrics=["recal@1"])
