"""The probe-row schema: the columns a replay writes for each probe, before the metric columns
(``memlab.eval.metrics``), the configuration columns (``param:*``) and provenance are added.

``ProbeRow`` names and documents each column in table order; ``ROW_COLUMNS`` is that order,
and ``ANSWER_COLUMNS`` (``AnswerColumns``) follow when probes are also answered
(``--answer-llm``). Replay builds its rows with these columns, and sweeps read them to tell
row columns from parameters.
"""

from __future__ import annotations

from typing import Any, TypedDict


class ProbeRow(TypedDict):
    """One probe of one dialogue, as asked of one strategy (one row of the results table)."""

    dialogue_id: str                   # the dialogue the probe belongs to
    probe_id: str                      # the probe's id within its dialogue
    category: str                      # the probe's category (dataset-defined)
    query: str                         # the question asked
    answer: Any                        # the gold answer (None when the dataset has none)
    gold: list[str]                    # the evidence turn ids
    stale_evidence: list[str]          # turns that were true once and were later replaced
    position: int                      # how many turns were observed before the probe
    probe_time: float                  # dialogue time of the probe (epoch seconds)
    retrieved_ids: list[str]           # ranked hits' record ids, best first
    retrieved_source_ids: list[list[str]]  # the turns each hit stands for
    retrieved_scores: list[float]      # the hits' scores
    retrieved_tokens: list[int]        # what each hit costs in a context (Strategy.hit_tokens)
    context_ids: list[str]             # the turns the built context stands for
    context_record_ids: list[str]      # the memory records in the built context
    context_tokens: int                # tokens of the built context
    store_size: int | None             # records the memory holds at the probe
    llm_prompt_tokens: int             # the strategy's own LLM cost since the last probe: prompt,
    llm_completion_tokens: int         # completion,
    llm_calls: int                     # calls,
    llm_cached_calls: int              # calls answered by a cache,
    llm_format_errors: int             # answers that could not be parsed
    latency_ms: float                  # wall time of retrieve + build_context
    error: str | None                  # why the probe failed (its metrics are then NaN)
    gold_sessions: list[str]           # the evidence sessions (the probe's own, else its gold turns')
    retrieved_sessions: list[list[str]]  # the sessions each ranked hit stands for, best first
    gold_turn_sessions: list[str]      # the sessions holding the gold turns, in evidence order
    retrieved_source_sessions: list[list[str | None]]  # each hit's source turns' sessions (None: no turn)


class AnswerColumns(TypedDict):
    """Added to a ``ProbeRow`` when each probe is answered from its context."""

    prediction: str | None             # the answering model's answer
    answer_f1: float                   # token F1 against the gold answer (NaN without one)
    locomo_f1: float                   # LoCoMo's official score (memlab.eval.locomo_score; NaN off LoCoMo)
    judge_correct: float               # the judge's verdict, 1.0 or 0.0 (NaN without a judge)
    judge_prompt_set: str | None       # the judge's prompt set, name@version (None without a judge)
    judge_model: str | None            # the judge's model (None without a judge)
    answer_prompt_tokens: int
    answer_completion_tokens: int
    judge_tokens: int


#: The probe-row columns, in table order.
ROW_COLUMNS: list[str] = list(ProbeRow.__annotations__)
#: The answer columns, in table order (after ``ROW_COLUMNS``).
ANSWER_COLUMNS: list[str] = list(AnswerColumns.__annotations__)
