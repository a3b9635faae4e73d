"""LongMemEval loader on a small file written in the published schema."""

from __future__ import annotations

from pathlib import Path

import pytest

from memlab.eval.dataset import DatasetError
from memlab.eval.loaders import load_dataset, neutral_session_id, parse_longmemeval_date
from memlab.eval.loaders.checks import check_dialogue

MINI = str(Path(__file__).parent.parent.parent / "data" / "longmemeval_mini.json")
N = neutral_session_id  # published session id -> the id the dataset uses


def test_neutral_ids_are_a_hash_of_the_published_ones():
    import hashlib

    assert N("answer_s1") == "s" + hashlib.sha256(b"answer_s1").hexdigest()[:10]


@pytest.fixture(scope="module")
def ds():
    return load_dataset(MINI, roles=None)   # every turn (the default keeps user turns only)


def test_user_turns_by_default(ds):
    users = load_dataset(MINI)
    assert users.n_turns == 7 and {t.role for d in users for t in d.turns()} == {"user"}
    assert [p.evidence for d in users for p in d.probes] == [p.evidence for d in ds for p in d.probes]


def test_one_dialogue_per_question(ds):
    assert ds.name == "longmemeval"
    assert [d.id for d in ds] == ["q_ssu_1", "q_ssa_2", "q_ku_3_abs"]
    assert ds.n_probes == 3 and ds.n_turns == 14
    for d in ds:
        assert [p.id for p in d.probes] == [d.id]
        assert d.probes[0].after_turn is None
        check_dialogue(d)


def test_turn_ids_times_and_roles(ds):
    d = ds.dialogue("q_ssu_1")
    a1, s1 = N("sharegpt_a1"), N("answer_s1")
    assert [t.id for t in d.turns()][:4] == [f"{a1}:1", f"{a1}:2", f"{s1}:1", f"{s1}:2"]
    assert d.metadata["session_ids"][s1] == "answer_s1"   # the way back, never shown to a strategy
    t = d.turn(f"{s1}:1")
    start = parse_longmemeval_date("2023/05/22 (Mon) 10:05")
    assert start == 1684749900.0
    assert (t.role, t.speaker, t.timestamp, t.session_id) == ("user", "user", start, s1)
    assert d.turn(f"{s1}:2").timestamp == start + 1
    assert t.metadata == {"has_answer": True}


def test_evidence_from_has_answer_user_turns(ds):
    p = ds.dialogue("q_ssu_1").probes[0]
    assert p.evidence == [f"{N('answer_s1')}:1"]
    assert (p.query, p.answer, p.category) == ("What degree did I graduate with?", "Business Administration",
                                               "single-session-user")
    assert p.timestamp == parse_longmemeval_date("2023/05/30 (Tue) 23:40")
    assert p.metadata == {"evidence_sessions": [N("answer_s1")], "abstention": False,
                          "question_date": "2023/05/30 (Tue) 23:40"}


def test_no_user_evidence_is_unscored_as_longmemeval_skips_it_and_reordering(ds):
    d = ds.dialogue("q_ssa_2")
    assert [s.id for s in d.sessions] == [N("sharegpt_c3"), N("answer_s2")]   # sorted by date
    p = d.probes[0]
    # the has_answer turn is an assistant turn: LongMemEval's run_retrieval.py skips the question
    assert p.evidence == []
    assert p.answer == "60"
    both = load_dataset(MINI, evidence_roles=("user", "assistant"), roles=None).dialogue("q_ssa_2").probes[0]
    assert both.evidence == [f"{N('answer_s2')}:2"]


def test_abstention_unscored_and_report(ds):
    assert ds.report.counts() == load_dataset(MINI).report.counts()
    p = ds.dialogue("q_ku_3_abs").probes[0]
    assert p.evidence == [] and p.metadata["abstention"] is True
    assert p.metadata["evidence_sessions"] == []   # unscored at the session level too
    assert ds.report.counts() == {"abstention_unscored": 1, "answer_int_to_str": 1,
                                  "evidence_empty": 1, "sessions_reordered": 1}


def test_bad_files(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text('[{"question_id": "q1", "question": "x", "haystack_session_ids": ["a"], '
                    '"haystack_dates": ["2023/05/20 (Sat) 02:21", "2023/05/21 (Sun) 02:21"], '
                    '"haystack_sessions": [[]]}]', encoding="utf-8")
    with pytest.raises(DatasetError, match=r"question 'q1': haystack_session_ids, haystack_dates and "
                                           r"haystack_sessions must have the same length, got 1, 2, 1"):
        load_dataset(str(path), format="longmemeval")
    path.write_text('[{"question_id": "q1", "question": "x", "haystack_session_ids": ["a"], '
                    '"haystack_dates": ["May 20"], "haystack_sessions": [[]]}]', encoding="utf-8")
    with pytest.raises(DatasetError, match=r"question 'q1', session 'a': field 'haystack_dates': expected a date"):
        load_dataset(str(path), format="longmemeval")
    path.write_text('[{"question_id": "q1"}]', encoding="utf-8")
    with pytest.raises(DatasetError, match=r"question 'q1': field 'question' is required"):
        load_dataset(str(path), format="longmemeval")
