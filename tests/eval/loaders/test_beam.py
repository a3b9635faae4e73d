"""BEAM (Tavakoli et al., 2025): the loader on small folders built here, its errors, and on the real data.

The synthetic folders mirror BEAM's published layout (``<size>/<n>/chat.json.gz`` and
``probing_questions/probing_questions.json.gz``) with one quirk at a time. The tests on the
real data read ``../shared/datasets/beam`` (or ``$MEMLAB_BEAM``) and are skipped without it;
nothing of the data is copied into the repository.
"""

from __future__ import annotations

import gzip
import importlib
import importlib.util
import json
import re
import sys
import types
from pathlib import Path
from typing import Any

import pytest

from memlab.eval.dataset import DatasetError, LoadReport
from memlab.eval.loaders import beam as beam_module
from memlab.eval.loaders.beam import ABILITIES, is_beam, iter_beam, load_beam, parse_beam_anchor
from memlab.eval.paths import beam_path

DAY = 86400.0


# -- a small conversation in BEAM's shape -----------------------------------------------------------

def chat() -> list[dict[str, Any]]:
    """Two batches; the first user message of each has the time anchor; plan markers as published."""
    return [
        {"batch_number": 1, "time_anchor": None, "turns": [
            [{"role": "user", "id": 0, "time_anchor": "March-15-2024", "index": "1,1", "question_type": "main_question",
              "content": "I'm planning my budget app; the deadline is March 15. ->-> 1,1"},
             {"role": "assistant", "id": 1, "content": "Let's plan the milestones."}],
            [{"role": "user", "id": 2, "index": "1,2", "question_type": "main_question",
              "content": "I use Flask 2.2 with SQLite. ->-> 1,2"},
             {"role": "assistant", "id": 3, "content": "Flask and SQLite work well together."}],
        ]},
        {"batch_number": 2, "time_anchor": None, "turns": [
            [{"role": "user", "id": 4, "time_anchor": "April-02-2024", "index": "2,1", "question_type": "main_question",
              "content": "The dashboard API now answers in 250ms. ->-> 2,1"},
             {"role": "assistant", "id": 5, "content": "Caching helped a lot."}],
            [{"role": "user", "id": 6, "question_type": "followup_question",
              "content": "I have never written a Flask route."},
             {"role": "assistant", "id": 7, "content": "Here is a first route."}],
        ]},
    ]


def questions() -> dict[str, list[dict[str, Any]]]:
    return {
        "abstention": [{"question": "What did my manager say?", "ideal_response": "Based on the provided chat, "
                        "there is no information.", "plan_reference": "Batch 2, Bullet 1", "rubric": ["no info"]}],
        "contradiction_resolution": [{"question": "Have I written Flask routes?", "ideal_answer": "You said both.",
                                      "source_chat_ids": {"first_statement": [6], "second_statement": [2, 6]}}],
        "event_ordering": [{"question": "In what order did I bring things up?", "answer": "Deadline, stack, API.",
                            "source_chat_ids": [0, [2, 4]]}],
        "information_extraction": [{"question": "Which framework do I use?", "answer": "Flask 2.2",
                                    "source_chat_ids": [2, 3]}],
        "instruction_following": [{"question": "Show me a login route.", "expected_compliance": "code blocks",
                                   "source_chat_ids": [2]}],
        "knowledge_update": [{"question": "How fast is the dashboard API?", "answer": "250ms",
                              "source_chat_ids": {"original_info": [3], "updated_info": [4]}}],
        "summarization": [{"question": "Summarise my project.", "ideal_summary": "A Flask budget app.",
                           "conversation_sessions": [0, 2, 4], "bullet_points_covered": 3}],
        "temporal_reasoning": [{"question": "How long between the deadline and the API news?", "answer": 18,
                                "source_chat_ids": {"first_event": [0], "second_event": [4]}}],
    }


def write_json(path: Path, doc: Any, gz: bool = True) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    data = json.dumps(doc).encode("utf-8")
    target = path.with_name(path.name + ".gz") if gz else path
    target.write_bytes(gzip.compress(data) if gz else data)
    return target


