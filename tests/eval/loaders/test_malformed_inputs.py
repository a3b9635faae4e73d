"""A corpus of malformed inputs: every one is one line on stderr naming the file and field, exit 2,
and nothing written.

Each case writes one small file (native, LoCoMo, LongMemEval, sweep TOML) from a valid base
with one defect, runs the CLI's ``main()`` in-process (a few run as real subprocesses at the end)
and checks the message, the exit status and that the folder holds only the input file.
"""

from __future__ import annotations

import copy
import json
import math
import re
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable

import pytest

from memlab.cli import main
from memlab.eval.loaders import load_dataset
from memlab.eval.loaders.checks import MAX_DEPTH, MAX_TEXT_CHARS

from ..helpers import doc as native_doc

DATA = Path(__file__).resolve().parents[2] / "data"


def locomo_doc() -> list[dict[str, Any]]:
    return json.loads((DATA / "locomo_mini.json").read_text(encoding="utf-8"))


def lme_doc() -> list[dict[str, Any]]:
    return json.loads((DATA / "longmemeval_mini.json").read_text(encoding="utf-8"))


def _json(make: Callable[[], Any], mutate: Callable[[Any], Any]) -> Callable[[], bytes]:
    def build() -> bytes:
        d = make()
        mutate(d)
        return json.dumps(d).encode("utf-8")
    return build


def native(mutate):
    return _json(native_doc, mutate)


def locomo(mutate):
    return _json(locomo_doc, mutate)


def lme(mutate):
    return _json(lme_doc, mutate)


def raw(data: bytes):
    return lambda: data


def deep(n: int) -> bytes:
    return b"[" * n + b"]" * n


def nested_meta(n: int) -> Callable[[Any], None]:
    """Put n + 1 nested arrays into the first turn's metadata (native)."""
    def mutate(d):
        value: Any = []
        for _ in range(n):
            value = [value]
        d["dialogues"][0]["sessions"][0]["turns"][0]["metadata"] = {"x": value}
    return mutate


def nt(d, i=0, s=0):  # native turn
    return d["dialogues"][0]["sessions"][s]["turns"][i]


def npr(d, i=0):  # native probe
    return d["dialogues"][0]["probes"][i]


def lc(d):  # locomo conversation
    return d[0]["conversation"]


def lq(d, i=0):  # locomo question
    return d[0]["qa"][i]


def latin1(text: bytes) -> bytes:
    """Re-encode the first 'Miso'/'espresso' so the file holds one Latin-1 byte."""
    return text.replace(b"espresso", b"espr\xe9sso", 1).replace(b"Miso", b"Mis\xe9", 1)


