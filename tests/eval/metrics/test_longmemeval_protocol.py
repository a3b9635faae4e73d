"""memlab's ``lme_*`` metrics equal LongMemEval's own retrieval code on real S dev questions.

The oracle is ``bench/longmemeval_code.py``: LongMemEval's corpus-id construction
(``process_item_flat_index``: user turns, ``noans`` renaming of the non-evidence turns of
answer sessions), ``evaluate_retrieval`` / ``evaluate_retrieval_turn2session`` and the
skip rules of its ``run_retrieval.py``, transcribed from github.com/xiaowu0162/LongMemEval
(commit 9e0b455, MIT). memlab's ranked lists for real questions are mapped onto its corpus
ids and scored by it; every value must equal memlab's column to the last digit.
"""

from __future__ import annotations

import importlib.util
import json
import math
from pathlib import Path

import numpy as np
import pytest

from memlab import strategies
from memlab.eval import replay
from memlab.eval.loaders import load_dataset
from memlab.eval.loaders.checks import iter_json_array
from memlab.eval.paths import LONGMEMEVAL_S, longmemeval_path

ROOT = Path(__file__).resolve().parents[3]
_spec = importlib.util.spec_from_file_location("longmemeval_code", ROOT / "bench" / "longmemeval_code.py")
lme = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(lme)  # type: ignore[union-attr]

KS = tuple(lme.KS)
NAMES = {("session", "recall_any"): "lme_recall_any", ("session", "recall_all"): "lme_recall_all",
         ("session", "ndcg_any"): "lme_ndcg_any", ("turn", "recall_any"): "lme_turn_recall_any",
         ("turn", "recall_all"): "lme_turn_recall_all", ("turn", "ndcg_any"): "lme_turn_ndcg_any"}
# S dev positions: 36 ordinary questions (3, 4 and 31 list a session twice), abstention questions
# with and without has_answer turns (51, 104, 183, 292), and single-session-assistant questions
# whose evidence is an assistant turn (356, 357, 370): LongMemEval skips the last two kinds.
SELECT = list(range(36)) + [51, 104, 183, 292, 356, 357, 370]


def _turns(dialogue, item):
    """memlab turn ids ("<neutral session>:<position>") -> (published session id, position)."""
    out = []
    for tid in item:
        nid, pos = tid.rsplit(":", 1)
        out.append((dialogue.metadata["session_ids"][nid], pos))
    return out


def _check_equal(rows, dataset, entries, ks=KS):
    """Every lme_* value of every row equals the transcription on the same ranked list."""
    by_id = {e["question_id"]: e for e in entries}
    official = []
    for _, row in rows.iterrows():
        entry = by_id[row["dialogue_id"]]
        _, corpus_ids, correct = lme.corpus_of(entry)
        d = dataset.dialogue(row["dialogue_id"])
        turns = [t for item in row["retrieved_source_ids"] for t in _turns(d, item)]
        rankings = lme.rankings_from_turn_ids(entry, corpus_ids, turns)
        metrics = lme.question_metrics(rankings, correct, corpus_ids, ks=ks)
        official.append(metrics)
        skip = lme.skipped(entry)
        for (level, name), column in NAMES.items():
            for k in ks:
                mine = row[f"{column}@{k}"]
                if skip is not None:
                    assert math.isnan(mine), (row["dialogue_id"], column, k, skip)
                else:
                    assert mine == metrics[level][f"{name}@{k}"], (row["dialogue_id"], column, k)
    return official


@pytest.fixture(scope="module")
def s_dev(tmp_path_factory):
    path = longmemeval_path(LONGMEMEVAL_S)
    if path is None:
        pytest.skip("LongMemEval S dev is not here (../shared/datasets/longmemeval or MEMLAB_LONGMEMEVAL)")
    wanted = set(SELECT)
    entries = [e for i, e in enumerate(iter_json_array(str(path))) if i in wanted]
    sample = tmp_path_factory.mktemp("lme") / "s_sample.json"
    sample.write_text(json.dumps(entries), encoding="utf-8")
    return entries, load_dataset(str(sample), format="longmemeval")


def test_the_sample_holds_every_case_the_protocol_treats_apart(s_dev):
    entries, _ = s_dev
    reasons = [lme.skipped(e) for e in entries]
    assert reasons.count("abstention") == 4 and reasons.count("no_target") == 3
    noans = [e for e in entries if any(c.startswith("noans") for c in lme.corpus_of(e)[1])]
    assert len(noans) >= 30   # answer sessions with turns that are not evidence: the renaming matters
    assert sum(len(set(e["haystack_session_ids"])) < len(e["haystack_session_ids"]) for e in entries) == 5   # 3, 4, 31, 292, 370


