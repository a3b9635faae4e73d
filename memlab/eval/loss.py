"""Where an answer-level run lost each fact: when writing, retrieving or reading.

For each answered, scored probe of a replay with an answerer (``answer_f1``, and
``judge_correct`` with a judge), ``loss_stage`` is:

- ``"correct"``: the answer scores at least ``threshold`` (``judge_correct`` when the column
  has a value, else ``answer_f1``);
- ``"read"``: wrong although every gold turn was in the context (``context_recall`` = 1):
  the model had the fact and did not use it;
- ``"retrieve"``: wrong, the context missed some gold turn, but every gold turn is among
  the strategy's ranked hits (``retrieved_source_ids``, the whole list): the memory still
  holds it and ranked it too low for the context;
- ``"unreachable"``: wrong and some gold turn is in none of the ranked hits. For a memory
  that rewrites what it stores (summaries, extracted facts) this is the **write** loss: the
  fact was dropped when storing. For a retriever over raw turns nothing is dropped: the gold
  is stored but no query match reaches it (BM25 returns only turns sharing a term), so it is
  a retrieval loss of another kind. The ranked list is as deep as the replay asked
  (``k_max``, deeper with token budgets): replay with a large budget before reading it.

Unscored probes (no gold) and unanswered rows get None. Run ``oracle`` alongside: its wrong
answers are read losses with the gold alone in front of the model, the floor of reading.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import pandas as pd

from ..base import MemlabError

STAGES = ("correct", "read", "retrieve", "unreachable")


def _score(row: Any, threshold: float) -> float | None:
    for col in ("judge_correct", "answer_f1"):
        value = row.get(col)
        if value is not None and not (isinstance(value, float) and math.isnan(value)):
            return float(value)
    return None


def loss_stage(row: Any, threshold: float = 0.5) -> str | None:
    """The stage of one row (a mapping with the replay's columns); see the module docstring."""
    gold = set(map(str, row.get("gold") or []))
    score = _score(row, threshold)
    if not gold or score is None:
        return None
    if score >= threshold:
        return "correct"
    if float(row.get("context_recall", 0.0)) >= 1.0:
        return "read"
    ranked = {str(i) for ids in (row.get("retrieved_source_ids") or []) for i in ids}
    return "retrieve" if gold <= ranked else "unreachable"


def loss_split(rows: pd.DataFrame, by: Sequence[str] | str = ("strategy",), threshold: float = 0.5) -> pd.DataFrame:
    """Share of answered, scored probes per stage (columns ``STAGES``, each in [0, 1]) and
    ``n_answered``, one row per ``by`` group."""
    by = [by] if isinstance(by, str) else list(by)
    needed = ["gold", "context_recall", "retrieved_source_ids", *by]
    missing = [c for c in needed if c not in rows.columns]
    if missing or not ({"answer_f1", "judge_correct"} & set(rows.columns)):
        raise MemlabError(f"loss_split needs replay rows with answers (replay(..., answerer=...)); "
                          f"missing: {missing or ['answer_f1']}")
    stages = [loss_stage(r, threshold) for r in rows.to_dict("records")]
    frame = rows[by].assign(loss_stage=stages).dropna(subset=["loss_stage"])
    counts = pd.crosstab([frame[c] for c in by], frame["loss_stage"]).reindex(columns=list(STAGES), fill_value=0)
    total = counts.sum(axis=1)
    out = counts.div(total, axis=0).reset_index()
    out.insert(len(by), "n_answered", total.to_numpy())
    out.columns.name = None
    return out
