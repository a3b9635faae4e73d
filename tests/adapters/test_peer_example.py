"""experiments/peer_rank_bm25.py: the README's "Evaluating another system" example, run for real."""

from __future__ import annotations

import json
import pickle
from pathlib import Path
from types import ModuleType

import pytest
from rank_bm25 import BM25Okapi

from memlab import ConfigError, strategies
from memlab.cli import main
from memlab.eval import load_any
from memlab.eval.user_modules import import_user_module
from memlab.testing import check_records, check_retriever, check_strategy

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def example() -> ModuleType:
    return import_user_module(ROOT / "experiments" / "peer_rank_bm25.py")


def test_passes_the_check_suite(example: ModuleType) -> None:
    assert check_strategy(strategies.get("rank_bm25"))[9:] == [
        "context", "asking_changes_nothing"]  # the generic checks, then one chosen by capabilities
    assert check_retriever(example.RankBM25Retriever())[-1] == "search_depth_serves_its_prefix"


def test_scores_are_bm25okapis(example: ModuleType) -> None:
    s = strategies.get("rank_bm25", k1=1.2, b=0.5)
    records = check_records()
    for r in records:
        s.observe(r)
    query = "Where does the sister live in Osaka?"
    expected = BM25Okapi([example.lower_words(r.content) for r in records], k1=1.2, b=0.5) \
        .get_scores(example.lower_words(query))
    order = sorted(range(len(records)), key=lambda i: -expected[i])[:4]
    hits = s.retrieve(query, 4)
    assert [(h.id, h.score) for h in hits] == [(records[i].id, float(expected[i])) for i in order]
    assert [(h.id, h.score) for h in pickle.loads(pickle.dumps(s)).retrieve(query, 4)] == \
        [(h.id, h.score) for h in hits]
    with pytest.raises(ConfigError, match=r"b must be in \[0, 1\], got 2"):
        s.set_params(retriever__b=2)


def test_runs_from_the_command_line(example: ModuleType, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["eval", str(ROOT / "datasets"), "--import", str(ROOT / "experiments" / "peer_rank_bm25.py"),
                 "--strategy", "rank_bm25", "--set", "retriever__k1=1.2", "--json"])
    assert code == 0
    out = json.loads(capsys.readouterr().out)
    assert out["strategy"] == "rank_bm25" and out["n_probes"] == load_any(ROOT / "datasets").n_probes
    assert 0.0 < out["recall@5"] <= 1.0 and out["params"]["retriever__k1"] == 1.2
