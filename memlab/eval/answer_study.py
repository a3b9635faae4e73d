"""The answer-level study: strategies answer a fixed slice of LoCoMo and LongMemEval with one LLM.

``answer_slices`` builds the slices: the first ``locomo_conversations`` LoCoMo conversations,
each with ``locomo_questions`` scored questions (adversarial ones left out: they have no gold
answer), and ``lme_questions`` questions of LongMemEval oracle dev in ``lme_categories`` that
have evidence turns (one dialogue per question); ``sample`` says which: the first ones in file
order, or spread evenly over categories (``stratified``).

``answer_study`` replays each slice with each strategy (``STUDY_STRATEGIES`` by default, as
configured by ``study_configs``), has ``llm`` answer every question from the context the
strategy built (``Answerer``, at most ``answer_tokens`` tokens), scores the answers by token F1
and containment (``add_answer_scores``), labels them with every judge prompt (``judge_rows``:
``judge:lenient``, ``judge:strict``) and places each in the loss split (``loss_stage``, read
from ``judge_correct`` = the ``loss_judge`` column, else token F1 >= 0.5; ``memlab.eval.loss``).
It returns the replay's tidy frame, one row per probe, with these columns added:

- ``slice``: the slice's name (first column);
- ``answered``: True where the model produced an answer (the row has a ``prediction``);
- ``loss_stage``: ``correct`` / ``read`` / ``retrieve`` / ``unreachable``, None for a row
  that is unanswered or has no gold;
- ``seconds_per_answer``: wall seconds of the strategy's replay with its answers, over the
  slice's rows (one value per slice x strategy); ``judge_seconds_per_answer`` likewise for
  labelling them with every judge prompt;
- provenance: ``model`` and ``device`` (``llm_identity``), ``judge_model``, ``answer_tokens``,
  ``judge_prompts`` (the prompt names, comma-separated), ``loss_judge`` and
  ``judge_prompt_set`` (``name@version`` of the loss judge's set, the one behind
  ``judge_correct``); ``judge_rows`` adds ``judge_prompt_set:<name>`` per judge column.

The replay adds ``locomo_f1`` (LoCoMo's official score, ``memlab.eval.locomo_score``) beside
``answer_f1`` on the LoCoMo slice; the slice leaves the adversarial (category 5) questions out,
so LoCoMo's category-5 rule never applies in the study.

``study_table``, ``study_loss_split`` and ``study_agreement`` read that frame (answered rows
only) into the tables that the notebook ``10_answers`` and ``bench/bench_answers.py`` print.
``study_loss_split(results, rater=loss_rater(results))`` rates the answers by the judge only
when its labels carry information (``judge_informative``: it gave both labels), else by token
F1 >= 0.5: a small model that calls every answer CORRECT would put every answer in ``correct``.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from ..base import MemlabError
from .answers import Answerer, add_answer_scores, judge_agreement, judge_rows, llm_identity, make_judges
from .dataset import Dataset
from .loss import loss_split, loss_stage
from .metrics import summarize
from .paths import LONGMEMEVAL_ORACLE, locomo_path, longmemeval_path
from .dataset_files import load_any
from .replay import replay

#: The strategies the study compares, in the order tables list them.
STUDY_STRATEGIES = ("oracle", "full_context", "bm25", "bm25_plus", "hybrid_plus", "layered")
#: LongMemEval question types of the slice (answerable from the evidence turns).
LME_CATEGORIES = ("single-session-user", "knowledge-update", "multi-session")
#: The answer scores the study's tables report, with the context's recall beside them.
STUDY_METRICS = ("answer_f1", "answer_containment", "judge:lenient", "judge:strict", "context_recall")
#: The slices' names.
LOCOMO_SLICE, LME_SLICE = "LoCoMo", "LongMemEval oracle"


#: How ``answer_slices`` picks questions: in file order, or spread evenly over categories.
SAMPLES = ("first", "stratified")


def answer_slices(locomo_conversations: int = 1, locomo_questions: int = 10, lme_questions: int = 10,
                  lme_categories: Sequence[str] = LME_CATEGORIES, sample: str = "first") -> dict[str, Dataset]:
    """``{"LoCoMo": ..., "LongMemEval oracle": ...}`` (see the module docstring); a slice asked
    for 0 questions is left out. Raises MemlabError when a needed file is not on this machine.

    ``sample="first"`` takes questions in file order: each conversation's first
    ``locomo_questions`` scored questions, and LongMemEval's first ``lme_questions`` questions
    (the file is grouped by type, so a small slice holds one type). ``sample="stratified"``
    spreads both over categories, deterministically: conversation i takes its
    ``locomo_questions`` questions round-robin over LoCoMo categories 1-4, starting at
    category i mod 4 (each turn of the cycle takes that category's first unused question;
    a category with none left is skipped), and LongMemEval's questions are taken round-robin
    over ``lme_categories`` in file order within each type."""
    if sample not in SAMPLES:
        raise MemlabError(f"answer_slices: sample must be one of {', '.join(SAMPLES)}, got {sample!r}")
    for name, value in (("locomo_conversations", locomo_conversations), ("locomo_questions", locomo_questions),
                        ("lme_questions", lme_questions)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise MemlabError(f"answer_slices: {name} must be an int >= 0, got {value!r}")
    slices: dict[str, Dataset] = {}
    if locomo_conversations and locomo_questions:
        path = locomo_path()
        if path is None:
            raise MemlabError("answer_slices: LoCoMo not found (set MEMLAB_LOCOMO or put locomo10.json in "
                              "../shared/datasets/locomo/); pass locomo_questions=0 to leave it out")
        locomo = load_any(str(path), "locomo")
        scored = [c for c in locomo.categories() if c != "adversarial"]
        if sample == "first":
            slices[LOCOMO_SLICE] = locomo.subset(dialogues=locomo_conversations, categories=scored,
                                                 max_probes=locomo_questions)
        else:
            part = locomo.subset(dialogues=locomo_conversations, categories=scored)
            for i, d in enumerate(part.dialogues):
                order = scored[i % len(scored):] + scored[:i % len(scored)]
                d.probes = _round_robin(d.probes, lambda p: p.category, order, locomo_questions)
            slices[LOCOMO_SLICE] = part
    if lme_questions:
        path = longmemeval_path(LONGMEMEVAL_ORACLE)
        if path is None:
            raise MemlabError(f"answer_slices: LongMemEval {LONGMEMEVAL_ORACLE} not found (set MEMLAB_LONGMEMEVAL "
                              f"or put it in ../shared/datasets/longmemeval/); pass lme_questions=0 to leave it out")
        lme = load_any(str(path), "longmemeval").subset(categories=list(lme_categories))
        answerable = [d for d in lme.dialogues if d.probes and d.probes[0].evidence]
        if sample == "first":
            chosen = [d.id for d in answerable][:lme_questions]
        else:
            chosen = [d.id for d in _round_robin(answerable, lambda d: d.probes[0].category,
                                                 list(lme_categories), lme_questions)]
        slices[LME_SLICE] = lme.subset(dialogues=chosen)
    return slices


def _round_robin(items: Sequence[Any], key: Any, order: Sequence[str], n: int) -> list[Any]:
    """At most ``n`` of ``items``, taken one per category in ``order`` per cycle (each
    category's items in their given order), returned in their given order."""
    queues = {c: [i for i, item in enumerate(items) if key(item) == c] for c in order}
    taken: list[int] = []
    while len(taken) < n and any(queues.values()):
        for c in order:
            if queues[c] and len(taken) < n:
                taken.append(queues[c].pop(0))
    return [items[i] for i in sorted(taken)]


def study_configs(embedder: str = "e5", full_context_tokens: int = 1500,
                  layered_tokens: int = 512, context_tokens: int | None = None) -> dict[str, dict[str, Any]]:
    """Each study strategy's parameters (``memlab.strategies.get(name, **params)``).

    With ``context_tokens`` B every context is matched at B tokens: ``full_context`` keeps the
    last B tokens of the conversation (recency), ``bm25``, ``bm25_plus`` and ``hybrid_plus``
    fill B tokens from their ranked lists, and ``layered`` loads B tokens in all (its short-term
    window first, then long-term memories: its load step's ``token_limit``); ``oracle`` shows
    the evidence turns whatever their length (a ceiling, not a competitor).
    ``full_context_tokens`` and ``layered_tokens`` are then not read. Without it the two set
    those strategies' limits and the retrievers keep their own (2,048 tokens)."""
    if context_tokens is not None:
        if isinstance(context_tokens, bool) or not isinstance(context_tokens, int) or context_tokens < 1:
            raise MemlabError(f"study_configs: context_tokens must be an int >= 1 or None, got {context_tokens!r}")
        b = context_tokens
        return {"oracle": {}, "full_context": {"token_limit": b}, "bm25": {"token_limit": b},
                "bm25_plus": {"token_limit": b}, "hybrid_plus": {"embedders": [embedder], "token_limit": b},
                "layered": {"embedder": embedder, "load_step__token_limit": b}}
    return {"oracle": {}, "full_context": {"token_limit": full_context_tokens}, "bm25": {}, "bm25_plus": {},
            "hybrid_plus": {"embedders": [embedder]},
            "layered": {"embedder": embedder, "load_step__token_limit": layered_tokens}}


def answer_study(llm: Any, slices: Mapping[str, Dataset], strategies: Sequence[str] = STUDY_STRATEGIES, *,
                 judge_llm: Any = None, judge_prompts: Mapping[str, str] | None = None,
                 loss_judge: str = "lenient", configs: Mapping[str, Mapping[str, Any]] | None = None,
                 answer_tokens: int = 32, ks: Sequence[int] = (1, 5), k_max: int = 5,
                 budget: int = 4096) -> pd.DataFrame:
    """Every strategy answers every slice with ``llm``; one row per probe (module docstring).

    ``judge_llm`` labels the answers (default: ``llm``), with ``judge_prompts`` (default
    ``memlab.llm.prompts.JUDGE_PROMPTS``: lenient and strict; anything ``judge_rows`` takes, e.g.
    ``["lenient", "longmemeval"]`` for LongMemEval slices only: a set with one prompt per
    question type raises on a question of another type, as LongMemEval's script does); ``configs`` maps a strategy
    name to its parameters (default ``study_configs()``); ``ks``, ``k_max`` and ``budget``
    (the token budget the ranked lists are retrieved for) go to ``replay``. An LLM call that
    fails for good is a row with ``error`` set (``replay``) or a NaN label (``judge_rows``)."""
    from .. import strategies as registry
    from ..llm.prompts import JUDGE_PROMPTS

    if not isinstance(slices, Mapping) or not slices:
        raise MemlabError(f"answer_study: slices must be a non-empty mapping of name -> Dataset, got {slices!r}")
    for name, ds in slices.items():
        if not isinstance(ds, Dataset):
            raise MemlabError(f"answer_study: slice {name!r} must be a memlab Dataset, got {type(ds).__name__}")
    if isinstance(strategies, str) or not strategies:
        raise MemlabError(f"answer_study: strategies must be a non-empty list of names, got {strategies!r}")
    judge_llm = llm if judge_llm is None else judge_llm
    # each prompt resolved to its named, versioned set once: every row names the set that judged it
    prompts = {name: judge.prompts for name, judge in
               make_judges(judge_llm, JUDGE_PROMPTS if judge_prompts is None else judge_prompts).items()}
    if loss_judge not in prompts:
        raise MemlabError(f"answer_study: loss_judge {loss_judge!r} is not one of the judge prompts {sorted(prompts)}")
    configs = dict(study_configs() if configs is None else configs)
    unknown = [s for s in strategies if s not in configs]
    if unknown:
        raise MemlabError(f"answer_study: no configuration for strategies {unknown}; configured: {sorted(configs)}")
    model, device = llm_identity(llm)
    judge_model, _ = llm_identity(judge_llm)
    answerer = Answerer(llm, max_tokens=answer_tokens)
    parts = []
    for slice_name, ds in slices.items():
        for name in strategies:
            start = time.perf_counter()
            rows = replay(registry.get(name, **configs[name]), ds, ks=list(ks), k_max=k_max, label=name,
                          answerer=answerer, budgets=[budget])
            answering = time.perf_counter() - start
            start = time.perf_counter()
            rows = judge_rows(add_answer_scores(rows), judge_llm, prompts)
            judging = time.perf_counter() - start
            rows["judge_correct"] = rows[f"judge:{loss_judge}"]
            rows.insert(0, "slice", slice_name)
            n = max(len(rows), 1)
            rows["answered"] = rows["prediction"].map(lambda p: isinstance(p, str))
            rows["loss_stage"] = [loss_stage(r) if ok else None
                                  for r, ok in zip(rows.to_dict("records"), rows["answered"])]
            rows["seconds_per_answer"] = answering / n
            rows["judge_seconds_per_answer"] = judging / n
            rows["model"], rows["device"], rows["judge_model"] = model, device, judge_model
            rows["answer_tokens"] = answer_tokens
            rows["judge_prompts"] = ",".join(prompts)
            rows["judge_prompt_set"] = prompts[loss_judge].id
            rows["loss_judge"] = loss_judge
            parts.append(rows)
    return pd.concat(parts, ignore_index=True)


def record_table(record: Mapping[str, Any]) -> pd.DataFrame:
    """A recorded study's table (``bench/bench_answers.py``'s ``table``) for reading: one row per
    slice x strategy, each score as ``"mean [low, high]"`` ("-" where the slice has none),
    context tokens, seconds per answer and per judged answer."""
    scores = [m for m in ("judge:lenient", "judge:longmemeval", "locomo_f1", "answer_f1", "context_recall")
              if any(m in r for r in record["table"])]

    def with_ci(v: Any) -> str:
        return "-" if not v or v[0] is None else f"{v[0]:.2f} [{v[1]:.2f}, {v[2]:.2f}]"

    return pd.DataFrame([{"slice": r["slice"], "strategy": r["strategy"], "n": r["n"],
                          **{m: with_ci(r.get(m)) for m in scores},
                          "context tokens": round(r["context_tokens"]), "s/answer": r["seconds_per_answer"],
                          "s/judged": r["judge_seconds_per_answer"]} for r in record["table"]])


def answered_rows(results: pd.DataFrame) -> pd.DataFrame:
    """The rows of ``answer_study``'s frame where the model produced an answer."""
    return results[results["answered"].astype(bool)]


def _in_study_order(table: pd.DataFrame, results: pd.DataFrame) -> pd.DataFrame:
    """``table`` sorted by (slice, strategy) as they first appear in ``results``."""
    keys = list(dict.fromkeys(zip(results["slice"], results["strategy"])))
    rank = {k: i for i, k in enumerate(keys)}
    order = sorted(range(len(table)), key=lambda i: rank.get((table["slice"].iloc[i], table["strategy"].iloc[i]),
                                                             len(rank)))
    return table.iloc[order].reset_index(drop=True)


def study_table(results: pd.DataFrame, metrics: Sequence[str] = STUDY_METRICS, ci: bool = True) -> pd.DataFrame:
    """Per slice x strategy: ``n_scored`` answered questions with a gold, the mean of each of
    ``metrics`` over them with its 95% cluster-bootstrap interval (``summarize``: dialogues
    resampled, seeded), ``seconds_per_answer``, ``judge_seconds_per_answer``, and who judged:
    ``judge_model`` and ``judge_prompt_set:<name>`` per judge (``name@version``)."""
    table = summarize(answered_rows(results), by=["slice", "strategy"], metrics=list(metrics), ci=ci)
    named = [c for c in results.columns if c == "judge_model" or str(c).startswith("judge_prompt_set:")]
    seconds = results.groupby(["slice", "strategy"])[["seconds_per_answer", "judge_seconds_per_answer",
                                                      *named]].first()
    return _in_study_order(table.merge(seconds.reset_index(), on=["slice", "strategy"]), results)


#: Who says an answer is right for the loss split: the study's ``loss_judge`` (``judge_correct``,
#: token F1 where the judge gave no label) or token F1 alone.
RATERS = ("judge", "token_f1")


def judge_informative(results: pd.DataFrame, judge: str | None = None) -> bool:
    """True when ``judge`` (default: the study's ``loss_judge``) gave the answered rows both
    labels. A judge that labels every answer alike (a small model saying CORRECT to all)
    carries no information about them: its accuracy and a loss split read from it say
    nothing about the answers."""
    answers = answered_rows(results)
    if judge is None:
        judge = str(answers["loss_judge"].iloc[0]) if len(answers) else "lenient"
    column = f"judge:{judge}"
    if column not in answers.columns:
        raise MemlabError(f"judge_informative: no column {column!r}; judges: "
                          f"{[c[len('judge:'):] for c in answers.columns if str(c).startswith('judge:')]}")
    return int(answers[column].dropna().nunique()) >= 2


def loss_rater(results: pd.DataFrame) -> str:
    """``"judge"`` when the study's loss judge is informative (``judge_informative``), else
    ``"token_f1"``."""
    return "judge" if judge_informative(results) else "token_f1"


def rated_rows(results: pd.DataFrame, rater: str = "judge") -> pd.DataFrame:
    """The answered rows as ``loss_split`` should read them: with ``rater="token_f1"`` the
    judge's ``judge_correct`` is left out, so token F1 >= the threshold decides."""
    if rater not in RATERS:
        raise MemlabError(f"rater must be one of {', '.join(RATERS)}, got {rater!r}")
    answers = answered_rows(results)
    return answers.drop(columns=["judge_correct"], errors="ignore") if rater == "token_f1" else answers


def study_loss_split(results: pd.DataFrame, threshold: float = 0.5, rater: str = "judge") -> pd.DataFrame:
    """``loss_split`` of the answered rows per slice x strategy (shares of correct / read /
    retrieve / unreachable, and ``n_answered``), an answer rated by ``rater`` (``rated_rows``)."""
    return _in_study_order(loss_split(rated_rows(results, rater), by=["slice", "strategy"], threshold=threshold),
                           results)


def study_agreement(results: pd.DataFrame, f1_threshold: float = 0.5) -> dict[str, Any]:
    """How far the judges agree on the answered rows: ``accuracy`` and ``pairs`` (``judge_agreement``:
    each judge prompt and ``token_f1>=T`` as raters, Cohen's kappa per pair), ``spread`` =
    max - min accuracy over the judge prompts (not F1), and ``per_strategy``: each strategy's
    mean label per judge prompt with ``spread`` = max - min over them."""
    answers = answered_rows(results)
    accuracy, pairs = judge_agreement(answers, f1_threshold)
    judges = accuracy[~accuracy["judge"].str.startswith("token_f1")]
    columns = [f"judge:{j}" for j in judges["judge"]]
    per_strategy = answers.groupby("strategy", sort=False)[columns].mean()
    per_strategy["spread"] = per_strategy.max(axis=1) - per_strategy.min(axis=1)
    return {"accuracy": accuracy, "pairs": pairs, "spread": float(judges["accuracy"].max() - judges["accuracy"].min()),
            "per_strategy": per_strategy.reset_index()}


__all__ = ["LME_CATEGORIES", "LME_SLICE", "LOCOMO_SLICE", "RATERS", "STUDY_METRICS", "STUDY_STRATEGIES",
           "answer_slices", "answer_study", "answered_rows", "judge_informative", "llm_identity", "loss_rater",
           "rated_rows", "record_table", "study_agreement", "study_configs", "study_loss_split", "study_table"]
