"""LongMemEval retrieval, scored by LongMemEval's own protocol, for the built-in strategies.

    python bench/bench_longmemeval.py [--only bm25,bm25_plus] [--limit N] [--dense N] [--dense-all CACHE_DIR]
                                      [--skip-s] [--scaling N] [--out bench/results/longmemeval.json]

Data: ``../shared/datasets/longmemeval/`` (``MEMLAB_LONGMEMEVAL`` names another folder):
oracle dev (402 questions, evidence sessions only) and S dev (401 questions, ~50 sessions
each, read one question at a time). Protocol: one haystack per question, replayed in date
order; the question is asked after the last turn; units are the user turns (LongMemEval's
turn-level keys, ``roles=("user",)``) unless a row says "every turn"; ``bm25_sessions``
retrieves whole sessions. Abstention questions are left out of every score (counted).

Metrics (``memlab.eval.metrics``): ``lme_recall_any@k``, ``lme_recall_all@k`` and
``lme_ndcg_any@k`` are LongMemEval's session-level metrics computed as its code computes
them (``memlab.eval.metrics.longmemeval``: the non-evidence turns of an evidence session are
a unit of their own, k counts distinct units, abstention questions and questions with no
user turn marked has_answer are left out), ``lme_turn_*`` its turn-level ones;
``session_hit_rate@k`` is memlab's more lenient session metric (any turn of an evidence
session counts); ``recall@k`` the share of evidence turns in the first k hits;
``recall@1024tok`` the same within the first 1,024 tokens of hits (token-matched, so
whole-session units pay for their size). Intervals are 95% bootstrap intervals clustered
by question. ``seconds`` is the whole replay on this machine's shared cores.

The anchor is computed, not quoted: ``longmemeval_code.py`` (beside this file, a
transcription of LongMemEval's run_retrieval.py and eval_utils.py) runs LongMemEval's
flat-bm25 on the same files and scores it with its own code; memlab's ``flat_bm25``
strategy is that retriever inside memlab's replay.

Sections: (1) streaming load of S dev (time, peak traced memory); (2) lexical strategies
on oracle dev and the full S dev, overall and by question type; (2b) with ``--dense-all
CACHE_DIR``, the dense strategies (e5) on the full S dev, reading the vectors that
``bench/bench_longmemeval_speed.py --cache-dir`` embedded cold (its time is that bench's);
(3) dense strategies (e5) on a fixed subset of S dev (the first ``--dense`` questions of
each type), cold and warm embedding cache; (4) haystack scaling (``memlab.eval.haystack``) with ``--scaling N``
questions per type. Everything is written to ``--out`` (JSON); the README's LongMemEval
table is checked against that file by ``tests/test_readme_longmemeval.py``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common  # noqa: E402,F401  (environment: offline, one BLAS thread, this checkout's memlab)

from memlab import strategies  # noqa: E402
from memlab.eval.configuration import configuration_hash  # noqa: E402
from memlab.eval.dataset import LoadReport  # noqa: E402
from memlab.eval.loaders import iter_longmemeval  # noqa: E402
from memlab.eval.metrics import summarize  # noqa: E402
from memlab.eval.paths import LONGMEMEVAL_ORACLE, LONGMEMEVAL_S, longmemeval_path  # noqa: E402
from memlab.eval.provenance import file_sha256, run_provenance  # noqa: E402
from memlab.eval.streaming import StreamedDataset, replay_stream  # noqa: E402

KS = (1, 3, 5, 10, 30, 50)   # the cut-offs LongMemEval's run_retrieval.py reports
BUDGETS = (512, 1024, 2048)
#: (label, registered name, parameters, roles indexed)
LEXICAL = [
    ("flat_bm25", "flat_bm25", {}, ("user",)),
    ("bm25", "bm25", {}, ("user",)),
    ("bm25 (stemmed)", "bm25_plus", {"before": 0, "after": 0, "own_weight": 1, "date": False}, ("user",)),
    ("bm25_plus", "bm25_plus", {}, ("user",)),
    ("bm25_plus (every turn)", "bm25_plus", {}, None),
    ("bm25_prf", "bm25_prf", {}, ("user",)),
    ("bm25_sessions", "bm25_sessions", {}, ("user",)),
    ("bm25_session_prior", "bm25_session_prior", {}, ("user",)),
    ("bm25_sessions (every turn)", "bm25_sessions", {}, None),
    ("vector (hashing)", "vector", {}, ("user",)),
    ("hybrid (hashing)", "hybrid", {}, ("user",)),
    ("window", "window", {}, ("user",)),
]
#: Run on oracle dev and on the S dev subset only, not on the full S dev: the every-turn rows
#: index twice the turns and only show what user-only units gain. Not run at all: longterm,
#: layered and layered_lifecycle, which score their whole history for a context at every
#: turn (longterm: 5 s per oracle question on 2 shared cores) and recall with bm25_plus's or
#: hybrid_plus's retriever, measured here.
ORACLE_ONLY = {"bm25_plus (every turn)", "bm25_sessions (every turn)"}
#: Strategies of the haystack scaling study: one BM25 over turns, one over sessions.
SCALING = ("bm25 (stemmed)", "bm25_sessions")
DENSE = [
    ("vector (e5)", "vector", {"embedder": "e5"}, ("user",)),
    ("hybrid_plus", "hybrid_plus", {}, ("user",)),
    ("hybrid_decay", "hybrid_decay", {}, ("user",)),
]
#: Columns of the tables, in order: LongMemEval's metrics first, then memlab's own.
HEADLINE = ["lme_recall_any@5", "lme_recall_any@10", "lme_recall_all@5", "lme_ndcg_any@10", "lme_turn_recall_any@10",
            "recall@5", "recall@10", "recall@1024tok", "session_hit_rate@5", "session_hit_rate@1024tok"]
BY_TYPE = ["lme_recall_any@5", "lme_recall_all@5", "recall@10", "recall@1024tok"]
#: The metrics of LongMemEval's own averages (``longmemeval_code.average``), per level.
OFFICIAL = {"session": ["recall_any", "recall_all", "ndcg_any"], "turn": ["recall_any", "recall_all", "ndcg_any"]}


def _num(v: Any) -> Any:
    return None if v is None or (isinstance(v, float) and math.isnan(v)) else round(float(v), 6)


def figures(rows, seconds: float) -> dict[str, Any]:
    """Means (with 95% clustered intervals) of the headline metrics, counts and time."""
    s = summarize(rows, by=["strategy"], ci=True).iloc[0]
    abstention = rows["probe_id"].astype(str).str.endswith("_abs")
    unscored = rows["gold"].map(len).eq(0)
    out: dict[str, Any] = {"n_questions": int(len(rows)), "n_scored": int(s["n_scored"]),
                           "n_abstention": int(abstention.sum()),
                           "n_no_user_evidence": int((unscored & ~abstention).sum())}
    lme = [f"{m}@{k}" for m in ("lme_recall_any", "lme_recall_all", "lme_ndcg_any", "lme_turn_recall_any",
                                "lme_turn_recall_all", "lme_turn_ndcg_any") for k in KS]
    for m in dict.fromkeys(HEADLINE + lme + ["hit_rate@5", "tokens@1024tok", "session_ndcg@10",
                                             "session_recall_all@5"]):
        if m in s:
            out[m] = _num(s[m])
            if f"{m}_ci_low" in s:
                out[m + "_ci"] = [_num(s[f"{m}_ci_low"]), _num(s[f"{m}_ci_high"])]
    out["seconds"] = round(seconds, 1)
    out["seconds_per_question"] = round(seconds / max(len(rows), 1), 4)
    if "config_hash" in rows.attrs:
        out["config_hash"] = rows.attrs["config_hash"]
    by = summarize(rows, by=["category"], ci=False)
    out["by_type"] = {str(r["category"]): {m: _num(r[m]) for m in BY_TYPE} | {"n_scored": int(r["n_scored"])}
                      for _, r in by.iterrows()}
    return out


def streamed(path: Path, roles, questions: set[str] | None = None, limit: int | None = None) -> Any:
    """A StreamedDataset of the file (optionally only some questions / the first ``limit``)."""
    def reader(p, report=None, **kw):
        n = 0
        for d in iter_longmemeval(p, report=report, **kw):
            if questions is not None and d.id not in questions:
                continue
            if limit is not None and n >= limit:
                return
            n += 1
            yield d
    return StreamedDataset("longmemeval", str(path), reader, roles=roles)


#: What a row's figures depend on besides the strategy and the data (its ``config_hash``).
PROTOCOL = {"ks": list(KS), "budgets": list(BUDGETS)}
_DATA_SHA: dict[str, str] = {}


def run(label: str, name: str, params: dict, roles, path: Path, questions=None, limit=None) -> tuple[Any, float]:
    strategy = strategies.get(name, **params)
    start = time.perf_counter()
    rows = replay_stream(strategy, streamed(path, roles, questions, limit), ks=KS, budgets=BUDGETS, label=label)
    seconds = time.perf_counter() - start
    rows.attrs["config_hash"] = configuration_hash(
        strategy, [_DATA_SHA.setdefault(str(path), file_sha256(path))],
        PROTOCOL | {"roles": list(roles) if roles else None, "questions": sorted(questions) if questions else None,
                    "limit": limit})
    return rows, seconds


def load_section(s_path: Path) -> dict[str, Any]:
    """One streamed pass over S dev: seconds, peak traced Python memory, report counts."""
    report = LoadReport()
    tracemalloc.start()
    start = time.perf_counter()
    n = turns = 0
    for d in iter_longmemeval(str(s_path), report=report):
        n += 1
        turns += d.n_turns
    seconds = time.perf_counter() - start
    peak = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    return {"questions": n, "turns": turns, "seconds": round(seconds, 1), "peak_traced_mb": round(peak, 1),
            "file_mb": round(s_path.stat().st_size / 2**20, 1), "report": report.counts()}


def fmt(v: Any, pct: bool = True) -> str:
    if v is None:
        return "-"
    return f"{100 * v:.1f}" if pct else f"{v:.1f}"


def print_table(title: str, table: dict[str, dict[str, Any]]) -> None:
    print(f"\n{title}")
    cols = HEADLINE + ["seconds"]
    print("| strategy | " + " | ".join(cols) + " |")
    print("|---|" + "---:|" * len(cols))
    for label, f in table.items():
        print(f"| {label} | " + " | ".join(fmt(f.get(c)) for c in HEADLINE) + f" | {f['seconds']:.0f} |")


def print_by_type(title: str, table: dict[str, dict[str, Any]]) -> None:
    print(f"\n{title}: lme_recall_any@5 / recall@1024tok by question type")
    types = sorted({t for f in table.values() for t in f["by_type"]})
    print("| strategy | " + " | ".join(types) + " |")
    print("|---|" + "---:|" * len(types))
    for label, f in table.items():
        cells = [f"{fmt(f['by_type'][t]['lme_recall_any@5'])} / {fmt(f['by_type'][t]['recall@1024tok'])}"
                 if t in f["by_type"] else "-" for t in types]
        print(f"| {label} | " + " | ".join(cells) + " |")


#: Columns of the README tables (metric names as in the results file; percent, one decimal).
README_COLUMNS = ["lme_recall_any@5", "lme_recall_any@10", "lme_recall_all@5", "lme_turn_recall_any@10",
                  "recall@1024tok", "session_hit_rate@5"]


def readme_markdown(results: dict[str, Any]) -> str:
    """The README's LongMemEval tables from a results file; each table follows a marker
    comment ``<!-- longmemeval:<section> -->`` that ``tests/test_readme_longmemeval.py`` reads."""
    parts = []
    sections = [("s", results.get("s")), ("s_dense", results.get("s_dense")), ("oracle", results.get("oracle")),
                ("s_dense_subset", (results.get("s_dense_subset") or {}).get("table"))]
    titles = {"s": "S dev (longmemeval_s_cleaned, the 2025-09 cleaned release), every question",
              "oracle": "oracle dev (longmemeval_oracle), every question",
              "s_dense": "S dev (cleaned), every question, dense strategies (e5; seconds with the embedding cache filled "
                         "by the cold run of bench/bench_longmemeval_speed.py)",
              "s_dense_subset": "S dev (cleaned), fixed subset (the first questions of each type), dense and lexical"}
    for key, table in sections:
        if not table:
            continue
        first = next(iter(table.values()))
        parts.append(f"**{titles[key]}** ({first['n_questions']} questions, {first['n_scored']} scored; left out "
                     f"as LongMemEval leaves them out: {first['n_abstention']} abstention, "
                     f"{first.get('n_no_user_evidence', 0)} with no user turn marked has_answer):")
        parts.append("")
        parts.append(f"<!-- longmemeval:{key} -->")
        parts.append("| strategy | " + " | ".join(README_COLUMNS) + " | seconds |")
        parts.append("|---|" + "---:|" * (len(README_COLUMNS) + 1))
        for label, f in table.items():
            parts.append(f"| `{label}` | " + " | ".join(fmt(f.get(c)) for c in README_COLUMNS)
                         + f" | {f['seconds']:.0f} |")
        parts.append("")
    parts += targets(results) + defaults(results)
    parts.append("<!-- longmemeval:official -->")
    parts.append("| file | retriever, scored by LongMemEval's code | questions | scored | "
                 + " | ".join(OFFICIAL_COLUMNS) + " |")
    parts.append("|---|---|---:|---:|" + "---:|" * len(OFFICIAL_COLUMNS))
    for key, f in (results.get("official") or {}).items():
        parts.append(f"| {key} | {f['retriever']} | {f['n_questions']} | {f['n_scored']} | "
                     + " | ".join(fmt(f[c]) for c in OFFICIAL_COLUMNS) + " |")
    return "\n".join(parts) + "\n"


#: Columns of the official table (LongMemEval's own averages; session level unless marked turn).
OFFICIAL_COLUMNS = ["session recall_any@5", "session recall_any@10", "session recall_all@5", "turn recall_any@10"]


def official(path: Path, limit: int | None) -> dict[str, Any]:
    """LongMemEval's flat-bm25, run and averaged by its own (transcribed) code on the raw file:
    the anchor row, computed. Also the per-question values, for the bench's check against
    memlab's ``flat_bm25`` row."""
    import longmemeval_code as lme
    from memlab.eval.loaders.checks import iter_json_array

    start = time.perf_counter()
    entries, metrics = [], []
    for n, entry in enumerate(iter_json_array(str(path))):
        if limit is not None and n >= limit:
            break
        corpus, corpus_ids, correct = lme.corpus_of(entry)
        rankings = lme.flat_bm25_rankings(entry["question"], corpus) if corpus else []
        metrics.append(lme.question_metrics(rankings, correct, corpus_ids))
        entries.append({k: entry[k] for k in ("question_id", "haystack_sessions")})
    averaged, ignored = lme.average(entries, metrics)
    out: dict[str, Any] = {"retriever": "flat-bm25 (rank_bm25 BM25Okapi, split(' '), user turns)",
                           "n_questions": len(entries),
                           "n_scored": len(entries) - len(ignored["abstention"]) - len(ignored["no_target"]),
                           "n_abstention": len(ignored["abstention"]), "n_no_user_evidence": len(ignored["no_target"])}
    for level, names in OFFICIAL.items():
        for name in names:
            for k in KS:
                out[f"{level} {name}@{k}"] = _num(averaged[level][f"{name}@{k}"])
    out["seconds"] = round(time.perf_counter() - start, 1)
    return out


