"""BEAM retrieval at message level, per conversation size and per memory ability, for built-in strategies.

    python bench/bench_beam.py [--sizes 100K,500K,1M] [--strategies bm25,bm25_plus,hybrid_plus]
                               [--limit N] [--out bench/results/beam.json]

Data: BEAM (Tavakoli et al., 2025, "Beyond a Million Tokens", arXiv 2510.27246), read from
``../shared/datasets/beam/`` (``MEMLAB_BEAM`` names another folder) by
``memlab.eval.loaders.beam``: 100K (20 conversations), 500K (35) and 1M (the 9 of 35 whose
chat.json could be obtained). Every conversation of each size is replayed unless ``--limit``
keeps the first N (in number order; the record says which). The 10M set (another layout:
``10M/<n>/plan-<k>/chat.json``) is not on this machine and is not run; no longer haystack is
built here by concatenating conversations either.

Protocol: one conversation is one dialogue; every message (user and assistant) is a unit,
since BEAM's references point at assistant messages too; the plan markers (``->-> b,k``) are
removed from the text (they link questions to messages); each probing question is asked
after the last message. Evidence is the messages a question's ``source_chat_ids`` name
(knowledge_update: the updated statement; the original one is stale evidence). Abstention
questions and questions without a resolvable reference are unscored (counted).

Metrics (``memlab.eval.metrics``): ``recall@k``: the share of a question's evidence
messages in the first k hits; ``recall@1024tok``: the same within the first 1,024 tokens of
hits (token-matched); ``hit_rate@5``; ``context_tokens``: the tokens of the context the
strategy builds for the question (its own default budget). Means over scored questions,
with 95% bootstrap intervals resampling conversations (``summarize(ci=True)``, seeded),
overall and per ability. ``seconds``: the whole streamed replay (read, index, ask) of one
size by one strategy on this machine's shared cores; ``peak_rss_mb``: that child process's
peak resident memory (``ru_maxrss``, interpreter and imports included; ``baseline_rss_mb``
is the same before the data is read). Each (size, strategy) runs in a fresh process so the
peaks do not carry over. ``hybrid_plus`` runs with the offline hashing embedder (no model:
e5 on 2 shared cores over a million tokens is out of reach here), so it measures the fusion,
not a semantic embedder.

The record (``--out``, written atomically, one run per file) holds the provenance of the run
(the sha256 of every file read), the 1-minute load average at start and end, and per size:
the conversations, their history lengths (messages and tokens), the loader's report, and per
strategy the figures above, per ability, and per conversation (recall against history
length, drawn by notebooks/11_beam.ipynb).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common  # noqa: E402  (environment: offline, one BLAS thread, this checkout's memlab)

from memlab.atomic import atomic_write_text  # noqa: E402
from memlab.eval.dataset import LoadReport  # noqa: E402
from memlab.eval.loaders.beam import conversation_files, conversation_folders, iter_beam  # noqa: E402
from memlab.eval.paths import beam_path  # noqa: E402
from memlab.eval.provenance import file_sha256, run_provenance  # noqa: E402

SIZES = ("100K", "500K", "1M")
#: (label, registered name, parameters)
STRATEGIES = {
    "bm25": ("bm25", {}),
    "bm25_plus": ("bm25_plus", {}),
    "hybrid_plus": ("hybrid_plus", {"embedders": ["hashing"]}),
}
KS = (1, 5, 10)
BUDGETS = (1024,)
#: The loader's options for every run (its defaults, stated so the record says them).
OPTIONS = {"roles": ("user", "assistant"), "strip_markers": True, "stale_original": True}
#: Figures of each row: the metric, then its interval where it has one.
FIGURES = ["recall@5", "recall@10", "recall@1024tok", "hit_rate@5", "recall@1", "context_tokens",
           "stale_in_context"]
PER_DIALOGUE = ["recall@5", "recall@10", "recall@1024tok"]
OUT = _common.ROOT / "bench" / "results" / "beam.json"


def _num(v: Any) -> Any:
    return None if v is None or (isinstance(v, float) and math.isnan(v)) else round(float(v), 6)


def _row_figures(row: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"n_probes": int(row["n_probes"]), "n_scored": int(row["n_scored"])}
    if "n_dialogues" in row:
        out["n_dialogues"] = int(row["n_dialogues"])
    for m in FIGURES:
        if m in row:
            out[m] = _num(row[m])
            if f"{m}_ci_low" in row:
                out[m + "_ci"] = [_num(row[f"{m}_ci_low"]), _num(row[f"{m}_ci_high"])]
    return out


def protocol(conversations: list[str]) -> dict[str, Any]:
    """What a row's figures depend on besides the strategy and the data files (its config_hash)."""
    return {"ks": list(KS), "budgets": list(BUDGETS),
            "options": {k: list(v) if isinstance(v, tuple) else v for k, v in OPTIONS.items()},
            "conversations": sorted(conversations)}


def config_hash(label: str, shas: list[str], conversations: list[str]) -> str:
    """The configuration hash of a row: strategy ``label`` on files of these sha256s, these conversations."""
    from memlab import strategies
    from memlab.eval.configuration import configuration_hash

    name, params = STRATEGIES[label]
    return configuration_hash(strategies.get(name, **params), shas, protocol(conversations))


def folders(size: str, limit: int | None, report: LoadReport | None = None) -> list[Path]:
    path = beam_path(size)
    if path is None:
        print(f"BEAM {size} not found: set MEMLAB_BEAM or put BEAM at ../shared/datasets/beam/{size}")
        raise SystemExit(1)
    found = conversation_folders(str(path), report)
    return found[:limit] if limit else found


