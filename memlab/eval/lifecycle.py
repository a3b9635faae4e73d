"""Lifecycle metrics: does an outdated fact reach the model, and what does memory cost over time?

Stale facts
-----------
A probe may name ``stale_evidence`` S: turns whose statement on the probe's subject was later
superseded (the old preference, the previous address). With G the probe's gold (current)
evidence and C the distinct source turn ids of the built context:

- ``stale_in_context`` = 1 if S ∩ C ≠ ∅, else 0          (a stale turn reaches the model)
- ``stale_only``       = 1 if S ∩ C ≠ ∅ and G ∩ C = ∅, else 0
  (the model sees the old fact and nothing current to overrule it)

Both are NaN when S is empty (the probe is not about a changed fact), so means skip such
probes; ``stale_rate`` = mean ``stale_only`` over the probes that name stale evidence
(NaN when none does). A memory that keeps the old turn *and* the new one is not counted in
``stale_only``: the newer statement is there, and the final prompt can tell the model to
prefer it.

Store size and cost over time
-----------------------------
``trace_dialogue`` replays one dialogue and records, after each observed turn, how many
records the strategy holds (``Strategy.store_size``) and what its own LLM calls cost while
observing that turn; ``lifecycle_summary`` condenses a trace per dialogue.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

import pandas as pd

from ..base import MemlabError
from ..strategy import Strategy
from .dataset import Dataset, Dialogue

NAN = float("nan")

#: Per-turn columns of a trace, after ``strategy`` (added by ``lifecycle_trace``).
TRACE_COLUMNS = ["dialogue_id", "turn_index", "turn_id", "timestamp", "store_size", "llm_calls",
                 "llm_prompt_tokens", "llm_completion_tokens"]


def stale_metrics(context_ids: Iterable[str], gold: Iterable[str], stale: Iterable[str]) -> dict[str, float]:
    """``stale_in_context`` and ``stale_only`` for one probe (module docstring); NaN if no stale id."""
    s = {str(i) for i in stale}
    if not s:
        return {"stale_in_context": NAN, "stale_only": NAN}
    c = {str(i) for i in context_ids}
    seen = bool(s & c)
    current = bool({str(g) for g in gold} & c)
    return {"stale_in_context": float(seen), "stale_only": float(seen and not current)}


def _ids(value: Any) -> list[str]:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return []
    if isinstance(value, str):
        raise MemlabError(f"expected a list of turn ids, got the string {value!r}")
    return [str(v) for v in value]


def add_stale_metrics(rows: pd.DataFrame) -> pd.DataFrame:
    """A copy of ``rows`` with ``stale_in_context`` and ``stale_only`` columns (float).

    Reads ``stale_evidence``, ``gold`` and ``context_ids``; without a ``stale_evidence``
    column every value is NaN.
    """
    for col in ("gold", "context_ids"):
        if col not in rows.columns:
            raise MemlabError(f"add_stale_metrics needs column {col!r}; columns: {', '.join(map(str, rows.columns))}")
    has_stale = "stale_evidence" in rows.columns
    stale = rows["stale_evidence"].tolist() if has_stale else [None] * len(rows)
    values = [stale_metrics(_ids(c), _ids(g), _ids(s))
              for c, g, s in zip(rows["context_ids"].tolist(), rows["gold"].tolist(), stale)]
    out = rows.copy()
    for name in ("stale_in_context", "stale_only"):
        out[name] = pd.Series([v[name] for v in values], index=rows.index, dtype=float)
    return out


def stale_rate(rows: pd.DataFrame) -> float:
    """Mean ``stale_only`` over the probes that name stale evidence; NaN when none does."""
    if "stale_only" not in rows.columns:
        rows = add_stale_metrics(rows)
    named = rows["stale_only"].dropna()
    return float(named.mean()) if len(named) else NAN


def trace_dialogue(strategy: Strategy, dialogue: Dialogue, ask_probes: bool = True) -> list[dict[str, Any]]:
    """One row per observed turn (``TRACE_COLUMNS``): store size after it, and LLM cost of observing it.

    ``strategy`` is reset first and used in place. With ``ask_probes`` each probe is asked
    (retrieve + build_context at its time) as in ``replay``, so memories that change on
    recall (reinforcement, flushed extraction) evolve the same way; the cost of answering
    a probe is not charged to any turn (it is in the replay rows). ``store_size`` is None
    for a strategy that does not report one.
    """
    strategy.reset()
    rows: list[dict[str, Any]] = []
    usage = strategy.llm_usage()
    index = 0
    for kind, item in dialogue.timeline():
        if kind == "probe":
            if ask_probes:
                now = dialogue.probe_time(item)  # type: ignore[arg-type]
                strategy.retrieve(item.query, 5, now=now)  # type: ignore[union-attr]
                strategy.build_context(item.query, now=now)  # type: ignore[union-attr]
                usage = strategy.llm_usage()
            continue
        strategy.observe(item.to_record(dialogue.id))  # type: ignore[union-attr]
        index += 1
        after = strategy.llm_usage()
        rows.append({"dialogue_id": dialogue.id, "turn_index": index, "turn_id": item.id,  # type: ignore[union-attr]
                     "timestamp": float(item.timestamp),  # type: ignore[union-attr]
                     "store_size": strategy.store_size(),
                     "llm_calls": after.get("calls", 0) - usage.get("calls", 0),
                     "llm_prompt_tokens": after["prompt_tokens"] - usage["prompt_tokens"],
                     "llm_completion_tokens": after["completion_tokens"] - usage["completion_tokens"]})
        usage = after
    return rows


def lifecycle_trace(strategy: Strategy, dataset: Dataset | Sequence[Dialogue], label: str | None = None,
                    ask_probes: bool = True) -> pd.DataFrame:
    """``trace_dialogue`` for every dialogue (each on a fresh clone), as one tidy DataFrame.

    Columns: ``strategy`` (``label``, default the strategy's repr), then ``TRACE_COLUMNS``.
    """
    if not isinstance(strategy, Strategy):
        raise MemlabError(f"lifecycle_trace needs a memlab Strategy, got {type(strategy).__name__}")
    dialogues = dataset.dialogues if isinstance(dataset, Dataset) else list(dataset)
    rows = [row for d in dialogues for row in trace_dialogue(strategy.clone(scope=d.id), d, ask_probes)]
    frame = pd.DataFrame(rows, columns=TRACE_COLUMNS)
    frame.insert(0, "strategy", label if label is not None else repr(strategy))
    return frame


def lifecycle_summary(trace: pd.DataFrame) -> pd.DataFrame:
    """One row per (strategy, dialogue) of a trace.

    ``n_turns``; ``final_store_size`` and ``max_store_size``; ``llm_calls_per_turn`` =
    sum(llm_calls) / n_turns; ``llm_tokens_per_turn`` = sum(prompt + completion tokens) / n_turns.
    """
    missing = [c for c in ["strategy"] + TRACE_COLUMNS if c not in trace.columns]
    if missing:
        raise MemlabError(f"lifecycle_summary: no column(s) {missing}; pass a lifecycle_trace frame")
    out = []
    for (strategy, dialogue), part in trace.groupby(["strategy", "dialogue_id"], sort=False):
        part = part.sort_values("turn_index")
        n = len(part)
        sizes = pd.to_numeric(part["store_size"], errors="coerce")
        tokens = part["llm_prompt_tokens"].sum() + part["llm_completion_tokens"].sum()
        out.append({"strategy": strategy, "dialogue_id": dialogue, "n_turns": n,
                    "final_store_size": float(sizes.iloc[-1]), "max_store_size": float(sizes.max()),
                    "llm_calls_per_turn": float(part["llm_calls"].sum()) / n,
                    "llm_tokens_per_turn": float(tokens) / n})
    return pd.DataFrame(out, columns=["strategy", "dialogue_id", "n_turns", "final_store_size",
                                      "max_store_size", "llm_calls_per_turn", "llm_tokens_per_turn"])