#: Targets for the best built-in on S dev (percent): session recall_any@5, token-matched turn recall.
TARGETS = {"lme_recall_any@5": 98.5, "lme_recall_all@5": 92.0, "recall@1024tok": 95.0}


def targets(results: dict[str, Any]) -> list[str]:
    """Sentences on the targets, built from the S dev table: who is best, met or missed, and
    which question types hold the misses (questions missed = (1 - mean) x scored, rounded)."""
    table = dict(results.get("s") or {}) | dict(results.get("s_dense") or {})
    if not table:
        return []
    lines = []
    for metric, goal in TARGETS.items():
        best = max(table, key=lambda k: table[k].get(metric) or -1)
        f = table[best]
        value = 100 * f[metric]
        verdict = "met" if value >= goal else f"missed by {goal - value:.1f} points"
        misses = {t: round((1 - v[metric]) * v["n_scored"]) for t, v in f["by_type"].items()
                  if v.get(metric) is not None}
        worst = sorted((t for t in misses if misses[t]), key=lambda t: -misses[t])
        where = ", ".join(f"{t} {misses[t]} of {f['by_type'][t]['n_scored']} ({fmt(f['by_type'][t][metric])})"
                          for t in worst) or "none"
        lines.append(f"- Target {metric} >= {goal:.1f} on S dev: best `{best}` {value:.1f}, {verdict}; "
                     f"shortfall by type in questions ((1 - mean) x scored): {where}.")
    return lines + [""]


