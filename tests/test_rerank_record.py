"""bench/bench_rerank.py and its record bench/results/rerank.json: the sample is the seeded
draw the script makes, the figures are those of the recorded questions, the reranker only
reorders inside its window, the default row is the configuration HEAD runs, and the docs'
block is rendered from it."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest

from memlab.base import ConfigError
from memlab.eval.configuration import configuration_hash

REPO = Path(__file__).resolve().parents[1]
RECORD = REPO / "bench" / "results" / "rerank.json"


@pytest.fixture(scope="module")
def rr(bench_script):
    return bench_script("bench_rerank.py", "bench_rerank")


@pytest.fixture(scope="module")
def record():
    return json.loads(RECORD.read_text(encoding="utf-8"))


def test_the_draw_is_seeded_scored_and_in_dataset_order_and_the_subset_keeps_every_turn(rr, locomo_dataset):
    a, b = rr.draw(locomo_dataset, 40, 3), rr.draw(locomo_dataset, 40, 3)
    assert a == b and len(set(a)) == 40 and a != rr.draw(locomo_dataset, 40, 4)
    order = [(d.id, p.id) for d in locomo_dataset.dialogues for p in d.probes]
    assert [order.index(q) for q in a] == sorted(order.index(q) for q in a)
    evidence = {(d.id, p.id): p.evidence for d in locomo_dataset.dialogues for p in d.probes}
    assert all(evidence[q] for q in a)
    subset = rr.sampled(locomo_dataset, a)
    assert sorted((d.id, p.id) for d in subset.dialogues for p in d.probes) == sorted(a)
    turns = {d.id: d.n_turns for d in locomo_dataset.dialogues}
    assert all(d.n_turns == turns[d.id] for d in subset.dialogues)
    with pytest.raises(ConfigError, match="--sample: expected 1 to"):
        rr.draw(locomo_dataset, 0, 0)


def test_the_record_is_its_seeded_draw_and_its_figures_are_its_questions(rr, locomo_dataset, record):
    p = record["provenance"]
    assert p["status"] == "complete" and p["git_dirty"] is False
    protocol = record["protocol"]
    assert [tuple(q) for q in record["questions"]] == rr.draw(locomo_dataset, protocol["sample"], protocol["seed"])
    rows = pd.DataFrame([dict(r, strategy=label) for label, rs in record["rows"].items() for r in rs])
    for label, run in record["runs"].items():
        mine = rows[rows["strategy"] == label]
        assert [tuple(x) for x in mine[["dialogue_id", "probe_id"]].to_numpy()] == [tuple(q) for q in record["questions"]]
        fresh = rr.figures(mine, run["seconds"])
        assert {k: v for k, v in fresh.items() if k != "ms_per_question"} == \
            {k: v for k, v in run.items() if k not in ("ms_per_question", "config_hash")}
    assert rr.paired(rows) == record["paired"]
    assert math.isclose(record["added_ms_per_question"],
                        record["runs"][rr.RERANKED]["ms_per_question"] - record["runs"][rr.DEFAULT]["ms_per_question"],
                        abs_tol=0.11)


def test_the_reranker_moved_hits_only_inside_its_window(record, rr):
    """With the window at 10, recall@10 is the default's on every question; the reranked run
    made one LLM call per question and the default none."""
    assert record["window"] == 10
    default, reranked = record["rows"][rr.DEFAULT], record["rows"][rr.RERANKED]
    assert [r["recall@10"] for r in default] == [r["recall@10"] for r in reranked]
    assert all(r["llm_calls"] == 0 for r in default) and all(r["llm_calls"] == 1 for r in reranked)


def test_the_default_row_is_the_configuration_head_runs(rr, record):
    data = sorted(record["provenance"]["data"].values())
    s = rr.strategy(rr.DEFAULT, record["model"], record["window"], None)
    assert configuration_hash(s, data, record["protocol"]) == record["runs"][rr.DEFAULT]["config_hash"], (
        "recall_plus changed since bench/results/rerank.json was recorded: run bench/bench_rerank.py --record again")


def test_the_verdict_follows_the_paired_figures():
    import importlib.util

    spec = importlib.util.spec_from_file_location("readme_results", REPO / "scripts" / "readme_results.py")
    rr = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(rr)
    same = {"diff": 0.0, "ci": [0.0, 0.0], "p_value": 1.0, "wins": 0, "ties": 9, "losses": 0}
    assert rr.rerank_verdict(same) == "no question changed"
    up = {"diff": 4.0, "ci": [1.0, 7.0], "p_value": 0.01, "wins": 6, "ties": 90, "losses": 1}
    assert rr.rerank_verdict(up) == "the reranker is higher"
    assert rr.rerank_verdict(dict(up, diff=-4.0, ci=[-7.0, -1.0])) == "the reranker is lower"
    assert rr.rerank_verdict(dict(up, ci=[-1.0, 7.0])) == "the data cannot separate them"
    assert rr.rerank_verdict(dict(up, p_value=0.2)) == "the data cannot separate them"


LME_RECORD = REPO / "bench" / "results" / "rerank_longmemeval.json"


@pytest.fixture(scope="module")
def lme_record():
    return json.loads(LME_RECORD.read_text(encoding="utf-8"))


def test_the_longmemeval_record_is_its_seeded_draw_and_its_figures_are_its_questions(rr, lme_record):
    from memlab.eval.paths import LONGMEMEVAL_S, longmemeval_path

    p = lme_record["provenance"]
    assert p["status"] == "complete" and p["git_dirty"] is False
    protocol = lme_record["protocol"]
    assert protocol["benchmark"] == "longmemeval" and protocol["roles"] == ["user"]
    scored = rr.lme_scored(longmemeval_path(LONGMEMEVAL_S))
    assert len(scored) == 336  # S dev's questions with gold user turns (abstention questions have none)
    assert [tuple(q) for q in lme_record["questions"]] == rr.draw_from(scored, protocol["sample"], protocol["seed"])
    rows = pd.DataFrame([dict(r, strategy=label) for label, rs in lme_record["rows"].items() for r in rs])
    for label, run in lme_record["runs"].items():
        mine = rows[rows["strategy"] == label]
        assert [tuple(x) for x in mine[["dialogue_id", "probe_id"]].to_numpy()] == \
            [tuple(q) for q in lme_record["questions"]]
        fresh = rr.figures(mine, run["seconds"], rr.LME_METRICS)
        assert {k: v for k, v in fresh.items() if k != "ms_per_question"} == \
            {k: v for k, v in run.items() if k not in ("ms_per_question", "config_hash")}
    assert rr.paired(rows, rr.LME_METRICS) == lme_record["paired"]
    # the reranker reorders only its window of 10: turn recall at 10 is the default's on every question
    assert lme_record["window"] == 10
    default, reranked = lme_record["rows"][rr.DEFAULT], lme_record["rows"][rr.RERANKED]
    assert [r["recall@10"] for r in default] == [r["recall@10"] for r in reranked]
    assert all(r["llm_calls"] == 0 for r in default) and all(r["llm_calls"] == 1 for r in reranked)


def test_the_longmemeval_rows_are_the_configuration_head_runs(rr, lme_record):
    data = sorted(lme_record["provenance"]["data"].values())
    command = lme_record["provenance"]["command"]
    args = rr.parser().parse_args(command[2:])
    assert args.benchmark == "longmemeval" and args.max_words in (None, lme_record["max_words"])
    for label, run in lme_record["runs"].items():
        s = rr.strategy(label, lme_record["model"], lme_record["window"], args.n_threads, lme_record["max_words"])
        assert configuration_hash(s, data, lme_record["protocol"]) == run["config_hash"], (
            f"{label} changed since {LME_RECORD.name} was recorded: run bench/bench_rerank.py --benchmark longmemeval again")


def test_a_bad_benchmark_option_is_one_line(rr, capsys):
    assert rr.main(["--benchmark", "longmemeval", "--sample", "0"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--sample: expected 1 to 336" in err

