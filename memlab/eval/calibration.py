"""Judge calibration: does an LLM judge tell a right answer from a wrong one?

A judge's label is only worth reading if it says WRONG to wrong answers: a judge that says
CORRECT to everything (the base Gemma 3 270M did) makes every strategy look perfect. Before an
answer-level run, memlab measures the judge on a calibration set built from the data by rule,
never typed by hand (``build_pairs``), and refuses a judge that fails (``gate``).

**The set** is ``memlab.eval.calibration_set``'s: question/gold/prediction pairs built from
LoCoMo and LongMemEval by rule, half expected CORRECT, half WRONG, named by ``set_hash``.

**The figures** (``run_calibration``): ``accuracy`` (labels equal to the expected ones; an
unreadable reply counts as wrong), ``label_rate`` (share of CORRECT among all pairs: 0.5 for a
perfect judge, 1.0 for a judge saying CORRECT to everything), ``kappa_f1``: Cohen's kappa
between the judge's labels and LoCoMo's official F1 (``locomo_f1 >= f1_threshold``, 0.5) on the
LoCoMo pairs, with ``f1_accuracy`` (how often that F1 rule gets the expected label there), and
the counts (pairs, per source, per kind, unreadable replies).

**The gate** (``gate``): a judge below ``MIN_ACCURACY`` (0.90) or with a label rate outside
``LABEL_RATE_RANGE`` (0.05-0.95) is refused; ``memlab eval --judge-llm`` exits 2 with the one
line ``gate`` returns unless ``--allow-uncalibrated-judge`` is given (then the override and the
figures are written into the result). ``calibrate`` keeps each result in the memlab cache folder
under a key made of the judge model (a local model's sha256), the prompt set (``name@version``
and its digest) and ``set_hash``, so a CLI run pays for the calibration once.
"""

from __future__ import annotations

import hashlib
import json
import math
import time
from pathlib import Path
from typing import Any

from ..base import MemlabError
from ..llm.prompts import ANY_TYPE, JudgePromptSet
from .answers import LLMJudge, cohen_kappa, llm_identity
from .calibration_set import RULES_VERSION, CalibrationPair, default_pairs, set_hash
from .locomo_score import locomo_f1

#: The gate: a judge needs this calibration accuracy, and a CORRECT-label rate in this range.
MIN_ACCURACY = 0.90
LABEL_RATE_RANGE = (0.05, 0.95)
#: LoCoMo's F1 counted as a CORRECT label at or above this (for ``kappa_f1``).
F1_THRESHOLD = 0.5


# -- running a judge -------------------------------------------------------------------------
def _category_for(prompts: JudgePromptSet, pair: CalibrationPair) -> str | None:
    """The question type a pair's prompt is chosen by: its own when the set has a template for
    it; a set with one template per type (LongMemEval's) reads LoCoMo pairs with its first
    type's (the basic prompt)."""
    if pair.category in prompts.templates or ANY_TYPE in prompts.templates:
        return pair.category
    return prompts.question_types[0] if prompts.question_types else None


def judge_key(judge: LLMJudge) -> str:
    """What names the judge's model in a calibration key: a ``LocalLLM``'s GGUF sha256, chat
    format, whether its output is constrained and how it evaluates prompts; else
    ``llm_identity``'s model name."""
    llm = judge.llm
    if hasattr(llm, "model_sha256"):
        return (f"gguf-sha256:{llm.model_sha256()}:{llm.resolved_chat_format()}:structured={llm.structured_output}"
                f":eval={llm.eval_scheme()}")
    return f"model:{llm_identity(llm)[0]}:{type(llm).__name__}"


def run_calibration(judge: LLMJudge, pairs: list[CalibrationPair], f1_threshold: float = F1_THRESHOLD,
                    progress: Any = None) -> dict[str, Any]:
    """Run ``judge`` over ``pairs``; the figures of the module docstring, the per-pair labels
    (``labels``) and ``seconds``. ``progress``: called with (done, total) after each pair."""
    from ..llm.base import LLMError

    if not pairs:
        raise MemlabError("run_calibration needs at least one calibration pair, got none")
    start = time.perf_counter()
    labels: list[float] = []
    for i, pair in enumerate(pairs, 1):
        try:
            score, _ = judge.judge(pair.question, pair.gold, pair.prediction,
                                   category=_category_for(judge.prompts, pair), probe_id=pair.id)
        except LLMError:
            score = float("nan")
        labels.append(float(score))
        if progress is not None:
            progress(i, len(pairs))
    seconds = time.perf_counter() - start
    return {**figures(pairs, labels, f1_threshold), "seconds": round(seconds, 1),
            "seconds_per_pair": round(seconds / len(pairs), 3)}


