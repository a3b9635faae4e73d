"""Answer-level figures with a real model offline: answerer, token F1, containment, two judges, loss split.

Runs ``memlab.eval.answer_study.answer_study`` (the computation of notebook 10_answers) on the
slice ``answer_slices`` builds: the first ``--locomo-questions`` scored questions of the first
``--locomo-conversations`` LoCoMo conversation(s) and the first ``--lme-questions`` LongMemEval
oracle dev questions, for each of ``--strategies``, with ``LocalLLM`` (default: the bundled
Gemma 3 270M on the CPU) answering and judging. Prints the device and model, the judge's model
and prompt sets (``name@version``, also in the JSON: ``judge_model``, ``judge_prompt_sets``), then per slice x
strategy: n (answered questions with a gold), answer_f1, answer_containment, judge:lenient,
judge:strict, context_recall (means with 95% cluster-bootstrap intervals, dialogues
resampled: ``memlab.eval.metrics.summarize``) and seconds per answer; the loss split; judge
agreement (Cohen's kappa of lenient vs strict, and of each judge vs token F1 >= 0.5) and the
spread of accuracy across judge prompts; the load average; then one JSON line with every
figure, also written (atomically) to ``--out``.

    python bench/bench_answers.py                                   # the notebook's slice, CPU
    python bench/bench_answers.py --locomo-questions 2 --lme-questions 2 --strategies oracle,bm25_plus
    python bench/bench_answers.py --model big.gguf --n-gpu-layers -1   # a GPU build, a larger GGUF

The record carries the run's ``provenance`` (``memlab.eval.provenance.run_provenance``, with
the sha256 of the LoCoMo and LongMemEval files read) and each table row's ``config_hash``
(``config_hash``: the strategy as the study configures it, the slice's file and selection,
the model and the answer settings).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from typing import Any

from _common import ROOT, machine, table

from memlab.base import MemlabError
from memlab.eval.answer_study import (
    STUDY_METRICS,
    STUDY_STRATEGIES,
    answer_slices,
    answer_study,
    answered_rows,
    loss_rater,
    study_agreement,
    study_configs,
    study_loss_split,
    study_table,
)
from memlab.llm.local import LocalLLM


def _clean(value: Any) -> Any:
    """JSON-safe: NaN -> None, numpy scalars -> Python, rounded floats."""
    if isinstance(value, dict):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):
        value = value.item()
    if isinstance(value, float):
        return None if math.isnan(value) else round(value, 4)
    return value


def _ci(rec: dict[str, Any], m: str) -> str:
    mean, lo, hi = rec[m], rec[f"{m}_ci_low"], rec[f"{m}_ci_high"]
    if isinstance(mean, float) and math.isnan(mean):
        return "-"
    return f"{mean:.3f} [{lo:.2f}, {hi:.2f}]"


#: What the study replays with (``answer_study``'s defaults, which run() does not change).
PROTOCOL = {"ks": [1, 5], "k_max": 5, "budget": 4096}


def slice_files() -> dict[str, Any]:
    """The file each slice of ``answer_slices`` is read from (None: not on this machine)."""
    from memlab.eval.answer_study import LME_SLICE, LOCOMO_SLICE
    from memlab.eval.paths import LONGMEMEVAL_ORACLE, locomo_path, longmemeval_path

    return {LOCOMO_SLICE: locomo_path(), LME_SLICE: longmemeval_path(LONGMEMEVAL_ORACLE)}


def config_hash(strategy: str, slice_name: str, record: dict[str, Any], data_sha256: str) -> str:
    """configuration_hash of one table row: the strategy as ``study_configs`` builds it from
    the record's settings, the slice's file, and the slice (its dataset hash: which dialogues
    and questions), model, answer settings and judge prompt sets as the protocol."""
    from memlab import strategies
    from memlab.eval.configuration import configuration_hash

    params = study_configs(record["embedder"], record["full_context_tokens"], record["layered_tokens"])[strategy]
    protocol = {**PROTOCOL, "slice": slice_name, "slice_dataset_hash": record["slices"][slice_name]["dataset_hash"],
                "model": record["model"], "n_ctx": record["n_ctx"], "n_gpu_layers": record["n_gpu_layers"],
                "answer_tokens": record["answer_tokens"]}
    if record.get("judge_prompt_sets"):  # the judges' words (name@version); runs before them did not say
        protocol["judge_prompt_sets"] = record["judge_prompt_sets"]
    return configuration_hash(strategies.get(strategy, **params), [data_sha256], protocol)


def main() -> int:
    try:
        return run()
    except MemlabError as exc:  # a bad option value or a missing data file: one readable line
        print(f"bench_answers: {exc}", file=sys.stderr)
        return 2


def run() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--locomo-conversations", type=int, default=1)
    ap.add_argument("--locomo-questions", type=int, default=10, help="scored questions per conversation (0: no LoCoMo)")
    ap.add_argument("--lme-questions", type=int, default=10, help="LongMemEval oracle questions (0: none)")
    ap.add_argument("--strategies", default=",".join(STUDY_STRATEGIES), help="comma-separated strategy names")
    ap.add_argument("--model", default=None, help="GGUF file (default: the bundled Gemma 3 270M)")
    ap.add_argument("--n-threads", type=int, default=None)
    ap.add_argument("--n-gpu-layers", type=int, default=0, help="-1: every layer on the GPU (a GPU build)")
    ap.add_argument("--n-ctx", type=int, default=4096)
    ap.add_argument("--answer-tokens", type=int, default=32, help="max tokens of an answer")
    ap.add_argument("--embedder", default="e5", help="dense embedder of hybrid_plus and layered")
    ap.add_argument("--full-context-tokens", type=int, default=1500)
    ap.add_argument("--layered-tokens", type=int, default=512)
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "answers_local.json"))
    args = ap.parse_args()
    strategies = [s.strip() for s in args.strategies.split(",") if s.strip()]
    configs = study_configs(args.embedder, args.full_context_tokens, args.layered_tokens)
    unknown = [s for s in strategies if s not in configs]
    if unknown or not strategies:
        print(f"bench_answers: --strategies: expected names among {','.join(configs)}, got {args.strategies!r}",
              file=sys.stderr)
        return 2

    from memlab.eval.provenance import run_provenance

    from memlab.eval.answer_study import LME_SLICE, LOCOMO_SLICE

    asked = {LOCOMO_SLICE: bool(args.locomo_conversations and args.locomo_questions), LME_SLICE: bool(args.lme_questions)}
    files = {name: f for name, f in slice_files().items() if asked[name] and f is not None}
    wanted = list(files.values())
    provenance = run_provenance(data=wanted)  # before the run: the files answer_slices reads
    started = time.perf_counter()
    load_start = os.getloadavg()[0]
    llm = LocalLLM(model_path=args.model, n_threads=args.n_threads, n_gpu_layers=args.n_gpu_layers, n_ctx=args.n_ctx)
    llm.load()
    figures: dict[str, Any] = {
        "device": llm.device(), "model": llm.model_id(), "load_seconds": llm.load_seconds,
        "n_threads": args.n_threads, "n_gpu_layers": args.n_gpu_layers, "n_ctx": args.n_ctx,
        "answer_tokens": args.answer_tokens, "embedder": args.embedder, "strategies": strategies,
        "full_context_tokens": args.full_context_tokens, "layered_tokens": args.layered_tokens}
    print(f"device: {figures['device']}; model {figures['model']}; loaded in {llm.load_seconds:.1f} s")
    slices = answer_slices(args.locomo_conversations, args.locomo_questions, args.lme_questions)
    figures["slices"] = {name: {"dialogues": len(ds.dialogues), "questions": ds.n_probes, "dataset_hash": ds.hash}
                         for name, ds in slices.items()}
    for name, ds in slices.items():
        print(f"slice {name}: {len(ds.dialogues)} dialogue(s), {ds.n_probes} questions")

    results = answer_study(llm, slices, strategies, configs=configs, answer_tokens=args.answer_tokens)
    answers = answered_rows(results)
    figures["rows"], figures["answers"] = len(results), len(answers)
    figures["failed_rows"] = int(results["error"].notna().sum())
    usage = llm.usage
    figures["llm_calls"], figures["prompt_tokens"], figures["completion_tokens"] = (
        usage.calls, usage.prompt_tokens, usage.completion_tokens)

    # a judge's figures mean something only with its words and its model: both are recorded and printed
    figures["judge_model"] = str(results["judge_model"].iloc[0]) if len(results) else None
    figures["judge_prompt_sets"] = {c[len("judge_prompt_set:"):]: str(results[c].iloc[0])
                                    for c in results.columns if str(c).startswith("judge_prompt_set:")}
    print(f"judge: model {figures['judge_model']}; prompt sets "
          + ", ".join(f"judge:{n} = {i}" for n, i in figures["judge_prompt_sets"].items()))

    summary = study_table(results)
    print(f"\nper slice x strategy ({len(answers)} answers, {figures['failed_rows']} failed rows; "
          f"mean [95% CI, dialogues resampled]):")
    shown = ["answer_f1", "answer_containment", "judge:lenient", "judge:strict", "context_recall"]
    recs = summary.to_dict("records")
    print(table(["slice", "strategy", "n", *shown, "s/answer", "s/judged"],
                [[r["slice"], r["strategy"], int(r["n_scored"]), *(_ci(r, m) for m in shown),
                  r["seconds_per_answer"], r["judge_seconds_per_answer"]] for r in recs]))
    from memlab.eval.provenance import file_sha256

    sha = {name: file_sha256(f) for name, f in files.items() if f is not None}
    figures["table"] = [{"slice": r["slice"], "strategy": r["strategy"], "n": int(r["n_scored"]),
                         **{m: [r[m], r[f"{m}_ci_low"], r[f"{m}_ci_high"]] for m in STUDY_METRICS},
                         "seconds_per_answer": r["seconds_per_answer"],
                         "judge_seconds_per_answer": r["judge_seconds_per_answer"],
                         "config_hash": config_hash(r["strategy"], r["slice"], figures, sha[r["slice"]])}
                        for r in recs]

    rater = loss_rater(results)
    split = study_loss_split(results, rater=rater)
    figures["loss_rater"] = rater
    print("\nloss split (shares of answered questions; rated by "
          + ("the lenient judge, else token F1 >= 0.5):" if rater == "judge" else
             "token F1 >= 0.5: the lenient judge gave every answer the same label):"))
    print(table(list(split.columns), split.values.tolist()))
    figures["loss_split"] = split.to_dict("records")

    agreement = study_agreement(results)
    accuracy, pairs = agreement["accuracy"], agreement["pairs"]
    print("\njudge accuracy over the answered questions (unreadable: replies neither CORRECT nor WRONG):")
    print(table(list(accuracy.columns), accuracy.values.tolist()))
    print("\nagreement (Cohen's kappa; share labelled alike; n labelled by both):")
    print(table(list(pairs.columns), pairs.values.tolist()))
    print(f"\nspread of accuracy across judge prompts: {agreement['spread']:.3f}")
    per = agreement["per_strategy"]
    print(table(list(per.columns), per.values.tolist()))
    figures["judge_accuracy"] = accuracy.to_dict("records")
    figures["judge_pairs"] = pairs.to_dict("records")
    figures["judge_spread"] = agreement["spread"]
    figures["judge_spread_per_strategy"] = per.to_dict("records")

    figures["wall_seconds"] = time.perf_counter() - started
    figures["load_avg_1m_start"], figures["load_avg_1m_end"] = load_start, os.getloadavg()[0]
    figures["machine"] = machine()
    figures["provenance"] = provenance
    print(f"\n{figures['answers']} answers on {figures['device']} in {figures['wall_seconds']:.0f} s wall; "
          f"load average (1 min) {load_start:.2f} at start, {figures['load_avg_1m_end']:.2f} at end "
          f"({figures['machine']['cpus']} CPUs)")
    out = _clean(figures)
    from memlab.atomic import atomic_write_text

    atomic_write_text(args.out, json.dumps(out, indent=1) + "\n")
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