def conversation(root: Path, n: str = "1", size: str = "100K", chat_doc: Any = None, questions_doc: Any = None,
                 gz: bool = True) -> Path:
    folder = root / size / n
    write_json(folder / "chat.json", chat() if chat_doc is None else chat_doc, gz)
    write_json(folder / "probing_questions" / "probing_questions.json",
               questions() if questions_doc is None else questions_doc, gz)
    return folder


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    return conversation(tmp_path)


# -- the mapping ----------------------------------------------------------------------------------

def test_a_conversation_is_one_dialogue_of_batches_and_messages(folder):
    ds = load_beam(str(folder))
    assert ds.name == "beam" and len(ds) == 1
    d = ds.dialogues[0]
    assert d.id == "100K-1"
    assert [s.id for s in d.sessions] == ["batch-1", "batch-2"]
    turns = d.turns()
    assert [t.id for t in turns] == [str(i) for i in range(8)]
    assert [t.role for t in turns] == ["user", "assistant"] * 4
    assert all(t.speaker == t.role for t in turns)
    assert turns[0].metadata == {"time_anchor": "March-15-2024", "index": "1,1", "question_type": "main_question"}


def test_times_come_from_the_anchors_one_step_per_message(folder):
    d = load_beam(str(folder), turn_spacing=2.0).dialogues[0]
    start1, start2 = parse_beam_anchor("March-15-2024"), parse_beam_anchor("April-02-2024")
    expected = [start1 + 2.0 * i for i in range(4)] + [start2 + 2.0 * i for i in range(4)]
    assert [t.timestamp for t in d.turns()] == expected
    assert [s.timestamp for s in d.sessions] == [start1, start2]
    assert (start2 - start1) / DAY == 18


def test_plan_markers_are_removed_and_reported(folder):
    ds = load_beam(str(folder))
    texts = [t.text for t in ds.dialogues[0].turns()]
    assert not any("->->" in t for t in texts)
    assert texts[0] == "I'm planning my budget app; the deadline is March 15."
    assert ds.report.counts()["index_marker_stripped"] == 1
    assert "3 message(s)" in ds.report.of_kind("index_marker_stripped")[0]["detail"]
    kept = load_beam(str(folder), strip_markers=False).dialogues[0].turns()[0].text
    assert kept.endswith("->-> 1,1")


def test_a_marker_with_the_generator_notes_goes_whole(tmp_path):
    doc = chat()
    msg = doc[0]["turns"][0][0]
    msg["index"] = "1,(N/A, no bullet fits) Career: a note"
    msg["content"] = "How do I plan? ->-> 1,(N/A, no bullet fits) Career: a note"
    doc[1]["turns"][1][1]["content"] = "Sure ->-> 2,9Please respond only in English.\nAssistant\n\nHere it is."
    d = load_beam(str(conversation(tmp_path, chat_doc=doc))).dialogues[0]
    assert d.turns()[0].text == "How do I plan?"
    assert d.turns()[7].text == "SurePlease respond only in English.\nAssistant\n\nHere it is."


def test_probes_by_ability_asked_after_the_last_turn(folder):
    d = load_beam(str(folder)).dialogues[0]
    by_id = {p.id: p for p in d.probes}
    assert list(by_id) == ["abstention-1", "contradiction_resolution-1", "event_ordering-1",
                           "information_extraction-1", "instruction_following-1", "knowledge_update-1",
                           "summarization-1", "temporal_reasoning-1"]
    assert all(p.after_turn is None and p.timestamp is None for p in d.probes)
    assert {p.category for p in d.probes} <= set(ABILITIES)
    assert by_id["abstention-1"].answer.startswith("Based on the provided chat")
    assert by_id["contradiction_resolution-1"].answer == "You said both."
    assert by_id["summarization-1"].answer == "A Flask budget app."
    assert by_id["temporal_reasoning-1"].answer == "18"           # an int answer becomes text
    assert by_id["instruction_following-1"].answer is None       # judged by a rubric
    assert by_id["abstention-1"].metadata["plan_reference"] == "Batch 2, Bullet 1"
    assert "question" not in by_id["abstention-1"].metadata


