"""Lifecycle metrics: stale evidence in the dataset format, stale_in_context / stale_only /
stale_rate, and per-turn store size and LLM cost traces."""

import json
import math

import pandas as pd
import pytest

from memlab.cli import main
from memlab.eval import replay
from memlab.eval.dataset import DatasetError
from memlab.eval.lifecycle import (
    TRACE_COLUMNS,
    add_stale_metrics,
    lifecycle_summary,
    lifecycle_trace,
    stale_metrics,
    stale_rate,
    trace_dialogue,
)
from memlab.eval.loaders import load_dataset
from memlab.eval.loaders.native import dataset_from_dict
from memlab.eval.metrics import summarize
from memlab.offline.llm import OfflineLLM
from memlab.memories.layered import LayeredMemory
from memlab.retrieval import BM25Retriever
from memlab.strategies import RetrievalStrategy, WindowStrategy

from .helpers import doc, write


def stale_doc():
    """coffee: t1 espresso (superseded by t4 green tea); p2 asks for the current drink."""
    d = doc()
    d["dialogues"][0]["probes"][1]["stale_evidence"] = ["t1"]
    return d


def test_stale_metrics_formulas():
    # S named, C holds a stale turn and the gold one: seen but not alone
    assert stale_metrics(["t1", "t4"], ["t4"], ["t1"]) == {"stale_in_context": 1.0, "stale_only": 0.0}
    # stale turn without the current one: the outdated fact alone
    assert stale_metrics(["t1", "t2"], ["t4"], ["t1"]) == {"stale_in_context": 1.0, "stale_only": 1.0}
    # no stale turn in the context
    assert stale_metrics(["t4"], ["t4"], ["t1"]) == {"stale_in_context": 0.0, "stale_only": 0.0}
    # no gold at all: stale_only = stale_in_context
    assert stale_metrics(["t1"], [], ["t1"]) == {"stale_in_context": 1.0, "stale_only": 1.0}
    # probe naming no stale turn: unscored
    assert all(math.isnan(v) for v in stale_metrics(["t1"], ["t4"], []).values())


def test_add_stale_metrics_and_stale_rate():
    rows = pd.DataFrame({"gold": [["a"], ["a"], ["a"], ["b"]],
                         "context_ids": [["x", "a"], ["x"], ["y"], ["x"]],
                         "stale_evidence": [["x"], ["x"], ["x"], []]})
    out = add_stale_metrics(rows)
    assert out["stale_in_context"].tolist()[:3] == [1.0, 1.0, 0.0]
    assert out["stale_only"].tolist()[:3] == [0.0, 1.0, 0.0]
    assert math.isnan(out["stale_only"].iloc[3])
    assert stale_rate(out) == pytest.approx(1 / 3)   # over the 3 probes naming stale evidence
    assert stale_rate(rows) == pytest.approx(1 / 3)  # computed when the columns are absent
    assert math.isnan(stale_rate(rows.assign(stale_evidence=[[], [], [], []])))
    assert "stale_only" not in rows.columns          # input untouched


def test_native_format_reads_writes_and_checks_stale_evidence(tmp_path):
    ds = load_dataset(write(tmp_path, stale_doc()))
    assert ds.dialogues[0].probes[1].stale_evidence == ["t1"]
    assert ds.dialogues[0].probes[0].stale_evidence == []
    ds.save(str(tmp_path / "again.json"))
    saved = json.loads((tmp_path / "again.json").read_text(encoding="utf-8"))
    assert saved["dialogues"][0]["probes"][1]["stale_evidence"] == ["t1"]
    assert "stale_evidence" not in saved["dialogues"][0]["probes"][0]  # empty: not written
    assert load_dataset(str(tmp_path / "again.json")).hash == ds.hash


@pytest.mark.parametrize("stale, message", [
    (["t9"], "probe 'p2': field 'stale_evidence': unknown turn id 't9'"),
    (["t4"], "field 'stale_evidence': turn 't4' is also gold evidence"),
    (["t1", "t1"], "field 'stale_evidence' lists a turn id twice"),
    ("t1", "field 'stale_evidence' must be an array, got string 't1'"),
])
def test_bad_stale_evidence_is_named(tmp_path, stale, message):
    d = stale_doc()
    d["dialogues"][0]["probes"][1]["stale_evidence"] = stale
    with pytest.raises(DatasetError, match=message.replace("(", r"\(").replace(")", r"\)")):
        load_dataset(write(tmp_path, d))


