"""Validation of the native format: schema errors and semantic checks, with exact messages."""

from __future__ import annotations

import copy
import json

import pytest
from jsonschema import Draft202012Validator

from memlab.eval.dataset import DatasetError
from memlab.eval.loaders import dataset_from_dict, load_dataset, native_schema
from memlab.eval.loaders.checks import MAX_ERRORS

from ..helpers import doc, write

SRC = "datasets/x.json"


def turns(d, session=0):
    return d["dialogues"][0]["sessions"][session]["turns"]


def probe(d, i=0):
    return d["dialogues"][0]["probes"][i]


def error(mutate) -> str:
    d = doc()
    mutate(d)
    with pytest.raises(DatasetError) as info:
        dataset_from_dict(d, source=SRC)
    return str(info.value)


def test_schema_is_valid_draft_2020_12_and_accepts_the_base_document():
    Draft202012Validator.check_schema(native_schema())
    assert not list(Draft202012Validator(native_schema()).iter_errors(doc()))


@pytest.mark.parametrize("mutate, message", [
    (lambda d: turns(d)[2].pop("speaker"),
     "dialogue 'coffee', session 's1', turn 3 ('t3'): field 'speaker' is required"),
    (lambda d: turns(d)[1].update(role="bot"),
     "dialogue 'coffee', session 's1', turn 2 ('t2'): field 'role' must be one of "
     "'user', 'assistant', 'system', got 'bot'"),
    (lambda d: turns(d)[1].update(spekaer="x"),
     "dialogue 'coffee', session 's1', turn 2 ('t2'): unknown field 'spekaer' (did you mean 'speaker'?)"),
    (lambda d: turns(d)[1].update(text=5),
     "dialogue 'coffee', session 's1', turn 2 ('t2'): field 'text' must be a string, got number 5"),
    (lambda d: turns(d)[1].update(timestamp="yesterday"),
     "dialogue 'coffee', session 's1', turn 2 ('t2'): field 'timestamp' must be an ISO-8601 date-time "
     "(e.g. '2024-03-02T09:15:00Z'), got 'yesterday'"),
    (lambda d: d["dialogues"][0]["sessions"][0].update(timestamp="soon"),
     "dialogue 'coffee', session 's1': field 'timestamp' must be an ISO-8601 date-time "
     "(e.g. '2024-03-02T09:15:00Z'), got 'soon'"),
    (lambda d: d["dialogues"][0]["sessions"][0].update(turns="x"),
     "dialogue 'coffee', session 's1': field 'turns' must be an array, got string 'x'"),
    (lambda d: d["dialogues"][0].update(sessions=[]),
     "dialogue 'coffee': field 'sessions' must have at least 1 item(s), got 0"),
    (lambda d: probe(d).update(query=""), "dialogue 'coffee', probe 'p1': field 'query' must not be empty, got ''"),
    (lambda d: probe(d).update(evidence=[5]),
     "dialogue 'coffee', probe 'p1': field 'evidence[0]' must be a string, got number 5"),
    (lambda d: d.pop("dialogues"), "field 'dialogues' is required"),
])
def test_schema_errors_name_file_dialogue_turn_and_field(mutate, message):
    assert error(mutate) == f"{SRC}: {message}"


@pytest.mark.parametrize("mutate, message", [
    (lambda d: probe(d).update(evidence=["t33"]),
     "dialogue 'coffee', probe 'p1': field 'evidence': unknown turn id 't33' (did you mean 't3'?)"),
    (lambda d: probe(d).update(after_turn="t9"),
     "dialogue 'coffee', probe 'p1': field 'after_turn': unknown turn id 't9'"),
    (lambda d: probe(d).update(evidence=["t4"]),
     "dialogue 'coffee', probe 'p1': field 'evidence': turn 't4' comes after the probe is asked "
     "(after_turn 't3')"),
    (lambda d: probe(d).update(evidence=["t3", "t3"]),
     "dialogue 'coffee', probe 'p1': field 'evidence' lists a turn id twice"),
    (lambda d: turns(d)[1].update(id="t1"),
     "dialogue 'coffee', session 's1', turn 2 ('t1'): duplicate turn id 't1'"),
    (lambda d: probe(d, 1).update(id="p1"), "dialogue 'coffee', probe 'p1': duplicate probe id"),
    (lambda d: d["dialogues"][0]["sessions"][1].update(id="s1"), "dialogue 'coffee', session 's1': duplicate session id"),
    (lambda d: d["dialogues"].append(copy.deepcopy(d["dialogues"][0])), "dialogue 'coffee': duplicate dialogue id"),
    (lambda d: turns(d)[1].update(timestamp="2020-01-01T00:00:00Z"),
     "dialogue 'coffee', session 's1', turn 2 ('t2'): field 'timestamp' goes back in time "
     "(earlier than the previous turn)"),
    # t3 is said at 07:30:02Z (session start + 2 s); a probe after it cannot be asked before
    (lambda d: probe(d).update(timestamp="2024-02-05T07:30:01Z"),
     "dialogue 'coffee', probe 'p1': field 'timestamp' 2024-02-05T07:30:01Z is earlier than "
     "after_turn 't3' at 2024-02-05T07:30:02Z"),
    # no after_turn: asked after the last turn, t5 at 17:15:01Z (offsets shown in UTC)
    (lambda d: probe(d, 1).update(timestamp="2024-03-04T18:15:00+01:00"),
     "dialogue 'coffee', probe 'p2': field 'timestamp' 2024-03-04T17:15:00Z is earlier than "
     "the last turn 't5' (after_turn is None) at 2024-03-04T17:15:01Z"),
])
def test_semantic_errors(mutate, message):
    assert error(mutate) == f"{SRC}: {message}"


