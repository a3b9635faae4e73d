"""Every dialogue file in datasets/ loads and keeps the invariants the README promises."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from memlab.eval.loaders import load_dataset

ROOT = Path(__file__).resolve().parents[2] / "datasets"
FILES = sorted(ROOT.glob("*.json"))
REQUIRED = {"travel_advisor", "preference_change", "long_range_facts", "distractors", "multi_session_decay",
            "chinese_dialogue"}
CATEGORIES = {"single-hop", "multi-hop", "preference", "knowledge-update", "temporal", "unanswerable"}


def test_required_files_present():
    assert REQUIRED <= {f.stem for f in FILES}


@pytest.mark.parametrize("path", FILES, ids=[f.stem for f in FILES])
def test_invariants(path):
    ds = load_dataset(str(path))            # schema + semantic checks
    assert ds.name == path.stem
    assert ds.hash == load_dataset(str(path)).hash
    for d in ds:
        assert 10 <= d.n_turns <= 60, (d.id, d.n_turns)
        assert len(d.probes) >= 3
        roles = {t.role for t in d.turns()}
        assert roles == {"user", "assistant"}
        times = [t.timestamp for t in d.turns()]
        assert times == sorted(times)
        positions = d.turn_positions()
        for p in d.probes:
            assert p.category in CATEGORIES, p.category
            if p.category == "unanswerable":
                assert p.evidence == [] and p.answer is None
            else:
                assert p.evidence and p.answer
            asked_at = d.probe_position(p)
            assert all(positions[e] < asked_at for e in p.evidence)
            assert d.probe_time(p) >= d.turns()[asked_at - 1].timestamp
        for t in d.turns():
            assert t.text.strip()


def test_preference_change_gold_is_the_newer_turn():
    ds = load_dataset(str(ROOT / "preference_change.json"))
    coffee = ds.dialogue("coffee-to-tea")
    now = coffee.probes[0]
    assert now.category == "knowledge-update"
    assert "green tea" in coffee.turn(now.evidence[0]).text
    old = [t for t in coffee.turns() if "double espresso" in t.text][0]
    assert old.id not in now.evidence
    assert coffee.turn(now.evidence[0]).timestamp > old.timestamp


def test_decay_dataset_spans_weeks_and_probes_are_later():
    d = load_dataset(str(ROOT / "multi_session_decay.json")).dialogues[0]
    span_days = (d.sessions[-1].timestamp - d.sessions[0].timestamp) / 86400
    assert span_days >= 56 and len(d.sessions) >= 5
    assert all(d.probe_time(p) > d.turns()[d.probe_position(p) - 1].timestamp for p in d.probes)


def test_distractors_share_words_with_their_question():
    d = load_dataset(str(ROOT / "distractors.json")).dialogues[0]
    words = lambda s: set(re.findall(r"[a-z]+", s.lower()))
    for p in d.probes:
        if p.category != "single-hop":
            continue
        key = words(p.query) - {"what", "is", "the", "of", "user", "s", "which", "when", "did", "to", "a"}
        gold = set(p.evidence)
        sharing = [t for t in d.turns() if t.id not in gold and key & words(t.text)]
        assert sharing, p.id


def test_chinese_dialogue_is_chinese():
    d = load_dataset(str(ROOT / "chinese_dialogue.json")).dialogues[0]
    cjk = lambda s: sum("\u4e00" <= ch <= "\u9fff" for ch in s) / max(1, len(s))
    assert all(cjk(t.text) > 0.5 for t in d.turns())
    assert all(cjk(p.query) > 0.5 for p in d.probes)