def test_evidence_is_the_referenced_messages(folder):
    ds = load_beam(str(folder))
    by_id = {p.id: p for p in ds.dialogues[0].probes}
    assert by_id["abstention-1"].evidence == []
    assert by_id["contradiction_resolution-1"].evidence == ["6", "2"]     # groups in order, 6 once
    assert by_id["event_ordering-1"].evidence == ["0", "2", "4"]          # nested list flattened
    assert by_id["information_extraction-1"].evidence == ["2", "3"]       # assistant messages count
    assert by_id["temporal_reasoning-1"].evidence == ["0", "4"]
    assert by_id["summarization-1"].evidence == ["0", "2", "4"]           # from conversation_sessions
    counts = ds.report.counts()
    assert counts["abstention_unscored"] == 1
    assert counts["evidence_nested_flattened"] == 1
    assert counts["evidence_duplicate_dropped"] == 1
    assert counts["evidence_from_conversation_sessions"] == 1
    assert counts["answer_absent"] == 1
    assert counts["answer_int_to_str"] == 1


def test_knowledge_update_the_original_statement_is_stale(folder):
    p = {p.id: p for p in load_beam(str(folder)).dialogues[0].probes}["knowledge_update-1"]
    assert (p.evidence, p.stale_evidence) == (["4"], ["3"])
    both = {p.id: p for p in load_beam(str(folder), stale_original=False).dialogues[0].probes}["knowledge_update-1"]
    assert (both.evidence, both.stale_evidence) == (["3", "4"], [])


@pytest.mark.parametrize("original, updated, kind, evidence, stale", [
    ([4], [4], "update_same_message", ["4"], []),
    ([3], [], "update_unreferenced", [], ["3"]),
])
def test_knowledge_update_quirks(tmp_path, original, updated, kind, evidence, stale):
    q = questions()
    q["knowledge_update"][0]["source_chat_ids"] = {"original_info": original, "updated_info": updated}
    ds = load_beam(str(conversation(tmp_path, questions_doc=q)))
    p = {p.id: p for p in ds.dialogues[0].probes}["knowledge_update-1"]
    assert (p.evidence, p.stale_evidence) == (evidence, stale)
    assert [e["probe"] for e in ds.report.of_kind(kind)] == ["knowledge_update-1"]


@pytest.mark.parametrize("ids, kind, evidence", [
    ([2, 99], "evidence_unknown_dropped", ["2"]),
    ([2, "chat_id: 3"], "evidence_malformed_dropped", ["2"]),
    ([2, True], "evidence_malformed_dropped", ["2"]),
    (["3", 2], None, ["3", "2"]),                   # digits as text are an id
    ([], "evidence_empty", []),
])
def test_unresolvable_evidence_is_dropped_and_reported(tmp_path, ids, kind, evidence):
    q = questions()
    q["information_extraction"][0]["source_chat_ids"] = ids
    ds = load_beam(str(conversation(tmp_path, questions_doc=q)))
    p = {p.id: p for p in ds.dialogues[0].probes}["information_extraction-1"]
    assert p.evidence == evidence
    if kind is not None:
        assert "information_extraction-1" in [e.get("probe") for e in ds.report.of_kind(kind)]


def test_a_question_without_references_is_kept_unscored(tmp_path):
    q = questions()
    del q["information_extraction"][0]["source_chat_ids"]
    ds = load_beam(str(conversation(tmp_path, questions_doc=q)))
    p = {p.id: p for p in ds.dialogues[0].probes}["information_extraction-1"]
    assert p.evidence == []
    assert [e["probe"] for e in ds.report.of_kind("evidence_absent")] == ["information_extraction-1"]


def test_roles_choose_the_units_and_drop_evidence_of_other_roles(folder):
    ds = load_beam(str(folder), roles=("user",))
    d = ds.dialogues[0]
    assert [t.id for t in d.turns()] == ["0", "2", "4", "6"]
    p = {p.id: p for p in d.probes}
    assert p["information_extraction-1"].evidence == ["2"]            # 3 is an assistant message
    assert p["knowledge_update-1"].stale_evidence == []               # 3 as well
    assert ds.report.of_kind("evidence_role_dropped")
    assert load_beam(str(folder), roles="all").n_turns == load_beam(str(folder), roles=None).n_turns == 8
    with pytest.raises(DatasetError, match=r"roles must be a non-empty list of roles among user, assistant, system"):
        load_beam(str(folder), roles=("users",))


def test_a_batch_without_anchor_continues_the_clock(tmp_path):
    doc = chat()
    del doc[1]["turns"][0][0]["time_anchor"]
    ds = load_beam(str(conversation(tmp_path, chat_doc=doc)))
    times = [t.timestamp for t in ds.dialogues[0].turns()]
    assert times == [parse_beam_anchor("March-15-2024") + i for i in range(8)]
    assert [e["session"] for e in ds.report.of_kind("time_anchor_missing")] == ["batch-2"]