NATIVE_ERRORS = [
    ("native_latin1", lambda: latin1(json.dumps(native_doc()).encode()), [],
     "not UTF-8: byte 0xe9 at byte offset"),
    ("native_deep_200000", raw(deep(200_000)), [], f"JSON nested deeper than {MAX_DEPTH} levels"),
    ("native_deep_metadata", native(nested_meta(MAX_DEPTH + 5)), [],
     f"JSON nested deeper than {MAX_DEPTH} levels at ['dialogues'][0]['sessions'][0]['turns'][0]['metadata']"),
    ("native_syntax", raw(b'{"dialogues": [}'), [], "not valid JSON: Expecting value at line 1, column 16"),
    ("native_control_character", raw(b'{"dialogues": "a\nb"}'), [],
     "not valid JSON: Invalid control character at line 1, column 17"),
    ("native_empty_file", raw(b""), [], "not valid JSON: Expecting value at line 1, column 1"),
    ("native_syntax_line_3", raw(b'{"name": "x",\n "dialogues": [\n  }'), [],
     "not valid JSON: Expecting value at line 3, column 3"),
    ("native_misspelt_required_field", native(lambda d: npr(d).update(querry=npr(d).pop("query"))),
     [], "dialogue 'coffee', probe 'p1': unknown field 'querry' (did you mean 'query'?)"),
    ("native_misspelt_optional_field", native(lambda d: nt(d).update(speeker="Maya")),
     [], "turn 1 ('t1'): unknown field 'speeker' (did you mean 'speaker'?)"),
    ("native_null_document", raw(b"null"), [], "cannot tell the format"),
    ("native_dup_turn", native(lambda d: nt(d, 1).update(id="t1")),
     [], "dialogue 'coffee', session 's1', turn 2 ('t1'): duplicate turn id 't1'"),
    ("native_dup_dialogue", native(lambda d: d["dialogues"].append(copy.deepcopy(d["dialogues"][0]))),
     [], "dialogue 'coffee': duplicate dialogue id"),
    ("native_dup_session", native(lambda d: d["dialogues"][0]["sessions"][1].update(id="s1")),
     [], "dialogue 'coffee', session 's1': duplicate session id"),
    ("native_dup_probe", native(lambda d: npr(d, 1).update(id="p1")),
     [], "dialogue 'coffee', probe 'p1': duplicate probe id"),
    ("native_text_null", native(lambda d: nt(d, 1).update(text=None)),
     [], "turn 2 ('t2'): field 'text' must be a string, got null"),
    ("native_text_number", native(lambda d: nt(d, 1).update(text=5)),
     [], "turn 2 ('t2'): field 'text' must be a string, got number 5"),
    ("native_text_nan", native(lambda d: nt(d, 1).update(text=float("nan"))),
     [], "turn 2 ('t2'): field 'text' must be a string, got number nan"),
    ("native_text_too_long", native(lambda d: nt(d, 1).update(text="a" * (MAX_TEXT_CHARS + 1))),
     [], f"field 'text' has {MAX_TEXT_CHARS + 1:,} characters; the limit is {MAX_TEXT_CHARS:,}"),
    ("native_unknown_evidence", native(lambda d: npr(d).update(evidence=["t9"])),
     [], "probe 'p1': field 'evidence': unknown turn id 't9'"),
    ("native_unknown_after_turn", native(lambda d: npr(d).update(after_turn="t33")),
     [], "probe 'p1': field 'after_turn': unknown turn id 't33'"),
    ("native_evidence_after_probe", native(lambda d: npr(d).update(evidence=["t4"])),
     [], "probe 'p1': field 'evidence': turn 't4' comes after the probe is asked"),
    ("native_feb_30", native(lambda d: d["dialogues"][0]["sessions"][0].update(timestamp="2024-02-30T07:30:00Z")),
     [], "session 's1': field 'timestamp' must be an ISO-8601 date-time (e.g. '2024-03-02T09:15:00Z'), "
         "got '2024-02-30T07:30:00Z'"),
    ("native_month_13", native(lambda d: nt(d, 1).update(timestamp="2024-13-01T00:00:00Z")),
     [], "turn 2 ('t2'): field 'timestamp' must be an ISO-8601 date-time"),
    ("native_hour_25", native(lambda d: nt(d, 1).update(timestamp="2024-02-05T25:00:00Z")),
     [], "turn 2 ('t2'): field 'timestamp' must be an ISO-8601 date-time"),
    ("native_time_backwards", native(lambda d: nt(d, 2).update(timestamp="2020-01-01T00:00:00Z")),
     [], "turn 3 ('t3'): field 'timestamp' goes back in time"),
    ("native_probe_before_turn", native(lambda d: npr(d, 1).update(timestamp="2024-01-01T00:00:00Z")),
     [], "probe 'p2': field 'timestamp' 2024-01-01T00:00:00Z is earlier than"),
    ("native_bad_role", native(lambda d: nt(d, 1).update(role="bot")),
     [], "field 'role' must be one of 'user', 'assistant', 'system', got 'bot'"),
    ("native_missing_speaker", native(lambda d: nt(d, 1).pop("speaker")),
     [], "turn 2 ('t2'): field 'speaker' is required"),
    ("native_empty_query", native(lambda d: npr(d).update(query="")),
     [], "probe 'p1': field 'query' must not be empty"),
    ("native_dialogues_object", native(lambda d: d.update(dialogues={})),
     [], "field 'dialogues' must be an array, got object {}"),
    ("native_locomo_forced", lambda: json.dumps(locomo_doc()).encode(), ["--format", "native"],
     "expected a JSON object with 'dialogues' (native format), got a list"),
]

