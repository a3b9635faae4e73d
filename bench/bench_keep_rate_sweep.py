"""A 10-point keep_rate sweep against one run, in one process: the ratio of their times.

    python bench/bench_keep_rate_sweep.py [--conversations 10] [--embedder e5] [--repeats 3]
                                          [--declared both|yes|no]

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

``--declared yes`` sets ``LongtermStrategy.context_only_params`` in this process before
timing: the declaration belongs in ``memlab/strategies/memory.py`` (its class comment on
``query_time_params`` already says the recall search reads neither parameter), and
``--declared no`` measures the strategy as shipped. ``both`` runs the two, and the tables
of the declared and undeclared sweeps must be equal (checked here, all columns but
``latency_ms``).

Measured 2026-12-04 on 2 cores (load ~1), all 10 LoCoMo conversations (1,986 probes), e5 warm,
best of 2:

- main before this work (4d70e93): one run 6.98 s, sweep 47.53 s: 6.81x (the issue: 6.73x);
- the context creator keeping its token counter across token_limit switches (shipped
  strategy, nothing declared): one run 7.42 s, sweep 42.57 s: 5.74x;
- with ``context_only_params`` declared: one run 7.19 s, sweep 15.56 s: 2.16x, the table
  equal to the undeclared sweep's.
"""

from __future__ import annotations

import argparse
import json
import time

import pandas as pd
from _common import load_locomo, machine

KEEP_RATES = [0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9]


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
    args = parser.parse_args()
    from memlab.strategies.memory import LongtermStrategy

    dataset = load_locomo().subset(args.conversations)
    results = {}
    for declared in (["no", "yes"] if args.declared == "both" else [args.declared]):
        LongtermStrategy.context_only_params = (frozenset({"keep_rate", "token_limit"}) if declared == "yes"
                                                else frozenset())
        results[declared] = measure(dataset, args.embedder, args.repeats)
        r = results[declared]
        print(f"context_only_params declared: {declared:3}  one run {r['one_run_s']:7.2f} s  "
              f"sweep of {len(KEEP_RATES)} {r['sweep_s']:7.2f} s  sweep / one run {r['ratio']:.2f}x", flush=True)
    if len(results) == 2:
        pd.testing.assert_frame_equal(results["no"]["table"].drop(columns="latency_ms"),
                                      results["yes"]["table"].drop(columns="latency_ms"), check_exact=True)
        print("tables of the two sweeps: equal (all columns but latency_ms)")
    print(json.dumps({"bench": "keep_rate_sweep", "machine": machine(), "conversations": args.conversations,
                      "probes": dataset.n_probes, "embedder": args.embedder,
                      "results": {k: {m: v[m] for m in ("one_run_s", "sweep_s", "ratio")} for k, v in results.items()}}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
