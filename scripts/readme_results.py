"""Generated blocks of README.md, docs/*.md, bench/README.md and BENCHMARKS.md: result
tables rendered from recorded bench output, and lists rendered from the code (never typed by
hand).

    python scripts/readme_results.py record [SWEEP_OUTPUT]   # runs/compare_builtins -> bench/results/compare_builtins.json
    python scripts/readme_results.py render                  # rewrite the documents' marked blocks
    python scripts/readme_results.py check                   # exit 1 if a document and its sources disagree

The main job (``memlab sweep experiments/compare_builtins.toml``) writes its per-probe
results and its ``provenance.json`` to ``runs/compare_builtins/``; ``record`` turns them into
``bench/results/compare_builtins.json``: the sweep's provenance (commit, command, date,
machine, package versions, the sha256 of every dataset file), every strategy's token-matched
recall with its dialogue-clustered CI, the other headline columns and its ``config_hash``
(``memlab.eval.configuration.configuration_hash``), and every pairwise comparison of the
ranked strategies (``memlab.eval.headline``). ``bench/bench_locomo.py --output
bench/results/locomo.json`` records LoCoMo runs, each with its own provenance.

``DOCUMENTS`` (README.md, every ``docs/*.md``, bench/README.md, BENCHMARKS.md) hold blocks
between ``<!-- results:NAME -->`` and ``<!-- /results:NAME -->``; ``render`` replaces each
block's body with ``BLOCKS[NAME]`` rendered from its source, and tests/test_readme.py fails
when a block differs from its rendering. ``NAME`` may carry an argument after a colon:
``compare_builtins_pair:layered,hybrid_plus`` states that pair's paired comparison.
tests/test_bench_records.py re-runs the cheap records and compares them with ``differences``.

Two kinds of block:

- results, from ``bench/results/*.json`` (``compare_builtins``, ``locomo``, ``layered_local``,
  ``local_llm_judges`` ...);
- lists from the code, so that a doc cannot name what the code does not have:
  ``notebooks`` (``notebooks/*.ipynb`` and their titles), ``metrics`` (the metric registry,
  each metric's one definition: its function's docstring or its ``doc=``), ``strategies``
  (the strategy registry and each factory's docstring), ``cli_flags`` (every flag of the
  ``memlab`` parser with its help), ``formats`` (the dataset loader registry), ``layout``
  (memlab's modules and packages, each with its docstring's first sentence) and ``layers``
  (the import layers tests/test_layering.py enforces).

Adding a block (a new results table, say ``judge_calibration`` from
``bench/results/judge_calibration.json``):

1. write ``render_judge_calibration(arg: str) -> str`` below: it reads its record with
   ``load("judge_calibration")``, returns the block's body (start and end it with a newline so
   the markers sit on lines of their own), ends with the record's provenance
   (``describe_provenance``), and formats every figure from the record;
2. add it to ``BLOCKS`` under its name;
3. put ``<!-- results:judge_calibration --><!-- /results:judge_calibration -->`` where it
   belongs (results go in docs/results.md), run ``render``, and add the name to the
   document's set in tests/test_readme.py ``DOCUMENTS`` so that the block cannot vanish.

A new ``docs/*.md`` page is covered by ``render`` and ``check`` without being listed here.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "bench" / "results"
README = REPO / "README.md"
DOCS = REPO / "docs"
#: Every document with generated blocks; ``render`` and ``check`` cover them all (a new docs
#: page included: the folder is read, not a list of its pages).
DOCUMENTS = (README, *sorted(DOCS.glob("*.md")), REPO / "bench" / "README.md", REPO / "BENCHMARKS.md")
BLOCK = re.compile(r"(<!-- results:(?P<name>[\w.:,\-]+) -->)(?P<body>.*?)(<!-- /results:(?P=name) -->)", re.S)
#: Columns of the main job's README table, after rank, strategy and the headline metric's CI.
TABLE_COLUMNS = ("tokens@256tok", "recall@5", "context_recall", "context_tokens")


def _rounded(value: Any) -> Any:
    return round(float(value), 6) if isinstance(value, float) else value


def sweep_protocol(config: Path) -> dict[str, Any]:
    """The ks, k_max and token budgets of a sweep file's [run] table (its defaults filled in)."""
    from memlab.eval.sweep_config import read_config
    from memlab.eval.sweep_config import _run_options

    ks, k_max, budgets, _, _ = _run_options(read_config(config).get("run", {}), str(config), None, None)
    return {"ks": list(ks), "k_max": int(k_max), "budgets": list(budgets)}


def sweep_config_hashes(results, data_sha256: list[str], protocol: dict[str, Any]) -> dict[str, str]:
    """Each strategy's configuration_hash, from the parameters its rows were run with
    (``strategy_class`` and ``param:*`` columns)."""
    from memlab.eval.configuration import PARAM_PREFIX, configuration_hash

    params = [c for c in results.columns if c.startswith(PARAM_PREFIX)]
    out = {}
    for label, rows in results.groupby("strategy", sort=False):
        row = rows.iloc[0]
        flat = {"strategy_class": row["strategy_class"], **{c[len(PARAM_PREFIX):]: row[c] for c in params}}
        out[str(label)] = configuration_hash(flat, data_sha256, protocol)
    return out


def record_sweep(folder: Path, out: Path | None = RESULTS / "compare_builtins.json",
                 config: Path = REPO / "experiments" / "compare_builtins.toml") -> dict[str, Any]:
    """The main job's headline figures (from ``folder/results.parquet``), with the sweep's
    provenance (``folder/provenance.json``), written to ``out`` (None: only returned)."""
    from memlab.eval.headline import headline
    from memlab.eval.metrics import summarize
    from memlab.eval.results import load_results

    from memlab.atomic import atomic_write_text

    prov_file = folder / "provenance.json"
    if not prov_file.is_file():
        raise SystemExit(f"{prov_file}: missing; record the output of a finished sweep (memlab sweep)")
    provenance = json.loads(prov_file.read_text(encoding="utf-8"))
    if provenance.get("status") != "complete":
        raise SystemExit(f"{prov_file}: written by an older memlab (no complete provenance); run the sweep again")
    reused = provenance.get("cells", {}).get("reused", 0)
    if reused:  # a record states one run: cells finished by an earlier run may come from other code
        raise SystemExit(f"{folder}: {reused} cells were kept from an earlier run; record a whole run: "
                         f"memlab sweep experiments/compare_builtins.toml --fresh")
    results = load_results(str(folder / "results.parquet"))
    protocol = sweep_protocol(config)
    hashes = sweep_config_hashes(results, sorted(provenance["data"].values()), protocol)
    top = headline(results)
    means = summarize(results, by=["strategy"], metrics=[c for c in TABLE_COLUMNS if c in results.columns])
    means = means.set_index("strategy")
    strategies = []
    for _, row in top.ranking.iterrows():
        entry = {"rank": row["rank"], "strategy": row["strategy"], top.metric: row[top.metric],
                 "ci_low": row["ci_low"], "ci_high": row["ci_high"], "n_scored": int(row["n_scored"])}
        entry.update({c: float(means.loc[row["strategy"], c]) for c in TABLE_COLUMNS if c in means.columns})
        entry = {k: _rounded(v) for k, v in entry.items()}
        entry["config_hash"] = hashes[row["strategy"]]
        strategies.append(entry)
    pairs = [{k: _rounded(v.item() if hasattr(v, "item") else v) for k, v in row.items()}
             for row in top.pairs.to_dict("records")]
    data = {"source": "memlab sweep experiments/compare_builtins.toml; python scripts/readme_results.py record",
            "provenance": provenance, "protocol": protocol,
            "dataset_hash": str(results["dataset_hash"].iloc[0]) if "dataset_hash" in results else None,
            "n_dialogues": int(results["dialogue_id"].nunique()),
            "n_probes": int(results.groupby("strategy").size().max()),
            "metric": top.metric, "alpha": top.alpha, "strategies": strategies, "pairs": pairs}
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(out, json.dumps(data, indent=1, sort_keys=False) + "\n")
    return data


#: Keys that say how and when a record was made, not what it measured: ``differences`` skips them.
RUN_KEYS = ("provenance", "load_avg_1m", "seconds", "seconds_per_question", "options")


def differences(recorded: Any, fresh: Any, ignore: tuple[str, ...] = RUN_KEYS, where: str = "") -> list[str]:
    """Where ``fresh`` (a re-run's record) differs from ``recorded``: one line per differing
    value, key or length, keys in ``ignore`` skipped at any depth. Values are compared as
    recorded (already rounded), so a hand edit of any figure shows."""
    if isinstance(recorded, dict) and isinstance(fresh, dict):
        out = []
        for key in sorted(set(recorded) | set(fresh), key=str):
            if key in ignore:
                continue
            if key not in recorded or key not in fresh:
                out.append(f"{where}/{key}: only in the {'re-run' if key in fresh else 'record'}")
                continue
            out += differences(recorded[key], fresh[key], ignore, f"{where}/{key}")
        return out
    if isinstance(recorded, list) and isinstance(fresh, list):
        if len(recorded) != len(fresh):
            return [f"{where}: {len(recorded)} items recorded, {len(fresh)} re-run"]
        return [d for n, (a, b) in enumerate(zip(recorded, fresh)) for d in differences(a, b, ignore, f"{where}[{n}]")]
    if recorded != fresh or type(recorded) is not type(fresh) and not _same_number(recorded, fresh):
        return [f"{where}: recorded {recorded!r}, re-run {fresh!r}"]
    return []