LOCOMO_ERRORS = [
    ("locomo_latin1", lambda: latin1(json.dumps(locomo_doc(), ensure_ascii=False).encode()), [],
     "not UTF-8: byte 0xe9 at byte offset"),
    ("locomo_no_question", locomo(lambda d: lq(d).pop("question")),
     [], "dialogue 'conv-mini', question 1: field 'question' is required"),
    ("locomo_numeric_question", locomo(lambda d: lq(d).update(question=5)),
     [], "dialogue 'conv-mini', question 1: field 'question' must be a string, got number 5"),
    ("locomo_null_question", locomo(lambda d: lq(d, 2).update(question=None)),
     [], "dialogue 'conv-mini', question 3: field 'question' must be a string, got null"),
    ("locomo_no_dia_id", locomo(lambda d: lc(d)["session_1"][0].pop("dia_id")),
     [], "dialogue 'conv-mini', session 'session_1', turn 1: field 'dia_id' is required"),
    ("locomo_dup_dia_id", locomo(lambda d: lc(d)["session_1"][1].update(dia_id="D1:1")),
     [], "dialogue 'conv-mini', session 'session_1', turn 2 ('D1:1'): duplicate turn id 'D1:1'"),
    ("locomo_dup_dia_id_across_sessions", locomo(lambda d: lc(d)["session_2"][0].update(dia_id="D1:2")),
     [], "session 'session_2', turn 1 ('D1:2'): duplicate turn id 'D1:2'"),
    ("locomo_text_null", locomo(lambda d: lc(d)["session_1"][1].update(text=None)),
     [], "session 'session_1', turn 2 ('D1:2'): field 'text' must be a string, got null"),
    ("locomo_text_missing", locomo(lambda d: lc(d)["session_2"][1].pop("text")),
     [], "session 'session_2', turn 2 ('D2:2'): field 'text' is required"),
    ("locomo_speaker_missing", locomo(lambda d: lc(d)["session_1"][2].pop("speaker")),
     [], "session 'session_1', turn 3: field 'speaker' is required"),
    ("locomo_conversation_list", locomo(lambda d: d[0].update(conversation=[1, 2])),
     ["--format", "locomo"], "dialogue 'conv-mini': field 'conversation' must be an object, got array [1, 2]"),
    ("locomo_session_not_list", locomo(lambda d: lc(d).update(session_2="hello")),
     [], "dialogue 'conv-mini': field 'session_2' must be an array, got string 'hello'"),
    ("locomo_turn_not_object", locomo(lambda d: lc(d)["session_1"].append("hi")),
     [], "session 'session_1', turn 4: must be an object, got string 'hi'"),
    ("locomo_june_31", locomo(lambda d: lc(d).update(session_2_date_time="10:04 am on 31 June, 2023")),
     [], "session 'session_2': field 'session_2_date_time': '10:04 am on 31 June, 2023' is not a date: "
         "day is out of range for month"),
    ("locomo_hour_13", locomo(lambda d: lc(d).update(session_1_date_time="13:56 pm on 8 May, 2023")),
     [], "'13:56 pm on 8 May, 2023' is not a date: hour 13 on a 12-hour clock"),
    ("locomo_minute_61", locomo(lambda d: lc(d).update(session_1_date_time="1:61 pm on 8 May, 2023")),
     [], "is not a date: minute must be in 0..59"),
    ("locomo_no_date_time", locomo(lambda d: lc(d).pop("session_1_date_time")),
     [], "session 'session_1': field 'session_1_date_time' is required"),
    ("locomo_date_garbage", locomo(lambda d: lc(d).update(session_1_date_time="yesterday")),
     [], "expected a date like '1:56 pm on 8 May, 2023', got 'yesterday'"),
    ("locomo_date_number", locomo(lambda d: lc(d).update(session_1_date_time=20230508)),
     [], "field 'session_1_date_time' must be a string, got number 20230508"),
    ("locomo_qa_object", locomo(lambda d: d[0].update(qa={"question": "x"})),
     [], "dialogue 'conv-mini': field 'qa' must be an array, got object"),
    ("locomo_qa_item_string", locomo(lambda d: d[0]["qa"].insert(0, "why?")),
     [], "dialogue 'conv-mini', question 1: must be an object, got string 'why?'"),
    ("locomo_evidence_string", locomo(lambda d: lq(d).update(evidence="D1:1")),
     [], "dialogue 'conv-mini', question 1: field 'evidence' must be an array, got string 'D1:1'"),
    ("locomo_speaker_object", locomo(lambda d: lc(d).update(speaker_b={"name": "Ben"})),
     [], "dialogue 'conv-mini': field 'speaker_b' must be a string, got object {'name': 'Ben'}"),
    ("locomo_deep", locomo(lambda d: lc(d)["session_1"][0].update(img_url=json.loads(deep(MAX_DEPTH + 1)))),
     [], f"JSON nested deeper than {MAX_DEPTH} levels at [0]['conversation']['session_1'][0]['img_url']"),
]

