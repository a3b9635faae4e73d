"""Replay-style BM25 benchmark: N appends, each followed by one query.

memlab's incremental index (BM25Retriever) against rebuilding rank_bm25.BM25Okapi after
every append, which is what a naive replay does. rank_bm25 is stopped after a time
budget and its total is extrapolated from a least-squares fit of step time against
corpus size (each rebuild is linear in the corpus, so the total is quadratic); the
output says so. Texts are LoCoMo turns (dialogue order, cycled with fresh ids to reach
N) and queries are LoCoMo questions, when the dataset is present; synthetic otherwise.

    python bench/bench_bm25.py [--n 10000] [--budget 20] [--k 10]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import time
from pathlib import Path

import numpy as np
from rank_bm25 import BM25Okapi

from memlab.records import MemoryRecord
from memlab.retrieval.bm25 import BM25Retriever
from memlab.retrieval.tokenize import Tokenizer

LOCOMO = Path(__file__).resolve().parents[2] / "shared" / "datasets" / "locomo" / "locomo10.json"


def load_texts(n: int) -> tuple[list[str], list[str], str]:
    if LOCOMO.exists():
        data = json.loads(LOCOMO.read_text(encoding="utf-8"))
        turns, questions = [], []
        for sample in data:
            conv = sample["conversation"]
            sessions = sorted((k for k in conv if k.startswith("session_") and k.split("_")[1].isdigit()
                               and isinstance(conv[k], list)), key=lambda k: int(k.split("_")[1]))
            for key in sessions:
                turns += [f'{t["speaker"]} said, "{t["text"]}"' for t in conv[key]]
            questions += [str(q["question"]) for q in sample["qa"]]
        source = f"LoCoMo ({len(turns)} turns cycled, {len(questions)} questions cycled)"
    else:
        rng = random.Random(0)
        vocab = [f"w{i}" for i in range(5000)]
        turns = [" ".join(rng.choices(vocab, k=rng.randint(5, 30))) for _ in range(n)]
        questions = [" ".join(rng.choices(vocab, k=8)) for _ in range(n)]
        source = "synthetic (LoCoMo not found)"
    texts = [turns[i % len(turns)] for i in range(n)]
    queries = [questions[i % len(questions)] for i in range(n)]
    return texts, queries, source


def run_memlab(texts: list[str], queries: list[str], k: int) -> tuple[float, float, list]:
    retriever = BM25Retriever()
    checkpoints = []
    cpu = time.process_time()
    start = time.perf_counter()
    for i, (text, query) in enumerate(zip(texts, queries)):
        retriever.add([MemoryRecord("user", text, id=str(i), timestamp=float(i))])
        hits = retriever.search(query, k)
        if i % 500 == 499:
            checkpoints.append((i, [(h.id, h.score) for h in hits]))
    return time.perf_counter() - start, time.process_time() - cpu, checkpoints


def run_rank_bm25(texts: list[str], queries: list[str], k: int, budget: float):
    tokenize = Tokenizer()
    corpus: list[list[str]] = []
    step_times: list[float] = []
    tops: dict[int, list[tuple[str, float]]] = {}
    start = time.perf_counter()
    for i, (text, query) in enumerate(zip(texts, queries)):
        t0 = time.perf_counter()
        corpus.append(tokenize(text))
        scores = BM25Okapi(corpus).get_scores(tokenize(query))
        top = np.argsort(-scores, kind="stable")[:k]
        step_times.append(time.perf_counter() - t0)
        if i % 500 == 499:
            tops[i] = [(str(j), float(scores[j])) for j in top]
        if time.perf_counter() - start > budget:
            break
    return step_times, tops


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10_000)
    parser.add_argument("--budget", type=float, default=20.0, help="seconds for rank_bm25")
    parser.add_argument("--k", type=int, default=10)
    args = parser.parse_args()

    texts, queries, source = load_texts(args.n)
    print(f"data: {source}; {args.n} appends, each followed by one top-{args.k} query")
    mem_total, mem_cpu, checkpoints = run_memlab(texts, queries, args.k)
    steps, tops = run_rank_bm25(texts, queries, args.k, args.budget)

    done = len(steps)
    measured = sum(steps)
    if done < args.n:
        # step time ~ a + b * corpus size: fit on the measured steps, sum the rest
        x = np.arange(1, done + 1, dtype=float)
        b, a = np.polyfit(x, np.asarray(steps), 1)
        rest = np.arange(done + 1, args.n + 1, dtype=float)
        rank_total = measured + float(np.sum(a + b * rest))
        rank_note = f"stopped after {done} steps ({measured:.1f} s); total EXTRAPOLATED (linear fit per step)"
    else:
        rank_total = measured
        rank_note = "ran to completion"

    # parity where both ran: same top-k scores (ids may swap only among exact ties)
    diffs = []
    for i, mem_top in checkpoints:
        if i in tops:
            a_scores = [s for _, s in mem_top]
            b_scores = [s for _, s in tops[i] if s != 0][:len(a_scores)]
            n = min(len(a_scores), len(b_scores))
            diffs.append(max((abs(x - y) for x, y in zip(a_scores[:n], b_scores[:n])), default=0.0))

    print()
    print(f"{'':<26}{'memlab BM25Retriever':>24}{'rank_bm25 rebuild':>24}")
    print(f"{'total for all appends':<26}{mem_total:>22.2f} s{rank_total:>22.1f} s")
    print(f"{'per append+query':<26}{1000 * mem_total / args.n:>21.3f} ms"
          f"{1000 * rank_total / args.n:>21.2f} ms")
    print(f"{'speed-up':<26}{rank_total / mem_total:>23.0f}x")
    print(f"rank_bm25: {rank_note}")
    print(f"top-{args.k} score parity at {len(diffs)} checkpoints: max |diff| = "
          f"{max(diffs, default=0.0):.2e}")
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"memlab CPU time {mem_cpu:.2f} s; load average {load:.1f} on {os.cpu_count()} cores "
          f"(wall time grows when other processes compete)")
    print(f"memlab under 2 s: {'yes' if mem_total < 2.0 else 'NO'}")


if __name__ == "__main__":
    main()
