"""MMR, score thresholds and near-duplicate merging."""

import numpy as np
import pytest

from memlab.base import ConfigError
from memlab.embeddings.base import Embedder
from memlab.embeddings.hashing import HashingEmbedder
from memlab.records import Hit, MemoryRecord
from memlab.retrieval.bm25 import BM25Retriever
from memlab.retrieval.selection import (
    MMRSelector,
    NearDuplicateMerger,
    ScoreThreshold,
    merge_near_duplicates,
    mmr,
)


def rec(i, text, ts=0.0, **md):
    return MemoryRecord("user", text, id=str(i), timestamp=ts, metadata=md)


def hits_for(records, scores):
    return [Hit(memory_record=r, score=s, timestamp=r.timestamp, rank=n + 1,
                components={"bm25": {"score": s, "rank": n + 1}})
            for n, (r, s) in enumerate(zip(records, scores))]


def test_mmr_hand_computed():
    q = np.array([1.0, 0.0])
    cands = np.array([[1.0, 0.0], [1.0, 0.0], [0.6, 0.8]])
    picks = mmr(q, cands, None, k=3, lambda_=0.4)
    # step 1: 0.4 * rel = [0.4, 0.4, 0.24] -> index 0 (tie: lower index)
    # step 2: c1 0.4 - 0.6 * 1.0 = -0.2; c2 0.24 - 0.6 * 0.6 = -0.12 -> index 2
    # step 3: c1 0.4 - 0.6 * max(1.0, 0.6) = -0.2
    assert [i for i, _ in picks] == [0, 2, 1]
    assert [v for _, v in picks] == pytest.approx([0.4, -0.12, -0.2], abs=1e-12)


def test_mmr_uses_the_true_max_cosine_including_negative_ones():
    # step 1: S empty, 0.5 * [1, 0.9] -> index 0 at 0.5
    # step 2: 0.5 * 0.9 - 0.5 * max(cos = -0.6) = 0.45 + 0.3 = 0.75 (a floor at 0 gave 0.45)
    picks = mmr(None, np.array([[1.0, 0.0], [-0.6, 0.8]]), [1.0, 0.9], 2, 0.5)
    assert picks == [(0, 0.5), (1, pytest.approx(0.75, abs=1e-15))]


def test_mmr_negative_cosines_change_the_pick_order():
    # after index 0: c1 0.5 * 0.5 - 0.5 * (-0.8) = 0.65; c2 0.5 * 0.6 - 0.5 * (-0.2) = 0.4
    # (flooring the max at 0 would pick c2: 0.25 < 0.3)
    cands = np.array([[1.0, 0.0], [-0.8, 0.6], [-0.2, 0.96 ** 0.5]])
    picks = mmr(None, cands, [1.0, 0.5, 0.6], 2, 0.5)
    assert [i for i, _ in picks] == [0, 1]
    assert [v for _, v in picks] == pytest.approx([0.5, 0.65], abs=1e-15)


VECTORS = {"q": [1.0, 0.0, 0.0], "a": [0.6, 0.8, 0.0], "b": [0.6, -0.8, 0.0]}


class FixedEmbedder(Embedder):

    @property
    def dim(self):
        return 3

    def _embed(self, texts):
        return np.array([VECTORS[t] for t in texts])


def test_mmr_selector_caps_scores_to_stay_non_increasing():
    # rel = [0.6, 0.6], cos(a, b) = 0.36 - 0.64 = -0.28, lambda_ 0.5:
    # MMR values 0.3 (a, the tie goes to the first) then 0.3 + 0.14 = 0.44 (b), capped at 0.3
    picks = mmr(*np.split(FixedEmbedder().embed(["q", "a", "b"]), [1]), None, 2, 0.5)
    assert [v for _, v in picks] == pytest.approx([0.3, 0.44], abs=1e-6)
    hits = hits_for([rec(0, "a"), rec(1, "b")], [2.0, 1.0])
    out = MMRSelector(embedder=FixedEmbedder(), lambda_=0.5).select("q", hits, k=2)
    assert [h.id for h in out] == ["0", "1"]
    assert [h.score for h in out] == pytest.approx([0.3, 0.3], abs=1e-6)
    assert out[1].components["mmr"] == {"score": out[1].score, "rank": 2}


