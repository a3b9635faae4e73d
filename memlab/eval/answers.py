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

Containment (``containment``): the share of the gold's tokens found in the prediction,
``c / |gold|`` (token F1's recall; 1 when the gold has no tokens). A small model that echoes a
whole evidence line contains the gold yet gets a low F1 (precision punishes the extra words).

The judge follows the mem0 paper's LLM-as-judge: it sees the question, the gold answer
and the generated one and labels it CORRECT or WRONG, lenient about wording and length
(``LENIENT_JUDGE_PROMPT``); ``STRICT_JUDGE_PROMPT`` asks for every gold fact and no
contradiction. ``judge_rows`` labels a replay's answers with several prompts and
``judge_agreement`` says how far they agree: Cohen's kappa between two label columns,
``kappa = (p_o - p_e) / (1 - p_e)`` with ``p_o`` the share of rows where both agree and
``p_e = sum_k p_a(k) p_b(k)`` the agreement expected by chance from each column's label
shares (rows where either label is NaN are left out; NaN when ``p_e = 1``, i.e. both
columns give one and the same label everywhere).
"""

from __future__ import annotations

import json
import math
import re
import string
from collections import Counter
from typing import Any

from ..base import Component, ConfigError, MemlabError
from ..llm.base import for_client
from ..llm.prompts import JUDGE_PROMPTS, JUDGE_SCHEMA, LENIENT_JUDGE_PROMPT
from ..text import porter_stem
from .locomo_score import locomo_f1 as locomo_f1, probe_locomo_f1 as probe_locomo_f1  # LoCoMo's official score
from ..text import HAN, KANA

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_CJK_OR_WORD = re.compile(f"[{KANA}{HAN}]|[^{KANA}{HAN}]+")
_PUNCT = str.maketrans("", "", string.punctuation)

ANSWER_INSTRUCTION = ("Answer the question using the conversation above. Answer in a short phrase; "
                      "if the conversation does not say, answer \"I don't know\".")

JUDGE_PROMPT = LENIENT_JUDGE_PROMPT  # the mem0-style lenient judge (memlab.llm.prompts)


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


def containment(prediction: str, gold: str, stem: bool = True) -> float:
    """Share of the gold's tokens (multiset) found in the prediction: ``c / |gold|``; 1.0 when
    the gold has no tokens (see the module docstring)."""
    pred, ref = answer_tokens(prediction, stem), answer_tokens(gold, stem)
    if not ref:
        return 1.0
    return sum((Counter(pred) & Counter(ref)).values()) / len(ref)


def cohen_kappa(a: Any, b: Any) -> float:
    """Cohen's kappa between two label sequences (see the module docstring); NaN pairs dropped."""
    pairs = [(x, y) for x, y in zip(list(a), list(b), strict=True) if not (_isnan(x) or _isnan(y))]
    if not pairs:
        return float("nan")
    n = len(pairs)
    p_o = sum(x == y for x, y in pairs) / n
    ca, cb = Counter(x for x, _ in pairs), Counter(y for _, y in pairs)
    p_e = sum(ca[k] * cb[k] for k in ca) / (n * n)
    if p_e >= 1.0:
        return float("nan")
    return (p_o - p_e) / (1.0 - p_e)


def _isnan(x: Any) -> bool:
    return x is None or (isinstance(x, float) and math.isnan(x))


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
    """Labels a generated answer CORRECT (1.0) or WRONG (0.0) against the gold answer.

    The request carries ``JUDGE_SCHEMA`` (``{"label": "CORRECT" | "WRONG"}``): a client with
    structured output (``LocalLLM`` by default) can then only answer one of the two labels."""

    def __init__(self, llm: Any, prompt: str = JUDGE_PROMPT):
        self.llm = llm
        self.prompt = prompt
        for field in ("{question}", "{gold}", "{prediction}"):
            if field not in prompt:
                raise ConfigError(f"judge prompt must contain {field}")

    def judge(self, question: str, gold: str, prediction: str):
        """(score, completion): score 1.0 / 0.0, NaN if the reply was neither label."""
        text = self.prompt.format(question=question, gold=gold, prediction=prediction)
        completion = self.llm.complete([{"role": "user", "content": text}],
                                       **for_client(self.llm, {"max_tokens": 16, "schema": JUDGE_SCHEMA}))
        return parse_judgement(completion.text), completion


def add_answer_scores(rows: Any, stem: bool = True) -> Any:
    """``rows`` (a replay with an answerer) with ``answer_containment`` beside ``answer_f1``
    (NaN where there is no prediction or no gold answer). Returns a new DataFrame."""
    values = [containment(p, g, stem) if isinstance(p, str) and isinstance(g, str) else float("nan")
              for p, g in zip(rows["prediction"], rows["answer"])]
    return rows.assign(answer_containment=values)


def judge_rows(rows: Any, llm: Any, prompts: dict[str, str] | None = None) -> Any:
    """``rows`` with a ``judge:<name>`` column per judge prompt (default ``JUDGE_PROMPTS``:
    lenient and strict), each 1.0 / 0.0 / NaN (no prediction, no gold, or a reply that is neither
    label), and ``judge_format_errors:<name>`` counting the replies that were neither. A judge call
    that fails for good (``LLMError``) leaves NaN. Returns a new DataFrame."""
    from ..llm.base import LLMError

    prompts = dict(JUDGE_PROMPTS if prompts is None else prompts)
    out = rows.copy()
    for name, prompt in prompts.items():
        judge = LLMJudge(llm, prompt)
        labels, bad = [], []
        for q, g, p in zip(rows["query"], rows["answer"], rows["prediction"]):
            score = float("nan")
            unreadable = False
            if isinstance(p, str) and isinstance(g, str):
                try:
                    score, _ = judge.judge(q, g, p)
                    unreadable = math.isnan(score)
                except LLMError:
                    pass
            labels.append(score)
            bad.append(unreadable)
        out[f"judge:{name}"] = labels
        out[f"judge_format_errors:{name}"] = bad
    return out


def judge_agreement(rows: Any, f1_threshold: float = 0.5) -> tuple[Any, Any]:
    """How far the ``judge:<name>`` columns of ``rows`` agree.

    Returns ``(accuracy, pairs)``: ``accuracy`` has one row per judge prompt (``judge``,
    ``accuracy`` = mean label over labelled rows, ``n_labelled``, ``unreadable`` = NaN labels
    where an answer existed) plus a ``token_f1>=T`` row (``answer_f1 >= f1_threshold`` as a
    label); ``pairs`` one row per pair of those columns (``a``, ``b``, ``kappa``, ``agreement``
    = share of rows labelled alike, ``n``). The spread of accuracy across prompts is
    ``accuracy.accuracy.max() - min()`` over the judge rows."""
    import pandas as pd

    names = [c for c in rows.columns if str(c).startswith("judge:")]
    if not names:
        raise MemlabError("judge_agreement needs judge:<name> columns (judge_rows(rows, llm))")
    answered = rows["prediction"].map(lambda p: isinstance(p, str)) & rows["answer"].map(lambda g: isinstance(g, str))
    labels = {c[len("judge:"):]: rows[c].where(answered).tolist() for c in names}
    f1_name = f"token_f1>={f1_threshold:g}"
    labels[f1_name] = [float(f >= f1_threshold) if ok and not _isnan(f) else float("nan")
                       for f, ok in zip(rows["answer_f1"], answered)]
    acc = []
    for name, values in labels.items():
        kept = [v for v in values if not _isnan(v)]
        acc.append({"judge": name, "accuracy": sum(kept) / len(kept) if kept else float("nan"),
                    "n_labelled": len(kept),
                    "unreadable": int(sum(1 for v, ok in zip(values, answered) if ok and _isnan(v)))})
    pairs = []
    keys = list(labels)
    for i, a in enumerate(keys):
        for b in keys[i + 1:]:
            both = [(x, y) for x, y in zip(labels[a], labels[b]) if not (_isnan(x) or _isnan(y))]
            pairs.append({"a": a, "b": b, "kappa": cohen_kappa(labels[a], labels[b]),
                          "agreement": sum(x == y for x, y in both) / len(both) if both else float("nan"),
                          "n": len(both)})
    return pd.DataFrame(acc), pd.DataFrame(pairs)
