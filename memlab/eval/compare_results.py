"""``memlab compare``: results files in, a paired and dialogue-clustered comparison out.

Every file is a results table (``memlab eval --output``, a sweep's ``results.parquet``).
Strategies are the values of its ``strategy`` column; when one label appears in several
files, each is prefixed with its file name (``runA:bm25``). Two strategies (two files of
one strategy each, or ``a``/``b`` labels) give one paired comparison
(``memlab.eval.compare.compare_pair``); more give every pair with Holm-adjusted p-values.
Results of different datasets (``dataset_hash``) or of different probes are refused:
a paired comparison needs both strategies to answer the same questions. So is a metric
that one file lacks (``recall@256tok`` where only one side ran with ``--budget 256``), a
probe that one strategy scored and the other did not (NaN on one side only: a failed
probe, or a metric computed for one run only), and a metric no probe has on both sides.
Probes unscored on both sides (no gold evidence) are left out of the pairs, as always.
"""

from __future__ import annotations

import difflib
import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from ..base import MemlabError
from .compare import KEYS, compare_pair, pairwise, to_markdown
from .metrics import metric_columns, nan_reason, parse_column
from .metrics.registry import close_metric_columns
from .results import load_results


def load_labelled(paths: Sequence[str], metric: str | None = None) -> pd.DataFrame:
    """The files' rows stacked, with labels made unique across files (see the module docstring).

    With ``metric``, every file must have that column (else one MemlabError naming the file).
    """
    frames = []
    for path in paths:
        frame = load_results(str(path))
        for col in ("strategy", *KEYS):
            if col not in frame.columns:
                raise MemlabError(f"{path}: not a results table (no column {col!r})")
        if metric is not None and len(paths) > 1:
            _check_metric(frame, metric, where=f"{path}")
        frames.append(frame.assign(_file=Path(path).stem))
    labels = [set(f["strategy"].astype(str)) for f in frames]
    shared = set.union(*[a & b for i, a in enumerate(labels) for b in labels[i + 1:]]) if len(frames) > 1 else set()
    for frame in frames:
        if shared:
            frame["strategy"] = [f"{f}:{s}" if s in shared else s
                                 for f, s in zip(frame["_file"], frame["strategy"].astype(str))]
    combined = pd.concat(frames, ignore_index=True)
    if "dataset_hash" in combined.columns:
        hashes = combined.groupby("_file", sort=False)["dataset_hash"].unique()
        found = sorted({str(h) for hs in hashes for h in hs})
        if len(found) > 1:
            raise MemlabError(f"memlab compare: the results come from different datasets "
                              f"({', '.join(h[:12] for h in found)}); compare runs on one dataset")
    return combined.drop(columns="_file")


def check_same_probes(df: pd.DataFrame, names: Sequence[str]) -> None:
    keysets = {n: set(map(tuple, df.loc[df["strategy"] == n, list(KEYS)].astype(str).to_numpy())) for n in names}
    first = names[0]
    for other in names[1:]:
        only_a, only_b = keysets[first] - keysets[other], keysets[other] - keysets[first]
        if only_a or only_b:
            raise MemlabError(f"memlab compare: {first!r} and {other!r} were not run on the same probes "
                              f"({len(only_a)} only in {first!r}, {len(only_b)} only in {other!r})")


def _check_metric(df: pd.DataFrame, metric: str, where: str = "the results") -> None:
    if metric in df.columns:
        return
    known = metric_columns(df)
    close = close_metric_columns(metric, known)
    hint = f" Did you mean {close[0]!r}?" if close else f" Metrics: {', '.join(known)}"
    parsed = parse_column(metric)
    if parsed is not None and parsed.budget is not None:
        hint = f": it was run without --budget {parsed.budget}"
    else:
        hint = "." + hint
    raise MemlabError(f"memlab compare: no metric {metric!r} in {where}{hint}")


def check_paired_values(df: pd.DataFrame, names: Sequence[str], metric: str) -> None:
    """Refuse a comparison with a value missing on one side of a pair, or with no pair at all.

    For every probe (``KEYS``), either every strategy in ``names`` has a value of ``metric``
    or none has (an unscored probe); else one MemlabError says which strategy lacks how many
    values, the first such probe, and why when the rows tell (``error``: a failed probe).
    """
    keys = list(KEYS)
    part = df[df["strategy"].astype(str).isin(names)]
    values = pd.to_numeric(part[metric], errors="coerce")
    present = part.assign(_has=values.notna().to_numpy())
    table = present.pivot_table(index=keys, columns="strategy", values="_has", aggfunc="max")
    table = table.reindex(columns=list(names)).fillna(False).astype(bool)
    some = table.any(axis=1)
    for name in names:
        lacking = table.index[some & ~table[name]]
        if len(lacking):
            first = dict(zip(keys, lacking[0] if isinstance(lacking[0], tuple) else (lacking[0],)))
            rows = present[(present["strategy"].astype(str) == name)
                           & (present[keys[0]].astype(str) == str(first[keys[0]]))
                           & (present[keys[1]].astype(str) == str(first[keys[1]]))]
            why = ""
            if "error" in rows.columns and rows["error"].notna().any():
                why = f" (its probe failed: {str(rows['error'].dropna().iloc[0]).splitlines()[0]})"
            other = next(n for n in names if n != name)
            raise MemlabError(f"memlab compare: {metric} is NaN for {name!r} on {len(lacking)} probe(s) that "
                              f"{other!r} scored, first dialogue {first[keys[0]]!r}, probe {first[keys[1]]!r}"
                              f"{why}; a paired comparison needs a value on both sides")
    if not some.any():
        raise MemlabError(f"memlab compare: no probe has a value of {metric} ({nan_reason(metric)}); "
                          f"nothing to compare")


