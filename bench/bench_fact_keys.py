"""Fact-augmented keys (LongMemEval's K = V + facts) on the default, with their cost: LoCoMo
conversations named on the command line.

    python bench/bench_fact_keys.py [--conversations conv-30 ...] [--fact-weight 0.5]
                                    [--model NAME] [--n-threads N] [--record FILE]

What it runs: the named LoCoMo conversations, each replayed whole with all its scored
questions, into three strategies:

- ``recall_plus``, the default;
- ``recall_plus + rule facts``: the default with fact keys (``fact_weight``) drawn by
  ``RuleBasedExtractor``, offline rules, nothing per call;
- ``recall_plus + LLM facts``: the same with ``LLMExtractor`` over a local model
  (``LocalLLM``, memlab's default Qwen2.5-Coder-1.5B-Instruct unless ``--model`` names another
  registered one, on the CPU, greedy, answers held to the extraction schema): one call per
  observed turn, the turn shown alone as it is observed.

``--fact-weight`` is one setting fixed before the run (by default the own-turn keys' tuned
weight), not tuned: the LLM pass over every turn costs too much on this CPU for a search.
The extraction is the cost, paid once per turn at ingest: a conversation's LLM pass is
hours on two cores, so the default is LoCoMo's smallest conversation, and the figures are
for the conversations named, not for LoCoMo.

Printed and recorded: recall@5, recall@10 and recall@512tok of each row (percent, 95%
intervals resampling questions: a few conversations cannot be resampled), the paired
difference of each fact-key row against the default with its interval and sign-flip p-value
(questions paired; ``memlab.eval.compare``), and the cost: LLM calls, prompt and completion
tokens per observed turn, format errors and extractions given up, seconds of each replay and
ms per observed turn, all measured in the same run. The record keeps every question's values
and every turn's LLM facts (keyed ``dialogue/turn``), so its figures can be recomputed from it.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common  # noqa: E402

DEFAULT = "recall_plus"
RULES = "recall_plus + rule facts"
LLM_FACTS = "recall_plus + LLM facts"
LABELS = (DEFAULT, RULES, LLM_FACTS)
PROTOCOL = {"ks": [5, 10], "k_max": 10, "budgets": [512]}
METRICS = ["recall@5", "recall@10", "recall@512tok"]
#: what each question's row keeps in the record
KEPT = ["dialogue_id", "probe_id", "category", *METRICS]
#: the smallest LoCoMo conversation (369 turns, 105 questions)
CONVERSATIONS = ["conv-30"]


def chosen(dataset, ids: list[str]):
    """``dataset`` with only the conversations ``ids``, in the order given."""
    from memlab.base import ConfigError
    from memlab.eval.dataset import Dataset

    by_id = {d.id: d for d in dataset.dialogues}
    unknown = [i for i in ids if i not in by_id]
    if unknown or not ids or len(set(ids)) != len(ids):
        raise ConfigError(f"--conversations: expected distinct ids among {', '.join(by_id)}, got {' '.join(ids) or '(none)'}")
    return Dataset(name=dataset.name, dialogues=[by_id[i] for i in ids], source_path=dataset.source_path)


def extractor_llm(model: str, n_threads: int | None, cache_path: str | None):
    """The model the LLM facts ask: ``LocalLLM`` (a fresh response cache at ``cache_path``, so
    every call of the run is made and timed, and the facts can be read back afterwards), or
    the offline stand-in for ``--model offline``."""
    if model == "offline":  # the rule-based stand-in: the whole run in seconds, to try the script
        from memlab.offline.llm import OfflineLLM

        return OfflineLLM()
    from memlab.llm.cache import ResponseCache
    from memlab.llm.local import LocalLLM

    return LocalLLM(model=model, n_ctx=2048, n_threads=n_threads, cache=ResponseCache(cache_path))


def strategy(label: str, fact_weight: float, llm=None):
    from memlab import strategies

    if label == DEFAULT:
        return strategies.get(DEFAULT)
    if label == RULES:
        return strategies.get(DEFAULT, fact_weight=fact_weight, fact_extractor="rules")
    return strategies.get(DEFAULT, fact_weight=fact_weight, fact_extractor=llm)


def facts_read_back(s, dataset) -> tuple[dict[str, list[str]], dict[str, int]]:
    """Each turn's facts, keyed ``dialogue/turn`` (LoCoMo's turn ids restart in every
    conversation), and the extraction's whole usage, read back from the model's response cache
    by a copy of the strategy's extractor (the replay's clones are gone): every answer is a
    cache hit, so ``cached_calls`` counts the run's calls."""
    from memlab.retrieval import BM25Retriever
    from memlab.retrieval.fact_keys import FactKeyRetriever

    keys = next(c for c in s.retriever.components() if isinstance(c, FactKeyRetriever))
    extractor = keys.extractor.clone()
    again = FactKeyRetriever(BM25Retriever(), extractor)
    facts: dict[str, list[str]] = {}
    for dialogue in dataset.dialogues:
        again.reset()
        records = dialogue.to_records()
        again.add(records)
        facts |= {f"{dialogue.id}/{r.id}": again.facts(r.id) for r in records}
    return facts, extractor.usage.as_dict() | {"failures": int(getattr(extractor, "failures", 0))}


