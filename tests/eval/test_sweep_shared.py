"""A sweep over query-time parameters observes each dialogue once per group of grid points
(``replay_variants``); its table must equal that of separate replays, value for value."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from memlab import strategies
from memlab.base import ConfigError, MemlabError
from memlab.eval import replay
import importlib

replay_module = importlib.import_module("memlab.eval.replay")
from memlab.eval import load_any
from memlab.eval.replay import replay_variants, shares_observation
from memlab.eval.sweep import _shared_groups, sweep
from memlab.eval.sweep_config import configure

ROOT = Path(__file__).resolve().parents[2]
DATASETS = [ROOT / "datasets" / n for n in ("preference_change.json", "memory_lifecycle.json",
                                            "chinese_dialogue.json")]


def separate(strategy, grid, dataset, **options):
    frames = []
    for point, name, point_label, built in configure(strategy, grid):
        frame = replay(built, dataset, label=point_label, **options)
        frame.insert(1, "base_strategy", name)
        for k, v in point.items():
            frame[k] = v
        frames.append(frame)
    return pd.concat(frames, ignore_index=True)


@pytest.mark.parametrize("path", DATASETS, ids=[p.stem for p in DATASETS])
@pytest.mark.parametrize("spec,grid", [
    ({"name": "longterm", "params": {"embedder": "hashing", "retrieve_limit": 2}},
     {"keep_rate": [0.0, 0.5, 0.9, 1.0], "token_limit": [120, 400]}),
    ({"name": "window", "params": {"window_size": 6}}, {"token_limit": [60, 2048], "keep_rate": [0.2, 1.0]}),
])
def test_grouped_sweep_equals_separate_replays(path, spec, grid, monkeypatch):
    dataset = load_any(path)
    calls = []
    real = replay_module.replay_dialogue
    monkeypatch.setattr(replay_module, "replay_dialogue",
                        lambda *a, **kw: calls.append(kw.get("variants")) or real(*a, **kw))
    got = sweep(spec, grid, dataset, ks=(1, 5), budgets=(64, 256))
    n_points = len(grid["keep_rate"]) * len(grid["token_limit"])
    # observed once per dialogue, every point asked at each probe
    assert len(calls) == len(dataset.dialogues) and all(len(v) == n_points for v in calls)
    monkeypatch.setattr(replay_module, "replay_dialogue", real)
    expected = separate(spec, grid, dataset, ks=(1, 5), budgets=(64, 256))
    assert len(got) == n_points * dataset.n_probes
    pd.testing.assert_frame_equal(got.drop(columns="latency_ms"), expected.drop(columns="latency_ms"),
                                  check_exact=True)
    # the points really differ: the parameter changes the contexts somewhere
    assert got.groupby("strategy")["context_tokens"].sum().nunique() > 1


def test_only_query_time_differences_group():
    points = configure({"name": "longterm", "params": {"embedder": "hashing"}},
                       {"retrieve_limit": [1, 3], "keep_rate": [0.1, 0.9]})
    assert _shared_groups(points) == {0: [0, 1], 1: [0, 1], 2: [2, 3], 3: [2, 3]}
    assert _shared_groups(configure({"name": "bm25"}, {"k1": [1.2, 1.5]})) == {}  # no declaration
    assert shares_observation(strategies.get("bm25")) == frozenset()
    with pytest.raises(MemlabError, match="differ only in query_time_params"):
        replay_variants([(strategies.get("window", window_size=3), None),
                         (strategies.get("window", window_size=4), None)], load_any(DATASETS[0]))


def test_set_query_params_keeps_state_and_validates():
    s = strategies.get("window", window_size=None)
    for n, record in enumerate(load_any(DATASETS[0]).dialogues[0].turns()):
        s.observe(record.to_record("d"))
    before = [h.id for h in s.retrieve("q", 50)]
    s.set_query_params(keep_rate=0.5)
    assert [h.id for h in s.retrieve("q", 50)] == before and s.retrieve("q", 2)[1].score == 0.5
    with pytest.raises(ConfigError, match="keep_rate"):
        s.set_query_params(keep_rate=1.5)
    assert s.keep_rate == 0.5 and s.retrieve("q", 2)[1].score == 0.5  # all or nothing
    with pytest.raises(ConfigError, match="not query-time"):
        s.set_query_params(window_size=2)


def test_sweep_hashes_the_dataset_once(monkeypatch):
    # the hash (canonical JSON of every dialogue) is read per point for the configuration
    # columns; a sweep computes it once, and its tables still equal separate replays'
    from memlab.eval.dataset import Dataset

    dataset = load_any(DATASETS[0])
    expected = dataset.hash
    calls = []
    real = Dataset.hash.fget
    monkeypatch.setattr(Dataset, "hash", property(lambda self: calls.append(1) or real(self)))
    got = sweep({"name": "window", "params": {"window_size": 6}}, {"token_limit": [60, 2048, 4096]}, dataset)
    assert len(calls) == 1 and set(got["dataset_hash"]) == {expected}
