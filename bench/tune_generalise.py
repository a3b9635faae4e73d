"""How ``recall_plus``'s defaults were chosen: on development data only, one default for every
benchmark.

    python bench/tune_generalise.py [--workers 2] [--passes N] [--lme-limit N] [--reuse RECORD] [--record bench/results/generalise_tuning.json]

Protocol (issue 32, "honest tuning"):

- LoCoMo, leave-conversations-out: fold A tunes on conversations 0-4 and is scored on 5-9,
  fold B the reverse. LongMemEval: S dev (cleaned), the only LongMemEval split here, so its
  figures in the tuning are not held out (said in the record). BEAM: the first eight
  conversations of the 500K set (``BEAM_DEV``; long assistant messages, short user
  evidence), never the 100K set, which stays held out for ``bench/bench_generalise.py``.
- Objective of a configuration on a fold: the mean over the three benchmarks of each one's
  mean target metric (percent): LoCoMo (recall@5 + recall@512tok) / 2 on the fold's
  training conversations; LongMemEval (lme_recall_any@5 + lme_recall_all@5 +
  recall@1024tok) / 3 on S dev; BEAM (recall@5 + recall@512tok) / 2 on ``BEAM_DEV``. One
  default across benchmarks, not a winner per benchmark.
- Search: lexical (no model), coordinate ascent over the parts in ``GRID``'s order, from
  every part off: each part's settings are tried with the others at their best so far, the
  best kept (a tie keeps the current setting, else the earlier, simpler one); one pass by
  default, ``--passes N`` repeats it until a pass changes nothing (``coordinate_ascent``).
  Each fold runs its own path; the default is the configuration both folds choose, or, when
  they differ, the one with the best objective on all ten conversations (the record says
  which happened).
- Reported: each fold's choice scored on its held-out conversations (the
  leave-conversations-out estimate, pooled over the two folds by question).
- Reuse: ``--reuse RECORD`` takes the LongMemEval and BEAM figures of the configurations a
  previous record scored (most of a run's time), but only after re-running one of them (the
  all-off start) and finding every figure equal; LoCoMo is always re-run. The record names the
  run whose figures it reused, and their ``seconds`` are that run's.

Records: ``bench/results/generalise_tuning_2pass.json`` is this protocol's run with two passes
(``--passes 2 --reuse``), whose choice ``recall_plus``'s ``DEFAULTS`` hold (own-turn keys at
0.5); ``bench/results/generalise_tuning.json`` is its first pass alone, whose choice (own-turn
keys at 1.0) was the default before; ``bench/results/generalise_tuning_locomo_lme.json`` is the
earlier run over LoCoMo and LongMemEval alone (before BEAM and the long-message parts joined),
kept for comparison.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common  # noqa: E402,F401

#: (part, settings tried, the first one is "off")
GRID: list[tuple[str, list[dict[str, Any]]]] = [
    ("session fusion", [{"session_weight": 0.0}, {"session_weight": 0.2}, {"session_weight": 0.35},
                        {"session_weight": 0.5}, {"session_weight": 0.65}, {"session_weight": 0.8},
                        {"session_weight": 0.5, "session_pull": 5}]),
    ("session diversity", [{"diversity": 0.0}, {"diversity": 0.2}, {"diversity": 0.5}, {"diversity": 0.8}]),
    ("time boost", [{"time_weight": 0.0}, {"time_weight": 0.1, "time_slack_days": 1.0},
                    {"time_weight": 0.3, "time_slack_days": 1.0}, {"time_weight": 0.3, "time_slack_days": 3.0},
                    {"time_weight": 1.0, "time_slack_days": 1.0}]),
    ("neighbour window", [{"window_decay": 0.0}, {"window_decay": 0.5}]),
    ("keyphrase keys", [{"keyphrase_weight": 0}, {"keyphrase_weight": 1}]),
    # the keys' parts for long messages: a neighbour's words capped in a turn's key, a second
    # BM25 over the turn's own text, BM25's length normalisation
    ("neighbour cap", [{"neighbour_words": None}, {"neighbour_words": 32}, {"neighbour_words": 64}]),
    ("own-turn keys", [{"turn_weight": 0.0}, {"turn_weight": 0.5}, {"turn_weight": 1.0}]),
    ("BM25 b", [{"b": 0.75}, {"b": 1.0}]),
]
#: BEAM's development conversations: (size, conversation folders); the 100K set is held out.
BEAM_DEV = ("500K", tuple(str(i) for i in range(1, 9)))
START = {k: v for _, settings in GRID for k, v in settings[0].items()}
FOLDS = {"A": (range(0, 5), range(5, 10)), "B": (range(5, 10), range(0, 5))}


def key(config: dict[str, Any]) -> str:
    return json.dumps(dict(sorted(config.items())))


def coordinate_ascent(grid: list[tuple[str, list[dict[str, Any]]]], start: dict[str, Any],
                      score: Callable[[dict[str, Any]], float],
                      evaluate: Callable[[list[dict[str, Any]]], None] = lambda configs: None,
                      passes: int = 1) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The search: for each part in ``grid``'s order, each of its settings tried with the other
    parts at their best so far (the part's own keys cleared first, so a key one setting sets,
    such as ``session_pull``, does not leak into the next), and the best kept; the current
    setting stays unless another scores strictly higher, and among those that do the earliest
    (simplest) wins. Up to ``passes`` passes over the grid, fewer when a pass changes nothing.
    ``evaluate`` is called on each step's candidates before they are scored (to run them in
    parallel). Returns the best configuration and the steps (part, pass, tried, kept)."""
    best, steps = dict(start), []
    for n in range(1, passes + 1):
        changed = False
        for part, settings in grid:
            own = {k for setting in settings for k in setting}
            candidates = [{k: v for k, v in best.items() if k not in own} | s for s in settings]
            evaluate(candidates)
            scores = [score(c) for c in candidates]
            current = next((j for j, c in enumerate(candidates) if c == best), None)
            top = max(scores)
            i = current if current is not None and scores[current] == top else scores.index(top)
            changed |= candidates[i] != best
            best = candidates[i]
            steps.append({"part": part, "pass": n, "candidates": candidates, "scores": scores, "kept": settings[i]})
        if not changed:
            break
    return best, steps


