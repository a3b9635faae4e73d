"""Embedding speed: hashing, MiniLM (load and throughput), and a cache hit against a MiniLM miss.

Run: python bench/bench_embeddings.py   (prints figures; not a test)
Texts are LoCoMo dialogue turns when ../shared/datasets/locomo/locomo10.json (next to the
repository, or $MEMLAB_LOCOMO) exists, else synthetic sentences.
"""

from __future__ import annotations

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

from memlab.embeddings.cache import CachedEmbedder
from memlab.embeddings.hashing import HashingEmbedder

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


def main() -> None:
    texts, source = load_texts(5000)
    print(f"texts: {len(texts)} {source}, mean {sum(map(len, texts)) / len(texts):.0f} chars")
    bench_hashing(texts)
    bench_minilm(texts)


if __name__ == "__main__":
    main()
