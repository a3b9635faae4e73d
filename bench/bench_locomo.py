"""LoCoMo retrieval with the paper's protocol, for every built-in retrieval strategy.

    python bench/bench_locomo.py [--strategies bm25,hybrid] [--embedder minilm]

Pool = one conversation, unit = one dialogue turn indexed as '<speaker> said, "<text>"',
query = the raw question, recall@k = fraction of a question's evidence turns in the top k.
Prints recall@5/10/25/50, hit_rate@5, relevance_ratio@5 and wall time per strategy.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")

from memlab import strategies  # noqa: E402
from memlab.eval import load_any, replay, summarize  # noqa: E402
from memlab.eval.paths import locomo_path  # noqa: E402

RUNS = [("bm25", {}), ("vector", {"embedder": "hashing"}), ("hybrid", {"embedder": "hashing"}),
        ("bm25_prf", {}), ("vector", {"embedder": "minilm"}), ("hybrid", {"embedder": "minilm"})]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only-offline-lexical", action="store_true", help="skip the MiniLM runs")
    args = parser.parse_args()
    path = locomo_path()
    if path is None:
        print("LoCoMo not found: set MEMLAB_LOCOMO or put it at ../shared/datasets/locomo/locomo10.json")
        return 1
    dataset = load_any(path, "locomo")
    print(f"LoCoMo: {len(dataset.dialogues)} conversations, {dataset.n_turns} turns, {dataset.n_probes} questions")
    print(f"{'strategy':<26}{'recall@5':>9}{'@10':>8}{'@25':>8}{'@50':>8}{'hit@5':>8}{'rel@5':>8}{'seconds':>9}")
    for name, params in RUNS:
        if args.only_offline_lexical and params.get("embedder") == "minilm":
            continue
        label = name + (f"[{params['embedder']}]" if "embedder" in params else "")
        start = time.perf_counter()
        rows = replay(strategies.get(name, **params), dataset, ks=(5, 10, 25, 50), k_max=50, label=label)
        seconds = time.perf_counter() - start
        s = summarize(rows).iloc[0]
        print(f"{label:<26}{100 * s['recall@5']:>9.1f}{100 * s['recall@10']:>8.1f}{100 * s['recall@25']:>8.1f}"
              f"{100 * s['recall@50']:>8.1f}{100 * s['hit_rate@5']:>8.1f}{100 * s['relevance_ratio@5']:>8.1f}"
              f"{seconds:>9.1f}")
        sys.stdout.flush()
    print("reference (REFERENCE.md section 5): BM25 45.8 / 52.8 / - / 69.6; MiniLM 37.7 / 46.6 / - / 69.3; "
          "DRAGON+ (paper) 56.7 / 66.2 / 76.7 / 82.7")
    return 0


if __name__ == "__main__":
    sys.exit(main())