def locomo_per_conversation(config: dict[str, Any], dataset) -> dict[str, Any]:
    """Per conversation (in file order): questions scored and the sums of the two metrics."""
    from memlab import strategies
    from memlab.eval import replay

    start = time.perf_counter()
    rows = replay(strategies.get("recall_plus", **config), dataset, ks=(5, 10), k_max=10, budgets=(512,))
    seconds = time.perf_counter() - start
    order = [d.id for d in dataset.dialogues]
    out = []
    for d in order:
        r = rows[rows["dialogue_id"] == d].dropna(subset=["recall@5"])
        out.append({"n": int(len(r)), "recall@5": float(r["recall@5"].sum()),
                    "recall@512tok": float(r["recall@512tok"].sum())})
    return {"conversations": out, "seconds": round(seconds, 1)}


def locomo_score(per: dict[str, Any], conversations) -> dict[str, float]:
    convs = [per["conversations"][i] for i in conversations]
    n = sum(c["n"] for c in convs)
    r5 = 100 * sum(c["recall@5"] for c in convs) / n
    rt = 100 * sum(c["recall@512tok"] for c in convs) / n
    return {"recall@5": round(r5, 2), "recall@512tok": round(rt, 2), "J": round((r5 + rt) / 2, 3), "n": n}


def beam_dev_paths() -> list[Path]:
    from memlab.eval.paths import beam_path

    root = Path(beam_path(BEAM_DEV[0]))
    return [root / c for c in BEAM_DEV[1]]


def beam_figures(config: dict[str, Any]) -> dict[str, Any]:
    """recall@5 and recall@512tok (percent) on ``BEAM_DEV``, pooled by question."""
    from memlab import strategies
    from memlab.eval import replay
    from memlab.eval.dataset import Dataset
    from memlab.eval.loaders.beam import load_beam

    paths = beam_dev_paths()
    dialogues = [d for p in paths for d in load_beam(str(p)).dialogues]
    dataset = Dataset(name="beam", dialogues=dialogues, source_path=str(paths[0].parent))
    start = time.perf_counter()
    rows = replay(strategies.get("recall_plus", **config), dataset, ks=(5, 10), k_max=10, budgets=(512,))
    seconds = time.perf_counter() - start
    r = rows.dropna(subset=["recall@5"])
    out = {m: round(100 * float(r[m].mean()), 2) for m in ("recall@5", "recall@512tok")}
    out["J"] = round((out["recall@5"] + out["recall@512tok"]) / 2, 3)
    out["n"] = int(len(r))
    out["seconds"] = round(seconds, 1)
    return out


