"""Full LoCoMo replay (10 conversations, 1,986 probes) for every built-in, beside the naive stack.

    python bench/replay.py [--strategies bm25,hybrid] [--naive / --no-naive] [--minilm]

Each strategy runs ``memlab.eval.replay`` over the whole of LoCoMo in a fresh process
(so its peak memory is its own), once untimed on one conversation first (one-time costs:
token tables, lazy imports, cache files opened). Printed: wall and CPU seconds, probes
per second, peak resident memory. ``--minilm`` adds vector and hybrid with MiniLM, whose
embeddings come from the embedding cache (warmed by a first untimed replay when cold).

The naive stack is what a user would write from the named packages, in the same replay
order (turns observed one by one, each probe asked after its turn):

- ``naive bm25``: ``rank_bm25.BM25Okapi`` rebuilt over the turns seen so far at each probe
  (memlab's tokenizer, so the results must be equal: checked, scores within 1e-9);
- ``naive vector``: a chromadb collection per conversation, ``add`` per turn, ``query`` per
  probe (the same HashingEmbedder vectors; chromadb's HNSW is approximate, so the top-10
  overlap with memlab's exact search is reported);
- ``naive hybrid``: both, fused by reciprocal rank (k=60) as memlab's hybrid does; the
  overlap of its top-10 with memlab's hybrid is reported.

Targets (issue 11): bm25 <= 1 s; every built-in <= 5 s with warm embedding caches;
hybrid >= 20x faster than the naive hybrid.

``--output FILE`` (``bench/results/replay_warm.json``) records this run alone, written
atomically: the strategies' figures (wall and CPU seconds, probes/s, peak MB, recall@5),
the naive stacks' and the checks, ``provenance`` (``memlab.eval.provenance.run_provenance``,
taken before the run: commit, command, date, machine, packages, LoCoMo's sha256) and the
load average (1 min) at start and end. The ``replay_warm`` block of BENCHMARKS.md renders it.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

from _common import load_locomo, machine, peak_rss_mb, run_child, table

#: issue 11's target for every built-in on full LoCoMo, warm
TARGET_SECONDS = 5.0

SKIP_BY_DEFAULT = {"http_memory"}  # a client of a memory server: measures the server, not memlab


def run_strategy(name: str, params: dict) -> dict:
    from memlab import strategies
    from memlab.eval import replay

    dataset = load_locomo()
    replay(strategies.get(name, **params), dataset.subset(1), ks=(1, 5, 10))  # warm-up, untimed
    strategy = strategies.get(name, **params)
    wall, cpu = time.perf_counter(), time.process_time()
    rows = replay(strategy, dataset, ks=(1, 5, 10))
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return {"strategy": name + (f"[{params['embedder']}]" if "embedder" in params else ""),
            "seconds": wall, "cpu_seconds": cpu, "probes": len(rows), "probes_per_s": len(rows) / wall,
            "peak_mb": peak_rss_mb(), "recall@5": float(rows["recall@5"].mean()),
            # the replay lists deeper than k (for the token budget and the session metrics): the
            # comparisons read the first 10, as the naive stacks return
            "top10": {f"{r.dialogue_id}/{r.probe_id}": list(r.retrieved_ids)[:10] for r in rows.itertuples()}}


def run_naive(kind: str) -> dict:
    """The naive stack over LoCoMo; returns timings and the per-probe top-10 ids (and bm25 scores)."""
    import numpy as np

    from memlab.embeddings.hashing import HashingEmbedder
    from memlab.retrieval.tokenize import Tokenizer

    dataset = load_locomo()
    tokenize = Tokenizer()
    embedder = HashingEmbedder()
    if kind != "bm25":
        import chromadb

        client = chromadb.EphemeralClient()
    if kind != "vector":
        from rank_bm25 import BM25Okapi
    top: dict[str, list[str]] = {}
    scores: dict[str, list[float]] = {}
    wall, cpu = time.perf_counter(), time.process_time()
    n = 0
    for d, dialogue in enumerate(dataset.dialogues):
        ids: list[str] = []
        docs: list[list[str]] = []
        if kind != "bm25":
            coll = client.create_collection(f"naive_{d}_{time.time_ns()}", metadata={"hnsw:space": "cosine"})
        for kind_, item in dialogue.timeline():
            if kind_ == "turn":
                ids.append(item.id)
                docs.append(tokenize(item.retrieval_text))
                if kind != "bm25" and item.retrieval_text.strip():
                    coll.add(ids=[item.id], embeddings=embedder.embed([item.retrieval_text]).tolist())
                continue
            n += 1
            key = f"{dialogue.id}/{item.id}"
            lists = []
            if kind != "vector" and ids:
                bm25 = BM25Okapi(docs)
                s = bm25.get_scores(tokenize(item.query))
                q = set(tokenize(item.query))
                order = [i for i in np.argsort(-s, kind="stable") if q & set(docs[i])][:50]
                lists.append([ids[i] for i in order])
                scores[key] = [float(s[i]) for i in order[:10]]
            if kind != "bm25" and coll.count():
                res = coll.query(query_embeddings=embedder.embed([item.query]).tolist(),
                                 n_results=min(50, coll.count()))
                lists.append(res["ids"][0])
            if kind == "hybrid":
                fused: dict[str, float] = {}
                for ranked in lists:
                    for rank, i in enumerate(ranked, start=1):
                        fused[i] = fused.get(i, 0.0) + 1.0 / (60 + rank)
                top[key] = sorted(fused, key=lambda i: -fused[i])[:10]
            else:
                top[key] = lists[0][:10] if lists else []
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return {"strategy": f"naive {kind}", "seconds": wall, "cpu_seconds": cpu, "probes": n,
            "probes_per_s": n / wall, "peak_mb": peak_rss_mb(), "top10": top, "scores": scores}


def bm25_scores() -> dict:
    """memlab's BM25 top-10 scores per probe, for the parity check."""
    from memlab import strategies
    from memlab.eval import replay

    rows = replay(strategies.get("bm25"), load_locomo(), ks=(10,))
    return {f"{r.dialogue_id}/{r.probe_id}": list(r.retrieved_scores)[:10] for r in rows.itertuples()}


