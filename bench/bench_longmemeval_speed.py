"""LongMemEval S dev at full size: seconds, texts embedded and peak memory, cold and warm cache.

    python bench/bench_longmemeval_speed.py [--questions N] [--strategies bm25,bm25_plus] [--dense hybrid_plus]

Replays the first ``--questions`` questions of S dev (file order; all 401 with 0) for each
strategy, each run in a fresh process (its own peak resident memory), user turns as units,
streamed one question at a time (``replay_stream``), as ``memlab eval`` does. The dense
strategy runs twice on one embedding cache that starts empty: cold (every distinct text is
embedded: the rows of the cache file afterwards are the texts embedded), then warm (the
same replay, every vector read back). A run on a subset is extrapolated to all of S dev and
printed as such: the embedding part (cold - warm seconds) scales with the distinct texts of
the whole split (counted in one pass over the file), the rest with its turns.
Targets on the 2-core project machine: cold <= 2 h, warm <= 5 min, lexical <= 10 min, peak
memory <= 4 GB.
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import machine, peak_rss_mb, run_child, table  # noqa: E402

TARGETS_S = {"cold": 7200, "warm": 300, "lexical": 600}
PEAK_MB = 4096


def s_path() -> Path:
    from memlab.eval.paths import LONGMEMEVAL_S, longmemeval_path

    path = longmemeval_path(LONGMEMEVAL_S)
    if path is None:
        print("LongMemEval S dev not found: set MEMLAB_LONGMEMEVAL or put it under ../shared/datasets/longmemeval/")
        raise SystemExit(1)
    return Path(path)


def counts(path: Path, limit: int) -> dict[str, int]:
    """Questions, user turns and distinct user texts of the first ``limit`` questions (0: all)."""
    from memlab.eval.loaders import iter_longmemeval

    questions = turns = 0
    texts: set[str] = set()
    queries: set[str] = set()
    for d in iter_longmemeval(str(path), roles=("user",)):
        if limit and questions >= limit:
            break
        questions += 1
        for t in d.turns():
            turns += 1
            texts.add(t.retrieval_text)
        queries.update(p.query for p in d.probes)
    return {"questions": questions, "turns": turns, "distinct_texts": len(texts), "distinct_queries": len(queries)}


def one(name: str, limit: int) -> dict:
    """Replay ``name`` over the first ``limit`` questions in this process."""
    from memlab import strategies
    from memlab.eval.loaders import iter_longmemeval
    from memlab.eval.streaming import StreamedDataset, replay_stream

    def reader(p, report=None, **kw):
        for n, d in enumerate(iter_longmemeval(p, report=report, **kw)):
            if limit and n >= limit:
                return
            yield d

    data = StreamedDataset("longmemeval", str(s_path()), reader, roles=("user",))
    start = time.perf_counter()
    rows = replay_stream(strategies.get(name), data, ks=(5, 10), budgets=(1024,), label=name)
    seconds = time.perf_counter() - start
    scored = rows[rows["recall@5"].notna()]
    return {"strategy": name, "seconds": seconds, "probes": len(rows), "peak_mb": peak_rss_mb(),
            "recall@5": float(scored["recall@5"].mean()), "session_hit_rate@5": float(
                scored["session_hit_rate@5"].mean()) if "session_hit_rate@5" in scored else float("nan")}


def cache_rows(folder: str) -> int:
    path = Path(folder) / "embeddings.sqlite3"
    if not path.exists():
        return 0
    with sqlite3.connect(path) as conn:
        return conn.execute("SELECT COUNT(*) FROM embeddings").fetchone()[0]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--questions", type=int, default=4, help="first N questions of S dev (0: all 401)")
    ap.add_argument("--strategies", default="bm25,bm25_plus", help="lexical strategies (comma list)")
    ap.add_argument("--dense", default="hybrid_plus", help="dense strategies, cold then warm (comma list)")
    ap.add_argument("--cache-dir", default=None,
                    help="embedding cache folder for the dense runs, kept afterwards (must be empty: the first "
                         "run is the cold one); default: a temporary folder")
    ap.add_argument("--one", nargs=2, metavar=("STRATEGY", "QUESTIONS"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        print(json.dumps(one(args.one[0], int(args.one[1]))))
        return 0
    path = s_path()
    t0 = time.perf_counter()
    full = counts(path, 0)
    part = counts(path, args.questions) if args.questions else full
    print(f"S dev: {full} (counted in {time.perf_counter() - t0:.0f} s); run on {part}", flush=True)
    scale_turns = full["turns"] / part["turns"]
    scale_texts = (full["distinct_texts"] + full["distinct_queries"]) / (part["distinct_texts"] + part["distinct_queries"])
    rows, results = [], []
    for name in [s for s in args.strategies.split(",") if s]:
        r = run_child(__file__, ["--one", name, str(args.questions)])
        r |= {"mode": "lexical", "texts_embedded": 0, "full_s_dev_s": r["seconds"] * scale_turns}
        results.append(r)
        print(f"{name}: {r['seconds']:.1f} s", file=sys.stderr, flush=True)
    for name in [s for s in args.dense.split(",") if s]:
        with tempfile.TemporaryDirectory() as tmp:
            cache = os.path.join(args.cache_dir, name) if args.cache_dir else tmp
            if os.path.isdir(cache) and os.listdir(cache):
                print(f"--cache-dir: {cache} is not empty; a cold run needs an empty cache")
                return 2
            os.makedirs(cache, exist_ok=True)
            os.environ["MEMLAB_CACHE_DIR"] = cache
            cold = run_child(__file__, ["--one", name, str(args.questions)])
            embedded = cache_rows(cache)
            print(f"{name}: cold {cold['seconds']:.1f} s ({embedded} texts)", file=sys.stderr, flush=True)
            warm = run_child(__file__, ["--one", name, str(args.questions)])
            del os.environ["MEMLAB_CACHE_DIR"]
        embed_s = max(0.0, cold["seconds"] - warm["seconds"])
        cold |= {"mode": "cold", "texts_embedded": embedded,
                 "full_s_dev_s": embed_s * scale_texts + warm["seconds"] * scale_turns}
        warm |= {"mode": "warm", "texts_embedded": 0,
                 "full_s_dev_s": warm["seconds"] * scale_turns}
        results += [cold, warm]
        print(f"{name}: cold {cold['seconds']:.1f} s ({embedded} texts), warm {warm['seconds']:.1f} s",
              file=sys.stderr, flush=True)
    for r in results:
        target = TARGETS_S["lexical" if r["mode"] == "lexical" else r["mode"]]
        est = r["full_s_dev_s"]
        rows.append([r["strategy"], r["mode"], part["questions"], round(r["seconds"], 1), r["texts_embedded"],
                     round(r["peak_mb"]), round(100 * r["recall@5"], 1),
                     f"{est / 60:.1f} min" + (" (extrapolated)" if args.questions else ""),
                     f"{target / 60:.0f} min", "met" if est <= target and r["peak_mb"] <= PEAK_MB else "MISSED"])
    print(table(["strategy", "cache", "questions", "seconds", "texts embedded", "peak MB", "recall@5",
                 "all S dev (401 q)", "target", "verdict"], rows))
    print(f"extrapolation: x{scale_turns:.1f} turns (replay), x{scale_texts:.1f} distinct texts (embedding); "
          f"peak memory is the subset run's (a replay holds one question at a time)")
    print(json.dumps({"bench": "longmemeval_speed", "machine": machine(), "full": full, "subset": part,
                      "results": results}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