def child(size: str, label: str, limit: int | None) -> dict[str, Any]:
    """Replay one size with one strategy in this process; its figures (printed as JSON)."""
    from memlab import strategies
    from memlab.eval.metrics import summarize
    from memlab.eval.streaming import StreamedDataset, replay_stream

    baseline = _common.peak_rss_mb()
    chosen = folders(size, limit)
    root = beam_path(size)

    def reader(path: str, report: LoadReport | None = None, **options: Any):
        # the whole size folder streamed, one conversation at a time, the first ``limit`` kept
        for folder in chosen:
            yield from iter_beam(str(folder), report=report, **options)

    name, params = STRATEGIES[label]
    strategy = strategies.get(name, **params)
    start = time.perf_counter()
    rows = replay_stream(strategy, StreamedDataset("beam", str(root), reader, **OPTIONS), ks=KS, budgets=BUDGETS,
                         label=label)
    seconds = time.perf_counter() - start
    peak = _common.peak_rss_mb()
    table = summarize(rows, by=["strategy"], per_category=True, ci=True)
    overall = table[table["category"] == "all"].iloc[0]
    out = _row_figures(overall)
    out["by_ability"] = {str(r["category"]): _row_figures(r) for _, r in table.iterrows() if r["category"] != "all"}
    per = summarize(rows, by=["dialogue_id"], metrics=PER_DIALOGUE)
    out["by_conversation"] = {str(r["dialogue_id"]): {m: _num(r[m]) for m in PER_DIALOGUE}
                              | {"n_scored": int(r["n_scored"])} for _, r in per.iterrows()}
    data = [file_sha256(f) for folder in chosen for f in conversation_files(folder)]
    out["config_hash"] = config_hash(label, data, [f"{size}-{f.name}" for f in chosen])
    out["seconds"] = round(seconds, 1)
    out["seconds_per_conversation"] = round(seconds / max(len(chosen), 1), 2)
    out["peak_rss_mb"] = round(peak, 1)
    out["baseline_rss_mb"] = round(baseline, 1)
    return out


def history(chosen: list[Path], report: LoadReport) -> dict[str, Any]:
    """The conversations of a size: messages, probes and history tokens of each, and the
    report (``report`` holds the folders skipped already)."""
    from memlab.tokens import TiktokenCounter

    counter = TiktokenCounter()
    convs: dict[str, Any] = {}
    for folder in chosen:
        for d in iter_beam(str(folder), report=report, **OPTIONS):
            convs[d.id] = {"messages": d.n_turns, "batches": len(d.sessions),
                           "tokens": sum(counter.count(t.text) for t in d.turns()),
                           "probes": len(d.probes), "scored": sum(bool(p.evidence) for p in d.probes)}
    return {"conversations": convs, "report": report.counts()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default=",".join(SIZES))
    parser.add_argument("--strategies", default=",".join(STRATEGIES))
    parser.add_argument("--limit", type=int, default=None, help="the first N conversations of each size")
    parser.add_argument("--out", default=str(OUT))
    parser.add_argument("--child", nargs=2, metavar=("SIZE", "STRATEGY"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(child(args.child[0], args.child[1], args.limit)))
        return 0
    sizes = [s for s in args.sizes.split(",") if s]
    labels = [s for s in args.strategies.split(",") if s]
    unknown = [s for s in labels if s not in STRATEGIES] + [s for s in sizes if s not in SIZES]
    if unknown:
        parser.error(f"unknown size or strategy {unknown}; sizes {list(SIZES)}, strategies {list(STRATEGIES)}")
    load_start = os.getloadavg()[0]
    record: dict[str, Any] = {
        "benchmark": "BEAM (Tavakoli et al., 2025, arXiv 2510.27246): message-level retrieval",
        "script": "bench/bench_beam.py",
        "protocol": {"ks": list(KS), "budgets": list(BUDGETS),
                     "options": {k: list(v) if isinstance(v, tuple) else v for k, v in OPTIONS.items()},
                     "probe_position": "after the last message", "ci": "95% bootstrap resampling conversations",
                     "hybrid_plus": "offline hashing embedder", "limit": args.limit,
                     "not_run": "10M (not on this machine); no concatenated longer haystack"},
        "sizes": {},
    }
    reports = {size: LoadReport() for size in sizes}  # the folders skipped (1M: questions but no chat)
    chosen_by_size = {size: folders(size, args.limit, reports[size]) for size in sizes}
    files = [f for chosen in chosen_by_size.values() for folder in chosen for f in conversation_files(folder)]
    # taken before the run: the checkout and data as they were when the figures were made
    provenance = run_provenance(data=files)
    for size, chosen in chosen_by_size.items():
        entry = history(chosen, reports[size])
        entry["strategies"] = {}
        for label in labels:
            extra = ["--limit", str(args.limit)] if args.limit else []
            f = _common.run_child(str(Path(__file__).resolve()), ["--child", size, label, *extra])
            entry["strategies"][label] = f
            print(f"{size:>4} {label:<12} recall@5 {f['recall@5']:.3f}  recall@10 {f['recall@10']:.3f}  "
                  f"recall@1024tok {f['recall@1024tok']:.3f}  context {f['context_tokens']:.0f} tok  "
                  f"{f['seconds']:.0f} s  peak {f['peak_rss_mb']:.0f} MB", flush=True)
        record["sizes"][size] = entry
    record["load_avg_1m"] = {"start": round(load_start, 2), "end": round(os.getloadavg()[0], 2)}
    record["provenance"] = provenance
    atomic_write_text(args.out, json.dumps(record, indent=1, sort_keys=False) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
