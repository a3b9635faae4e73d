"""The dataset model and the native loader's happy path."""

from __future__ import annotations

import json

import pytest

from memlab.base import MemlabError
from memlab.eval.dataset import Dataset, DatasetError, format_time, parse_time
from memlab.eval.loaders import dataset_from_dict, load_dataset, sniff_format
from memlab.records import MemoryRecord, Role

from .helpers import doc, write

S1 = 1707118200.0  # 2024-02-05T07:30:00Z
S2 = 1709572200.0  # 2024-03-04T17:10:00Z (written as 18:10+01:00)


@pytest.fixture
def ds(tmp_path) -> Dataset:
    return load_dataset(write(tmp_path, doc()))


def test_structure_and_counts(ds):
    assert ds.name == "coffee" and len(ds) == 1 and ds.n_probes == 3 and ds.n_turns == 5 and ds.n_sessions == 2
    d = ds.dialogue("coffee")
    assert [t.id for t in d.turns()] == ["t1", "t2", "t3", "t4", "t5"]
    assert d.turn_positions() == {"t1": 0, "t2": 1, "t3": 2, "t4": 3, "t5": 4}
    assert [s.id for s in d.sessions] == ["s1", "s2"]
    assert d.turn("t4").session_id == "s2"
    assert ds.categories() == ["knowledge-update", "single-hop"]
    assert len(ds.report) == 0 and ds.report.summary() == "nothing fixed or dropped"


def test_timestamps_parsed_and_defaulted(ds):
    d = ds.dialogues[0]
    # s1 has no per-turn times: start, +1 s, +2 s. s2 starts 17:10Z; t4 says 17:15Z; t5 follows t4 by 1 s.
    assert [t.timestamp for t in d.turns()] == [S1, S1 + 1, S1 + 2, S2 + 300, S2 + 301]
    assert d.sessions[1].timestamp == S2


def test_probe_time_and_position(ds):
    d = ds.dialogues[0]
    p1, p2, p3 = d.probes
    assert d.probe_position(p1) == 3 and d.probe_position(p2) == 5
    assert d.probe_time(p1) == S1 + 2                      # the time of t3
    assert d.probe_time(p2) == 1710057600.0                # its own timestamp
    assert p3.evidence == [] and p3.answer is None


def test_timeline_order(ds):
    events = [(kind, e.id) for kind, e in ds.dialogues[0].timeline()]
    assert events == [("turn", "t1"), ("turn", "t2"), ("turn", "t3"), ("probe", "p1"), ("probe", "p3"),
                      ("turn", "t4"), ("turn", "t5"), ("probe", "p2")]


def test_to_records(ds):
    records = ds.dialogues[0].to_records()
    assert all(isinstance(r, MemoryRecord) for r in records)
    r = records[3]
    assert (r.id, r.role, r.content, r.timestamp) == ("t4", Role.USER, "I switched to green tea.", S2 + 300)
    assert r.metadata == {"speaker": "Maya", "session_id": "s2", "dia_id": "t4", "dialogue_id": "coffee"}
    assert records[1].role is Role.ASSISTANT
    assert r.source_ids == ["t4"]


def test_content_overrides_text_in_records(tmp_path):
    d = doc()
    d["dialogues"][0]["sessions"][0]["turns"][0]["content"] = 'Maya said, "espresso"'
    ds = load_dataset(write(tmp_path, d))
    turn = ds.dialogues[0].turns()[0]
    assert turn.text == "I drink a double espresso every morning."
    assert turn.to_record().content == 'Maya said, "espresso"'


def test_hash_is_stable_and_content_sensitive(tmp_path):
    a = load_dataset(write(tmp_path, doc(), "a.json"))
    renamed = doc()
    renamed["name"] = "other name"
    b = load_dataset(write(tmp_path, renamed, "b.json"))
    assert a.hash == b.hash and len(a.hash) == 64
    changed = doc()
    changed["dialogues"][0]["sessions"][0]["turns"][0]["text"] = "I drink tea."
    assert load_dataset(write(tmp_path, changed, "c.json")).hash != a.hash
    # The same canonical text, hashed independently.
    import hashlib
    from dataclasses import asdict
    text = json.dumps([asdict(x) for x in a.dialogues], sort_keys=True, ensure_ascii=False,
                      separators=(",", ":"))
    assert a.hash == hashlib.sha256(text.encode("utf-8")).hexdigest()


def test_save_and_reload_round_trip(ds, tmp_path):
    path = tmp_path / "saved.json"
    ds.save(str(path))
    again = load_dataset(str(path))
    assert again.hash == ds.hash and again.name == ds.name
    saved = json.loads(path.read_text(encoding="utf-8"))
    assert saved["dialogues"][0]["sessions"][1]["turns"][0]["timestamp"] == "2024-03-04T17:15:00Z"