def overlap(a: dict, b: dict) -> float:
    """Mean fraction of b's top-10 found in a's top-10, over probes where b returned something."""
    fr = [len(set(a.get(k, [])) & set(v)) / len(v) for k, v in b.items() if v]
    return sum(fr) / len(fr) if fr else float("nan")


def main() -> int:
    from memlab import strategies

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--strategies", default=",".join(n for n in strategies.names() if n not in SKIP_BY_DEFAULT))
    parser.add_argument("--naive", action=argparse.BooleanOptionalAction, default=True)
    parser.add_argument("--minilm", action="store_true", help="also vector and hybrid with MiniLM (warm cache)")
    parser.add_argument("--naive-kinds", default="bm25,vector,hybrid", help="which naive stacks to run")
    parser.add_argument("--output", help="record this run alone in this JSON file (bench/results/replay_warm.json)")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        spec = json.loads(args.child)
        out = {"naive": lambda: run_naive(spec["kind"]), "scores": bm25_scores,
               "strategy": lambda: run_strategy(spec["name"], spec.get("params", {}))}[spec["what"]]()
        print(json.dumps(out))
        return 0
    provenance = None
    if args.output:
        from memlab.eval.paths import locomo_path
        from memlab.eval.provenance import run_provenance

        # taken before the run: the commit and data it names are those the run measures
        provenance = run_provenance(data=[locomo_path()])
    load_start = os.getloadavg()[0]
    runs = [(n, {}) for n in args.strategies.split(",") if n]
    if args.minilm:
        runs += [("vector", {"embedder": "minilm"}), ("hybrid", {"embedder": "minilm"})]
    results, errors = [], []
    for name, params in runs:
        try:
            r = run_child(__file__, ["--child", json.dumps({"what": "strategy", "name": name, "params": params})])
        except RuntimeError as e:
            errors.append({"strategy": name, "error": str(e).splitlines()[-1][:200]})
            print(f"{name}: failed: {errors[-1]['error']}", file=sys.stderr)
            continue
        print(f"{r['strategy']:>20}: {r['seconds']:.2f} s", file=sys.stderr)
        results.append(r)
    naive = []
    if args.naive:
        for kind in args.naive_kinds.split(","):
            r = run_child(__file__, ["--child", json.dumps({"what": "naive", "kind": kind})])
            print(f"{r['strategy']:>20}: {r['seconds']:.2f} s", file=sys.stderr)
            naive.append(r)
    by_name = {r["strategy"]: r for r in results}
    checks = {}
    if "naive bm25" in {r["strategy"] for r in naive} and "bm25" in by_name:
        ours = run_child(__file__, ["--child", json.dumps({"what": "scores"})])
        nb = next(r for r in naive if r["strategy"] == "naive bm25")
        worst = max((abs(a - b) for k, v in nb["scores"].items() for a, b in zip(ours[k], v)), default=0.0)
        # float sums in another order differ by ~1e-13, which can swap two tied documents
        tie_swaps = sum(by_name["bm25"]["top10"][k] != v for k, v in nb["top10"].items())
        checks["bm25_equal_to_rank_bm25"] = bool(worst < 1e-9 and all(
            len(ours[k]) == len(v) for k, v in nb["scores"].items()))
        checks["bm25_max_score_diff"] = worst
        checks["bm25_probes_with_tied_documents_in_another_order"] = tie_swaps
    naive_by = {r["strategy"]: r for r in naive}
    if "naive vector" in naive_by and "vector" in by_name:
        checks["chromadb_top10_overlap_with_exact_vector"] = overlap(by_name["vector"]["top10"],
                                                                     naive_by["naive vector"]["top10"])
    if "naive hybrid" in naive_by and "hybrid" in by_name:
        nh, h = naive_by["naive hybrid"], by_name["hybrid"]
        checks["naive_hybrid_top10_overlap"] = overlap(h["top10"], nh["top10"])
        checks["hybrid_speedup_over_naive"] = nh["seconds"] / h["seconds"]
        checks["hybrid_cpu_speedup_over_naive"] = nh["cpu_seconds"] / h["cpu_seconds"]
    rows = [[r["strategy"], r["seconds"], r["cpu_seconds"], r["probes"], r["probes_per_s"], r["peak_mb"],
             r.get("recall@5", float("nan"))] for r in results + naive]
    print(table(["strategy", "seconds", "cpu s", "probes", "probes/s", "peak MB", "recall@5"], rows))
    for k, v in checks.items():
        print(f"{k}: {v:.4g}" if isinstance(v, float) else f"{k}: {v}")
    for e in errors:
        print(f"failed: {e['strategy']}: {e['error']}")
    for r in results + naive:
        r.pop("top10", None)
        r.pop("scores", None)
    print(json.dumps({"bench": "replay", "machine": machine(), "results": results + naive, "checks": checks,
                      "errors": errors}))
    if args.output:
        from memlab.atomic import atomic_write_text

        record = {"bench": "replay", "dataset": "locomo", "target_seconds": TARGET_SECONDS,
                  "options": {"strategies": [n for n, _ in runs], "naive": args.naive_kinds.split(",") if args.naive
                              else [], "warm_up": "one conversation, untimed, in the same process"},
                  "provenance": provenance,
                  # timings read beside other work: the load average (1 min) when the run started and ended
                  "load_avg_1m": [round(load_start, 2), round(os.getloadavg()[0], 2)],
                  "results": results, "naive": naive, "checks": checks, "errors": errors}
        atomic_write_text(args.output, json.dumps(record, indent=1) + "\n")
        print(f"recorded in {args.output}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
