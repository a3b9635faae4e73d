import json
import subprocess
import sys

import pytest

from memlab.cli import main

from .conftest import LOCOMO, REPO, tiny_doc


def run_cli(*args):
    """The installed entry point as a subprocess: what a user sees."""
    return subprocess.run([sys.executable, "-m", "memlab.cli", *args], capture_output=True, text=True,
                          cwd=REPO)


def test_eval_json_is_one_object_with_the_promised_keys(tiny_file, capsys):
    assert main(["eval", str(tiny_file), "--strategy", "bm25", "--k", "3", "--json"]) == 0
    out = capsys.readouterr().out
    result = json.loads(out)
    assert out.count("\n") == 1
    for key in ("hit_rate@3", "recall@3", "relevance_ratio@3", "context_tokens", "n_probes"):
        assert key in result
    assert result["n_probes"] == 4 and result["n_scored"] == 3
    assert result["params"]["retriever__k1"] == 1.5


def test_eval_set_changes_a_nested_parameter(tiny_file, capsys):
    main(["eval", str(tiny_file), "--strategy", "hybrid", "--set", "weights=[0.8, 0.2]",
          "--set", "retriever__retrievers__0__k1=1.2", "--json"])
    params = json.loads(capsys.readouterr().out)["params"]
    assert params["retriever__fusion__weights"] == "[0.8, 0.2]"
    assert params["retriever__retrievers__0__k1"] == 1.2


def test_eval_text_output_and_saved_rows(tiny_file, tmp_path, capsys):
    out_file = tmp_path / "rows.parquet"
    assert main(["eval", str(tiny_file), "--strategy", "window", "--output", str(out_file)]) == 0
    text = capsys.readouterr().out
    assert "strategy window on tiny" in text and "recall@5" in text
    assert out_file.exists()


@pytest.mark.parametrize("args, message", [
    (["eval", "missing.json"], "missing.json: no such file or folder"),
    (["eval", "datasets", "--strategy", "hybird"], "Did you mean 'hybrid'?"),
    (["eval", "datasets", "--set", "nonsense"], "--set expects KEY=VALUE"),
    (["eval", "datasets", "--set", "window_sise=3", "--strategy", "window"], "Did you mean 'window_size'?"),
    (["eval", "datasets", "--format", "csv"], "unknown dataset format 'csv'. Available: beam, locomo, longmemeval, native"),
    (["eval", "datasets", "--k", "0"], "--k must be at least 1, got 0"),
    (["sweep", "missing.toml"], "missing.toml: no such sweep file"),
    (["eval", "datasets", "--n-jobs", "0"], "--n-jobs must be non-zero"),
    (["eval", "datasets", "--strategy", "window", "--set", "window_size=-1"], "window_size must be non-negative"),
    (["eval", "datasets", "--set", 'reinforce="often"'],
     "RetrievalStrategy parameter 'reinforce': expected one of 'used', 'returned', 'none', got 'often'"),
    (["eval", "datasets", "--strategy", "window", "--set", 'keep_rate="high"'], "parameter 'keep_rate': expected a number >= 0 and <= 1, got 'high'"),
    (["eval", "datasets", "--strategy", "hybrid_decay", "--set", 'forget_threshold="x"'], "forget_threshold"),
    (["eval", "datasets", "--import", "tests/data/not_python.txt"], "no such file"),
    (["bogus"], "invalid choice: 'bogus'"),
    # loader options: the option, the loader, what it expects and what came
    (["eval", "tests/data/longmemeval_mini.json", "--option", "rols=all"],
     "memlab eval: --option: unknown option of the 'longmemeval' loader 'rols'. Did you mean 'roles'? "
     "Available: evidence_roles, roles, turn_spacing"),
    (["eval", "tests/data/longmemeval_mini.json", "--option", "roles"], "--option expects KEY=VALUE, got 'roles'"),
    (["eval", "tests/data/longmemeval_mini.json", "--option", "roles=bot"],
     "roles must be a non-empty list of roles among user, assistant, system (or 'all': every turn), got ('bot',)"),
    (["eval", "tests/data/longmemeval_mini.json", "--option", "turn_spacing=soon"],
     "option 'turn_spacing' of the 'longmemeval' loader expects a number, got 'soon'"),
    (["eval", "tests/data/locomo_mini.json", "--option", "include_caption=maybe"],
     "option 'include_caption' of the 'locomo' loader expects true or false, got 'maybe'"),
    (["eval", "tests/data/locomo_mini.json", "--option", "probe_position=middle"],
     "probe_position must be 'end' or 'after_evidence', got 'middle'"),
    (["eval", "tests/data/locomo_mini.json", "--probe-position", "end", "--option", "probe_position=end"],
     "give --probe-position or --option probe_position=..., not both"),
    (["eval", "datasets", "--option", "roles=all"], "unknown option of the 'native' loader 'roles'"),
])
def test_bad_input_is_one_line_and_exit_2(args, message):
    proc = run_cli(*args)
    assert proc.returncode == 2
    assert proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert message in lines[0] and "Traceback" not in proc.stderr


