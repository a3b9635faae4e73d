"""Evidence overlap: how many of a question's words its evidence turns hold, and how many
other turns hold as many.

A lexical retriever ranks a turn by the words it shares with the question (its own, or, with
contextual keys, its neighbours' too). Where an evidence turn shares few of the question's
words, or many other turns share as many, lexical keys rank it low whatever their
parameters. Both are properties of the data, measured here without any retriever.

For a scored probe (evidence given), with Q the distinct tokens of the question and T_t the
distinct tokens of turn t's own ``text`` (both after ``tokenizer``), a turn's share is

    share(t) = |Q & T_t| / |Q|

and the probe's figures are, over its evidence turns G (those the dialogue holds) and the
turns observed when it is asked (``Dialogue.probe_position``):

    overlap = mean over g in G of share(g)                       (NaN when Q is empty)
    low     = overlap < LOW                                       (most question words absent)
    rivals  = #{observed turns t not in G : |Q & T_t| >= max over g in G of |Q & T_g|}

``rivals`` counts the other turns that share at least as many question words as the best
evidence turn: with 5 or more, a ranking by shared words alone cannot put that evidence in
the first five. ``evidence_words`` is the mean whitespace word count of the evidence turns.
The default tokenizer is the strong built-ins' (English stop words out, Porter stemming), so
"moved" meets "moving" and "the" counts for nothing.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import pandas as pd

from .dataset import Dataset

#: An overlap below this marks a probe as ``low`` (most question terms absent from its evidence).
LOW = 0.5
#: The columns of ``evidence_overlap``'s rows.
COLUMNS = ["dialogue_id", "probe_id", "category", "question_terms", "overlap", "low", "rivals", "evidence_words"]


def _default_tokenizer() -> Callable[[str], list[str]]:
    from ..strategies.parts import strong_tokenizer

    return strong_tokenizer()


def evidence_overlap(dataset: Dataset, tokenizer: Callable[[str], list[str]] | None = None) -> pd.DataFrame:
    """One row per scored probe with ``COLUMNS`` (see the module docstring). Evidence ids that
    name no turn of the dialogue are skipped (a loader reports them); a probe none of whose
    evidence is found is left out."""
    tokenize = tokenizer or _default_tokenizer()
    rows: list[dict[str, Any]] = []
    for dialogue in dataset:
        turns = dialogue.turns()
        terms = [set(tokenize(t.text)) for t in turns]
        positions = dialogue.turn_positions()
        for probe in dialogue.probes:
            gold = sorted({positions[t] for t in probe.evidence if t in positions})
            if not gold:
                continue
            q = set(tokenize(probe.query))
            shared = {i: len(q & terms[i]) for i in range(dialogue.probe_position(probe))}
            for i in gold:  # evidence said after the question is asked still counts as evidence
                shared.setdefault(i, len(q & terms[i]))
            best = max(shared[i] for i in gold)
            overlap = sum(shared[i] for i in gold) / (len(gold) * len(q)) if q else math.nan
            rows.append({"dialogue_id": dialogue.id, "probe_id": probe.id, "category": probe.category,
                         "question_terms": len(q), "overlap": overlap, "low": bool(q) and overlap < LOW,
                         "rivals": sum(1 for i, s in shared.items() if s >= best and i not in gold),
                         "evidence_words": sum(len(turns[i].text.split()) for i in gold) / len(gold)})
    return pd.DataFrame(rows, columns=COLUMNS)


def overlap_summary(rows: pd.DataFrame, by: str | None = "category") -> pd.DataFrame:
    """Per group of ``by`` (one group, "all", when None): ``n`` probes, mean ``overlap`` (NaN
    rows left out), share ``low``, share with 5 or more rivals (``rivals_5``), median
    ``rivals`` and mean ``evidence_words``."""
    frame = rows.assign(group="all", rivals_5=rows["rivals"] >= 5)
    key = "group" if by is None else by
    return frame.groupby(key, sort=True, dropna=False).agg(
        n=("probe_id", "size"), overlap=("overlap", "mean"), low=("low", "mean"), rivals_5=("rivals_5", "mean"),
        rivals=("rivals", "median"), evidence_words=("evidence_words", "mean")).reset_index()