def defaults(results: dict[str, Any]) -> list[str]:
    """Sentences on the defaults chosen on LoCoMo, from pairs of rows measured here."""
    lines = []
    pairs = [("bm25_plus", "bm25 (stemmed)", "contextual indexing (`bm25_plus`: neighbours and date, chosen "
              "on LoCoMo) against the same stemmed BM25 over the turn alone"),
             ("bm25_plus (every turn)", "bm25_plus", "every turn indexed against user turns only (`bm25_plus`)"),
             ("bm25_session_prior", "bm25_plus", "`bm25_session_prior` against `bm25_plus`")]
    for a, b, what in pairs:
        cells = []
        for key in ("oracle", "s"):
            t = results.get(key) or {}
            if a in t and b in t:
                cells.append(f"{key} recall@5 {fmt(t[a]['recall@5'])} vs {fmt(t[b]['recall@5'])}, "
                             f"recall@1024tok {fmt(t[a]['recall@1024tok'])} vs {fmt(t[b]['recall@1024tok'])}")
        if cells:
            lines.append(f"- {what[0].upper() + what[1:]}: " + "; ".join(cells) + ".")
    dense = (results.get("s_dense_subset") or {}).get("table", {})
    cached = [f"`{k}` {v['seconds']:.0f} s cold, {v['seconds_warm_cache']:.0f} s warm"
              for k, v in dense.items() if "seconds_warm_cache" in v]
    if cached:
        lines.append("- Embedding cache (e5, one cache shared by the dense runs in this order, so only the "
                     "first run is cold): " + "; ".join(cached) + ".")
    return lines + [""] if lines else []