LME_ERRORS = [
    ("lme_dup_question_id", lme(lambda d: d[1].update(question_id=d[0]["question_id"])),
     [], "dialogue 'q_ssu_1': duplicate dialogue id"),
    ("lme_dup_session_ids", lme(lambda d: d[0]["haystack_session_ids"].__setitem__(2, "answer_s1")),
     [], "dialogue 'q_ssu_1', session 'answer_s1': duplicate session id"),
    ("lme_question_null", lme(lambda d: d[0].update(question=None)),
     [], "question 'q_ssu_1': field 'question' must be a string, got null"),
    ("lme_question_missing", lme(lambda d: d[0].pop("question")),
     [], "question 'q_ssu_1': field 'question' is required"),
    ("lme_question_empty", lme(lambda d: d[0].update(question="  ")),
     [], "dialogue 'q_ssu_1', probe 'q_ssu_1': field 'query' must not be empty"),
    ("lme_question_id_number", lme(lambda d: d[0].update(question_id=7)),
     [], "question 1: field 'question_id' must be a string, got number 7"),
    ("lme_content_null", lme(lambda d: d[0]["haystack_sessions"][1][0].update(content=None)),
     [], "question 'q_ssu_1', session 'answer_s1', turn 1: field 'content' must be a string, got null"),
    ("lme_role_missing", lme(lambda d: d[0]["haystack_sessions"][0][1].pop("role")),
     [], "question 'q_ssu_1', session 'sharegpt_a1', turn 2: field 'role' is required"),
    ("lme_role_invalid", lme(lambda d: d[0]["haystack_sessions"][0][1].update(role="bot")),
     [], "session 'sharegpt_a1', turn 2 ('sharegpt_a1:2'): field 'role' must be one of"),
    ("lme_lengths_differ", lme(lambda d: d[0]["haystack_dates"].pop()),
     [], "must have the same length, got 3, 2, 3"),
    ("lme_feb_30", lme(lambda d: d[0]["haystack_dates"].__setitem__(0, "2023/02/30 (Thu) 02:21")),
     [], "session 'sharegpt_a1': field 'haystack_dates': '2023/02/30 (Thu) 02:21' is not a date: "
         "day is out of range for month"),
    ("lme_hour_25", lme(lambda d: d[0].update(question_date="2023/05/30 (Tue) 25:40")),
     [], "question 'q_ssu_1': field 'question_date': '2023/05/30 (Tue) 25:40' is not a date"),
    ("lme_date_garbage", lme(lambda d: d[0]["haystack_dates"].__setitem__(1, "May 20")),
     [], "field 'haystack_dates': expected a date like '2023/05/20 (Sat) 02:21', got 'May 20'"),
    ("lme_session_not_list", lme(lambda d: d[0]["haystack_sessions"].__setitem__(0, {"role": "user"})),
     [], "session 'sharegpt_a1': field 'haystack_sessions' item 1 must be an array of turns"),
    ("lme_turn_not_object", lme(lambda d: d[0]["haystack_sessions"][0].append(3)),
     [], "session 'sharegpt_a1', turn 3: must be an object, got number 3"),
    ("lme_session_id_number", lme(lambda d: d[0]["haystack_session_ids"].__setitem__(0, 12)),
     [], "field 'haystack_session_ids': item 1 must be a string, got number 12"),
    ("lme_answer_sessions_number", lme(lambda d: d[1].update(answer_session_ids=1.5)),
     [], "question 'q_ssa_2': field 'answer_session_ids' must be an array, got number 1.5"),
    ("lme_item_not_object", lme(lambda d: d.append("q")), ["--format", "longmemeval"],
     "question 4: expected an object, got str"),
]

