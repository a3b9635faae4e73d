"""`layered` end to end with a real model: the CLI run, against the offline stand-in, paired.

    python bench/bench_layered_local.py                          # runs both, writes the record
    python bench/bench_layered_local.py --local-run OUT.json     # reuse a finished local run
    python bench/bench_layered_local.py --dataset ../shared/datasets/locomo/locomo10.json \
        --dialogues conv-30 --out bench/results/layered_local_locomo.json   # a LoCoMo slice

Runs, as a user would, on the shipped dialogues (``datasets/``) or on ``--dataset`` (any file
or folder ``memlab eval`` reads, cut to ``--dialogues``):

    memlab eval DATASET [--dialogues IDS] --strategy layered --set llm=local   --json --output local.parquet
    memlab eval DATASET [--dialogues IDS] --strategy layered --set llm=offline --json --output offline.parquet

(every LLM step of the default layered memory -- extraction at every turn, overflow summaries
-- by memlab's default local model, Qwen2.5-Coder-1.5B-Instruct through llama.cpp, then by the
deterministic stand-in), and records in ``bench/results/layered_local.json`` (or ``--out``):
each run's seconds, probes, failed probes (rows with ``error``), LLM calls (and how many the
response cache answered), prompt and completion tokens, format errors (answers a step could
not read; it kept going), then ``recall@5`` and ``context_recall`` of each with 95%
dialogue-clustered intervals (probe-resampled where the slice is one dialogue) and the paired
difference (local - offline) with its interval and sign-flip p-value
(``memlab.eval.compare``). ``--local-run`` takes the ``--json`` output of a local run made
beforehand with ``--output`` beside it (same stem, ``.parquet``), so an hour-long CPU run is
not repeated to record it. README.md's ``layered_local`` block is rendered from the records
(``scripts/readme_results.py render``).

The record carries this run's ``provenance`` (``memlab.eval.provenance.run_provenance``, with
the sha256 of every dataset file), each model's ``git_commit`` as its rows name it (a
``--local-run`` may come from an earlier commit) and ``config_hash`` (``config_hash``:
the strategy ``memlab eval`` builds, the dataset files, the dialogue ids and ``PROTOCOL``).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _common import ROOT, machine

METRICS = ("recall@5", "context_recall")
#: What ``memlab eval`` measures with its defaults (``--k 5``: ks 1 and 5, no token budgets).
PROTOCOL = {"ks": [1, 5], "k_max": 5, "budgets": []}


def config_hash(llm: str, data_sha256: list[str], dialogues: list[str] | None = None) -> str:
    """configuration_hash of ``memlab eval --strategy layered --set llm=LLM`` on those files
    (cut to ``dialogues`` where given)."""
    from memlab import strategies
    from memlab.eval.configuration import configuration_hash

    protocol = PROTOCOL if dialogues is None else {**PROTOCOL, "dialogues": list(dialogues)}
    return configuration_hash(strategies.get("layered", llm=llm), data_sha256, protocol)
#: integer columns of a ``memlab.eval.compare`` row
INTS = ("n_probes", "n_dialogues", "wins", "ties", "losses")


def run_cli(llm: str, datasets: str, out: Path, dialogues: str | None = None) -> dict[str, Any]:
    """``memlab eval`` as a process; its JSON summary, with ``wall_s`` added."""
    cut = ["--dialogues", dialogues] if dialogues else []
    cmd = [sys.executable, "-m", "memlab", "eval", datasets, *cut, "--strategy", "layered", "--set", f"llm={llm}",
           "--json", "--quiet", "--max-failures", "1000", "--output", str(out.with_suffix(".parquet"))]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
    if proc.returncode != 0:
        raise SystemExit(f"bench_layered_local: {' '.join(cmd[2:])} exited {proc.returncode}: {proc.stderr[-500:]}")
    summary = json.loads(proc.stdout)
    summary["wall_s"] = time.perf_counter() - t0
    out.write_text(json.dumps(summary))
    return summary


def one_dialogue(rows: Any) -> bool:
    """A slice of one dialogue: its intervals resample probes (no dialogues to resample)."""
    return rows["dialogue_id"].nunique() == 1


def interval(summary: dict[str, Any], rows: Any, metric: str) -> list[float]:
    """The summary's dialogue-clustered 95% interval; over one dialogue, probes resampled."""
    if not one_dialogue(rows):
        return [float(x) for x in summary["ci"][metric]]
    from memlab.eval.stats import cluster_bootstrap_ci

    return [float(x) for x in cluster_bootstrap_ci(rows[metric], range(len(rows)))]