def test_invalid_dataset_file_names_file_and_field(tmp_path):
    doc = tiny_doc()
    del doc["dialogues"][0]["sessions"][0]["turns"][1]["speaker"]
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(doc))
    proc = run_cli("eval", str(bad))
    assert proc.returncode == 2
    line = proc.stderr.strip()
    assert "bad.json" in line and "speaker" in line and "coffee" in line and "\n" not in line


def test_malformed_json_is_a_readable_error(tmp_path):
    bad = tmp_path / "broken.json"
    bad.write_text('{"dialogues": [')
    proc = run_cli("eval", str(bad))
    assert proc.returncode == 2 and "broken.json" in proc.stderr and "Traceback" not in proc.stderr


def test_strategies_lists_the_builtins():
    proc = run_cli("strategies")
    assert proc.returncode == 0
    names = [line.split()[0] for line in proc.stdout.splitlines()]
    assert {"bm25", "hybrid", "window", "longterm"} <= set(names)


@pytest.mark.skipif(LOCOMO is None, reason="LoCoMo absent (../shared/datasets/locomo/locomo10.json or $MEMLAB_LOCOMO)")
def test_locomo_bm25_matches_the_reference_measurement():
    """The reference BM25 measurement (lower-cased \\w+ tokens), LoCoMo protocol: recall@5 45.8."""
    proc = run_cli("eval", str(LOCOMO), "--format", "locomo", "--strategy", "bm25", "--k", "5", "--json")
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["n_probes"] == 1986 and result["n_dialogues"] == 10
    assert abs(result["recall@5"] * 100 - 45.8) <= 2.0
    assert result["recall@5"] == pytest.approx(0.457524, abs=1e-6)


def test_a_dataset_without_probes_is_refused(tmp_path):
    empty = tmp_path / "empty.json"
    empty.write_text("[]")
    for fmt in ("locomo", "longmemeval"):
        proc = run_cli("eval", str(empty), "--format", fmt)
        assert proc.returncode == 2 and "Traceback" not in proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1 and "empty.json" in proc.stderr


def test_an_import_with_a_syntax_error_names_file_and_line(tmp_path):
    bad = tmp_path / "broken_strategy.py"
    bad.write_text("x = 1\ndef oops(:\n")
    proc = run_cli("eval", "datasets", "--import", str(bad))
    assert proc.returncode == 2 and f"{bad}:2: syntax error" in proc.stderr


def test_sweep_without_output_writes_to_runs_named_after_the_file(tmp_path, monkeypatch, capsys):
    from .conftest import tiny_doc
    (tmp_path / "tiny.json").write_text(json.dumps(tiny_doc()))
    (tmp_path / "quick.toml").write_text('[dataset]\npath = "tiny.json"\n[strategy]\nname = "bm25"\n')
    monkeypatch.chdir(tmp_path)
    assert main(["sweep", "quick.toml"]) == 0
    assert (tmp_path / "runs" / "quick" / "results.parquet").exists()


MINI_LME = REPO / "tests" / "data" / "longmemeval_mini.json"