def figures(rows, seconds: float, turns: int) -> dict[str, Any]:
    from memlab.eval.metrics import summarize

    rows = rows.assign(question=rows["dialogue_id"].astype(str) + "/" + rows["probe_id"].astype(str))
    s = summarize(rows, by=["strategy"], metrics=METRICS, ci=True, cluster="question").iloc[0]
    out: dict[str, Any] = {"n_questions": int(len(rows)), "n_turns": turns}
    for m in METRICS:
        out[m] = round(100 * float(s[m]), 1)
        out[m + "_ci"] = [round(100 * float(s[m + "_ci_low"]), 1), round(100 * float(s[m + "_ci_high"]), 1)]
    out["seconds"] = round(seconds, 1)
    out["ms_per_turn"] = round(1000 * seconds / max(turns, 1), 1)
    return out


def paired(rows, label: str) -> dict[str, Any]:
    from memlab.eval.compare import compare_pair

    out = {}
    for m in METRICS:
        c = compare_pair(rows, label, DEFAULT, m, cluster=None)
        out[m] = {"diff": round(100 * c.diff, 1), "ci": [round(100 * c.ci_low, 1), round(100 * c.ci_high, 1)],
                  "p_value": round(c.p_value, 4), "wins": c.wins, "ties": c.ties, "losses": c.losses,
                  "n_questions": c.n_probes}
    return out


def parser() -> argparse.ArgumentParser:
    """The command line (a record's test re-reads its recorded command with it)."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--conversations", nargs="+", default=CONVERSATIONS, help="LoCoMo conversation ids")
    ap.add_argument("--fact-weight", type=float, default=None,
                    help="weight of the fact keys in the fusion (default: the own-turn keys' tuned weight)")
    ap.add_argument("--model", default=None, help="a registered local model (default: memlab's default model), or 'offline' "
                    "(memlab's rule-based stand-in, to try the script in seconds)")
    ap.add_argument("--n-threads", type=int, default=None)
    ap.add_argument("--record", default=None)
    return ap


def main(argv: list[str] | None = None) -> int:
    ap = parser()
    args = ap.parse_args(argv)
    import pandas as pd

    from memlab.eval import load_any, replay
    from memlab.eval.configuration import configuration_hash
    from memlab.eval.dataset import Dataset
    from memlab.eval.paths import locomo_path
    from memlab.eval.provenance import run_provenance
    from memlab.llm.models import DEFAULT_MODEL
    from memlab.strategies.recall_plus import DEFAULTS

    model = args.model or DEFAULT_MODEL
    weight = DEFAULTS["turn_weight"] if args.fact_weight is None else args.fact_weight
    path = locomo_path()
    provenance = run_provenance(data=[path])
    data_sha256 = sorted(provenance["data"].values())
    subset = chosen(load_any(path, "locomo"), args.conversations)
    turns = sum(d.n_turns for d in subset.dialogues)
    protocol = dict(PROTOCOL, conversations=args.conversations, fact_weight=weight)
    frames, runs, facts = [], {}, {}
    load = [os.getloadavg()[0]]
    with tempfile.TemporaryDirectory() as tmp:
        llm = extractor_llm(model, args.n_threads, os.path.join(tmp, "responses.sqlite3"))
        for label in LABELS:
            s = strategy(label, weight, llm)
            start = time.perf_counter()
            rows = replay(s, subset, ks=tuple(PROTOCOL["ks"]), k_max=PROTOCOL["k_max"],
                          budgets=tuple(PROTOCOL["budgets"]), label=label)
            seconds = time.perf_counter() - start
            runs[label] = figures(rows, seconds, turns) | {"config_hash": configuration_hash(s, data_sha256, protocol)}
            if label != DEFAULT:
                kept, spent = facts_read_back(s, subset)
                runs[label] |= {"llm_calls": spent["calls"],
                                "llm_prompt_tokens_per_turn": round(spent["prompt_tokens"] / turns, 1),
                                "llm_completion_tokens_per_turn": round(spent["completion_tokens"] / turns, 1),
                                "llm_format_errors": spent["format_errors"], "extractions_given_up": spent["failures"],
                                "turns_with_facts": sum(1 for v in kept.values() if v)}
                facts[label] = kept
            frames.append(rows)
            print(f"{label}: {json.dumps(runs[label])}", flush=True)
    load.append(os.getloadavg()[0])
    rows = pd.concat(frames, ignore_index=True)
    comparison = {label: paired(rows, label) for label in (RULES, LLM_FACTS)}
    for label, per in comparison.items():
        for m, c in per.items():
            print(f"{m}: {label} - {DEFAULT} = {c['diff']:+.1f} [{c['ci'][0]}, {c['ci'][1]}], p = {c['p_value']}, "
                  f"{c['wins']} wins / {c['ties']} ties / {c['losses']} losses", flush=True)
    ratio = round(runs[LLM_FACTS]["seconds"] / runs[DEFAULT]["seconds"], 1)
    print(f"time of the LLM-facts replay: {ratio}x the default's", flush=True)
    record = {"provenance": provenance, "protocol": protocol, "model": model, "runs": runs, "paired": comparison,
              "time_ratio": ratio, "load_avg_1m": [round(x, 2) for x in load],
              "facts": facts[LLM_FACTS],
              "rows": {label: [{k: (None if pd.isna(v) else v) for k, v in r.items()}
                               for r in rows[rows["strategy"] == label][KEPT].to_dict("records")]
                       for label in LABELS}}
    if args.record:
        _common.write_record(args.record, record)
    return 0


if __name__ == "__main__":
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    raise SystemExit(main())