def _same_number(a: Any, b: Any) -> bool:
    numbers = (int, float)
    return isinstance(a, numbers) and isinstance(b, numbers) and not isinstance(a, bool) and not isinstance(b, bool) \
        and a == b


def load(name: str) -> dict[str, Any]:
    path = RESULTS / f"{name}.json"
    if not path.is_file():
        raise SystemExit(f"{path}: no such results file; see scripts/readme_results.py")
    return json.loads(path.read_text(encoding="utf-8"))


def _headline(data: dict[str, Any]):
    import pandas as pd

    from memlab.eval.headline import Headline

    ranking = pd.DataFrame(data["strategies"])
    return Headline(metric=data["metric"], ranking=ranking, pairs=pd.DataFrame(data["pairs"]), alpha=data["alpha"])


def render_compare_builtins(_: str = "") -> str:
    """The main job's ranked table and its headline sentences."""
    data = load("compare_builtins")
    metric = data["metric"]
    columns = [c for c in TABLE_COLUMNS if c in data["strategies"][0]]
    lines = [f"| rank | strategy | {metric} | 95% CI | " + " | ".join(columns) + " |",
             "|---|---|---:|---:|" + "---:|" * len(columns)]
    for s in data["strategies"]:
        cells = [f"{s[c]:.0f}" if "tokens" in c else f"{s[c]:.3f}" for c in columns]
        lines.append(f"| {s['rank']} | `{s['strategy']}` | {s[metric]:.3f} | [{s['ci_low']:.3f}, {s['ci_high']:.3f}] | "
                     + " | ".join(cells) + " |")
    lines.append("")
    lines += [f"- {sentence}" for sentence in _headline(data).sentences()]
    lines += ["", f"Record `bench/results/compare_builtins.json`: {describe_provenance(data['provenance'])}."]
    return "\n" + "\n".join(lines) + "\n"


def render_compare_builtins_pair(arg: str) -> str:
    """One recorded pair of the main job, stated with its test: ``a,b``."""
    from memlab.eval.headline import phrase_comparison

    a, b = arg.split(",")
    data = load("compare_builtins")
    for pair in data["pairs"]:
        if {pair["a"], pair["b"]} == {a, b}:
            if pair["a"] != a:  # orient as asked
                pair = {**pair, "a": a, "b": b, "mean_a": pair["mean_b"], "mean_b": pair["mean_a"],
                        "diff": -pair["diff"], "ci_low": -pair["ci_high"], "ci_high": -pair["ci_low"],
                        "wins": pair["losses"], "losses": pair["wins"]}
            return phrase_comparison(pair, alpha=data["alpha"])
    raise SystemExit(f"compare_builtins.json has no pair {a} / {b}")


def render_pvalue_floor(_: str = "") -> str:
    """How many shipped dialogues there are, and the smallest sign-flip p they allow."""
    from memlab.eval.headline import p_floor
    from memlab.eval import load_any

    n = len(load_any(str(REPO / "datasets")).dialogues)
    return f"With few dialogues ({n} in `datasets/`) the p-value cannot go below 2/2^{n} = {p_floor(n):.4f}"


LOCOMO_ROWS = ("window", "longterm", "layered", "bm25", "bm25_prf", "vector[hashing]", "hybrid[hashing]", "bm25_plus",
               "flat_bm25", "hybrid_plus[hashing]", "hybrid_decay[hashing]", "vector[minilm]", "vector[e5]", "hybrid[minilm]",
               "hybrid_plus", "hybrid_plus[e5,minilm]", "hybrid_decay[e5]")
PEER_ROWS = ("window", "camel_chat_history", "longterm[hashing]", "camel_longterm", "hybrid[hashing]",
             "langchain_ensemble", "http_memory")


def locomo_rows(data: dict[str, Any] | None = None) -> dict[str, tuple[dict[str, Any], dict[str, Any]]]:
    """Every recorded LoCoMo label: (its figures, the run that measured it). A label is in one
    run only (bench/bench_locomo.py moves it to the newest)."""
    data = data if data is not None else load("locomo")
    out: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {}
    for run in data["runs"]:
        for label, figures in run["figures"].items():
            if label in out:
                raise SystemExit(f"locomo.json: {label!r} is in two runs; record it again with bench/bench_locomo.py")
            out[label] = (figures, run)
    return out


def _complete(run: dict[str, Any]) -> bool:
    return run["provenance"].get("status") == "complete"


def describe_provenance(p: dict[str, Any], load: list[float] | None = None) -> str:
    """Where a record's figures come from, in words, from its provenance block."""
    if p.get("status") != "complete":
        return (f"partial provenance: written in commit `{p['git_commit'][:10]}` on {p['date'][:10]}, before runs "
                f"recorded their command, machine and package versions")
    m, pk = p["machine"], p["packages"]
    gpu = ", ".join(m["gpu"]) if m.get("gpu") else "no GPU"
    return (f"`{' '.join(p['command'])}` at `{p['git_commit'][:10]}`{' (uncommitted changes)' if p['git_dirty'] else ''}"
            f" on {p['date'][:16].replace('T', ' ')} UTC, {m['cpu'] or 'unknown CPU'} x {m['cores']} cores, {gpu}, "
            f"Python {pk['python']}" + (f", load average {load[0]:.1f} at start and {load[1]:.1f} at end" if load else ""))


def record_line(name: str, data: dict[str, Any]) -> str:
    """The line that names a timing record and the run that made it (load average included)."""
    return f"Record `bench/results/{name}.json`: {describe_provenance(data['provenance'], data.get('load_avg_1m'))}."


def describe_run(run: dict[str, Any], seconds: bool = False) -> str:
    """One sentence on where a LoCoMo run's figures come from."""
    text = describe_provenance(run["provenance"], run.get("load_avg_1m"))
    return text + ("; their seconds are not shown" if seconds and not _complete(run) else "")


def _runs_note(labels: list[str], rows: dict[str, tuple[dict[str, Any], dict[str, Any]]], seconds: bool = False) -> str:
    """Which run measured which of ``labels``, one line per run, in the order of their rows."""
    runs: dict[int, tuple[dict[str, Any], list[str]]] = {}
    for label in labels:
        run = rows[label][1]
        runs.setdefault(id(run), (run, []))[1].append(label)
    return "\n".join(f"- {', '.join(f'`{x}`' for x in names)}: {describe_run(run, seconds)}."
                     for run, names in runs.values())


def _locomo_table(rows: tuple[str, ...], columns: tuple[str, ...]) -> str:
    data = load("locomo")
    recorded = locomo_rows(data)
    lines = ["| strategy | " + " | ".join(columns) + " |", "|---|" + "---:|" * len(columns)]
    shown = [label for label in rows if label in recorded]
    for label in shown:
        f, run = recorded[label]
        cells = []
        for c in columns:
            if c == "seconds" and not _complete(run):
                cells.append("n/a")  # a run without provenance: load and embedding cache unknown
            else:
                cells.append(f"{f[c]:,.0f}" if c in ("tokens", "seconds") else f"{f[c]:.1f}")
        lines.append(f"| `{label}` | " + " | ".join(cells) + " |")
    missing = [label for label in rows if label not in recorded]
    text = "\n".join(lines) + "\n\nRuns (`bench/results/locomo.json`):\n\n" + _runs_note(shown, recorded, "seconds" in columns)
    if missing:
        text += ("\n\nNot recorded in `bench/results/locomo.json` yet: " + ", ".join(f"`{m}`" for m in missing)
                 + " (`python bench/bench_locomo.py --only " + ",".join(missing)
                 + " --output bench/results/locomo.json`).")
    return "\n" + text + "\n"


def render_locomo(_: str = "") -> str:
    """Every built-in on LoCoMo, as recorded by bench/bench_locomo.py."""
    return _locomo_table(LOCOMO_ROWS, ("recall@5", "recall@10", "recall@512tok", "tokens", "seconds"))


def render_locomo_peers(_: str = "") -> str:
    """memlab next to the peer libraries on LoCoMo, as recorded by bench/bench_locomo.py."""
    return _locomo_table(PEER_ROWS, ("recall@5", "context_recall", "tokens", "seconds"))


LOCOMO_CATEGORIES = ("single-hop", "multi-hop", "temporal", "open-domain", "adversarial")


