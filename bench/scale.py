"""Streaming replay at growing length: does a strategy's cost grow with the work, not faster?

    python bench/scale.py [--sizes 1000,10000,100000] [--strategies bm25,window] [--budget 240] [--probes 200]
    python bench/scale.py --workload cycled-sessions --sizes 2000,8000,32000 --strategies bm25_plus,longterm \
        [--output bench/results/scale_cycled_sessions.json]

Workloads (``--workload``), one synthetic dialogue per size, built from LoCoMo's turns (all
ten conversations, in order) cycled to N turns one minute apart (the shipped datasets' turns
when LoCoMo is absent; the script says so on stderr):

- ``every-10th`` (default): one session; a probe (a LoCoMo question, cycled) after every
  10th turn, or ``--probes`` > 0 probes spread evenly; no evidence. Replayed by
  ``memlab.eval.replay_dialogue``.
- ``cycled-sessions`` (a reviewer's workload): sessions of ``SESSION_TURNS`` (50) turns,
  ``--probes`` probes (default 200) spread evenly (after turns N/p - 1, 2N/p - 1, ...,
  N - 1), each with the turn ``EVIDENCE_BACK`` (5) turns before it as evidence, replayed by
  ``memlab.eval.replay`` (metrics, session deepening and all) exactly as an evaluation
  does. A session boundary every 50 turns is what exposes a neighbour lookup that scans
  back to the previous record of the same session: the first turns of a session have none.

Each point runs in a fresh process, so peak memory is that point's own. Printed per strategy
and size: seconds, microseconds per turn, microseconds per append (``observe`` alone),
milliseconds per probe, peak resident memory, CPU seconds (the process's own: less moved than
wall time by other work on a shared machine); the log-log slope of total wall and CPU time
from the previous size, ``log(t2 / t1) / log(N2 / N1)``; then least-squares log-log slopes of total
time and of append time against N over every size (1.0 = linear). Retrieval strategies search every stored turn at each probe,
so their total grows like N^2 / 10 by construction; for exact vector search the script
also times memlab's ``NumpyVectorStore.query`` against the bare numpy limit (one matmul
and an argpartition over the same matrix) at each size.

A point whose predicted time (from the previous size, assuming the measured slope, at
least 1) exceeds ``--budget`` seconds is skipped and listed as such.

``--output FILE`` (``bench/results/<name>.json``) records this run alone, written atomically:
the workload and options, ``provenance`` (``memlab.eval.provenance.run_provenance`` with the
source dataset files as its data), the 1-minute load average at start and end, every point
and the slopes.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from pathlib import Path

from _common import ROOT, machine, peak_rss_mb, run_child, slope, table

STRATEGIES = ["window", "longterm", "bm25", "vector", "hybrid", "bm25_prf", "hybrid_decay", "layered", "bm25_plus",
              "full_context", "oracle", "camel_chat_history", "camel_longterm", "langchain_ensemble"]
PROBE_EVERY = 10
WORKLOADS = ("every-10th", "cycled-sessions")
#: cycled-sessions: turns per session, probes by default, how far back each probe's evidence is
SESSION_TURNS = 50
CYCLED_PROBES = 200
EVIDENCE_BACK = 5


def source_files() -> tuple[list[Path], str]:
    """The dataset files whose turns are cycled (LoCoMo, else the shipped datasets) and a name."""
    from memlab.eval.dataset_files import dataset_files
    from memlab.eval.paths import locomo_path

    path = locomo_path()
    if path is not None:
        return [Path(path)], "locomo"
    return dataset_files(ROOT / "datasets"), "shipped"


def load_source():
    """(turns, questions) to cycle: LoCoMo's, or the shipped datasets' when LoCoMo is absent."""
    from memlab.eval import load_any

    files, name = source_files()
    if name != "locomo":
        print("LoCoMo not found (MEMLAB_LOCOMO or ../shared/datasets/locomo/locomo10.json): cycling the "
              f"turns of the shipped datasets ({', '.join(f.name for f in files)}) instead", file=sys.stderr)
        dialogues = [d for f in files for d in load_any(f).dialogues]
    else:
        dialogues = load_any(files[0], "locomo").dialogues
    source = [t for d in dialogues for t in d.turns()]
    questions = [p.query for d in dialogues for p in d.probes]
    return source, questions


def build_dialogue(n_turns: int, probes: int = 0):
    """LoCoMo turns cycled to ``n_turns`` (fresh ids, one minute apart), a probe every 10th turn, or
    ``probes`` > 0 probes spread evenly (after turns n/p - 1, 2n/p - 1, ..., n - 1)."""
    from memlab.eval.dataset import Dialogue, Probe, Session, Turn

    source, questions = load_source()
    start = source[0].timestamp
    turns = [Turn(id=f"t{i}", speaker=src.speaker, role=src.role, text=src.text, content=src.content,
                  timestamp=start + 60.0 * i, session_id="s0")
             for i, src in ((i, source[i % len(source)]) for i in range(n_turns))]
    after = (range(PROBE_EVERY - 1, n_turns, PROBE_EVERY) if probes <= 0
             else [(j + 1) * n_turns // probes - 1 for j in range(probes)])
    probes = [Probe(id=f"p{j}", after_turn=f"t{i}", query=questions[j % len(questions)], evidence=[])
              for j, i in enumerate(after)]
    return Dialogue(id="scale", sessions=[Session(id="s0", timestamp=start, turns=turns)], probes=probes)


def build_cycled_sessions(n_turns: int, probes: int = CYCLED_PROBES):
    """The ``cycled-sessions`` dataset: one dialogue of ``n_turns`` cycled turns (fresh ids, one
    minute apart) in sessions of ``SESSION_TURNS``; ``probes`` questions (cycled) spread evenly,
    after turns n/p - 1, 2n/p - 1, ..., n - 1, each with the turn ``EVIDENCE_BACK`` before its
    own as evidence (none when there is no such turn)."""
    from memlab.eval.dataset import Dataset, Dialogue, Probe, Session, Turn

    source, questions = load_source()
    start = source[0].timestamp
    sessions = []
    for first in range(0, n_turns, SESSION_TURNS):
        sid = f"s{first // SESSION_TURNS}"
        turns = [Turn(id=f"t{i}", speaker=src.speaker, role=src.role, text=src.text, content=src.content,
                      timestamp=start + 60.0 * i, session_id=sid)
                 for i, src in ((i, source[i % len(source)]) for i in range(first, min(n_turns, first + SESSION_TURNS)))]
        sessions.append(Session(id=sid, timestamp=turns[0].timestamp, turns=turns))
    probes = max(1, min(probes, n_turns))
    after = [(j + 1) * n_turns // probes - 1 for j in range(probes)]
    made = [Probe(id=f"p{j}", after_turn=f"t{i}", query=questions[j % len(questions)],
                  evidence=[f"t{i - EVIDENCE_BACK}"] if i >= EVIDENCE_BACK else [])
            for j, i in enumerate(after)]
    return Dataset(name="cycled-sessions", dialogues=[Dialogue(id="scale", sessions=sessions, probes=made)])


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


def one_cycled_sessions(name: str, n_turns: int, probes: int) -> dict:
    """One point of the ``cycled-sessions`` workload, replayed by ``memlab.eval.replay``."""
    from memlab import strategies
    from memlab.eval.replay import replay

    dataset = build_cycled_sessions(n_turns, probes)
    strategy = strategies.get(name)
    # one short replay first, so one-time costs (tokenizer tables, lazy imports) are not timed
    replay(strategy, build_cycled_sessions(2 * SESSION_TURNS, 10), k_max=10)
    base_mb = peak_rss_mb()
    observed = [0.0]
    # replay clones the strategy for each dialogue: the clone's observe is timed through its class
    cls = type(strategy)
    observe = cls.observe

    def timed_observe(self, record):
        t0 = time.perf_counter()
        observe(self, record)
        observed[0] += time.perf_counter() - t0

    cls.observe = timed_observe
    t0, c0 = time.perf_counter(), time.process_time()
    rows = replay(strategy, dataset, k_max=10)
    seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
    cls.observe = observe
    return {"strategy": name, "turns": n_turns, "probes": len(rows), "seconds": seconds, "cpu_seconds": cpu,
            "us_per_turn": seconds / n_turns * 1e6, "append_us": observed[0] / n_turns * 1e6,
            "probe_ms": (seconds - observed[0]) / max(1, len(rows)) * 1000,
            "peak_mb": peak_rss_mb(), "base_mb": base_mb}


def one(name: str, n_turns: int, probes: int = 0, workload: str = "every-10th") -> dict:
    from memlab import strategies
    from memlab.eval.replay import replay_dialogue

    if workload == "cycled-sessions":
        return one_cycled_sessions(name, n_turns, probes if probes > 0 else CYCLED_PROBES)
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
    t0, c0 = time.perf_counter(), time.process_time()
    rows = replay_dialogue(strategy, dialogue, k_max=10)
    seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
    out = {"strategy": name, "turns": n_turns, "probes": len(rows), "seconds": seconds, "cpu_seconds": cpu,
           "us_per_turn": seconds / n_turns * 1e6, "append_us": observed[0] / n_turns * 1e6,
           "probe_ms": (seconds - observed[0]) / max(1, len(rows)) * 1000,
           "peak_mb": peak_rss_mb(), "base_mb": base_mb}
    search = exact_search_vs_limit(strategy)
    if search is not None:
        out["exact_search"] = search
    return out


def step_slope(prev: dict, cur: dict, key: str = "seconds") -> float:
    """Log-log slope of total time (``key``: wall ``seconds`` or ``cpu_seconds``) from the previous
    size: log(t2 / t1) / log(N2 / N1)."""
    if prev[key] <= 0 or cur[key] <= 0 or cur["turns"] == prev["turns"]:
        return float("nan")
    return math.log(cur[key] / prev[key]) / math.log(cur["turns"] / prev["turns"])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,100000", help="comma-separated turn counts")
    parser.add_argument("--strategies", default=",".join(STRATEGIES))
    parser.add_argument("--workload", choices=WORKLOADS, default="every-10th",
                        help="every-10th (default) or cycled-sessions (see the module docstring)")
    parser.add_argument("--budget", type=float, default=240.0,
                        help="skip a point predicted to take longer than this many seconds")
    parser.add_argument("--probes", type=int, default=0,
                        help="a fixed number of probes spread evenly (default 0: every-10th asks after every "
                             f"10th turn, cycled-sessions asks {CYCLED_PROBES})")
    parser.add_argument("--output", help="record this run alone in this JSON file (bench/results/<name>.json)")
    parser.add_argument("--one", nargs=2, metavar=("STRATEGY", "TURNS"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(one(args.one[0], int(args.one[1]), args.probes, args.workload)))
        return 0
    sizes = sorted(int(s) for s in args.sizes.split(","))
    files, source = source_files()
    provenance = None
    if args.output:
        from memlab.eval.provenance import run_provenance

        # taken before the run: the commit and data it names are those the run measures
        provenance = run_provenance(data=files)
    load_start = os.getloadavg()[0]
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
                r = run_child(__file__, ["--one", name, str(n), "--probes", str(args.probes),
                                         "--workload", args.workload])
            except RuntimeError as e:  # one failed point must not lose the others
                skipped.append({"strategy": name, "turns": n, "predicted_s": -1, "error": str(e)[-300:]})
                print(f"{name} at {n} turns failed: {str(e)[-300:]}", file=sys.stderr)
                break
            r["slope_from_previous"] = step_slope(done[-1], r) if done else None
            r["cpu_slope_from_previous"] = step_slope(done[-1], r, "cpu_seconds") if done else None
            print(f"{name:>12} {n:>7} turns: {r['seconds']:.2f} s ({r['cpu_seconds']:.2f} s CPU), peak "
                  f"{r['peak_mb']:.0f} MB" + (f", slope {r['slope_from_previous']:.2f} (CPU "
                                              f"{r['cpu_slope_from_previous']:.2f}) from {done[-1]['turns']}"
                                              if done else ""), file=sys.stderr)
            done.append(r)
        results.extend(done)
    load_end = os.getloadavg()[0]
    rows = []
    slopes = {}
    for name in args.strategies.split(","):
        pts = [r for r in results if r["strategy"] == name]
        total = slope([p["turns"] for p in pts], [p["seconds"] for p in pts])
        append = slope([p["turns"] for p in pts], [p["append_us"] * p["turns"] for p in pts])
        slopes[name] = {"total": round(total, 3), "append": round(append, 3),
                        "cpu": round(slope([p["turns"] for p in pts], [p["cpu_seconds"] for p in pts]), 3),
                        "steps": {f"{a['turns']}-{b['turns']}": round(step_slope(a, b), 3)
                                  for a, b in zip(pts, pts[1:])},
                        "cpu_steps": {f"{a['turns']}-{b['turns']}": round(step_slope(a, b, "cpu_seconds"), 3)
                                      for a, b in zip(pts, pts[1:])}}
        for p in pts:
            s = p.get("exact_search")
            step, cpu_step = p.get("slope_from_previous"), p.get("cpu_slope_from_previous")
            rows.append([name, p["turns"], p["seconds"], p["cpu_seconds"], p["us_per_turn"], p["append_us"], p["probe_ms"],
                         p["peak_mb"], f"{s['store_ms']:.3f}/{s['limit_ms']:.3f}={s['ratio']:.2f}x" if s else "",
                         float("nan") if step is None else step, float("nan") if cpu_step is None else cpu_step,
                         total, append])
    print(f"workload {args.workload}, turns from {source}")
    print(table(["strategy", "turns", "seconds", "CPU s", "us/turn", "append us", "ms/probe", "peak MB",
                 "search ms store/limit", "slope step", "CPU slope step", "slope total", "slope append"], rows))
    for s in skipped:
        print(f"skipped: {s['strategy']} at {s['turns']} turns (predicted {s['predicted_s']} s)")
    out = {"bench": "scale", "workload": args.workload, "source": source, "machine": machine(),
           "results": results, "slopes": slopes, "skipped": skipped}
    print(json.dumps(out))
    if args.output:
        from memlab.atomic import atomic_write_text

        options = {"sizes": sizes, "strategies": args.strategies.split(","), "probes": args.probes,
                   "budget": args.budget}
        if args.workload == "cycled-sessions":
            options.update(session_turns=SESSION_TURNS, evidence_back=EVIDENCE_BACK,
                           probes=args.probes if args.probes > 0 else CYCLED_PROBES)
        record = {"bench": "scale", "workload": args.workload, "source": source, "options": options,
                  "provenance": provenance,
                  # timings read beside other work: the load average (1 min) when the run started and ended
                  "load_avg_1m": [round(load_start, 2), round(load_end, 2)],
                  "results": results, "slopes": slopes, "skipped": skipped}
        atomic_write_text(args.output, json.dumps(record, indent=1) + "\n")
        print(f"recorded in {args.output}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
