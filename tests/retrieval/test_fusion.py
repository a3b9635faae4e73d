"""Fusion functions with hand-computed values, and their Component wrappers."""

import pytest

from memlab.base import ConfigError
from memlab.retrieval.fusion import (
    RRF,
    WeightedSum,
    normalize_scores,
    rrf,
    weighted_sum,
)

A = [("x", 9.0), ("y", 5.0), ("z", 1.0)]
B = [("y", 0.9), ("w", 0.8)]


def test_rrf_hand_computed():
    fused = dict(rrf([A, B], k=60))
    assert fused["x"] == pytest.approx(1 / 61, abs=1e-15)
    assert fused["y"] == pytest.approx(1 / 62 + 1 / 61, abs=1e-15)
    assert fused["z"] == pytest.approx(1 / 63, abs=1e-15)
    assert fused["w"] == pytest.approx(1 / 62, abs=1e-15)
    assert [i for i, _ in rrf([A, B])] == ["y", "x", "w", "z"]


def test_rrf_weights_and_k():
    fused = dict(rrf([A, B], weights=[0.2, 0.8], k=1))
    assert fused["y"] == pytest.approx(0.2 / 3 + 0.8 / 2, abs=1e-15)
    assert fused["x"] == pytest.approx(0.2 / 2, abs=1e-15)


def test_rrf_ties_keep_first_appearance_and_duplicates_count_once():
    assert rrf([[("a", 1), ("b", 1)], [("b", 1), ("a", 1)]]) == [
        ("a", pytest.approx(1 / 61 + 1 / 62)), ("b", pytest.approx(1 / 61 + 1 / 62))]
    assert dict(rrf([[("a", 1), ("a", 0)]]))["a"] == pytest.approx(1 / 61)


def test_minmax_normalisation_and_constant_list():
    assert normalize_scores([9, 5, 1]) == [1.0, 0.5, 0.0]
    assert normalize_scores([3, 3]) == [1.0, 1.0]
    assert normalize_scores([7]) == [1.0]
    assert normalize_scores([]) == []


def test_zscore_normalisation_and_zero_std():
    # mean 5, population std sqrt(32 / 3)
    s = (32 / 3) ** 0.5
    assert normalize_scores([9, 5, 1], "zscore") == pytest.approx([4 / s, 0.0, -4 / s])
    assert normalize_scores([2, 2, 2], "zscore") == [0.0, 0.0, 0.0]
    assert normalize_scores([2, 1], "none") == [2.0, 1.0]


def test_weighted_sum_hand_computed():
    fused = dict(weighted_sum([A, B], weights=[0.5, 2.0]))
    # A minmax: x 1, y 0.5, z 0; B minmax: y 1, w 0
    assert fused == pytest.approx({"x": 0.5, "y": 0.25 + 2.0, "z": 0.0, "w": 0.0})
    assert [i for i, _ in weighted_sum([A, B], weights=[0.5, 2.0])] == ["y", "x", "z", "w"]


def test_zscore_weighted_sum_hand_computed():
    # A: mean 5, population std sqrt(32/3): x 4/s, y 0, z -4/s; B: mean 0.85, std 0.05: y 1, w -1
    s = (32 / 3) ** 0.5
    fused = dict(weighted_sum([A, B], normalization="zscore"))
    assert fused == pytest.approx({"x": 4 / s, "y": 1.0, "z": -4 / s, "w": -1.0}, abs=1e-12)
    weighted = dict(weighted_sum([A, B], weights=[2.0, 0.5], normalization="zscore"))
    assert weighted == pytest.approx({"x": 8 / s, "y": 0.5, "z": -8 / s, "w": -0.5}, abs=1e-12)


def test_missing_min_scores_an_unseen_item_as_the_lists_last():
    s = (32 / 3) ** 0.5
    fused = weighted_sum([A, B], normalization="zscore", missing="min")
    # x misses B (adds B's min, -1); z and w each miss a list (A's min is -4/s)
    assert dict(fused) == pytest.approx({"x": 4 / s - 1, "y": 1.0, "z": -4 / s - 1, "w": -1 - 4 / s}, abs=1e-12)
    assert [i for i, _ in fused] == ["y", "x", "z", "w"]  # z, w tie: z appeared first
    # with min-max the lowest normalised score is 0: "min" and "zero" agree
    assert weighted_sum([A, B], missing="min") == weighted_sum([A, B])


def test_weighted_sum_none_normalization_uses_raw_scores():
    fused = dict(weighted_sum([A, B], normalization="none"))
    assert fused["y"] == pytest.approx(5.9)


def test_weights_validated_against_number_of_lists():
    with pytest.raises(ConfigError, match="weights has 3 entries but there are 2 lists"):
        rrf([A, B], weights=[1, 1, 1])
    with pytest.raises(ConfigError, match="weights has 1 entries but there are 2 lists"):
        weighted_sum([A, B], weights=[1])
    with pytest.raises(ConfigError, match="normalization must be one of minmax, zscore, none, got 'l2'"):
        weighted_sum([A], normalization="l2")


def test_component_wrappers():
    assert RRF().fuse([A, B]) == rrf([A, B])
    assert RRF(k=1, weights=[0.2, 0.8]).fuse([A, B]) == rrf([A, B], [0.2, 0.8], 1)
    assert RRF(weights=[0.2, 0.8]).fuse([A, B], weights=[1, 1]) == rrf([A, B])
    assert WeightedSum(normalization="zscore").fuse([A, B]) == weighted_sum([A, B], None, "zscore")
    assert WeightedSum().get_params() == {"weights": None, "normalization": "minmax", "missing": "zero"}
    assert WeightedSum(normalization="zscore", missing="min").fuse([A, B]) == weighted_sum(
        [A, B], None, "zscore", "min")
    with pytest.raises(ConfigError, match="WeightedSum parameter 'missing': expected one of 'zero', 'min', got 'max'"):
        WeightedSum(missing="max")
    with pytest.raises(ConfigError, match="RRF parameter 'k': expected a number >= 0, got -1"):
        RRF(k=-1)
    with pytest.raises(ConfigError, match=r"RRF parameter 'weights': expected a list of items each a finite "
                                          r"number or None, got \[1, nan\]"):
        RRF(weights=[1, float("nan")])
    assert rrf([]) == [] and rrf([[], []]) == []
