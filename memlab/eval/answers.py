"""Answer quality: generate an answer from the built context, score it by token F1 and an LLM judge.

Retrieval metrics say whether the evidence reached the context; these say whether a model
answered from it. Both need an LLM (``OpenAIChat`` for a real endpoint, ``OfflineLLM`` for
the deterministic offline stand-in, which answers with the context sentence that shares
most terms with the question).

Token F1 (SQuAD-style, memlab's own ``answer_f1``): both strings are normalised (lower case,
punctuation and the articles a/an/the removed, whitespace collapsed), split on whitespace (and
CJK text into single characters) and, by default, Porter-stemmed (LoCoMo's scorer stems too;
its own score differs, see ``locomo_f1`` below); with ``c`` the multiset of shared tokens,
``precision = c / |prediction|``, ``recall = c / |gold|``, ``F1 = 2 P R / (P + R)``
(0 when nothing is shared; 1 when both are empty).

Containment (``containment``): the share of the gold's tokens found in the prediction,
``c / |gold|`` (token F1's recall; 1 when the gold has no tokens). A small model that echoes a
whole evidence line contains the gold yet gets a low F1 (precision punishes the extra words).

LoCoMo's official score (``locomo_f1``, its own normalisation, stemmer, multi-hop and
adversarial rules) is ``memlab.eval.locomo_score``; the replay writes it beside ``answer_f1``
for LoCoMo questions.

The judge speaks one named, versioned prompt set (``memlab.llm.prompts.JudgePromptSet``; every
judge result names it as ``judge_prompt_set`` = ``name@version``, beside ``judge_model``):

- ``lenient@v2`` (default) follows the mem0 paper's LLM-as-judge: it sees the question, the
  gold answer and the generated one and labels it CORRECT or WRONG, lenient about wording and
  length (``LENIENT_JUDGE_PROMPT_WORD``); ``strict@v2`` asks for every gold fact and no
  contradiction. Both ask for the label as one word (``v1``, still usable by its id, asked for
  ``{"label": ...}`` JSON). A reply is read by ``parse_judgement``: 1.0, 0.0, NaN for neither
  label. A set whose reply is one word sends its two words as ``one_of`` (``LocalLLM`` decodes
  under a grammar of exactly them) beside its JSON schema (for clients that constrain JSON only);
- ``longmemeval@v1`` is LongMemEval's judge (``evaluate_qa.py``): one yes/no prompt per
  question type, the probe's ``category`` (single-session-user / -assistant and multi-session
  share one; temporal-reasoning forgives off-by-one day counts; knowledge-update accepts an
  old value beside the updated one; single-session-preference reads the gold as a rubric),
  and the abstention prompt for a probe id containing ``_abs``. A reply is read as the source
  reads it (``parse_yes_no``): 1.0 when "yes" is in the lower-cased reply, else 0.0, never
  NaN; a reply with neither the word yes nor no is still counted as a format error.

``judge_rows`` labels a replay's answers with several prompts and
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
from collections.abc import Mapping
from typing import Any

from ..base import Component, ConfigError, MemlabError
from ..llm.base import for_client
from ..llm.prompts import (
    JUDGE_PROMPTS,
    LENIENT_JUDGE_PROMPT_WORD,
    JudgePromptSet,
    judge_prompt_set,
    template_prompt_set,
)
from ..text import HAN, KANA, porter_stem

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_CJK_OR_WORD = re.compile(f"[{KANA}{HAN}]|[^{KANA}{HAN}]+")
_PUNCT = str.maketrans("", "", string.punctuation)

ANSWER_INSTRUCTION = ("Answer the question using the conversation above. Answer in a short phrase; "
                      "if the conversation does not say, answer \"I don't know\".")

JUDGE_PROMPT = LENIENT_JUDGE_PROMPT_WORD  # the mem0-style lenient judge's text (memlab.llm.prompts, lenient@v2)


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


def parse_yes_no(text: str) -> float:
    """LongMemEval's reading of a judge reply (``evaluate_qa.py``: ``'yes' in
    eval_response.lower()``): 1.0 when "yes" occurs anywhere in the lower-cased reply, else 0.0."""
    return 1.0 if "yes" in str(text).lower() else 0.0


_YES_NO_WORD = re.compile(r"\b(yes|no)\b")


def llm_identity(llm: Any) -> tuple[str, str]:
    """``(model, device)`` of an LLM client: ``LocalLLM``'s ``model_id()`` and ``device()``,
    ``OpenAIChat``'s model and base URL (``"endpoint"`` without one), else the ``model``
    attribute (or the class name) and ``"cpu"``."""
    if hasattr(llm, "model_id") and hasattr(llm, "device"):
        return str(llm.model_id()), str(llm.device())
    if hasattr(llm, "resolved_model"):
        return str(llm.resolved_model()), str(getattr(llm, "base_url", None) or "endpoint")
    return str(getattr(llm, "model", None) or type(llm).__name__), "cpu"


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
    """Scores a generated answer against the gold answer: 1.0 (correct) or 0.0 (wrong).

    ``prompt_set`` names the prompts (``memlab.llm.prompts.JUDGE_PROMPT_SETS``: ``lenient``,
    the default, ``strict``, ``longmemeval``; a name, ``name@version`` or a ``JudgePromptSet``);
    ``prompt`` instead gives one label template of your own (with ``{question}``, ``{gold}``,
    ``{prediction}``; named ``custom@sha-<digest>`` unless it is a registered set's text).

    The request carries the set's schema (``JUDGE_SCHEMA``: ``{"label": "CORRECT" | "WRONG"}``,
    or ``YES_NO_SCHEMA``: ``{"answer": "yes" | "no"}``): a client with structured output
    (``LocalLLM`` by default) can then only answer one of the two. ``identity()`` is what a
    result records: ``judge_prompt_set`` (``name@version``) and ``judge_model``."""

    def __init__(self, llm: Any, prompt: str | None = None, prompt_set: Any = None):
        self.llm = llm
        self.prompt = prompt
        self.prompt_set = prompt_set
        self._on_params_changed()

    def _on_params_changed(self) -> None:
        if self.prompt is not None and self.prompt_set is not None:
            raise ConfigError(f"LLMJudge: give prompt (one template of your own) or prompt_set (a named set), "
                              f"not both; got prompt={self.prompt[:60]!r}... and prompt_set={self.prompt_set!r}")
        if self.prompt is not None:
            if not isinstance(self.prompt, str):
                raise ConfigError(f"LLMJudge parameter 'prompt': expected a template string, got "
                                  f"{type(self.prompt).__name__}")
            for field in ("{question}", "{gold}", "{prediction}"):
                if field not in self.prompt:
                    raise ConfigError(f"LLMJudge parameter 'prompt': a judge prompt must contain {field}, "
                                      f"got {self.prompt[:120]!r}")
            self._set = template_prompt_set(self.prompt)
        else:
            try:
                self._set = judge_prompt_set("lenient" if self.prompt_set is None else self.prompt_set,
                                             "LLMJudge parameter 'prompt_set'")
            except MemlabError as exc:
                raise ConfigError(str(exc)) from None
        self._model: str | None = None

    @property
    def prompts(self) -> JudgePromptSet:
        """The prompt set this judge speaks."""
        return self._set

    def identity(self) -> dict[str, str]:
        """``{"judge_prompt_set": "<name>@<version>", "judge_model": <model>}`` (``llm_identity``)."""
        if self._model is None:  # a LocalLLM reads its model file's size: once is enough
            self._model = llm_identity(self.llm)[0]
        return {"judge_prompt_set": self._set.id, "judge_model": self._model}

    def judge(self, question: str, gold: Any, prediction: str, category: Any = None, probe_id: Any = None):
        """(score, completion): 1.0 / 0.0, or NaN for a label reply that is neither label.

        ``category`` (the probe's question type) and ``probe_id`` choose the template of a set
        with one per type (``JudgePromptSet.template_for``)."""
        text = self._set.render(question, gold, prediction, category, probe_id)
        params: dict[str, Any] = {"max_tokens": self._set.max_tokens, "schema": self._set.schema}
        if self._set.reply == "word":
            params["one_of"] = list(self._set.labels)
        completion = self.llm.complete([{"role": "user", "content": text}], **for_client(self.llm, params))
        if self._set.protocol == "yes/no":
            return parse_yes_no(completion.text), completion
        return parse_judgement(completion.text), completion

    def unreadable(self, score: float, completion: Any) -> bool:
        """Whether a reply lacked the asked format: a NaN label, or a yes/no reply with neither
        word (LongMemEval still reads it as no, and so does ``judge``)."""
        if self._set.protocol == "yes/no":
            return _YES_NO_WORD.search(str(completion.text).lower()) is None
        return math.isnan(score)


def add_answer_scores(rows: Any, stem: bool = True) -> Any:
    """``rows`` (a replay with an answerer) with ``answer_containment`` beside ``answer_f1``
    (NaN where there is no prediction or no gold answer). Returns a new DataFrame."""
    values = [containment(p, g, stem) if isinstance(p, str) and isinstance(g, str) else float("nan")
              for p, g in zip(rows["prediction"], rows["answer"])]
    return rows.assign(answer_containment=values)


def make_judges(llm: Any, prompts: Any) -> dict[str, LLMJudge]:
    """One ``LLMJudge`` per column name: ``prompts`` maps names to label templates or prompt
    sets (a ``JudgePromptSet``, a set name or ``name@version``), or lists set names."""
    if prompts is None:
        prompts = JUDGE_PROMPTS
    if isinstance(prompts, (str, JudgePromptSet)):
        prompts = [prompts]
    if not isinstance(prompts, Mapping):
        sets = [judge_prompt_set(p, "judge_rows parameter 'prompts'") for p in prompts]
        prompts = {s.name: s for s in sets}
    out = {}
    for name, value in prompts.items():
        if isinstance(value, str) and "{" not in value:  # a set's name, not a template
            value = judge_prompt_set(value, f"judge_rows parameter 'prompts' [{name!r}]")
        if isinstance(value, JudgePromptSet):
            out[str(name)] = LLMJudge(llm, prompt_set=value)
        else:
            judge = LLMJudge(llm, prompt=value)
            if judge.prompts.name == "custom":  # a template of the caller's: named by its column
                judge = LLMJudge(llm, prompt_set=template_prompt_set(value, _set_name(name)))
            out[str(name)] = judge
    return out


def _set_name(name: Any) -> str:
    """A column name as a prompt-set name (lower case; other characters become '-')."""
    cleaned = re.sub(r"[^a-z0-9_-]+", "-", str(name).lower()).strip("-")
    return cleaned if cleaned[:1].isalpha() else f"custom-{cleaned}".rstrip("-")


def judge_rows(rows: Any, llm: Any, prompts: Any = None) -> Any:
    """``rows`` with a ``judge:<name>`` column per judge prompt, each 1.0 / 0.0 / NaN (no
    prediction, no gold, or a label reply that is neither label); ``judge_format_errors:<name>``
    marking the replies without the asked format; ``judge_prompt_set:<name>`` naming the set
    that made the column (``name@version``); and ``judge_model`` (``llm_identity``). A judge call
    that fails for good (``LLMError``) leaves NaN. Returns a new DataFrame.

    ``prompts``: default ``JUDGE_PROMPTS`` (``lenient@v1`` and ``strict@v1``); a mapping of
    column name to a label template or a prompt set (a ``JudgePromptSet``, a name,
    ``name@version``), or a list of set names (each its own column: ``["longmemeval"]``). A set
    with one template per question type reads each row's ``category`` and ``probe_id``."""
    from ..llm.base import LLMError

    judges = make_judges(llm, prompts)
    out = rows.copy()
    categories = rows["category"] if "category" in rows else [None] * len(rows)
    ids = rows["probe_id"] if "probe_id" in rows else [None] * len(rows)
    for name, judge in judges.items():
        labels, bad = [], []
        for q, g, p, c, i in zip(rows["query"], rows["answer"], rows["prediction"], categories, ids):
            score = float("nan")
            unreadable = False
            if isinstance(p, str) and isinstance(g, str):
                try:
                    score, completion = judge.judge(q, g, p, category=c, probe_id=i)
                    unreadable = judge.unreadable(score, completion)
                except LLMError:
                    pass
            labels.append(score)
            bad.append(unreadable)
        out[f"judge:{name}"] = labels
        out[f"judge_format_errors:{name}"] = bad
        out[f"judge_prompt_set:{name}"] = judge.prompts.id
    out["judge_model"] = next(iter(judges.values())).identity()["judge_model"] if judges else None
    return out


def _first(rows: Any, column: str) -> Any:
    """The first non-missing value of ``column`` in ``rows``, None when absent."""
    if column not in rows:
        return None
    values = rows[column].dropna()
    return values.iloc[0] if len(values) else None


def judge_agreement(rows: Any, f1_threshold: float = 0.5) -> tuple[Any, Any]:
    """How far the ``judge:<name>`` columns of ``rows`` agree.

    Returns ``(accuracy, pairs)``: ``accuracy`` has one row per judge prompt (``judge``,
    ``accuracy`` = mean label over labelled rows, ``n_labelled``, ``unreadable`` = NaN labels
    where an answer existed and the judge saw the row (its ``judge_prompt_set:<name>`` is set,
    when the column exists), ``prompt_set`` = its ``judge_prompt_set:<name>`` and
    ``judge_model``, None where the rows do not say) plus a ``token_f1>=T`` row
    (``answer_f1 >= f1_threshold`` as a label, no prompt set nor model); ``pairs`` one row per pair of those columns (``a``, ``b``, ``kappa``, ``agreement``
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
        judged = name != f1_name
        # a row that this judge never saw (another slice's rows, concatenated) is not unreadable:
        # judge_rows names the set on every row it judged
        seen = (rows[f"judge_prompt_set:{name}"].notna().tolist() if judged and f"judge_prompt_set:{name}" in rows
                else [True] * len(values))
        acc.append({"judge": name, "accuracy": sum(kept) / len(kept) if kept else float("nan"),
                    "n_labelled": len(kept),
                    "unreadable": int(sum(1 for v, ok, s in zip(values, answered, seen) if ok and s and _isnan(v))),
                    "prompt_set": _first(rows, f"judge_prompt_set:{name}") if judged else None,
                    "judge_model": _first(rows, "judge_model") if judged else None})
    pairs = []
    keys = list(labels)
    for i, a in enumerate(keys):
        for b in keys[i + 1:]:
            both = [(x, y) for x, y in zip(labels[a], labels[b]) if not (_isnan(x) or _isnan(y))]
            pairs.append({"a": a, "b": b, "kappa": cohen_kappa(labels[a], labels[b]),
                          "agreement": sum(x == y for x, y in both) / len(both) if both else float("nan"),
                          "n": len(both)})
    return pd.DataFrame(acc), pd.DataFrame(pairs)