def test_messages_before_the_first_anchor_are_dated_back_from_it(tmp_path):
    doc = chat()
    del doc[0]["turns"][0][0]["time_anchor"]
    ds = load_beam(str(conversation(tmp_path, chat_doc=doc)))
    times = [t.timestamp for t in ds.dialogues[0].turns()]
    april = parse_beam_anchor("April-02-2024")
    assert times[:4] == [april - 4 + i for i in range(4)]
    assert ds.report.of_kind("time_anchor_missing")[0]["session"] == "batch-1"


def test_an_anchor_that_goes_back_is_clamped(tmp_path):
    doc = chat()
    doc[1]["turns"][0][0]["time_anchor"] = "March-01-2024"
    ds = load_beam(str(conversation(tmp_path, chat_doc=doc)))
    times = [t.timestamp for t in ds.dialogues[0].turns()]
    assert times == sorted(times)
    assert times[4] == times[3] + 1
    assert ds.report.counts()["time_anchor_backwards"] == 1


def test_a_batch_level_anchor_dates_its_first_message(tmp_path):
    doc = chat()
    del doc[1]["turns"][0][0]["time_anchor"]
    doc[1]["time_anchor"] = "April-10-2024"
    d = load_beam(str(conversation(tmp_path, chat_doc=doc))).dialogues[0]
    assert d.sessions[1].timestamp == parse_beam_anchor("April-10-2024")


def test_a_size_folder_is_every_conversation_in_number_order(tmp_path):
    for n in ("10", "2", "1"):
        conversation(tmp_path, n)
    (tmp_path / "100K" / "3" / "probing_questions").mkdir(parents=True)   # questions only, as in 1M
    write_json(tmp_path / "100K" / "3" / "probing_questions" / "probing_questions.json", questions())
    (tmp_path / "100K" / "README.md").write_text("not a conversation")
    ds = load_beam(str(tmp_path / "100K"))
    assert [d.id for d in ds.dialogues] == ["100K-1", "100K-2", "100K-10"]
    assert [e["dialogue"] for e in ds.report.of_kind("chat_missing")] == ["100K-3"]
    report = LoadReport()
    it = iter_beam(str(tmp_path / "100K"), report=report)
    first = next(it)
    assert first.id == "100K-1"
    assert [d.id for d in it] == ["100K-2", "100K-10"]
    assert report.counts()["chat_missing"] == 1


def test_plain_json_and_gzip_load_the_same(tmp_path):
    a = load_beam(str(conversation(tmp_path / "a", gz=True)))
    b = load_beam(str(conversation(tmp_path / "b", gz=False)))
    assert a.hash == b.hash


def test_detect_looks_at_names_only(tmp_path, folder):
    assert is_beam(str(folder)) and is_beam(str(folder.parent))
    assert not is_beam(str(tmp_path))                      # a folder of size folders is not one form
    assert not is_beam(str(folder / "chat.json.gz"))       # a file
    assert not is_beam(str(tmp_path / "nowhere"))
    (tmp_path / "other" / "x").mkdir(parents=True)
    assert not is_beam(str(tmp_path / "other"))


def _fresh_beam(monkeypatch, registry: Any) -> Any:
    """A second copy of memlab/eval/loaders/beam.py, imported inside the loaders package with
    ``registry`` standing for memlab.eval.loaders.registry (None: absent). The imported module
    itself is left alone: registering it twice would be an error where the registry exists."""
    monkeypatch.setitem(sys.modules, "memlab.eval.loaders.registry", registry)
    spec = importlib.util.spec_from_file_location("memlab.eval.loaders._beam_copy", beam_module.__file__)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_registration_call_matches_the_registry_api(monkeypatch):
    """Once memlab.eval.loaders.registry exists, importing beam registers it with the registry's
    API (name, load=, detect=, iterate=, doc=); without it the module imports all the same."""
    import inspect

    calls = []
    fake = types.ModuleType("memlab.eval.loaders.registry")
    fake.register_loader = lambda name, **kw: calls.append((name, kw))  # type: ignore[attr-defined]
    module = _fresh_beam(monkeypatch, fake)
    assert len(calls) == 1
    name, kw = calls[0]
    assert name == "beam" and set(kw) == {"load", "detect", "iterate", "doc"}
    assert kw["load"] is module.load_beam and kw["detect"] is module.is_beam and kw["iterate"] is module.iter_beam
    assert kw["doc"].startswith("BEAM (Tavakoli et al., 2025)")
    # the registry requires iterate to take load's options and a report
    options = [p for p in inspect.signature(module.load_beam).parameters if p != "path"]
    assert set(options) | {"report"} <= set(inspect.signature(module.iter_beam).parameters)
    without = _fresh_beam(monkeypatch, None)  # a None entry makes the import fail, as a missing module does
    assert without.register_loader is None and len(calls) == 1


