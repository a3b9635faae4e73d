"""Loss split of answer-level runs: correct / read / retrieve / unreachable, on hand-made rows and a replay."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from memlab import strategies
from memlab.base import MemlabError
from memlab.eval.answers import Answerer
from memlab.eval.loss import loss_split, loss_stage
from memlab.eval.replay import replay
from memlab.offline.llm import OfflineLLM


def rows():
    return pd.DataFrame({
        "strategy": ["s"] * 5,
        "gold": [["t1"], ["t1"], ["t1", "t2"], ["t1"], []],
        "context_recall": [1.0, 1.0, 0.5, 0.0, math.nan],
        "retrieved_source_ids": [[["t1"]], [["t1"]], [["t2"], ["x"], ["t1"]], [["x", "y"]], []],
        "answer_f1": [0.9, 0.1, 0.0, 0.2, 0.0],
        "judge_correct": [math.nan] * 5,
    })


def test_each_stage_by_hand():
    r = rows().to_dict("records")
    assert [loss_stage(x) for x in r] == ["correct", "read", "retrieve", "unreachable", None]
    assert loss_stage({**r[1], "judge_correct": 1.0}) == "correct"    # the judge's verdict wins over F1
    table = loss_split(rows())
    assert table.to_dict("records") == [{"strategy": "s", "n_answered": 4, "correct": 0.25, "read": 0.25,
                                         "retrieve": 0.25, "unreachable": 0.25}]
    with pytest.raises(MemlabError, match="needs replay rows with answers"):
        loss_split(rows().drop(columns=["answer_f1", "judge_correct"]))


def test_oracle_loses_nothing_before_reading(tiny):
    answered = pd.concat([replay(strategies.get(name), tiny, ks=(1,), label=name, answerer=Answerer(OfflineLLM()))
                          for name in ("oracle", "window")], ignore_index=True)
    table = loss_split(answered).set_index("strategy")
    assert table.loc["oracle", ["retrieve", "unreachable"]].tolist() == [0.0, 0.0]   # the gold is always in context
    assert table.loc["oracle", "n_answered"] == 2     # p_end and p1: the scored probes with a gold answer
    assert abs(table.loc["window"][["correct", "read", "retrieve", "unreachable"]].sum() - 1.0) < 1e-12
