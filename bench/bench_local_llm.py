"""A real model offline: every LLM step of the layered memory run by llama.cpp, per step.

Replays the shipped dialogues (datasets/*.json) into

- ``layered`` with the LLM for summaries, extraction (every ``--extract-every`` turns, 5 by
  default: one call per turn is the strategy's default and too slow for a CPU run), relevance
  filtering and multi-query expansion (``MultiQueryExpander(n=2)`` in its retrieve step), and
- ``layered_lifecycle`` with the LLM for merging, abstraction, gists and summaries,

once with ``LocalLLM`` (default: memlab's default model, Qwen2.5-Coder-1.5B-Instruct, on the CPU;
``--model NAME`` another registered one, e.g. ``gemma-3-270m``) and once with the
deterministic ``OfflineLLM`` stand-in, and prints per LLM task: calls, prompt and completion
tokens, seconds, format errors (answers the step could not read; it kept going), then
recall with 95% cluster-bootstrap intervals for both models, then raw speed: answers/s and
tokens/s on short answer prompts. The device that ran is printed first, so a GPU run reads
beside a CPU one:

    python bench/bench_local_llm.py --files distractors.json      # CPU, the default model
    python bench/bench_local_llm.py --model gemma-3-270m          # a registered model by name
    python bench/bench_local_llm.py --files travel_advisor.json   # one dialogue file
    python bench/bench_local_llm.py --model big.gguf --n-gpu-layers -1   # a GPU build

The last line is one JSON object with every figure.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from _common import ROOT

from memlab.eval import load_any, replay, summarize
from memlab.eval.dataset import Dataset
from memlab.llm import LLM
from memlab.offline import OfflineLLM
from memlab.llm.base import Completion
from memlab.llm.local import LocalLLM
from memlab.llm.prompts import task_of
from memlab.memories.layered import LayeredMemory
from memlab.retrieval.llm_expansion import MultiQueryExpander
from memlab.strategies import get

#: per (model label, task): calls, prompt/completion tokens, seconds, cached calls
STATS: dict[tuple[str, str], dict[str, float]] = defaultdict(lambda: defaultdict(float))
#: every clone a replay made, per (model label, strategy), to read their per-step usage
CLONES: dict[tuple[str, str], list[Any]] = defaultdict(list)


class Timed(LLM):
    """Times each call of ``llm`` by memlab task (the prompt's ``memlab-task:`` marker)."""

    def __init__(self, llm: LLM, label: str):
        self.llm = llm
        self.label = label

    def accepts_schema(self) -> bool:
        # the wrapped client's structured output, so the steps send it their JSON schemas
        return self.llm.accepts_schema()

    def _complete(self, messages: list[dict[str, Any]], **params: Any) -> Completion:
        start = time.perf_counter()
        c = self.llm.complete(messages, **params)
        s = STATS[(self.label, task_of(messages) or "answer")]
        s["calls"] += 1
        s["prompt_tokens"] += c.prompt_tokens
        s["completion_tokens"] += c.completion_tokens
        s["seconds"] += time.perf_counter() - start
        s["cached_calls"] += int(c.cached)
        return c


class Tracked(LayeredMemory):
    """LayeredMemory that remembers its clones (replay clones one per dialogue)."""

    def clone(self, scope: str | None = None) -> Any:
        copy = super().clone(scope)
        CLONES[(copy.llm.label, copy._bench_name)].append(copy)
        return copy

    _bench_name = ""


def tracked(name: str, llm: Timed, **params: Any) -> Tracked:
    base = get(name, llm=llm, **params)
    cls = type(f"Tracked_{name}", (Tracked,), {"_bench_name": name})
    return cls(**base.get_params(deep=False))


def step_format_errors(label: str, name: str) -> dict[str, int]:
    out: dict[str, int] = defaultdict(int)
    for clone in CLONES[(label, name)]:
        for step, usage in clone.usage_by_step().items():
            out[step] += usage.get("format_errors", 0)
    return dict(out)


def run_steps(llm: LLM, label: str, dataset: Dataset, extract_every: int) -> dict[str, Any]:
    timed = Timed(llm, label)
    rows = []
    for name, params in (("layered", {"update_step__extract_every": extract_every}), ("layered_lifecycle", {})):
        strategy = tracked(name, timed)
        strategy.set_params(**params)
        if name == "layered":
            strategy.set_params(retrieve_step__expander=MultiQueryExpander(timed, n=2))
        start = time.perf_counter()
        r = replay(strategy, dataset, ks=[1, 5], k_max=5, label=name)
        r["seconds"] = time.perf_counter() - start
        rows.append(r)
    import pandas as pd

    return {"rows": pd.concat(rows, ignore_index=True)}


def speed(llm: LocalLLM, dataset: Dataset, n: int) -> dict[str, float]:
    """Answers/s and tokens/s on ``n`` short answer prompts: a probe's gold turns, then its question."""
    prompts = []
    for d in dataset.dialogues:
        turns = {t.id: t for s in d.sessions for t in s.turns}
        for p in d.probes:
            gold = [turns[i] for i in p.evidence if i in turns]
            if gold:
                msgs = [{"role": "user", "content": f"{t.speaker}: {t.text}"} for t in gold]
                prompts.append(msgs + [{"role": "user", "content": f"Answer in a short phrase.\n\nQuestion: {p.query}"}])
    prompts = prompts[:n]
    llm.reset_usage()
    start = time.perf_counter()
    for m in prompts:
        llm.complete(m, max_tokens=24)
    seconds = time.perf_counter() - start
    u = llm.usage
    return {"answers": len(prompts), "seconds": seconds, "answers_per_s": len(prompts) / seconds,
            "prompt_tokens": u.prompt_tokens, "completion_tokens": u.completion_tokens,
            "tokens_per_s": u.total_tokens / seconds, "completion_tokens_per_s": u.completion_tokens / seconds}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", default=str(ROOT / "datasets"), help="folder of native dataset files")
    ap.add_argument("--files", default=None, help="comma-separated file names in --datasets (default: all)")
    ap.add_argument("--model", default=None,
                    help="a registered model name or a GGUF file (default: memlab's default local model)")
    ap.add_argument("--n-threads", type=int, default=None)
    ap.add_argument("--n-gpu-layers", type=int, default=0)
    ap.add_argument("--n-ctx", type=int, default=8192)
    ap.add_argument("--max-tokens", type=int, default=128, help="cap of each answer unless a step sets its own")
    ap.add_argument("--speed-answers", type=int, default=12, help="answer prompts timed for answers/s")
    ap.add_argument("--extract-every", type=int, default=5,
                    help="layered: extract facts every N turns (1: every turn, the strategy's default)")
    ap.add_argument("--skip-steps", action="store_true", help="only load time and answers/s")
    args = ap.parse_args()

    from memlab.llm.models import MODELS

    where = {"model": args.model} if args.model in MODELS else {"model_path": args.model}
    llm = LocalLLM(**where, n_threads=args.n_threads, n_gpu_layers=args.n_gpu_layers,
                   n_ctx=args.n_ctx, max_tokens=args.max_tokens)
    llm.load()
    figures: dict[str, Any] = {"device": llm.device(), "model": llm.model_id(), "n_threads": args.n_threads,
                               "n_gpu_layers": args.n_gpu_layers, "max_tokens": args.max_tokens, "extract_every": args.extract_every, "load_seconds": round(llm.load_seconds or 0, 3)}
    print(f"device: {figures['device']}; model {figures['model']}; loaded in {figures['load_seconds']} s")
    if args.files:
        files = [Path(args.datasets) / f for f in args.files.split(",")]
        dialogues = [d for f in files for d in load_any(str(f)).dialogues]
        dataset = Dataset(name="+".join(f.stem for f in files), dialogues=dialogues)
    else:
        dataset = load_any(args.datasets)
    figures["dataset"] = {"name": dataset.name, "dialogues": len(dataset.dialogues), "probes": dataset.n_probes}
    print(f"dataset: {dataset.name}, {len(dataset.dialogues)} dialogues, {dataset.n_probes} probes")

    if not args.skip_steps:
        results = {label: run_steps(model, label, dataset, args.extract_every)["rows"]
                   for label, model in (("local", llm), ("offline", OfflineLLM()))}
        print("\nper LLM task (calls, tokens, seconds):")
        print(f"{'model':<8} {'task':<10} {'calls':>6} {'prompt_tok':>10} {'compl_tok':>9} {'seconds':>8} {'s/call':>7}")
        tasks = []
        for (label, task), s in sorted(STATS.items()):
            tasks.append({"model": label, "task": task, **{k: round(v, 3) for k, v in s.items()}})
            print(f"{label:<8} {task:<10} {int(s['calls']):>6} {int(s['prompt_tokens']):>10} "
                  f"{int(s['completion_tokens']):>9} {s['seconds']:>8.1f} {s['seconds'] / max(s['calls'], 1):>7.2f}")
        figures["tasks"] = tasks
        print("\nformat errors per step (answers the step could not read; it kept going):")
        figures["format_errors"] = {}
        for label in ("local", "offline"):
            for name in ("layered", "layered_lifecycle"):
                errs = step_format_errors(label, name)
                figures["format_errors"][f"{label}/{name}"] = errs
                print(f"  {label:<8} {name:<18} {errs}")
        print("\nrecall (95% cluster-bootstrap CI, dialogues resampled):")
        figures["recall"] = []
        for label, rows in results.items():
            table = summarize(rows, by=["strategy"], metrics=["recall@5", "hit_rate@5", "context_recall"], ci=True)
            for rec in table.to_dict("records"):
                entry = {"model": label, "strategy": rec["strategy"], "n_scored": int(rec["n_scored"]),
                         "n_failed": int(rec.get("n_failed", 0)),
                         "llm_format_errors": int(rec.get("llm_format_errors", 0)),
                         "seconds": round(float(rows.loc[rows["strategy"] == rec["strategy"], "seconds"].iloc[0]), 1)}
                for m in ("recall@5", "context_recall"):
                    entry[m] = [round(rec[m], 4), round(rec[f"{m}_ci_low"], 4), round(rec[f"{m}_ci_high"], 4)]
                figures["recall"].append(entry)
                print(f"  {label:<8} {rec['strategy']:<18} recall@5 {entry['recall@5'][0]:.3f} "
                      f"[{entry['recall@5'][1]:.3f}, {entry['recall@5'][2]:.3f}]  context_recall "
                      f"{entry['context_recall'][0]:.3f} [{entry['context_recall'][1]:.3f}, "
                      f"{entry['context_recall'][2]:.3f}]  failed {entry['n_failed']}  "
                      f"format errors {entry['llm_format_errors']}  {entry['seconds']} s")

    s = speed(llm, dataset, args.speed_answers)
    figures["speed"] = {k: round(v, 3) if isinstance(v, float) else v for k, v in s.items()}
    print(f"\nspeed ({figures['device']}): {s['answers']} answers in {s['seconds']:.1f} s = "
          f"{s['answers_per_s']:.2f} answers/s; {s['tokens_per_s']:.0f} tokens/s "
          f"(prompt + completion), {s['completion_tokens_per_s']:.1f} completion tokens/s")
    print(json.dumps(figures))
    return 0


if __name__ == "__main__":
    sys.exit(main())
