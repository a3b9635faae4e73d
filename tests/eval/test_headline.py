"""memlab.eval.headline: rankings and verdicts phrased from computed values."""

from __future__ import annotations

import pandas as pd
import pytest

from memlab.base import MemlabError
from memlab.eval.compare import compare_pair
from memlab.eval.headline import (Headline, headline, headline_metric, p_floor, phrase_comparison, rank,
                                  ranked_summary, significant, verdict)
from memlab.eval.metrics import summarize


def test_headline_metric_is_the_middle_budget():
    assert headline_metric(["recall@128tok", "recall@256tok", "recall@512tok", "recall@5"]) == "recall@256tok"
    assert headline_metric(["recall@512tok", "recall@256tok"]) == "recall@256tok"
    assert headline_metric(["recall@1024tok"]) == "recall@1024tok"
    assert headline_metric(["recall@1", "recall@5", "recall@10"]) == "recall@5"
    assert headline_metric(["recall@1", "recall@10"]) == "recall@10"
    assert headline_metric(["hit_rate@3", "hit_rate@64tok"], metric="hit_rate") == "hit_rate@64tok"
    with pytest.raises(MemlabError, match="no recall@Btok or recall@k column; columns: x"):
        headline_metric(["x"])


ROW = {"metric": "recall@256tok", "a": "layered", "b": "hybrid_plus", "n_probes": 71, "n_dialogues": 9,
       "mean_a": 0.935446, "mean_b": 0.960094, "diff": -0.024648, "ci_low": -0.0725, "ci_high": -0.0,
       "p_value": 0.25, "wins": 0, "ties": 68, "losses": 3}


def test_phrase_comparison_states_the_test_and_its_verdict():
    assert phrase_comparison(ROW) == (
        "layered 0.935 vs hybrid_plus 0.960 on recall@256tok (diff -0.025, 95% CI [-0.072, +0.000], p = 0.250, "
        "71 probes in 9 dialogues, 0 wins / 68 ties / 3 losses): no significant difference")
    low = {**ROW, "p_value": 0.01}
    assert verdict(low) == "hybrid_plus higher" and significant(low)
    assert phrase_comparison({**low, "p_holm": 0.2}).endswith("Holm-adjusted p = 0.200, 71 probes in 9 dialogues, "
                                                              "0 wins / 68 ties / 3 losses): no significant difference")
    assert verdict({**ROW, "diff": 0.1, "p_value": 0.049}) == "layered higher"
    assert "105 probes in 1 dialogue, " in phrase_comparison({**ROW, "n_probes": 105, "n_dialogues": 1})
    assert not significant({**ROW, "p_value": float("nan")})


def test_p_floor():
    assert p_floor(9) == 2 / 512 and p_floor(1) == 1.0 and p_floor(16) == 2 / 2 ** 16
    assert p_floor(17, n_resamples=999) == 1 / 1000


def _rows(values: dict[str, list[float]]) -> pd.DataFrame:
    """One probe per dialogue per strategy: values[strategy][i] is dialogue i's recall."""
    return pd.DataFrame([{"strategy": s, "dialogue_id": f"d{i:02d}", "probe_id": "p", "gold": ["t"],
                          "recall@5": v} for s, vs in values.items() for i, v in enumerate(vs)])


def test_rank_orders_by_mean_and_lists_references_last():
    df = _rows({"oracle": [1, 1, 1], "b": [0, 1, 1], "a": [0, 1, 1], "c": [1, 1, 1], "full_context": [0, 0, 0]})
    table = rank(df, "recall@5")
    assert table["rank"].tolist() == ["1", "2", "3", "ref", "ref"]
    assert table["strategy"].tolist() == ["c", "a", "b", "oracle", "full_context"]
    assert table["recall@5"].tolist() == pytest.approx([1.0, 2 / 3, 2 / 3, 1.0, 0.0])
    summary = summarize(df, by=["strategy"], metrics=["recall@5"], ci=True)
    assert table.loc[1, "ci_low"] == summary.set_index("strategy").loc["a", "recall@5_ci_low"]


def test_headline_says_when_the_data_cannot_separate_the_strategies():
    df = _rows({"a": [1, 1, 1], "b": [0, 0, 1], "c": [0, 0, 0], "oracle": [1, 1, 1]})
    top = headline(df)
    assert top.metric == "recall@5" and len(top.pairs) == 3          # the oracle is not compared
    assert top.pairs["p_value"].tolist() == [compare_pair(df, a, b, "recall@5", n_resamples=2000).p_value
                                             for a, b in (("a", "b"), ("a", "c"), ("b", "c"))]
    assert top.different.empty
    assert top.sentences() == [
        "Highest mean recall@5: a 1.000 (95% CI [1.000, 1.000]).",
        "No pair of strategies differs on recall@5 after Holm correction over 3 paired comparisons (alpha 0.05): "
        "the data cannot separate them; with 3 dialogues the smallest possible p is 2/2^3 = 0.2500, so after Holm "
        "over 3 pairs none could reach 0.05: separating them needs more dialogues."]
    text = top.to_markdown()
    assert text.startswith("## Headline: recall@5\n") and "| ref | oracle | 1.000 |" in text


