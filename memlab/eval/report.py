"""The result record of one evaluation run (``eval_report``): what ``memlab eval --json`` prints.

``eval_report(rows, dataset, strategy=..., k=..., budgets=...)`` turns the per-probe rows of a
replay (``memlab.eval.streaming.replay_any`` or ``memlab.eval.replay``) into one JSON-ready dict,
so a notebook gets the same record as the command line. Keys, in order:

- ``strategy``, ``dataset``, ``dataset_hash``, ``n_dialogues``, ``n_probes``, ``n_scored``,
  ``n_failed``, ``llm_format_errors``;
- ``dataset_report``: the loader's report (``summary`` line and ``counts`` per kind);
- the mean of every registered metric at ``k`` and at each budget (registry order), then the
  cost columns, where the rows have them (NaN means as None);
- ``stale_rate`` (mean ``stale_only`` over probes naming stale evidence, None if none) and
  ``n_stale_probes``;
- ``ci``: the 95% cluster-bootstrap interval (dialogues resampled, seed 0) of every mean above;
- with a judge: ``judge_prompt_set`` and ``judge_model``, ``judge_calibration`` (its figures,
  ``memlab.eval.calibration.record``) and ``judge_gate`` (``passed``, ``override``, ``reason``);
- ``params``: the strategy's parameters as the rows record them (``param:`` columns);
- ``seconds``: the replay's wall time, rounded to ms;
- ``provenance``: ``memlab.eval.provenance.run_provenance`` of this process over ``data``.

The verb computes and returns; it prints nothing and writes nothing. ``report_text(result,
rows, k)`` renders the record as the text ``memlab eval`` prints without ``--json``: the head
line, the dataset report, one line per mean (with its interval; a missing mean with its
reason), the judge's figures, and the per-category table when the rows have categories.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd


def eval_report(rows: pd.DataFrame, dataset: Any, *, strategy: str, k: int = 5, budgets: Sequence[int] = (),
                seconds: float | None = None, judge: Any = None, calibration: dict[str, Any] | None = None,
                refusal: str | None = None, allow_uncalibrated_judge: bool = False,
                data: Sequence[str] | None = None) -> dict[str, Any]:
    """The result record of one run (module docstring).

    ``rows``: the replay's per-probe rows (one strategy label); ``dataset``: the replayed
    ``Dataset`` or ``StreamedDataset`` (after its pass); ``strategy``: the run's label; ``k`` and
    ``budgets``: the cut-off and token budgets the means are reported at; ``seconds``: the
    replay's wall time. A judged run passes its ``judge`` (``LLMJudge``), its ``calibration``
    (None when it could not run), the gate's ``refusal`` line (None when it passed) and whether
    ``allow_uncalibrated_judge`` let it in anyway. ``data``: the paths the run read, hashed
    into the provenance (default: the dataset's source path)."""
    from .metrics import summarize

    budgets = sorted(set(budgets))
    summary = summarize(rows, by=["strategy"], ci=True).iloc[0].to_dict()
    result: dict[str, Any] = {
        "strategy": strategy, "dataset": dataset.name, "dataset_hash": dataset.hash,
        "n_dialogues": len(dataset), "n_probes": int(summary["n_probes"]),
        "n_scored": int(summary["n_scored"]), "n_failed": int(summary.get("n_failed", 0)),
        "llm_format_errors": int(summary.get("llm_format_errors", 0)),
    }
    result["dataset_report"] = {"summary": dataset.report.summary(), "counts": dataset.report.counts()}
    for name in metric_names(k, budgets):
        if name in summary:
            result[name] = _num(summary[name])
    # stale_rate: mean stale_only over probes naming stale evidence (memlab.eval.lifecycle); null if none
    result["stale_rate"] = _num(summary.get("stale_only", float("nan")))
    result["n_stale_probes"] = int(rows["stale_only"].notna().sum()) if "stale_only" in rows else 0
    # 95% cluster-bootstrap interval (dialogues resampled, seed 0) of every mean reported
    result["ci"] = {name: [_num(summary[f"{name}_ci_low"]), _num(summary[f"{name}_ci_high"])]
                    for name in list(result) if f"{name}_ci_low" in summary}
    if judge is not None:  # a judge's accuracy is read with the words and the model that made it
        result.update(judge.identity())
        from .calibration import record

        # the figures the judge earned its place with, and whether it was let in by the override
        result["judge_calibration"] = record(calibration) if calibration is not None else None
        result["judge_gate"] = {"passed": calibration is not None and refusal is None,
                                "override": bool(allow_uncalibrated_judge) and (calibration is None or
                                                                                 refusal is not None),
                                "reason": refusal}
    params = {c: v for c, v in rows.iloc[0].items() if str(c).startswith("param:")} if len(rows) else {}
    result["params"] = {c[len("param:"):]: _num(v) for c, v in params.items()}
    result["seconds"] = round(seconds, 3) if seconds is not None else None
    # which run made these figures (commit, command, date, machine, packages, the data's sha256)
    from .provenance import run_provenance

    if data is None:
        data = [dataset.source_path] if getattr(dataset, "source_path", None) else []
    result["provenance"] = run_provenance(data=list(data))
    return result


def metric_names(k: int, budgets: Sequence[int]) -> list[str]:
    """The means ``eval_report`` reports: every registered metric at k and at each budget, in
    registry order (token-matched ones first), then the cost columns. Lifecycle metrics are
    reported as ``stale_rate``."""
    from .metrics import COST_COLUMNS, expand, registered

    metrics = [m for m in registered() if m.view != "lifecycle"]
    return expand(metrics, [k], budgets) + list(COST_COLUMNS)


def report_text(result: dict[str, Any], rows: pd.DataFrame, k: int) -> str:
    """The record of ``eval_report`` as the text ``memlab eval`` prints (module docstring);
    ``rows``: the replay's rows (the first error, the per-category table), ``k``: the run's
    cut-off (the table's columns)."""
    from .metrics import (COST_COLUMNS, is_metric_column, nan_notes, nan_reason, parse_column, report_columns,
                          summarize)

    out = [f"strategy {result['strategy']} on {result['dataset']} "
           f"({result['n_dialogues']} dialogues, {result['n_probes']} probes, {result['n_scored']} scored, "
           f"{result['n_failed']} failed, {result['seconds']} s)"]
    if result["n_failed"]:
        first = rows["error"].dropna().iloc[0]
        out.append(f"  {result['n_failed']} probe(s) failed (metrics NaN, rows keep 'error'); first: {first}")
    out.append(f"dataset report: {result['dataset_report']['summary']}")
    missing = []
    for name, value in result.items():
        if is_metric_column(name) or name in COST_COLUMNS or name.startswith(("llm_", "stale_")):
            if value is None:
                missing.append(name)
                continue
            ci = result["ci"].get(name)
            interval = f"  [{ci[0]:.4f}, {ci[1]:.4f}]" if ci and None not in ci else ""
            out.append(f"  {name:<26} {value:.4f}{interval}" if isinstance(value, float) else f"  {name:<26} {value}")
    if result.get("locomo_f1") is not None:  # the field's disputes turn on the adversarial rule: say it
        from .locomo_score import CATEGORY5_POLICY

        out.append(f"  note: {CATEGORY5_POLICY}")
    if result.get("judge_prompt_set"):
        out.append(f"  judge: {result['judge_prompt_set']} prompts, model {result['judge_model']}")
        cal, gate = result.get("judge_calibration"), result.get("judge_gate") or {}
        if cal:
            out.append(f"  judge calibration: accuracy {cal['accuracy']:.3f} on {cal['n_pairs']} pairs, CORRECT-label "
                       f"rate {cal['label_rate']:.3f}, kappa vs LoCoMo F1>={cal['f1_threshold']} "
                       f"{'n/a' if cal['kappa_f1'] is None else format(cal['kappa_f1'], '.3f')}")
        if gate.get("override"):
            out.append(f"  judge gate OVERRIDDEN (--allow-uncalibrated-judge): {gate.get('reason')}")
    for name in missing:  # a NaN mean is never printed without its reason
        why = "no scored probes" if not result["n_scored"] else f"no probe has a value: {nan_reason(name)}"
        if name == "stale_rate":
            why = "no probe names stale evidence"
        out.append(f"  {name:<26} n/a  ({why})")
    if "category" in rows and rows["category"].notna().any():
        cols = [c for c in report_columns(rows.columns, brief=True) if parse_column(c).k in (None, k)]
        cols += ["context_tokens"] if "context_tokens" in rows else []
        table = summarize(rows, by=["strategy"], metrics=cols, per_category=True).drop(columns=["strategy"])
        out.append("")
        out.append(table.to_string(index=False, float_format=lambda x: f"{x:.4f}", na_rep="n/a"))
        out += [f"note: {note}" for note in nan_notes(table, by=["category"])]
    return "\n".join(out)


def _num(v: Any) -> Any:
    """A JSON-ready scalar: numpy scalars as Python ones, NaN as None."""
    if hasattr(v, "item"):
        v = v.item()
    if isinstance(v, float) and math.isnan(v):
        return None
    return v


__all__ = ["eval_report", "metric_names", "report_text"]