# -- errors name the file, conversation, message or question, and the field -----------------------

def _mutated_chat(mutate):
    doc = chat()
    mutate(doc)
    return doc


def _mutated_questions(mutate):
    doc = questions()
    mutate(doc)
    return doc


CHAT_ERRORS = [
    ("not_array", {"batches": []}, r"chat\.json\.gz: conversation '100K-1': expected an array of batches, got object"),
    ("batch_not_object", [3], r"conversation '100K-1', batch 1: expected an object, got number 3"),
    ("no_turns", _mutated_chat(lambda d: d[0].pop("turns")), r"batch 1: field 'turns' is required"),
    ("group_not_array", _mutated_chat(lambda d: d[0]["turns"].__setitem__(0, {"role": "user"})),
     r"batch 1: field 'turns' item 1 must be an array of messages, got object"),
    ("message_not_object", _mutated_chat(lambda d: d[0]["turns"][0].__setitem__(1, "hi")),
     r"batch 1, message 2: expected an object, got string 'hi'"),
    ("no_id", _mutated_chat(lambda d: d[0]["turns"][0][1].pop("id")), r"batch 1, message 2: field 'id' is required"),
    ("id_float", _mutated_chat(lambda d: d[0]["turns"][0][1].__setitem__("id", 1.5)),
     r"batch 1, message 2: field 'id' must be an integer or a non-empty string, got number 1.5"),
    ("duplicate_id", _mutated_chat(lambda d: d[1]["turns"][0][1].__setitem__("id", 1)),
     r"batch 2, message 2 \(id 1\): duplicate message id 1 \(first at batch 1, message 2\)"),
    ("no_role", _mutated_chat(lambda d: d[0]["turns"][1][0].pop("role")),
     r"batch 1, message 3 \(id 2\): field 'role' is required"),
    ("bad_role", _mutated_chat(lambda d: d[0]["turns"][1][0].__setitem__("role", "bot")),
     r"batch 1, message 3 \(id 2\): field 'role' must be one of 'user', 'assistant', 'system', got 'bot'"),
    ("content_null", _mutated_chat(lambda d: d[0]["turns"][1][1].__setitem__("content", None)),
     r"batch 1, message 4 \(id 3\): field 'content' must be a string, got null"),
    ("anchor_feb_30", _mutated_chat(lambda d: d[0]["turns"][0][0].__setitem__("time_anchor", "February-30-2024")),
     r"message 1 \(id 0\): field 'time_anchor': 'February-30-2024' is not a date"),
    ("anchor_garbage", _mutated_chat(lambda d: d[0]["turns"][0][0].__setitem__("time_anchor", "15/03/2024")),
     r"field 'time_anchor': expected a date like 'March-15-2024', got '15/03/2024'"),
    ("batch_number_text", _mutated_chat(lambda d: d[0].__setitem__("batch_number", "one")),
     r"batch 1: field 'batch_number' must be an integer, got string 'one'"),
]

QUESTION_ERRORS = [
    ("questions_array", [], r"probing_questions\.json\.gz: conversation '100K-1': expected an object of questions "
                            r"by ability, got array"),
    ("ability_not_array", _mutated_questions(lambda d: d.__setitem__("abstention", {"question": "x"})),
     r"conversation '100K-1': field 'abstention' must be an array of questions, got object"),
    ("question_not_object", _mutated_questions(lambda d: d["event_ordering"].append("why?")),
     r"question 'event_ordering-2': expected an object, got string 'why\?'"),
    ("no_question", _mutated_questions(lambda d: d["event_ordering"][0].pop("question")),
     r"question 'event_ordering-1': field 'question' is required"),
    ("question_number", _mutated_questions(lambda d: d["event_ordering"][0].__setitem__("question", 7)),
     r"question 'event_ordering-1': field 'question' must be a string, got number 7"),
    ("question_blank", _mutated_questions(lambda d: d["event_ordering"][0].__setitem__("question", "  ")),
     r"question 'event_ordering-1': field 'question' must not be empty"),
]


