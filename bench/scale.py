"""Streaming replay at growing length: does a strategy's cost grow with the work, not faster?

    python bench/scale.py [--sizes 1000,10000,100000] [--strategies bm25,window] [--budget 240] [--probes 200]

One synthetic dialogue per size: LoCoMo turns (all ten conversations, in order) cycled to
N turns, one minute apart, with a probe (a LoCoMo question, cycled) after every 10th turn,
replayed by ``memlab.eval.replay_dialogue`` exactly as an evaluation does. Each point runs
in a fresh process, so peak memory is that point's own. Printed per strategy and size:
seconds, microseconds per turn, microseconds per append (``observe`` alone), milliseconds
per probe, peak resident memory; then log-log slopes of total time and of append time
against N (1.0 = linear). Retrieval strategies search every stored turn at each probe,
so their total grows like N^2 / 10 by construction; for exact vector search the script
also times memlab's ``NumpyVectorStore.query`` against the bare numpy limit (one matmul
and an argpartition over the same matrix) at each size.

A point whose predicted time (from the previous size, assuming the measured slope, at
least 1) exceeds ``--budget`` seconds is skipped and listed as such.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from _common import load_locomo, machine, peak_rss_mb, run_child, slope, table

STRATEGIES = ["window", "longterm", "bm25", "vector", "hybrid", "bm25_prf", "hybrid_decay", "layered", "bm25_plus",
              "full_context", "oracle", "camel_chat_history", "camel_longterm", "langchain_ensemble"]
PROBE_EVERY = 10


def build_dialogue(n_turns: int, probes: int = 0):
    """LoCoMo turns cycled to ``n_turns`` (fresh ids, one minute apart), a probe every 10th turn, or
    ``probes`` > 0 probes spread evenly (after turns n/p - 1, 2n/p - 1, ..., n - 1)."""
    from memlab.eval.dataset import Dialogue, Probe, Session, Turn

    locomo = load_locomo()
    source = [t for d in locomo.dialogues for t in d.turns()]
    questions = [p.query for d in locomo.dialogues for p in d.probes]
    start = source[0].timestamp
    turns = [Turn(id=f"t{i}", speaker=src.speaker, role=src.role, text=src.text, content=src.content,
                  timestamp=start + 60.0 * i, session_id="s0")
             for i, src in ((i, source[i % len(source)]) for i in range(n_turns))]
    after = (range(PROBE_EVERY - 1, n_turns, PROBE_EVERY) if probes <= 0
             else [(j + 1) * n_turns // probes - 1 for j in range(probes)])
    probes = [Probe(id=f"p{j}", after_turn=f"t{i}", query=questions[j % len(questions)], evidence=[])
              for j, i in enumerate(after)]
    return Dialogue(id="scale", sessions=[Session(id="s0", timestamp=start, turns=turns)], probes=probes)


def exact_search_vs_limit(strategy, n_queries: int = 50, k: int = 10) -> dict[str, float] | None:
    """Per-query ms of the strategy's NumpyVectorStore.query and of bare numpy over its matrix."""
    import numpy as np

    from memlab.storage.vector import NumpyVectorStore

    parts = [strategy, *strategy.get_params(deep=True).values(), *vars(strategy).values()]
    parts += [c for p in parts if isinstance(p, (list, tuple)) for c in p]  # hybrid: its retrievers
    # a store given as a parameter, or the default one a retriever made for itself (``_store``)
    stores = [v for p in parts for v in (p, getattr(p, "_store", None)) if isinstance(v, NumpyVectorStore)]
    if not stores or len(stores[0]) == 0:
        return None
    store = stores[0]
    matrix = store._vectors  # the stored, normalised rows: the same matrix the limit searches
    rng = np.random.default_rng(0)
    queries = rng.standard_normal((n_queries, matrix.shape[1])).astype(np.float32)
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)

    def limit(q):
        s = matrix @ q
        top = np.argpartition(-s, k)[:k]
        return top[np.argsort(-s[top])]

    best = {}
    for name, fn in (("limit", limit), ("store", lambda q: store.query(q, k))):
        fn(queries[0])
        runs = []
        for _ in range(3):
            t0 = time.perf_counter()
            for q in queries:
                fn(q)
            runs.append((time.perf_counter() - t0) / n_queries * 1000)
        best[name] = min(runs)
    for q in queries[:5]:  # the same top-k scores as the limit (cycled turns repeat vectors: ties)
        s = matrix @ q
        assert np.allclose([v for _, v in store.query(q, k)], s[limit(q)], atol=1e-6)
    return {"store_ms": best["store"], "limit_ms": best["limit"], "ratio": best["store"] / best["limit"]}


