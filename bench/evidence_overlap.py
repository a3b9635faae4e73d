"""How much of each question its evidence says in the question's words: the data side of a
lexical retriever's misses (``memlab.eval.overlap``), per category, with no retriever run.

    python bench/evidence_overlap.py [--dataset PATH --format NAME ...] [--record bench/results/evidence_overlap.json]

Without ``--dataset`` it reads the LoCoMo-format benchmarks of ``bench/bench_generalise.py``:
LoCoMo and BEAM 100K (from ``../shared/datasets`` or the ``MEMLAB_*`` variables). For each it
prints and records, per category and for all questions: the probes, the mean ``overlap`` (share
of the question's terms an evidence turn holds, averaged over its evidence turns), the share
``low`` (overlap below one half), the share with 5 or more ``rivals`` (other turns holding at
least as many question terms as the best evidence turn) and their median, and the mean words
of an evidence turn. ``docs/results.md`` sets these beside ``recall_plus``'s recall per
category; ``tests/test_evidence_overlap.py`` recomputes the record from the data.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common  # noqa: E402,F401  (environment: offline, this checkout's memlab)

from memlab.atomic import atomic_write_text  # noqa: E402
from memlab.eval import load_any  # noqa: E402
from memlab.eval.dataset_files import dataset_files  # noqa: E402
from memlab.eval.overlap import LOW, evidence_overlap, overlap_summary  # noqa: E402
from memlab.eval.provenance import run_provenance  # noqa: E402


def default_datasets() -> list[tuple[str, str, str]]:
    """(record key, path, format) of the benchmarks found here: LoCoMo and BEAM 100K."""
    from memlab.eval.paths import beam_path, locomo_path

    found = [("locomo", locomo_path(), "locomo"), ("beam:100K", beam_path("100K"), "beam")]
    return [(key, str(path), fmt) for key, path, fmt in found if path is not None]


def _round(v: Any) -> Any:
    return None if math.isnan(v) else round(float(v), 4)  # NaN (no scored question) -> None


def section(path: str, fmt: str) -> dict[str, Any]:
    """One benchmark's figures: per category and for all questions (``overlap_summary``)."""
    rows = evidence_overlap(load_any(path, fmt))

    def table(frame) -> dict[str, dict[str, Any]]:
        key = frame.columns[0]
        return {str(r[key]): {"n": int(r["n"]), **{m: _round(r[m]) for m in
                                                    ("overlap", "low", "rivals_5", "rivals", "evidence_words")}}
                for _, r in frame.iterrows()}

    return {"all": table(overlap_summary(rows, None))["all"], "categories": table(overlap_summary(rows))}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dataset", nargs=2, action="append", metavar=("PATH", "FORMAT"), default=[],
                    help="a dataset file or folder and its format (repeatable); default: LoCoMo and BEAM 100K")
    ap.add_argument("--record", default=None, help="JSON file to write the record to")
    args = ap.parse_args(argv)
    datasets = [(Path(p).name, p, f) for p, f in args.dataset] or default_datasets()
    if not datasets:
        raise SystemExit("evidence_overlap: no dataset found; give --dataset PATH FORMAT")
    files = [f for _, path, _ in datasets for f in dataset_files(path)]
    record: dict[str, Any] = {"provenance": run_provenance(data=files), "low_below": LOW, "rivals_at_least": 5,
                              "tokenizer": "strong (English stop words, Porter stemming)", "benchmarks": {}}
    for key, path, fmt in datasets:
        record["benchmarks"][key] = {"format": fmt} | section(path, fmt)  # the files: provenance["data"]
        a = record["benchmarks"][key]["all"]
        print(f"{key}: {a['n']} questions, overlap {a['overlap']:.3f}, low {a['low']:.3f}, "
              f">=5 rivals {a['rivals_5']:.3f}, median rivals {a['rivals']:g}", flush=True)
        for cat, c in record["benchmarks"][key]["categories"].items():
            print(f"  {cat:28s} n={c['n']:4d} overlap {c['overlap']:.3f} low {c['low']:.3f} "
                  f">=5 rivals {c['rivals_5']:.3f} median rivals {c['rivals']:g}", flush=True)
    if args.record:
        atomic_write_text(args.record, json.dumps(record, indent=1) + "\n")
        print(f"wrote {args.record}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
