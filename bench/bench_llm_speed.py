"""How fast the local model runs on this machine: prompt tokens/s, generated tokens/s, and what the
prompt cache saves on judge prompts.

- **prompt tokens/s**: ``--prompts`` judge prompts (calibration pairs, ``memlab.eval.calibration``)
  tokenized under the model's chat template and evaluated whole, each from an empty context;
- **generated tokens/s**: ``--generate`` tokens decoded one by one (greedy) after a prompt;
- **prompt cache**: the same ``--pairs`` calibration pairs judged twice, once with every prompt
  evaluated whole (the kept state reset before each call) and once with the kept prefix reused
  (the judge's instructions evaluated once, in whole 64-token batches, then only what differs);
  the ratio is fresh / prefix in seconds, beside the tokens llama.cpp evaluated each way and
  whether every label agreed;
- ``--calibrate``: also the full calibration (224 pairs), its figures and its time.

    python bench/bench_llm_speed.py                           # the default model (Qwen2.5-Coder-1.5B)
    python bench/bench_llm_speed.py --model qwen2.5-coder-0.5b --pairs 16
    python bench/bench_llm_speed.py --record bench/results/llm_speed.json   # with provenance

Threads: ``--n-threads`` (default: LocalLLM's choice, the CPUs other work leaves free); the
figures are those of this machine at that moment: a busy 2-core machine halves them or worse.
The last line is one JSON object with every figure.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

from _common import ROOT

from memlab.eval import calibration as cal

from memlab.eval import calibration_set as cs
from memlab.eval.answers import LLMJudge
from memlab.eval.paths import locomo_path, longmemeval_path
from memlab.llm.local import LocalLLM
from memlab.llm.models import DEFAULT_MODEL, MODELS


class CountEval:
    """Counts the tokens llama.cpp evaluates and the seconds it takes (wraps ``Llama.eval``)."""

    def __init__(self, llama: Any):
        self.llama, self.tokens, self.seconds = llama, 0, 0.0
        self._eval = llama.eval

        def counted(tokens: Any) -> None:
            start = time.perf_counter()
            self._eval(tokens)
            self.seconds += time.perf_counter() - start
            self.tokens += len(tokens)

        llama.eval = counted

    def close(self) -> None:
        self.llama.eval = self._eval


def _llm(args: argparse.Namespace, **kw: Any) -> LocalLLM:
    where = {"model": args.model} if args.model in MODELS else {"model_path": args.model}
    return LocalLLM(**where, n_threads=args.n_threads, n_gpu_layers=args.n_gpu_layers, n_ctx=args.n_ctx, **kw)


def raw_speed(llm: LocalLLM, pairs: list[cs.CalibrationPair], n_prompts: int, n_generate: int) -> dict[str, Any]:
    """Prompt tokens/s over whole judge prompts, generated tokens/s after one of them."""
    llama = llm.load()
    judge = LLMJudge(llm)
    prompts = []
    for p in pairs[:n_prompts]:
        text = judge.prompts.render(p.question, p.gold, p.prediction, p.category, p.id)
        prompts.append(_chat_tokens(llm, llama, [{"role": "user", "content": text}]))
    tokens = seconds = 0.0
    for toks in prompts:
        llama.reset()
        start = time.perf_counter()
        llama.eval(toks)
        seconds += time.perf_counter() - start
        tokens += len(toks)
    llama.reset()
    llama.eval(prompts[0])
    generated, start = 0, time.perf_counter()
    for _ in range(n_generate):  # greedy, one token at a time, as an answer is written
        token = llama.sample(temp=0.0)
        llama.eval([token])
        generated += 1
    gen_seconds = time.perf_counter() - start
    llama.reset()
    return {"prompts": len(prompts), "prompt_tokens": int(tokens), "prompt_seconds": round(seconds, 3),
            "prompt_tokens_per_s": round(tokens / seconds, 1), "generated_tokens": generated,
            "generate_seconds": round(gen_seconds, 3), "generated_tokens_per_s": round(generated / gen_seconds, 1)}


def _chat_tokens(llm: LocalLLM, llama: Any, messages: list[dict[str, str]]) -> list[int]:
    """The prompt's tokens: under chatml for the chatml models (as create_chat_completion builds
    them), else the messages' text (a speed figure needs the length, not the template)."""
    from llama_cpp import llama_chat_format

    if llm.resolved_chat_format() == "chatml":
        text = llama_chat_format.format_chatml(messages).prompt
    else:
        text = "\n".join(m["content"] for m in messages)
    return llama.tokenize(text.encode("utf-8"), add_bos=False, special=True)