def _eval_json(capsys, *args):
    assert main(["eval", *map(str, args), "--json", "--quiet"]) == 0
    return json.loads(capsys.readouterr().out)


def test_eval_streams_a_longmemeval_file(capsys, monkeypatch):
    """A LongMemEval file is read one question at a time (never loaded whole), with the same
    dataset, hash and report as a whole load; other formats are loaded."""
    from memlab.eval import loaders
    from memlab.eval.loaders import registry

    whole = loaders.load_dataset(str(MINI_LME))

    def refuse(path, evidence_roles=("user",), turn_spacing=1.0, roles=("user",)):
        raise AssertionError("memlab eval loaded the LongMemEval file whole")

    real = registry.get_loader("longmemeval")
    monkeypatch.setitem(registry._LOADERS, "longmemeval", registry.Loader(
        "longmemeval", refuse, real.detect, real.iterate, real.doc))
    result = _eval_json(capsys, MINI_LME)
    assert result["dataset_hash"] == whole.hash
    assert (result["n_dialogues"], result["n_probes"]) == (len(whole), whole.n_probes)
    assert result["dataset_report"]["counts"] == whole.report.counts()


def test_eval_option_reaches_the_loader(capsys):
    """``--option roles=all`` is LongMemEval's every turn (``roles=None``); a list is a,b."""
    from memlab.eval.loaders import load_dataset

    every = _eval_json(capsys, MINI_LME, "--option", "roles=all")
    assert every["dataset_hash"] == load_dataset(str(MINI_LME), roles=None).hash \
        == load_dataset(str(MINI_LME), roles="all").hash  # the spelling a sweep file's TOML can give
    assert every["dataset_hash"] != _eval_json(capsys, MINI_LME)["dataset_hash"]
    both = _eval_json(capsys, MINI_LME, "--option", "roles=user,assistant", "--option", "turn_spacing=2")
    assert both["dataset_hash"] == load_dataset(str(MINI_LME), roles=("user", "assistant"), turn_spacing=2.0).hash
    locomo = REPO / "tests" / "data" / "locomo_mini.json"
    no_caption = _eval_json(capsys, locomo, "--option", "include_caption=false", "--format", "locomo")
    assert no_caption["dataset_hash"] == load_dataset(str(locomo), include_caption=False).hash


def test_parse_loader_options_reads_each_option_by_its_type():
    from memlab.eval.dataset import DatasetError
    from memlab.eval.loaders import parse_loader_options

    assert parse_loader_options("locomo", {"include_caption": "False", "turn_spacing": "3",
                                           "probe_position": "after_evidence"}) == \
        {"include_caption": False, "turn_spacing": 3.0, "probe_position": "after_evidence"}
    assert parse_loader_options("longmemeval", {"roles": "all", "evidence_roles": "user, assistant"}) == \
        {"roles": "all", "evidence_roles": ("user", "assistant")}
    with pytest.raises(DatasetError, match=r"expects a comma-separated list such as 'user,assistant', got 'user,'"):
        parse_loader_options("longmemeval", {"roles": "user,"})
    with pytest.raises(DatasetError, match=r"unknown dataset format 'csv'"):
        parse_loader_options("csv", {})


def test_eval_keeps_the_dialogues_named(tiny_file, capsys):
    assert main(["eval", str(tiny_file), "--strategy", "bm25", "--dialogues", "trip", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert (result["n_dialogues"], result["n_probes"]) == (1, 1)
    assert main(["eval", str(tiny_file), "--strategy", "bm25", "--dialogues", "trip,coffee", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["n_dialogues"] == 2


def test_eval_names_an_unknown_or_empty_dialogue_in_one_line(tiny_file):
    for cut, message in (("trip,zzz", "has no dialogue 'zzz'; dialogues: coffee, trip"),
                         ("trip,", "--dialogues takes comma-separated names, got 'trip,'")):
        proc = run_cli("eval", str(tiny_file), "--strategy", "bm25", "--dialogues", cut)
        assert proc.returncode == 2 and proc.stdout == "", proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1 and message in proc.stderr, proc.stderr
        assert str(tiny_file) in proc.stderr or "--dialogues" in proc.stderr
