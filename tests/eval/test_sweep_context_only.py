"""Points of a sweep that differ only in parameters ``build_context`` reads and ``retrieve``
does not (``context_only_params``) share one ranked list per probe: searched once, tables
equal to separate replays value for value."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from memlab.eval import load_any, replay
from memlab.eval.sweep import sweep
from memlab.eval.sweep_config import configure
from memlab.strategies.memory import LongtermStrategy

ROOT = Path(__file__).resolve().parents[2]


class Declared(LongtermStrategy):
    """longterm, declaring what its class comment says: the recall search reads neither."""

    context_only_params = frozenset({"keep_rate", "token_limit"})


class Counted(Declared):
    searches = 0

    def retrieve(self, query, k=5, *, where=None, now=None):
        type(self).searches += 1
        return super().retrieve(query, k, where=where, now=now)


def separate(strategy, grid, dataset, **options):
    frames = []
    for point, name, point_label, built in configure(strategy, grid):
        frame = replay(built, dataset, label=point_label, **options)
        frame.insert(1, "base_strategy", name)
        for k, v in point.items():
            frame[k] = v
        frames.append(frame)
    return pd.concat(frames, ignore_index=True)


@pytest.mark.parametrize("name", ["preference_change.json", "memory_lifecycle.json"])
def test_context_only_points_search_once_and_equal_separate_replays(name):
    dataset = load_any(ROOT / "datasets" / name)
    grid = {"keep_rate": [0.0, 0.5, 0.9], "token_limit": [60, 400]}
    got = sweep(Declared(token_limit=120), grid, dataset, ks=(1, 5), budgets=(64, 256))
    expected = separate(Declared(token_limit=120), grid, dataset, ks=(1, 5), budgets=(64, 256))
    pd.testing.assert_frame_equal(got.drop(columns="latency_ms"), expected.drop(columns="latency_ms"),
                                  check_exact=True)
    assert got.groupby("strategy")["context_tokens"].sum().nunique() > 1  # the points do differ
    # one point's searches, not six
    Counted.searches = 0
    sweep(Counted(token_limit=120), {"keep_rate": [0.5]}, dataset, ks=(1, 5), budgets=(64, 256))
    one = Counted.searches
    Counted.searches = 0
    sweep(Counted(token_limit=120), grid, dataset, ks=(1, 5), budgets=(64, 256))
    assert Counted.searches == one > 0


def test_the_declaration_is_limited_to_query_time_params():
    class Odd(LongtermStrategy):
        context_only_params = frozenset({"keep_rate", "retrieve_limit"})  # retrieve_limit is no query-time one

    assert Odd().capabilities().context_only_params == frozenset({"keep_rate"})
    # longterm declares both of its query-time parameters (its recall search reads neither)
    assert LongtermStrategy().capabilities().context_only_params == frozenset({"keep_rate", "token_limit"})
