"""Every dialogue file in datasets/ loads and keeps the invariants the README promises."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from memlab.eval.loaders import load_dataset

ROOT = Path(__file__).resolve().parents[2] / "datasets"
FILES = sorted(ROOT.glob("*.json"))
REQUIRED = {"travel_advisor", "preference_change", "long_range_facts", "distractors", "multi_session_decay",
            "chinese_dialogue", "memory_lifecycle"}
CATEGORIES = {"single-hop", "multi-hop", "preference", "knowledge-update", "temporal", "unanswerable",
              "abstraction"}
#: (dialogues, turns, probes, probes naming stale evidence) per shipped file
SIZES = {"travel_advisor": (1, 40, 9, 0), "preference_change": (2, 45, 11, 6), "long_range_facts": (1, 56, 7, 0),
         "distractors": (1, 34, 7, 0), "multi_session_decay": (1, 38, 9, 4), "chinese_dialogue": (1, 32, 8, 1),
         "memory_lifecycle": (2, 78, 21, 6)}


def test_required_files_present():
    assert REQUIRED <= {f.stem for f in FILES}


@pytest.mark.parametrize("name", sorted(SIZES))
def test_sizes(name):
    ds = load_dataset(str(ROOT / f"{name}.json"))
    stale = sum(bool(p.stale_evidence) for d in ds for p in d.probes)
    assert (len(ds), ds.n_turns, ds.n_probes, stale) == SIZES[name]


@pytest.mark.parametrize("path", FILES, ids=[f.stem for f in FILES])
def test_every_changed_fact_names_its_stale_turns(path):
    """A knowledge-update probe names the superseded turns, each said before the newest gold turn."""
    for d in load_dataset(str(path)):
        positions = d.turn_positions()
        for p in d.probes:
            if p.category == "knowledge-update":
                assert p.stale_evidence, (d.id, p.id)
            if p.stale_evidence:
                assert p.category == "knowledge-update", (d.id, p.id)
                assert max(positions[s] for s in p.stale_evidence) < max(positions[e] for e in p.evidence)


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


def test_memory_lifecycle_has_updates_merges_patterns_in_two_languages():
    ds = load_dataset(str(ROOT / "memory_lifecycle.json"))
    cjk = lambda s: sum("\u4e00" <= ch <= "\u9fff" for ch in s) / max(1, len(s))
    english, chinese = ds.dialogues
    assert all(cjk(t.text) == 0 for t in english.turns())
    assert all(cjk(t.text) > 0.5 for t in chinese.turns())
    for d in ds:
        by_cat = {}
        for p in d.probes:
            by_cat.setdefault(p.category, []).append(p)
        # one preference updated twice: the current-state probe names two stale turns
        assert max(len(p.stale_evidence) for p in by_cat["knowledge-update"]) == 2
        # past states are asked too, with a superseded turn as gold
        stale_turns = {s for p in by_cat["knowledge-update"] for s in p.stale_evidence}
        assert len([p for p in by_cat["temporal"] if set(p.evidence) & stale_turns]) >= 3
        # a pattern recurs over three or more turns; facts to merge span two turns
        assert max(len(p.evidence) for p in by_cat["abstraction"]) >= 4
        assert by_cat["multi-hop"] and by_cat["single-hop"]
        # a repeated fact: some single-hop probe has two gold turns (the fact said twice)
        assert any(len(p.evidence) == 2 for p in by_cat["single-hop"])
