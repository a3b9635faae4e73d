"""A sweep on a real Dask LocalCluster (2 worker processes) embeds each distinct text of the
dataset once, in the pre-pass, and its table equals a single-process sweep's bit for bit.

The model calls are counted by ``CountingEmbedder``: every process that embeds appends one
line per text to one log file, so the count covers the client and both workers."""

from __future__ import annotations

import os
import threading

import pandas as pd
import pytest

from memlab import strategies
from memlab.base import ConfigError
from memlab.embeddings.cache import CachedEmbedder
from memlab.embeddings.counting import CountingEmbedder, read_log
from memlab.embeddings.hashing import HashingEmbedder
from memlab.embeddings.store import EmbeddingStore, model_digest
from memlab.eval.distributed import connect, scheduler_address
from memlab.eval.sweep import sweep

distributed = pytest.importorskip("distributed")


def _spec(log):
    # a dense strategy whose embedder sits in a CachedEmbedder (as named semantic models do);
    # in memory, so a process that lacks a vector would have to call the model again
    embedder = CachedEmbedder(CountingEmbedder(HashingEmbedder(), path=str(log)), path=None)
    return strategies.get("longterm", embedder=embedder, token_limit=60)


def test_a_cluster_sweep_embeds_each_text_once_and_equals_one_process(tiny, tmp_path, monkeypatch):
    log = tmp_path / "calls.log"
    grid = {"keep_rate": [0.0, 0.5, 1.0], "retrieve_limit": [1, 3]}  # two groups of three query-time points
    local = sweep(_spec(log), grid, tiny, ks=(1, 3), budgets=(32,), label="lt")
    os.unlink(log)

    store = tmp_path / "store"
    with distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1, dashboard_address=None,
                                  worker_dashboard_address=None) as cluster, distributed.Client(cluster) as client:
        worker_pids = set(client.run(os.getpid).values())
        on_cluster = sweep(_spec(log), grid, tiny, ks=(1, 3), budgets=(32,), label="lt", client=client,
                           store=str(store))
        counts, pids = read_log(str(log))
        # (a) one model call per distinct text (turns and questions; the model is symmetric, so a
        # question equal to a turn would be one vector), and only in the workers
        distinct = {t.retrieval_text for d in tiny.dialogues for t in d.turns()} | \
                   {p.query for d in tiny.dialogues for p in d.probes}
        assert len(counts) == len(distinct) and set(counts.values()) == {1}
        assert pids and pids <= worker_pids and os.getpid() not in pids
        # a second sweep finds every text in the store: no call at all
        again = sweep(_spec(log), {"keep_rate": [0.25]}, tiny, ks=(1, 3), client=client, store=str(store))
        assert sum(read_log(str(log))[0].values()) == len(distinct) and len(again) == tiny.n_probes
    stored = EmbeddingStore(store).keys(HashingEmbedder())
    assert len(stored) == len(distinct)
    assert (store / model_digest(HashingEmbedder()) / "model.json").is_file()
    # (b) the same table, value for value (wall-time latency aside)
    assert len(on_cluster) == 6 * tiny.n_probes
    pd.testing.assert_frame_equal(on_cluster.drop(columns="latency_ms"), local.drop(columns="latency_ms"),
                                  check_exact=True)


def test_scheduler_address_comes_from_the_option_or_the_environment(monkeypatch):
    monkeypatch.delenv("MEMLAB_DASK_SCHEDULER", raising=False)
    assert scheduler_address(None) is None
    monkeypatch.setenv("MEMLAB_DASK_SCHEDULER", "tcp://10.0.0.5:8786")
    assert scheduler_address(None) == "tcp://10.0.0.5:8786"
    assert scheduler_address("tcp://other:8786") == "tcp://other:8786"
    with pytest.raises(ConfigError, match="scheduler must be a Dask scheduler address"):
        scheduler_address("  ")


def test_an_unreachable_scheduler_is_one_clear_error_and_leaves_no_thread():
    # a Client that fails to connect keeps its event-loop thread running: connect() probes first
    before = set(threading.enumerate())
    for address in ("tcp://127.0.0.1:9", "127.0.0.1:9"):
        with pytest.raises(ConfigError, match=rf"scheduler '{address}' .*: expected a reachable Dask scheduler, "
                                              r"got ConnectionRefusedError"):
            connect(address, timeout=1)
    assert set(threading.enumerate()) <= before


def test_a_sweep_file_names_its_scheduler_and_store(tiny_file, tmp_path, monkeypatch):
    from memlab.eval.sweep import run_config

    monkeypatch.delenv("MEMLAB_DASK_SCHEDULER", raising=False)
    config = {"dataset": {"path": str(tiny_file)},
              "strategies": [{"label": "lt", "name": "longterm", "params": {"token_limit": 60}}],
              "grid": {"keep_rate": [0.5, 1.0]}, "run": {"ks": [1, 3]}}
    local = run_config(config, tmp_path).results
    with distributed.LocalCluster(n_workers=1, processes=False, threads_per_worker=1,
                                  dashboard_address=None) as cluster:
        config["run"].update(scheduler=cluster.scheduler_address, embedding_store="store")
        remote = run_config(config, tmp_path).results
    pd.testing.assert_frame_equal(remote.drop(columns="latency_ms"), local.drop(columns="latency_ms"),
                                  check_exact=True)
    config["run"]["scheduler"] = ""
    with pytest.raises(ConfigError, match=r"\[run\] scheduler must be a non-empty string such as 'tcp://host:8786'"):
        run_config(config, tmp_path)
