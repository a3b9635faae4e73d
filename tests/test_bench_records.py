"""bench/results records prove themselves: every record names its run (provenance), the cheap
ones are re-run and must equal the record, and the expensive ones must still describe the
configuration HEAD would run (config_hash), so a hand edit or a changed default fails here.

Re-run here: the main job's table (compare_builtins.json, ~20 s) and LoCoMo's `bm25` and
`bm25_plus` rows (a few seconds each; skipped when LoCoMo is not beside the repository).
"""

from __future__ import annotations

import copy
import importlib.util
import json
import re
from pathlib import Path

import pytest

from memlab.eval.configuration import configuration_hash
from memlab.eval.paths import locomo_path
from memlab.eval.provenance import KEYS, file_sha256

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "bench" / "results"
#: LoCoMo rows cheap enough to re-run in the suite (and recorded by a run with full provenance).
LOCOMO_RERUN = ("bm25", "bm25_plus")


def _module(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def rr():
    return _module(REPO / "scripts" / "readme_results.py", "readme_results")


@pytest.fixture(scope="module")
def bench_locomo():
    return _module(REPO / "bench" / "bench_locomo.py", "bench_locomo")


def _record(name: str) -> dict:
    return json.loads((RESULTS / f"{name}.json").read_text(encoding="utf-8"))


# -- every record names its run -------------------------------------------------------------

def _check_provenance(p: dict, where: str) -> None:
    assert p["status"] in ("complete", "partial"), where
    assert re.fullmatch(r"[0-9a-f]{40}", p["git_commit"]), f"{where}: git_commit {p['git_commit']!r}"
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", p["date"]), f"{where}: date {p['date']!r}"
    if p["status"] == "complete":
        assert set(KEYS) <= set(p), f"{where}: missing {set(KEYS) - set(p)}"
        assert p["git_dirty"] is False, f"{where}: recorded from a checkout with uncommitted changes"
        assert p["command"] and p["data"] and p["machine"]["cores"], where
        assert all(re.fullmatch(r"[0-9a-f]{64}", sha) for sha in p["data"].values()), where
        assert not any(Path(a).is_absolute() for a in p["command"][:2]), f"{where}: {p['command']}"
    else:
        assert p.get("note"), f"{where}: a partial provenance says what is not known"


def test_every_record_names_its_run():
    _check_provenance(_record("compare_builtins")["provenance"], "compare_builtins.json")
    for n, run in enumerate(_record("locomo")["runs"]):
        _check_provenance(run["provenance"], f"locomo.json runs[{n}]")
    for name in ("layered_local", "layered_local_locomo", "answers_local", "scale_cycled_sessions", "replay_warm",
                 "keep_rate_sweep", "embedding_gemm"):
        _check_provenance(_record(name)["provenance"], f"{name}.json")


def test_the_keep_rate_sweep_record_holds_its_own_check():
    """keep_rate_sweep.json: both sweeps measured and their tables equal, the ratios their
    seconds' quotient, over every LoCoMo probe of the conversations it names."""
    record = _record("keep_rate_sweep")
    assert set(record["results"]) == {"yes", "no"} and record["tables_equal"] is True
    for r in record["results"].values():
        assert r["one_run_s"] > 0 and abs(r["ratio"] - r["sweep_s"] / r["one_run_s"]) < 1e-9
    assert record["conversations"] == 10 and record["probes"] == 1986
    assert file_sha256(locomo_path()) in record["provenance"]["data"].values()


def test_the_gemm_record_reads_its_rates_off_its_own_figures():
    """embedding_gemm.json: each row's efficiency is its real-token linear FLOPs over its
    seconds over the better of the two GEMM rates timed beside it (the docstring's model)."""
    record = _record("embedding_gemm")
    assert any(r["embedder"].startswith("e5 (torch)") for r in record["rows"])
    for r in record["rows"]:
        gemm = max(r["gemm_numpy"], r["gemm_torch"])
        assert abs(r["efficiency_real"] - r["gflop_linear_real"] / r["seconds"] / gemm) < 1e-9
        assert r["efficiency_all"] >= r["efficiency_real"] > 0 and r["n"] == record["n_per_bin"]


def test_the_warm_replay_record_holds_its_own_checks():
    """replay_warm.json: every strategy answered every LoCoMo probe, memlab's BM25 equals
    rank_bm25 rebuilt per probe (top 10, scores within 1e-9), and the LoCoMo file it names is
    the one here."""
    record = _record("replay_warm")
    assert record["results"] and not record["errors"]
    assert {r["probes"] for r in record["results"] + record["naive"]} == {1986}
    assert all(r["seconds"] > 0 and r["cpu_seconds"] > 0 for r in record["results"])
    if "naive bm25" in {r["strategy"] for r in record["naive"]}:
        assert record["checks"]["bm25_equal_to_rank_bm25"] is True
        assert record["checks"]["bm25_max_score_diff"] < 1e-9
    assert file_sha256(locomo_path()) in record["provenance"]["data"].values()


def test_every_recorded_row_has_a_configuration_hash():
    assert all(re.fullmatch(r"[0-9a-f]{64}", s["config_hash"]) for s in _record("compare_builtins")["strategies"])
    for run in _record("locomo")["runs"]:
        assert all(re.fullmatch(r"[0-9a-f]{64}", f["config_hash"]) for f in run["figures"].values())


def test_the_cheap_locomo_rows_come_from_a_run_with_full_provenance(rr):
    rows = rr.locomo_rows(_record("locomo"))
    for label in LOCOMO_RERUN:
        assert rows[label][1]["provenance"]["status"] == "complete", label


# -- a hand edit of a record fails -------------------------------------------------------------

def test_differences_flags_every_kind_of_edit(rr):
    record = _record("compare_builtins")
    assert rr.differences(record, copy.deepcopy(record)) == []
    for edit in (lambda r: r["strategies"][0].__setitem__("recall@5", r["strategies"][0]["recall@5"] + 1e-6),
                 lambda r: r["strategies"][3].__setitem__("rank", "1"),
                 lambda r: r["pairs"][0].__setitem__("p_holm", 0.01),
                 lambda r: r["strategies"].pop(),
                 lambda r: r.__setitem__("n_probes", r["n_probes"] + 1),
                 lambda r: r["strategies"][0].__setitem__("config_hash", "0" * 64)):
        edited = copy.deepcopy(record)
        edit(edited)
        assert rr.differences(edited, record), edit
    # how and when a run was made are no figures: a re-run differs there and still agrees
    rerun = copy.deepcopy(record)
    rerun["provenance"]["date"] = "2099-01-01T00:00:00Z"
    assert rr.differences(record, rerun) == []


def test_a_hand_edited_locomo_figure_is_flagged(rr):
    rows = rr.locomo_rows(_record("locomo"))
    figures = rows["bm25"][0]
    edited = copy.deepcopy(figures)
    edited["categories"]["multi-hop"]["recall@5"] += 0.1
    assert rr.differences(edited, figures) == ["/categories/multi-hop/recall@5: recorded "
                                               f"{edited['categories']['multi-hop']['recall@5']!r}, re-run "
                                               f"{figures['categories']['multi-hop']['recall@5']!r}"]
    # seconds are the run's own timing, not a figure a re-run must reproduce
    assert rr.differences({**figures, "seconds": 999.0}, figures) == []


def test_a_sweep_that_reused_cells_of_an_earlier_run_is_not_recorded(rr, tmp_path):
    (tmp_path / "provenance.json").write_text(json.dumps({"status": "complete", "cells": {"computed": 2, "reused": 13}}))
    with pytest.raises(SystemExit, match="13 cells were kept from an earlier run"):
        rr.record_sweep(tmp_path, out=None)


# -- re-runs ----------------------------------------------------------------------------------

@pytest.mark.slow
def test_the_main_job_table_equals_a_rerun(rr, tmp_path):
    from memlab.eval.sweep import run_config
    from memlab.eval.sweep_config import read_config

    config = REPO / "experiments" / "compare_builtins.toml"
    run_config(read_config(config), base_dir=config.parent, output=tmp_path / "out", fresh=True)
    fresh = rr.record_sweep(tmp_path / "out", out=None, config=config)
    diffs = rr.differences(_record("compare_builtins"), fresh)
    assert not diffs, ("bench/results/compare_builtins.json differs from a re-run (a hand edit, or a change "
                       "that moves the figures: memlab sweep experiments/compare_builtins.toml && python "
                       "scripts/readme_results.py record && python scripts/readme_results.py render):\n"
                       + "\n".join(diffs[:20]))


@pytest.fixture(scope="module")
def locomo():
    path = locomo_path()
    if path is None:
        pytest.skip("LoCoMo is not beside the repository (../shared/datasets/locomo/locomo10.json)")
    from memlab.eval import load_any

    return load_any(path, "locomo"), file_sha256(path)


@pytest.mark.slow
@pytest.mark.parametrize("label", LOCOMO_RERUN)
def test_a_cheap_locomo_row_equals_a_rerun(label, locomo, rr, bench_locomo):
    dataset, sha = locomo
    figures, run = rr.locomo_rows(_record("locomo"))[label]
    assert sorted(run["provenance"]["data"].values()) == [sha], "recorded on another LoCoMo file"
    fresh = bench_locomo.measure(label, dataset, [sha], run["options"]["e5_runtime"])
    diffs = rr.differences(figures, fresh)
    assert not diffs, (f"LoCoMo {label!r} differs from a re-run (python bench/bench_locomo.py --only {label} "
                       f"--output bench/results/locomo.json):\n" + "\n".join(diffs))


# -- expensive rows: the configuration they were recorded with is HEAD's ------------------------

def _locomo_sha(record: dict) -> str:
    path = locomo_path()
    if path is not None:
        return file_sha256(path)
    shas = {sha for run in record["runs"] if run["provenance"].get("data") for sha in run["provenance"]["data"].values()}
    if len(shas) != 1:
        pytest.skip("LoCoMo is not beside the repository and no run names its sha256")
    return shas.pop()


@pytest.mark.parametrize("label", sorted({label for run in _record("locomo")["runs"] for label in run["figures"]}))
def test_a_locomo_rows_configuration_is_heads(label, rr, bench_locomo):
    record = _record("locomo")
    figures, run = rr.locomo_rows(record)[label]
    try:
        strategy = bench_locomo.build(label, run["options"]["e5_runtime"])
    except ImportError as exc:  # a peer library's extra not installed here
        pytest.skip(f"{label}: {exc}")
    now = configuration_hash(strategy, [_locomo_sha(record)], record["protocol"])
    assert record["protocol"] == bench_locomo.PROTOCOL
    assert now == figures["config_hash"], (
        f"LoCoMo {label!r} was recorded with another configuration than HEAD's (a changed default, dataset or "
        f"protocol): re-record it (python bench/bench_locomo.py --only {label} --output bench/results/locomo.json)")


def test_the_main_job_configurations_are_heads(rr):
    from memlab.eval.sweep_config import configure, read_config, strategy_specs

    config_file = REPO / "experiments" / "compare_builtins.toml"
    record = _record("compare_builtins")
    protocol = rr.sweep_protocol(config_file)
    assert record["protocol"] == protocol
    data = sorted(record["provenance"]["data"].values())
    recorded = {s["strategy"]: s["config_hash"] for s in record["strategies"]}
    specs = strategy_specs(read_config(config_file), str(config_file))
    assert sorted(s["label"] for s in specs) == sorted(recorded), (
        "compare_builtins runs other strategies than the record holds (a built-in added or retired): re-record the "
        "main job (memlab sweep experiments/compare_builtins.toml, then python scripts/readme_results.py record)")
    for spec in specs:
        (_, _, label, strategy), = configure(spec, None, spec["label"])
        assert configuration_hash(strategy, data, protocol) == recorded[label], (
            f"compare_builtins {label!r}: HEAD configures it differently from the record: re-record the main job")


# -- bench_locomo --output: one run per entry, labels moved, never merged -------------------------

def test_recording_a_label_again_moves_it_to_the_new_run(tmp_path, bench_locomo):
    class Data:  # what record_run reads of a dataset
        name, n_probes, dialogues = "locomo", 0, []

    def run(labels, sha="a" * 64):
        prov = {"status": "complete", "data": {"f.json": sha}}
        return {"provenance": prov, "options": {}, "figures": {x: {"recall@5": 1.0} for x in labels}}

    path = str(tmp_path / "locomo.json")
    bench_locomo.record_run(path, Data, run(["bm25", "window"]))
    bench_locomo.record_run(path, Data, run(["bm25"]))
    record = bench_locomo.record_run(path, Data, run(["window"]))
    assert [sorted(r["figures"]) for r in record["runs"]] == [["bm25"], ["window"]]  # the emptied run is gone
    # another dataset file: the old runs are not kept beside the new one
    record = bench_locomo.record_run(path, Data, run(["bm25_plus"], sha="b" * 64))
    assert [sorted(r["figures"]) for r in record["runs"]] == [["bm25_plus"]]


# -- the LLM records: expensive, checked against HEAD's configuration ----------------------------

def _bench_script(name: str):
    import sys

    # the bench scripts import their shared helpers as `_common`; bench/ leaves sys.path after the
    # import, so that its replay.py, sweep.py, ... never shadow a module of another test
    bench = str(REPO / "bench")
    sys.path.insert(0, bench)
    try:
        return _module(REPO / "bench" / f"{name}.py", name)
    finally:
        sys.path.remove(bench)


@pytest.mark.parametrize("name", ["layered_local", "layered_local_locomo"])
def test_the_layered_local_rows_configuration_is_heads(name):
    from memlab.eval.dataset_files import dataset_files
    from memlab.eval.provenance import data_hashes

    module = _bench_script("bench_layered_local")
    record = _record(name)
    source = REPO / record["datasets"]
    if not source.exists():
        pytest.skip(f"{record['datasets']} is not beside the checkout")
    data = sorted(data_hashes(dataset_files(source)).values())
    assert data == sorted(record["provenance"]["data"].values()), f"{name}: the data files changed"
    dialogues = record.get("dialogues")
    for llm in ("local", "offline"):
        if record[llm].get("outdated"):
            # a row the record itself marks outdated (shown so in the README) must really be: once
            # it is re-recorded with HEAD's configuration, the mark has to go
            assert module.config_hash(llm, data, dialogues) != record[llm]["config_hash"], \
                f"{llm}: re-recorded; drop 'outdated'"
            continue
        assert module.config_hash(llm, data, dialogues) == record[llm]["config_hash"], (
            f"{name} {llm!r}: HEAD runs layered (or the data) differently from the record: "
            f"re-record it (python bench/bench_layered_local.py, with the record's --dataset and --dialogues)")


def test_the_answer_study_rows_configuration_is_heads():
    module = _bench_script("bench_answers")
    files = module.slice_files()
    record = _record("answers_local")
    missing = [name for name in record["slices"] if files.get(name) is None]
    if missing:
        pytest.skip(f"not beside the repository: {', '.join(missing)}")
    shas = {name: file_sha256(files[name]) for name in record["slices"]}
    for row in record["table"]:
        assert module.config_hash(row["strategy"], row["slice"], record, shas[row["slice"]]) == row["config_hash"], (
            f"answers_local {row['slice']} / {row['strategy']}: HEAD configures it differently from the record: "
            f"re-record it (python bench/bench_answers.py)")


# -- LongMemEval: oracle bm25 re-run, every row's configuration HEAD's --------------------------

@pytest.fixture(scope="module")
def bench_longmemeval():
    import sys

    sys.path.insert(0, str(REPO / "bench"))   # it imports its sibling longmemeval_code
    try:
        yield _module(REPO / "bench" / "bench_longmemeval.py", "bench_longmemeval")
    finally:
        sys.path.remove(str(REPO / "bench"))


def _lme_path(name: str) -> Path:
    from memlab.eval.paths import longmemeval_path

    path = longmemeval_path(name)
    if path is None:
        pytest.skip("LongMemEval is not beside the repository (../shared/datasets/longmemeval)")
    return path


@pytest.mark.slow
def test_the_longmemeval_oracle_bm25_row_equals_a_rerun(bench_longmemeval, rr):
    from memlab.eval.paths import LONGMEMEVAL_ORACLE

    path = _lme_path(LONGMEMEVAL_ORACLE)
    record = _record("longmemeval")
    rows, seconds = bench_longmemeval.run("bm25", "bm25", {}, ("user",), path)
    fresh = bench_longmemeval.figures(rows, seconds)
    diffs = rr.differences(record["oracle"]["bm25"], fresh)
    assert not diffs, ("LongMemEval oracle 'bm25' differs from a re-run (python bench/bench_longmemeval.py "
                       "--dense 0 --scaling 0):\n" + "\n".join(diffs))


def test_every_longmemeval_rows_configuration_is_heads(bench_longmemeval):
    from memlab import strategies
    from memlab.eval.paths import LONGMEMEVAL_ORACLE, LONGMEMEVAL_S

    record = _record("longmemeval")
    _check_provenance(record["provenance"], "longmemeval")
    assert record["protocol"]["ks"] == list(bench_longmemeval.KS)
    runs = {label: (name, params, roles) for label, name, params, roles in bench_longmemeval.LEXICAL}
    for key, file in (("oracle", LONGMEMEVAL_ORACLE), ("s", LONGMEMEVAL_S)):
        sha = record["provenance"]["data"][f"../shared/datasets/longmemeval/{file}"]
        for label, figures in record[key].items():
            name, params, roles = runs[label]
            now = configuration_hash(strategies.get(name, **params), [sha], bench_longmemeval.PROTOCOL | {
                "roles": list(roles) if roles else None, "questions": None, "limit": None})
            assert now == figures["config_hash"], (f"LongMemEval {key} {label!r} was recorded with another "
                                                   f"configuration than HEAD's: re-record it")


# -- BEAM: every row's configuration HEAD's; 100K bm25 re-run -------------------------------------

@pytest.fixture(scope="module")
def bench_beam():
    return _bench_script("bench_beam")


def _beam_size_data(record: dict, size: str) -> tuple[list[str], list[str]]:
    """(sha256 of the files a size was read from, its conversation ids), as recorded."""
    prefix = f"../shared/datasets/beam/{size}/"
    shas = [sha for path, sha in record["provenance"]["data"].items() if path.startswith(prefix)]
    return shas, list(record["sizes"][size]["conversations"])


def test_every_beam_rows_configuration_is_heads(bench_beam):
    record = _record("beam")
    _check_provenance(record["provenance"], "beam.json")
    assert set(record["load_avg_1m"]) == {"start", "end"}
    for size, entry in record["sizes"].items():
        shas, conversations = _beam_size_data(record, size)
        assert len(shas) == 2 * len(conversations), f"{size}: a chat and a questions file per conversation"
        for label, figures in entry["strategies"].items():
            assert bench_beam.config_hash(label, shas, conversations) == figures["config_hash"], (
                f"BEAM {size} {label!r} was recorded with another configuration than HEAD's (a changed default, "
                f"loader option or protocol): re-record it (python bench/bench_beam.py)")


@pytest.mark.slow
def test_the_beam_100k_bm25_row_equals_a_rerun(bench_beam, rr):
    from memlab.eval.paths import beam_path

    if beam_path("100K") is None:
        pytest.skip("BEAM is not beside the repository (../shared/datasets/beam)")
    record = _record("beam")
    shas, _ = _beam_size_data(record, "100K")
    fresh = bench_beam.child("100K", "bm25", record["protocol"]["limit"])
    recorded = record["sizes"]["100K"]["strategies"]["bm25"]
    # the run's own timing and memory are no figures a re-run must reproduce
    timing = ("seconds", "seconds_per_conversation", "peak_rss_mb", "baseline_rss_mb")
    diffs = rr.differences({k: v for k, v in recorded.items() if k not in timing},
                           {k: v for k, v in fresh.items() if k not in timing})
    assert not diffs, "BEAM 100K 'bm25' differs from a re-run (python bench/bench_beam.py):\n" + "\n".join(diffs)


# -- scale_tokens: concatenated BEAM, every point and slope the record's own -----------------------

def test_the_scale_tokens_record_is_consistent_and_heads():
    module = _bench_script("scale")
    record = _record("scale_tokens")
    p = record["provenance"]
    _check_provenance(p, "scale_tokens.json")
    assert p["status"] == "complete" and p["git_dirty"] is False
    assert all(path.startswith("../shared/datasets/beam/") for path in p["data"]), "the BEAM files it read"
    assert record["workload"] == "beam-concat" and record["source"] == "beam"
    assert len(record["load_avg_1m"]) == 2 and record["memory_total_mb"] > 0
    o = record["options"]
    # the protocol and parameters HEAD's beam-concat runs with; the 10M point said to be a concatenation
    assert {k: o[k] for k in module.beam_concat_protocol()} == module.beam_concat_protocol()
    assert "concatenation" in o["concatenation"] and "10M" in o["concatenation"]
    assert o["params"] == {n: module.BEAM_PARAMS.get(n, {}) for n in o["strategies"]}
    shas = sorted(p["data"].values())
    for name in o["strategies"]:
        assert module.beam_concat_config_hash(name, shas) == record["config_hash"][name], (
            f"scale_tokens {name!r}: HEAD configures it differently from the record: re-record it "
            f"(python bench/scale.py --workload beam-concat ... --output bench/results/scale_tokens.json)")
    # every (strategy, size) asked for is a point or a skip, never both; sizes within a token of the target
    points = {(r["strategy"], r["tokens"]) for r in record["results"]}
    skips = {(s["strategy"], s["tokens"]) for s in record["skipped"]}
    assert len(points) == len(record["results"]) and not points & skips
    assert points | skips == {(n, t) for n in o["strategies"] for t in o["tokens"]}
    for r in record["results"]:
        assert r["history_tokens"] >= r["tokens"] and r["turns"] > 0 and r["probes"] >= 0
        if r["probes"]:
            assert r["query_ms_p50"] <= r["query_ms_p95"] and r["probe_ms_p50"] <= r["probe_ms_p95"]
    # the slopes are those of the recorded points
    for name in o["strategies"]:
        pts = [r for r in record["results"] if r["strategy"] == name]
        assert module.beam_concat_slopes(pts) == record["slopes"][name], name
