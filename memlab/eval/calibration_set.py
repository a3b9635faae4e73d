"""The judge calibration set: question/gold/prediction pairs built from the data by rule,
never typed by hand, half expected CORRECT and half WRONG (``build_pairs``, ``default_pairs``).

**The set.** Questions are drawn (``random.Random(seed)`` over the sorted question ids) from
LoCoMo (categories 1-4: multi-hop, temporal, open-domain, single-hop; ``LOCOMO_PER_CATEGORY``
each) and LongMemEval's oracle dev file (single-session-user, single-session-assistant,
multi-session, temporal-reasoning, knowledge-update; ``LONGMEMEVAL_PER_TYPE`` each; no
abstention question, no preference rubric, golds of at most ``MAX_GOLD_WORDS`` words). Each
question gives two pairs (question, gold, prediction), one expected CORRECT and one WRONG,
next to each other (so the judge's prompt cache reuses the question and gold of the first):

- expected CORRECT, by turns: ``gold`` (the gold answer itself), ``normalised`` (SQuAD's rule:
  lower case, punctuation and articles removed; ``reworded`` when that changes nothing),
  ``reworded`` (a date "7 May 2023" written "May 7, 2023", else the gold inside a sentence,
  "I believe it was ...", "The answer is ...", "... as far as I remember.");
- expected WRONG, by turns: ``other_gold`` (the gold answer of another question of the same
  category and source sharing no normalised token with this gold) and ``wrong_value``: a
  ``wrong_date`` (each month name moved 4 months on, each year 3 back) when the gold has a date,
  else a ``wrong_number`` (each number n written n + 3, number words too), else ``other_gold``.

With the defaults: 4 x 18 LoCoMo questions and 5 x 8 LongMemEval ones, 224 pairs, half
expected CORRECT. ``set_hash`` (sha256 of the pairs' canonical JSON) names the set: a changed
rule or data file is another set.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import random
import re
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Iterable

from ..base import MemlabError
from .answers import normalize_answer, token_f1
from .locomo_score import LOCOMO_CATEGORIES

#: Questions drawn per LoCoMo category (1-4) and per LongMemEval question type.
LOCOMO_PER_CATEGORY = 18
LONGMEMEVAL_PER_TYPE = 8
LOCOMO_CODES = (1, 2, 3, 4)
LONGMEMEVAL_TYPES = ("single-session-user", "single-session-assistant", "multi-session", "temporal-reasoning",
                     "knowledge-update")
#: LongMemEval golds longer than this are explanations or rubrics, not answers to compare.
MAX_GOLD_WORDS = 15
#: Bumped when a rule of ``build_pairs`` changes (it is part of every pair set's hash).
RULES_VERSION = "calibration-rules@v1"
DEFAULT_SEED = 0

_MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
           "November", "December"]
_MONTH = re.compile(r"\b(" + "|".join(_MONTHS) + r")\b", re.I)
_YEAR = re.compile(r"\b(19|20)\d\d\b")
_DAY_MONTH_YEAR = re.compile(r"^(\d{1,2}) (" + "|".join(_MONTHS) + r"),? (\d{4})$", re.I)
_NUMBER = re.compile(r"\b\d+(?:\.\d+)?\b")
_NUMBER_WORDS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven",
                 "twelve", "thirteen", "fourteen", "fifteen"]
_NUMBER_WORD = re.compile(r"\b(" + "|".join(_NUMBER_WORDS) + r")\b", re.I)
_SENTENCES = ("I believe it was {gold}.", "The answer is {gold}.", "{gold}, as far as I remember.")
POSITIVE_KINDS = ("gold", "normalised", "reworded")
NEGATIVE_KINDS = ("wrong_value", "other_gold", "wrong_value")


@dataclass(frozen=True)
class CalibrationPair:
    """One (question, gold, prediction) pair with the label a good judge gives it.

    ``kind`` is the rule that made the prediction (module docstring); ``expected`` 1.0 for
    CORRECT, 0.0 for WRONG; ``category`` the question's (LoCoMo's name or LongMemEval's type);
    ``locomo_code`` LoCoMo's category code (None for LongMemEval)."""

    id: str
    source: str
    category: str
    question: str
    gold: str
    prediction: str
    kind: str
    expected: float
    locomo_code: int | None = None


