"""Session-level metrics (``memlab.eval.metrics.sessions``) against hand-worked values, and
the two row columns the replay writes for them."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest

from memlab import strategies
from memlab.base import MemlabError
from memlab.eval.dataset import Dataset, Dialogue, Probe, Session, Turn
from memlab.eval.metrics import compute_metrics
from memlab.eval.metrics.sessions import (session_budget_metrics, session_hit_rate_at_k, session_ndcg_at_k,
                                          session_ranking, session_recall_all_at_k, session_recall_at_k)
from memlab.eval import load_any, replay

ROOT = Path(__file__).resolve().parents[3]
# ranked items -> their sessions: a, a, b, (c and a), d, b
ITEMS = [["a"], ["a"], ["b"], ["c", "a"], ["d"], ["b"]]
GOLD = ["c", "d", "z"]  # z is never retrieved


def test_ranking_keeps_each_session_at_its_first_hit():
    assert session_ranking(ITEMS) == ["a", "b", "c", "d"]
    assert session_ranking([[], ["x"], "y"]) == ["x", "y"]  # an item of no known session adds nothing


def test_hand_worked_values():
    # R = a, b, c, d; gold c (rank 3), d (rank 4), z (absent); G = 3
    assert session_hit_rate_at_k(ITEMS, GOLD, 2) == 0.0          # R_2 = a, b: six items are not six sessions
    assert session_hit_rate_at_k(ITEMS, GOLD, 3) == 1.0          # c is the third distinct session
    assert session_recall_at_k(ITEMS, GOLD, 3) == 1 / 3
    assert session_recall_at_k(ITEMS, GOLD, 10) == 2 / 3          # only four sessions were retrieved
    assert session_recall_all_at_k(ITEMS, GOLD, 10) == 0.0
    assert session_recall_all_at_k(ITEMS, ["c", "d"], 4) == 1.0
    assert session_recall_all_at_k(ITEMS, ["c", "d"], 3) == 0.0
    # DCG_5 = 1/log2(4) + 1/log2(5); IDCG_5 = 1 + 1/log2(3) + 1/log2(4) (G = 3 gold sessions)
    assert session_ndcg_at_k(ITEMS, GOLD, 5) == pytest.approx(
        (1 / math.log2(4) + 1 / math.log2(5)) / (1 + 1 / math.log2(3) + 1 / math.log2(4)), abs=0)
    assert session_ndcg_at_k(ITEMS, ["a"], 1) == 1.0
    assert session_ndcg_at_k(ITEMS, ["b", "a"], 2) == 1.0
    assert session_hit_rate_at_k(ITEMS, GOLD, None) == 1.0        # None: every session


def test_no_gold_session_is_unscored_and_bad_k_refused():
    for fn in (session_hit_rate_at_k, session_recall_at_k, session_recall_all_at_k, session_ndcg_at_k):
        assert math.isnan(fn(ITEMS, [], 5))
        assert fn([], ["a"], 5) == 0.0
    with pytest.raises(MemlabError, match="k must be a positive int"):
        session_recall_at_k(ITEMS, GOLD, 0)


def test_token_matched_session_metrics():
    tokens = [10, 10, 10, 10, 10, 10]
    # 35 tokens keep the first three items: sessions a, b
    assert session_budget_metrics(ITEMS, tokens, GOLD, [35, 40, 60]) == {
        "session_hit_rate@35tok": 0.0, "session_recall@35tok": 0.0,
        "session_hit_rate@40tok": 1.0, "session_recall@40tok": 1 / 3,   # + item 4: c and a
        "session_hit_rate@60tok": 1.0, "session_recall@60tok": 2 / 3}
    with pytest.raises(MemlabError, match="retrieved_tokens has 2 entries for 6"):
        session_budget_metrics(ITEMS, [1, 2], GOLD, [10])


def test_compute_metrics_adds_session_columns_only_with_both_columns():
    rows = pd.DataFrame({"gold": [["t1"], ["t2"], []], "retrieved_ids": [["t9", "t1"], [], ["t1"]],
                         "retrieved_tokens": [[5, 5], [], [5]], "context_ids": [[], [], []],
                         "gold_sessions": [["s1"], ["s2"], []],
                         "retrieved_sessions": [[["s9"], ["s1"]], [], [["s1"]]]})
    out = compute_metrics(rows, ks=(1, 2), budgets=(5,))
    names = ["session_hit_rate@5tok", "session_recall@5tok"] + [
        f"{m}@{k}" for m in ("session_hit_rate", "session_recall", "session_recall_all", "session_ndcg")
        for k in (1, 2)]
    assert list(out.columns)[-len(names):] == names
    assert out.loc[0, names].tolist() == [0.0, 0.0, 0.0, 1.0, 0.0, 1.0, 0.0, 1.0, 0.0, 1 / math.log2(3)]
    assert out.loc[1, names].tolist() == [0.0] * len(names)          # gold, nothing retrieved
    assert out.loc[2, names].isna().all()                             # no gold: unscored
    plain = compute_metrics(rows.drop(columns=["gold_sessions"]), ks=(1,))
    assert not any(c.startswith("session_") for c in plain.columns)
    with pytest.raises(MemlabError, match="retrieved_sessions has 1 items for 2 retrieved_tokens"):
        compute_metrics(rows.assign(retrieved_sessions=[[["s9"]], [], [["s1"]]]), budgets=(5,))


def _dialogue(evidence_sessions=None):
    turns = {sid: [Turn(f"{sid}t{i}", "u", "user", f"{sid} fact {i} apples" if sid == "s2" else f"{sid} chat {i}",
                        float(n * 10 + i), sid) for i in range(2)] for n, sid in enumerate(("s1", "s2", "s3"))}
    probes = [Probe("p1", None, "apples fact", evidence=["s2t1", "s3t0"],
                    metadata={"evidence_sessions": evidence_sessions} if evidence_sessions else {}),
              Probe("p2", None, "nothing here", evidence=[])]
    return Dataset("toy", [Dialogue("d", [Session(s, float(n * 10), turns[s]) for n, s in enumerate(turns)],
                                    probes)])


def test_replay_rows_carry_gold_and_retrieved_sessions():
    rows = replay(strategies.get("bm25"), _dialogue(), ks=(1, 3))
    first = rows.iloc[0]
    assert list(first["gold_sessions"]) == ["s2", "s3"]           # distinct sessions of the gold turns
    assert [list(s) for s in first["retrieved_sessions"]] == [
        [t.split("t")[0]] for t in first["retrieved_ids"]]
    assert first["session_hit_rate@1"] == 1.0 and first["session_recall@1"] == 0.5
    assert list(rows.iloc[1]["gold_sessions"]) == [] and math.isnan(rows.iloc[1]["session_recall@3"])
    given = replay(strategies.get("bm25"), _dialogue(["s1", "s1", "gone"]), ks=(1,))
    assert list(given.iloc[0]["gold_sessions"]) == ["s1"]  # evidence_sessions win; ids of no session drop


def test_shipped_and_locomo_replays_have_session_metrics():
    rows = replay(strategies.get("bm25"), load_any(ROOT / "datasets"), ks=(5,))
    scored = rows[rows["n_gold"] > 0]
    assert scored["session_hit_rate@5"].notna().all() and rows["session_hit_rate@5"].isna().sum() == \
        (rows["n_gold"] == 0).sum()
    # a session hit whenever a turn hit: the first k distinct sessions cover the first k items' sessions
    assert (scored["session_hit_rate@5"] >= scored["hit_rate@5"]).all()