@pytest.mark.parametrize("name, doc, message", CHAT_ERRORS, ids=[c[0] for c in CHAT_ERRORS])
def test_a_malformed_chat_names_file_message_and_field(tmp_path, name, doc, message):
    folder = conversation(tmp_path, chat_doc=doc)
    with pytest.raises(DatasetError) as info:
        load_beam(str(folder))
    text = str(info.value)
    assert text.startswith(f"{folder / 'chat.json.gz'}: "), text
    assert re.search(message, text), text
    assert "\n" not in text


@pytest.mark.parametrize("name, doc, message", QUESTION_ERRORS, ids=[c[0] for c in QUESTION_ERRORS])
def test_a_malformed_questions_file_names_file_question_and_field(tmp_path, name, doc, message):
    folder = conversation(tmp_path, questions_doc=doc)
    with pytest.raises(DatasetError) as info:
        load_beam(str(folder))
    text = str(info.value)
    assert text.startswith(f"{folder / 'probing_questions' / 'probing_questions.json.gz'}: "), text
    assert re.search(message, text), text


def test_a_folder_that_is_no_beam_folder_says_what_was_expected(tmp_path, folder):
    with pytest.raises(DatasetError, match=r"nowhere: no such folder"):
        load_beam(str(tmp_path / "nowhere"))
    with pytest.raises(DatasetError, match=r"expected a BEAM folder .*got a file"):
        load_beam(str(folder / "chat.json.gz"))
    (tmp_path / "empty").mkdir()
    with pytest.raises(DatasetError, match=r"empty: no BEAM conversation here \(expected chat\.json\(\.gz\)"):
        load_beam(str(tmp_path / "empty"))
    (folder / "probing_questions" / "probing_questions.json.gz").unlink()
    with pytest.raises(DatasetError, match=r"probing_questions\.json: no such file \(nor \.gz\)"):
        load_beam(str(folder))


def test_both_plain_and_gzip_files_are_ambiguous(folder):
    (folder / "chat.json").write_text(json.dumps(chat()))
    with pytest.raises(DatasetError, match=r"both chat\.json and chat\.json\.gz are here; keep one"):
        load_beam(str(folder))


def test_a_bad_option_is_an_error():
    with pytest.raises(DatasetError, match=r"turn_spacing must be > 0 seconds, got 0"):
        list(iter_beam("anything", turn_spacing=0))


# -- the real data ----------------------------------------------------------------------------------

BEAM_100K = beam_path("100K")
real = pytest.mark.skipif(BEAM_100K is None, reason="../shared/datasets/beam absent (or set $MEMLAB_BEAM)")


@pytest.fixture(scope="module")
def first_100k():
    return load_beam(str(BEAM_100K / "1"))


@real
def test_real_conversation_loads_with_abilities_and_evidence(first_100k):
    d = first_100k.dialogues[0]
    assert d.id == "100K-1" and len(d.sessions) >= 3
    assert {p.category for p in d.probes} == set(ABILITIES)
    # every question but the abstention ones has evidence, or the report says why not
    unscored = {p.id for p in d.probes if not p.evidence and p.category != "abstention"}
    said = {e["probe"] for kind in ("evidence_empty", "evidence_absent", "update_unreferenced")
            for e in first_100k.report.of_kind(kind)}
    assert unscored == said
    assert not [p for p in d.probes if p.category == "abstention" and p.evidence]
    assert not any("->->" in t.text for t in d.turns())
    times = [t.timestamp for t in d.turns()]
    assert times == sorted(times)


