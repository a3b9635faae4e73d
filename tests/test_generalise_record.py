"""bench/results/generalise.json and generalise_tuning.json prove themselves (as
tests/test_bench_records.py does for the other records): every section names its run, every
row still describes the configuration HEAD would run, and a cheap row re-runs equal. Also a
small real-data check of recall_plus's parts (a few LoCoMo conversations and LongMemEval
questions, seconds)."""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from pathlib import Path

import pytest

from memlab.eval.configuration import configuration_hash
from memlab.eval.paths import LONGMEMEVAL_S, locomo_path, longmemeval_path
from memlab.eval.provenance import KEYS, file_sha256

REPO = Path(__file__).resolve().parents[1]
RECORD = REPO / "bench" / "results" / "generalise.json"
TUNING = REPO / "bench" / "results" / "generalise_tuning.json"
#: the second pass of the same protocol (``--passes 2``); its choice is not yet the default
TUNING_2PASS = REPO / "bench" / "results" / "generalise_tuning_2pass.json"
#: what a re-run may change: how and when it ran
RUN_KEYS = ("provenance", "load_avg_1m", "seconds", "seconds_per_question", "ms_per_question", "options")


def _module(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def bench():
    bench_dir = str(REPO / "bench")
    sys.path.insert(0, bench_dir)
    try:
        return _module("bench_generalise", REPO / "bench" / "bench_generalise.py")
    finally:
        sys.path.remove(bench_dir)


@pytest.fixture(scope="module")
def tune(bench_script):
    return bench_script("tune_generalise.py", "tune_generalise")


@pytest.fixture(scope="module")
def rr():
    return _module("readme_results", REPO / "scripts" / "readme_results.py")


def _record() -> dict:
    return json.loads(RECORD.read_text(encoding="utf-8"))


def _rows(section: dict) -> dict:
    return section["table"] | section.get("ablation", {})


def test_every_section_names_its_run():
    record = _record()
    assert {"locomo", "longmemeval_s"} <= set(record["benchmarks"])
    for key, section in record["benchmarks"].items():
        p = section["provenance"]
        assert p["status"] == "complete" and set(KEYS) <= set(p), key
        assert re.fullmatch(r"[0-9a-f]{40}", p["git_commit"]) and p["git_dirty"] is False, key
        assert p["data"] and all(re.fullmatch(r"[0-9a-f]{64}", sha) for sha in p["data"].values()), key
    tuning = json.loads(TUNING.read_text(encoding="utf-8"))
    assert tuning["provenance"]["status"] == "complete" and tuning["provenance"]["git_dirty"] is False


def test_the_targets_are_read_off_the_record(rr):
    """The targets block: the default's figure against each target, the gap a benchmark
    nobody tuned on leaves to LoCoMo, and the shortfall as (1 - mean) x scored per category."""
    cats = {"a": {"recall@5": 50.0, "recall@512tok": 90.0, "n_scored": 10},
            "b": {"recall@5": 90.0, "recall@512tok": 80.0, "n_scored": 20}}
    bench = {"locomo": {"table": {"recall_plus": {"recall@5": 76.0, "recall@512tok": 80.0, "categories": cats},
                                  "hybrid_plus": {"recall@5": 70.0, "recall@512tok": 84.0}}},
             "beam:100K": {"table": {"recall_plus": {"recall@5": 72.5, "recall@512tok": 70.0, "categories": cats},
                                     "recall_plus[e5]": {"recall@5": 74.0, "recall@512tok": 69.0}}}}
    lines = rr.generalise_targets(bench)
    assert lines[2] == ("- locomo recall@5 >= 75: `recall_plus` 76.0, met (best `recall_plus` 76.0); "
                        "shortfall by category in questions: a 5 of 10 (50.0), b 2 of 20 (90.0).")
    assert lines[3] == ("- locomo recall@512tok >= 85: `recall_plus` 80.0, missed by 5.0 points (best `hybrid_plus` "
                        "84.0); shortfall by category in questions: b 4 of 20 (80.0), a 1 of 10 (90.0).")
    # a benchmark nobody tuned on names its best row too, the default where it is best
    assert lines[4].startswith("- beam:100K (never tuned on) recall@5 within 3 points of LoCoMo's 76.0: "
                               "`recall_plus` 72.5, 3.5 points below, missed by 0.5 points (best `recall_plus[e5]` "
                               "74.0);")
    assert ", 10.0 points below, missed by 7.0 points (best `recall_plus` 70.0);" in lines[5]
    assert not any("longmemeval" in line for line in lines)


def test_the_oracle_row_is_a_ceiling_never_the_best(rr):
    """The gold evidence in dialogue order stands beside each target as what a perfect
    ranking reaches; the best row is chosen among the strategies."""
    cats = {"a": {"recall@5": 50.0, "recall@512tok": 90.0, "n_scored": 10}}
    rows = {"oracle": {"recall@5": 97.0, "recall@512tok": 88.0},
            "recall_plus": {"recall@5": 70.0, "recall@512tok": 80.0, "categories": cats},
            "hybrid_plus": {"recall@5": 72.0, "recall@512tok": 79.0}}
    bench = {"locomo": {"table": rows}, "beam:100K": {"table": {"oracle": {"recall@5": 95.0, "recall@512tok": 86.0},
                                                              "recall_plus": rows["recall_plus"]}}}
    lines = rr.generalise_targets(bench)
    assert "(best `hybrid_plus` 72.0; gold evidence first, `oracle`: 97.0); shortfall" in lines[2]
    assert "(best `recall_plus` 80.0; gold evidence first, `oracle`: 88.0); shortfall" in lines[3]
    assert "0.0 points below, met (best `recall_plus` 70.0; gold evidence first, `oracle`: 95.0); shortfall" in lines[4]


def test_the_tuned_default_is_recall_plus_default():
    """recall_plus's DEFAULTS are the two-pass tuning's choice (the latest run of the protocol)."""
    from memlab.strategies.recall_plus import DEFAULTS

    tuning = json.loads(TUNING_2PASS.read_text(encoding="utf-8"))
    assert {k: DEFAULTS[k] for k in tuning["default"]} == tuning["default"]


def test_every_locomo_format_row_is_heads_configuration(bench):
    """LoCoMo's section and those of files given with --dataset (BEAM 100K here)."""
    sections = {k: v for k, v in _record()["benchmarks"].items() if k != "longmemeval_s"}
    assert "locomo" in sections and len(sections) > 1
    for key, section in sections.items():
        data = sorted(section["provenance"]["data"].values())
        for label, figures in _rows(section).items():
            now = configuration_hash(bench.build(label), data, bench.LOCOMO_PROTOCOL)
            assert now == figures["config_hash"], (f"generalise.json {key} {label!r}: HEAD configures it otherwise; "
                                                   f"re-record it with python bench/bench_generalise.py")


def test_every_longmemeval_row_is_heads_configuration(bench):
    import bench_longmemeval as lme  # bench/ is on sys.path while the bench module loads its helpers

    section = _record()["benchmarks"]["longmemeval_s"]
    (path, sha), = section["provenance"]["data"].items()
    for label, figures in _rows(section).items():
        protocol = lme.PROTOCOL | {"roles": ["user"], "questions": None, "limit": section["limit"]}
        assert configuration_hash(bench.build(label), [sha], protocol) == figures["config_hash"], label


@pytest.fixture(scope="module")
def locomo():
    path = locomo_path()
    if path is None:
        pytest.skip("LoCoMo is not beside the repository (../shared/datasets/locomo/locomo10.json)")
    from memlab.eval import load_any

    return load_any(path, "locomo"), file_sha256(path)


@pytest.mark.slow
def test_the_lexical_locomo_row_equals_a_rerun(locomo, bench, rr):
    dataset, sha = locomo
    section = _record()["benchmarks"]["locomo"]
    assert sorted(section["provenance"]["data"].values()) == [sha]
    fresh = bench.run_locomo_format("recall_plus", "recall_plus", {}, dataset, [sha])
    diffs = rr.differences(section["table"]["recall_plus"], fresh, ignore=RUN_KEYS)
    assert not diffs, "generalise.json locomo recall_plus differs from a re-run:\n" + "\n".join(diffs)


def test_the_parts_act_on_real_data(locomo, bench):
    """Each ablation row of recall_plus (each part the default uses off, each one it leaves
    off on) changes some ranking on two LoCoMo conversations (seconds)."""
    from memlab import strategies
    from memlab.eval import replay

    dataset, _ = locomo
    small = dataset.subset(dialogues=2)
    (_, _, none, _), *rows = bench.ablation_runs()
    assert none == {} and len(rows) == len(bench.PARTS)
    base = replay(strategies.get("recall_plus"), small, ks=(5,), k_max=5)
    assert 0.5 < base["recall@5"].mean() <= 1.0
    for label, name, params, _ in rows:
        other = replay(strategies.get(name, **params), small, ks=(5,), k_max=5)
        assert (other["retrieved_ids"].map(tuple) != base["retrieved_ids"].map(tuple)).any(), label


def test_time_ranges_on_longmemeval_questions():
    path = longmemeval_path(LONGMEMEVAL_S)
    if path is None:
        pytest.skip("LongMemEval is not beside the repository")
    from memlab.eval.loaders import iter_longmemeval
    from memlab.retrieval.temporal import time_ranges

    dated = 0
    for n, d in enumerate(iter_longmemeval(str(path), roles=("user",))):
        p = d.probes[0]
        if re.search(r"\b(last month|in (January|February|March|April|June|July|August|September|October|November|"
                     r"December))\b", p.query):
            ranges = time_ranges(p.query, d.probe_time(p))
            assert ranges and all(a < b <= d.probe_time(p) + 86400 * 366 for a, b in ranges), p.query
            dated += 1
        if n >= 120:
            break
    assert dated >= 1


def test_rows_in_parallel_keep_their_order_and_the_chained_rows_share_a_process(bench, monkeypatch):
    """``--workers``: results come back by label in the calls' order, each from a worker
    process; the chained (dense) rows run one after another in the same worker."""
    import os

    monkeypatch.setitem(sys.modules, "bench_generalise", bench)  # the workers find run_rows' helper by name
    calls = [(label, os.getpid, ()) for label in ("dense a", "lexical", "dense b")]
    serial = bench.run_rows(calls, workers=1)
    parallel = bench.run_rows(calls, workers=2, chained=frozenset({"dense a", "dense b"}))
    assert list(parallel) == ["dense a", "lexical", "dense b"]
    assert set(serial.values()) == {os.getpid()} and os.getpid() not in parallel.values()
    assert parallel["dense a"] == parallel["dense b"]


@pytest.mark.parametrize("path", [TUNING, TUNING_2PASS], ids=["one pass", "two passes"])
def test_the_three_benchmark_tuning_reads_back_its_choice(tune, path):
    """generalise_tuning.json: BEAM 500K's development conversations in the objective, the
    100K set untouched, a clean run, and its default recomputed from its own figures: each
    fold's path keeps the best objective at every step, and the default is the folds' common
    choice or, when they differ, the best mean of the three benchmarks' figures on all ten
    LoCoMo conversations among the configurations tried."""
    record = json.loads(path.read_text(encoding="utf-8"))
    p = record["provenance"]
    assert p["status"] == "complete" and p["git_dirty"] is False
    assert record["beam_dev"]["size"] == "500K" and record["beam_dev"]["conversations"] == [str(i) for i in range(1, 9)]
    assert any("/500K/" in f for f in p["data"]) and not any("/100K/" in f for f in p["data"])
    assert [g["part"] for g in record["grid"]][-3:] == ["neighbour cap", "own-turn keys", "BM25 b"]
    for fold in record["folds"].values():
        for step in fold["steps"]:
            best = max(t["objective"] for t in step["tried"])
            kept = next(t for t in step["tried"] if t["objective"] == best)
            assert all(kept["config"][k] == v for k, v in step["kept"].items())
            for t in step["tried"]:
                three = (t["locomo_train"]["J"] + t["longmemeval"]["J"] + t["beam_dev"]["J"]) / 3
                assert abs(three - t["objective"]) < 1e-3
    # the search as coded now, fed the recorded objectives, walks each fold's recorded path
    grid = [(g["part"], g["settings"]) for g in record["grid"]]
    start = {k: v for _, settings in grid for k, v in settings[0].items()}
    for fold in record["folds"].values():
        recorded = {tune.key(t["config"]): t["objective"] for step in fold["steps"] for t in step["tried"]}
        best, steps = tune.coordinate_ascent(grid, start, lambda c: recorded[tune.key(c)],
                                             passes=record.get("passes", 1))
        assert best == fold["chosen"] and [s["kept"] for s in steps] == [s["kept"] for s in fold["steps"]]
    configs = record["configurations"]

    def everywhere(k: str) -> float:
        c = configs[k]
        return (c["locomo_all"]["J"] + c["longmemeval"]["J"] + c["beam_dev"]["J"]) / 3

    chosen = [f["chosen"] for f in record["folds"].values()]
    if chosen[0] == chosen[1]:
        assert record["default"] == chosen[0]
    else:
        assert json.dumps(dict(sorted(record["default"].items()))) == max(configs, key=everywhere)


def test_coordinate_ascent_keeps_ties_and_revisits_parts(tune):
    """One pass keeps the best setting of each part in order (ties: the current, else the
    earlier); a second pass revisits a part chosen before a later part changed what is best,
    clears the part's own keys (``pull`` does not leak), and the search stops after a pass
    that changes nothing."""
    grid = [("a", [{"a": 0}, {"a": 1}, {"a": 2, "pull": 5}]), ("b", [{"b": 0}, {"b": 1}])]

    def score(c):  # a=2 is best while b=0; with b=1 on, a=1 is best; pull adds nothing
        return {(0, 0): 0, (1, 0): 1, (2, 0): 2, (0, 1): 2, (1, 1): 5, (2, 1): 4}[(c["a"], c["b"])]

    seen = []
    best, steps = tune.coordinate_ascent(grid, {"a": 0, "b": 0}, score, seen.extend)
    assert best == {"a": 2, "pull": 5, "b": 1} and [s["kept"] for s in steps] == [{"a": 2, "pull": 5}, {"b": 1}]
    assert len(seen) == 5
    best, steps = tune.coordinate_ascent(grid, {"a": 0, "b": 0}, score, passes=5)
    assert best == {"a": 1, "b": 1}  # pass 2 moved a to 1 and dropped pull
    assert [(s["part"], s["pass"]) for s in steps] == [("a", 1), ("b", 1), ("a", 2), ("b", 2), ("a", 3), ("b", 3)]
    tie = tune.coordinate_ascent([("a", [{"a": 0}, {"a": 1}, {"a": 2}])], {"a": 1}, lambda c: c["a"] > 0, passes=2)
    assert tie[0] == {"a": 1} and len(tie[1]) == 1  # the current setting stays on a tie; nothing changed: stop


MINI = str(REPO / "tests" / "data" / "locomo_mini.json")


def _record_mini(bench, path: Path, args: list[str], *stale: tuple[str, str]) -> tuple[str, dict, dict]:
    """Record tests/data/locomo_mini.json with ``args`` into ``path``, then give each (part, label)
    of ``stale`` another configuration hash, as if recorded with another configuration; returns
    the section's key, the section and the whole record (as written)."""
    assert bench.main(args + ["--record", str(path)]) == 0
    record = json.loads(path.read_text(encoding="utf-8"))
    (key, section), = record["benchmarks"].items()
    for part, label in stale:
        section[part][label]["config_hash"] = "0" * 64
    path.write_text(json.dumps(record), encoding="utf-8")
    return key, section, record


def test_bench_reuse_adds_rows_only_after_the_default_re_runs_equal(bench, tmp_path, capsys):
    """bench_generalise --reuse on a small LoCoMo file: the rows the record holds with HEAD's
    configuration are taken from it once recall_plus re-runs equal (a row recorded with another
    configuration runs again); a figure off, or a record without the section, exits 2 with one
    line and writes nothing."""
    first, second = tmp_path / "first.json", tmp_path / "second.json"
    args = ["--benchmarks", "none", "--dataset", MINI, "--lexical-only", "--no-ablation"]
    key, section, record = _record_mini(bench, first, args, ("table", "bm25"))
    assert bench.main(args + ["--reuse", str(first), "--record", str(second)]) == 0
    again = json.loads(second.read_text(encoding="utf-8"))["benchmarks"][key]
    assert again["reused"]["checked"] == ["bm25_plus", "recall_plus"]
    assert again["reused"]["rows"] == [label for label in section["table"]
                                       if label not in ("bm25_plus", "recall_plus", "bm25")]
    assert again["reused"]["git_commit"] == section["provenance"]["git_commit"]
    assert again["reused"]["checked_ms_per_question"] == {
        label: section["table"][label]["ms_per_question"] for label in ("bm25_plus", "recall_plus")}
    strip = {"seconds", "ms_per_question"}
    for label, row in section["table"].items():
        if label != "bm25":
            assert {k: v for k, v in again["table"][label].items() if k not in strip} == \
                   {k: v for k, v in row.items() if k not in strip}, label
    assert again["table"]["bm25"]["config_hash"] != "0" * 64  # re-run, not taken
    capsys.readouterr()
    section["table"]["recall_plus"]["recall@5"] += 0.1
    first.write_text(json.dumps(record), encoding="utf-8")
    second.unlink()
    assert bench.main(args + ["--reuse", str(first), "--record", str(second)]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and f"{key} recall_plus recall@5 is" in err and "none is reused" in err
    other = tmp_path / "other.json"
    other.write_bytes(Path(MINI).read_bytes())
    assert bench.main(["--benchmarks", "none", "--dataset", str(other), "--lexical-only", "--no-ablation",
                       "--reuse", str(first), "--record", str(second)]) == 2
    assert "expected a 'locomo:other.json' section" in capsys.readouterr().err
    assert not second.exists()


def test_after_a_change_of_defaults_only_the_references_are_reused(bench, tmp_path):
    """When the record's default was recorded with other DEFAULTS, bm25_plus is the check, the
    references are reused, and every variant of the default re-runs, even one whose own
    configuration is unchanged (its cost is read against its default's time in one run)."""
    first, second = tmp_path / "first.json", tmp_path / "second.json"
    args = ["--benchmarks", "none", "--dataset", MINI, "--lexical-only"]
    # as if recorded before a change of recall_plus's DEFAULTS
    key, section, _ = _record_mini(bench, first, args, ("table", "recall_plus"), ("ablation", "recall_plus"))
    assert bench.main(args + ["--reuse", str(first), "--record", str(second)]) == 0
    again = json.loads(second.read_text(encoding="utf-8"))["benchmarks"][key]
    assert again["reused"]["checked"] == ["bm25_plus"]
    assert again["reused"]["rows"] == [label for label in section["table"]
                                       if not label.startswith(("bm25_plus", "recall_plus"))]
    assert set(again["ablation"]) == set(section["ablation"]) and len(again["ablation"]) > 1
    assert again["table"]["recall_plus"]["config_hash"] != "0" * 64  # re-run, not taken


def test_a_reused_row_is_named_with_the_run_that_measured_it(bench, tmp_path):
    """Reusing from a record that itself reused rows: the rows are taken only from the run that
    measured the checks, and the section names that run, so a time is never read against
    another run's baseline (the rows an earlier run measured re-run)."""
    first, second, third = tmp_path / "first.json", tmp_path / "second.json", tmp_path / "third.json"
    args = ["--benchmarks", "none", "--dataset", MINI, "--lexical-only", "--no-ablation"]
    key, section, _ = _record_mini(bench, first, args, ("table", "bm25"))  # bm25 re-runs in the second run
    assert bench.main(args + ["--reuse", str(first), "--record", str(second)]) == 0
    later = json.loads(second.read_text(encoding="utf-8"))
    assert later["benchmarks"][key]["reused"]["git_commit"] == section["provenance"]["git_commit"]
    later["benchmarks"][key]["provenance"]["git_commit"] = "f" * 40  # as if the second run were at a later commit
    second.write_text(json.dumps(later), encoding="utf-8")
    assert bench.main(args + ["--reuse", str(second), "--record", str(third)]) == 0
    again = json.loads(third.read_text(encoding="utf-8"))["benchmarks"][key]["reused"]
    assert again["git_commit"] == "f" * 40 and again["checked"] == ["bm25_plus", "recall_plus"]
    assert again["rows"] == ["bm25"]  # the second run's own; the first run's rows ran again


def test_reused_rows_are_marked_with_the_run_they_come_from(rr, monkeypatch):
    """A section that took rows from an earlier run (--reuse) marks their times, which are that
    run's, and names the run and the rows that re-ran equal."""
    row = {"recall@5": 50.0, "recall@5_ci": [40.0, 60.0], "recall@512tok": 60.0, "recall@512tok_ci": [50.0, 70.0],
           "ms_per_question": 3.0, "categories": {"a": {"recall@5": 50.0, "recall@512tok": 60.0, "n_scored": 4}}}
    section = {"dataset": "locomo", "table": {"recall_plus": row, "bm25": dict(row, ms_per_question=1.5)},
               "provenance": _record()["benchmarks"]["locomo"]["provenance"],
               "reused": {"git_commit": "abcdef0123456789", "date": "2026-12-06T20:14:09Z",
                          "checked": ["recall_plus"], "rows": ["bm25"],
                          "checked_ms_per_question": {"recall_plus": 2.5}}}
    monkeypatch.setattr(rr, "load", lambda name: {"benchmarks": {"locomo": section}})
    text = rr.render_generalise()
    assert "| `bm25` | 50.0 [40.0, 60.0] | 60.0 [50.0, 70.0] | 1.5 † |" in text
    assert "| `recall_plus` | 50.0 [40.0, 60.0] | 60.0 [50.0, 70.0] | 3.0 |" in text
    assert "† Reused (`--reuse`) from the run at `abcdef0123` on 2026-12-06 20:14 UTC, after `recall_plus` re-ran" in text
    assert "compare them with each other and with that run's `recall_plus` (2.5), not with this run's." in text


def test_reuse_takes_a_records_figures_only_when_one_re_runs_equal(tune):
    """--reuse: the record's LongMemEval and BEAM figures are taken when the check
    configuration's fresh figures equal its recorded ones; one figure off, a limited record or
    a check configuration the record never scored is a ConfigError that names it, and
    nothing is reused."""
    from memlab.base import ConfigError

    record = json.loads(TUNING.read_text(encoding="utf-8"))
    start = dict(tune.START)
    mine = record["configurations"][tune.key(start)]
    fresh = {"config": start, "longmemeval": dict(mine["longmemeval"], seconds=1.0), "beam_dev": dict(mine["beam_dev"])}
    got = tune.reusable(record, "old.json", fresh)
    assert set(got["configurations"]) == set(record["configurations"])
    assert got["from"]["git_commit"] == record["provenance"]["git_commit"] and got["from"]["checked"] == start
    off = dict(fresh, beam_dev=dict(mine["beam_dev"], **{"recall@5": mine["beam_dev"]["recall@5"] + 0.01}))
    with pytest.raises(ConfigError, match=r"old\.json: beam_dev recall@5 of .* none is reused"):
        tune.reusable(record, "old.json", off)
    with pytest.raises(ConfigError, match="limited to 20"):
        tune.reusable(dict(record, lme_limit=20), "old.json", fresh)
    with pytest.raises(ConfigError, match="not among its configurations"):
        tune.reusable(record, "old.json", dict(fresh, config=dict(start, b=0.5)))


def test_the_prose_of_docs_results_holds_on_the_records():
    """docs/results.md's "Why the targets are missed" states comparisons in words, not figures;
    each one is checked here against the records it reads, so a re-record that turns one
    around fails until the words change."""
    bench = _record()["benchmarks"]
    overlap = json.loads((REPO / "bench" / "results" / "evidence_overlap.json").read_text(encoding="utf-8"))
    overlap = overlap["benchmarks"]
    tuning = json.loads(TUNING.read_text(encoding="utf-8"))
    text = " ".join((REPO / "docs" / "results.md").read_text(encoding="utf-8").split())

    def rows(key):
        return bench[key]["table"] | bench[key].get("ablation", {})

    def lowest(cats, metric, n, skip=()):
        return set(sorted((c for c in cats if c not in skip and cats[c][metric] is not None),
                          key=lambda c: cats[c][metric])[:n])

    def highest(cats, metric, n):
        return set(sorted(cats, key=lambda c: -cats[c][metric])[:n])

    # every oracle row far above the default; BEAM summarization capped at 512 tokens
    assert "Every `oracle` row sits far above the default" in text
    for key in ("locomo", "beam:100K"):
        t = bench[key]["table"]
        assert all(t["oracle"][m] - t["recall_plus"][m] > 20 for m in ("recall@5", "recall@512tok")), key
    oracle = bench["beam:100K"]["table"]["oracle"]["categories"]
    assert lowest(oracle, "recall@512tok", 1) == {"summarization"} and oracle["summarization"]["recall@512tok"] < 25
    # LoCoMo: multi-hop and open-domain lowest for the default, lowest overlap, most rivals; e5 lifts both
    assert "the default's two lowest categories are multi-hop and open-domain" in text
    loc, lo = bench["locomo"]["table"], overlap["locomo"]["categories"]
    pair = {"multi-hop", "open-domain"}
    assert lowest(loc["recall_plus"]["categories"], "recall@5", 2) == pair
    assert lowest(lo, "overlap", 2) == pair and highest(lo, "rivals", 2) == pair
    for c in pair:
        for dense in ("recall_plus[e5]", "hybrid_plus"):
            assert loc[dense]["categories"][c]["recall@5"] > loc["recall_plus"]["categories"][c]["recall@5"]
    # LongMemEval: whole sessions win all@5 and lose at 1,024 tokens; multi-session is the default's lowest all@5
    lme = bench["longmemeval_s"]["table"]
    assert lme["bm25_sessions"]["lme_recall_all@5"] > lme["recall_plus"]["lme_recall_all@5"]
    assert lme["bm25_sessions"]["recall@1024tok"] < lme["recall_plus"]["recall@1024tok"]
    assert lowest(lme["recall_plus"]["categories"], "lme_recall_all@5", 1) == {"multi-session"}
    # BEAM: apart from summarization, the two lowest are event ordering and instruction following,
    # the two lowest overlaps, among the three most rivals; the next two are preference following
    # (second most rivals) and multi-session reasoning
    beam, bo = bench["beam:100K"]["table"], overlap["beam:100K"]["categories"]
    two_lowest = {"event_ordering", "instruction_following"}
    assert "the default's two lowest categories are event ordering and instruction following" in text
    assert lowest(beam["recall_plus"]["categories"], "recall@5", 2, skip={"summarization"}) == two_lowest
    assert lowest(bo, "overlap", 2) == two_lowest and two_lowest <= highest(bo, "rivals", 3)
    assert lowest(beam["recall_plus"]["categories"], "recall@5", 4, skip={"summarization"}) == \
        two_lowest | {"preference_following", "multi_session_reasoning"}
    assert sorted(bo, key=lambda c: -bo[c]["rivals"])[1] == "preference_following"
    everything = overlap["beam:100K"]["all"], overlap["locomo"]["all"]
    assert everything[0]["overlap"] > everything[1]["overlap"] and everything[0]["rivals"] > everything[1]["rivals"]
    # the long-message rows: what they recover on BEAM, inside the intervals on the tuned benchmarks
    b = rows("beam:100K")
    assert "level with plain `bm25`: below it at 5 units, above it at 512 tokens" in text
    assert b["recall_plus"]["recall@5"] < b["bm25"]["recall@5"] and b["recall_plus"]["recall@512tok"] > b["bm25"]["recall@512tok"]
    for m in ("recall@5", "recall@512tok"):
        assert b["recall_plus - long-message keys"][m] < b["recall_plus"][m]
        assert b["recall_plus - session fusion"][m] > b["recall_plus"][m]
    for m in ("recall@5", "recall@512tok"):  # "their intervals overlap"
        (a_low, a_high), (b_low, b_high) = b["recall_plus"][m + "_ci"], b["bm25"][m + "_ci"]
        assert a_low <= b_high and b_low <= a_high, m
    for key, metrics in (("locomo", ["recall@5", "recall@512tok"]),
                         ("longmemeval_s", ["lme_recall_any@5", "lme_recall_all@5", "recall@1024tok"])):
        r = rows(key)
        for m in metrics:
            low, high = r["recall_plus"][m + "_ci"]
            assert low <= r["recall_plus - long-message keys"][m] <= high, (key, m)
    # BEAM's dense rows: e5 above the default inside its intervals; without session fusion higher
    # still, without the long-message keys lower; a second embedder inside e5's intervals, at
    # under 1.5 times the default's time per question once cached
    assert "`recall_plus[e5]`) is above the default on both metrics, inside its intervals" in text
    for m in ("recall@5", "recall@512tok"):
        e5, low_high = b["recall_plus[e5]"][m], b["recall_plus"][m + "_ci"]
        assert b["recall_plus"][m] < e5 <= low_high[1], m
        assert b["recall_plus[e5] - session fusion"][m] > e5 > b["recall_plus[e5] - long-message keys"][m], m
        low, high = b["recall_plus[e5]"][m + "_ci"]
        assert low <= b["recall_plus[e5] + minilm (dual embedders)"][m] <= high, m
    assert "costs less than half again the default's time" in text
    assert b["recall_plus[e5] + minilm (dual embedders)"]["ms_per_question"] < 1.5 * b["recall_plus"]["ms_per_question"]
    # LongMemEval's dense rows: e5 above the default everywhere, beyond its interval at 1,024
    # tokens; every dense ablation row inside recall_plus[e5]'s intervals but session diversity,
    # which is below them on every metric (the lexical one below the default's at 5 units)
    assert "every row but `+ session diversity` stays inside `recall_plus[e5]`'s intervals" in text
    lr, lme_metrics = rows("longmemeval_s"), ("lme_recall_any@5", "lme_recall_all@5", "recall@1024tok")
    for m in lme_metrics:
        assert lr["recall_plus[e5]"][m] > lr["recall_plus"][m], m
        assert lr["recall_plus[e5] + session diversity"][m] < lr["recall_plus[e5]"][m + "_ci"][0], m
        if m.endswith("@5"):
            assert lr["recall_plus + session diversity"][m] < lr["recall_plus"][m + "_ci"][0], m
        for label, row in lr.items():
            if label.startswith("recall_plus[e5] ") and "session diversity" not in label:
                low, high = lr["recall_plus[e5]"][m + "_ci"]
                assert low <= row[m] <= high, (label, m)
    assert lr["recall_plus[e5]"]["recall@1024tok"] > lr["recall_plus"]["recall@1024tok_ci"][1]
    assert not any("minilm" in label for label in lr)
    # "each section was recorded with --reuse ... every recall_plus row ran anew"
    assert "every `recall_plus` row ran anew" in text
    for key, section in bench.items():
        reused = section.get("reused") or {}
        assert reused.get("rows") and not any(r.startswith("recall_plus") for r in reused["rows"]), key
    # the one-pass search kept session fusion when BEAM 500K's development conversations showed no loss from it
    for fold in tuning["folds"].values():
        step = next(s for s in fold["steps"] if s["part"] == "session fusion")
        off = next(t for t in step["tried"] if t["config"]["session_weight"] == 0.0)
        kept = next(t for t in step["tried"] if all(t["config"][k] == v for k, v in step["kept"].items()))
        assert kept["config"]["session_weight"] > 0 and kept["beam_dev"]["J"] >= off["beam_dev"]["J"]
    assert tuning["default_how"].startswith("the folds differ")
    # the second pass keeps session fusion on in both folds and in its choice, halves the own-turn
    # keys' weight, and is recall_plus's default
    assert "It keeps session fusion on in both folds" in text
    assert "halved the weight of the own-turn keys; `recall_plus`'s defaults are its choice" in text
    assert "whose choice (the own-turn keys at twice the weight) was the default until" in text
    assert tuning["default"]["turn_weight"] == 1.0
    two = json.loads(TUNING_2PASS.read_text(encoding="utf-8"))
    assert two["passes"] == 2 and any(s["pass"] == 2 for f in two["folds"].values() for s in f["steps"])
    assert all(f["chosen"]["session_weight"] > 0 for f in two["folds"].values()) and two["default"]["session_weight"] > 0
    assert two["default"]["turn_weight"] == 0.5