def render_locomo_categories(_: str = "") -> str:
    """recall@5 / recall@512tok per LoCoMo question category for every recorded built-in."""
    data = load("locomo")
    recorded = locomo_rows(data)
    counts = data.get("n_probes_by_category", {})
    head = [f"{c} ({counts[c]:,})" if c in counts else c for c in LOCOMO_CATEGORIES]
    lines = ["| strategy | " + " | ".join(head) + " |", "|---|" + "---:|" * len(LOCOMO_CATEGORIES)]
    shown = [label for label in LOCOMO_ROWS if label in recorded]
    for label in shown:
        cats = recorded[label][0]["categories"]
        cells = [f"{cats[c]['recall@5']:.1f} / {cats[c]['recall@512tok']:.1f}" if c in cats else "-"
                 for c in LOCOMO_CATEGORIES]
        lines.append(f"| `{label}` | " + " | ".join(cells) + " |")
    return "\n" + "\n".join(lines) + "\n\nRuns (`bench/results/locomo.json`):\n\n" + _runs_note(shown, recorded) + "\n"


def render_layered_local(record: str = "") -> str:
    """`layered` with the real local model against the offline stand-in (bench/bench_layered_local.py);
    ``layered_local:NAME`` renders ``bench/results/NAME.json`` (a slice of a published file)."""
    from memlab.eval.headline import phrase_comparison

    record = record or "layered_local"
    data = load(record)
    lines = []
    if data.get("dialogues"):  # a slice of a published file says which, and how its intervals were drawn
        lines += [f"Dataset `{data['datasets']}`, dialogues {', '.join(f'`{d}`' for d in data['dialogues'])}; "
                  f"intervals resample {data.get('resampled', 'dialogues')}.", ""]
    lines += ["| LLM | seconds | probes | failed | LLM calls | cached | prompt tokens | completion tokens "
             "| format errors | recall@5 [95% CI] | context_recall [95% CI] |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for name, label in (("local", f"`{data['model'].split(':')[0]}` (llama.cpp)"), ("offline", "offline stand-in")):
        f = data[name]
        cells = [f"{f['seconds']:,.0f}", f"{f['n_probes']}", f"{f['n_failed']}", f"{f['llm_calls']:,}",
                 f"{f['llm_cached_calls']:,}", f"{f['llm_prompt_tokens']:,}", f"{f['llm_completion_tokens']:,}",
                 f"{f['llm_format_errors']}"]
        cells += [f"{f[m]['mean']:.3f} [{f[m]['ci'][0]:.3f}, {f[m]['ci'][1]:.3f}]" for m in ("recall@5", "context_recall")]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    lines.append("")
    lines += [f"- {phrase_comparison(p)}." for p in data["paired"]]
    lines += ["", f"Record `bench/results/{record}.json`: {describe_provenance(data['provenance'])}."]
    if data["local"].get("outdated"):  # a row HEAD no longer runs says so where it is shown
        lines += ["", f"Outdated: the local row was {data['local']['outdated']}."]
    return "\n" + "\n".join(lines) + "\n"


def render_scale_cycled_sessions(_: str = "") -> str:
    """Streaming replay of the cycled-sessions workload at growing length (bench/scale.py)."""
    data = load("scale_cycled_sessions")
    o = data["options"]
    lines = [f"Workload `{data['workload']}`: {data['source']} turns cycled into one dialogue of N turns, sessions of "
             f"{o['session_turns']} turns, {o['probes']} probes spread evenly, each with the turn {o['evidence_back']} "
             "back as evidence, replayed by `memlab.eval.replay`; slopes are log-log, from the previous size.", "",
             "| strategy | turns | seconds | CPU seconds | peak MB | slope | CPU slope |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    for r in data["results"]:
        step, cpu = r.get("slope_from_previous"), r.get("cpu_slope_from_previous")
        lines.append(f"| {r['strategy']} | {r['turns']:,} | {r['seconds']:.2f} | {r['cpu_seconds']:.2f} | "
                     f"{r['peak_mb']:.0f} | {_num(step, '.2f')} | {_num(cpu, '.2f')} |")
    lines += ["", "Least-squares slope over every size: " + ", ".join(
        f"{name} {s['total']:.2f} (CPU {s['cpu']:.2f})" for name, s in data["slopes"].items()) + ".",
        "", record_line("scale_cycled_sessions", data)]
    return "\n" + "\n".join(lines) + "\n"


def render_keep_rate_sweep(_: str = "") -> str:
    """A 10-point keep_rate sweep against one run, in one process (bench/bench_keep_rate_sweep.py --output)."""
    data = load("keep_rate_sweep")
    target = data["target_ratio"]
    lines = [f"`{data['strategy']}` with {data['embedder']} (warm embedding cache) on {data['conversations']} LoCoMo "
             f"conversations ({data['probes']:,} probes), {len(data['keep_rates'])} keep_rate values; "
             f"{data['timing']}:", "",
             "| context_only_params | one run s | sweep s | sweep / one run |", "|---|---:|---:|---:|"]
    names = {"yes": "declared (as shipped)", "no": "cleared"}
    for key, r in data["results"].items():
        lines.append(f"| {names[key]} | {r['one_run_s']:.2f} | {r['sweep_s']:.2f} | {r['ratio']:.2f}x |")
    shipped = data["results"].get("yes")
    if shipped:
        lines += ["", f"Target: the sweep <= {target:g}x one run: {shipped['ratio']:.2f}x as shipped, "
                      + ("met." if shipped["ratio"] <= target else "missed.")]
    if data["tables_equal"]:
        lines += ["", "The declared and cleared sweeps' tables are equal (every column but `latency_ms`)."]
    lines += ["", record_line("keep_rate_sweep", data)]
    return "\n" + "\n".join(lines) + "\n"


def render_embedding_gemm(_: str = "") -> str:
    """Dense embedders against the float32 GEMM rate (bench/bench_embeddings.py --gemm --output)."""
    data = load("embedding_gemm")
    target = data["target_efficiency_real"]
    lines = [f"{data['texts']}, {data['n_per_bin']} texts per length bin, device {data['device']}, "
             f"{data['cores']} cores; GEMM = max(numpy, torch) float32 GFLOP/s on the model's shapes, timed just "
             "before each row; eff real = linear-layer FLOPs of the real tokens / seconds / GEMM; eff all adds "
             "padding and attention.", "",
             "| embedder | texts | tokens/text | padding % | texts/s | tokens/s | GEMM GFLOP/s | eff real | eff all |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for r in data["rows"]:
        pad = "n/a" if r["padding_share"] is None else f"{100 * r['padding_share']:.1f}"
        lines.append(f"| {r['embedder']} | {r['texts']} | {r['tokens_per_text']:.1f} | {pad} | {r['texts_per_s']:.1f} | "
                     f"{r['tokens_per_s']:,.0f} | {max(r['gemm_numpy'], r['gemm_torch'] or 0):.1f} | "
                     f"{r['efficiency_real']:.2f} | {r['efficiency_all']:.2f} |")
    e5 = [r for r in data["rows"] if r["embedder"].startswith("e5 (torch)")]
    if e5:
        low, high = min(r["efficiency_real"] for r in e5), max(r["efficiency_real"] for r in e5)
        lines += ["", f"Target: e5 (torch) eff real >= {target:g}: {low:.2f}-{high:.2f} over the length bins, "
                      + ("met in every bin." if low >= target else
                         f"missed in {sum(r['efficiency_real'] < target for r in e5)} of {len(e5)} bins.")]
    lines += ["", record_line("embedding_gemm", data)]
    return "\n" + "\n".join(lines) + "\n"


#: Issue 11's target for memlab's hybrid against the naive hybrid (rank_bm25 + chromadb) on LoCoMo.
REPLAY_SPEEDUP_TARGET = 20.0


def render_replay_warm(_: str = "") -> str:
    """Full LoCoMo, warm, every built-in in a fresh process (bench/replay.py --output)."""
    data = load("replay_warm")
    target = data["target_seconds"]
    lines = ["| strategy | seconds | CPU seconds | probes/s | peak MB | recall@5 |",
             "|---|---:|---:|---:|---:|---:|"]
    for r in data["results"] + data["naive"]:  # the naive stacks record no recall
        lines.append(f"| {r['strategy']} | {r['seconds']:.2f} | {r['cpu_seconds']:.2f} | {r['probes_per_s']:,.0f} | "
                     f"{r['peak_mb']:.0f} | {_num(r.get('recall@5'), '.3f')} |")
    over = [r for r in data["results"] if r["seconds"] > target]
    lines += ["", f"Target: every built-in <= {target:g} s warm. " + (
        "Over it: " + ", ".join(f"`{r['strategy']}` {r['seconds']:.2f} s" for r in over) + "."
        if over else "Met by every strategy run.")]
    by = {r["strategy"]: r for r in data["results"]}
    if "layered" in by and "hybrid_plus" in by:
        lay, hp = by["layered"]["seconds"], by["hybrid_plus"]["seconds"]
        lines += ["", f"`layered` searches with `hybrid_plus`'s retriever (e5 beside contextual BM25) over "
                      f"fact-augmented keys; `hybrid_plus` alone takes {hp:.2f} s, so the layers around it (SQLite "
                      f"long-term store, extraction at every turn, the short-term window, reading each hit's "
                      f"memory back) add {lay - hp:.2f} s ({lay / hp:.2f}x)."]
    speedup = data["checks"].get("hybrid_speedup_over_naive")
    if speedup is not None:
        lines += ["", f"Target: `hybrid` >= {REPLAY_SPEEDUP_TARGET:g}x faster than the naive hybrid: {speedup:.1f}x, "
                      + ("met." if speedup >= REPLAY_SPEEDUP_TARGET else "missed.")]
    if data["checks"]:
        lines += ["", "Checks against the naive stack:", ""]
    for k, v in data["checks"].items():
        lines.append(f"- {k}: {v:.4g}" if isinstance(v, float) else f"- {k}: {v}")
    if data["errors"]:
        lines += ["", "Failed: " + "; ".join(f"{e['strategy']}: {e['error']}" for e in data["errors"]) + "."]
    lines += ["", record_line("replay_warm", data)]
    return "\n" + "\n".join(lines) + "\n"


#: The indexing slope issue 33 asks for (log-log, time against history tokens).
SCALE_TOKENS_TARGET = 1.1


def _tokens(n: int) -> str:
    """10000 -> 10k, 1000000 -> 1M."""
    for div, unit in ((1_000_000, "M"), (1_000, "k")):
        if n >= div and n % div == 0:
            return f"{n // div}{unit}"
    return f"{n:,}"


def render_scale_tokens(_: str = "") -> str:
    """Replay time and memory against history length on concatenated BEAM (bench/scale.py --workload beam-concat)."""
    data = load("scale_tokens")
    o, slopes = data["options"], data["slopes"]
    params = "; ".join(f"`{n}` with {', '.join(f'{k}={v}' for k, v in p.items())}" for n, p in o["params"].items() if p)
    lines = [f"Workload `{data['workload']}`: {o['concatenation']}. Tokens counted by {o['token_counter']}; probes: "
             f"{o['probes']}. Strategies run without a model ({params}). Each point is a fresh process; "
             "search = a probe's own `retrieve` (k = 10), probe = the replay's `latency_ms` (search, deeper lists for "
             "the session metrics, context); held = resident memory with the strategy alive after the replay minus "
             "before it.", "",
             "| strategy | tokens | messages | probes | replay s | indexing s | search p50 / p95 ms | "
             "probe p50 / p95 ms | recall@10 | held MB | peak MB |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in data["results"]:
        lines.append(f"| {r['strategy']} | {r['history_tokens']:,} | {r['turns']:,} | {r['probes']} | "
                     f"{r['seconds']:.3g} | {r['append_seconds']:.3g} | {_num(r['query_ms_p50'], '.2f')} / "
                     f"{_num(r['query_ms_p95'], '.2f')} | {_num(r['probe_ms_p50'], '.1f')} / "
                     f"{_num(r['probe_ms_p95'], '.1f')} | {_num(r['recall@10'], '.3f')} | {r['held_mb']:.0f} | "
                     f"{r['peak_mb']:.0f} |")
    met = [n for n, s in slopes.items() if s["append"] <= SCALE_TOKENS_TARGET]
    missed = [n for n, s in slopes.items() if s["append"] > SCALE_TOKENS_TARGET]
    verdict = (f"met by {', '.join(met)}" if met else "met by none") + (f"; missed by {', '.join(missed)}"
                                                                         if missed else "")
    lines += ["", "Indexing (`observe`) time against tokens, log-log least-squares slope over every point: " + ", ".join(
        f"{n} {s['append']:.2f}" for n, s in slopes.items()) + f" (target <= {SCALE_TOKENS_TARGET}: {verdict}"
        + "). Steepest step between neighbouring points: " + ", ".join(
        f"{n} {v:.2f} ({'-'.join(_tokens(int(t)) for t in k.split('-'))})"
        for n, s in slopes.items() if s["append_steps"] for k, v in [max(s["append_steps"].items(), key=lambda i: i[1])])
        + ". Whole replay, probes included: " + ", ".join(f"{n} {s['total']:.2f}" for n, s in slopes.items()) + "."]
    largest = {n: max((r for r in data["results"] if r["strategy"] == n), key=lambda r: r["tokens"], default=None)
               for n in slopes}
    lines += ["", "Largest history reached: " + ", ".join(
        f"{n} {_tokens(r['tokens']) if r else 'none'}" for n, r in largest.items()) + "."]
    at_1m = [r for r in data["results"] if r["tokens"] == 1_000_000]
    if at_1m:
        lines += ["", "At 1M tokens, search p50 / p95: " + ", ".join(
            f"{r['strategy']} {_num(r['query_ms_p50'], '.2f')} / {_num(r['query_ms_p95'], '.2f')} ms" for r in at_1m)
            + "; whole probe p50 / p95: " + ", ".join(
            f"{r['strategy']} {_num(r['probe_ms_p50'], '.1f')} / {_num(r['probe_ms_p95'], '.1f')} ms" for r in at_1m)
            + "."]
    lines += ["", "Memory held per million tokens (linear least squares over every point): " + ", ".join(
        f"{n} {s['mb_per_mtok']:.0f} MB" for n, s in slopes.items()) + "."]
    total = data.get("memory_total_mb")
    if total:
        lines += ["", f"Off RAM: on this machine ({total / 1024:.0f} GiB), one index at those rates fills the "
                      "memory at about " + ", ".join(f"{n} {total / s['mb_per_mtok']:,.0f}M" for n, s in slopes.items()
                                           if s["mb_per_mtok"] > 0)
                  + " tokens of history; a run with n worker processes holds n indexes, so divide by n."]
    skipped = data["skipped"]
    lines += ["", "Skipped: " + ("; ".join(
        f"{s['strategy']} at {_tokens(s['tokens'])} tokens ("
        + (f"failed: {s['error'].splitlines()[-1]}" if s.get("error") else
           f"predicted {s['predicted_s']} s over the budget of {o['budget']:.0f} s") + ")" for s in skipped)
        if skipped else f"none (budget {o['budget']:.0f} s a point).")]
    lines += ["", record_line("scale_tokens", data)]
    return "\n" + "\n".join(lines) + "\n"


def _num(value: Any, fmt: str) -> str:
    return "n/a" if value is None else format(value, fmt)


def render_local_llm_costs(_: str = "") -> str:
    """What the local model cost in the recorded runs (bench/bench_answers.py, bench/bench_layered_local.py)."""
    a, lay = load("answers_local"), load("layered_local")
    m = a["machine"]
    rows = a["table"]
    per_answer = [r["seconds_per_answer"] for r in rows if r["seconds_per_answer"] is not None]
    per_judged = [r["judge_seconds_per_answer"] for r in rows if r["judge_seconds_per_answer"] is not None]
    local = lay["local"]
    lines = [
        f"- load: {a['load_seconds']:.1f} s (`{a['model']}` on {a['device']}, `mmap`);",
        f"- answers (`python bench/bench_answers.py`, {a['answers']} answers, {m['cpus']} CPUs, load average "
        f"{a['load_avg_1m_start']:.1f} at start and {a['load_avg_1m_end']:.1f} at end): "
        f"{min(per_answer):.1f}-{max(per_answer):.1f} s per answer by slice and strategy (the prompt is the "
        f"strategy's context), {min(per_judged):.1f}-{max(per_judged):.1f} s more to judge it with its slice's "
        f"judge prompts, after {a.get('calibration_seconds', 0) / 60:.0f} min calibrating the judge (0: cached); "
        f"{a['wall_seconds'] / 60:.0f} min for the whole study ({a['llm_calls']:,} calls, "
        f"{a['prompt_tokens']:,} prompt and {a['completion_tokens']:,} completion tokens);",
        f"- every LLM step of `layered` on the shipped dialogues (`memlab eval datasets --strategy layered "
        f"--set llm=local`, recorded by `python bench/bench_layered_local.py`): {local['seconds'] / 60:.0f} min "
        f"for {local['n_probes']} probes in {local['n_dialogues']} dialogues, {local['llm_calls']:,} LLM calls "
        f"({local['llm_cached_calls']:,} of them answered by the response cache of an earlier run), "
        f"{local['llm_format_errors']} format errors, {local['n_failed']} failed probes"
        + (" (recorded with the earlier default model, `gemma-3-270m`: outdated, see the layered_local table)."
           if local.get("outdated") else "."),
    ]
    return "\n" + "\n".join(lines) + "\n"


def _ci3(v: Any) -> str:
    return "-" if not v or v[0] is None else f"{v[0]:.2f} [{v[1]:.2f}, {v[2]:.2f}]"


def render_local_llm_judges(_: str = "") -> str:
    """The recorded answer study: the judge's calibration and the gate first, then the
    answer-level table per slice (J, LongMemEval's judge, LoCoMo's F1, context recall, each with
    its dialogue-clustered CI; context and prompt tokens and seconds per answer), the raters'
    agreement over the answers."""
    a = load("answers_local")
    lines = [f"Model `{a['model']}` on {a['device']} answers and judges; contexts matched at "
             f"{a['context_tokens']} tokens (`oracle`: the gold turns, whatever their length).", "",
             "Judge calibration (pairs built by rule from LoCoMo and LongMemEval, `memlab.eval.calibration`):", "",
             "| prompt set | accuracy | CORRECT rate | kappa vs LoCoMo F1 | pairs | unreadable |",
             "|---|---:|---:|---:|---:|---:|"]
    for c in a["judge_calibration"].values():
        lines.append(f"| `{c['judge_prompt_set']}` | {_num(c['accuracy'], '.3f')} | {_num(c['label_rate'], '.3f')} | "
                     f"{_num(c['kappa_f1'], '.3f')} (F1 >= {c['f1_threshold']}) | {c['n_pairs']} | {c['unreadable']} |")
    gate = a["judge_gate"]
    lines += ["", "Gate: " + ("every judge prompt set passed." if gate["passed"] else
                              "overridden (`--allow-uncalibrated-judge`): " + "; ".join(gate["refusals"].values())), ""]
    metrics = [m for m in ("judge:lenient", "judge:longmemeval", "locomo_f1", "context_recall")
               if any(m in r for r in a["table"])]
    names = {"judge:lenient": "J (lenient)", "judge:longmemeval": "LongMemEval judge", "locomo_f1": "LoCoMo F1",
             "context_recall": "context recall"}
    lines += ["| slice | strategy | n | " + " | ".join(names[m] for m in metrics)
              + " | context tokens | prompt tokens | s per answer |", "|---|---|---:|" + "---:|" * (len(metrics) + 3)]
    for r in a["table"]:
        lines.append(f"| {r['slice']} | `{r['strategy']}` | {r['n']} | " + " | ".join(_ci3(r.get(m)) for m in metrics)
                     + f" | {r['context_tokens']:.0f} | {r['answer_prompt_tokens']:.0f} | {r['seconds_per_answer']:.1f} |")
    lines += ["", "| rater | share labelled correct | labelled | unreadable |", "|---|---:|---:|---:|"]
    for r in a["judge_accuracy"]:
        lines.append(f"| {r['judge']} | {_num(r['accuracy'], '.3f')} | {r['n_labelled']} | {r['unreadable']} |")
    lines += ["", "| pair | Cohen's kappa | share labelled alike | n |", "|---|---:|---:|---:|"]
    for r in a["judge_pairs"]:
        lines.append(f"| {r['a']} / {r['b']} | {_num(r['kappa'], '.3f')} | {_num(r['agreement'], '.3f')} | {r['n']} |")
    slices = "; ".join(f"{n}: {s['questions']} questions in {s['dialogues']} dialogues" for n, s in a["slices"].items())
    lines += ["", f"Slices: {slices}. Record `bench/results/answers_local.json`: {describe_provenance(a['provenance'])}."]
    return "\n" + "\n".join(lines) + "\n"


def render_notebooks(_: str = "") -> str:
    """The notebook list (README.md): every ``notebooks/*.ipynb`` with the title of its first
    markdown cell, so a notebook added or renamed is listed (a test fails until rendered)."""
    lines = []
    for path in sorted((REPO / "notebooks").glob("*.ipynb")):
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        first = next((c for c in cells if c["cell_type"] == "markdown"), None)
        source = "".join(first["source"]) if first else ""
        title = next((line.lstrip("#").strip() for line in source.splitlines() if line.strip()), "")
        lines.append(f"- `notebooks/{path.name}`" + (f": {title}" if title else ""))
    return "\n" + "\n".join(lines) + "\n"


# -- lists from the code ---------------------------------------------------------------------------
# Each renders what the code registers or declares, so a doc that lists it is out of date (and
# tests/test_readme.py fails) the moment the code changes. Only memlab's own entries are listed:
# a test or an example may have registered one of its own in this process.

def _ours(module: str | None) -> bool:
    return bool(module) and (module == "memlab" or module.startswith("memlab."))


def _cell(text: str) -> str:
    """Text for one markdown table cell: one line, pipes escaped."""
    return " ".join(str(text).split()).replace("|", "\\|")


def _first_paragraph(doc: str | None) -> str:
    """A docstring's first paragraph, joined into one line."""
    return " ".join((doc or "").strip().split("\n\n")[0].split())


def render_metrics(_: str = "") -> str:
    """Every metric memlab registers (memlab.eval.metrics.registry), in table order: its column
    name, view, range, its one definition (the docstring of its function, or its ``doc=``),
    when a probe is unscored, and the module that defines it."""
    from memlab.eval.metrics.registry import registered

    lines = ["| metric | view | in [0, 1] | definition | unscored when | defined in |",
             "|---|---|---|---|---|---|"]
    for m in registered():
        module = m.computed_by or getattr(m.fn, "__module__", None)
        if not _ours(module):
            continue
        doc = m.doc or _defined_in_docstring(m.name, module) or f"written by the replay (`{m.computed_by}`)"
        lines.append(f"| `{m.key}` | {m.view} | {'yes' if m.bounded else 'no'} | {_cell(doc)} | {_cell(m.unscored)} "
                     f"| `{module}` |")
    return "\n" + "\n".join(lines) + "\n"


def _defined_in_docstring(name: str, module: str) -> str:
    """The paragraph or bullet of ``module``'s docstring that names ``name`` (a metric the
    replay writes and registers without ``doc=``: its definition lives there), one line."""
    import ast

    path = REPO / (module.replace(".", "/") + ".py")
    if not path.is_file():
        return ""
    doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
    chunks = []
    for paragraph in doc.split("\n\n"):
        chunks += [c for c in re.split(r"\n(?=- )", paragraph)]
    found = next((c for c in chunks if f"``{name}``" in c), "")
    return " ".join(found.lstrip("- ").split())


def render_strategy_tags(_: str = "") -> str:
    """The strategy registry's tags and what each says (``memlab.strategies.registry.TAGS``),
    with the strategies that carry it."""
    from memlab.strategies import registry
    from memlab.strategies.registry import TAGS

    return "\n" + "\n".join(f"- `{tag}`: {what} ({', '.join(f'`{n}`' for n in registry.names(tag=tag))})"
                            for tag, what in TAGS.items()) + "\n"


def render_strategies(_: str = "") -> str:
    """Every strategy memlab registers by name, with its tags and its factory's docstring (first
    paragraph); the peer adapters (``memlab.strategies.registry.ADAPTERS``) say so."""
    from memlab.strategies import registry
    from memlab.strategies.registry import ADAPTERS

    lines = []
    for name in registry.names():
        factory = registry.factory(name)
        if not _ours(getattr(factory, "__module__", None)):
            continue
        doc = _first_paragraph(factory.__doc__)
        tags = ", ".join(registry.tags(name))
        lines.append(f"- `{name}`" + (" (peer adapter)" if name in ADAPTERS else "") + (f" [{tags}]" if tags else "")
                     + (f": {doc}" if doc else ""))
    return "\n" + "\n".join(lines) + "\n"


def cli_parsers() -> dict[str, Any]:
    """``memlab``'s argparse parsers by command (``""``: the top level), from ``memlab.cli._parser``."""
    import argparse

    from memlab.cli import _parser

    top = _parser()
    subs = next(a.choices for a in top._actions if isinstance(a, argparse._SubParsersAction))
    return {"": top, **dict(subs)}


def cli_flags(parser: Any) -> list[str]:
    """The option strings of one parser (``--help`` left out: argparse adds it to every parser)."""
    return [f for a in parser._actions for f in a.option_strings if f not in ("-h", "--help")]


def render_cli_flags(_: str = "") -> str:
    """Every flag of every ``memlab`` command, with its value and help, from the parser."""
    import argparse

    out = []
    for command, parser in cli_parsers().items():
        out += ["", f"`memlab{' ' + command if command else ''}`", "", "| flag | value | what it does |", "|---|---|---|"]
        for action in parser._actions:
            flags = [f for f in action.option_strings if f not in ("-h", "--help")]
            if not flags or isinstance(action, argparse._SubParsersAction):
                continue
            value = "" if action.nargs == 0 else (action.metavar or action.dest.upper())
            if action.choices:
                value = " \\| ".join(str(c) for c in action.choices)
            help_text = (action.help or "").replace("%%", "%")
            out.append(f"| `{' '.join(flags)}` | {f'`{value}`' if value else ''} | {_cell(help_text)} |")
    return "\n".join(out).rstrip() + "\n"


def render_local_models(_: str = "") -> str:
    """The GGUF models ``LocalLLM`` runs by name (memlab.llm.models.MODELS): size, chat format,
    the packages that carry the parts and the extra that installs them, licence."""
    from memlab.llm.models import DEFAULT_MODEL, MODELS, TEST_MODEL

    lines = ["| name | file | size | chat format | kind | parts | extra | licence |", "|---|---|---:|---|---|---|---|---|"]
    for m in MODELS.values():
        role = {DEFAULT_MODEL: " (default)", TEST_MODEL: " (the fast tests')"}.get(m.name, "")
        parts = f"{len(m.parts)} packages `{m.parts[0].package}` ... `{m.parts[-1].package}`"
        lines.append(f"| `{m.name}`{role} | `{m.file_name}` | {m.size / 1e9:.2f} GB | {m.chat_format or 'embedded'} | "
                     f"{'instruction-tuned' if m.instruct else 'base'} | {parts} | `memlab[{m.extra}]` | "
                     f"{_cell(m.licence)} |")
    return "\n" + "\n".join(lines) + "\n"


def render_strategy_methods(_: str = "") -> str:
    """The ``memlab.strategy.Strategy`` interface: every public method the class defines, its
    signature and its docstring's first paragraph; the abstract ones are marked required."""
    import inspect

    from memlab.strategy import Strategy

    lines = ["| method | required | what it does |", "|---|---|---|"]
    for name, member in vars(Strategy).items():
        fn = member.fget if isinstance(member, property) else getattr(member, "__wrapped__", member)
        if name.startswith("_") or not (inspect.isfunction(fn)):
            continue
        signature = "" if isinstance(member, property) else str(inspect.signature(fn)).replace("self, ", "").replace("(self)", "()")
        required = "yes" if getattr(member, "__isabstractmethod__", False) else ""
        signature = _cell(signature.replace("'", ""))  # annotations are strings here (postponed evaluation)
        lines.append(f"| `{name}{signature}` | {required} | {_cell(_first_paragraph(fn.__doc__))} |")
    return "\n" + "\n".join(lines) + "\n"


def render_formats(_: str = "") -> str:
    """Every dataset format memlab registers (memlab.eval.loaders.registry): whether ``memlab
    eval`` streams it, the options ``--option KEY=VALUE`` reaches, and its loader's docstring."""
    from memlab.eval.loaders.registry import get_loader, loader_names

    lines = ["| `--format` | streams | `--option` keys | what it reads |", "|---|---|---|---|"]
    for name in loader_names():
        loader = get_loader(name)
        if not _ours(getattr(loader.load, "__module__", None)):
            continue
        options = ", ".join(f"`{o}`" for o in loader.options) or "none"
        lines.append(f"| `{name}` | {'yes' if loader.streams else 'no'} | {options} | {_cell(loader.doc)} |")
    return "\n" + "\n".join(lines) + "\n"


def _docstring(path: Path) -> str:
    import ast

    try:
        doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
    except SyntaxError:
        return ""
    first = _first_paragraph(doc)
    end = first.find(". ")  # the first sentence: the layout is a map, the module says the rest
    return first if end < 0 else first[:end + 1]


def render_layout(_: str = "") -> str:
    """memlab's modules and packages (top level), each with its docstring's first sentence."""
    package = REPO / "memlab"
    lines = []
    for path in sorted(package.iterdir()):
        if path.name.startswith("_") and path.name != "__main__.py":
            continue
        if path.is_dir() and (path / "__init__.py").is_file():
            lines.append(f"- `memlab/{path.name}/`: {_docstring(path / '__init__.py')}")
        elif path.suffix == ".py":
            lines.append(f"- `memlab/{path.name}`: {_docstring(path)}")
    return "\n" + "\n".join(lines) + "\n"


def render_layers(_: str = "") -> str:
    """The import layers, bottom to top, as tests/test_layering.py's ``LAYERS`` declares them."""
    import ast

    tree = ast.parse((REPO / "tests" / "test_layering.py").read_text(encoding="utf-8"))
    layers = next(ast.literal_eval(node.value) for node in ast.walk(tree)
                  if isinstance(node, ast.AnnAssign) and getattr(node.target, "id", None) == "LAYERS"
                  or isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "LAYERS" for t in node.targets))
    return "\n" + "\n".join(f"{n}. " + ", ".join(f"`{m}`" for m in layer) for n, layer in enumerate(layers, 1)) + "\n"


def _with_ci(row: dict[str, Any], metric: str) -> str:
    ci = row.get(f"{metric}_ci")
    value = row.get(metric)
    if value is None:
        return "n/a"
    return f"{value:.1f} [{ci[0]:.1f}, {ci[1]:.1f}]" if ci else f"{value:.1f}"


def render_generalise(_: str = "") -> str:
    """The generalisation benchmark (bench/bench_generalise.py): the default and the references
    on each benchmark with clustered CIs, the ablation, and the categories the targets miss on."""
    bench = load("generalise")["benchmarks"]
    lines: list[str] = []
    titles = {"locomo": ("LoCoMo (evidence recall, %; 95% CI, conversations resampled)", ["recall@5", "recall@512tok"]),
              "longmemeval_s": ("LongMemEval S dev (LongMemEval's protocol, %; 95% CI, questions resampled)",
                                ["lme_recall_any@5", "lme_recall_all@5", "recall@1024tok"])}
    # the two tuned benchmarks first, then the files nobody tuned on
    for key, record in sorted(bench.items(), key=lambda item: (item[0] not in titles, list(titles).index(item[0])
                                                                if item[0] in titles else 0, item[0])):
        # a --dataset file (e.g. BEAM, in its own format): LoCoMo-format protocol, never tuned on
        title, metrics = titles[key] if key in titles else (
            f"{record['dataset']} (`{key.partition(':')[2]}`, {record['n_dialogues']} conversations, never tuned on; "
            "evidence recall, %; 95% CI, conversations resampled)", ["recall@5", "recall@512tok"])
        lines += [f"**{title}**, {record.get('n_questions', '')} questions:".replace(",  questions", ""), "",
                  "| strategy | " + " | ".join(metrics) + " | ms per question |",
                  "|---|" + "---:|" * (len(metrics) + 1)]
        reused = set((record.get("reused") or {}).get("rows", []))

        def ms(name: str, row: dict[str, Any]) -> str:  # a reused row's time is its own run's
            return f"{row['ms_per_question']:.1f}" + (" †" if name in reused else "")

        for name, row in record["table"].items():
            lines.append(f"| `{name}` | " + " | ".join(_with_ci(row, m) for m in metrics) + f" | {ms(name, row)} |")
        default = record["table"].get("recall_plus")
        if default:
            cats = default["categories"]
            unit = "question type" if key == "longmemeval_s" else "category"
            lines += ["", f"`recall_plus` per {unit}:", "",
                      "| " + unit.split()[-1] + " | n | " + " | ".join(metrics) + " |",
                      "|---|---:|" + "---:|" * len(metrics)]
            unscored = [cat for cat, row in cats.items() if not row["n_scored"]]
            for cat, row in cats.items():
                if row["n_scored"]:
                    lines.append(f"| {cat} | {row['n_scored']} | " + " | ".join(f"{row[m]:.1f}" for m in metrics)
                                 + " |")
            if unscored:  # e.g. BEAM's abstention questions: no evidence to recall
                lines += ["", "Not scored (no evidence to recall): " + ", ".join(
                    f"{cat} ({cats[cat]['n_questions']} questions)" if "n_questions" in cats[cat] else cat
                    for cat in unscored) + "."]
        if record.get("ablation"):
            lines += ["", "Ablation at equal tokens (the default, then the default minus or plus one part; a part's "
                          "cost per question is its ms against its default's, in the same run):", "",
                      "| variant | " + " | ".join(metrics) + " | ms per question |", "|---|" + "---:|" * (len(metrics) + 1)]
            for name, row in record["ablation"].items():
                lines.append(f"| `{name}` | " + " | ".join(_with_ci(row, m) for m in metrics)
                             + f" | {ms(name, row)} |")
        lines += ["", f"Record `bench/results/generalise.json` ({key}): "
                      f"{describe_provenance(record['provenance'], record.get('load_avg_1m'))}."]
        if reused:
            r = record["reused"]
            lines += ["", f"† Reused (`--reuse`) from the run at `{(r.get('git_commit') or '?')[:10]}` on "
                          f"{(r.get('date') or '?')[:16].replace('T', ' ')} UTC, after "
                          + " and ".join(f"`{c}`" for c in r["checked"])
                          + " re-ran equal on every figure; their ms per question are that run's, so compare "
                            "them with each other and with that run's "
                          + " and ".join(f"`{c}` ({ms:.1f})" for c, ms in r.get("checked_ms_per_question", {}).items())
                          + ", not with this run's."]
        lines.append("")
    return "\n" + "\n".join(lines + generalise_targets(bench))


def render_generalise_ablation(_: str = "") -> str:
    """The default's ablation on every benchmark of the generalise record, side by side: one row
    per lexical variant (the e5 ablation is in docs/results.md), recall at 5 units and at the
    benchmark's token budget, each with its 95% interval."""
    bench = load("generalise")["benchmarks"]
    columns = [("locomo", "recall@5", "LoCoMo @5"), ("locomo", "recall@512tok", "LoCoMo @512tok"),
               ("longmemeval_s", "lme_recall_any@5", "LongMemEval any@5"),
               ("longmemeval_s", "recall@1024tok", "LongMemEval @1024tok")]
    for key in sorted(k for k in bench if k not in ("locomo", "longmemeval_s")):
        short = key.partition(":")[2] or key
        columns += [(key, "recall@5", f"{bench[key]['dataset']} {short} @5 (held out)"),
                    (key, "recall@512tok", f"{bench[key]['dataset']} {short} @512tok (held out)")]
    names: list[str] = []
    for key in dict.fromkeys(c[0] for c in columns):
        names += [n for n in (bench.get(key, {}).get("ablation") or {}) if "[" not in n and n not in names]
    lines = ["| variant | " + " | ".join(c[2] for c in columns) + " |", "|---|" + "---:|" * len(columns)]
    for name in names:
        cells = []
        for key, metric, _ in columns:
            row = (bench.get(key, {}).get("ablation") or {}).get(name)
            cells.append(_with_ci(row, metric) if row else "n/a")
        lines.append(f"| `{name}` | " + " | ".join(cells) + " |")
    dates = ", ".join(f"{k} at `{v['provenance']['git_commit'][:10]}`" for k, v in bench.items())
    lines += ["", "95% intervals: LoCoMo and the held-out file resample conversations, LongMemEval questions. "
                  f"Rendered from `bench/results/generalise.json` ({dates}); the full tables, the dense (e5) "
                  "ablation, the references and each section's command are in [results](docs/results.md)."]
    return "\n" + "\n".join(lines) + "\n"


#: Issue 32's targets (percent): LoCoMo and LongMemEval S dev, and the largest gap a benchmark
#: nobody tuned on may leave to LoCoMo (the default's figure on each metric).
GENERALISE_TARGETS = {"locomo": {"recall@5": 75.0, "recall@512tok": 85.0},
                      "longmemeval_s": {"lme_recall_any@5": 98.5, "lme_recall_all@5": 92.0, "recall@1024tok": 95.0}}
HELD_OUT_GAP = 3.0


def _shortfall(row: dict[str, Any], metric: str) -> str:
    """Which categories hold a row's shortfall on ``metric``: (1 - mean) x scored, largest first."""
    cats = row.get("categories") or {}
    missed = {c: (100 - v[metric]) / 100 * v["n_scored"] for c, v in cats.items()
              if v.get(metric) is not None and v.get("n_scored")}
    worst = sorted((c for c in missed if round(missed[c])), key=lambda c: -missed[c])
    return ", ".join(f"{c} {round(missed[c])} of {cats[c]['n_scored']} ({cats[c][metric]:.1f})" for c in worst) or "none"


#: The row of the gold evidence in dialogue order (a perfect ranking): a ceiling, never "best".
ORACLE = "oracle"


def _ceiling(table: dict[str, Any], metric: str, lead: str = "; ") -> str:
    """The gold-evidence row's figure, where the record has one."""
    row = table.get(ORACLE)
    return "" if row is None else f"{lead}gold evidence first, `{ORACLE}`: {row[metric]:.1f}"


def _best(table: dict[str, Any], metric: str) -> str:
    """The strategy row highest on ``metric`` (the gold-evidence row is a ceiling, not a strategy)."""
    return max((n for n in table if n != ORACLE), key=lambda n: table[n][metric])


def generalise_targets(bench: dict[str, Any]) -> list[str]:
    """Sentences on issue 32's targets, from the generalise record: the default's figure, met
    or missed by how much, the best row measured, and the categories that hold the shortfall
    (questions missed = (1 - mean) x scored, rounded; on LoCoMo-format data a question's
    recall is the share of its evidence found, so these are question-equivalents)."""
    lines = ["**Targets** (the default `recall_plus`; the best row of each table beside it):", ""]
    for key, goals in GENERALISE_TARGETS.items():
        table = bench.get(key, {}).get("table", {})
        if "recall_plus" not in table:
            continue
        for metric, goal in goals.items():
            row = table["recall_plus"]
            best = _best(table, metric)
            verdict = "met" if row[metric] >= goal else f"missed by {goal - row[metric]:.1f} points"
            lines.append(f"- {key} {metric} >= {goal:g}: `recall_plus` {row[metric]:.1f}, {verdict} (best `{best}` "
                         f"{table[best][metric]:.1f}{_ceiling(table, metric)}); shortfall by category in questions: "
                         f"{_shortfall(row, metric)}.")
    locomo = bench.get("locomo", {}).get("table", {}).get("recall_plus")
    for key, record in bench.items():
        if key in GENERALISE_TARGETS or locomo is None or "recall_plus" not in record["table"]:
            continue
        table = record["table"]
        row = table["recall_plus"]
        for metric in GENERALISE_TARGETS["locomo"]:
            gap = locomo[metric] - row[metric]
            verdict = "met" if gap <= HELD_OUT_GAP else f"missed by {gap - HELD_OUT_GAP:.1f} points"
            best = _best(table, metric)
            lines.append(f"- {key} (never tuned on) {metric} within {HELD_OUT_GAP:g} points of LoCoMo's "
                         f"{locomo[metric]:.1f}: `recall_plus` {row[metric]:.1f}, "
                         f"{abs(gap):.1f} points {'below' if gap >= 0 else 'above'}, {verdict} (best `{best}` "
                         f"{table[best][metric]:.1f}{_ceiling(table, metric)}); "
                         f"shortfall by category in questions: {_shortfall(row, metric)}.")
    return lines + [""]


def render_evidence_overlap(_: str = "") -> str:
    """How much of each question its evidence says in its words (bench/evidence_overlap.py),
    per category, beside the default's recall@5 on the same questions (generalise.json)."""
    data = load("evidence_overlap")
    bench = load("generalise")["benchmarks"]
    lines: list[str] = []
    for key, b in data["benchmarks"].items():
        default = bench.get(key, {}).get("table", {}).get("recall_plus", {})
        cats = default.get("categories", {})
        lines += [f"**{key}** ({b['all']['n']} questions with evidence):", "",
                  "| category | questions | overlap | low | >= 5 rivals | median rivals | evidence words "
                  "| `recall_plus` recall@5 |", "|---|---:|---:|---:|---:|---:|---:|---:|"]
        for cat, c in sorted(b["categories"].items(), key=lambda kv: kv[1]["overlap"]) + [("all", b["all"])]:
            recall = default.get("recall@5") if cat == "all" else cats.get(cat, {}).get("recall@5")
            lines.append(f"| {cat} | {c['n']} | {c['overlap']:.2f} | {100 * c['low']:.0f}% | {100 * c['rivals_5']:.0f}% "
                         f"| {c['rivals']:g} | {c['evidence_words']:.0f} | {_num(recall, '.1f')} |")
        lines.append("")
    lines.append(record_line("evidence_overlap", data))
    return "\n" + "\n".join(lines) + "\n"


def _setting(config: dict[str, Any]) -> str:
    return ", ".join(f"{k} {v}" for k, v in sorted(config.items()))


def render_tuning(name: str = "generalise_tuning") -> str:
    """A tuning record of bench/tune_generalise.py: each fold's configuration and training
    objective at the end of each pass (the parts a later pass changed named), the default and
    how it was chosen, and the LoCoMo leave-conversations-out estimate."""
    data = load(name)
    lines = ["| fold | pass | parts changed by the pass | objective on the fold's training data |", "|---|---:|---|---:|"]
    # the search starts from every part "off", so the first pass names what it turned on
    off = {k: v for g in data["grid"] for k, v in g["settings"][0].items()}
    for fold, path in data["folds"].items():
        before = off
        for n in sorted({s.get("pass", 1) for s in path["steps"]}):
            steps = [s for s in path["steps"] if s.get("pass", 1) == n]
            after = dict(before)
            for step in steps:
                after.update(step["kept"])
            changed = {k: v for k, v in after.items() if before.get(k, "unset") != v}
            objective = max(t["objective"] for t in steps[-1]["tried"])
            lines.append(f"| {fold} | {n} | {_setting(changed) if changed else 'none'} | {objective:.3f} |")
            before = after
    pooled, off = data["locomo_leave_conversations_out"], data["locomo_leave_conversations_out_all_parts_off"]
    reused = data.get("reused")
    lines += ["", f"- Default: {_setting(data['default'])} ({data['default_how']}).",
              f"- LoCoMo leave-conversations-out (each fold's choice on its held-out conversations, pooled): "
              f"recall@5 {pooled['recall@5']:.2f}, recall@512tok {pooled['recall@512tok']:.2f}; every part off: "
              f"{off['recall@5']:.2f}, {off['recall@512tok']:.2f}."]
    from memlab.strategies.recall_plus import DEFAULTS

    differ = {k: v for k, v in data["default"].items() if DEFAULTS.get(k) != v and not (
        k == "time_slack_days" and data["default"].get("time_weight", 0) == 0)}
    lines.append("- `recall_plus`'s defaults are this choice." if not differ else
                 f"- `recall_plus`'s defaults differ from this choice in: "
                 + ", ".join(f"{k} {DEFAULTS.get(k)} (here {v})" for k, v in sorted(differ.items())) + ".")
    if reused:
        lines.append(f"- LongMemEval and BEAM figures of {reused['configurations']} configurations reused from the run "
                     f"at `{reused['git_commit'][:10]}` after `{_setting(reused['checked'])}` re-ran equal.")
    lines += ["", f"Record `bench/results/{name}.json`: {describe_provenance(data['provenance'])}."]
    return "\n" + "\n".join(lines) + "\n"


def paired_verdict(c: dict[str, Any], subject: str) -> str:
    """What one paired comparison shows of ``subject`` against the default, in words chosen by
    its figures: a side is named only when p < 0.05 and the interval excludes 0."""
    if c["wins"] == 0 and c["losses"] == 0:
        return "no question changed"
    if c["p_value"] < 0.05 and (c["ci"][0] > 0 or c["ci"][1] < 0):
        return f"{subject} is " + ("higher" if c["diff"] > 0 else "lower")
    return "the data cannot separate them"


def rerank_verdict(c: dict[str, Any]) -> str:
    """What one paired comparison of ``bench_rerank`` shows, in words chosen by its figures."""
    return paired_verdict(c, "the reranker")


def render_rerank(name: str = "rerank") -> str:
    """The LLM reranker against the default on a seeded sample (bench/bench_rerank.py; LoCoMo in
    ``rerank``, LongMemEval S dev in ``rerank_longmemeval``): both rows with their cost, then
    each metric's paired difference and what it shows."""
    name = name or "rerank"
    data = load(name)
    runs, protocol = data["runs"], data["protocol"]
    lme = protocol.get("benchmark") == "longmemeval"
    metrics = (["lme_recall_any@5", "lme_recall_all@5", "recall@1024tok", "recall@10"] if lme
               else ["recall@5", "recall@10", "recall@512tok"])
    if lme:
        head = (f"**LongMemEval S dev, {protocol['sample']} questions drawn with seed {protocol['seed']}** "
                f"(LongMemEval's protocol and turn recall, %; 95% CI, questions resampled; `{data['model']}` reads "
                f"the first {data['window']} hits, each cut to its first {data['max_words']} words):")
        pairing = "Reranked minus default, paired by question (95% CI resampling questions, sign-flip p):"
        observing = "the default's include observing every user turn of each drawn question's haystack"
    else:
        where = (f"{data['dataset']['format']} `{Path(data['dataset']['path']).name}`" if "dataset" in data
                 else "LoCoMo")
        cut = f", each cut to its first {data['max_words']} words" if "max_words" in data else ""
        head = (f"**{where}, {protocol['sample']} questions drawn with seed {protocol['seed']}** (evidence recall, %; "
                f"95% CI, conversations resampled; `{data['model']}` reads the first {data['window']} hits{cut}):")
        pairing = "Reranked minus default, paired by question (conversation-clustered 95% CI, sign-flip p):"
        observing = "the default's include observing every turn of the sampled conversations"
    lines = [head, "",
             "| strategy | " + " | ".join(metrics) + " | LLM calls | prompt tokens | completion tokens | format errors "
             "| ms per question |", "|---|" + "---:|" * (len(metrics) + 5)]
    for label, r in runs.items():
        lines.append(f"| `{label}` | " + " | ".join(_with_ci(r, m) for m in metrics)
                     + f" | {r['llm_calls_per_question']:.1f} | {r['llm_prompt_tokens_per_question']:.1f} "
                       f"| {r['llm_completion_tokens_per_question']:.1f} | {r['llm_format_errors']} "
                       f"| {r['ms_per_question']:.1f} |")
    lines += ["", pairing, ""]
    for m in metrics:
        c = data["paired"][m]
        lines.append(f"- {m}: {c['diff']:+.1f} [{c['ci'][0]:+.1f}, {c['ci'][1]:+.1f}], p = {c['p_value']:.3f}, "
                     f"{c['wins']} wins / {c['ties']} ties / {c['losses']} losses: {rerank_verdict(c)}.")
    lines += [f"- Time per question: {data['time_ratio']:.1f}x the default's in the same run, "
              f"{data['added_ms_per_question']:.0f} ms more per question (a replay's seconds over the questions "
              f"asked: {observing}).", "",
              record_line(name, data)]
    return "\n" + "\n".join(lines) + "\n"


def render_fact_keys(_: str = "") -> str:
    """Fact keys (rules, and a local LLM) against the default on named LoCoMo conversations
    (bench/bench_fact_keys.py): the rows with their cost, each paired difference and what it
    shows, and the first turns' LLM facts as the model wrote them."""
    data = load("fact_keys")
    runs, protocol = data["runs"], data["protocol"]
    metrics = ["recall@5", "recall@10", "recall@512tok"]
    first = next(iter(runs.values()))
    names = ", ".join(f"`{c}`" for c in protocol["conversations"])
    lines = [f"**LoCoMo {names}** ({first['n_turns']} turns, {first['n_questions']} questions; evidence recall, %; "
             f"95% CI, questions resampled; fact keys fused at weight {protocol['fact_weight']}; `{data['model']}` "
             "writes the LLM facts):", "",
             "| strategy | " + " | ".join(metrics) + " | LLM calls | prompt tokens per turn | completion tokens per turn "
             "| format errors | turns with facts | seconds | ms per turn |", "|---|" + "---:|" * (len(metrics) + 7)]
    for label, r in runs.items():
        cost = ([f"{r['llm_calls']}", f"{r['llm_prompt_tokens_per_turn']:.1f}",
                 f"{r['llm_completion_tokens_per_turn']:.1f}", f"{r['llm_format_errors']}",
                 f"{r['turns_with_facts']}"] if "llm_calls" in r else ["0", "0.0", "0.0", "0", "0"])
        lines.append(f"| `{label}` | " + " | ".join(_with_ci(r, m) for m in metrics) + " | " + " | ".join(cost)
                     + f" | {r['seconds']:.1f} | {r['ms_per_turn']:.1f} |")
    lines += ["", "Each fact-key row minus the default, paired by question (95% CI resampling questions, sign-flip p):", ""]
    for label, per in data["paired"].items():
        for m in metrics:
            c = per[m]
            lines.append(f"- `{label}`, {m}: {c['diff']:+.1f} [{c['ci'][0]:+.1f}, {c['ci'][1]:+.1f}], "
                         f"p = {c['p_value']:.3f}, {c['wins']} wins / {c['ties']} ties / {c['losses']} losses: "
                         f"{paired_verdict(c, 'the fact-key row')}.")
    lines.append(f"- Time of the LLM-facts replay: {data['time_ratio']:.1f}x the default's in the same run (the "
                 "extraction is paid once per observed turn; nothing is added per question).")
    shown = [(i, f) for i, f in data["facts"].items() if f][:3]
    if shown:
        lines += ["", "The first turns the model wrote facts for, as written:", ""]
        lines += [f"- `{i}`: " + "; ".join(f'"{x}"' for x in f) for i, f in shown]
    lines += ["", record_line("fact_keys", data)]
    return "\n" + "\n".join(lines) + "\n"


BLOCKS: dict[str, Callable[[str], str]] = {
    "compare_builtins": render_compare_builtins, "compare_builtins_pair": render_compare_builtins_pair,
    "pvalue_floor": render_pvalue_floor, "locomo": render_locomo, "locomo_peers": render_locomo_peers,
    "locomo_categories": render_locomo_categories,
    "scale_cycled_sessions": render_scale_cycled_sessions, "scale_tokens": render_scale_tokens,
    "replay_warm": render_replay_warm, "keep_rate_sweep": render_keep_rate_sweep,
    "embedding_gemm": render_embedding_gemm,
    "layered_local": render_layered_local,
    "local_llm_costs": render_local_llm_costs, "local_llm_judges": render_local_llm_judges,
    "notebooks": render_notebooks, "metrics": render_metrics, "strategies": render_strategies,
    "strategy_tags": render_strategy_tags,
    "cli_flags": render_cli_flags, "formats": render_formats, "local_models": render_local_models,
    "strategy_methods": render_strategy_methods, "generalise": render_generalise,
    "evidence_overlap": render_evidence_overlap, "layout": render_layout, "layers": render_layers,
    "rerank": render_rerank, "tuning": render_tuning, "fact_keys": render_fact_keys,
    "generalise_ablation": render_generalise_ablation}


def render_block(name: str) -> str:
    kind, _, arg = name.partition(":")
    if kind not in BLOCKS:
        raise SystemExit(f"block {name!r}: unknown; known: {', '.join(BLOCKS)}")
    return BLOCKS[kind](arg)


def blocks(text: str) -> list[tuple[str, str]]:
    """(name, body) of every marked block of ``text``."""
    return [(m.group("name"), m.group("body")) for m in BLOCK.finditer(text)]


def render(text: str) -> str:
    """``text`` with every marked block's body rendered from the results files."""
    return BLOCK.sub(lambda m: m.group(1) + render_block(m.group("name")) + m.group(4), text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    rec = sub.add_parser("record", help="record the main job's output folder")
    rec.add_argument("folder", nargs="?", default=str(REPO / "runs" / "compare_builtins"))
    sub.add_parser("render", help="rewrite the marked blocks of README.md, docs/*.md, bench/README.md and "
                                  "BENCHMARKS.md")
    sub.add_parser("check", help="exit 1 when a document and the results files disagree")
    args = parser.parse_args(argv)
    if args.command == "record":
        data = record_sweep(Path(args.folder))
        print(f"wrote {RESULTS / 'compare_builtins.json'} ({len(data['strategies'])} strategies)")
        return 0
    from memlab.atomic import atomic_write_text

    stale = []
    for doc in DOCUMENTS:
        text = doc.read_text(encoding="utf-8")
        new = render(text)
        name = doc.relative_to(REPO).as_posix()
        if args.command == "check":
            if new != text:
                stale.append(name)
            continue
        if new != text:
            atomic_write_text(doc, new)
        print(f"{name}: {len(blocks(new))} blocks rendered{'' if new != text else ', unchanged'}")
    if stale:
        print(f"{', '.join(stale)}: differ from their rendering: python scripts/readme_results.py render")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