@real
def test_real_markers_link_questions_to_messages():
    """Why the markers go: most abstention questions' plan_reference ("Batch 3, Bullet 2", a
    free text) names a bullet whose marker some message carries, and the messages the questions
    reference carry markers more often than the other user messages."""
    named = found = referenced = marked_referenced = users = marked_users = 0
    for d in iter_beam(str(BEAM_100K), strip_markers=False):
        markers = {re.sub(r"\s", "", x) for t in d.turns() for x in re.findall(r"->->\s*(\d+\s*,\s*\d+)", t.text)}
        for p in d.probes:
            m = re.match(r"batch (\d+)\D*?bullets? (\d+)", p.metadata.get("plan_reference", ""), re.IGNORECASE)
            if p.category == "abstention" and m:
                named += 1
                found += f"{m.group(1)},{m.group(2)}" in markers
        ids = {e for p in d.probes for e in p.evidence}
        for t in d.turns():
            if t.role == "user":
                users += 1
                marked_users += "->->" in t.text
                if t.id in ids:
                    referenced += 1
                    marked_referenced += "->->" in t.text
    assert named and found / named > 0.8
    assert marked_referenced / referenced > marked_users / users


@real
def test_real_size_folder_streams_every_conversation():
    report = LoadReport()
    ids = [d.id for d in iter_beam(str(BEAM_100K), report=report)]
    assert len(ids) == len({p.name for p in BEAM_100K.iterdir() if p.is_dir()}) and ids[0] == "100K-1"
    assert report.counts()["index_marker_stripped"] == len(ids)


@real
def test_real_replay_rows_have_abilities_as_categories_and_evidence(first_100k):
    from memlab.eval import replay
    from memlab.eval.metrics import summarize
    from memlab.strategies import get

    rows = replay(get("bm25"), first_100k, ks=(5, 10), budgets=(1024,), label="bm25")
    assert set(rows["category"]) == set(ABILITIES)
    scored = rows[rows["gold"].map(len) > 0]
    assert len(scored) and all(set(g) <= {t.id for t in first_100k.dialogues[0].turns()} for g in scored["gold"])
    assert rows.loc[rows["category"] == "abstention", "recall@5"].isna().all()
    table = summarize(rows, by=["strategy"], per_category=True, ci=True)
    assert set(table["category"]) == set(ABILITIES) | {"all"}
    overall = table[table["category"] == "all"].iloc[0]
    assert 0 <= overall["recall@5_ci_low"] <= overall["recall@5"] <= overall["recall@5_ci_high"] <= 1
    assert overall["n_scored"] == len(scored)


@real
def test_real_strategy_sees_no_marker_nor_label(first_100k):
    """Everything a strategy is shown (records and queries) holds no plan marker, no ability
    name and no reference id field."""
    from memlab.eval import replay
    from memlab.records import Hit, MemoryRecord
    from memlab.strategy import Context, Strategy

    shown: list[str] = []

    class Recorder(Strategy):
        def reset(self) -> None:
            self.records: list[MemoryRecord] = []

        def observe(self, record: MemoryRecord) -> None:
            self.records.append(record)
            shown.append(json.dumps({"id": record.id, "metadata": record.metadata, "content": record.content},
                                    default=str))

        def retrieve(self, query: str, k: int = 5, *, where: Any = None, now: float | None = None) -> list[Hit]:
            shown.append(query)
            return [Hit(r, 1.0, r.timestamp, rank=n, components={}) for n, r in enumerate(self.records[:k], 1)]

        def build_context(self, query: str, *, now: float | None = None) -> Context:
            return Context.of([], None)

    replay(Recorder(), first_100k, ks=(5,))
    assert shown
    text = "\n".join(shown)
    assert "->->" not in text
    for word in ("source_chat_ids", "plan_reference", "question_type", "time_anchor", "\"index\""):
        assert word not in text, word


def test_a_records_data_files_are_the_files_the_loader_reads(tmp_path):
    """dataset_files (what a record's provenance hashes) of a BEAM folder: each conversation's
    chat and questions files, found in its subfolders, none from a hidden folder; a change to
    any one of them changes the record's data hashes."""
    from memlab.eval.dataset_files import dataset_files
    from memlab.eval.loaders.beam import conversation_files

    root = tmp_path / "100K"
    for n in ("1", "2"):
        conversation(tmp_path, n)
    (root / ".cache").mkdir()
    write_json(root / ".cache" / "x.json", {})
    expected = sorted(f for n in ("1", "2") for f in conversation_files(root / n))
    assert len(expected) == 4 and dataset_files(root) == expected
    assert dataset_files(root / "1") == conversation_files(root / "1")
