"""Top-k vector search latency: memlab's exact numpy store, the numpy limit, and chromadb's HNSW.

    python bench/search.py [--sizes 10000,100000] [--dim 384] [--queries 200] [--k 10]

Vectors: ``n`` unit vectors drawn from a seeded Gaussian; queries: stored vectors plus
noise (so each has a clear nearest neighbourhood). Each backend and size runs in a fresh
process. Printed per size: p50 and p95 per-query latency (ms) of

- ``memlab numpy``: ``NumpyVectorStore.query`` (exact; what the default strategies use);
- ``numpy limit``: one matmul and an argpartition over the same matrix (the floor for an
  exact search in numpy);
- ``chromadb ef=E``: a cosine HNSW collection, ``ef_search`` raised until recall@k
  against the exact top-k reaches ``--recall`` (default 0.99) or the largest value tried;

and the resident memory each adds per stored vector (bytes: resident memory after the adds
minus before, the vectors being already in memory), with the time to add them.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from _common import machine, rss_mb, run_child, table  # first: it sets the BLAS threads

import numpy as np  # noqa: E402

EF_VALUES = [100, 400, 1600]


def data(n: int, dim: int, n_queries: int):
    rng = np.random.default_rng(0)
    vectors = rng.standard_normal((n, dim)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    picks = rng.choice(n, n_queries, replace=False)
    noise = rng.standard_normal((n_queries, dim)).astype(np.float32) * np.float32(0.5 / np.sqrt(dim))
    return vectors, (vectors[picks] + noise).astype(np.float32)


def latencies(fn, queries) -> list[float]:
    fn(queries[0])
    out = []
    for q in queries:
        t0 = time.perf_counter()
        fn(q)
        out.append((time.perf_counter() - t0) * 1000)
    return out


def exact_top(vectors, queries, k):
    q = queries / np.linalg.norm(queries, axis=1, keepdims=True)
    return [set(np.argsort(-(vectors @ x), kind="stable")[:k].tolist()) for x in q]


def child(backend: str, n: int, dim: int, n_queries: int, k: int, recall_target: float) -> dict:
    vectors, queries = data(n, dim, n_queries)
    truth = exact_top(vectors, queries, k)
    ids = [str(i) for i in range(n)]
    base = rss_mb()
    t0 = time.perf_counter()
    out: dict = {"backend": backend, "n": n}
    if backend == "numpy":
        from memlab.storage.vector import NumpyVectorStore

        store = NumpyVectorStore()
        for start in range(0, n, 1000):
            store.add(ids[start:start + 1000], vectors[start:start + 1000])
        out["add_s"] = time.perf_counter() - t0
        out["bytes_per_vector"] = (rss_mb() - base) * 2**20 / n
        matrix = store._vectors

        def limit(q):
            s = matrix @ q
            top = np.argpartition(-s, k)[:k]
            return top[np.argsort(-s[top])]

        found = [{int(i) for i, _ in store.query(q, k)} for q in queries]
        out["recall"] = float(np.mean([len(f & t) / k for f, t in zip(found, truth)]))
        runs = {"memlab numpy": latencies(lambda q: store.query(q, k), queries),
                "numpy limit": latencies(limit, queries)}
        out["rows"] = [{"name": name, "p50": float(np.percentile(v, 50)), "p95": float(np.percentile(v, 95)),
                        "recall": out["recall"]} for name, v in runs.items()]
        return out
    import chromadb

    client = chromadb.EphemeralClient()
    rows = []
    # ef_search is read when a collection's index is loaded (modify() does not reach a loaded
    # index in chromadb 1.5), so each value gets its own collection
    for ef in EF_VALUES:
        t0 = time.perf_counter()
        name = f"bench_{ef}_{time.time_ns()}"
        coll = client.create_collection(name, configuration={"hnsw": {"space": "cosine", "ef_search": ef}})
        for start in range(0, n, 5000):
            coll.add(ids=ids[start:start + 5000], embeddings=vectors[start:start + 5000])
        coll.query(query_embeddings=[queries[0]], n_results=k)  # the index is built before it is measured
        if "add_s" not in out:
            out["add_s"] = time.perf_counter() - t0
            out["bytes_per_vector"] = (rss_mb() - base) * 2**20 / n
        found = [set(map(int, coll.query(query_embeddings=[q], n_results=k)["ids"][0])) for q in queries]
        recall = float(np.mean([len(f & t) / k for f, t in zip(found, truth)]))
        lat = latencies(lambda q: coll.query(query_embeddings=[q], n_results=k), queries)
        rows.append({"name": f"chromadb ef={ef}", "p50": float(np.percentile(lat, 50)),
                     "p95": float(np.percentile(lat, 95)), "recall": recall})
        client.delete_collection(name)
        if recall >= recall_target:
            break
    out["rows"] = rows
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--recall", type=float, default=0.99)
    parser.add_argument("--backends", default="numpy,chromadb")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        backend, n = args.child.split(":")
        print(json.dumps(child(backend, int(n), args.dim, args.queries, args.k, args.recall)))
        return 0
    results = []
    for n in (int(s) for s in args.sizes.split(",")):
        for backend in args.backends.split(","):
            r = run_child(__file__, ["--child", f"{backend}:{n}", "--dim", str(args.dim), "--queries",
                                     str(args.queries), "--k", str(args.k), "--recall", str(args.recall)])
            print(f"{backend} {n}: added in {r['add_s']:.1f} s", file=sys.stderr)
            results.append(r)
    rows = []
    for r in results:
        for row in r["rows"]:
            rows.append([row["name"], r["n"], row["p50"], row["p95"], row["recall"],
                         r["bytes_per_vector"] if row["name"] != "numpy limit" else float("nan"), r["add_s"]])
    print(table(["search", "vectors", "p50 ms", "p95 ms", f"recall@{args.k}", "bytes/vector", "add s"], rows))
    print(json.dumps({"bench": "search", "machine": machine(), "dim": args.dim, "k": args.k, "results": results}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
