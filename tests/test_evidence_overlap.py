"""memlab.eval.overlap: the formulas on a dialogue small enough to count by hand, and the
record bench/evidence_overlap.py wrote recomputed from the data it names."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from memlab.eval.dataset import Dataset, Dialogue, Probe, Session, Turn
from memlab.eval.overlap import evidence_overlap, overlap_summary
from memlab.eval.provenance import file_sha256

REPO = Path(__file__).resolve().parents[1]
RECORD = REPO / "bench" / "results" / "evidence_overlap.json"


def _dataset() -> Dataset:
    said = ["I moved to Lisbon in May", "Lisbon is sunny", "We talked about Lisbon and May plans",
            "My cat is called Tom", "Tom likes fish"]
    turns = [Turn(f"t{i}", "Ana", "user", text, 100.0 + i, "s1") for i, text in enumerate(said)]
    probes = [Probe("p1", None, "When did Ana move to Lisbon?", evidence=["t0"], category="a"),
              Probe("p2", None, "What is the cat called, and what does Tom eat?", evidence=["t3", "t4"],
                    category="b"),
              Probe("p3", "t1", "Lisbon May?", evidence=["t0", "missing"], category="a"),
              Probe("p4", None, "Who?", evidence=["t1"], category="b"),  # only stop words: Q is empty
              Probe("p5", None, "Anything?", evidence=[], category="b")]  # unscored: left out
    return Dataset("tiny", [Dialogue("d", [Session("s1", 100.0, turns)], probes)])


def test_overlap_low_and_rivals_by_hand():
    rows = evidence_overlap(_dataset()).set_index("probe_id")
    assert list(rows.index) == ["p1", "p2", "p3", "p4"]
    # p1: Q = {ana, move, lisbon} (stop words out, stemmed); t0 holds move ("moved") and lisbon
    p1 = rows.loc["p1"]
    assert p1["question_terms"] == 3 and p1["overlap"] == pytest.approx(2 / 3) and not p1["low"]
    # t2 holds lisbon only (1 < 2 shared): no rival
    assert p1["rivals"] == 0
    # p2: Q = {cat, call, tom, eat}; t3 holds cat, call, tom (3/4), t4 tom (1/4): mean 1/2, not low
    p2 = rows.loc["p2"]
    assert p2["overlap"] == pytest.approx(0.5) and not p2["low"] and p2["rivals"] == 0
    # p3 is asked after t1: observed turns t0, t1; Q = {lisbon, may}; t0 holds both (the unknown
    # id is skipped), t1 holds lisbon: 1 < 2, no rival; t2 (both words) is not yet observed
    p3 = rows.loc["p3"]
    assert p3["overlap"] == pytest.approx(1.0) and p3["rivals"] == 0 and p3["evidence_words"] == 6
    assert math.isnan(rows.loc["p4", "overlap"]) and not rows.loc["p4", "low"]


def test_rivals_count_turns_that_share_as_many_words():
    data = _dataset()
    data.dialogues[0].probes = [Probe("q", None, "Lisbon plans", evidence=["t1"], category="a")]
    row = evidence_overlap(data).iloc[0]
    # Q = {lisbon, plan}; t1 holds lisbon (1 shared, share 1/2): t0 holds 1 too, t2 holds 2
    assert row["overlap"] == pytest.approx(0.5) and row["rivals"] == 2 and not row["low"]
    summary = overlap_summary(evidence_overlap(_dataset()))
    b = summary.set_index("category").loc["b"]
    assert b["n"] == 2 and b["overlap"] == pytest.approx(0.5)  # p4's NaN is left out of the mean


@pytest.fixture(scope="module")
def overlap_bench(bench_script):
    return bench_script("evidence_overlap.py", "evidence_overlap")


def test_the_record_recomputes_from_its_data(overlap_bench):
    record = json.loads(RECORD.read_text(encoding="utf-8"))
    p = record["provenance"]
    assert p["status"] == "complete" and p["git_dirty"] is False
    found = {key: (path, fmt) for key, path, fmt in overlap_bench.default_datasets()}
    if set(found) != set(record["benchmarks"]):
        pytest.skip(f"needs LoCoMo and BEAM 100K here; found {sorted(found)}")
    for key, (path, fmt) in found.items():
        assert overlap_bench.section(path, fmt) == {k: v for k, v in record["benchmarks"][key].items()
                                                     if k in ("all", "categories")}, key
    from memlab.eval.dataset_files import dataset_files

    here = {file_sha256(f) for path, _ in found.values() for f in dataset_files(path)}
    assert here == set(p["data"].values())
