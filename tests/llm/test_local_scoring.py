"""Answer scoring beside token F1: containment, Cohen's kappa, judge prompts and their agreement
(memlab.eval.answers), and judge_rows with the real local model on two answers."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from memlab.base import MemlabError
from memlab.eval.answers import (
    JUDGE_PROMPT,
    add_answer_scores,
    cohen_kappa,
    containment,
    judge_agreement,
    judge_rows,
    token_f1,
)
from memlab.llm.local import LocalLLM
from memlab.llm.prompts import (
    JUDGE_PROMPTS,
    LENIENT_JUDGE_PROMPT,
    LENIENT_JUDGE_PROMPT_WORD,
    STRICT_JUDGE_PROMPT,
    STRICT_JUDGE_PROMPT_WORD,
)

ECHO = "User said: I graduated with a degree in Business Administration, which helped"


def test_containment_is_the_share_of_gold_tokens_in_the_answer():
    assert containment(ECHO, "Business Administration") == 1.0
    assert token_f1(ECHO, "Business Administration") == pytest.approx(2 * (2 / 11) / (2 / 11 + 1))  # 11 tokens: "a" is dropped
    assert containment("a degree in business", "Business Administration") == 0.5
    assert containment("the cat the cat", "the cat sat on a mat") == 0.25  # gold: cat sat on mat; cat once
    assert containment("anything", "the") == 1.0                            # no gold tokens left
    assert containment("", "Paris") == 0.0


def test_cohen_kappa_exact_values():
    # p_o = 3/4; p_e = .5 * .25 + .5 * .75 = .5; kappa = (.75 - .5) / .5
    assert cohen_kappa([1, 1, 0, 0], [1, 0, 0, 0]) == 0.5
    assert cohen_kappa([1, 0, 1, 0], [0, 1, 0, 1]) == -1.0
    assert cohen_kappa([1, 0, 1], [1, 0, 1]) == 1.0
    assert math.isnan(cohen_kappa([1, 1], [1, 1]))                   # p_e = 1: undefined
    assert cohen_kappa([1, float("nan"), 0, 0, 1], [1, 1, 0, 0, 0]) == 0.5   # the NaN pair dropped
    assert math.isnan(cohen_kappa([float("nan")], [1.0]))


def test_judge_prompts():
    assert JUDGE_PROMPT == LENIENT_JUDGE_PROMPT_WORD == JUDGE_PROMPTS["lenient"]   # lenient@v2
    assert JUDGE_PROMPTS["strict"] == STRICT_JUDGE_PROMPT_WORD
    for prompt in JUDGE_PROMPTS.values():
        text = prompt.format(question="Q?", gold="G", prediction="P")
        assert "Question: Q?\nGold answer: G\nGenerated answer: P" in text
        assert text.endswith("Reply with one word: CORRECT or WRONG.")
    for prompt in (LENIENT_JUDGE_PROMPT, STRICT_JUDGE_PROMPT):   # v1 asked for JSON
        assert '{"label": "CORRECT"}' in prompt.format(question="Q?", gold="G", prediction="P")


def _rows() -> pd.DataFrame:
    return pd.DataFrame({
        "query": ["q1", "q2", "q3", "q4", "q5"],
        "answer": ["a", "b", "c", "d", None],
        "prediction": ["a", "x", "c", None, "e"],
        "answer_f1": [1.0, 0.0, 0.4, float("nan"), float("nan")],
        "judge:lenient": [1.0, 1.0, 1.0, float("nan"), float("nan")],
        "judge:strict": [1.0, 0.0, float("nan"), float("nan"), 1.0],
    })


def test_judge_agreement_tables():
    accuracy, pairs = judge_agreement(_rows())
    assert accuracy.to_dict("records") == [
        # rows that do not name their prompt sets and judge model (judge_rows adds them) leave None
        {"judge": "lenient", "accuracy": 1.0, "n_labelled": 3, "unreadable": 0, "prompt_set": None, "judge_model": None},
        {"judge": "strict", "accuracy": 0.5, "n_labelled": 2, "unreadable": 1, "prompt_set": None, "judge_model": None},
        {"judge": "token_f1>=0.5", "accuracy": 1 / 3, "n_labelled": 3, "unreadable": 0, "prompt_set": None,
         "judge_model": None}]
    named = _rows().assign(**{"judge_prompt_set:lenient": "lenient@v1", "judge_model": "m"})
    table = judge_agreement(named)[0][["prompt_set", "judge_model"]].values.tolist()
    assert [[v if isinstance(v, str) else None for v in r] for r in table] == [
        ["lenient@v1", "m"], [None, "m"], [None, None]]
    # rows from a slice the strict judge never saw (no prompt set named) are not unreadable
    partial = _rows().assign(**{"judge_prompt_set:strict": ["strict@v1", "strict@v1", None, None, "strict@v1"]})
    assert judge_agreement(partial)[0].set_index("judge").loc["strict", "unreadable"] == 0
    seen = _rows().assign(**{"judge_prompt_set:strict": "strict@v1"})
    assert judge_agreement(seen)[0].set_index("judge").loc["strict", "unreadable"] == 1
    got = {(r["a"], r["b"]): r for r in pairs.to_dict("records")}
    assert got[("lenient", "strict")]["agreement"] == 0.5 and got[("lenient", "strict")]["n"] == 2
    assert got[("lenient", "strict")]["kappa"] == 0.0   # p_o = .5, p_e = 1 * .5
    assert got[("strict", "token_f1>=0.5")]["kappa"] == 1.0
    with pytest.raises(MemlabError, match=r"judge:<name> columns"):
        judge_agreement(_rows().drop(columns=["judge:lenient", "judge:strict"]))


def test_add_answer_scores():
    rows = add_answer_scores(pd.DataFrame({"answer": ["Business Administration", "x", None],
                                           "prediction": [ECHO, None, "y"]}))
    assert rows["answer_containment"].tolist()[0] == 1.0
    assert all(math.isnan(v) for v in rows["answer_containment"].tolist()[1:])


def test_judge_rows_with_the_local_model():
    llm = LocalLLM(model="gemma-3-270m", n_ctx=1024)
    rows = pd.DataFrame({"query": ["What did Caroline paint?", "Where does Sam live?"],
                         "answer": ["a sunrise", "Berlin"], "prediction": ["a sunrise", None]})
    judged = judge_rows(rows, llm)
    assert list(judged.columns[-7:]) == ["judge:lenient", "judge_format_errors:lenient", "judge_prompt_set:lenient",
                                         "judge:strict", "judge_format_errors:strict", "judge_prompt_set:strict",
                                         "judge_model"]
    assert judged["judge_prompt_set:strict"].iloc[0] == "strict@v2" and judged["judge_model"].iloc[0] == llm.model_id()
    for name in ("lenient", "strict"):
        first = judged[f"judge:{name}"].iloc[0]
        assert first in (0.0, 1.0) or (math.isnan(first) and judged[f"judge_format_errors:{name}"].iloc[0])
        assert math.isnan(judged[f"judge:{name}"].iloc[1])   # no prediction: not judged
    assert llm.usage.calls == 2