def figures(pairs: list[CalibrationPair], labels: list[float], f1_threshold: float = F1_THRESHOLD) -> dict[str, Any]:
    """Accuracy, label rate, kappa against LoCoMo's F1 and the counts for judge ``labels`` of ``pairs``."""
    n = len(pairs)
    readable = [x for x in labels if not _nan(x)]
    right = [(not _nan(x)) and x == p.expected for p, x in zip(pairs, labels)]
    lo = [(p, x) for p, x in zip(pairs, labels) if p.source == "locomo"]
    f1_labels = [float(locomo_f1(p.prediction, p.gold, p.locomo_code) >= f1_threshold) for p, _ in lo]
    by_kind: dict[str, dict[str, Any]] = {}
    for p, ok in zip(pairs, right):
        entry = by_kind.setdefault(p.kind, {"n": 0, "right": 0})
        entry["n"] += 1
        entry["right"] += int(ok)
    return {
        "n_pairs": n,
        "n_locomo": len(lo),
        "n_longmemeval": sum(p.source == "longmemeval" for p in pairs),
        "n_expected_correct": int(sum(p.expected for p in pairs)),
        "accuracy": _round(sum(right) / n),
        "label_rate": _round(sum(x == 1.0 for x in readable) / n),
        "unreadable": n - len(readable),
        "f1_threshold": f1_threshold,
        "kappa_f1": _round(cohen_kappa([x for _, x in lo], f1_labels)) if lo else None,
        "f1_accuracy": _round(sum(f == p.expected for (p, _), f in zip(lo, f1_labels)) / len(lo)) if lo else None,
        "by_kind": {k: {"n": v["n"], "accuracy": _round(v["right"] / v["n"])} for k, v in sorted(by_kind.items())},
        "labels": labels,
    }


def _nan(x: Any) -> bool:
    return x is None or (isinstance(x, float) and math.isnan(x))


def _round(x: float) -> float | None:
    return None if _nan(x) else round(float(x), 4)


# -- the gate and the cache ------------------------------------------------------------------
def gate(result: dict[str, Any], min_accuracy: float = MIN_ACCURACY,
         label_range: tuple[float, float] = LABEL_RATE_RANGE) -> str | None:
    """None when the judge passes; else one line naming the figures that fail and the judge."""
    acc, rate = result.get("accuracy"), result.get("label_rate")
    problems = []
    if acc is None or acc < min_accuracy:
        problems.append(f"accuracy {_fmt(acc)} < {min_accuracy:.2f}")
    if rate is None or not label_range[0] <= rate <= label_range[1]:
        problems.append(f"CORRECT-label rate {_fmt(rate)} outside {label_range[0]:.2f}-{label_range[1]:.2f}")
    if not problems:
        return None
    return (f"judge {result.get('judge_model')} ({result.get('judge_prompt_set')}) failed calibration on "
            f"{result.get('n_pairs')} pairs: {' and '.join(problems)} (kappa vs LoCoMo F1>={result.get('f1_threshold')}: "
            f"{_fmt(result.get('kappa_f1'))}, unreadable {result.get('unreadable')})")


def _fmt(x: Any) -> str:
    return "n/a" if x is None else f"{x:.3f}"


def summary_line(result: dict[str, Any]) -> str:
    """The calibration in one line, for the head of an answer-level report."""
    return (f"judge calibration: {result.get('judge_model')} ({result.get('judge_prompt_set')}): accuracy "
            f"{_fmt(result.get('accuracy'))} on {result.get('n_pairs')} pairs ({result.get('n_locomo')} LoCoMo, "
            f"{result.get('n_longmemeval')} LongMemEval, {result.get('n_expected_correct')} expected CORRECT), "
            f"CORRECT-label rate {_fmt(result.get('label_rate'))}, kappa vs LoCoMo F1>={result.get('f1_threshold')} "
            f"{_fmt(result.get('kappa_f1'))}, unreadable {result.get('unreadable')}"
            f"{' (cached)' if result.get('cached') else ''}")


def cache_dir() -> Path:
    """Where calibration results are kept: ``<memlab cache folder>/judge_calibration``."""
    from ..embeddings.named import default_cache_path

    return Path(default_cache_path()).parent / "judge_calibration"


def calibration_key(judge: LLMJudge, pairs: list[CalibrationPair], f1_threshold: float = F1_THRESHOLD) -> str:
    body = json.dumps([judge_key(judge), judge.prompts.id, judge.prompts.digest, set_hash(pairs), f1_threshold],
                      sort_keys=True)
    return hashlib.sha256(body.encode("utf-8")).hexdigest()


def calibrate(judge: LLMJudge, pairs: list[CalibrationPair] | None = None, use_cache: bool = True,
              f1_threshold: float = F1_THRESHOLD, progress: Any = None) -> dict[str, Any]:
    """The calibration of ``judge`` (``run_calibration``) with what names it: ``judge_model``,
    ``judge_key``, ``judge_prompt_set``, ``set_hash``, ``key``. Read from the cache when this
    key was measured before (``cached``: True), else measured and stored (atomically)."""
    pairs = default_pairs() if pairs is None else pairs
    key = calibration_key(judge, pairs, f1_threshold)
    path = cache_dir() / f"{key}.json"
    if use_cache and path.is_file():
        try:
            with open(path, encoding="utf-8") as f:
                return {**json.load(f), "cached": True}
        except (OSError, json.JSONDecodeError):
            pass  # a damaged entry is measured again
    result = {"judge_model": judge.identity()["judge_model"], "judge_key": judge_key(judge),
              "judge_prompt_set": judge.prompts.id, "set_hash": set_hash(pairs), "rules": RULES_VERSION, "key": key,
              **run_calibration(judge, pairs, f1_threshold, progress), "cached": False}
    if use_cache:
        from ..atomic import atomic_write_text

        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(path, json.dumps(result, indent=1, sort_keys=True))
    return result


def record(result: dict[str, Any]) -> dict[str, Any]:
    """The calibration as a result file records it: the figures and what names them, without
    the per-pair labels."""
    return {k: v for k, v in result.items() if k != "labels"}
