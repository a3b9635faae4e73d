"""The metric registry: names parsed once, column order, bounds, and a user metric found
everywhere (``memlab eval --json``, a sweep summary, ``memlab compare``)."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import pandas as pd
import pytest

from memlab import strategies
from memlab.base import MemlabError
from memlab.cli import main
from memlab.eval.metrics import (BOUNDED, CONTEXT_METRICS, RETRIEVAL_METRICS, RowView, compute_metrics, expand,
                                 get_metric, is_bounded, metric_columns, parse_column, register_metric,
                                 registered, unregister_metric)
from memlab.eval import load_any, replay
from memlab.eval.sweep import run_config
from memlab.eval.sweep_config import read_config
from memlab.eval.user_modules import import_user_module

ROOT = Path(__file__).resolve().parents[3]
F1 = ROOT / "experiments" / "f1_metric.py"


def test_column_names_are_parsed_once_into_metric_and_parameter():
    p = parse_column("recall@512tok")
    assert (p.metric.key, p.metric.view, p.budget, p.k) == ("recall@Btok", "budget", 512, None)
    p = parse_column("session_ndcg@10")
    assert (p.metric.key, p.metric.view, p.k) == ("session_ndcg@k", "retrieval", 10)
    assert parse_column("context_recall").metric.param is None
    for name in ("n_gold", "recall", "tokens@5", "recall@0", "recal@5", "context_recall@5", 7, "latency_ms"):
        assert parse_column(name) is None, name
    assert is_bounded("mrr@3") and is_bounded("session_recall@64tok") and not is_bounded("tokens@64tok")
    assert BOUNDED.match("answer_f1") and not BOUNDED.match("context_tokens")   # the old name still works


def test_built_in_tables_keep_their_column_order():
    cols = expand(registered(batch="turn_budget") + registered(batch="turns"), [1, 5], [64, 512])
    assert cols[:6] == ["recall@64tok", "hit_rate@64tok", "tokens@64tok", "recall@512tok", "hit_rate@512tok",
                        "tokens@512tok"]
    assert cols[6:] == [f"{m}@{k}" for m in RETRIEVAL_METRICS for k in (1, 5)]
    assert RETRIEVAL_METRICS == ("hit_rate", "recall", "recall_all", "relevance_ratio", "ndcg", "mrr")
    assert CONTEXT_METRICS == ("context_hit_rate", "context_recall", "context_recall_all",
                               "context_relevance_ratio")


def test_every_built_in_per_row_function_equals_its_column():
    rows = replay(strategies.get("layered", embedder=None), load_any(ROOT / "datasets"), ks=(1, 5),
                  budgets=(64, 512))
    computed = [m for m in registered() if m.fn is not None]
    assert {m.key for m in computed} >= {"recall@k", "session_ndcg@k", "context_recall", "tokens@Btok",
                                            "lme_recall_any@k", "lme_turn_ndcg_any@k"}
    for n, (_, raw) in enumerate(rows.iterrows()):
        row = RowView(gold=list(dict.fromkeys(raw["gold"])),
                       items=[list(i) for i in (raw["retrieved_source_ids"] if raw["retrieved_source_ids"]
                                                is not None else [[x] for x in raw["retrieved_ids"]])],
                       tokens=list(raw["retrieved_tokens"]), context=list(dict.fromkeys(raw["context_ids"])),
                       gold_sessions=list(raw["gold_sessions"]),
                       retrieved_sessions=[list(s) for s in raw["retrieved_sessions"]],
                       gold_turn_sessions=list(raw["gold_turn_sessions"]),
                       source_sessions=[list(s) for s in raw["retrieved_source_sessions"]])
        for m in computed:
            for col in m.columns((1, 5), (64, 512)):
                want, got = raw[col], m.fn(row, parse_column(col).value)
                assert (math.isnan(want) and math.isnan(got)) or want == got, (n, col)


def test_every_built_in_block_has_its_batch_function_beside_its_metrics():
    """compute_metrics fills a built-in block with the batch function its module registers
    next to the per-row functions (both score with one function), not with a second copy."""
    from memlab.eval.metrics.registry import batch_fill

    blocks = {m.batch for m in registered() if m.batch is not None and m.fn is not None}
    assert blocks == {"turn_budget", "turns", "context", "sessions", "longmemeval"}
    for block in blocks:
        fill = batch_fill(block)
        assert fill is not None, block
        assert {m.fn.__module__ for m in registered(batch=block)} == {fill.__module__}, block
    assert batch_fill(None) is None and batch_fill("no_such_block") is None


def test_registration_is_validated():
    with pytest.raises(MemlabError, match="view must be one of"):
        register_metric("x", lambda row, k: 0.0, view="ranked")
    with pytest.raises(MemlabError, match="param must be None, 'k' or 'tok'"):
        register_metric("x", lambda row, k: 0.0, param="n")
    with pytest.raises(MemlabError, match="name must be lower-case"):
        register_metric("F1", lambda row, k: 0.0)
    with pytest.raises(MemlabError, match="'recall@k' is already registered"):
        register_metric("recall", lambda row, k: 0.0, param="k")
    with pytest.raises(MemlabError, match="did you mean 'recall@k'"):
        get_metric("recal@k")


@pytest.fixture
def f1():
    """experiments/f1_metric.py imported as ``--import`` does; unregistered afterwards."""
    module = import_user_module(F1)
    yield module
    unregister_metric("f1@k")
    for name in [n for n, m in sys.modules.items() if getattr(m, "__file__", None) == str(F1)]:
        del sys.modules[name]


def test_a_user_metric_is_one_function_and_one_registration(f1):
    rows = pd.DataFrame({"gold": [["t1", "t2"], [], ["t3"]], "retrieved_ids": [["t1", "x", "t2"], ["t1"], ["y"]],
                         "context_ids": [[], [], []]})
    out = compute_metrics(rows, ks=(1, 3))
    assert list(out.columns)[-2:] == ["f1@1", "f1@3"] and "f1@3" in metric_columns(out)
    # row 0 @3: P = 2/3, R = 1 -> F1 = 0.8; @1: P = 1, R = 1/2 -> 2/3
    assert out.loc[0, "f1@3"] == pytest.approx(0.8, abs=1e-15) and out.loc[0, "f1@1"] == pytest.approx(2 / 3)
    assert math.isnan(out.loc[1, "f1@3"]) and out.loc[2, "f1@3"] == 0.0
    assert is_bounded("f1@3") and get_metric("f1@k").view == "retrieval"


def test_user_metric_end_to_end_eval_sweep_compare(f1, tiny_file, tmp_path, capsys):
    paths = {}
    for name in ("bm25", "window"):
        paths[name] = tmp_path / f"{name}.parquet"
        assert main(["eval", str(tiny_file), "--strategy", name, "--import", str(F1), "--quiet", "--json",
                     "--k", "3", "--output", str(paths[name])]) == 0
        result = json.loads(capsys.readouterr().out)
        assert isinstance(result["f1@3"], float) and len(result["ci"]["f1@3"]) == 2
    assert main(["compare", str(paths["bm25"]), str(paths["window"]), "--metric", "f1@3", "--json"]) == 0
    compared = json.loads(capsys.readouterr().out)
    assert compared["metric"] == "f1@3" and compared["n_probes"] == 3
    sweep_file = tmp_path / "sweep.toml"
    sweep_file.write_text(f'imports = ["{F1}"]\n[dataset]\npath = "{tiny_file}"\n'
                          '[[strategies]]\nname = "bm25"\n[run]\nks = [1, 3]\n'
                          '[[plots]]\nkind = "metric_at_k"\nmetric = "f1"\n')
    result = run_config(read_config(sweep_file), base_dir=tmp_path, output=tmp_path / "out")
    assert {"f1@1", "f1@3", "f1@3_ci_low"} <= set(result.summary.columns)
    summary_md = (tmp_path / "out" / "summary.md").read_text()
    wide = summary_md.split("## Every metric\n\n", 1)[1]  # after the ranked headline
    assert "f1@3" in wide and wide.splitlines()[0].endswith("| notes |")
    # the tiny dataset names no stale evidence: its NaN means say so on their row
    assert "stale_in_context: no mean: no probe has a value (only probes that name stale evidence are " \
           "scored)" in wide.splitlines()[2]


def test_compare_refuses_a_metric_one_side_lacks(tiny_file, tmp_path, capsys):
    a, b = tmp_path / "a.parquet", tmp_path / "b.parquet"
    assert main(["eval", str(tiny_file), "--strategy", "bm25", "--budget", "256", "--quiet", "--json",
                 "--output", str(a)]) == 0
    assert main(["eval", str(tiny_file), "--strategy", "window", "--quiet", "--json", "--output", str(b)]) == 0
    capsys.readouterr()
    assert main(["compare", str(a), str(b), "--metric", "recall@256tok"]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1
    assert captured.err == f"memlab compare: no metric 'recall@256tok' in {b}: it was run without --budget 256\n"


def test_compare_refuses_nan_on_one_side_and_no_pairs(tiny_file, tmp_path, capsys):
    from memlab.eval.results import load_results, save_results

    a, b = tmp_path / "a.parquet", tmp_path / "b.parquet"
    for name, path in (("bm25", a), ("window", b)):
        assert main(["eval", str(tiny_file), "--strategy", name, "--quiet", "--json", "--output", str(path)]) == 0
    capsys.readouterr()
    rows = load_results(str(b))
    rows.loc[rows["probe_id"] == "p1", "recall@5"] = float("nan")   # e.g. a probe whose LLM step failed
    rows.loc[rows["probe_id"] == "p1", "error"] = "LLM timed out"
    save_results(rows, str(b))
    assert main(["compare", str(a), str(b), "--metric", "recall@5"]) == 2
    err = capsys.readouterr().err
    assert err == ("memlab compare: recall@5 is NaN for 'window' on 1 probe(s) that 'bm25' scored, first "
                   "dialogue 'trip', probe 'p1' (its probe failed: LLM timed out); a paired comparison needs "
                   "a value on both sides\n")
    for path in (a, b):
        rows = load_results(str(path))
        save_results(rows.assign(**{"recall@5": float("nan")}), str(path))
    assert main(["compare", str(a), str(b), "--metric", "recall@5"]) == 2
    assert capsys.readouterr().err == ("memlab compare: no probe has a value of recall@5 (a probe without gold "
                                       "evidence is unscored); nothing to compare\n")


def test_a_nan_mean_is_never_printed_without_its_reason(tiny_file, tmp_path, capsys):
    from memlab.eval.metrics import nan_notes, summarize

    rows = replay(strategies.get("bm25"), load_any(tiny_file), ks=(5,), label="bm25")
    unscored = rows[rows["n_gold"] == 0]
    table = summarize(pd.concat([rows, unscored.assign(strategy="empty")]), by="strategy")
    notes = nan_notes(table)
    assert notes[-1].startswith("strategy empty: hit_rate@5, recall@5, ") and \
        notes[-1].endswith(": no mean: no scored probes (none of its 1 probes has gold evidence)")
    assert "strategy bm25: stale_in_context: no mean: no probe has a value (only probes that name stale " \
           "evidence are scored)" in notes
    assert not any(n.startswith("strategy bm25: recall@5") for n in notes)
    data = tmp_path / "unscored.json"
    doc = json.loads(Path(tiny_file).read_text())
    for d in doc["dialogues"]:
        for p in d["probes"]:
            p["evidence"] = []
    data.write_text(json.dumps(doc))
    assert main(["eval", str(data), "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "  recall@5                   n/a  (no scored probes)" in out and " nan" not in out.lower()