def cache_rows(folder: str) -> int:
    """Vectors in the embedding cache file of ``folder`` (0 when there is none)."""
    import sqlite3

    path = Path(folder) / "embeddings.sqlite3"
    if not path.exists():
        return 0
    with sqlite3.connect(path) as conn:
        return int(conn.execute("SELECT COUNT(*) FROM embeddings").fetchone()[0])


def dense_all(s_path: Path, cache: str, only: set[str] | None, limit: int | None) -> dict[str, dict[str, Any]]:
    """The dense strategies on the full S dev, reading vectors from the embedding cache in
    ``cache`` (``MEMLAB_CACHE_DIR``); each row records the texts it had to embed itself."""
    table: dict[str, dict[str, Any]] = {}
    before_env = os.environ.get("MEMLAB_CACHE_DIR")
    os.environ["MEMLAB_CACHE_DIR"] = cache
    try:
        for label, name, params, roles in DENSE:
            if only is not None and label not in only:
                continue
            before = cache_rows(cache)
            rows, seconds = run(label, name, params, roles, s_path, limit=limit)
            table[label] = figures(rows, seconds) | {"texts_embedded": cache_rows(cache) - before}
            print(f"s dense {label}: {json.dumps({m: table[label].get(m) for m in HEADLINE})} {seconds:.0f} s, "
                  f"{table[label]['texts_embedded']} texts embedded", flush=True)
    finally:
        if before_env is None:
            del os.environ["MEMLAB_CACHE_DIR"]
        else:
            os.environ["MEMLAB_CACHE_DIR"] = before_env
    return table


