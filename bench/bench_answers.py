"""Answer-level figures with a real model offline: answerer, token F1, containment, two judges, loss split.

Runs ``memlab.eval.answer_study.answer_study`` (the computation of notebook 10_answers) on the
slice ``answer_slices`` builds: the first ``--locomo-questions`` scored questions of the first
``--locomo-conversations`` LoCoMo conversation(s) and the first ``--lme-questions`` LongMemEval
oracle dev questions, for each of ``--strategies``, with ``LocalLLM`` (default: memlab's
default local model, Qwen2.5-Coder-1.5B-Instruct, on the CPU) answering and judging. Prints the device and model, the judge's model
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
    SAMPLES,
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

    params = study_configs(record["embedder"], record["full_context_tokens"], record["layered_tokens"],
                           record.get("context_tokens"))[strategy]
    protocol = {**PROTOCOL, "slice": slice_name, "slice_dataset_hash": record["slices"][slice_name]["dataset_hash"],
                "model": record["model"], "n_ctx": record["n_ctx"], "n_gpu_layers": record["n_gpu_layers"],
                "answer_tokens": record["answer_tokens"]}
    sets = record.get("judge_prompt_sets")
    if sets:  # the judges' words (name@version) of this slice; runs before them did not say
        judges = record["slices"][slice_name].get("judges")
        protocol["judge_prompt_sets"] = {j: sets[j] for j in judges} if judges else sets
    return configuration_hash(strategies.get(strategy, **params), [data_sha256], protocol)


def main() -> int:
    try:
        return run()
    except MemlabError as exc:  # a bad option value or a missing data file: one readable line
        print(f"bench_answers: {exc}", file=sys.stderr)
        return 2


#: The judge prompt sets each slice is labelled with: LoCoMo's answers by the lenient prompt
#: (LoCoMo's J), LongMemEval's also by LongMemEval's own per-type prompts.
SLICE_JUDGES = {"LoCoMo": ("lenient",), "LongMemEval oracle": ("lenient", "longmemeval")}
#: The per-question columns the record keeps (notebook 10 plots answers against recall from them).
ROW_COLUMNS = ("slice", "strategy", "dialogue_id", "probe_id", "category", "answered", "prediction",
               "answer_f1", "locomo_f1", "context_recall", "context_tokens", "answer_prompt_tokens",
               "answer_completion_tokens", "loss_stage")


def calibrated(llm: Any, names: list[str], allow: bool) -> tuple[dict[str, Any], dict[str, Any]]:
    """Each judge prompt set in ``names`` calibrated with ``llm`` (``memlab.eval.calibration``,
    cached) and the gate's verdict: ``({name: record}, {"passed", "override", "refusals"})``.
    Raises MemlabError with the gate's line when a judge fails and ``allow`` is False."""
    from memlab.eval.answers import LLMJudge
    from memlab.eval.calibration import calibrate, gate, record, summary_line

    records, refusals = {}, {}
    for name in names:
        result = calibrate(LLMJudge(llm, prompt_set=name))
        print(summary_line(result))
        records[name] = record(result)
        line = gate(result)
        if line is not None:
            if not allow:
                raise MemlabError(f"{line}; pass --allow-uncalibrated-judge to use it anyway")
            refusals[name] = line
    return records, {"passed": not refusals, "override": bool(refusals), "refusals": refusals}