# (name, sweep file text with {data} for the dataset path, expected message)
SWEEP_ERRORS = [
    ("toml_syntax", '[dataset\npath = "{data}"\n', "not valid TOML"),
    ("toml_latin1", None, "not UTF-8: byte 0xe9 at byte offset"),
    ("toml_unknown_key", 'extra = 1\n[dataset]\npath = "{data}"\n[strategy]\nname = "bm25"\n',
     "unknown top-level key(s) ['extra']"),
    ("toml_no_dataset", '[strategy]\nname = "bm25"\n', "[dataset] with a 'path' is required"),
    ("toml_misspelt_table", '[datset]\npath = "{data}"\n[strategy]\nname = "bm25"\n',
     "unknown top-level key(s) ['datset'] (did you mean 'dataset'?)"),
    ("toml_strategy_array", '[dataset]\npath = "{data}"\n[[strategy]]\nname = "bm25"\n[[strategy]]\nname = "window"\n',
     "[[strategy]] is not a sweep table: did you mean [[strategies]] (one entry per strategy), "
     "or a single [strategy] table?"),
    ("toml_strategies_single", '[dataset]\npath = "{data}"\n[strategies]\nname = "bm25"\n',
     "[strategies] must be [[strategies]] entries (double brackets, one per strategy); "
     "for a single strategy write [strategy]"),
    ("toml_dataset_array", '[[dataset]]\npath = "{data}"\n[strategy]\nname = "bm25"\n',
     "[[dataset]] is a list; write one [dataset] table (single brackets)"),
    ("toml_dataset_key", '[dataset]\npath = "{data}"\nformt = "native"\n[strategy]\nname = "bm25"\n',
     "unknown key(s) in [dataset]: ['formt'] (did you mean 'format'?); expected dialogues, format, options, path"),
    ("toml_run_key", '[dataset]\npath = "{data}"\n[strategy]\nname = "bm25"\n[run]\nbudget = [256]\n',
     "unknown key(s) in [run]: ['budget'] (did you mean 'budgets'?)"),
    ("toml_missing_dataset_file", '[dataset]\npath = "nowhere.json"\n[strategy]\nname = "bm25"\n',
     "nowhere.json: no such file or folder"),
    ("toml_bad_ks", '[dataset]\npath = "{data}"\n[strategy]\nname = "bm25"\n[run]\nks = [0]\n',
     "[run] ks must be a non-empty list of positive integers, got [0]"),
    ("toml_bad_n_jobs", '[dataset]\npath = "{data}"\n[strategy]\nname = "bm25"\n[run]\nn_jobs = 0\n',
     "n_jobs must be a non-zero integer (-1: every core), got 0"),
    ("toml_unknown_strategy", '[dataset]\npath = "{data}"\n[strategy]\nname = "bm52"\n',
     "bm52"),
    ("toml_unknown_param", '[dataset]\npath = "{data}"\n[strategy]\nname = "window"\nparams = {{window_sise = 1}}\n',
     "unknown parameter of strategy 'window' 'window_sise'. Did you mean 'window_size'"),
    ("toml_bad_plot", '[dataset]\npath = "{data}"\n[strategy]\nname = "window"\n[run]\nks = [1]\n'
     '[[plots]]\nkind = "pie"\n', "plots[0]: kind must be one of"),
    ("toml_malformed_dataset", '[dataset]\npath = "bad.json"\n[strategy]\nname = "bm25"\n',
     "bad.json: dialogue 'coffee', session 's1', turn 2 ('t1'): duplicate turn id 't1'"),
]

