"""LLM faults are data: through the loopback server and the real openai client.

A probe whose LLM step fails for good is a row with ``error`` and NaN metrics, counted in
``n_failed``; ``--max-failures`` stops a run failing everywhere with one line; answers
without the asked format are counted per probe (``llm_format_errors``).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from memlab.cli import main
from memlab.eval.metrics import summarize
from memlab.eval.replay import default_max_failures, replay
from memlab.eval.results import load_results
from memlab.offline.loopback import LoopbackServer, ScriptedChat
from memlab.eval.loaders import load_dataset
from memlab.strategies import get

DATA = str(Path(__file__).resolve().parents[1] / "data" / "longmemeval_mini.json")
LAYERED = ["--strategy", "layered", "--set", "llm=openai", "--set", "llm__max_retries=0"]


def down(request):
    raise RuntimeError("model server down")  # the loopback answers HTTP 500


@pytest.fixture
def env(tmp_path, monkeypatch):
    def use(server, cache="cache"):  # (a response cache would answer a later server's requests)
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("MEMLAB_LLM_MODEL", "loopback-model")
        monkeypatch.setenv("OPENAI_API_KEY", "test")
        monkeypatch.setenv("MEMLAB_CACHE_DIR", str(tmp_path / cache))
    return use


def test_failing_probes_become_rows_with_error_and_nan_metrics(tmp_path, env, capsys):
    with LoopbackServer(chat=down) as server:
        env(server)
        code = main(["eval", DATA, *LAYERED, "--json", "--output", str(tmp_path / "rows.parquet")])
    out = capsys.readouterr()
    assert code == 0, out.err
    result = json.loads(out.out)
    assert (result["n_probes"], result["n_failed"], result["n_scored"]) == (3, 3, 0)
    assert result["hit_rate@5"] is None  # NaN, not a 0.0 that reads as "never recalled"
    rows = load_results(str(tmp_path / "rows.parquet"))
    assert rows["error"].str.contains("chat completion failed after 1 attempt\\(s\\): last error status 500").all()
    first_turn = load_dataset(DATA).dialogues[0].turns()[0].id   # a neutral id (the loader hides session ids)
    assert rows["error"].iloc[0].startswith(f"reading turn '{first_turn}': ")
    assert rows[["hit_rate@5", "recall@5", "context_recall"]].isna().all().all()


def test_max_failures_stops_a_run_failing_everywhere_with_one_line(tmp_path, env, capsys):
    with LoopbackServer(chat=down) as server:
        env(server)
        code = main(["eval", DATA, *LAYERED, "--max-failures", "1", "--output", str(tmp_path / "rows.csv")])
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert len(err.splitlines()) == 1
    assert err.startswith("memlab: error: 2 probes failed, more than max_failures=1 (--max-failures); "
                          "stopped. First failure: dialogue 'q_ssu_1', probe 'q_ssu_1': ")
    assert not (tmp_path / "rows.csv").exists()


def test_answers_without_the_asked_format_are_counted_per_probe(env, capsys):
    """The loopback's echo answers are valid HTTP but never the JSON the extractor and the
    relevance filter ask for: each such answer is counted on its probe, and in the summary."""
    with LoopbackServer() as server:
        env(server)
        assert main(["eval", DATA, *LAYERED, "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["n_failed"] == 0
    assert result["llm_format_errors"] > 0


def test_well_formed_answers_count_no_format_error(env):
    dataset = load_dataset(DATA)
    with LoopbackServer(chat=ScriptedChat((), fallback=lambda r: '{"relevant": [1], "memories": []}')) as server:
        env(server)
        strategy = get("layered", llm="openai")
        rows = replay(strategy, dataset, ks=[5], k_max=5)
    assert rows["llm_format_errors"].tolist() == [0, 0, 0]  # well-formed answers: nothing counted
    assert summarize(rows)["llm_format_errors"].tolist() == [0]


def test_format_errors_per_probe_match_the_scripted_bad_answers(env):
    dataset = load_dataset(DATA).subset(dialogues=["q_ssu_1"])
    good = '{"relevant": [1, 2], "memories": []}'
    with LoopbackServer(chat=ScriptedChat((), fallback=lambda r: good)) as server:
        env(server)
        baseline = replay(get("layered", llm="openai"), dataset, ks=[5], k_max=5)
    calls = len(server.requests)
    with LoopbackServer(chat=ScriptedChat(["not json"] * 2, fallback=lambda r: good)) as server:
        env(server, cache="cache2")
        rows = replay(get("layered", llm="openai"), dataset, ks=[5], k_max=5)
    # the two bad answers were read (and retried) by the extractor: two format errors, one retry more each
    assert rows["llm_format_errors"].tolist() == [2]
    assert len(server.requests) == calls + 2
    assert rows["error"].tolist() == [None] and baseline["error"].tolist() == [None]


def test_default_max_failures_is_five_percent_at_least_three():
    assert [default_max_failures(n) for n in (1, 60, 61, 1986)] == [3, 3, 4, 100]
    assert not math.isnan(default_max_failures(0))
