"""Result tables of README.md, bench/README.md and BENCHMARKS.md, generated from recorded
bench output (never typed by hand).

    python scripts/readme_results.py record [SWEEP_OUTPUT]   # runs/compare_builtins -> bench/results/compare_builtins.json
    python scripts/readme_results.py render                  # rewrite the documents' marked blocks
    python scripts/readme_results.py check                   # exit 1 if a document and the files disagree

The main job (``memlab sweep experiments/compare_builtins.toml``) writes its per-probe
results and its ``provenance.json`` to ``runs/compare_builtins/``; ``record`` turns them into
``bench/results/compare_builtins.json``: the sweep's provenance (commit, command, date,
machine, package versions, the sha256 of every dataset file), every strategy's token-matched
recall with its dialogue-clustered CI, the other headline columns and its ``config_hash``
(``memlab.eval.configuration.configuration_hash``), and every pairwise comparison of the
ranked strategies (``memlab.eval.headline``). ``bench/bench_locomo.py --output
bench/results/locomo.json`` records LoCoMo runs, each with its own provenance.

``DOCUMENTS`` hold blocks between ``<!-- results:NAME -->`` and ``<!-- /results:NAME -->``;
``render`` replaces each block's body with ``BLOCKS[NAME]`` rendered from the files (the
``notebooks`` block: from the notebooks in ``notebooks/``), and
tests/test_readme.py fails when a block differs from its rendering. ``NAME`` may carry an
argument after a colon: ``compare_builtins_pair:layered,hybrid_plus`` states that pair's
paired comparison. tests/test_bench_records.py re-runs the cheap records and compares them
with ``differences``.
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
#: Every document with generated blocks; ``render`` and ``check`` cover them all.
DOCUMENTS = (README, REPO / "bench" / "README.md", REPO / "BENCHMARKS.md")
BLOCK = re.compile(r"(<!-- results:(?P<name>[\w.:,\-]+) -->)(?P<body>.*?)(<!-- /results:(?P=name) -->)", re.S)
#: Columns of the main job's README table, after rank, strategy and the headline metric's CI.
TABLE_COLUMNS = ("tokens@256tok", "recall@5", "context_recall", "context_tokens")


def _rounded(value: Any) -> Any:
    return round(float(value), 6) if isinstance(value, float) else value


def sweep_protocol(config: Path) -> dict[str, Any]:
    """The ks, k_max and token budgets of a sweep file's [run] table (its defaults filled in)."""
    from memlab.eval.sweep import read_config
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
    from memlab.eval.replay import load_any

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


def render_layered_local(_: str = "") -> str:
    """`layered` with the real local model against the offline stand-in (bench/bench_layered_local.py)."""
    from memlab.eval.headline import phrase_comparison

    data = load("layered_local")
    lines = ["| LLM | seconds | probes | failed | LLM calls | cached | prompt tokens | completion tokens "
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
    lines += ["", f"Record `bench/results/layered_local.json`: {describe_provenance(data['provenance'])}."]
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
        "", f"Record `bench/results/scale_cycled_sessions.json`: "
            f"{describe_provenance(data['provenance'], data['load_avg_1m'])}."]
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
        f"strategy's context), {min(per_judged):.1f}-{max(per_judged):.1f} s more to judge it with both prompts; "
        f"{a['wall_seconds'] / 60:.0f} min for the whole study ({a['llm_calls']:,} calls, "
        f"{a['prompt_tokens']:,} prompt and {a['completion_tokens']:,} completion tokens);",
        f"- every LLM step of `layered` on the shipped dialogues (`memlab eval datasets --strategy layered "
        f"--set llm=local`, recorded by `python bench/bench_layered_local.py`): {local['seconds'] / 60:.0f} min "
        f"for {local['n_probes']} probes in {local['n_dialogues']} dialogues, {local['llm_calls']:,} LLM calls "
        f"({local['llm_cached_calls']:,} of them answered by the response cache of an earlier run), "
        f"{local['llm_format_errors']} format errors, {local['n_failed']} failed probes.",
    ]
    return "\n" + "\n".join(lines) + "\n"


def render_local_llm_judges(_: str = "") -> str:
    """The recorded answer study's judges: accuracy, unreadable replies, agreement."""
    a = load("answers_local")
    acc = {r["judge"]: r for r in a["judge_accuracy"]}
    # a judge's figures are read with its model and its words (name@version), so the block names both
    sets = a.get("judge_prompt_sets")
    named = (", ".join(f"`{n}` = `{i}`" for n, i in sets.items()) if sets
             else "not recorded (the run predates versioned prompt sets)")
    lines = [f"Judge model `{a.get('judge_model') or a['model']}` (bench/bench_answers.py judges with the answering "
             f"model); prompt sets: {named}.", "",
             "| rater | accuracy | labelled | unreadable |", "|---|---:|---:|---:|"]
    for name, r in acc.items():
        lines.append(f"| {name} | {_num(r['accuracy'], '.3f')} | {r['n_labelled']} | {r['unreadable']} |")
    lines += ["", "| pair | Cohen's kappa | share labelled alike | n |", "|---|---:|---:|---:|"]
    for r in a["judge_pairs"]:
        lines.append(f"| {r['a']} / {r['b']} | {_num(r['kappa'], '.3f')} | {_num(r['agreement'], '.3f')} | {r['n']} |")
    lines += ["", f"Spread of accuracy across the two judge prompts: {a['judge_spread']:.3f} "
                  f"({a['answers']} answers; kappa is n/a where a rater gave every answer the same label).",
              "", f"Record `bench/results/answers_local.json`: {describe_provenance(a['provenance'])}."]
    return "\n" + "\n".join(lines) + "\n"


def render_notebooks(_: str = "") -> str:
    """The README's notebook list: every ``notebooks/*.ipynb`` with the title of its first
    markdown cell, so a notebook added or renamed is listed (a test fails until rendered)."""
    lines = []
    for path in sorted((REPO / "notebooks").glob("*.ipynb")):
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        first = next((c for c in cells if c["cell_type"] == "markdown"), None)
        source = "".join(first["source"]) if first else ""
        title = next((line.lstrip("#").strip() for line in source.splitlines() if line.strip()), "")
        lines.append(f"- `notebooks/{path.name}`" + (f": {title}" if title else ""))
    return "\n" + "\n".join(lines) + "\n"


BLOCKS: dict[str, Callable[[str], str]] = {
    "compare_builtins": render_compare_builtins, "compare_builtins_pair": render_compare_builtins_pair,
    "pvalue_floor": render_pvalue_floor, "locomo": render_locomo, "locomo_peers": render_locomo_peers,
    "locomo_categories": render_locomo_categories,
    "scale_cycled_sessions": render_scale_cycled_sessions,
    "layered_local": render_layered_local,
    "local_llm_costs": render_local_llm_costs, "local_llm_judges": render_local_llm_judges,
    "notebooks": render_notebooks}


def render_block(name: str) -> str:
    kind, _, arg = name.partition(":")
    if kind not in BLOCKS:
        raise SystemExit(f"README block {name!r}: unknown; known: {', '.join(BLOCKS)}")
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
    sub.add_parser("render", help="rewrite the marked blocks of README.md, bench/README.md and BENCHMARKS.md")
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
        print(f"{', '.join(stale)} differ from their rendering: python scripts/readme_results.py render")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