def run_compare(paths: Sequence[str], metric: str, a: str | None = None, b: str | None = None,
                n_resamples: int = 10_000, seed: int = 0, as_json: bool = False, show: int = 0,
                dataset: str | None = None) -> str:
    """What ``memlab compare`` prints: one JSON object, or readable text.

    ``show`` > 0 (two strategies): then the ``show`` probes where A beats B most and the
    ``show`` where B beats A most (``shown_probes``); ``dataset`` gives their turns' text.
    """
    if (a is None) != (b is None):
        raise MemlabError("memlab compare: give both --a and --b, or neither")
    df = load_labelled(paths, metric)
    _check_metric(df, metric)
    present = sorted(df["strategy"].astype(str).unique())
    if a is not None:
        for name in (a, b):
            if name not in present:
                close = difflib.get_close_matches(name, present, n=1)
                hint = f" Did you mean {close[0]!r}?" if close else f" Labels: {', '.join(present)}"
                raise MemlabError(f"memlab compare: no strategy {name!r} in the results.{hint}")
        names = [a, b]
    else:
        # file order, then label order within a file
        names = list(dict.fromkeys(df["strategy"].astype(str)))
    if len(names) < 2:
        raise MemlabError(f"memlab compare: need two strategies, the results hold {len(names)} ({names[0]!r}); "
                          f"give a second results file")
    check_same_probes(df, names)
    check_paired_values(df, names, metric)
    if len(names) == 2:
        r = compare_pair(df, names[0], names[1], metric, n_resamples=n_resamples, seed=seed)
        out = {"metric": metric, "a": r.a, "b": r.b, "mean_a": r.mean_a, "mean_b": r.mean_b, "diff": r.diff,
               "ci": [r.ci_low, r.ci_high], "p_value": r.p_value, "n_probes": r.n_probes,
               "n_dialogues": r.n_dialogues, "wins": r.wins, "ties": r.ties, "losses": r.losses}
        shown = shown_probes(df, names[0], names[1], metric, show, dataset) if show else None
        if as_json:
            if shown is not None:
                out["shown"] = shown[0]
            return json.dumps(_clean(out))
        return (f"{metric}: {r.a} {r.mean_a:.4f} vs {r.b} {r.mean_b:.4f}; diff {r.diff:+.4f} "
                f"(95% CI {r.ci_low:+.4f} to {r.ci_high:+.4f}, p = {r.p_value:.4g}; paired over "
                f"{r.n_probes} probes, clustered by {r.n_dialogues} dialogues; "
                f"{r.wins} wins / {r.ties} ties / {r.losses} losses)") + (f"\n\n{shown[1]}" if shown else "")
    if show:
        raise MemlabError(f"memlab compare: --show needs two strategies, the results hold {len(names)}; "
                          f"pick two with --a and --b")
    table = pairwise(df, metric, names, n_resamples=n_resamples, seed=seed)
    if as_json:
        pairs = [{**{k: row[k] for k in ("a", "b", "mean_a", "mean_b", "diff")}, "ci": [row["ci_low"], row["ci_high"]],
                  **{k: row[k] for k in ("p_value", "p_holm", "n_probes", "n_dialogues")}}
                 for row in table.to_dict("records")]
        return json.dumps(_clean({"metric": metric, "pairs": pairs}))
    return (f"{metric}: every pair, paired by probe, clustered by dialogue; p_holm corrects for "
            f"{len(table)} comparisons\n" + to_markdown(table.drop(columns=["metric"])))


def shown_probes(df: pd.DataFrame, a: str, b: str, metric: str, n: int,
                 dataset: str | None = None) -> tuple[dict[str, Any], str]:
    """The ``n`` probes where ``a`` beats ``b`` most on ``metric`` and the ``n`` where ``b``
    beats ``a`` most (``memlab.eval.probe_table``, hits cut as the metric cuts them), as JSON
    (``{"a_better": [...], "b_better": [...]}``) and as text."""
    from .diagnosis import cutoff_of
    from .probe_table import inspect_probes

    k, budget = cutoff_of(metric)
    table = inspect_probes(df, dataset, a=a, b=b, show="differ", metric=metric, n=n, k=k, budget=budget)
    records = table.records()
    as_json = {"a_better": [p for p in records if p["diff"] > 0], "b_better": [p for p in records if p["diff"] < 0]}
    head = (f"Largest differences: {len(as_json['a_better'])} probe(s) where {a} beats {b} most, then "
            f"{len(as_json['b_better'])} where {b} beats {a} most (* marks a gold hit"
            + ("" if dataset else "; --dataset FILE adds the turns' text") + "):")
    return as_json, f"{head}\n\n{table.to_text()}"


def _clean(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_clean(v) for v in value]
    if hasattr(value, "item"):
        value = value.item()
    if isinstance(value, float) and math.isnan(value):
        return None
    return value


__all__ = ["check_paired_values", "check_same_probes", "load_labelled", "run_compare", "shown_probes"]