# (name, extra CLI arguments after "eval <valid dataset>", expected message)
FLAG_ERRORS = [
    ("flag_k_zero", ["--k", "0"], "memlab eval: --k must be at least 1, got 0"),
    ("flag_k_text", ["--k", "five"], "argument --k: invalid int value: 'five'"),
    ("flag_n_jobs_zero", ["--n-jobs", "0"], "--n-jobs must be non-zero"),
    ("flag_format", ["--format", "csv"], "unknown dataset format 'csv'. Available: beam, locomo, longmemeval, native"),
    ("flag_strategy", ["--strategy", "bm52"], "bm52"),
    ("flag_set_no_equals", ["--set", "k1"], "--set expects KEY=VALUE, got 'k1'"),
    ("flag_set_unknown", ["--strategy", "window", "--set", "window_sise=3"], "window_sise"),
    ("flag_categories", ["--categories", "nope"], "unknown categories ['nope']"),
    ("flag_probe_position", ["--probe-position", "start"], "argument --probe-position: invalid choice"),
    ("flag_judge_alone", ["--judge-llm", "offline"], "--judge-llm needs --answer-llm"),
    ("flag_import_missing", ["--import", "nowhere.py"], "imports: no such file"),
    ("flag_unknown", ["--kk", "3"], "unrecognized arguments: --kk 3"),
]

FILE_CASES = NATIVE_ERRORS + LOCOMO_ERRORS + LME_ERRORS


def test_the_corpus_has_at_least_60_malformed_inputs():
    assert len(FILE_CASES) + len(SWEEP_ERRORS) + len(FLAG_ERRORS) >= 60


def _run(argv: list[str], capsys) -> tuple[int, str]:
    code = main(argv)
    captured = capsys.readouterr()
    return code, captured.err


def _files(folder: Path) -> set[str]:
    return {str(p.relative_to(folder)) for p in folder.rglob("*")}


def _one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert "Traceback" not in err
    assert not re.search(r"\b([A-Za-z]+) \1\b", lines[0].split(": ", 2)[-1]), lines[0]  # no "at at line"
    return lines[0]


@pytest.mark.parametrize("name, build, flags, message", FILE_CASES, ids=[c[0] for c in FILE_CASES])
def test_a_malformed_dataset_is_one_line_naming_file_and_field(tmp_path, capsys, name, build, flags, message):
    path = tmp_path / f"{name}.json"
    path.write_bytes(build())
    before = _files(tmp_path)
    code, err = _run(["eval", str(path), "--output", str(tmp_path / "rows.parquet"), *flags], capsys)
    line = _one_line(err)
    assert code == 2
    assert line.startswith(f"memlab: error: {path}: "), line
    assert message in line
    assert _files(tmp_path) == before  # nothing written


