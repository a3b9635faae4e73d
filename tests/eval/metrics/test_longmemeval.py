"""memlab's lenient session metrics against LongMemEval's own metric code, where they agree.

``evaluate_retrieval`` and ``evaluate_retrieval_turn2session`` are LongMemEval's
src/retrieval/eval_utils.py as bench/longmemeval_code.py transcribes it (source, licence and
the one change named there). Their ``run_retrieval.py`` ranks
every turn of the haystack (``rankings``: corpus indices, best first), names turn
``<session id>_<i>`` and takes a question's sessions by stripping the last ``_<i>``.

On a few hundred random haystacks and rankings in which every turn of a gold session is
gold (so LongMemEval renames no turn ``noans``), memlab's ``session_hit_rate@k`` equals
their session-level recall_any@k and ``session_recall_all@k`` their recall_all@k. Real
LongMemEval data has such turns, and there only the ``lme_*`` metrics equal LongMemEval's
code (``tests/eval/metrics/test_longmemeval_protocol.py``). Their
ndcg_any is a different quantity (one gain per retrieved turn, discount
rel_1 + sum_{i>=2} rel_i / log2 i), so ``session_ndcg@k`` is checked against a textbook nDCG over the distinct-session
ranking instead.
"""

from __future__ import annotations

import importlib.util
import random
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from memlab.eval.metrics import compute_metrics
from memlab.eval.metrics.sessions import session_ndcg_at_k, session_ranking

KS = (1, 3, 5, 10, 30, 50)  # the cut-offs run_retrieval.py reports


# LongMemEval's own metric code, transcribed once (bench/longmemeval_code.py, its source named there)
_spec = importlib.util.spec_from_file_location(
    "longmemeval_code", Path(__file__).resolve().parents[3] / "bench" / "longmemeval_code.py")
_lme = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_lme)  # type: ignore[union-attr]
evaluate_retrieval = _lme.evaluate_retrieval
evaluate_retrieval_turn2session = _lme.evaluate_retrieval_turn2session


def _haystack(rng: random.Random):
    """Random sessions of random length, gold turns in 1-3 of them, and a random full ranking."""
    n_sessions = rng.randint(1, 60)
    sessions = [f"sess{n}" for n in range(n_sessions)]
    corpus_ids = [f"{s}_{i + 1}" for s in sessions for i in range(rng.randint(1, 8))]
    gold_sessions = rng.sample(sessions, min(len(sessions), rng.randint(1, 3)))
    correct_docs = [c for c in corpus_ids if c.rsplit("_", 1)[0] in gold_sessions and rng.random() < 0.5]
    if not correct_docs:
        correct_docs = [next(c for c in corpus_ids if c.rsplit("_", 1)[0] == gold_sessions[0])]
    rankings = list(range(len(corpus_ids)))
    rng.shuffle(rankings)
    return corpus_ids, correct_docs, rankings


def test_session_hit_rate_and_recall_all_equal_longmemeval():
    rng = random.Random(20250123)
    rows, expected = [], []
    for _ in range(300):
        corpus_ids, correct_docs, rankings = _haystack(rng)
        ranked_turns = [corpus_ids[i] for i in rankings]
        rows.append({"gold": correct_docs, "retrieved_ids": ranked_turns, "context_ids": [],
                     # what memlab's replay writes: sessions of the gold turns, sessions per ranked item
                     "gold_sessions": list(dict.fromkeys(c.rsplit("_", 1)[0] for c in correct_docs)),
                     "retrieved_sessions": [[t.rsplit("_", 1)[0]] for t in ranked_turns]})
        expected.append({k: evaluate_retrieval_turn2session(rankings, correct_docs, corpus_ids, k)[:2]
                         for k in KS})
    out = compute_metrics(pd.DataFrame(rows), ks=KS, view="retrieval")
    n_differ = 0
    for n, theirs in enumerate(expected):
        for k, (recall_any, recall_all) in theirs.items():
            assert out.loc[n, f"session_hit_rate@{k}"] == recall_any, (n, k)
            assert out.loc[n, f"session_recall_all@{k}"] == recall_all, (n, k)
            n_differ += recall_any != recall_all
    assert n_differ > 50 and 0 < out["session_hit_rate@5"].mean() < 1  # the lists exercise both outcomes


def test_session_level_retrieval_equals_their_session_granularity():
    """Retrieving whole sessions (their granularity='session'): recall_any/all are the same numbers."""
    rng = random.Random(7)
    for _ in range(200):
        sessions = [f"s{n}" for n in range(rng.randint(1, 40))]
        gold = rng.sample(sessions, min(len(sessions), rng.randint(1, 3)))
        rankings = list(range(len(sessions)))
        rng.shuffle(rankings)
        items = [[sessions[i]] for i in rankings]
        out = compute_metrics(pd.DataFrame([{"gold": ["t"], "retrieved_ids": [], "gold_sessions": gold,
                                             "retrieved_sessions": items}]), ks=KS, view="retrieval")
        for k in KS:
            recall_any, recall_all, _ = evaluate_retrieval(rankings, gold, sessions, k)
            assert (out.loc[0, f"session_hit_rate@{k}"], out.loc[0, f"session_recall_all@{k}"]) == \
                (recall_any, recall_all)


def test_session_ndcg_is_the_textbook_ndcg_over_distinct_sessions():
    """Their ndcg() structure (gains over the corpus, ideal = gains sorted) on the session
    ranking, with the log2(i + 1) discount of memlab's ndcg@k (and of trec_eval)."""
    def textbook(ranked_sessions, gold, corpus, k):
        gains = np.array([s in gold for s in ranked_sessions], dtype=float)[:k]
        ideal = np.array(sorted((s in gold for s in corpus), reverse=True), dtype=float)[:k]
        discount = lambda n: 1.0 / np.log2(np.arange(2, n + 2))  # noqa: E731
        return float(np.sum(gains * discount(gains.size)) / np.sum(ideal * discount(ideal.size)))

    rng = random.Random(11)
    for n in range(200):
        corpus_ids, correct_docs, rankings = _haystack(rng)
        items = [[corpus_ids[i].rsplit("_", 1)[0]] for i in rankings]
        gold = {c.rsplit("_", 1)[0] for c in correct_docs}
        ranking = session_ranking(items)
        for k in KS:
            assert session_ndcg_at_k(items, gold, k) == pytest.approx(textbook(ranking, gold, ranking, k),
                                                                      rel=1e-12), (n, k)
