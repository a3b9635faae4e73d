"""Haystack scaling: histories of growing length around the same questions."""

from __future__ import annotations

from pathlib import Path

import pytest

from memlab.base import MemlabError
from memlab.eval.dataset import Session, Turn
from memlab.eval.haystack import FILLER_SPACING, evidence_sessions, grow_haystack, scaling_study
from memlab.eval.loaders import load_dataset
from memlab.eval.loaders.checks import check_dialogue
from memlab.eval.paths import LONGMEMEVAL_S, longmemeval_path

MINI = str(Path(__file__).parent.parent / "data" / "longmemeval_mini.json")


@pytest.fixture
def q():
    return load_dataset(MINI).dialogue("q_ssu_1")   # 3 sessions, the evidence in the second


def filler(n):
    return [Session(id=f"f{i}", timestamp=1_000.0 * i, turns=[
        Turn(id=f"f{i}:1", speaker="user", role="user", text=f"filler {i}", timestamp=1_000.0 * i,
             session_id=f"f{i}")]) for i in range(n)]


def test_sizes_keep_the_evidence_and_the_date_order(q):
    ev = evidence_sessions(q)
    assert ev == [q.sessions[1].id]
    assert [s.id for s in grow_haystack(q, "evidence").sessions] == ev
    assert [s.id for s in grow_haystack(q, 1).sessions] == ev          # never fewer than the evidence
    assert [s.id for s in grow_haystack(q, 2).sessions] == [q.sessions[0].id, q.sessions[1].id]
    assert [s.id for s in grow_haystack(q, 3).sessions] == [s.id for s in q.sessions]
    for size in ("evidence", 1, 2, 3):
        g = grow_haystack(q, size)
        check_dialogue(g)
        assert g.probes[0].evidence == q.probes[0].evidence and g.probes[0].timestamp == q.probes[0].timestamp


def test_beyond_the_haystack_filler_precedes_it(q):
    g = grow_haystack(q, 6, filler(5) + filler(2))   # repeated ids count once
    assert [s.id for s in g.sessions] == ["f0", "f1", "f2"] + [s.id for s in q.sessions]
    first = q.sessions[0].timestamp
    assert [s.timestamp for s in g.sessions[:3]] == [first - 3 * FILLER_SPACING, first - 2 * FILLER_SPACING,
                                                     first - FILLER_SPACING]
    assert g.sessions[0].turns[0].timestamp == g.sessions[0].timestamp
    check_dialogue(g)
    assert len(q.sessions) == 3   # the original is untouched
    with pytest.raises(MemlabError, match="4 filler sessions needed for size 7, 2 given"):
        grow_haystack(q, 7, filler(2))
    with pytest.raises(MemlabError, match="size must be 'evidence' or an int >= 1, got 0"):
        grow_haystack(q, 0)


S = longmemeval_path(LONGMEMEVAL_S)


@pytest.mark.skipif(S is None, reason="../shared/datasets/longmemeval absent")
def test_scaling_study_on_two_s_questions():
    from memlab.eval.loaders.checks import iter_json_array
    ids = []
    for item in iter_json_array(str(S)):
        ids.append(item["question_id"])
        if len(ids) == 2:
            break
    study = scaling_study(str(S), ids, {"bm25": ("bm25", {})}, sizes=("evidence", 5, 60), budget=256,
                          filler_margin=0)
    rows = study["rows"]
    assert [r["size"] for r in rows] == ["evidence", 5, 60]
    assert rows[1]["mean_sessions"] == 5 and rows[2]["mean_sessions"] == 60
    assert all(0 <= r["recall@256tok"] <= 1 and r["n_scored"] == 2 for r in rows)
    assert rows[0]["recall@256tok_ci"][0] <= rows[0]["recall@256tok"] <= rows[0]["recall@256tok_ci"][1]
