"""The probe-row schema is what replay writes: its columns, in its order, first in the table."""

from __future__ import annotations

from pathlib import Path

from memlab import strategies
from memlab.eval.answers import Answerer
from memlab.eval import load_any, replay
from memlab.eval.rows import ANSWER_COLUMNS, ROW_COLUMNS, AnswerColumns, ProbeRow
from memlab.offline.llm import OfflineLLM

DATA = Path(__file__).resolve().parents[2] / "datasets" / "preference_change.json"


def test_replay_writes_the_schema_columns_in_order():
    table = replay(strategies.get("bm25"), load_any(DATA), ks=(1,))
    assert list(table.columns[:1 + len(ROW_COLUMNS)]) == ["strategy", *ROW_COLUMNS]
    answered = replay(strategies.get("bm25"), load_any(DATA), ks=(1,), answerer=Answerer(OfflineLLM()))
    start = 1 + len(ROW_COLUMNS)
    assert list(answered.columns[start:start + len(ANSWER_COLUMNS)]) == ANSWER_COLUMNS


def test_the_schema_is_documented_once():
    assert ROW_COLUMNS == list(ProbeRow.__annotations__) and ROW_COLUMNS[:2] == ["dialogue_id", "probe_id"]
    assert ANSWER_COLUMNS == list(AnswerColumns.__annotations__)
    assert not set(ROW_COLUMNS) & set(ANSWER_COLUMNS)
