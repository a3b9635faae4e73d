"""A 10-point keep_rate sweep against one run, in one process: the ratio of their times.

    python bench/bench_keep_rate_sweep.py [--conversations 10] [--embedder e5] [--repeats 3]
                                          [--declared both|yes|no] [--output FILE]

``longterm`` (the built-in: contextual BM25 fused with ``--embedder``, warm embedding cache)
on the first ``--conversations`` LoCoMo conversations, ``ks = [5]``: one ``replay`` at
keep_rate 0.5, then ``memlab.eval.sweep`` over ``KEEP_RATES``, each timed ``--repeats`` times
after an untimed warm-up (the best time counts: the machine is shared). Printed: seconds and
sweep / one run.

With O the observation (reading the turns), S the search at a probe, C the context build
and F the table (metrics, configuration columns) of one run, a sweep that observes once
(``replay_variants``) costs O + 10 (S + C + F) against O + S + C + F. When the strategy
declares keep_rate and token_limit ``context_only_params`` (its search reads neither), a
sweep searches once per probe for all points: O + S + 10 (C + F).

``longterm`` declares keep_rate and token_limit ``context_only_params``
(``memlab/strategies/memory.py``); ``--declared no`` clears the declaration in this process to
measure the sweep without it, ``--declared yes`` keeps it, and ``both`` runs the two: the
tables of the declared and undeclared sweeps must be equal (checked here, all columns but
``latency_ms``).

Target (issue 33): a 10-point sweep <= ``TARGET_RATIO`` x one run. ``--output FILE``
(``bench/results/keep_rate_sweep.json``) records the run, written atomically, with
``provenance`` (``memlab.eval.provenance.run_provenance``, taken before the run: commit,
command, date, machine, packages, LoCoMo's sha256) and the load average at start and end;
the ``keep_rate_sweep`` block of BENCHMARKS.md renders it.
"""

from __future__ import annotations

import argparse
import json
import os
import time

import pandas as pd
from _common import load_locomo, machine

KEEP_RATES = [0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9]
#: issue 33's target: the sweep's time over one run's
TARGET_RATIO = 3.0


def timed(fn, repeats: int) -> tuple[float, object]:
    fn()  # warm-up: model load, caches, imports
    best, out = float("inf"), None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def measure(dataset, embedder: str, repeats: int) -> dict:
    from memlab import strategies
    from memlab.eval import replay, sweep

    strategy = strategies.get("longterm", embedder=embedder, keep_rate=0.5)
    one, _ = timed(lambda: replay(strategy, dataset, ks=(5,)), repeats)
    swept, table = timed(lambda: sweep(strategy, {"keep_rate": KEEP_RATES}, dataset, ks=(5,)), repeats)
    return {"one_run_s": one, "sweep_s": swept, "ratio": swept / one, "table": table}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--conversations", type=int, default=10)
    parser.add_argument("--embedder", default="e5")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--declared", choices=["both", "yes", "no"], default="both")
    parser.add_argument("--output", help="record this run in this JSON file (bench/results/keep_rate_sweep.json)")
    args = parser.parse_args()
    from memlab.strategies.memory import LongtermStrategy

    provenance = None
    if args.output:
        from memlab.eval.paths import locomo_path
        from memlab.eval.provenance import run_provenance

        # taken before the run: the commit and data it names are those the run measures
        provenance = run_provenance(data=[locomo_path()])
    load_start = os.getloadavg()[0]
    shipped = LongtermStrategy.context_only_params

    dataset = load_locomo().subset(args.conversations)
    results = {}
    for declared in (["no", "yes"] if args.declared == "both" else [args.declared]):
        LongtermStrategy.context_only_params = (frozenset({"keep_rate", "token_limit"}) if declared == "yes"
                                                else frozenset())
        results[declared] = measure(dataset, args.embedder, args.repeats)
        r = results[declared]
        print(f"context_only_params declared: {declared:3}  one run {r['one_run_s']:7.2f} s  "
              f"sweep of {len(KEEP_RATES)} {r['sweep_s']:7.2f} s  sweep / one run {r['ratio']:.2f}x", flush=True)
    LongtermStrategy.context_only_params = shipped
    equal = None
    if len(results) == 2:
        pd.testing.assert_frame_equal(results["no"]["table"].drop(columns="latency_ms"),
                                      results["yes"]["table"].drop(columns="latency_ms"), check_exact=True)
        equal = True
        print("tables of the two sweeps: equal (all columns but latency_ms)")
    out = {"bench": "keep_rate_sweep", "machine": machine(), "conversations": args.conversations,
           "probes": dataset.n_probes, "embedder": args.embedder,
           "results": {k: {m: v[m] for m in ("one_run_s", "sweep_s", "ratio")} for k, v in results.items()}}
    print(json.dumps(out))
    if args.output:
        from memlab.atomic import atomic_write_text

        record = {"bench": "keep_rate_sweep", "strategy": "longterm", "embedder": args.embedder,
                  "conversations": args.conversations, "probes": dataset.n_probes, "keep_rates": KEEP_RATES,
                  "repeats": args.repeats, "timing": "best of the repeats, after an untimed warm-up",
                  "target_ratio": TARGET_RATIO, "provenance": provenance,
                  # timings read beside other work: the load average (1 min) when the run started and ended
                  "load_avg_1m": [round(load_start, 2), round(os.getloadavg()[0], 2)],
                  "results": out["results"], "tables_equal": equal}
        atomic_write_text(args.output, json.dumps(record, indent=1) + "\n")
        print(f"recorded in {args.output}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