def test_subset(ds):
    only = ds.subset(categories=["knowledge-update"])
    assert [p.id for p in only.dialogues[0].probes] == ["p2"]
    assert [p.id for p in ds.dialogues[0].probes] == ["p1", "p2", "p3"]  # original untouched
    assert ds.subset(max_probes=1).n_probes == 1
    assert ds.subset(dialogues=0).n_probes == 0
    with pytest.raises(DatasetError, match=r"unknown categories \['nope'\]"):
        ds.subset(categories=["nope"])
    with pytest.raises(DatasetError, match="has no dialogue 'zzz'"):
        ds.subset(dialogues=["zzz"])


def test_time_helpers():
    assert parse_time("2024-02-05T07:30:00Z") == S1
    assert parse_time("2024-02-05T08:30:00+01:00") == S1
    assert parse_time("2024-02-05T07:30:00") == S1          # no offset: UTC
    assert parse_time("2024-02-05") == S1 - 7.5 * 3600
    assert format_time(S1) == "2024-02-05T07:30:00Z"
    assert format_time(S1 + 0.25) == "2024-02-05T07:30:00.250000Z"
    with pytest.raises(ValueError):
        parse_time("5 Feb 2024")


def test_detect_format_and_errors(tmp_path):
    def shape(name, doc):
        p = tmp_path / name
        p.write_text(json.dumps(doc), encoding="utf-8")
        return sniff_format(str(p))

    assert shape("n.json", {"dialogues": []}) == "native"
    assert shape("l.json", [{"conversation": {}, "qa": []}]) == "locomo"
    assert shape("m.json", [{"question_id": "q", "haystack_sessions": []}]) == "longmemeval"
    assert shape("x.json", [1, 2]) is None
    path = write(tmp_path, {"something": 1})
    with pytest.raises(DatasetError, match="cannot tell the format"):
        load_dataset(path)
    with pytest.raises(DatasetError, match="unknown dataset format 'locomo2'. Did you mean 'locomo'"):
        load_dataset(path, format="locomo2")
    with pytest.raises(DatasetError, match="unknown option of the 'locomo' loader 'probe_positon'. "
                                           "Did you mean 'probe_position'"):
        load_dataset(path, format="locomo", probe_positon="end")
    assert issubclass(DatasetError, MemlabError)


def test_dataset_from_dict_uses_default_name():
    d = doc()
    del d["name"]
    assert dataset_from_dict(d, default_name="fallback").name == "fallback"


def test_positions_follow_edits_of_the_dialogue(ds):
    """Positions and times are indexed once per dialogue, and the index follows in-place edits."""
    import copy
    import pickle

    from memlab.eval.dataset import Session, Turn

    d = ds.dialogue("coffee")
    probe = d.probes[0]
    before = d.probe_position(probe)
    first = d.sessions[0]
    first.turns.insert(0, Turn("t0", "Ana", "user", "hi", first.turns[0].timestamp - 1, first.id))
    assert d.probe_position(probe) == before + 1
    assert [t.id for t in d.turns()][:2] == ["t0", "t1"] and d.turn("t0").text == "hi"
    d.sessions.append(Session("s3", S2 + 10, [Turn("t9", "Ana", "user", "late", S2 + 10, "s3")]))
    assert [e[1].id for e in d.timeline() if e[0] == "turn"][-1] == "t9"
    assert d.probe_time(type(probe)("px", "t9", "q")) == S2 + 10
    d.turn("t9").timestamp = S2 + 20  # a changed time is read from the turn itself
    assert d.probe_time(type(probe)("px", "t9", "q")) == S2 + 20
    d.turn("t9").id = "t10"  # a changed id is found again, the old one is gone
    assert d.probe_position(type(probe)("px", "t10", "q")) == d.n_turns
    with pytest.raises(DatasetError, match="after_turn 't9' is not a turn"):
        d.probe_position(type(probe)("px", "t9", "q"))
    for other in (copy.deepcopy(d), pickle.loads(pickle.dumps(d))):
        assert other == d and "_index_cache" not in other.__dict__
        assert other.timeline() == d.timeline()


def test_hash_is_the_sha256_of_the_asdict_json(ds):
    import hashlib
    from dataclasses import asdict

    ds.dialogues[0].metadata["nested"] = {"b": [1, (2, 3)], "a": None}
    ds.dialogues[0].probes[0].metadata["tags"] = ("x", "y")
    text = json.dumps([asdict(d) for d in ds.dialogues], sort_keys=True, ensure_ascii=False,
                      separators=(",", ":"), allow_nan=False)
    assert ds.hash == hashlib.sha256(text.encode("utf-8")).hexdigest()
