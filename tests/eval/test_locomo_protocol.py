"""End to end on the real LoCoMo file: loader + metrics reproduce the BM25 figures of an independent run.

Protocol: one conversation per pool, each turn indexed as its LoCoMo content
('<speaker> said, "<text>"' plus ' and shared <caption>.'), lower-cased \\w+ tokens,
rank_bm25.BM25Okapi, query = raw question, recall = fraction of evidence retrieved,
averaged over the probes with evidence (all categories). An independent rank_bm25 run measured
recall@5 45.8, @10 52.8, @50 69.6.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

from memlab.eval.loaders import load_dataset
from memlab.eval.metrics import compute_metrics, summarize
from memlab.eval.paths import locomo_path

# found the way every script finds it (MEMLAB_LOCOMO, else ../shared beside the checkout)
REAL = str(locomo_path() or "")


@pytest.mark.skipif(not REAL, reason="LoCoMo file not available (../shared/datasets/locomo/locomo10.json)")
def test_bm25_recall_matches_reference():
    rank_bm25 = pytest.importorskip("rank_bm25")
    tokens = lambda s: re.findall(r"\w+", s.lower())
    rows = []
    for d in load_dataset(REAL):
        turns = d.turns()
        bm25 = rank_bm25.BM25Okapi([tokens(t.retrieval_text) for t in turns])
        for p in d.probes:
            order = np.argsort(-bm25.get_scores(tokens(p.query)), kind="stable")[:50]
            rows.append({"strategy": "bm25", "dialogue_id": d.id, "probe_id": p.id, "category": p.category,
                         "gold": p.evidence, "retrieved_ids": [turns[i].id for i in order]})
    scored = compute_metrics(pd.DataFrame(rows), ks=(5, 10, 50), view="retrieval")
    summary = summarize(scored, by="strategy", metrics=["recall@5", "recall@10", "recall@50"])
    assert summary.loc[0, "n_scored"] == 1982            # 1,986 questions, 4 without evidence
    got = [round(100 * summary.loc[0, m], 1) for m in ("recall@5", "recall@10", "recall@50")]
    assert got == [45.8, 52.8, 69.6]
