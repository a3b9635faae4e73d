"""Cluster bootstrap, cluster sign-flip test and Holm's correction against hand-worked values."""

from __future__ import annotations

import math

import numpy as np
import pytest

from memlab.base import MemlabError
from memlab.eval.stats import cluster_bootstrap_ci, cluster_sums, holm, resample_weights, sign_flip_p_value

# Dialogue A has two probes scoring 1, dialogue B one probe scoring 0.
VALUES = [1.0, 0.0, 1.0]
CLUSTERS = ["A", "B", "A"]


def test_cluster_sums_sorted_by_label_and_nan_dropped():
    sums, counts, labels = cluster_sums([1.0, 0.0, 1.0, np.nan], ["A", "B", "A", "B"])
    assert labels == ["A", "B"] and sums.tolist() == [2.0, 0.0] and counts.tolist() == [2.0, 1.0]


def test_hand_worked_cluster_bootstrap():
    # Drawing 2 dialogues with replacement gives AA (mean 2/2 = 1) with prob 1/4,
    # AB or BA (mean (2 + 0) / (2 + 1) = 2/3) with prob 1/2, BB (mean 0) with prob 1/4.
    # So the 95% interval is [0, 1], and the central 40% interval (quantiles 0.3 and 0.7,
    # both inside the AB mass from 0.25 to 0.75) is the single point 2/3.
    # A probe-level bootstrap would instead draw means from {0, 1/3, 2/3, 1}.
    w = resample_weights(2, 20000, seed=0)
    sums, counts, _ = cluster_sums(VALUES, CLUSTERS)
    means = (w @ sums) / (w @ counts)
    assert set(np.round(means, 12)) == {0.0, round(2 / 3, 12), 1.0}
    assert np.mean(means == 1.0) == pytest.approx(0.25, abs=0.01)
    assert cluster_bootstrap_ci(VALUES, CLUSTERS, n_resamples=20000) == (0.0, 1.0)
    low, high = cluster_bootstrap_ci(VALUES, CLUSTERS, n_resamples=20000, confidence=0.4)
    assert low == pytest.approx(2 / 3, abs=1e-12) and high == pytest.approx(2 / 3, abs=1e-12)


def test_resampling_draws_are_the_documented_ones():
    w = resample_weights(3, 5, seed=7)
    idx = np.random.default_rng(7).integers(0, 3, size=(5, 3))
    expected = np.stack([np.bincount(row, minlength=3) for row in idx]).astype(float)
    assert (w == expected).all()


def test_bootstrap_is_seeded_and_columnwise():
    x = np.array([[1.0, 0.0], [0.5, np.nan], [0.0, 1.0], [1.0, 1.0]])
    clusters = ["d1", "d1", "d2", "d3"]
    both = cluster_bootstrap_ci(x, clusters, n_resamples=300, seed=4)
    assert both.shape == (2, 2)
    assert tuple(both[0]) == cluster_bootstrap_ci(x[:, 0], clusters, n_resamples=300, seed=4)
    assert tuple(both[1]) == cluster_bootstrap_ci(x[:, 1], clusters, n_resamples=300, seed=4)
    assert (both == cluster_bootstrap_ci(x, clusters, n_resamples=300, seed=4)).all()
    assert all(math.isnan(v) for v in cluster_bootstrap_ci([np.nan], ["a"]))
    with pytest.raises(MemlabError, match="n_resamples must be a positive int"):
        cluster_bootstrap_ci(VALUES, CLUSTERS, n_resamples=0)
    with pytest.raises(MemlabError, match="3 values but 2 cluster labels"):
        cluster_bootstrap_ci(VALUES, ["A", "B"])


def test_sign_flip_flips_whole_dialogues():
    # D = (3, 1) over n = 3 pairs: flips give |+-3 +-1| = 4, 2, 2, 4; observed 4 -> p = 2/4.
    assert sign_flip_p_value([1.0, 2.0, 1.0], ["A", "A", "B"]) == 2 / 4
    # the same differences as three independent probes: 2 of 8 sign vectors reach |sum| 4
    assert sign_flip_p_value([1.0, 2.0, 1.0], ["A", "B", "C"]) == 2 / 8
    assert math.isnan(sign_flip_p_value([], []))
    many = [1.0] * 20
    p = sign_flip_p_value(many, [str(i) for i in range(20)], exact_max_clusters=10, n_resamples=999, seed=1)
    assert p == 1 / 1000


def test_holm():
    # sorted 0.01, 0.02, 0.04 -> 3 * 0.01 = 0.03, 2 * 0.02 = 0.04, 1 * 0.04 = 0.04
    assert holm([0.04, 0.01, 0.02]) == pytest.approx([0.04, 0.03, 0.04], abs=1e-15)
    assert holm([0.5, 0.4]) == [0.8, 0.8]                   # monotone: max with the previous
    out = holm([float("nan"), 0.2])
    assert math.isnan(out[0]) and out[1] == 0.2
