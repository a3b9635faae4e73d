"""Error analysis (memlab.eval.diagnosis, memlab.eval.probe_table) and ``memlab compare --show``, on the shipped dialogues."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pandas as pd
import pytest

from memlab.base import MemlabError
from memlab.cli import main
from memlab.eval import (
    ProbeTable,
    inspect_probes,
    load_any,
    miss_counts,
    miss_crosstab,
    miss_reasons,
    question_type,
    replay,
)
from memlab.eval.diagnosis import REASONS, cutoff_of
from memlab.eval.results import save_results
from memlab.strategies import get

REPO = Path(__file__).resolve().parents[2]
TRAVEL = REPO / "datasets" / "travel_advisor.json"


@pytest.fixture(scope="module")
def travel():
    return load_any(TRAVEL)


@pytest.fixture(scope="module")
def runs(travel):
    """bm25 and bm25_plus on travel_advisor, lists deep enough for a 64-token budget."""
    return {name: replay(get(name), travel, k_max=5, ks=(1, 5), budgets=(64,), label=name)
            for name in ("bm25", "bm25_plus")}


@pytest.fixture(scope="module")
def shipped():
    ds = load_any(REPO / "datasets")
    return ds, pd.concat([replay(get(name), ds, k_max=5, ks=(1, 5), budgets=(64, 128), label=name)
                          for name in ("bm25", "bm25_plus")], ignore_index=True)


def _reasons(frame: pd.DataFrame) -> dict[str, str]:
    return dict(zip(frame["probe_id"], frame["reason"].astype(str)))


# -- why it missed --------------------------------------------------------------------------

def test_miss_reasons_of_a_few_probes(runs):
    bm25 = runs["bm25"]
    reasons = miss_reasons(bm25, k=5)
    # the lists reach past k_max = 5 hits until they hold 5 sessions (the session metrics' depth),
    # so p2's gold, beyond rank 5, is below k rather than not retrieved
    assert _reasons(reasons) == {"p1": "not_retrieved", "p2": "below_k", "p3": "not_retrieved",
                                 "p4": "found", "p5": "not_retrieved", "p6": "found", "p7": "found",
                                 "p8": "found", "p9": "found"}
    p9 = reasons.set_index("probe_id").loc["p9"]
    # gold t39 ranks 2nd (t28 first): found at k=5, below k at k=1
    assert (p9["first_gold_rank"], p9["depth"], p9["n_gold"], p9["question_type"]) == (2, 10, 2, "what")
    assert _reasons(miss_reasons(bm25, k=1))["p9"] == "below_k"
    # 64 tokens keep only t28 (44 tokens): the gold t39 (25 more) was retrieved, then cut
    assert list(bm25.set_index("probe_id").loc["p9", "retrieved_tokens"][:2]) == [44, 25]
    by_budget = miss_reasons(bm25, k=None, budget=64).set_index("probe_id")
    assert by_budget.loc["p9", "reason"] == "cut_by_budget" and by_budget.loc["p9", "kept"] == 1
    assert by_budget.loc["p7", "reason"] == "found"          # gold t5 first, 26 tokens
    assert miss_reasons(runs["bm25_plus"], k=5).set_index("probe_id").loc["p6", "depth"] == 0  # nothing retrieved


def test_found_share_is_the_hit_rate(shipped):
    _, rows = shipped
    for k, budget, metric in ((5, None, "hit_rate@5"), (1, None, "hit_rate@1"), (None, 64, "hit_rate@64tok"),
                              (None, 128, "hit_rate@128tok")):
        reasons = miss_reasons(rows, k=k, budget=budget)
        scored = rows[rows["n_gold"] > 0]
        assert len(reasons) == len(scored)
        found = reasons.assign(f=reasons["reason"] == "found").groupby("strategy")["f"].mean()
        expected = scored.groupby("strategy")[metric].mean()
        assert found.to_dict() == pytest.approx(expected.to_dict(), abs=1e-12)
    assert list(miss_reasons(rows)["reason"].cat.categories) == list(REASONS)


def test_miss_counts_and_crosstab(runs):
    reasons = miss_reasons(pd.concat([runs["bm25"], runs["bm25_plus"]]), k=5)
    counts = miss_counts(reasons)
    assert counts.columns.tolist() == ["strategy", "category", *REASONS, "n"]
    rows = {(r.strategy, r.category): (r.not_retrieved, r.below_k, r.cut_by_budget, r.found, r.n)
            for r in counts.itertuples()}
    assert rows[("bm25", "all")] == (3, 1, 0, 5, 9)
    assert rows[("bm25", "preference")] == (3, 0, 0, 1, 4)
    assert rows[("bm25_plus", "all")] == (1, 1, 0, 7, 9)
    assert rows[("bm25_plus", "single-hop")] == (1, 1, 0, 1, 3)
    assert counts["category"].tolist()[0] == "all" and counts["strategy"].tolist()[:4] == ["bm25"] * 4
    shares = miss_counts(reasons, by="question_type", share=True)
    assert shares[list(REASONS)].sum(axis=1).tolist() == pytest.approx([1.0] * len(shares))
    what = shares.set_index(["strategy", "question_type"]).loc[("bm25", "what")]
    assert (what["not_retrieved"], what["n"]) == (0.5, 4)
    cross = miss_crosstab(reasons)
    assert cross.index.name == "bm25" and cross.columns.name == "bm25_plus"
    assert cross.loc["not_retrieved", "found"] == 3          # p1, p3, p5: bm25_plus finds what bm25 did not
    assert cross.loc["found", "not_retrieved"] == 1          # p6
    assert cross.loc["found", "found"] == 4 and int(cross.to_numpy().sum()) == 9
    with pytest.raises(MemlabError, match="no strategy 'x'"):
        miss_crosstab(reasons, "bm25", "x")


def test_question_type():
    assert [question_type(q) for q in (
        "When did Caroline go to the support group?", "Would Melanie go on another roadtrip?",
        "Which city does the user work in?", "And whose dog is it?", "Name the user's cat.", None)] == \
        ["when", "yes/no", "which", "who", "other", "other"]
    assert [question_type(q) for q in ("用户戒咖啡之前早上喝什么？", "用户什么时候搬家的？", "猫叫什么名字吗", "你好。")] == \
        ["what", "when", "what", "other"]


def test_cutoff_of():
    assert [cutoff_of(m) for m in ("recall@5", "hit_rate@256tok", "context_recall", "answer_f1")] == \
        [(5, None), (None, 256), (None, None), (None, None)]


# -- the inspector ---------------------------------------------------------------------------

def test_inspector_rows_hits_and_gold(runs, travel):
    table = inspect_probes(runs["bm25"], travel, runs["bm25_plus"], metric="hit_rate@5")
    assert isinstance(table, ProbeTable) and len(table) == 9 and table.labels == ["bm25", "bm25_plus"]
    frame = table.frame.set_index(["probe_id", "strategy"])
    p1 = frame.loc[("p1", "bm25_plus")]
    assert [h["id"] for h in p1["hits"]] == ["t4", "t3", "t2", "t5", "t1"]
    assert [h["gold"] for h in p1["hits"]] == [False, False, False, True, False]
    assert [h["tokens"] for h in p1["hits"]] == [21, 20, 18, 26, 19]
    assert p1["hits"][3]["text"].startswith("Lin: Quiet, definitely. I like islands")
    assert [h["score"] for h in p1["hits"]] == list(runs["bm25_plus"].iloc[0]["retrieved_scores"])[:5]
    assert (p1["first_gold_rank"], p1["reason"], p1["value"], p1["diff"]) == (4, "found", 1.0, -1.0)
    assert p1["gold"] == ["t5"] and p1["gold_text"][0].startswith("Lin: Quiet, definitely.")
    assert p1["category"] == "preference" and p1["question_type"] == "what"
    p1a = frame.loc[("p1", "bm25")]
    assert [h["id"] for h in p1a["hits"]] == ["t2", "t4", "t25", "t3", "t27"]
    assert not any(h["gold"] for h in p1a["hits"]) and pd.isna(p1a["first_gold_rank"])
    assert p1a["reason"] == "not_retrieved" and p1a["retrieved_ids"] == ["t2", "t4", "t25", "t3", "t27"]
    assert list(p1a["context_ids"]) == list(runs["bm25"].iloc[0]["context_ids"])


def test_inspector_budget_cut_and_deep_gold(runs, travel):
    table = inspect_probes(runs["bm25"], travel, k=None, budget=64, max_hits=1)
    p9 = table.frame.set_index("probe_id").loc["p9"]
    assert p9["cut_by_budget"] and p9["kept"] == 1 and p9["first_gold_rank"] == 2
    # one hit asked for; the first gold hit is listed too, outside the budget
    assert [(h["rank"], h["id"], h["gold"], h["kept"]) for h in p9["hits"]] == [(1, "t28", False, True),
                                                                                (2, "t39", True, False)]
    text = table.to_text()
    block = text.split("== ")[9]
    assert block.splitlines()[0] == "travel-advisor / p9 · multi-hop · what"
    assert "bm25: cut_by_budget: first gold at rank 2 of 10 retrieved, 1 kept (64 tokens)" in block
    assert "     -- cut (64 tokens) --\n  *  2. t39" in block


def test_text_marks_left_out_ranks_and_the_cut(runs, travel):
    # bm25_plus p1: gold t5 at rank 4; one hit asked for, cut at k=2
    table = inspect_probes(runs["bm25_plus"], travel, k=2, max_hits=1, n=1)
    lines = table.to_text().splitlines()
    assert lines[-6] == "bm25_plus: below_k: first gold at rank 4 of 14 retrieved, 2 kept (k=2)"
    assert lines[-5].startswith("     1. t4            4.071   21 tok  Advisor: A beach escape")
    assert lines[-4:-1] == ["     ...", "     -- cut (k=2) --", "     ..."]      # rank 2 kept, 3 cut: both left out
    assert lines[-1].startswith("  *  4. t5            2.018   26 tok  Lin: Quiet, definitely.")
    assert "<tr class='out'><td colspan='5'>…</td></tr><tr class='out'><td colspan='5'>…</td></tr>" \
        "<tr class='gold out cut' style='background:#fff1a8;font-weight:bold;color:#888;border-top:2px dashed #c00'>" \
        "<td>★ 4</td>" in table._repr_html_()


def test_show_misses_and_differ(runs, travel):
    misses = inspect_probes(runs["bm25"], travel, show="misses")
    assert misses.frame["probe_id"].tolist() == ["p1", "p2", "p3", "p5"]
    differ = inspect_probes(runs["bm25"], travel, runs["bm25_plus"], show="differ", metric="hit_rate@5")
    order = differ.frame.drop_duplicates("block")
    assert order["probe_id"].tolist() == ["p6", "p1", "p3", "p5"]
    assert order["diff"].tolist() == [1.0, -1.0, -1.0, -1.0]
    two = inspect_probes(runs["bm25"], travel, runs["bm25_plus"], show="differ", metric="hit_rate@5", n=1)
    assert two.frame.drop_duplicates("block")["probe_id"].tolist() == ["p6", "p1"]
    assert len(inspect_probes(runs["bm25"], travel, n=3)) == 3


def test_text_and_html_rendering(runs, travel):
    table = inspect_probes(runs["bm25"], travel, runs["bm25_plus"], show="differ", metric="hit_rate@5", n=1)
    text = str(table)
    assert text == table.to_text()
    assert text.startswith("== travel-advisor / p6 · single-hop · which · hit_rate@5 bm25 - bm25_plus = +1\n"
                           "Q: Which destination did the user choose, and for which dates?\n")
    assert "gold t35: Lin: Then let's go with Palawan, Port Barton." in text
    assert "  *  1. t35           2.125   30 tok  Lin: Then let's go with Palawan" in text
    assert "bm25_plus: hit_rate@5 0; not_retrieved: nothing retrieved" in text
    assert "bm25_plus: hit_rate@5 1; found: first gold at rank 4 of 14 retrieved, 5 kept (k=5)" in text
    # long texts cut to the width in text, folded in HTML
    assert max(len(line) for line in table.to_text(width=40).splitlines()) < \
        max(len(line) for line in text.splitlines())
    page = table._repr_html_()
    assert page.count("<div class='mlpt'>") == 2                  # one block per probe
    assert "<tr class='gold' style='background:#fff1a8;font-weight:bold'><td>★ 1</td><td>t35</td>" in page
    assert "<details><summary>Advisor: El Nido and Port Barton" in page
    assert "Let&#x27;s" in page or "let&#x27;s" in page            # escaped
    empty = inspect_probes(runs["bm25"].iloc[[3]], travel, show="misses")   # p4: found
    assert len(empty) == 0 and str(empty) == "(no probes)" and "(no probes)" in empty._repr_html_()


def test_inputs_from_files_and_without_text(runs, travel, tmp_path):
    a, b = tmp_path / "a.parquet", tmp_path / "b.csv"
    save_results(runs["bm25"], str(a))
    save_results(runs["bm25_plus"], str(b))
    from_files = inspect_probes(str(a), str(TRAVEL), str(b), metric="hit_rate@5")
    in_memory = inspect_probes(runs["bm25"], travel, runs["bm25_plus"], metric="hit_rate@5")
    assert from_files.to_text() == in_memory.to_text()
    both = inspect_probes(pd.concat([runs["bm25"], runs["bm25_plus"]]), travel, metric="hit_rate@5")
    assert both.to_text() == in_memory.to_text()
    bare = inspect_probes(runs["bm25"])                            # no dataset: ids, no text
    assert bare.frame.loc[0, "gold_text"] == [None] and bare.frame.loc[0, "hits"][0]["text"] is None
    assert "gold t5\n" in bare.to_text()
    same = inspect_probes(runs["bm25"], travel, runs["bm25"])      # one label twice: told apart
    assert same.labels == ["A:bm25", "B:bm25"]


def test_inspector_refuses_bad_input(runs, travel):
    with pytest.raises(MemlabError, match="show must be one of all, misses, differ"):
        inspect_probes(runs["bm25"], travel, show="wins")
    with pytest.raises(MemlabError, match="needs two runs and a metric"):
        inspect_probes(runs["bm25"], travel, show="differ", metric="hit_rate@5")
    with pytest.raises(MemlabError, match="no metric 'recall@7'"):
        inspect_probes(runs["bm25"], travel, metric="recall@7")
    other = load_any(REPO / "datasets" / "preference_change.json")
    with pytest.raises(MemlabError, match="has no probe 'p1' in dialogue 'travel-advisor'"):
        inspect_probes(runs["bm25"], other)
    three = pd.concat([runs["bm25"], runs["bm25_plus"], runs["bm25"].assign(strategy="x")])
    with pytest.raises(MemlabError, match="hold 3 strategies"):
        inspect_probes(three, travel)
    with pytest.raises(MemlabError, match="other: no rows"):
        inspect_probes(runs["bm25"], travel, runs["bm25"].iloc[:0])
    with pytest.raises(MemlabError, match="not replay rows"):
        inspect_probes(pd.DataFrame({"a": [1]}))
    with pytest.raises(MemlabError, match="k must be a positive int"):
        miss_reasons(runs["bm25"], k=0)


def test_a_derived_memory_shows_the_turns_it_stands_for(runs, travel):
    row = runs["bm25"].iloc[[0]].copy()
    row.at[row.index[0], "retrieved_ids"] = ["summary-1", "t2"]
    row.at[row.index[0], "retrieved_source_ids"] = [["t4", "t5"], ["t2"]]
    row.at[row.index[0], "retrieved_scores"] = [0.9, 0.5]
    row.at[row.index[0], "retrieved_tokens"] = [40, 18]
    table = inspect_probes(row, travel)
    hit = table.frame.loc[0, "hits"][0]
    assert (hit["id"], hit["source_ids"], hit["gold"]) == ("summary-1", ["t4", "t5"], True)
    assert hit["text"].startswith("[from t4, t5] Advisor: A beach escape") and " | Lin: Quiet" in hit["text"]
    assert miss_reasons(row)["reason"].tolist() == ["found"]


# -- memlab compare --show ----------------------------------------------------------------------

@pytest.fixture(scope="module")
def files(runs, tmp_path_factory):
    folder = tmp_path_factory.mktemp("show")
    paths = {}
    for name, rows in runs.items():
        paths[name] = folder / f"{name}.parquet"
        save_results(rows, str(paths[name]))
    return paths


def test_compare_show_text(files, capsys):
    assert main(["compare", str(files["bm25"]), str(files["bm25_plus"]), "--metric", "hit_rate@5", "--show", "1",
                 "--dataset", str(TRAVEL), "--n-resamples", "200"]) == 0
    out = capsys.readouterr().out
    stats, rest = out.split("\n\n", 1)
    assert stats.startswith("hit_rate@5: bm25 0.5556 vs bm25_plus 0.7778") and "1 wins / 5 ties / 3 losses" in stats
    assert rest.startswith("Largest differences: 1 probe(s) where bm25 beats bm25_plus most, then 1 where "
                           "bm25_plus beats bm25 most (* marks a gold hit):\n\n== travel-advisor / p6")
    assert "\n== travel-advisor / p1 · preference · what · hit_rate@5 bm25 - bm25_plus = -1\n" in rest
    assert "  *  4. t5            2.018   26 tok  Lin: Quiet, definitely." in rest
    assert main(["compare", str(files["bm25"]), str(files["bm25_plus"]), "--metric", "hit_rate@5",
                 "--show", "1", "--n-resamples", "200"]) == 0
    bare = capsys.readouterr().out
    assert "--dataset FILE adds the turns' text" in bare and "gold t5\n" in bare


def test_compare_show_json(files, capsys):
    assert main(["compare", str(files["bm25"]), str(files["bm25_plus"]), "--metric", "hit_rate@5", "--show", "2",
                 "--dataset", str(TRAVEL), "--json", "--n-resamples", "200"]) == 0
    result = json.loads(capsys.readouterr().out)
    shown = result["shown"]
    assert [p["probe_id"] for p in shown["a_better"]] == ["p6"]
    assert [p["probe_id"] for p in shown["b_better"]] == ["p1", "p3"]
    p1 = shown["b_better"][0]
    assert p1["diff"] == -1.0 and p1["gold"] == ["t5"]
    plus = p1["runs"]["bm25_plus"]
    assert (plus["value"], plus["reason"], plus["first_gold_rank"]) == (1.0, "found", 4)
    assert [(h["id"], h["gold"]) for h in plus["hits"]][3] == ("t5", True)
    assert main(["compare", str(files["bm25"]), str(files["bm25_plus"]), "--metric", "hit_rate@5",
                 "--json", "--n-resamples", "200"]) == 0
    assert "shown" not in json.loads(capsys.readouterr().out)


def test_compare_show_budget_metric_cuts_by_tokens(files, capsys):
    assert main(["compare", str(files["bm25"]), str(files["bm25_plus"]), "--metric", "recall@64tok", "--show", "5",
                 "--dataset", str(TRAVEL), "--json", "--n-resamples", "200"]) == 0
    shown = json.loads(capsys.readouterr().out)["shown"]
    reasons = {p["probe_id"]: p["runs"]["bm25"]["reason"] for p in shown["a_better"] + shown["b_better"]}
    assert reasons.get("p9", "cut_by_budget") == "cut_by_budget"
    assert all(r in REASONS for r in reasons.values())


def test_compare_show_refuses_bad_input(files, tmp_path, capsys):
    assert main(["compare", str(files["bm25"]), str(files["bm25_plus"]), "--metric", "hit_rate@5",
                 "--show", "-1"]) == 2
    assert "--show must be >= 0" in capsys.readouterr().err
    three = tmp_path / "three.parquet"
    rows = pd.concat([pd.read_parquet(files["bm25"]).assign(strategy=s) for s in ("x", "y", "z")])
    save_results(rows, str(three))
    assert main(["compare", str(three), "--metric", "hit_rate@5", "--show", "1", "--n-resamples", "50"]) == 2
    assert "--show needs two strategies" in capsys.readouterr().err
    assert main(["compare", str(files["bm25"]), str(files["bm25_plus"]), "--metric", "hit_rate@5", "--show", "1",
                 "--dataset", str(REPO / "datasets" / "preference_change.json")]) == 2
    assert "pass the dataset the results were run on" in capsys.readouterr().err


# -- the docs block (docs/cli.md) -----------------------------------------------------------------

def test_readme_show_block_matches_a_rerun(tmp_path, monkeypatch, capsys):
    readme = (REPO / "docs" / "cli.md").read_text(encoding="utf-8")
    section = readme.split("## Reading the probes behind a difference", 1)[1]
    commands, shown = re.search(r"```bash\n(.*?)```\s*```text\n(.*?)```", section, flags=re.S).groups()
    monkeypatch.chdir(tmp_path)
    (tmp_path / "datasets").symlink_to(REPO / "datasets")
    lines = [shlex.split(line)[1:] for line in commands.strip().splitlines()]
    assert [args[0] for args in lines] == ["eval", "eval", "compare"] and "--show" in lines[-1]
    for args in lines:
        capsys.readouterr()
        assert main(args) == 0
    assert capsys.readouterr().out == shown


# -- the stored notebook ---------------------------------------------------------------------------

def test_the_stored_error_analysis_notebook_renders_the_inspector():
    import nbformat

    nb = nbformat.read(REPO / "notebooks" / "09_error_analysis.ipynb", as_version=4)
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    assert outputs and not [o for o in outputs if o.output_type == "error"]
    pages = [o["data"]["text/html"] for o in outputs if "text/html" in o.get("data", {})]
    assert sum("<div class='mlpt'>" in p and "★" in p and "<details>" in p for p in pages) == 2  # one per pair
    assert any("image/png" in o.get("data", {}) for o in outputs)
    printed = "".join(o.get("text", "") for o in outputs if o.output_type == "stream")
    assert "Dataset(name='locomo'" in printed and " · hit_rate@5 hybrid_plus - bm25_plus = " in printed
