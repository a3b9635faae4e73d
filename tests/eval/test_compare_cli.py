"""``memlab compare`` and the confidence intervals of ``memlab eval``, from the command line."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from memlab.cli import main
from memlab.eval.compare import compare_pair
from memlab.eval.results import load_results
from memlab.eval.stats import cluster_bootstrap_ci

from .conftest import LOCOMO, tiny_doc
from .test_cli import run_cli


@pytest.fixture
def runs(tiny_file, tmp_path):
    paths = {}
    for name in ("bm25", "window", "hybrid"):
        paths[name] = tmp_path / f"{name}.parquet"
        assert main(["eval", str(tiny_file), "--strategy", name, "--quiet", "--json", "--output",
                     str(paths[name])]) == 0
    return paths


def test_eval_json_has_a_cluster_bootstrap_ci_for_every_mean(tiny_file, tmp_path, capsys):
    out = tmp_path / "rows.parquet"
    assert main(["eval", str(tiny_file), "--budget", "30", "--json", "--quiet", "--output", str(out)]) == 0
    result = json.loads(capsys.readouterr().out)
    rows = load_results(str(out))
    assert result["n_dialogues"] == 2
    means = [k for k, v in result.items() if ("@" in k or k.startswith(("context_", "llm_"))) and v is not None
             and k != "llm_format_errors"]                   # a total count, not a mean
    assert set(means) <= set(result["ci"]) and "recall@30tok" in result["ci"]
    expected = cluster_bootstrap_ci(rows["recall@5"], rows["dialogue_id"], n_resamples=2000, seed=0)
    assert tuple(result["ci"]["recall@5"]) == expected
    assert main(["eval", str(tiny_file), "--budget", "30", "--json", "--quiet"]) == 0
    again = json.loads(capsys.readouterr().out)["ci"]
    again.pop("latency_ms"), result["ci"].pop("latency_ms")   # wall time: the one non-reproducible column
    assert again == result["ci"]                              # seeded: reproducible bit for bit


def test_compare_two_files_json(runs, capsys):
    assert main(["compare", str(runs["bm25"]), str(runs["window"]), "--metric", "relevance_ratio@5", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert list(result)[:8] == ["metric", "a", "b", "mean_a", "mean_b", "diff", "ci", "p_value"]
    assert {"n_probes", "n_dialogues"} <= set(result)
    both = pd.concat([load_results(str(runs["bm25"])), load_results(str(runs["window"]))])
    r = compare_pair(both, "bm25", "window", "relevance_ratio@5")
    assert (result["mean_a"], result["mean_b"], result["diff"], result["p_value"]) == \
        (r.mean_a, r.mean_b, r.diff, r.p_value)
    assert result["ci"] == [r.ci_low, r.ci_high] and (result["n_probes"], result["n_dialogues"]) == (3, 2)


def test_compare_labels_inside_one_file_and_holm_table(runs, tmp_path, capsys):
    from memlab.eval.results import save_results

    merged = tmp_path / "all.parquet"
    save_results(pd.concat([load_results(str(p)) for p in runs.values()], ignore_index=True), str(merged))
    assert main(["compare", str(merged), "--a", "bm25", "--b", "hybrid", "--metric", "recall@5", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["b"] == "hybrid"
    assert main(["compare", str(merged), "--metric", "relevance_ratio@5", "--json"]) == 0
    pairs = json.loads(capsys.readouterr().out)["pairs"]
    assert [(p["a"], p["b"]) for p in pairs] == [("bm25", "window"), ("bm25", "hybrid"), ("window", "hybrid")]
    raw = sorted(p["p_value"] for p in pairs)
    assert min(p["p_holm"] for p in pairs) == min(1.0, 3 * raw[0])
    assert main(["compare", str(merged), "--metric", "recall@5"]) == 0
    assert "p_holm" in capsys.readouterr().out


def test_compare_refuses_other_datasets_probes_and_typos(runs, tiny_file, tmp_path):
    doc = tiny_doc()
    doc["dialogues"][1]["sessions"][0]["turns"][2]["text"] = "My budget is 950 euros."
    other = tmp_path / "other.json"
    other.write_text(json.dumps(doc))
    assert main(["eval", str(other), "--quiet", "--output", str(tmp_path / "o.parquet")]) == 0
    from memlab.eval.results import save_results

    fewer = load_results(str(runs["bm25"]))
    save_results(fewer[fewer["probe_id"] != "p1"].reset_index(drop=True), str(tmp_path / "sub.parquet"))
    cases = [
        ((str(runs["bm25"]), str(tmp_path / "o.parquet")), "the results come from different datasets"),
        ((str(runs["window"]), str(tmp_path / "sub.parquet")), "were not run on the same probes (1 only in 'window', 0 only in 'bm25')"),
        ((str(runs["bm25"]), str(runs["window"])), "Did you mean 'recall@5'?"),
    ]
    for files, message in cases:
        metric = "recal@5" if "Did you" in message else "recall@5"
        proc = run_cli("compare", *files, "--metric", metric)
        assert proc.returncode == 2 and proc.stdout == ""
        assert len(proc.stderr.strip().splitlines()) == 1 and message in proc.stderr, proc.stderr


@pytest.mark.skipif(LOCOMO is None, reason="LoCoMo absent (../shared/datasets/locomo/locomo10.json or $MEMLAB_LOCOMO)")
def test_compare_on_locomo_from_the_cli(tmp_path):
    for name in ("bm25", "window"):
        proc = run_cli("eval", str(LOCOMO), "--format", "locomo", "--strategy", name, "--categories", "temporal",
                       "--budget", "256", "--quiet", "--json", "--output", str(tmp_path / f"{name}.parquet"))
        assert proc.returncode == 0, proc.stderr
        result = json.loads(proc.stdout)
        assert result["n_dialogues"] == 10 and "recall@256tok" in result["ci"]
    proc = run_cli("compare", str(tmp_path / "bm25.parquet"), str(tmp_path / "window.parquet"),
                   "--metric", "recall@256tok", "--json")
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert (result["n_probes"], result["n_dialogues"]) == (321, 10)
    # BM25 beats a 10-turn window on every dialogue: only the all-positive and all-negative
    # sign vectors of 2^10 reach the observed difference
    assert result["diff"] > 0 and result["p_value"] == 2 / 1024 and result["ci"][0] > 0