@pytest.mark.parametrize("name, text, message", SWEEP_ERRORS, ids=[c[0] for c in SWEEP_ERRORS])
def test_a_malformed_sweep_file_is_one_line_and_writes_nothing(tmp_path, capsys, tiny_file, name, text, message):
    bad = native_doc()
    nt(bad, 1).update(id="t1")
    (tmp_path / "bad.json").write_text(json.dumps(bad))
    toml = tmp_path / f"{name}.toml"
    if text is None:
        toml.write_bytes(b'name = "caf\xe9"\n')
    else:
        toml.write_text(text.format(data=tiny_file.name))
    before = _files(tmp_path)
    code, err = _run(["sweep", str(toml), "--output", str(tmp_path / "out")], capsys)
    line = _one_line(err)
    assert code == 2
    assert line.startswith("memlab")
    assert message in line
    assert _files(tmp_path) == before


@pytest.mark.parametrize("name, flags, message", FLAG_ERRORS, ids=[c[0] for c in FLAG_ERRORS])
def test_a_bad_flag_is_one_line_and_writes_nothing(tmp_path, capsys, tiny_file, monkeypatch, name, flags, message):
    monkeypatch.chdir(tmp_path)
    before = _files(tmp_path)
    code, err = _run(["eval", str(tiny_file), "--output", str(tmp_path / "rows.parquet"), *flags], capsys)
    line = _one_line(err)
    assert code == 2
    assert message in line
    assert _files(tmp_path) == before


# Valid inputs the loaders promise to accept (their reports say what they normalised).

def test_nan_in_free_form_metadata_is_accepted_and_hashed(tmp_path):
    d = native_doc()
    nt(d).setdefault("metadata", {})["score"] = float("nan")
    path = tmp_path / "nan.json"
    path.write_text(json.dumps(d))  # json writes the NaN token
    assert "NaN" in path.read_text()
    ds = load_dataset(str(path))
    assert math.isnan(ds.dialogues[0].sessions[0].turns[0].metadata["score"])
    assert len(ds.hash) == 64 and ds.hash == load_dataset(str(path)).hash


def test_a_nan_locomo_category_is_accepted_and_reported(tmp_path, capsys):
    d = locomo_doc()
    lq(d)["category"] = float("nan")
    path = tmp_path / "nan_category.json"
    path.write_text(json.dumps(d))
    ds = load_dataset(str(path))
    probe = ds.dialogues[0].probes[0]
    assert probe.category == "category-nan"
    assert [e["probe"] for e in ds.report.of_kind("category_unknown")] == ["q001"]
    assert main(["eval", str(path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["n_probes"] == len(d[0]["qa"])


def test_a_turn_at_the_size_limit_is_accepted_and_a_bom_is_skipped(tmp_path):
    d = native_doc()
    nt(d, 1)["text"] = "a" * MAX_TEXT_CHARS
    path = tmp_path / "big.json"
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps(d).encode())
    ds = load_dataset(str(path))
    assert len(ds.dialogues[0].sessions[0].turns[1].text) == MAX_TEXT_CHARS


def test_nesting_at_the_depth_limit_is_accepted(tmp_path):
    d = native_doc()
    # document, dialogues, dialogue, sessions, session, turns, turn, metadata: 8 levels, then n + 1
    nested_meta(MAX_DEPTH - 9)(d)
    path = tmp_path / "deep_ok.json"
    path.write_text(json.dumps(d))
    assert load_dataset(str(path)).n_turns == 5


@pytest.mark.parametrize("name", ["native_deep_200000", "native_latin1", "locomo_no_dia_id"])
def test_real_processes_exit_2_with_one_line(tmp_path, name):
    _, build, flags, message = next(c for c in FILE_CASES if c[0] == name)
    path = tmp_path / f"{name}.json"
    path.write_bytes(build())
    proc = subprocess.run([sys.executable, "-m", "memlab.cli", "eval", str(path), *flags],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert message in _one_line(proc.stderr)