# -- the rules -------------------------------------------------------------------------------
def reword(gold: str, rng: random.Random) -> str:
    """``gold`` said another way that keeps its meaning: a "7 May 2023" date as "May 7, 2023",
    else the gold inside one of ``_SENTENCES``."""
    m = _DAY_MONTH_YEAR.match(gold.strip())
    if m:
        return f"{m.group(2).capitalize()} {int(m.group(1))}, {m.group(3)}"
    return rng.choice(_SENTENCES).format(gold=gold.strip().rstrip("."))


def has_date(gold: str) -> bool:
    return bool(_MONTH.search(gold) or _YEAR.search(gold))


def wrong_date(gold: str) -> str:
    """Every month name moved 4 months on and every year 3 years back (a different date)."""
    def month(m: re.Match) -> str:
        i = [x.lower() for x in _MONTHS].index(m.group(1).lower())
        return _MONTHS[(i + 4) % 12]

    return _YEAR.sub(lambda m: str(int(m.group(0)) - 3), _MONTH.sub(month, gold))


def has_number(gold: str) -> bool:
    return bool(_NUMBER.search(gold) or _NUMBER_WORD.search(gold))


def wrong_number(gold: str) -> str:
    """Every number n written n + 3 (number words too: "two" -> "five"), so even LongMemEval's
    off-by-one tolerance for day counts does not make it right."""
    def digits(m: re.Match) -> str:
        text = m.group(0)
        return str(float(text) + 3) if "." in text else str(int(text) + 3)

    def word(m: re.Match) -> str:
        i = _NUMBER_WORDS.index(m.group(1).lower()) + 3
        out = _NUMBER_WORDS[i] if i < len(_NUMBER_WORDS) else str(i)
        return out.capitalize() if m.group(1)[0].isupper() else out

    return _NUMBER_WORD.sub(word, _NUMBER.sub(digits, gold))


def _unrelated(a: str, b: str) -> bool:
    """No normalised token in common (token F1 0): another question's gold that cannot be right."""
    return token_f1(a, b, stem=True) == 0.0 and normalize_answer(a) != normalize_answer(b)


def _make_pairs(source: str, category: str, qid: str, question: str, gold: str, turn: int,
                others: list[str], rng: random.Random, code: int | None) -> list[CalibrationPair]:
    positive = POSITIVE_KINDS[turn % len(POSITIVE_KINDS)]
    if positive == "gold":
        pred = gold
    elif positive == "normalised" and normalize_answer(gold) != gold.strip():
        pred = normalize_answer(gold)
    else:
        positive, pred = "reworded", reword(gold, rng)
    negative = NEGATIVE_KINDS[turn % len(NEGATIVE_KINDS)]
    wrong = None
    if negative == "wrong_value":
        if has_date(gold):
            negative, wrong = "wrong_date", wrong_date(gold)
        elif has_number(gold):
            negative, wrong = "wrong_number", wrong_number(gold)
        if wrong is not None and not _unrelated(wrong, gold) and normalize_answer(wrong) == normalize_answer(gold):
            wrong = None  # the rule changed nothing readable
    if wrong is None:
        negative = "other_gold"
        order = list(others)
        rng.shuffle(order)  # the first unrelated gold in a seeded order (testing them all is slow)
        wrong = next((o for o in order if _unrelated(o, gold)), None)
        if wrong is None:
            return []
    return [CalibrationPair(f"{source}:{qid}:{positive}", source, category, question, gold, pred, positive, 1.0, code),
            CalibrationPair(f"{source}:{qid}:{negative}", source, category, question, gold, wrong, negative, 0.0, code)]


def _stamp(path: str | os.PathLike[str]) -> tuple[str, int, int]:
    info = os.stat(path)
    return str(Path(path).resolve()), info.st_size, info.st_mtime_ns