def test_headline_names_the_pairs_that_differ_after_holm():
    n = 20  # above 16 dialogues the sign-flip test is Monte Carlo: p = 1 / 2001 for a difference in every one
    df = _rows({"a": [1.0] * n, "b": [1.0] * (n - 1) + [0.0], "c": [0.0] * n})
    top = headline(df)
    different = top.different
    assert different[["a", "b"]].values.tolist() == [["a", "c"], ["b", "c"]]
    # Holm over 3 pairs: the two smallest p (1 / 2001 each) times 3, then kept monotone
    assert different["p_holm"].tolist() == pytest.approx([3 / 2001, 3 / 2001])
    sentences = top.sentences()
    assert sentences[0] == "Highest mean recall@5: a 1.000 (95% CI [1.000, 1.000])."
    assert sentences[1] == ("2 of 3 pairs differ on recall@5 after Holm correction (alpha 0.05): "
                            "a > c (diff +1.000, p_holm 0.001); b > c (diff +0.950, p_holm 0.001).")
    assert sentences[2] == "The data cannot separate a from b."


def test_headline_orients_a_difference_higher_side_first():
    n = 20
    df = _rows({"a": [0.0] * n, "b": [1.0] * n})
    row = headline(df).different.iloc[0]
    assert (row["a"], row["b"], row["diff"], row["mean_a"], row["mean_b"]) == ("b", "a", 1.0, 1.0, 0.0)
    assert headline(df).sentences()[-1] == "b is above every other ranked strategy."


def test_tied_leaders_are_named_together():
    df = _rows({"x": [1, 0, 1], "y": [1, 0, 1]})
    assert headline(df).sentences()[0].startswith("Highest mean recall@5, shared by 2 strategies: x 0.667")


def test_ranked_summary_ranks_and_shows_the_interval():
    df = _rows({"oracle": [1, 1, 1], "a": [0, 1, 1], "c": [1, 1, 1]})
    summary = summarize(df, by=["strategy"], ci=True)
    table = ranked_summary(summary, "recall@5", ["n_scored"])
    assert table.columns.tolist() == ["rank", "strategy", "recall@5", "recall@5 95% CI", "n_scored"]
    assert table["strategy"].tolist() == ["c", "a", "oracle"] and table["rank"].tolist() == ["1", "2", "ref"]
    assert table.loc[0, "recall@5 95% CI"] == "[1.000, 1.000]"


def test_a_headline_can_be_rebuilt_from_recorded_tables():
    df = _rows({"a": [1, 1, 1], "b": [0, 0, 1]})
    top = headline(df)
    again = Headline(top.metric, pd.DataFrame(top.ranking.to_dict("records")),
                     pd.DataFrame(top.pairs.to_dict("records")), top.alpha)
    assert again.sentences() == top.sentences()


def test_the_sweep_summary_and_terminal_table_open_with_the_ranked_headline(tmp_path, monkeypatch, capsys):
    import json

    from memlab.cli import main

    from .conftest import tiny_doc

    (tmp_path / "tiny.json").write_text(json.dumps(tiny_doc()))
    (tmp_path / "quick.toml").write_text('[dataset]\npath = "tiny.json"\n[[strategies]]\nname = "bm25"\n'
                                         '[[strategies]]\nname = "window"\n[[strategies]]\nname = "oracle"\n'
                                         '[run]\nks = [1, 5]\nbudgets = [32, 64]\n[[plots]]\nkind = "pareto"\n')
    monkeypatch.chdir(tmp_path)
    assert main(["sweep", "quick.toml", "--quiet"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("| rank | strategy | recall@32tok | recall@32tok 95% CI | n_scored |")
    assert [line.split("|")[1].strip() for line in out[2:5]][-1] == "ref"
    assert out[6].startswith("Highest mean recall@32tok")
    summary = (tmp_path / "runs" / "quick" / "summary.md").read_text()
    assert summary.startswith("## Headline: recall@32tok\n") and "\n## Every metric\n" in summary
    assert summary.index("No pair of strategies differs") < summary.index("## Every metric")
    assert (tmp_path / "runs" / "quick" / "00_pareto_recall_at_Btok.png").is_file()
