"""An LLM reranker over the default's first hits, with its cost: LoCoMo or LongMemEval S dev, a seeded sample.

    python bench/bench_rerank.py [--benchmark locomo|longmemeval] [--sample 150] [--seed 0]
                                 [--window 10] [--max-words N] [--model NAME] [--n-threads N]
                                 [--dataset FILE --format NAME] [--record FILE]

What it runs: a seeded draw of ``--sample`` scored questions (``draw``). On LoCoMo each
conversation is replayed whole and only its drawn questions are asked; on LongMemEval S dev
(``--benchmark longmemeval``) each drawn question is replayed over its own haystack, user
turns indexed, and scored by LongMemEval's protocol (``lme_recall_any@5``,
``lme_recall_all@5``) and at 1,024 tokens, as ``bench_generalise.py`` scores it.
``--dataset FILE --format NAME`` runs the LoCoMo comparison on another file (BEAM:
``--dataset ../shared/datasets/beam/100K --format beam``); ``--max-words N`` cuts each hit the
model reads to its first N words (whole by default; 200 on LongMemEval, whose user turns run
to thousands of words). The same questions are
asked of ``recall_plus`` (the default) and of ``recall_plus`` with an ``LLMReranker`` as its
selection: a local model (``LocalLLM``, memlab's default Qwen2.5-Coder-1.5B-Instruct unless
``--model`` names another registered one, on the CPU, greedy) reads the first ``--window``
hits and names the relevant ones, most relevant first; those lead, the rest keep their order.

Printed and recorded: recall@5, recall@10 and recall@512tok of both on LoCoMo, LongMemEval's
three metrics and recall@10 on LongMemEval (percent, 95% intervals resampling conversations;
a LongMemEval question is a conversation of its own), the paired difference of each metric with its conversation-clustered
interval and sign-flip p-value (``memlab.eval.compare``), and the cost: LLM calls, prompt and
completion tokens per question, format errors, and ms per question of each strategy, measured in
the same run: a replay's seconds over the questions asked, so the default's figure includes
observing every turn of the sampled conversations; the difference of the two is what the
reranker adds to each question, and their ratio is recorded too. With ``--window 10`` recall@10 cannot
change (the reranker only reorders the first 10), which the record's test checks question by
question. The record keeps every question's values, so its figures can be recomputed from it.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common  # noqa: E402

DEFAULT = "recall_plus"
RERANKED = "recall_plus + LLM rerank"
PROTOCOL = {"ks": [5, 10], "k_max": 10, "budgets": [512]}
METRICS = ["recall@5", "recall@10", "recall@512tok"]
LLM_COLUMNS = ["llm_calls", "llm_prompt_tokens", "llm_completion_tokens", "llm_format_errors"]
#: what each question's row keeps in the record
KEPT = ["dialogue_id", "probe_id", "category", *METRICS, *LLM_COLUMNS]
#: LongMemEval S dev: bench_longmemeval's cut-offs and budgets (the replay's protocol there), the
#: metrics bench_generalise reports, and recall@10, which a reranker of the first 10 cannot move
LME_PROTOCOL = {"benchmark": "longmemeval", "ks": [1, 3, 5, 10, 30, 50], "budgets": [512, 1024, 2048],
                "roles": ["user"]}
LME_METRICS = ["lme_recall_any@5", "lme_recall_all@5", "recall@1024tok", "recall@10"]
LME_KEPT = ["dialogue_id", "probe_id", "category", *LME_METRICS, *LLM_COLUMNS]


def draw(dataset, n: int, seed: int) -> list[tuple[str, str]]:
    """``n`` (dialogue id, probe id) pairs drawn without replacement, seeded, from the probes
    with evidence, in dataset order."""
    return draw_from([(d.id, p.id) for d in dataset.dialogues for p in d.probes if p.evidence], n, seed)


def draw_from(scored: list[tuple[str, str]], n: int, seed: int) -> list[tuple[str, str]]:
    """``n`` of the ``scored`` questions, drawn without replacement, seeded, in their order."""
    import numpy as np

    if not 1 <= n <= len(scored):
        from memlab.base import ConfigError

        raise ConfigError(f"--sample: expected 1 to {len(scored)} (the scored questions), got {n}")
    picked = set(np.random.default_rng(seed).choice(len(scored), size=n, replace=False).tolist())
    return [q for i, q in enumerate(scored) if i in picked]


def lme_scored(path) -> list[tuple[str, str]]:
    """LongMemEval's scored questions as (dialogue id, probe id), in file order: each question
    is a dialogue of its own, scored when it has gold user turns (an abstention question has
    none)."""
    from memlab.eval.loaders import iter_longmemeval

    return [(d.id, p.id) for d in iter_longmemeval(str(path)) for p in d.probes if p.evidence]


def sampled(dataset, questions: list[tuple[str, str]]):
    """``dataset`` with only the drawn probes (every turn kept)."""
    import dataclasses

    from memlab.eval.dataset import Dataset

    keep = set(questions)
    dialogues = [dataclasses.replace(d, probes=[p for p in d.probes if (d.id, p.id) in keep])
                 for d in dataset.dialogues]
    return Dataset(name=dataset.name, dialogues=[d for d in dialogues if d.probes], source_path=dataset.source_path)


def strategy(label: str, model: str, window: int, n_threads: int | None, max_words: int | None = None):
    from memlab import strategies

    s = strategies.get(DEFAULT)
    if label == RERANKED:
        from memlab.llm.local import LocalLLM
        from memlab.retrieval.llm_rerank import LLMReranker

        s.set_params(selection=LLMReranker(LocalLLM(model=model, n_ctx=4096, n_threads=n_threads), window=window,
                                           max_words=max_words))
    return s


def figures(rows, seconds: float, metrics: list[str] = METRICS) -> dict[str, Any]:
    from memlab.eval.metrics import summarize

    s = summarize(rows, by=["strategy"], metrics=metrics, ci=True).iloc[0]
    out: dict[str, Any] = {"n_questions": int(len(rows))}
    for m in metrics:
        out[m] = round(100 * float(s[m]), 1)
        out[m + "_ci"] = [round(100 * float(s[m + "_ci_low"]), 1), round(100 * float(s[m + "_ci_high"]), 1)]
    for c in ("llm_calls", "llm_prompt_tokens", "llm_completion_tokens"):
        out[c + "_per_question"] = round(float(rows[c].mean()), 1)
    out["llm_format_errors"] = int(rows["llm_format_errors"].sum())
    out["seconds"] = round(seconds, 1)
    out["ms_per_question"] = round(1000 * seconds / max(len(rows), 1), 1)
    return out


def paired(rows, metrics: list[str] = METRICS) -> dict[str, Any]:
    from memlab.eval.compare import compare_pair

    out = {}
    for m in metrics:
        c = compare_pair(rows, RERANKED, DEFAULT, m)
        out[m] = {"diff": round(100 * c.diff, 1), "ci": [round(100 * c.ci_low, 1), round(100 * c.ci_high, 1)],
                  "p_value": round(c.p_value, 4), "wins": c.wins, "ties": c.ties, "losses": c.losses,
                  "n_questions": c.n_probes, "n_conversations": c.n_dialogues}
    return out


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--benchmark", choices=["locomo", "longmemeval"], default="locomo")
    ap.add_argument("--dataset", default=None,
                    help="with --benchmark locomo: another file in a format load_any reads (default: LoCoMo)")
    ap.add_argument("--format", default="locomo", help="the format of --dataset (default: locomo)")
    ap.add_argument("--sample", type=int, default=150, help="scored questions to draw")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--window", type=int, default=10, help="first hits the model reads")
    ap.add_argument("--max-words", type=int, default=None,
                    help="the model reads each hit's first N words (default: whole; LongMemEval: 200)")
    ap.add_argument("--model", default=None, help="a registered local model (default: memlab's default model)")
    ap.add_argument("--n-threads", type=int, default=None)
    ap.add_argument("--record", default=None)
    return ap


def main(argv: list[str] | None = None) -> int:
    from memlab.base import ConfigError

    args = parser().parse_args(argv)
    try:
        return main_longmemeval(args) if args.benchmark == "longmemeval" else main_locomo(args)
    except ConfigError as e:  # a bad option: one line, exit 2
        print(f"bench_rerank: {e}", file=sys.stderr)
        return 2


def main_locomo(args: argparse.Namespace) -> int:
    from memlab.eval import load_any, replay
    from memlab.eval.paths import locomo_path
    from memlab.eval.provenance import run_provenance

    path = args.dataset or locomo_path()
    if path is None:
        from memlab.base import ConfigError

        raise ConfigError("LoCoMo not found: set MEMLAB_LOCOMO, put it at ../shared/datasets/locomo/locomo10.json, "
                          "or name a file with --dataset")
    provenance = run_provenance(data=[path])
    dataset = load_any(path, args.format)
    questions = draw(dataset, args.sample, args.seed)
    subset = sampled(dataset, questions)

    def replayed(s, label):
        return replay(s, subset, ks=tuple(PROTOCOL["ks"]), k_max=PROTOCOL["k_max"],
                      budgets=tuple(PROTOCOL["budgets"]), label=label)

    named = {"dataset": {"path": str(args.dataset), "format": args.format}} if args.dataset else {}
    return compare(args, replayed, provenance, dict(PROTOCOL, sample=args.sample, seed=args.seed), questions,
                   METRICS, KEPT, args.max_words, named)


def main_longmemeval(args: argparse.Namespace) -> int:
    """The same comparison on LongMemEval S dev: each drawn question replayed over its own
    haystack (user turns, as ``bench_generalise.py`` replays it), LongMemEval's metrics."""
    import bench_longmemeval as lme
    from memlab.eval.paths import LONGMEMEVAL_S, longmemeval_path
    from memlab.eval.provenance import run_provenance
    from memlab.eval.streaming import replay_stream

    path = longmemeval_path(LONGMEMEVAL_S)
    if path is None:
        from memlab.base import ConfigError

        raise ConfigError("--benchmark longmemeval: LongMemEval S dev not found (set MEMLAB_LONGMEMEVAL or put "
                          "the files in ../shared/datasets/longmemeval/)")
    provenance = run_provenance(data=[path])
    questions = draw_from(lme_scored(path), args.sample, args.seed)
    ids = {d for d, _ in questions}
    protocol = dict(LME_PROTOCOL, sample=args.sample, seed=args.seed)

    def replayed(s, label):
        return replay_stream(s, lme.streamed(path, tuple(protocol["roles"]), ids), ks=tuple(protocol["ks"]),
                             budgets=tuple(protocol["budgets"]), label=label)

    return compare(args, replayed, provenance, protocol, questions, LME_METRICS, LME_KEPT,
                   200 if args.max_words is None else args.max_words)


