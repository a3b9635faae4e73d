import math

import joblib
import pandas as pd
import pytest

from memlab import MemlabError, strategies
from memlab.eval.configuration import PARAM_PREFIX
from memlab.eval.replay import replay
from memlab.eval.results import load_results, save_results

VOLATILE = ["latency_ms"]


def _stable(df):
    return df.drop(columns=VOLATILE)


def test_one_row_per_probe_with_configuration_and_provenance(tiny):
    df = replay(strategies.get("bm25"), tiny, ks=(1, 5), label="bm25")
    assert list(df["probe_id"]) == ["p_mid", "p_end", "p_none", "p1"]
    assert list(df["dialogue_id"]) == ["coffee", "coffee", "coffee", "trip"]
    assert set(df["strategy"]) == {"bm25"}
    assert df[PARAM_PREFIX + "retriever__k1"].tolist() == [1.5] * 4
    assert (df["dataset"] == "tiny").all() and (df["dataset_hash"] == tiny.hash).all()
    assert {"memlab_version", "git_commit", "strategy_class"} <= set(df.columns)
    for col in ("hit_rate@1", "recall@5", "relevance_ratio@5", "mrr@5", "context_recall", "context_tokens",
                "retrieved_tokens"):
        assert col in df.columns


def test_a_probe_sees_only_the_turns_before_it(tiny):
    df = replay(strategies.get("bm25"), tiny, ks=(1, 5))
    mid = df.set_index("probe_id").loc["p_mid"]
    assert mid["position"] == 1
    assert mid["retrieved_ids"] == ["t1"]
    assert mid["probe_time"] == pd.Timestamp("2024-01-01T08:00:00Z").timestamp()


def test_exact_metrics_on_the_tiny_dataset(tiny):
    df = replay(strategies.get("bm25"), tiny, ks=(1, 5)).set_index("probe_id")
    # p_mid: only t1 observed and it matches -> perfect
    assert df.loc["p_mid", "hit_rate@1"] == 1.0 and df.loc["p_mid", "relevance_ratio@1"] == 1.0
    # p_end: "cat called" only in t5
    assert df.loc["p_end", "retrieved_ids"][0] == "t5"
    assert df.loc["p_end", "recall@1"] == 1.0 and df.loc["p_end", "mrr@1"] == 1.0
    # p1: "budget" and "euros" only in t3; "is" and "the" appear nowhere else... t3 is first
    assert df.loc["p1", "retrieved_ids"][0] == "t3"
    n = len(df.loc["p1", "retrieved_ids"])
    assert df.loc["p1", "relevance_ratio@5"] == pytest.approx(1.0 / n)
    # the unscored probe is NaN everywhere and excluded from means
    assert math.isnan(df.loc["p_none", "hit_rate@5"]) and math.isnan(df.loc["p_none", "context_recall"])


def test_context_view_counts_what_the_budgeted_context_holds(tiny):
    s = strategies.get("bm25", history_window=0, context_k=1)
    df = replay(s, tiny, ks=(1,)).set_index("probe_id")
    assert df.loc["p_end", "context_ids"] == ["t5"]
    assert df.loc["p_end", "context_recall"] == 1.0 and df.loc["p_end", "context_relevance_ratio"] == 1.0
    assert df.loc["p_end", "context_tokens"] > 0


def test_replay_is_reproducible_bit_for_bit(tiny):
    a = replay(strategies.get("hybrid_decay"), tiny)
    b = replay(strategies.get("hybrid_decay"), tiny)
    pd.testing.assert_frame_equal(_stable(a), _stable(b))


def test_parallel_replay_gives_the_same_rows(tiny):
    serial = replay(strategies.get("hybrid"), tiny, n_jobs=1)
    parallel = replay(strategies.get("hybrid"), tiny, n_jobs=2)
    pd.testing.assert_frame_equal(_stable(serial), _stable(parallel))


def test_dask_backend_on_a_local_cluster(tiny):
    distributed = pytest.importorskip("distributed")
    serial = replay(strategies.get("bm25"), tiny)
    with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False,
                                  dashboard_address=None) as cluster, distributed.Client(cluster):
        with joblib.parallel_config(backend="dask"):
            on_dask = replay(strategies.get("bm25"), tiny, n_jobs=2)
    pd.testing.assert_frame_equal(_stable(serial), _stable(on_dask))


@pytest.mark.parametrize("suffix", [".parquet", ".csv"])
def test_replay_results_save_and_load_without_loss(tiny, tmp_path, suffix):
    df = replay(strategies.get("window"), tiny)
    path = tmp_path / f"rows{suffix}"
    save_results(df, str(path))
    pd.testing.assert_frame_equal(load_results(str(path)), df)


def test_replay_rejects_non_strategies(tiny):
    with pytest.raises(MemlabError, match="needs a memlab Strategy, got str"):
        replay("bm25", tiny)