def test_stale_evidence_must_precede_the_probe(tmp_path):
    d = stale_doc()
    d["dialogues"][0]["probes"][0]["stale_evidence"] = ["t4"]  # p1 is asked after t3
    with pytest.raises(DatasetError, match="probe 'p1': field 'stale_evidence': turn 't4' comes after"):
        load_dataset(write(tmp_path, d))


def test_replay_rows_carry_stale_metrics_and_store_size():
    ds = dataset_from_dict(stale_doc(), source="stale.json")
    # the whole history is in a big window: the old fact is seen, next to the new one
    rows = replay(WindowStrategy(window_size=None), ds, ks=(1,))
    p2 = rows.set_index("probe_id").loc["p2"]
    assert p2["stale_evidence"] == ["t1"] and p2["store_size"] == 5
    assert (p2["stale_in_context"], p2["stale_only"]) == (1.0, 0.0)
    assert rows.set_index("probe_id").loc["p1", "store_size"] == 3
    # BM25 with one recall and no history: the espresso turn alone answers "drink every morning"
    d = stale_doc()
    d["dialogues"][0]["probes"][1]["query"] = "Which drink every morning?"
    one = RetrievalStrategy(BM25Retriever(), history_window=0, context_k=1)
    rows = replay(one, dataset_from_dict(d, source="stale.json"), ks=(1,))
    p2 = rows.set_index("probe_id").loc["p2"]
    assert p2["context_ids"] == ["t1"] and (p2["stale_in_context"], p2["stale_only"]) == (1.0, 1.0)
    assert rows["stale_only"].isna().tolist() == [True, True, False]  # timeline order: p1, p3, p2
    summary = summarize(rows)
    assert summary.loc[0, "stale_only"] == 1.0 == stale_rate(rows)


def test_cli_json_reports_stale_rate(tmp_path, capsys):
    path = write(tmp_path, stale_doc())
    assert main(["eval", path, "--strategy", "window", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["stale_rate"] == 0.0 and result["n_stale_probes"] == 1
    assert main(["eval", write(tmp_path, doc(), "plain.json"), "--strategy", "bm25", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["stale_rate"] is None and result["n_stale_probes"] == 0


def test_trace_counts_store_size_and_llm_cost_per_turn():
    ds = dataset_from_dict(stale_doc(), source="stale.json")
    rows = trace_dialogue(RetrievalStrategy(BM25Retriever()), ds.dialogues[0])
    assert [r["store_size"] for r in rows] == [1, 2, 3, 4, 5]
    assert [r["turn_id"] for r in rows] == ["t1", "t2", "t3", "t4", "t5"]
    assert sum(r["llm_calls"] for r in rows) == 0
    # a layered memory with an LLM extracts while observing: calls and tokens land on turns
    layered = LayeredMemory(llm=OfflineLLM())
    trace = lifecycle_trace(layered, ds, label="layered-llm")
    assert list(trace.columns) == ["strategy"] + TRACE_COLUMNS
    assert trace["llm_calls"].sum() > 0
    assert trace["llm_calls"].sum() == trace_total_calls(layered, ds)
    summary = lifecycle_summary(trace)
    row = summary.iloc[0]
    assert row["n_turns"] == 5 and row["final_store_size"] == trace["store_size"].iloc[-1]
    assert row["llm_calls_per_turn"] == trace["llm_calls"].sum() / 5
    assert row["llm_tokens_per_turn"] == (trace["llm_prompt_tokens"].sum() + trace["llm_completion_tokens"].sum()) / 5


def trace_total_calls(strategy, ds):
    """Calls spent observing alone (no probes asked): the trace must charge exactly these."""
    s = strategy.clone()
    s.reset()
    for t in ds.dialogues[0].turns():
        s.observe(t.to_record(ds.dialogues[0].id))
    return s.llm_usage()["calls"]
