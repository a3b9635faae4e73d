"""LoCoMo's official QA score, ``locomo_f1``: the per-question score of LoCoMo's own scorer.

Source: repository snap-research/LoCoMo, file ``task_eval/evaluation.py`` (commit
3eb6f2c585f5e1699204e3c3bdf7adc5c28cb376): ``normalize_answer``, ``f1_score``, ``f1`` and the
per-category branch of ``eval_question_answering``, which ``task_eval/evaluate_qa.py`` runs on
every question. memlab's ``answer_f1`` (``memlab.eval.answers.token_f1``) is memlab's own
SQuAD-style metric and differs from this one (it keeps "and", scores a multi-hop answer whole,
gives 1 to two empty strings, has no adversarial rule): the two are reported side by side.

Normalisation (``normalize_answer``), in this order: every comma is deleted; the text is
lower-cased; every ASCII punctuation character (``string.punctuation``) is deleted; the words
``a``, ``an``, ``the`` and ``and`` are replaced by a space (``regex.sub(r"\\b(a|an|the|and)\\b",
" ", text)``, the ``regex`` package as in the source); whitespace runs are collapsed and the
ends stripped (``" ".join(text.split())``).

Token F1 (``f1_score``): both strings are normalised, split on whitespace and each token is
stemmed by nltk's ``PorterStemmer()`` (its default NLTK_EXTENSIONS mode, as the source
builds it); with ``c`` the size of the multiset intersection of the two token lists,
``F1 = 0`` when ``c = 0`` (so also when either side is empty), else ``P = c / |prediction|``,
``R = c / |gold|``, ``F1 = (2 * P * R) / (P + R)``.

Per LoCoMo category (``category``: the code 1..5 or memlab's name for it,
``memlab.eval.loaders.locomo.CATEGORIES``):

- 2 temporal, 3 open-domain, 4 single-hop: ``f1_score(prediction, gold)`` on the whole
  strings; for category 3 the gold is first cut at its first ``;`` and stripped
  (``gold.split(";")[0].strip()``: LoCoMo's open-domain golds append a reason after it);
- 1 multi-hop: prediction and gold are each split at ``,`` into stripped sub-answers
  (``p_1..p_m``, ``g_1..g_n``) and ``score = mean over j of max over i of f1_score(p_i, g_j)``
  (``numpy.mean``, as the source): each gold sub-answer is credited with the prediction part
  that matches it best;
- 5 adversarial -- **memlab's category-5 policy is LoCoMo's own rule, unchanged**: the score is
  1 when the lower-cased prediction contains ``"no information available"`` or ``"not
  mentioned"``, else 0. The gold is not read (444 of LoCoMo's 446 adversarial questions have
  none; their ``adversarial_answer`` is the trap). LoCoMo's own answering script asks these
  questions as a choice between "Not mentioned in the conversation" and the trap answer and
  maps the chosen letter to its text; memlab asks every question the same way
  (``memlab.eval.answers.ANSWER_INSTRUCTION``, which tells the model to answer "I don't know"
  when the conversation does not say), so a category-5 ``locomo_f1`` is 1 only for a free
  answer containing one of the two phrases: "I don't know" scores 0. Means of
  ``locomo_f1`` over LoCoMo therefore include the adversarial questions, scored by that
  rule; leave them out (``Dataset.subset(categories=...)``) to compare with papers that do.

Any other category is an error (the source raises ValueError). Differences from the source,
none of them in the score: an int gold is turned to text as the source does (``str``); the
score is returned as a Python float (the source returns ints, floats and numpy floats of the
same values); ``evaluate_qa.py`` stores each score rounded to 3 decimals (``round(x, 3)``)
before its statistics average them, memlab keeps the unrounded score (a mean then differs by
at most 0.0005).
"""

from __future__ import annotations

import math
import string
from collections import Counter
from functools import lru_cache
from typing import Any

from ..base import MemlabError

#: Source of the rules above: repository, file, commit.
SOURCE = "snap-research/LoCoMo task_eval/evaluation.py @ 3eb6f2c585f5e1699204e3c3bdf7adc5c28cb376"
#: LoCoMo's category codes and memlab's names for them (as ``memlab.eval.loaders.locomo.CATEGORIES``).
LOCOMO_CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
_CODES = {name: code for code, name in LOCOMO_CATEGORIES.items()}
#: The phrases that make a category-5 (adversarial) answer score 1 (lower-cased prediction).
ADVERSARIAL_PHRASES = ("no information available", "not mentioned")
#: The category-5 policy in one line, for tables and notes that report ``locomo_f1``.
CATEGORY5_POLICY = ("locomo_f1, adversarial (category 5) questions: LoCoMo's rule, 1 when the answer contains "
                    "'not mentioned' or 'no information available', else 0 (\"I don't know\" scores 0)")

_PUNCT = set(string.punctuation)


@lru_cache(maxsize=1)
def _regex() -> Any:
    import regex  # the source's module (a dependency of nltk): its \b is what the source matched

    return regex.compile(r"\b(a|an|the|and)\b")