def run() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--locomo-conversations", type=int, default=10)
    ap.add_argument("--locomo-questions", type=int, default=2, help="scored questions per conversation (0: no LoCoMo)")
    ap.add_argument("--lme-questions", type=int, default=20, help="LongMemEval oracle questions (0: none)")
    ap.add_argument("--sample", default="first", choices=SAMPLES,
                    help="first: questions in file order; stratified: spread evenly over categories")
    ap.add_argument("--strategies", default=",".join(STUDY_STRATEGIES), help="comma-separated strategy names")
    ap.add_argument("--model", default=None, help="a model name (memlab.llm.models; default: memlab's default)")
    ap.add_argument("--model-path", default=None, help="a GGUF file instead of a named model")
    ap.add_argument("--n-threads", type=int, default=None)
    ap.add_argument("--n-gpu-layers", type=int, default=0, help="-1: every layer on the GPU (a GPU build)")
    ap.add_argument("--n-ctx", type=int, default=4096)
    ap.add_argument("--answer-tokens", type=int, default=32, help="max tokens of an answer")
    ap.add_argument("--embedder", default="e5", help="dense embedder of hybrid_plus and layered")
    ap.add_argument("--context-tokens", type=int, default=512,
                    help="every context matched at this many tokens (0: the strategies' own limits, below)")
    ap.add_argument("--full-context-tokens", type=int, default=1500, help="only with --context-tokens 0")
    ap.add_argument("--layered-tokens", type=int, default=512, help="only with --context-tokens 0")
    ap.add_argument("--allow-uncalibrated-judge", action="store_true",
                    help="judge with a model that fails the calibration gate; the record says so")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "answers_local.json"))
    args = ap.parse_args()
    strategies = [s.strip() for s in args.strategies.split(",") if s.strip()]
    if args.context_tokens < 0:
        raise MemlabError(f"--context-tokens: expected an int >= 0, got {args.context_tokens}")
    context_tokens = args.context_tokens or None
    configs = study_configs(args.embedder, args.full_context_tokens, args.layered_tokens, context_tokens)
    unknown = [s for s in strategies if s not in configs]
    if unknown or not strategies:
        print(f"bench_answers: --strategies: expected names among {','.join(configs)}, got {args.strategies!r}",
              file=sys.stderr)
        return 2

    from memlab.eval.answer_study import LME_SLICE, LOCOMO_SLICE
    from memlab.eval.provenance import file_sha256, run_provenance

    asked = {LOCOMO_SLICE: bool(args.locomo_conversations and args.locomo_questions), LME_SLICE: bool(args.lme_questions)}
    files = {name: f for name, f in slice_files().items() if asked[name] and f is not None}
    provenance = run_provenance(data=list(files.values()))  # before the run: the files answer_slices reads
    started = time.perf_counter()
    load_start = os.getloadavg()[0]
    llm = LocalLLM(model=args.model, model_path=args.model_path, n_threads=args.n_threads,
                   n_gpu_layers=args.n_gpu_layers, n_ctx=args.n_ctx)
    llm.load()
    figures: dict[str, Any] = {
        "device": llm.device(), "model": llm.model_id(), "load_seconds": llm.load_seconds,
        "n_threads": args.n_threads, "n_gpu_layers": args.n_gpu_layers, "n_ctx": args.n_ctx,
        "answer_tokens": args.answer_tokens, "embedder": args.embedder, "strategies": strategies,
        "context_tokens": context_tokens, "sample": args.sample,
        "full_context_tokens": args.full_context_tokens, "layered_tokens": args.layered_tokens}
    print(f"device: {figures['device']}; model {figures['model']}; loaded in {llm.load_seconds:.1f} s")
    slices = answer_slices(args.locomo_conversations, args.locomo_questions, args.lme_questions,
                           sample=args.sample)
    figures["slices"] = {name: {"dialogues": len(ds.dialogues), "questions": ds.n_probes, "dataset_hash": ds.hash,
                                "judges": list(SLICE_JUDGES[name])}
                         for name, ds in slices.items()}
    for name, ds in slices.items():
        print(f"slice {name}: {len(ds.dialogues)} dialogue(s), {ds.n_probes} questions")

    # the gate comes first: an answer-level table is only worth reading with a judge that tells
    # right from wrong (memlab.eval.calibration), so its figures head the record
    judges = list(dict.fromkeys(j for name in slices for j in SLICE_JUDGES[name]))
    calibration_start = time.perf_counter()
    figures["judge_calibration"], figures["judge_gate"] = calibrated(llm, judges, args.allow_uncalibrated_judge)
    figures["calibration_seconds"] = time.perf_counter() - calibration_start

    parts = [answer_study(llm, {name: ds}, strategies, configs=configs, answer_tokens=args.answer_tokens,
                          judge_prompts=list(SLICE_JUDGES[name]), loss_judge="lenient")
             for name, ds in slices.items()]
    import pandas as pd

    results = pd.concat(parts, ignore_index=True)
    answers = answered_rows(results)
    figures["rows"], figures["answers"] = len(results), len(answers)
    figures["failed_rows"] = int(results["error"].notna().sum())
    usage = llm.usage
    figures["llm_calls"], figures["prompt_tokens"], figures["completion_tokens"] = (
        usage.calls, usage.prompt_tokens, usage.completion_tokens)
    figures["judge_model"] = str(results["judge_model"].iloc[0]) if len(results) else None
    figures["judge_prompt_sets"] = {c[len("judge_prompt_set:"):]: str(results[c].dropna().iloc[0])
                                    for c in results.columns if str(c).startswith("judge_prompt_set:")}
    print(f"judge: model {figures['judge_model']}; prompt sets "
          + ", ".join(f"judge:{n} = {i}" for n, i in figures["judge_prompt_sets"].items()))

    sha = {name: file_sha256(f) for name, f in files.items()}
    figures["table"] = []
    for name, part in zip(slices, parts):
        metrics = [f"judge:{j}" for j in SLICE_JUDGES[name]] + (
            ["locomo_f1"] if name == LOCOMO_SLICE else []) + ["answer_f1", "context_recall"]
        summary = study_table(part, metrics)
        tokens = answered_rows(part).groupby("strategy")[["context_tokens", "answer_prompt_tokens"]].mean()
        print(f"\n{name} ({int(answered_rows(part).shape[0])} answers; mean [95% CI, dialogues resampled]):")
        recs = summary.to_dict("records")
        print(table(["strategy", "n", *metrics, "ctx tok", "s/answer", "s/judged"],
                    [[r["strategy"], int(r["n_scored"]), *(_ci(r, m) for m in metrics),
                      f"{tokens.loc[r['strategy'], 'context_tokens']:.0f}", r["seconds_per_answer"],
                      r["judge_seconds_per_answer"]] for r in recs]))
        for r in recs:
            figures["table"].append({
                "slice": name, "strategy": r["strategy"], "n": int(r["n_scored"]),
                **{m: [r[m], r[f"{m}_ci_low"], r[f"{m}_ci_high"]] for m in metrics},
                "context_tokens": float(tokens.loc[r["strategy"], "context_tokens"]),
                "answer_prompt_tokens": float(tokens.loc[r["strategy"], "answer_prompt_tokens"]),
                "seconds_per_answer": r["seconds_per_answer"],
                "judge_seconds_per_answer": r["judge_seconds_per_answer"],
                "config_hash": config_hash(r["strategy"], name, figures, sha[name])})

    rater = loss_rater(results)
    split = study_loss_split(results, rater=rater)
    figures["loss_rater"] = rater
    print("\nloss split (shares of answered questions; rated by "
          + ("the lenient judge, which passed the gate):" if rater == "judge" else
             "token F1 >= 0.5: the lenient judge gave every answer the same label):"))
    print(table(list(split.columns), split.values.tolist()))
    figures["loss_split"] = split.to_dict("records")

    agreement = study_agreement(results)
    accuracy, pairs = agreement["accuracy"], agreement["pairs"]
    print("\nraters over the answered questions (share labelled correct):")
    print(table(list(accuracy.columns), accuracy.values.tolist()))
    print("\nagreement (Cohen's kappa; share labelled alike; n labelled by both):")
    print(table(list(pairs.columns), pairs.values.tolist()))
    figures["judge_accuracy"] = accuracy.to_dict("records")
    figures["judge_pairs"] = pairs.to_dict("records")
    figures["judge_spread"] = agreement["spread"]
    figures["judge_spread_per_strategy"] = agreement["per_strategy"].to_dict("records")
    judge_columns = [c for c in results.columns if str(c).startswith("judge:")]
    figures["per_question"] = results[[c for c in ROW_COLUMNS if c in results.columns] + judge_columns].to_dict("records")

    figures["wall_seconds"] = time.perf_counter() - started
    figures["load_avg_1m_start"], figures["load_avg_1m_end"] = load_start, os.getloadavg()[0]
    figures["machine"] = machine()
    figures["provenance"] = provenance
    print(f"\n{figures['answers']} answers on {figures['device']} in {figures['wall_seconds']:.0f} s wall "
          f"({figures['calibration_seconds']:.0f} s of it calibrating the judge); load average (1 min) "
          f"{load_start:.2f} at start, {figures['load_avg_1m_end']:.2f} at end ({figures['machine']['cpus']} CPUs)")
    out = _clean(figures)
    from memlab.atomic import atomic_write_text

    atomic_write_text(args.out, json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