@pytest.mark.parametrize("name", ["bm25", "bm25_plus"])
def test_lme_metrics_equal_longmemevals_code_on_memlabs_lists(s_dev, name):
    entries, dataset = s_dev
    rows = replay(strategies.get(name), dataset, ks=KS)
    official = _check_equal(rows, dataset, entries)
    # the averages, with LongMemEval's skip rules, equal memlab's means over its scored rows
    averaged, ignored = lme.average(entries, official)
    scored = rows[rows["lme_recall_any@5"].notna()]
    assert len(scored) == len(entries) - len(ignored["abstention"]) - len(ignored["no_target"]) == 36
    for (level, metric), column in NAMES.items():
        for k in KS:
            assert np.mean(scored[f"{column}@{k}"].tolist()) == averaged[level][f"{metric}@{k}"]


def test_flat_bm25_ranks_as_longmemevals_flat_bm25(s_dev):
    """Same scores for every turn; the same ranking wherever the haystack is in date order with
    no session listed twice (elsewhere equal scores may be listed in another order)."""
    entries, dataset = s_dev
    rows = replay(strategies.get("flat_bm25"), dataset, ks=KS)
    _check_equal(rows, dataset, entries)
    same_order = 0
    for entry, (_, row) in zip(entries, rows.iterrows()):
        corpus, corpus_ids, _ = lme.corpus_of(entry)
        theirs = lme.flat_bm25_rankings(entry["question"], corpus)
        d = dataset.dialogue(row["dialogue_id"])
        mine = lme.rankings_from_turn_ids(entry, corpus_ids, [t for i in row["retrieved_source_ids"]
                                                               for t in _turns(d, i)])
        from rank_bm25 import BM25Okapi
        scores = BM25Okapi([doc.split(" ") for doc in corpus]).get_scores(entry["question"].split(" "))
        ids = entry["haystack_session_ids"]
        if len(set(ids)) == len(ids):
            assert row["retrieved_scores"] == [float(scores[i]) for i in mine]
        dates = [lme_date(x) for x in entry["haystack_dates"]]
        if dates == sorted(dates) and len(set(ids)) == len(ids):
            assert mine == [int(i) for i in theirs[:len(mine)]]
            same_order += 1
    assert same_order >= 10


def lme_date(text):
    from memlab.eval.loaders.longmemeval import parse_longmemeval_date

    return parse_longmemeval_date(text)


def _synthetic(tmp_path):
    """One answer session whose non-evidence turn matches the question best."""
    def session(*turns):
        return [{"role": r, "content": c, **({"has_answer": h} if h is not None else {})} for r, c, h in turns]

    entry = {
        "question_id": "q1", "question_type": "single-session-user", "question": "which blue car did I buy",
        "answer": "a Mini", "question_date": "2023/05/30 (Tue) 10:00",
        "haystack_session_ids": ["filler_1", "answer_a1", "filler_2"],
        "haystack_dates": ["2023/05/20 (Sat) 10:00", "2023/05/21 (Sun) 10:00", "2023/05/22 (Mon) 10:00"],
        "haystack_sessions": [
            session(("user", "my sister likes tea", None), ("assistant", "nice", None)),
            session(("user", "which blue car did I buy is a question for later", False),
                    ("assistant", "ok", False), ("user", "I got a Mini", True)),
            session(("user", "car talk: blue is a color", None)),
        ],
        "answer_session_ids": ["answer_a1"],
    }
    path = tmp_path / "synthetic.json"
    path.write_text(json.dumps([entry]), encoding="utf-8")
    return entry, load_dataset(str(path), format="longmemeval")


def test_a_non_evidence_turn_of_the_answer_session_finds_nothing(tmp_path):
    """Under the old mapping (every turn of an answer session counts) the first hit scores;
    under LongMemEval's it is a ``noans`` unit: no session is found at k = 1, and it takes a slot."""
    entry, dataset = _synthetic(tmp_path)
    rows = replay(strategies.get("flat_bm25"), dataset, ks=(1, 2, 3))
    row = rows.iloc[0]
    d = dataset.dialogue("q1")
    assert _turns(d, row["retrieved_source_ids"][0]) == [("answer_a1", "1")]   # the non-evidence turn first
    assert row["session_hit_rate@1"] == 1.0          # memlab's lenient session metric counts it
    assert row["lme_recall_any@1"] == 0.0            # LongMemEval's does not
    _check_equal(rows, dataset, [entry], ks=(1, 2, 3))
    # the three turns carry three labels (noans a1, filler 2, a1 or so): k = 3 reaches the gold
    assert row["lme_recall_any@3"] == 1.0