@lru_cache(maxsize=1)
def _stemmer() -> Any:
    try:
        from nltk.stem import PorterStemmer
    except ImportError:  # a dependency of memlab; only a broken install lacks it
        raise MemlabError("locomo_f1 needs nltk (LoCoMo's scorer stems with nltk's PorterStemmer): "
                          "pip install 'nltk>=3.8.1'") from None
    return PorterStemmer()


@lru_cache(maxsize=65536)
def _stem(word: str) -> str:
    # nltk's stemmer is pure Python and slow; a word's stem never changes
    return _stemmer().stem(word)


def normalize_answer(s: str) -> str:
    """LoCoMo's ``normalize_answer`` (module docstring): commas deleted, lower case, ASCII
    punctuation deleted, a/an/the/and replaced by a space, whitespace collapsed."""
    s = s.replace(",", "")
    text = "".join(ch for ch in s.lower() if ch not in _PUNCT)
    return " ".join(_regex().sub(" ", text).split())


def answer_tokens(text: str) -> list[str]:
    """The normalised whitespace tokens of ``text``, each Porter-stemmed by nltk."""
    return [_stem(w) for w in normalize_answer(text).split()]


def f1_score(prediction: str, gold: str) -> float:
    """LoCoMo's ``f1_score``: stemmed token F1, 0 when no token is shared (module docstring)."""
    pred, ref = answer_tokens(prediction), answer_tokens(gold)
    num_same = sum((Counter(pred) & Counter(ref)).values())
    if num_same == 0:
        return 0.0
    precision = 1.0 * num_same / len(pred)
    recall = 1.0 * num_same / len(ref)
    return (2 * precision * recall) / (precision + recall)


def multi_answer_f1(prediction: str, gold: str) -> float:
    """LoCoMo's ``f1`` for multi-hop questions: the mean over the gold's comma-separated
    sub-answers of the best ``f1_score`` against any comma-separated part of the prediction."""
    import numpy as np

    predictions = [p.strip() for p in prediction.split(",")]
    golds = [g.strip() for g in gold.split(",")]
    # numpy's mean (pairwise summation), as the source, so the value agrees to the last bit
    return float(np.mean([max([f1_score(p, g) for p in predictions]) for g in golds]))


def category_code(category: Any) -> int:
    """LoCoMo's code 1..5 of ``category`` (the code itself, or memlab's name for it)."""
    if isinstance(category, str) and category in _CODES:
        return _CODES[category]
    if isinstance(category, int) and not isinstance(category, bool) and category in LOCOMO_CATEGORIES:
        return category
    raise MemlabError(f"locomo_f1 parameter 'category': expected a LoCoMo category, a code 1..5 or one of "
                      f"{', '.join(_CODES)}, got {category!r}")


def locomo_f1(prediction: str, gold: Any, category: Any) -> float:
    """LoCoMo's official score of one answer (module docstring): token F1 by category, the
    multi-hop sub-answer rule for category 1, the "not mentioned" rule for category 5.

    ``gold`` is not read for category 5 (None is fine there); for 1..4 it is required (an
    int is turned to text as the source does)."""
    code = category_code(category)
    if not isinstance(prediction, str):
        raise MemlabError(f"locomo_f1 parameter 'prediction': expected a string, got {type(prediction).__name__}")
    if code == 5:
        lowered = prediction.lower()
        return 1.0 if any(phrase in lowered for phrase in ADVERSARIAL_PHRASES) else 0.0
    if gold is None or isinstance(gold, (bool, float)) or not isinstance(gold, (str, int)):
        raise MemlabError(f"locomo_f1 parameter 'gold': expected the gold answer (a string or an int) for "
                          f"category {code} ({LOCOMO_CATEGORIES[code]}), got {gold!r}")
    answer = str(gold)
    if code == 3:
        answer = answer.split(";")[0].strip()
    if code == 1:
        return multi_answer_f1(prediction, answer)
    return f1_score(prediction, answer)


def probe_category_code(probe: Any) -> int | None:
    """The LoCoMo code of a probe loaded from LoCoMo (its ``metadata["category_code"]``, 1..5,
    agreeing with its category name), else None: only LoCoMo's loader records the code, so a
    dataset of another source whose categories share LoCoMo's names is not scored by its rule."""
    meta = getattr(probe, "metadata", None) or {}
    code = meta.get("category_code")
    if isinstance(code, bool) or not isinstance(code, int) or code not in LOCOMO_CATEGORIES:
        return None
    return code if getattr(probe, "category", None) == LOCOMO_CATEGORIES[code] else None


def probe_locomo_f1(prediction: Any, probe: Any) -> float:
    """``locomo_f1`` of an answer to ``probe``; NaN when the probe is not a LoCoMo question
    (``probe_category_code``), there is no prediction, or a category 1..4 question has no gold."""
    code = probe_category_code(probe)
    if code is None or not isinstance(prediction, str) or (code != 5 and probe.answer is None):
        return math.nan
    return locomo_f1(prediction, probe.answer, code)


__all__ = ["ADVERSARIAL_PHRASES", "CATEGORY5_POLICY", "LOCOMO_CATEGORIES", "SOURCE", "category_code", "f1_score",
           "locomo_f1", "multi_answer_f1", "normalize_answer", "probe_category_code", "probe_locomo_f1"]
