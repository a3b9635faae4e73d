"""LoCoMo loader: every pitfall on a small fixture, and the published counts on the real file."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from memlab.eval.dataset import DatasetError
from memlab.eval.loaders import (
    load_dataset,
    load_locomo,
    locomo_turn_content,
    parse_locomo_date,
)
from memlab.eval.loaders.checks import check_dialogue
from memlab.eval.paths import locomo_path

MINI = str(Path(__file__).parent.parent.parent / "data" / "locomo_mini.json")
#: The published file where this machine has it (memlab.eval.paths), else None: those tests skip.
REAL = locomo_path()
S1 = 1683554160.0  # 1:56 pm on 8 May, 2023 (UTC)
S2 = 1687169040.0  # 10:04 am on 19 June, 2023


@pytest.fixture(scope="module")
def mini():
    return load_dataset(MINI)


def test_detected_and_structured(mini):
    assert mini.name == "locomo" and len(mini) == 1
    d = mini.dialogues[0]
    assert d.id == "conv-mini"
    assert [s.id for s in d.sessions] == ["session_1", "session_2"]   # session_3 has only a date
    assert [t.id for t in d.turns()] == ["D1:1", "D1:2", "D1:3", "D2:1", "D2:2"]
    assert [t.timestamp for t in d.turns()] == [S1, S1 + 1, S1 + 2, S2, S2 + 1]
    assert [t.role for t in d.turns()] == ["user", "assistant", "user", "assistant", "user"]
    assert d.metadata == {"speaker_a": "Ana", "speaker_b": "Ben"}
    check_dialogue(d)  # the normalised dialogue passes the native semantic checks


def test_turn_content_rule(mini):
    t1, t2 = mini.dialogues[0].turns()[:2]
    assert t1.content == 'Ana said, "I adopted a cat named Miso last week!"'
    assert t2.content == 'Ben said, "Congrats! Here\'s my dog." and shared a photo of a dog on a sofa.'
    assert t2.text == "Congrats! Here's my dog."
    assert t2.metadata["blip_caption"] == "a photo of a dog on a sofa"
    assert t2.to_record().content == t2.content
    plain = load_dataset(MINI, include_caption=False).dialogues[0].turns()[1]
    assert plain.content == 'Ben said, "Congrats! Here\'s my dog."'
    dated = load_dataset(MINI, include_date=True).dialogues[0].turns()[0]
    assert dated.content == '(1:56 pm on 8 May, 2023) Ana said, "I adopted a cat named Miso last week!"'
    assert locomo_turn_content("A", "hi", "x", "d") == '(d) A said, "hi" and shared x.'


def test_probes_normalised(mini):
    probes = {p.id: p for p in mini.dialogues[0].probes}
    assert list(probes) == ["q001", "q002", "q003", "q004", "q005", "q006", "q007"]
    assert probes["q001"].category == "single-hop" and probes["q001"].metadata == {"category_code": 4}
    assert probes["q002"].answer == "2022" and probes["q002"].category == "temporal"
    assert probes["q003"].evidence == ["D1:3", "D2:2"] and probes["q003"].category == "multi-hop"
    assert probes["q004"].evidence == ["D1:1", "D1:2"]
    q5 = probes["q005"]
    assert (q5.evidence, q5.answer, q5.category) == (["D2:2"], None, "adversarial")
    assert q5.metadata == {"category_code": 5, "adversarial_answer": "paints", "evidence_raw": ["D:2:2"]}
    assert probes["q006"].evidence == [] and probes["q006"].category == "open-domain"
    assert probes["q007"].evidence == ["D1:2"]
    assert all(p.after_turn is None for p in probes.values())


def test_report_counts_every_fix(mini):
    assert mini.report.counts() == {
        "answer_int_to_str": 1, "answer_missing": 1, "dangling_date_time": 1, "evidence_duplicate_dropped": 1,
        "evidence_empty": 1, "evidence_malformed_dropped": 1, "evidence_repaired": 2, "evidence_split": 2,
        "evidence_unknown_dropped": 1}
    repaired = [e["detail"] for e in mini.report.of_kind("evidence_repaired")]
    assert repaired == ["'D:2:2' -> 'D2:2'", "'D1:02' -> 'D1:2'"]
    assert mini.report.of_kind("evidence_unknown_dropped")[0]["probe"] == "q007"
    frame = mini.report.to_frame()
    assert list(frame.columns) == ["kind", "dialogue", "detail", "probe"]
    assert len(frame) == len(mini.report) == 11


def test_probe_position_after_evidence(mini):
    ds = load_dataset(MINI, probe_position="after_evidence")
    d = ds.dialogues[0]
    after = {p.id: p.after_turn for p in d.probes}
    assert after == {"q001": "D1:1", "q002": "D2:1", "q003": "D2:2", "q004": "D1:2", "q005": "D2:2",
                     "q006": None, "q007": "D1:2"}
    check_dialogue(d)
    assert ds.hash != mini.hash
    events = [e.id for kind, e in d.timeline()]
    assert events[:4] == ["D1:1", "q001", "D1:2", "q004"]


def test_dates_and_options():
    assert parse_locomo_date("1:56 pm on 8 May, 2023") == S1
    assert parse_locomo_date("12:05 am on 1 January, 2024") == 1704067500.0
    assert parse_locomo_date("12:30 pm on 1 January, 2024") == 1704112200.0
    with pytest.raises(ValueError, match="expected a date like"):
        parse_locomo_date("8 May 2023")
    with pytest.raises(DatasetError, match="probe_position must be 'end' or 'after_evidence', got 'start'"):
        load_locomo(MINI, probe_position="start")


needs_real = pytest.mark.skipif(REAL is None, reason="LoCoMo absent (../shared/datasets/locomo/locomo10.json or $MEMLAB_LOCOMO)")


@needs_real
def test_real_locomo_counts_and_report():
    ds = load_dataset(str(REAL))
    assert (len(ds), ds.n_sessions, ds.n_turns, ds.n_probes) == (10, 272, 5882, 1986)
    cats = Counter(p.category for d in ds for p in d.probes)
    assert cats == {"single-hop": 841, "multi-hop": 282, "temporal": 321, "open-domain": 96, "adversarial": 446}
    assert ds.report.counts() == {
        "answer_int_to_str": 6, "answer_missing": 444, "dangling_date_time": 16, "evidence_duplicate_dropped": 1,
        "evidence_empty": 4, "evidence_malformed_dropped": 1, "evidence_repaired": 2, "evidence_split": 4,
        "evidence_unknown_dropped": 2}
    unknown = sorted((e["dialogue"], e["detail"]) for e in ds.report.of_kind("evidence_unknown_dropped"))
    assert unknown == [("conv-42", "'D10:19' is not a turn of conv-42"), ("conv-47", "'D4:36' is not a turn of conv-47")]
    conv50 = ds.dialogue("conv-50")
    camera = [p for p in conv50.probes if p.query == "When did Dave buy a vintage camera?"][0]
    assert camera.evidence == ["D30:5"]
    assert all(isinstance(p.answer, str) for d in ds for p in d.probes if p.category != "adversarial")
    assert sum(1 for d in ds for p in d.probes if not p.evidence) == 4
    for d in ds:
        check_dialogue(d)


@needs_real
def test_real_locomo_after_evidence_is_valid():
    ds = load_dataset(str(REAL), probe_position="after_evidence")
    for d in ds:
        check_dialogue(d)
        positions = d.turn_positions()
        for p in d.probes:
            if p.evidence:
                assert positions[p.after_turn] == max(positions[e] for e in p.evidence)