def compare(args: argparse.Namespace, replayed, provenance: dict[str, Any], protocol: dict[str, Any],
            questions: list[tuple[str, str]], metrics: list[str], kept: list[str], max_words: int | None,
            named: dict[str, Any] | None = None) -> int:
    """Replay the default and the reranked default (``replayed(strategy, label)`` gives the
    rows), print and record both with their paired differences and the time ratio (``named``:
    more fields of the record, such as the file a run read instead of LoCoMo)."""
    import pandas as pd

    from memlab.eval.configuration import configuration_hash
    from memlab.llm.models import DEFAULT_MODEL

    model = args.model or DEFAULT_MODEL
    data_sha256 = sorted(provenance["data"].values())
    frames, runs = [], {}
    load = [os.getloadavg()[0]]
    for label in (DEFAULT, RERANKED):
        s = strategy(label, model, args.window, args.n_threads, max_words)
        start = time.perf_counter()
        rows = replayed(s, label)
        runs[label] = figures(rows, time.perf_counter() - start, metrics) | {
            "config_hash": configuration_hash(s, data_sha256, protocol)}
        frames.append(rows)
        print(f"{label}: {json.dumps(runs[label])}", flush=True)
    load.append(os.getloadavg()[0])
    rows = pd.concat(frames, ignore_index=True)
    comparison = paired(rows, metrics)
    ratio = round(runs[RERANKED]["ms_per_question"] / runs[DEFAULT]["ms_per_question"], 1)
    added = round(runs[RERANKED]["ms_per_question"] - runs[DEFAULT]["ms_per_question"], 1)
    record = {"provenance": provenance, "protocol": protocol, **(named or {}), "model": model, "window": args.window,
              **({} if max_words is None else {"max_words": max_words}),
              "questions": [list(q) for q in questions], "runs": runs, "paired": comparison,
              "time_ratio": ratio, "added_ms_per_question": added, "load_avg_1m": [round(x, 2) for x in load],
              "rows": {label: [{k: (None if pd.isna(v) else v) for k, v in r.items()}
                               for r in rows[rows["strategy"] == label][kept].to_dict("records")]
                       for label in (DEFAULT, RERANKED)}}
    for m, c in comparison.items():
        print(f"{m}: {RERANKED} - {DEFAULT} = {c['diff']:+.1f} [{c['ci'][0]}, {c['ci'][1]}], p = {c['p_value']}, "
              f"{c['wins']} wins / {c['ties']} ties / {c['losses']} losses", flush=True)
    print(f"time per question: {ratio}x the default's (+{added} ms)", flush=True)
    if args.record:
        _common.write_record(args.record, record)
    return 0


if __name__ == "__main__":
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    raise SystemExit(main())
