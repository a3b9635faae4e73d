"""Answer quality: generate an answer from the built context, score it by token F1 and an LLM judge.

Retrieval metrics say whether the evidence reached the context; these say whether a model
answered from it. Both need an LLM (``OpenAIChat`` for a real endpoint, ``OfflineLLM`` for
the deterministic offline stand-in, which answers with the context sentence that shares
most terms with the question).

Token F1 (SQuAD / LoCoMo): both strings are normalised (lower case, punctuation and the
articles a/an/the removed, whitespace collapsed), split on whitespace (and CJK text into
single characters) and, by default, Porter-stemmed as LoCoMo's evaluation does; with ``c`` the multiset of shared tokens,
``precision = c / |prediction|``, ``recall = c / |gold|``, ``F1 = 2 P R / (P + R)``
(0 when nothing is shared; 1 when both are empty).

The judge follows the mem0 paper's LLM-as-judge: it sees the question, the gold answer
and the generated one and labels it CORRECT or WRONG, lenient about wording and length.
"""

from __future__ import annotations

import json
import re
import string
from collections import Counter
from typing import Any

from ..base import Component, ConfigError
from ..text import porter_stem
from ..text import HAN, KANA

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_CJK_OR_WORD = re.compile(f"[{KANA}{HAN}]|[^{KANA}{HAN}]+")
_PUNCT = str.maketrans("", "", string.punctuation)

ANSWER_INSTRUCTION = ("Answer the question using the conversation above. Answer in a short phrase; "
                      "if the conversation does not say, answer \"I don't know\".")

JUDGE_PROMPT = """Your task is to label an answer to a question as "CORRECT" or "WRONG".
You are given a question, a gold (ground truth) answer, and a generated answer.
Be generous: if the generated answer mentions the same topic or fact as the gold answer,
even in other words or with more detail, it is CORRECT. Dates and times in another format
that refer to the same moment are CORRECT.

Question: {question}
Gold answer: {gold}
Generated answer: {prediction}

Reply with JSON only: {{"label": "CORRECT"}} or {{"label": "WRONG"}}."""


def normalize_answer(text: str) -> str:
    """Lower-cased, punctuation and articles removed, whitespace collapsed (SQuAD's rule)."""
    text = str(text).lower().translate(_PUNCT)
    return " ".join(_ARTICLES.sub(" ", text).split())


def answer_tokens(text: str, stem: bool = True) -> list[str]:
    """Normalised whitespace tokens; CJK characters count one token each (Chinese and
    Japanese have no spaces), other tokens Porter-stemmed when ``stem``."""
    tokens = [piece for word in normalize_answer(text).split() for piece in _CJK_OR_WORD.findall(word)]
    return [porter_stem(t) for t in tokens] if stem else tokens


def token_f1(prediction: str, gold: str, stem: bool = True) -> float:
    """Token-overlap F1 between a prediction and a gold answer (see the module docstring)."""
    pred, ref = answer_tokens(prediction, stem), answer_tokens(gold, stem)
    if not pred and not ref:
        return 1.0
    common = sum((Counter(pred) & Counter(ref)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(pred), common / len(ref)
    return 2 * precision * recall / (precision + recall)


def parse_judgement(text: str) -> float:
    """1.0 for CORRECT, 0.0 for WRONG, NaN when the reply says neither."""
    try:
        label = str(json.loads(text.strip().strip("`").removeprefix("json")).get("label", ""))
    except (json.JSONDecodeError, AttributeError):
        label = text
    match = re.search(r"\b(CORRECT|WRONG)\b", label.upper())
    if match is None:
        return float("nan")
    return 1.0 if match.group(1) == "CORRECT" else 0.0


class Answerer(Component):
    """Asks ``llm`` the question with the built context as the conversation."""

    def __init__(self, llm: Any, instruction: str = ANSWER_INSTRUCTION, max_tokens: int = 64):
        self.llm = llm
        self.instruction = instruction
        self.max_tokens = max_tokens

    def answer(self, messages: list[dict[str, Any]], question: str):
        prompt = list(messages) + [{"role": "user", "content": f"{self.instruction}\n\nQuestion: {question}"}]
        return self.llm.complete(prompt, max_tokens=self.max_tokens)


class LLMJudge(Component):
    """Labels a generated answer CORRECT (1.0) or WRONG (0.0) against the gold answer."""

    def __init__(self, llm: Any, prompt: str = JUDGE_PROMPT):
        self.llm = llm
        self.prompt = prompt
        for field in ("{question}", "{gold}", "{prediction}"):
            if field not in prompt:
                raise ConfigError(f"judge prompt must contain {field}")

    def judge(self, question: str, gold: str, prediction: str):
        """(score, completion): score 1.0 / 0.0, NaN if the reply was neither label."""
        text = self.prompt.format(question=question, gold=gold, prediction=prediction)
        completion = self.llm.complete([{"role": "user", "content": text}], max_tokens=16)
        return parse_judgement(completion.text), completion
