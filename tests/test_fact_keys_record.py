"""bench/bench_fact_keys.py and its record bench/results/fact_keys.json: the conversations are
the ones named, the figures are those of the recorded questions, each row is the
configuration HEAD gives its label, the LLM row's cost is one call per observed turn, and the
docs' block is rendered from the record. The script itself runs end to end with the offline
stand-in on the smallest conversation."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from memlab.base import ConfigError
from memlab.eval.configuration import configuration_hash

REPO = Path(__file__).resolve().parents[1]
RECORD = REPO / "bench" / "results" / "fact_keys.json"


@pytest.fixture(scope="module")
def fk(bench_script):
    return bench_script("bench_fact_keys.py", "bench_fact_keys")


@pytest.fixture(scope="module")
def record():
    return json.loads(RECORD.read_text(encoding="utf-8"))


def _rows(record) -> pd.DataFrame:
    return pd.DataFrame([dict(r, strategy=label) for label, rs in record["rows"].items() for r in rs])


def test_the_conversations_are_the_ones_named(fk, locomo_dataset):
    subset = fk.chosen(locomo_dataset, ["conv-30", "conv-26"])
    assert [d.id for d in subset.dialogues] == ["conv-30", "conv-26"]
    with pytest.raises(ConfigError, match="--conversations: expected distinct ids among conv-26, .* got conv-99"):
        fk.chosen(locomo_dataset, ["conv-99"])
    with pytest.raises(ConfigError, match="--conversations: expected distinct ids"):
        fk.chosen(locomo_dataset, ["conv-30", "conv-30"])


def test_the_record_is_its_conversations_and_its_figures_are_its_questions(fk, locomo_dataset, record):
    p = record["provenance"]
    assert p["status"] == "complete" and p["git_dirty"] is False
    subset = fk.chosen(locomo_dataset, record["protocol"]["conversations"])
    asked = [(d.id, q.id) for d in subset.dialogues for q in d.probes]
    rows = _rows(record)
    turns = sum(d.n_turns for d in subset.dialogues)
    assert set(record["runs"]) == set(fk.LABELS)
    for label, run in record["runs"].items():
        mine = rows[rows["strategy"] == label]
        assert [tuple(x) for x in mine[["dialogue_id", "probe_id"]].to_numpy()] == asked
        fresh = fk.figures(mine, run["seconds"], turns)
        # ms per turn came from the unrounded seconds: recomputed from the rounded ones it may differ in its last digit
        assert {k: v for k, v in fresh.items() if k != "ms_per_turn"} == \
            {k: v for k, v in run.items() if k in fresh and k != "ms_per_turn"}
        assert abs(fresh["ms_per_turn"] - run["ms_per_turn"]) <= 0.11
    assert {label: fk.paired(rows, label) for label in (fk.RULES, fk.LLM_FACTS)} == record["paired"]
    assert record["time_ratio"] == round(record["runs"][fk.LLM_FACTS]["seconds"] / record["runs"][fk.DEFAULT]["seconds"], 1)


def test_the_llm_row_paid_one_call_per_turn_and_its_facts_are_recorded(fk, locomo_dataset, record):
    run = record["runs"][fk.LLM_FACTS]
    subset = fk.chosen(locomo_dataset, record["protocol"]["conversations"])
    ids = [t.id for d in subset.dialogues for t in d.turns()]
    assert run["llm_calls"] >= len(ids) == run["n_turns"]  # one per turn, more only for retries
    assert run["llm_calls"] - len(ids) <= run["llm_format_errors"]
    # the facts are kept by turn id, which LoCoMo repeats across conversations: the last one named wins
    assert sorted(record["facts"]) == sorted(set(ids))
    assert run["turns_with_facts"] == sum(1 for f in record["facts"].values() if f)
    assert record["runs"][fk.RULES]["llm_calls"] == 0


def test_every_row_is_the_configuration_head_runs(fk, record):
    data = sorted(record["provenance"]["data"].values())
    command = record["provenance"]["command"]
    assert command[1] == "bench/bench_fact_keys.py"
    args = fk.parser().parse_args(command[2:])  # the model's settings (threads) as the run had them
    llm = fk.extractor_llm(record["model"], args.n_threads, None)
    for label, run in record["runs"].items():
        s = fk.strategy(label, record["protocol"]["fact_weight"], llm)
        assert configuration_hash(s, data, record["protocol"]) == run["config_hash"], (
            f"{label} changed since bench/results/fact_keys.json was recorded: run bench/bench_fact_keys.py --record again")


def test_the_script_runs_end_to_end_with_the_offline_stand_in(fk, tmp_path, capsys):
    out = tmp_path / "fact_keys.json"
    assert fk.main(["--model", "offline", "--record", str(out)]) == 0
    got = json.loads(out.read_text(encoding="utf-8"))
    llm = got["runs"][fk.LLM_FACTS]
    assert llm["llm_calls"] == llm["n_turns"] and llm["llm_format_errors"] == 0
    assert got["runs"][fk.DEFAULT]["recall@5"] == pytest.approx(
        100 * _rows(got).query("strategy == @fk.DEFAULT")["recall@5"].mean(), abs=0.051)
    assert "time of the LLM-facts replay" in capsys.readouterr().out


def test_the_verdict_names_a_side_only_when_the_paired_figures_do():
    import importlib.util

    spec = importlib.util.spec_from_file_location("readme_results", REPO / "scripts" / "readme_results.py")
    rr = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(rr)
    up = {"diff": 4.0, "ci": [1.0, 7.0], "p_value": 0.01, "wins": 6, "ties": 90, "losses": 1}
    assert rr.paired_verdict(up, "the fact-key row") == "the fact-key row is higher"
    assert rr.paired_verdict(dict(up, ci=[-1.0, 7.0]), "x") == "the data cannot separate them"
    assert rr.paired_verdict(dict(up, wins=0, losses=0), "x") == "no question changed"