def locomo_questions(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """LoCoMo's questions of categories 1-4 with a gold answer: id, question, gold (text), code."""
    return list(_locomo_questions(_stamp(path)))


def longmemeval_questions(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """LongMemEval's questions of ``LONGMEMEVAL_TYPES`` (no abstention) with a short gold."""
    return list(_longmemeval_questions(_stamp(path)))


# read once per file version in a process: the LongMemEval file takes seconds to parse, and the
# CLI and the tests build the set more than once
@functools.lru_cache(maxsize=4)
def _locomo_questions(stamp: tuple[str, int, int]) -> tuple[dict[str, Any], ...]:
    path = stamp[0]
    with open(path, encoding="utf-8") as f:
        samples = json.load(f)
    out = []
    for sample in samples:
        for i, qa in enumerate(sample.get("qa") or []):
            code, answer = qa.get("category"), qa.get("answer")
            if code not in LOCOMO_CODES or answer is None or isinstance(answer, bool) or not str(answer).strip():
                continue
            out.append({"id": f"{sample.get('sample_id')}:{i}", "question": str(qa["question"]),
                        "gold": str(answer).strip(), "code": int(code)})
    return tuple(out)


@functools.lru_cache(maxsize=4)
def _longmemeval_questions(stamp: tuple[str, int, int]) -> tuple[dict[str, Any], ...]:
    path = stamp[0]
    with open(path, encoding="utf-8") as f:
        entries = json.load(f)
    out = []
    for e in entries:
        qtype, qid, gold = e.get("question_type"), str(e.get("question_id")), str(e.get("answer") or "").strip()
        if qtype not in LONGMEMEVAL_TYPES or "_abs" in qid or not gold or len(gold.split()) > MAX_GOLD_WORDS:
            continue
        out.append({"id": qid, "question": str(e["question"]), "gold": gold, "type": qtype})
    return tuple(out)


def build_pairs(locomo: str | os.PathLike[str] | None, longmemeval: str | os.PathLike[str] | None,
                seed: int = DEFAULT_SEED, per_category: int = LOCOMO_PER_CATEGORY,
                per_type: int = LONGMEMEVAL_PER_TYPE) -> list[CalibrationPair]:
    """The calibration pairs from LoCoMo's file and LongMemEval's oracle dev file (module
    docstring); either may be None (its pairs left out). Deterministic for a seed."""
    pairs: list[CalibrationPair] = []
    if locomo is not None:
        questions = locomo_questions(locomo)
        for code in LOCOMO_CODES:
            group = sorted((q for q in questions if q["code"] == code), key=lambda q: q["id"])
            golds = [q["gold"] for q in group]
            rng = random.Random(f"{seed}:locomo:{code}")
            for turn, q in enumerate(_draw(group, per_category, rng)):
                pairs += _make_pairs("locomo", LOCOMO_CATEGORIES[code], q["id"], q["question"], q["gold"], turn,
                                     [g for g in golds if g != q["gold"]], rng, code)
    if longmemeval is not None:
        questions = longmemeval_questions(longmemeval)
        for qtype in LONGMEMEVAL_TYPES:
            group = sorted((q for q in questions if q["type"] == qtype), key=lambda q: q["id"])
            golds = [q["gold"] for q in group]
            rng = random.Random(f"{seed}:longmemeval:{qtype}")
            for turn, q in enumerate(_draw(group, per_type, rng)):
                pairs += _make_pairs("longmemeval", qtype, q["id"], q["question"], q["gold"], turn,
                                     [g for g in golds if g != q["gold"]], rng, None)
    return pairs


def _draw(group: list[dict[str, Any]], n: int, rng: random.Random) -> list[dict[str, Any]]:
    return rng.sample(group, min(n, len(group)))


def set_hash(pairs: Iterable[CalibrationPair]) -> str:
    """sha256 of the rules' version and the pairs' canonical JSON: the name of a calibration set."""
    body = json.dumps([RULES_VERSION, [asdict(p) for p in pairs]], sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(body.encode("utf-8")).hexdigest()


def default_pairs(seed: int = DEFAULT_SEED) -> list[CalibrationPair]:
    """``build_pairs`` over the LoCoMo and LongMemEval files found on this machine
    (``memlab.eval.paths``); MemlabError naming what is missing when neither is there."""
    from .paths import longmemeval_path, locomo_path

    locomo, lme = locomo_path(), longmemeval_path()
    if locomo is None or lme is None:
        missing = [name for name, path in (("LoCoMo (locomo10.json; $MEMLAB_LOCOMO)", locomo),
                                          ("LongMemEval (longmemeval_oracle.dev.json; $MEMLAB_LONGMEMEVAL)", lme))
                   if path is None]
        raise MemlabError(f"the judge calibration set is built from LoCoMo and LongMemEval; not found: "
                          f"{', '.join(missing)}")
    return build_pairs(locomo, lme, seed=seed)