def lme_figures(config: dict[str, Any], limit: int | None) -> dict[str, Any]:
    import bench_longmemeval as lme
    from memlab.eval.metrics import summarize
    from memlab.eval.paths import LONGMEMEVAL_S, longmemeval_path

    rows, seconds = lme.run("recall_plus", "recall_plus", config, ("user",), longmemeval_path(LONGMEMEVAL_S),
                            limit=limit)
    s = summarize(rows, by=["strategy"]).iloc[0]
    out = {m: round(100 * float(s[m]), 2) for m in ("lme_recall_any@5", "lme_recall_all@5", "recall@1024tok")}
    out["J"] = round(sum(out.values()) / 3, 3)
    out["seconds"] = round(seconds, 1)
    return out


FIGURES = {"longmemeval": ("lme_recall_any@5", "lme_recall_all@5", "recall@1024tok", "J"),
           "beam_dev": ("recall@5", "recall@512tok", "J", "n")}


def reusable(record: dict[str, Any], path: str, fresh: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The LongMemEval and BEAM figures of ``record``'s configurations, once ``fresh`` (this
    code's figures for one configuration the record scored: ``{"config", "longmemeval",
    "beam_dev"}``) equals the record's on every figure; else a ConfigError naming the first
    that differs. Returns ``{"configurations": {key: {"longmemeval", "beam_dev"}}, "from": ...}``."""
    from memlab.base import ConfigError

    if record.get("lme_limit") is not None:
        raise ConfigError(f"--reuse {path}: expected a record of every LongMemEval question, "
                          f"got one limited to {record['lme_limit']}")
    configs = record.get("configurations")
    if not isinstance(configs, dict) or not configs:
        raise ConfigError(f"--reuse {path}: expected a tuning record with 'configurations', got none")
    k = key(fresh["config"])
    if k not in configs:
        raise ConfigError(f"--reuse {path}: the check configuration {k} is not among its configurations")
    for bench, names in FIGURES.items():
        for name in names:
            old, new = configs[k][bench].get(name), fresh[bench].get(name)
            if old != new:
                raise ConfigError(f"--reuse {path}: {bench} {name} of {k} is {new} now but {old} in the "
                                  "record; its figures are not this code's, so none is reused")
    p = record.get("provenance", {})
    return {"configurations": {c: {"longmemeval": v["longmemeval"], "beam_dev": v["beam_dev"]}
                               for c, v in configs.items()},
            "from": {"record": path, "git_commit": p.get("git_commit"), "date": p.get("date"),
                     "configurations": len(configs), "checked": json.loads(k)}}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workers", type=int, default=2, help="processes for the LongMemEval runs")
    ap.add_argument("--lme-limit", type=int, default=None, help="the first N LongMemEval questions (a quick run)")
    ap.add_argument("--passes", type=int, default=1,
                    help="passes of the search over the grid (stops early when a pass changes nothing)")
    ap.add_argument("--reuse", default=None, metavar="RECORD",
                    help="reuse the LongMemEval and BEAM figures of a previous record after re-running one equal")
    ap.add_argument("--record", default=None)
    args = ap.parse_args(argv)
    if args.passes < 1:
        ap.error(f"--passes: expected a whole number >= 1, got {args.passes}")
    from memlab.eval import load_any
    from memlab.eval.loaders.beam import conversation_files
    from memlab.eval.paths import LONGMEMEVAL_S, locomo_path, longmemeval_path
    from memlab.eval.provenance import run_provenance

    locomo = locomo_path()
    dataset = load_any(locomo, "locomo")
    beam_files = [f for p in beam_dev_paths() for f in conversation_files(p)]
    provenance = run_provenance(data=[locomo, longmemeval_path(LONGMEMEVAL_S), *beam_files])
    lme_cache: dict[str, Any] = {}
    beam_cache: dict[str, Any] = {}
    loc_cache: dict[str, Any] = {}
    pool = ProcessPoolExecutor(max_workers=args.workers)
    reused = None
    if args.reuse:
        if args.lme_limit is not None:
            ap.error("--reuse: expected no --lme-limit (a record scored every question), got one")
        previous = json.loads(Path(args.reuse).read_text(encoding="utf-8"))
        check = dict(START)
        lme_future, beam_future = pool.submit(lme_figures, check, None), pool.submit(beam_figures, check)
        fresh = {"config": check, "longmemeval": lme_future.result(), "beam_dev": beam_future.result()}
        got = reusable(previous, args.reuse, fresh)
        for k, v in got["configurations"].items():
            lme_cache[k], beam_cache[k] = v["longmemeval"], v["beam_dev"]
        lme_cache[key(check)], beam_cache[key(check)] = fresh["longmemeval"], fresh["beam_dev"]
        reused = got["from"]
        print(f"reusing {len(got['configurations'])} configurations' LongMemEval and BEAM figures from "
              f"{args.reuse} (checked {key(check)})", flush=True)

    def evaluate(configs: list[dict[str, Any]]) -> None:
        todo = [c for c in configs if key(c) not in lme_cache]
        futures = {key(c): pool.submit(lme_figures, c, args.lme_limit) for c in todo}
        beam_futures = {key(c): pool.submit(beam_figures, c) for c in todo}
        for c in configs:
            if key(c) not in loc_cache:
                loc_cache[key(c)] = locomo_per_conversation(c, dataset)
        for k, f in futures.items():
            lme_cache[k] = f.result()
            print(f"  lme {k}: {lme_cache[k]}", flush=True)
        for k, f in beam_futures.items():
            beam_cache[k] = f.result()
            print(f"  beam {k}: {beam_cache[k]}", flush=True)

    def objective(c: dict[str, Any], train) -> float:
        return (locomo_score(loc_cache[key(c)], train)["J"] + lme_cache[key(c)]["J"] + beam_cache[key(c)]["J"]) / 3

    paths: dict[str, Any] = {}
    chosen: dict[str, dict[str, Any]] = {}
    for fold, (train, test) in FOLDS.items():
        best, found = coordinate_ascent(GRID, START, lambda c: objective(c, train), evaluate, args.passes)
        steps = []
        for step in found:
            steps.append({"part": step["part"], "pass": step["pass"],
                          "tried": [{"config": c, "objective": round(s, 3),
                                     "locomo_train": locomo_score(loc_cache[key(c)], train),
                                     "longmemeval": lme_cache[key(c)], "beam_dev": beam_cache[key(c)]}
                                    for c, s in zip(step["candidates"], step["scores"])],
                          "kept": step["kept"]})
            print(f"fold {fold} pass {step['pass']} {step['part']}: kept {step['kept']} "
                  f"(objective {max(step['scores']):.3f})", flush=True)
        chosen[fold] = best
        paths[fold] = {"train_conversations": list(train), "test_conversations": list(test), "steps": steps,
                       "chosen": best, "held_out_locomo": locomo_score(loc_cache[key(best)], test),
                       "train_locomo": locomo_score(loc_cache[key(best)], train)}
    pool.shutdown()
    if key(chosen["A"]) == key(chosen["B"]):
        default, how = chosen["A"], "both folds chose it"
    else:
        every = range(10)
        tried = [json.loads(k) for k in lme_cache]
        default = max(tried, key=lambda c: objective(c, every))
        how = "the folds differ: the best objective on all ten conversations among the configurations tried"
    a, b = paths["A"]["held_out_locomo"], paths["B"]["held_out_locomo"]
    n = a["n"] + b["n"]
    pooled = {m: round((a[m] * a["n"] + b[m] * b["n"]) / n, 2) for m in ("recall@5", "recall@512tok")}
    baseline = START
    record = {"protocol": __doc__.split("Protocol (issue 32, \"honest tuning\"):")[1].strip(),
              "provenance": provenance, "lme_limit": args.lme_limit, "passes": args.passes, "reused": reused,
              "longmemeval_note": "S dev is the only LongMemEval split here: its tuning figures are not held out",
              "beam_dev": {"size": BEAM_DEV[0], "conversations": list(BEAM_DEV[1]),
                           "note": "BEAM's development conversations; the 100K set is held out"},
              "grid": [{"part": p, "settings": s} for p, s in GRID], "folds": paths, "default": default,
              "default_how": how, "locomo_leave_conversations_out": pooled,
              "locomo_leave_conversations_out_all_parts_off": {
                  m: round(sum(locomo_score(loc_cache[key(baseline)], FOLDS[f][1])[m] * locomo_score(
                      loc_cache[key(baseline)], FOLDS[f][1])["n"] for f in FOLDS) / n, 2)
                  for m in ("recall@5", "recall@512tok")},
              "configurations": {k: {"longmemeval": lme_cache[k], "beam_dev": beam_cache[k],
                                     "locomo_seconds": loc_cache[k]["seconds"],
                                     "locomo_all": locomo_score(loc_cache[k], range(10))} for k in lme_cache}}
    print(json.dumps({"default": default, "how": how, "locomo_leave_conversations_out": pooled,
                      "folds": {f: p["chosen"] for f, p in paths.items()}}))
    if args.record:
        from memlab.atomic import atomic_write_text

        atomic_write_text(args.record, json.dumps(record, indent=1) + "\n")
        print(f"recorded {args.record}")
    return 0


if __name__ == "__main__":
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    raise SystemExit(main())