def cache_effect(args: argparse.Namespace, pairs: list[cs.CalibrationPair]) -> dict[str, Any]:
    """The same pairs judged with every prompt evaluated whole (``fresh``: the kept state reset
    before each call) and with the kept prefix reused (``prefix``): seconds, evaluated tokens,
    and whether every label agreed (it must: reused KV entries are whole aligned batches)."""
    out: dict[str, Any] = {"pairs": len(pairs)}
    labels = {}
    for mode in ("fresh", "prefix"):
        llm = _llm(args, prompt_cache="prefix", kv_slot=f"bench-{mode}")
        llama = llm.load()
        counter = CountEval(llama)
        judge = LLMJudge(llm)
        result = []
        start = time.perf_counter()
        for p in pairs:
            if mode == "fresh":
                llama.reset()
            result.append(judge.judge(p.question, p.gold, p.prediction, category=p.category, probe_id=p.id))
        seconds = time.perf_counter() - start
        counter.close()
        labels[mode] = [c.text for _, c in result]
        out[mode] = {"seconds": round(seconds, 2), "seconds_per_pair": round(seconds / len(pairs), 3),
                     "prompt_tokens": sum(c.prompt_tokens for _, c in result), "evaluated_tokens": counter.tokens}
        llm.close()
    out["ratio_fresh_over_prefix"] = round(out["fresh"]["seconds"] / out["prefix"]["seconds"], 2)
    out["evaluated_ratio"] = round(out["fresh"]["evaluated_tokens"] / out["prefix"]["evaluated_tokens"], 2)
    out["same_labels"] = labels["fresh"] == labels["prefix"]
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default=DEFAULT_MODEL, help=f"a model name ({', '.join(MODELS)}) or a GGUF file")
    ap.add_argument("--n-threads", type=int, default=None)
    ap.add_argument("--n-gpu-layers", type=int, default=None)
    ap.add_argument("--n-ctx", type=int, default=4096)
    ap.add_argument("--prompts", type=int, default=8, help="judge prompts timed for prompt tokens/s")
    ap.add_argument("--generate", type=int, default=32, help="tokens generated for generated tokens/s")
    ap.add_argument("--pairs", type=int, default=24, help="calibration pairs judged with and without the cache")
    ap.add_argument("--calibrate", action="store_true", help="also run the full judge calibration (minutes)")
    ap.add_argument("--record", default=None, help="write the figures and the run's provenance to this JSON file")
    args = ap.parse_args()

    pairs = cs.default_pairs()
    llm = _llm(args)
    llm.load()
    figures: dict[str, Any] = {"model": llm.model_id(), "model_sha256": llm.model_sha256(), "device": llm.device(),
                               "n_threads": llm.resolved_threads(), "load_seconds": round(llm.load_seconds or 0, 2)}
    print(f"model {figures['model']} on {figures['device']}, {figures['n_threads']} thread(s), "
          f"loaded in {figures['load_seconds']} s")
    figures["speed"] = s = raw_speed(llm, pairs, args.prompts, args.generate)
    print(f"prompt: {s['prompt_tokens']} tokens in {s['prompt_seconds']} s = {s['prompt_tokens_per_s']} tokens/s; "
          f"generated: {s['generated_tokens']} tokens in {s['generate_seconds']} s = "
          f"{s['generated_tokens_per_s']} tokens/s")
    llm.close()
    figures["prompt_cache"] = c = cache_effect(args, pairs[:args.pairs])
    print(f"prompt cache on {c['pairs']} judge pairs: fresh {c['fresh']['seconds']} s "
          f"({c['fresh']['evaluated_tokens']} tokens evaluated), prefix {c['prefix']['seconds']} s "
          f"({c['prefix']['evaluated_tokens']} tokens): {c['ratio_fresh_over_prefix']}x faster, "
          f"{c['evaluated_ratio']}x fewer tokens; same labels: {c['same_labels']}")
    if args.calibrate:
        judge_llm = _llm(args, kv_slot="bench-calibration")
        result = cal.calibrate(LLMJudge(judge_llm), pairs, use_cache=False)
        figures["calibration"] = cal.record(result)
        print(cal.summary_line(result) + f"; {result['seconds']} s ({result['seconds_per_pair']} s per pair)")
    if args.record:
        from memlab.atomic import atomic_write_text
        from memlab.eval.provenance import run_provenance

        figures["provenance"] = run_provenance(data=[p for p in (locomo_path(), longmemeval_path()) if p])
        atomic_write_text(args.record, json.dumps(figures, indent=1) + "\n")
    print(json.dumps(figures))
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    sys.exit(main())
