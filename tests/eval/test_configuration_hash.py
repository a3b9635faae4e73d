"""configuration_hash: one string for a recorded figure's whole configuration."""

from __future__ import annotations

import pandas as pd

from memlab import strategies
from memlab.eval.configuration import PARAM_PREFIX, configuration_hash, strategy_configuration

PROTOCOL = {"ks": [5, 10], "k_max": 10, "budgets": [512]}


def test_a_changed_parameter_dataset_or_protocol_changes_the_hash():
    base = configuration_hash(strategies.get("bm25"), ["a" * 64], PROTOCOL)
    assert base == configuration_hash(strategies.get("bm25"), ["a" * 64], dict(PROTOCOL))
    assert base != configuration_hash(strategies.get("bm25", k1=1.2), ["a" * 64], PROTOCOL)
    assert base != configuration_hash(strategies.get("bm25"), ["b" * 64], PROTOCOL)
    assert base != configuration_hash(strategies.get("bm25"), ["a" * 64], {**PROTOCOL, "ks": [5]})
    assert base != configuration_hash(strategies.get("bm25_plus"), ["a" * 64], PROTOCOL)
    # the order the data files are listed in does not matter
    assert configuration_hash(strategies.get("bm25"), ["a", "b"], PROTOCOL) == \
        configuration_hash(strategies.get("bm25"), ["b", "a"], PROTOCOL)


def test_the_hash_read_back_from_a_results_table_equals_the_strategys():
    # a results table holds the parameters as param:* columns; concatenated with another
    # strategy's rows, an int column with gaps turns float and a missing one NaN
    a, b = strategies.get("bm25"), strategies.get("hybrid_plus", embedders=["hashing"])
    frames = [pd.DataFrame([{"strategy": label, **{("strategy_class" if k == "strategy_class" else PARAM_PREFIX + k): v
                                                  for k, v in strategy_configuration(s).items()}}])
              for label, s in (("a", a), ("b", b))]
    table = pd.concat(frames, ignore_index=True)
    for label, s in (("a", a), ("b", b)):
        row = table[table["strategy"] == label].iloc[0]
        flat = {("strategy_class" if c == "strategy_class" else c[len(PARAM_PREFIX):]): row[c]
                for c in table.columns if c != "strategy"}
        assert configuration_hash(flat, ["x"], PROTOCOL) == configuration_hash(s, ["x"], PROTOCOL)


def test_where_an_embedding_cache_is_kept_is_not_configuration(tmp_path):
    from memlab.embeddings import CachedEmbedder, HashingEmbedder

    one = strategies.get("vector", embedder=CachedEmbedder(HashingEmbedder(), path=tmp_path / "a.sqlite3"))
    two = strategies.get("vector", embedder=CachedEmbedder(HashingEmbedder(), path=tmp_path / "b.sqlite3"))
    assert configuration_hash(one, ["x"], PROTOCOL) == configuration_hash(two, ["x"], PROTOCOL)
    assert configuration_hash(one, ["x"], PROTOCOL) != configuration_hash(strategies.get("vector"), ["x"], PROTOCOL)