def figures(summary: dict[str, Any], rows: Any, llm: str, data_sha256: list[str],
            dialogues: list[str] | None = None) -> dict[str, Any]:
    """One model's record: counts from the rows, means and intervals from the summary."""
    failed = rows["error"].notna() & (rows["error"].astype(str) != "")
    return {
        "seconds": float(summary.get("wall_s", summary["seconds"])),
        "n_dialogues": int(summary["n_dialogues"]), "n_probes": int(summary["n_probes"]),
        "n_failed": int(failed.sum()),
        "llm_calls": int(rows["llm_calls"].sum()), "llm_cached_calls": int(rows["llm_cached_calls"].sum()),
        "llm_prompt_tokens": int(rows["llm_prompt_tokens"].sum()),
        "llm_completion_tokens": int(rows["llm_completion_tokens"].sum()),
        "llm_format_errors": int(rows["llm_format_errors"].sum()),
        **{m: {"mean": float(summary[m]), "ci": interval(summary, rows, m)} for m in METRICS},
        "git_commit": str(rows["git_commit"].iloc[0]), "config_hash": config_hash(llm, data_sha256, dialogues),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dataset", "--datasets", dest="datasets", default="datasets",
                    help="a dataset file or folder memlab eval reads (default: the shipped dialogues)")
    ap.add_argument("--dialogues", default=None, metavar="ID,ID", help="keep only these dialogues")
    ap.add_argument("--local-run", default=None, help="--json output of a finished llm=local run "
                                                      "(its --output rows beside it, same stem, .parquet)")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "layered_local.json"))
    args = ap.parse_args()

    import pandas as pd

    from memlab.atomic import atomic_write_text
    from memlab.eval.compare import compare
    from memlab.eval.dataset_files import dataset_files
    from memlab.eval.headline import phrase_comparison
    from memlab.eval.provenance import run_provenance
    from memlab.eval.results import load_results
    from memlab.llm.local import LocalLLM

    datasets = Path(args.datasets) if Path(args.datasets).is_absolute() else ROOT / args.datasets
    provenance = run_provenance(data=dataset_files(datasets))  # before the runs: the files they read
    data_sha256 = sorted(provenance["data"].values())
    with tempfile.TemporaryDirectory() as tmp:
        if args.local_run:
            local_json = Path(args.local_run)
            local = json.loads(local_json.read_text())
        else:
            local_json = Path(tmp) / "local.json"
            local = run_cli("local", args.datasets, local_json, args.dialogues)
        offline_json = Path(tmp) / "offline.json"
        offline = run_cli("offline", args.datasets, offline_json, args.dialogues)
        local_rows = load_results(str(local_json.with_suffix(".parquet")))
        offline_rows = load_results(str(offline_json.with_suffix(".parquet")))
    if local["dataset_hash"] != offline["dataset_hash"]:
        raise SystemExit(f"bench_layered_local: the local run was made on another dataset "
                         f"({local['dataset_hash'][:12]} vs {offline['dataset_hash'][:12]})")
    both = pd.concat([local_rows.assign(strategy="local"), offline_rows.assign(strategy="offline")],
                     ignore_index=True)
    # probes of one dialogue cannot be clustered by dialogue: then each probe is its own cluster
    resampled = "probes" if one_dialogue(local_rows) else "dialogues"
    paired = compare(both, "local", "offline", list(METRICS), cluster=None if resampled == "probes" else "dialogue_id")
    if resampled == "probes":  # compare counts each probe as its own cluster then; the rows hold one dialogue
        paired["n_dialogues"] = 1
    dialogues = [d.strip() for d in args.dialogues.split(",")] if args.dialogues else None
    record = {
        "bench": "layered_local", "provenance": provenance, "machine": machine(), "datasets": args.datasets,
        "dialogues": dialogues, "resampled": resampled, "dataset_hash": local["dataset_hash"],
        "model": LocalLLM().model_id(),  # llm=local: the bundled model (the file's name, size and chat format)
        "local": figures(local, local_rows, "local", data_sha256, dialogues),
        "offline": figures(offline, offline_rows, "offline", data_sha256, dialogues),
        # each row as memlab.eval.compare gives it (README phrases it with headline.phrase_comparison)
        "paired": [{k: (v if isinstance(v, str) else int(v) if k in INTS else float(v)) for k, v in r.items()}
                   for r in paired.to_dict("records")],
    }
    atomic_write_text(args.out, json.dumps(record, indent=1) + "\n")
    for name in ("local", "offline"):
        f = record[name]
        print(f"{name:>8}: {f['seconds']:.0f} s, {f['n_probes']} probes ({f['n_failed']} failed), "
              f"{f['llm_calls']} LLM calls ({f['llm_cached_calls']} cached), {f['llm_format_errors']} format errors, "
              + ", ".join(f"{m} {f[m]['mean']:.3f} [{f[m]['ci'][0]:.3f}, {f[m]['ci'][1]:.3f}]" for m in METRICS))
    for p in record["paired"]:
        print(phrase_comparison(p))
    print(json.dumps(record))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
