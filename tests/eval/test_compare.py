"""Paired comparison: exact permutation p-values, seeded bootstrap, win/tie/loss, Markdown."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from memlab.base import MemlabError
from memlab.eval.compare import (
    bootstrap_ci,
    compare,
    compare_pair,
    paired_values,
    permutation_test,
    to_markdown,
)


def test_exact_permutation_p_value_on_four_pairs():
    # d = (1, 2, 3, -1): |sum| = 5; of the 16 sign vectors, sums with |s.d| >= 5 are 7, 5, 5, -5, -5, -7.
    assert permutation_test([1.0, 2.0, 3.0, -1.0]) == 6 / 16
    assert permutation_test([1.0, 1.0, 1.0, 1.0]) == 2 / 16
    assert permutation_test([0.0, 0.0, 0.0]) == 1.0
    assert math.isnan(permutation_test([]))


def test_exact_enumeration_up_to_sixteen_pairs():
    d = np.ones(16)
    assert permutation_test(d) == 2 / 2 ** 16
    assert permutation_test(d, exact_max_n=15, n_resamples=999, seed=1) == 1 / 1000  # Monte Carlo floor


def test_monte_carlo_is_seeded_and_corrected():
    rng = np.random.default_rng(7)
    d = rng.normal(0.1, 1.0, size=40)
    p = permutation_test(d, n_resamples=2000, seed=3)
    assert p == permutation_test(d, n_resamples=2000, seed=3)
    hits = p * 2001 - 1
    assert abs(hits - round(hits)) < 1e-9 and 0 < p <= 1


def test_bootstrap_ci():
    assert bootstrap_ci([0.5, 0.5, 0.5]) == (0.5, 0.5)
    # Resampled means of (0, 1) are 0, 0.5, 1 with probabilities 1/4, 1/2, 1/4: 2.5% and 97.5% quantiles are 0 and 1.
    assert bootstrap_ci([0.0, 1.0], n_resamples=4000, seed=0) == (0.0, 1.0)
    d = np.random.default_rng(0).normal(size=30)
    low, high = bootstrap_ci(d, n_resamples=2000, seed=5)
    assert (low, high) == bootstrap_ci(d, n_resamples=2000, seed=5)
    assert (low, high) != bootstrap_ci(d, n_resamples=2000, seed=6)
    assert d.min() < low < d.mean() < high < d.max()
    assert all(math.isnan(x) for x in bootstrap_ci([]))
    with pytest.raises(MemlabError, match="n_resamples must be a positive int, got 0"):
        bootstrap_ci([1.0], n_resamples=0)
    with pytest.raises(MemlabError, match=r"confidence must be in \(0, 1\), got 1.5"):
        bootstrap_ci([1.0], confidence=1.5)


def results() -> pd.DataFrame:
    # a vs b on five probes; p5 is unscored for b (NaN) and p6 exists only for a.
    return pd.DataFrame({
        "strategy": ["a"] * 6 + ["b"] * 5,
        "dialogue_id": ["d1"] * 3 + ["d2"] * 3 + ["d1"] * 3 + ["d2"] * 2,
        "probe_id": ["p1", "p2", "p3", "p4", "p5", "p6", "p1", "p2", "p3", "p4", "p5"],
        "category": ["x", "y", "x", "y", "x", "x", "x", "y", "x", "y", "x"],
        "recall@5": [1.0, 0.5, 1.0, 0.0, 1.0, 1.0, 0.0, 0.5, 0.0, 1.0, np.nan],
    })


def test_paired_values_join_and_drop_nan():
    a, b = paired_values(results(), "a", "b", "recall@5")
    assert a.tolist() == [1.0, 0.5, 1.0, 0.0] and b.tolist() == [0.0, 0.5, 0.0, 1.0]


def test_compare_pair():
    r = compare_pair(results(), "a", "b", "recall@5", n_resamples=500)
    assert (r.n_probes, r.n_dialogues, r.mean_a, r.mean_b, r.diff) == (4, 2, 0.625, 0.375, 0.25)
    assert (r.wins, r.ties, r.losses) == (2, 1, 1)
    # d = (1, 0, 1 | -1) in dialogues d1 | d2: D = (2, -1), |sum| = 1. Flipping whole dialogues:
    # |2 - 1| = 1, |2 + 1| = 3, |-2 - 1| = 3, |-2 + 1| = 1 -- all 4 reach 1.
    assert r.p_value == 1.0
    unclustered = compare_pair(results(), "a", "b", "recall@5", n_resamples=500, cluster=None)
    # each probe alone: sign-flipped sums +-1 +-1 +-1 (the 0 changes nothing), all 16 reach 1
    assert unclustered.p_value == 1.0 and unclustered.n_dialogues == 4
    assert r.ci_low <= r.diff <= r.ci_high


def test_compare_frame_and_by():
    out = compare(results(), "a", "b", ["recall@5"], n_resamples=200)
    assert list(out.columns) == ["metric", "a", "b", "n_probes", "n_dialogues", "mean_a", "mean_b", "diff", "ci_low", "ci_high",
                                 "p_value", "wins", "ties", "losses"]
    assert out.loc[0, "diff"] == 0.25
    per = compare(results(), "a", "b", "recall@5", by="category", n_resamples=200)
    assert per["category"].tolist() == ["x", "y"]
    assert per["n_probes"].tolist() == [2, 2] and per["diff"].tolist() == [1.0, -0.5]
    # x: d = (1 | ... ) -- p1 and p3 both in d1: one cluster, both sign vectors reach |mean| 1
    assert per.loc[0, "p_value"] == 1.0
    per_probe = compare(results(), "a", "b", "recall@5", by="category", n_resamples=200, cluster=None)
    assert per_probe.loc[0, "p_value"] == 2 / 4   # d = (1, 1) alone: only (+,+) and (-,-) reach 1


def test_compare_errors():
    with pytest.raises(MemlabError, match="strategy 'c' not in column 'strategy'; values: a, b"):
        compare(results(), "a", "c", "recall@5")
    with pytest.raises(MemlabError, match="no column 'ndcg@5'"):
        compare(results(), "a", "b", "ndcg@5")
    doubled = pd.concat([results(), results()])
    with pytest.raises(MemlabError, match="strategy 'a' has several rows for"):
        compare(doubled, "a", "b", "recall@5")


def test_to_markdown():
    df = pd.DataFrame({"strategy": ["bm25", "a|b"], "recall@5": [0.5, float("nan")], "n": [3, 4]})
    assert to_markdown(df) == (
        "| strategy | recall@5 | n |\n"
        "|:---|---:|---:|\n"
        "| bm25 | 0.500 | 3 |\n"
        "| a\\|b | nan | 4 |")
    assert to_markdown(df, floatfmt=".1f").splitlines()[2] == "| bm25 | 0.5 | 3 |"
    indexed = df.set_index("strategy")
    assert to_markdown(indexed, index=True).splitlines()[0] == "| strategy | recall@5 | n |"