def one(name: str, n_turns: int, probes: int = 0) -> dict:
    from memlab import strategies
    from memlab.eval.replay import replay_dialogue

    dialogue = build_dialogue(n_turns, probes)
    strategy = strategies.get(name)
    # one short replay first, so one-time costs (tokenizer tables, lazy imports) are not timed
    replay_dialogue(strategy, build_dialogue(100), k_max=10)
    base_mb = peak_rss_mb()
    observed = [0.0]
    observe = strategy.observe

    def timed_observe(record):
        t0 = time.perf_counter()
        observe(record)
        observed[0] += time.perf_counter() - t0

    strategy.observe = timed_observe  # replay_dialogue uses the strategy in place
    t0 = time.perf_counter()
    rows = replay_dialogue(strategy, dialogue, k_max=10)
    seconds = time.perf_counter() - t0
    out = {"strategy": name, "turns": n_turns, "probes": len(rows), "seconds": seconds,
           "us_per_turn": seconds / n_turns * 1e6, "append_us": observed[0] / n_turns * 1e6,
           "probe_ms": (seconds - observed[0]) / max(1, len(rows)) * 1000,
           "peak_mb": peak_rss_mb(), "base_mb": base_mb}
    search = exact_search_vs_limit(strategy)
    if search is not None:
        out["exact_search"] = search
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,100000", help="comma-separated turn counts")
    parser.add_argument("--strategies", default=",".join(STRATEGIES))
    parser.add_argument("--budget", type=float, default=240.0,
                        help="skip a point predicted to take longer than this many seconds")
    parser.add_argument("--probes", type=int, default=0,
                        help="a fixed number of probes spread evenly (default 0: one after every 10th turn)")
    parser.add_argument("--one", nargs=2, metavar=("STRATEGY", "TURNS"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(one(args.one[0], int(args.one[1]), args.probes)))
        return 0
    sizes = sorted(int(s) for s in args.sizes.split(","))
    results, skipped = [], []
    for name in args.strategies.split(","):
        done: list[dict] = []
        for n in sizes:
            if done:
                prev = done[-1]
                exponent = max(1.0, slope([d["turns"] for d in done], [d["seconds"] for d in done])
                               if len(done) > 1 else 1.0)
                predicted = prev["seconds"] * (n / prev["turns"]) ** exponent
                if predicted > args.budget:
                    skipped.append({"strategy": name, "turns": n, "predicted_s": round(predicted)})
                    print(f"skip {name} at {n} turns: predicted {predicted:.0f} s > budget {args.budget:.0f} s",
                          file=sys.stderr)
                    continue
            try:
                r = run_child(__file__, ["--one", name, str(n), "--probes", str(args.probes)])
            except RuntimeError as e:  # one failed point must not lose the others
                skipped.append({"strategy": name, "turns": n, "predicted_s": -1, "error": str(e)[-300:]})
                print(f"{name} at {n} turns failed: {str(e)[-300:]}", file=sys.stderr)
                break
            print(f"{name:>12} {n:>7} turns: {r['seconds']:.2f} s", file=sys.stderr)
            done.append(r)
        results.extend(done)
    rows = []
    slopes = {}
    for name in args.strategies.split(","):
        pts = [r for r in results if r["strategy"] == name]
        total = slope([p["turns"] for p in pts], [p["seconds"] for p in pts])
        append = slope([p["turns"] for p in pts], [p["append_us"] * p["turns"] for p in pts])
        slopes[name] = {"total": round(total, 3), "append": round(append, 3)}
        for p in pts:
            s = p.get("exact_search")
            rows.append([name, p["turns"], p["seconds"], p["us_per_turn"], p["append_us"], p["probe_ms"],
                         p["peak_mb"], f"{s['store_ms']:.3f}/{s['limit_ms']:.3f}={s['ratio']:.2f}x" if s else "",
                         total, append])
    print(table(["strategy", "turns", "seconds", "us/turn", "append us", "ms/probe", "peak MB",
                 "search ms store/limit", "slope total", "slope append"], rows))
    for s in skipped:
        print(f"skipped: {s['strategy']} at {s['turns']} turns (predicted {s['predicted_s']} s)")
    print(json.dumps({"bench": "scale", "machine": machine(), "results": results, "slopes": slopes,
                      "skipped": skipped}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