def test_all_errors_listed_in_document_order_and_capped():
    msg = error(lambda d: [t.pop("speaker") for t in turns(d)])
    assert msg.splitlines() == [f"{SRC}: dialogue 'coffee', session 's1', turn {i} ('t{i}'): "
                                f"field 'speaker' is required" for i in (1, 2, 3)]
    big = doc()
    many = [{"id": f"t{i}", "role": "user", "text": "x"} for i in range(1, 13)]
    big["dialogues"][0]["sessions"][0]["turns"] = many
    big["dialogues"][0]["probes"] = []
    lines = error(lambda d: d.update(big)).splitlines()
    assert len(lines) == MAX_ERRORS + 1
    assert lines[9].endswith("turn 10 ('t10'): field 'speaker' is required")  # 10 after 9, not after 1
    assert lines[-1] == "... and 2 more error(s)"


def test_dialogue_without_id_is_named_by_position():
    assert error(lambda d: d["dialogues"][0].pop("id")) == f"{SRC}: dialogue 1: field 'id' is required"


def test_file_errors(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"dialogues": [}', encoding="utf-8")
    with pytest.raises(DatasetError, match=r"bad.json: not valid JSON: .* at line 1, column 16"):
        load_dataset(str(bad))
    with pytest.raises(DatasetError, match="nothere.json: no such file"):
        load_dataset(str(tmp_path / "nothere.json"))
    d = doc()
    turns(d)[0].pop("role")
    path = write(tmp_path, d, "norole.json")
    with pytest.raises(DatasetError) as info:
        load_dataset(path)
    assert str(info.value) == f"{path}: dialogue 'coffee', session 's1', turn 1 ('t1'): field 'role' is required"


def test_schema_shipped_as_package_data():
    from importlib import resources
    text = resources.files("memlab.eval").joinpath("schema.json").read_text(encoding="utf-8")
    assert json.loads(text)["$defs"]["turn"]["required"] == ["id", "speaker", "role", "text"]


def test_probe_asked_at_the_time_of_its_turn_is_accepted():
    d = doc()
    probe(d).update(timestamp="2024-02-05T07:30:02Z")
    probe(d, 1).update(timestamp="2024-03-04T17:15:01Z")
    ds = dataset_from_dict(d, source=SRC)
    assert [p.timestamp for p in ds.dialogues[0].probes[:2]] == [1707118202.0, 1709572501.0]


def test_long_values_are_cut_to_80_characters():
    cut = "'" + "y" * 76 + "..."  # repr of the long string cut to 80 characters
    assert len(cut) == 80
    msg = error(lambda d: turns(d)[1].update(timestamp="y" * 500))
    assert msg == (f"{SRC}: dialogue 'coffee', session 's1', turn 2 ('t2'): field 'timestamp' must be "
                   f"an ISO-8601 date-time (e.g. '2024-03-02T09:15:00Z'), got {cut}")
    msg = error(lambda d: turns(d)[1].update(text=["y" * 500]))
    assert msg == (f"{SRC}: dialogue 'coffee', session 's1', turn 2 ('t2'): field 'text' must be "
                   f"a string, got array ['{'y' * 75}...")
    msg = error(lambda d: turns(d)[1].update(role="y" * 500))
    assert msg == (f"{SRC}: dialogue 'coffee', session 's1', turn 2 ('t2'): field 'role' must be "
                   f"one of 'user', 'assistant', 'system', got {cut}")
    msg = error(lambda d: probe(d).update(evidence=["y" * 500]))
    assert msg == f"{SRC}: dialogue 'coffee', probe 'p1': field 'evidence': unknown turn id {cut}"


def test_non_object_items_name_their_type():
    msg = error(lambda d: turns(d).__setitem__(0, "y" * 500))
    assert msg == f"{SRC}: dialogue 'coffee', session 's1', turn 1: must be an object, got string"
    msg = error(lambda d: d["dialogues"].append(7))
    assert msg == f"{SRC}: dialogue 2: must be an object, got number"


def test_a_locomo_file_read_as_native_says_so_in_one_short_line(tmp_path):
    locomo = [{"sample_id": "conv-1", "conversation": {"speaker_a": "A", "speaker_b": "B",
                                                       "session_1": [{"text": "x" * 5000}]},
               "qa": []}]
    path = write(tmp_path, locomo, "locomo.json")
    with pytest.raises(DatasetError) as info:
        load_dataset(path, format="native")
    assert str(info.value) == (
        f"{path}: expected a JSON object with 'dialogues' (native format), got a list; "
        f"is it a LoCoMo or LongMemEval file? pass --format (format= in Python)")
    with pytest.raises(DatasetError) as info:
        dataset_from_dict("z" * 500, source=SRC)
    assert str(info.value) == (
        f"{SRC}: expected a JSON object with 'dialogues' (native format), got string "
        f"'{'z' * 76}...; is it a LoCoMo or LongMemEval file? pass --format (format= in Python)")