def test_mmr_with_given_scores_and_lambda_one_is_plain_ranking():
    cands = np.eye(3)
    assert [i for i, _ in mmr(None, cands, [0.1, 0.9, 0.5], k=2, lambda_=1.0)] == [1, 2]
    with pytest.raises(ConfigError, match="mmr needs query_vec or scores"):
        mmr(None, cands, None, k=1)
    with pytest.raises(ConfigError, match=r"lambda_ must be in \[0, 1\], got 2"):
        mmr(None, cands, [1, 1, 1], k=1, lambda_=2)
    with pytest.raises(ConfigError, match=r"^MMRSelector parameter 'lambda_': expected a number >= 0 and <= 1, "
                                          r"got 2$"):
        MMRSelector(lambda_=2)


def test_mmr_selector_demotes_duplicates():
    records = [rec(0, "red fox"), rec(1, "red fox"), rec(2, "red car")]
    out = MMRSelector(lambda_=0.3).select("red fox", hits_for(records, [3.0, 2.9, 1.0]), k=3)
    assert [h.id for h in out] == ["0", "2", "1"]
    assert [h.rank for h in out] == [1, 2, 3]
    scores = [h.score for h in out]
    assert scores == sorted(scores, reverse=True)
    assert out[0].components["mmr"] == {"score": out[0].score, "rank": 1}
    assert out[0].components["bm25"] == {"score": 3.0, "rank": 1}
    assert len(MMRSelector().select("red", hits_for(records, [3, 2, 1]), k=2)) == 2


def test_score_threshold():
    records = [rec(i, f"t{i}") for i in range(4)]
    out = ScoreThreshold(min_score=0.5).select("q", hits_for(records, [0.9, 0.5, 0.4, 0.1]), k=5)
    assert [(h.id, h.rank) for h in out] == [("0", 1), ("1", 2)]
    assert len(ScoreThreshold(0.0).select("q", hits_for(records, [0.9, 0.5, 0.4, 0.1]), k=3)) == 3


def test_merge_near_duplicates_keeps_newest_and_records_merged_ids():
    records = [rec("a", "the cat sat", 1.0), rec("b", "dogs run", 2.0), rec("c", "the cat sat", 3.0)]
    out = merge_near_duplicates(records, HashingEmbedder(), 0.95)
    assert [r.id for r in out] == ["c", "b"]
    assert out[0].metadata["merged_ids"] == ["a"]
    assert out[1] is records[1]
    assert "merged_ids" not in records[2].metadata  # inputs untouched
    first = merge_near_duplicates(records, HashingEmbedder(), 0.95, keep="first")
    assert [r.id for r in first] == ["a", "b"] and first[0].metadata["merged_ids"] == ["c"]


def test_merged_ids_accumulate():
    a = rec("a", "same", 1.0, merged_ids=["x"])
    b = rec("b", "same", 2.0, merged_ids=["y"])
    out = merge_near_duplicates([a, b], HashingEmbedder())
    assert out[0].id == "b" and out[0].metadata["merged_ids"] == ["y", "a", "x"]


def test_threshold_is_strict_and_validated():
    records = [rec("a", "one two", 1.0), rec("b", "one three", 2.0)]
    emb = HashingEmbedder()
    v = emb.embed(["one two", "one three"]).astype(np.float64)  # merging compares in float64
    cos = float(v[0] @ v[1])
    assert len(merge_near_duplicates(records, emb, threshold=cos)) == 2
    assert len(merge_near_duplicates(records, emb, threshold=cos - 1e-6)) == 1
    with pytest.raises(ConfigError, match=r"^NearDuplicateMerger parameter 'keep': expected one of 'newest', "
                                          r"'first', got 'last'$"):
        NearDuplicateMerger(keep="last")


def test_near_duplicate_merger_on_hits():
    records = [rec("a", "the cat sat", 1.0), rec("b", "dogs run", 2.0), rec("c", "the cat sat", 3.0)]
    out = NearDuplicateMerger().select("cat", hits_for(records, [0.9, 0.5, 0.4]), k=5)
    assert [(h.id, h.score, h.rank) for h in out] == [("c", 0.9, 1), ("b", 0.5, 2)]
    assert out[0].record.metadata["merged_ids"] == ["a"]
    assert out[0].components["dedup"] == {"score": 0.9, "rank": 1}
    assert "merged_ids" not in records[2].metadata
    assert len(NearDuplicateMerger().select("cat", hits_for(records, [0.9, 0.5, 0.4]), k=1)) == 1


def test_selectors_work_on_real_retriever_output():
    r = BM25Retriever()
    r.add([rec(i, t) for i, t in enumerate(["red fox", "red fox", "red hen", "blue fox"])])
    hits = r.search("red fox", k=4)
    out = NearDuplicateMerger(keep="first").select("red fox", hits, k=4)
    assert [h.id for h in out] == ["0", "2", "3"] and out[0].record.metadata["merged_ids"] == ["1"]
    assert r.get_record("0").metadata == {}