def first_per_type(path: Path, n: int) -> list[str]:
    """The first ``n`` scored questions of each type, in file order (a fixed subset)."""
    taken: dict[str, int] = {}
    chosen = []
    for d in iter_longmemeval(str(path), roles=("user",)):
        p = d.probes[0]
        if p.evidence and taken.get(p.category, 0) < n:
            taken[p.category] = taken.get(p.category, 0) + 1
            chosen.append(d.id)
    return chosen


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", default=None, help="comma-separated labels to run (default: all)")
    ap.add_argument("--limit", type=int, default=None, help="first N questions of each file (a quick run)")
    ap.add_argument("--dense", type=int, default=5, help="questions per type for the dense runs (0: none)")
    ap.add_argument("--dense-all", metavar="CACHE_DIR", default=None,
                    help="also run the dense strategies on the full S dev with the e5 embedding cache in CACHE_DIR "
                         "(filled by bench/bench_longmemeval_speed.py --cache-dir; texts it lacks are embedded)")
    ap.add_argument("--skip-s", action="store_true", help="oracle dev only")
    ap.add_argument("--skip-oracle", action="store_true", help="S dev only")
    ap.add_argument("--no-load", action="store_true", help="skip the streaming-load measurement")
    ap.add_argument("--scaling", type=int, default=3, help="questions per type for the scaling study (0: none)")
    ap.add_argument("--out", default=str(Path(__file__).resolve().parent / "results" / "longmemeval.json"))
    ap.add_argument("--readme", action="store_true", help="print the README tables from --out and stop")
    args = ap.parse_args(argv)
    if args.readme:
        print(readme_markdown(json.loads(Path(args.out).read_text())), end="")
        return 0
    oracle, s_path = longmemeval_path(LONGMEMEVAL_ORACLE), longmemeval_path(LONGMEMEVAL_S)
    if oracle is None or s_path is None:
        print("LongMemEval not found: set MEMLAB_LONGMEMEVAL or put the files in ../shared/datasets/longmemeval/")
        return 1
    only = set(args.only.split(",")) if args.only else None
    out: dict[str, Any] = {"protocol": {"ks": list(KS), "budgets": list(BUDGETS), "limit": args.limit,
                                        "dense_per_type": args.dense, "scaling_per_type": args.scaling},
                           # taken before the run: its data hashes are what every config_hash names
                           "provenance": run_provenance(data=[oracle, s_path])}
    load_start = os.getloadavg()[0]
    if not args.skip_s and not args.no_load:
        out["load"] = load_section(s_path)
        ld = out["load"]
        print(f"S dev streamed: {ld['questions']} questions, {ld['turns']:,} turns, {ld['seconds']} s, "
              f"peak traced memory {ld['peak_traced_mb']} MB (file {ld['file_mb']} MB gzip); report {ld['report']}",
              flush=True)
    for key, path in (("oracle", oracle), ("s", s_path)):
        if (key == "s" and args.skip_s) or (key == "oracle" and args.skip_oracle):
            continue
        table: dict[str, dict[str, Any]] = {}
        for label, name, params, roles in LEXICAL:
            if (only is not None and label not in only) or (key == "s" and label in ORACLE_ONLY):
                continue
            rows, seconds = run(label, name, params, roles, path, limit=args.limit)
            table[label] = figures(rows, seconds)
            print(f"{key} {label}: {json.dumps({m: table[label].get(m) for m in HEADLINE})} {seconds:.0f} s",
                  flush=True)
        out[key] = table
        print_table(f"LongMemEval {key} dev", table)
        print_by_type(f"LongMemEval {key} dev", table)
        if only is None or "flat_bm25" in only:
            out.setdefault("official", {})[key] = official(path, args.limit)
            print(f"{key} LongMemEval's code, flat-bm25: "
                  + json.dumps({c: out["official"][key][c] for c in OFFICIAL_COLUMNS}), flush=True)
    if args.dense_all and not args.skip_s:
        out["s_dense"] = dense_all(s_path, args.dense_all, only, args.limit)
        print_table("LongMemEval S dev, dense strategies (embedding cache given)", out["s_dense"])
        print_by_type("LongMemEval S dev, dense strategies", out["s_dense"])
    if args.dense and not args.skip_s:
        chosen = first_per_type(s_path, args.dense)
        table = {}
        with tempfile.TemporaryDirectory() as cache:
            os.environ["MEMLAB_CACHE_DIR"] = cache  # a cold cache, then the same runs warm
            for label, name, params, roles in DENSE:
                rows, cold = run(label, name, params, roles, s_path, questions=set(chosen))
                _, warm = run(label, name, params, roles, s_path, questions=set(chosen))
                table[label] = figures(rows, cold) | {"seconds_warm_cache": round(warm, 1)}
                print(f"s subset {label}: cold {cold:.0f} s, warm {warm:.0f} s", flush=True)
            for label, name, params, roles in LEXICAL:
                rows, seconds = run(label, name, params, roles, s_path, questions=set(chosen))
                table[label] = figures(rows, seconds)
        out["s_dense_subset"] = {"questions": chosen, "table": table}
        print_table(f"S dev subset ({len(chosen)} questions, {args.dense} per type), dense and lexical", table)
    if args.scaling and not args.skip_s:
        from memlab.eval.haystack import scaling_study
        chosen = first_per_type(s_path, args.scaling)
        scaled = [run for run in LEXICAL if run[0] in SCALING]
        study = scaling_study(str(s_path), chosen, strategies={lab: (n, p) for lab, n, p, _ in scaled},
                              sizes=("evidence", 5, 10, 20, 50, 100, 200, 500), budget=1024)
        out["scaling"] = study
        print("\nHaystack scaling (recall@1024tok turn / session_hit_rate@1024tok, s per question):")
        for row in study["rows"]:
            print(f"  {row['strategy']:>14} {str(row['size']):>8} sessions={row['mean_sessions']:.0f} "
                  f"turn {fmt(row['recall@1024tok'])} [{fmt(row['recall@1024tok_ci'][0])}, "
                  f"{fmt(row['recall@1024tok_ci'][1])}] session {fmt(row['session_hit_rate@1024tok'])} "
                  f"{row['seconds_per_question']:.2f} s/q")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    from memlab.atomic import atomic_write_text
    # timings are this run's, on shared cores: the 1-minute load it started and ended under
    out["load_avg_1m"] = [round(load_start, 2), round(os.getloadavg()[0], 2)]
    atomic_write_text(args.out, json.dumps(out, indent=1) + "\n")
    print(f"\nwritten {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
