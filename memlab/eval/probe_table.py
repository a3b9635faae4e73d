"""The probe table: one or two runs' probes joined with the dataset's text (``inspect_probes``),
readable as plain text and as HTML in Jupyter (``ProbeTable``).

``inspect_probes(results, dataset, other)`` joins one or two runs with the dataset: a
``ProbeTable`` whose ``frame`` has one row per probe and run, with the question, its
category, the gold turns' text, the run's top hits (text, score, tokens, gold or not,
kept or cut), the first gold rank, the reason and, with a ``metric``, the run's value and
the difference A - B. It prints as plain text (``str`` / ``to_text``) and renders in
Jupyter as HTML (gold highlighted, long texts folded, one probe per block).

The cut, the reasons and the first gold rank are ``memlab.eval.diagnosis``'s.

Why just over 400 lines: one table with its two renderings (text and HTML), which must
show the same columns.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from ..base import MemlabError
from .compare import KEYS
from .dataset import Dataset
from .diagnosis import as_list, check_cut, diagnose, is_missing, ranked_items, replay_rows
from .question_form import question_type

__all__ = ["SHOW", "ProbeTable", "inspect_probes"]

#: What ``inspect_probes`` lists: every probe, the missed ones, or those two runs score differently.
SHOW = ("all", "misses", "differ")
_CARRIED = ("retrieved_ids", "retrieved_source_ids", "retrieved_scores", "retrieved_tokens", "context_ids")


def _turn_texts(dataset: Dataset | None) -> dict[tuple[str, str], str]:
    if dataset is None:
        return {}
    return {(d.id, t.id): f"{t.speaker}: {t.text}" for d in dataset.dialogues for t in d.turns()}


def _probes(dataset: Dataset | None) -> dict[tuple[str, str], Any]:
    if dataset is None:
        return {}
    return {(d.id, p.id): p for d in dataset.dialogues for p in d.probes}


def _dataset(dataset: Any) -> Dataset | None:
    if dataset is None or isinstance(dataset, Dataset):
        return dataset
    if isinstance(dataset, (str, Path)):
        from .dataset_files import load_any

        return load_any(dataset)
    raise MemlabError(f"dataset must be a Dataset, a dataset file or None, got {type(dataset).__name__}")


def _runs(results: Any, other: Any, a: str | None, b: str | None) -> list[tuple[str, pd.DataFrame]]:
    """(label, rows) of each run: one probe per row."""
    def pick(df: pd.DataFrame, label: str | None, what: str) -> list[tuple[str, pd.DataFrame]]:
        if df.empty:
            raise MemlabError(f"{what}: no rows")
        if "strategy" not in df.columns:
            return [(label or what, df)]
        names = list(dict.fromkeys(df["strategy"].astype(str)))
        wanted = [label] if label is not None else names
        for name in wanted:
            if name not in names:
                raise MemlabError(f"{what}: no strategy {name!r}; strategies: {', '.join(names)}")
        return [(n, df[df["strategy"].astype(str) == n]) for n in wanted]

    first = replay_rows(results)
    if other is None:
        runs = pick(first, a, "results")
        if b is not None:
            runs += pick(first, b, "results")
        if a is None and b is None and len(runs) > 2:
            raise MemlabError(f"results hold {len(runs)} strategies ({', '.join(n for n, _ in runs)}); "
                              f"name one or two with a=, b=")
    else:
        runs = pick(first, a, "results")[:1] + pick(replay_rows(other, "other"), b, "other")[:1]
        if runs[0][0] == runs[1][0]:
            runs = [(f"A:{runs[0][0]}", runs[0][1]), (f"B:{runs[1][0]}", runs[1][1])]
    for name, df in runs:
        dup = df.duplicated(list(KEYS))
        if dup.any():
            key = tuple(df[dup].iloc[0][list(KEYS)])
            raise MemlabError(f"strategy {name!r} has several rows for probe {key}; filter to one "
                              f"configuration first (e.g. one parameter value)")
    return runs


def _hit(rank: int, row: dict[str, Any], items: list[list[str]], gold: set[str], kept: int,
         texts: dict[tuple[str, str], str]) -> dict[str, Any]:
    i = rank - 1
    ids = as_list(row.get("retrieved_ids"))
    scores = as_list(row.get("retrieved_scores"))
    tokens = as_list(row.get("retrieved_tokens"))
    hit_id = str(ids[i]) if i < len(ids) else items[i][0]
    dialogue = str(row["dialogue_id"])
    if (dialogue, hit_id) in texts:
        text = texts[(dialogue, hit_id)]
    elif texts:  # a derived memory (summary, fact): the turns it stands for
        text = " | ".join(texts.get((dialogue, s), f"[{s}]") for s in items[i])
        text = f"[from {', '.join(items[i])}] {text}"
    else:
        text = None
    return {"rank": rank, "id": hit_id, "source_ids": list(items[i]), "text": text,
            "score": float(scores[i]) if i < len(scores) else float("nan"),
            "tokens": int(tokens[i]) if i < len(tokens) else None,
            "gold": bool(gold & set(items[i])), "kept": rank <= kept}


def inspect_probes(results: Any, dataset: Any = None, other: Any = None, *, a: str | None = None,
                   b: str | None = None, show: str = "all", metric: str | None = None, k: int | None = 5,
                   budget: int | None = None, n: int | None = None, max_hits: int = 5) -> ProbeTable:
    """A ``ProbeTable`` of one or two runs' probes, joined with the dataset's text.

    ``results`` (and ``other``): replay rows, a DataFrame or a results file. Without
    ``other``, ``results`` holds one or two strategies (``a`` / ``b`` pick them by label);
    with it, ``a`` picks in ``results`` and ``b`` in ``other``. ``dataset`` (a Dataset, a
    dataset file, or None: ids without text) gives the turns' text; its probes must ask
    what the rows ask.

    ``show``: "all" probes, "misses" (probes with a scored reason other than ``found`` in
    some run), or "differ" (two runs and a ``metric``: probes whose values differ, the
    largest A - B first, then the largest B - A; ties in the order of A's rows). ``n``: at
    most n probes ("differ": n each way). ``k`` / ``budget``: the cut (module docstring).
    ``max_hits``: hits listed per run; the first gold hit is listed too when it ranks lower.
    """
    check_cut(k, budget)
    if show not in SHOW:
        raise MemlabError(f"show must be one of {', '.join(SHOW)}, got {show!r}")
    if n is not None and (isinstance(n, bool) or not isinstance(n, int) or n < 0):
        raise MemlabError(f"n must be a non-negative int or None, got {n!r}")
    if isinstance(max_hits, bool) or not isinstance(max_hits, int) or max_hits < 0:
        raise MemlabError(f"max_hits must be a non-negative int, got {max_hits!r}")
    runs = _runs(results, other, a, b)
    if metric is not None:
        for name, df in runs:
            if metric not in df.columns:
                raise MemlabError(f"no metric {metric!r} in the rows of {name!r}")
    if show == "differ" and (len(runs) != 2 or metric is None):
        raise MemlabError("show='differ' needs two runs and a metric")
    ds = _dataset(dataset)
    texts, probes = _turn_texts(ds), _probes(ds)
    labels = [name for name, _ in runs]
    by_run = [{(str(r["dialogue_id"]), str(r["probe_id"])): r for r in df.to_dict("records")} for _, df in runs]
    order = [key for key in by_run[0] if all(key in other_rows for other_rows in by_run[1:])]
    records: list[dict[str, Any]] = []
    for key in order:
        first = by_run[0][key]
        probe = probes.get(key)
        if ds is not None:
            if probe is None:
                raise MemlabError(f"dataset {ds.name!r} has no probe {key[1]!r} in dialogue {key[0]!r}: "
                                  f"pass the dataset the results were run on")
            if str(probe.query) != str(first.get("query")):
                raise MemlabError(f"dataset {ds.name!r}, dialogue {key[0]!r}, probe {key[1]!r} asks "
                                  f"{probe.query!r}, the results {first.get('query')!r}: pass the dataset "
                                  f"the results were run on")
        gold = [str(g) for g in as_list(first.get("gold"))]
        values = [float(rows[key][metric]) if metric is not None and not is_missing(rows[key][metric])
                  else float("nan") for rows in by_run]
        diff = values[0] - values[1] if len(runs) == 2 and metric is not None else float("nan")
        base = {"dialogue_id": key[0], "probe_id": key[1], "category": first.get("category"),
                "question_type": question_type(first.get("query")), "query": first.get("query"),
                "answer": first.get("answer"), "gold": gold,
                "gold_text": [texts.get((key[0], g)) for g in gold] if texts else [None] * len(gold)}
        for label, rows, value in zip(labels, by_run, values):
            row = rows[key]
            d = diagnose(row, k, budget)
            items = ranked_items(row)
            gold_set = set(gold)
            ranks = list(range(1, min(max_hits, len(items)) + 1))
            if d["first_gold_rank"] is not None and d["first_gold_rank"] > len(ranks):
                ranks.append(d["first_gold_rank"])
            records.append({**base, "strategy": label, "value": value, "diff": diff,
                            "first_gold_rank": d["first_gold_rank"], "depth": d["depth"], "kept": d["kept"],
                            "reason": d["reason"], "cut_by_budget": d["reason"] == "cut_by_budget",
                            "hits": [_hit(r, row, items, gold_set, d["kept"], texts) for r in ranks],
                            **{c: as_list(row.get(c)) if c in row else None for c in _CARRIED}})
    frame = pd.DataFrame(records, columns=_COLUMNS)
    frame = _select(frame, show, n, len(runs))
    frame["first_gold_rank"] = frame["first_gold_rank"].astype("Int64")
    return ProbeTable(frame, labels, metric=metric, k=k, budget=budget, has_text=ds is not None)


_COLUMNS = ["dialogue_id", "probe_id", "category", "question_type", "query", "answer", "gold", "gold_text",
            "strategy", "value", "diff", "first_gold_rank", "depth", "kept", "reason", "cut_by_budget", "hits",
            *_CARRIED]


def _select(frame: pd.DataFrame, show: str, n: int | None, n_runs: int) -> pd.DataFrame:
    """The rows of the probes ``show`` asks for, in block order, with a ``block`` number."""
    keys = list(dict.fromkeys(zip(frame["dialogue_id"], frame["probe_id"])))
    if show == "misses":
        missed = {(dl, p) for dl, p, r in zip(frame["dialogue_id"], frame["probe_id"], frame["reason"])
                  if r is not None and r != "found"}
        keys = [key for key in keys if key in missed]
    elif show == "differ":
        diffs = dict(zip(zip(frame["dialogue_id"], frame["probe_id"]), frame["diff"]))
        better = sorted((key for key in keys if diffs[key] > 0), key=lambda key: -diffs[key])
        worse = sorted((key for key in keys if diffs[key] < 0), key=lambda key: diffs[key])
        keys = (better[:n] + worse[:n]) if n is not None else better + worse
        n = None
    if n is not None:
        keys = keys[:n]
    block = {key: i for i, key in enumerate(keys)}
    frame = frame.assign(block=[block.get(key, -1) for key in zip(frame["dialogue_id"], frame["probe_id"])])
    frame = frame[frame["block"] >= 0].sort_values("block", kind="stable").reset_index(drop=True)
    return frame[["block", *_COLUMNS]]


def _short(text: Any, width: int) -> str:
    s = " ".join(str(text).split())
    return s if len(s) <= width else s[:max(width - 1, 1)] + "…"


def _fmt(v: Any) -> str:
    return "nan" if is_missing(v) else f"{v:.4g}"


def _cut_name(k: int | None, budget: int | None) -> str:
    parts = ([f"k={k}"] if k is not None else []) + ([f"{budget} tokens"] if budget is not None else [])
    return ", ".join(parts) or "whole list"


class ProbeTable:
    """Probes of one or two runs, one row per probe and run (``frame``), readable as text and HTML.

    ``frame`` columns: block (the probe's place in the listing), dialogue_id, probe_id,
    category, question_type, query, answer, gold, gold_text, strategy, value (the
    ``metric``'s value; NaN without one), diff (A - B), first_gold_rank, depth, kept,
    reason, cut_by_budget, hits (dicts: rank, id, source_ids, text, score, tokens, gold,
    kept), and the rows' retrieved_ids, retrieved_source_ids, retrieved_scores,
    retrieved_tokens, context_ids.
    """

    def __init__(self, frame: pd.DataFrame, labels: Sequence[str], metric: str | None = None,
                 k: int | None = 5, budget: int | None = None, has_text: bool = True) -> None:
        self.frame = frame
        self.labels = list(labels)
        self.metric, self.k, self.budget, self.has_text = metric, k, budget, has_text

    def __len__(self) -> int:
        """The number of probes listed."""
        return int(self.frame["block"].nunique())

    def blocks(self) -> list[pd.DataFrame]:
        """The rows of each probe (one per run), in listing order."""
        return [group for _, group in self.frame.groupby("block", sort=True)]

    def records(self) -> list[dict[str, Any]]:
        """One JSON-ready dict per probe: its fields and ``runs`` (label -> value, reason, first
        gold rank, cut, hits)."""
        out = []
        for group in self.blocks():
            rows = group.to_dict("records")
            head = rows[0]
            probe = {c: head[c] for c in ("dialogue_id", "probe_id", "category", "question_type", "query",
                                          "answer", "gold", "gold_text")}
            if self.metric is not None and len(self.labels) == 2:
                probe["diff"] = _json_number(head["diff"])
            probe["runs"] = {r["strategy"]: {
                "value": _json_number(r["value"]) if self.metric is not None else None,
                "reason": r["reason"], "first_gold_rank": None if pd.isna(r["first_gold_rank"])
                else int(r["first_gold_rank"]), "cut_by_budget": bool(r["cut_by_budget"]),
                "hits": [{**h, "score": _json_number(h["score"])} for h in r["hits"]]} for r in rows}
            out.append(probe)
        return out

    # -- plain text --------------------------------------------------------------------------
    def to_text(self, width: int = 100) -> str:
        """The probes as plain text, one block each; texts cut to ``width`` characters."""
        if not len(self):
            return "(no probes)"
        return "\n\n".join(self._block_text(group, width) for group in self.blocks())

    def __str__(self) -> str:
        return self.to_text()

    def __repr__(self) -> str:
        return f"<ProbeTable: {len(self)} probes of {', '.join(self.labels)}; str() or display() to read>"

    def _header(self, head: dict[str, Any]) -> str:
        parts = [f"{head['dialogue_id']} / {head['probe_id']}", str(head["category"]), head["question_type"]]
        if self.metric is not None and len(self.labels) == 2:
            parts.append(f"{self.metric} {self.labels[0]} - {self.labels[1]} = {head['diff']:+.4g}")
        return " · ".join(parts)

    def _run_line(self, r: dict[str, Any]) -> str:
        value = f" {self.metric} {_fmt(r['value'])};" if self.metric is not None else ""
        rank = r["first_gold_rank"]
        if not r["depth"]:
            where = "nothing retrieved"
        else:
            where = "no gold" if pd.isna(rank) else f"first gold at rank {int(rank)}"
            where += f" of {r['depth']} retrieved, {r['kept']} kept ({_cut_name(self.k, self.budget)})"
        reason = r["reason"] if r["reason"] is not None else "unscored"
        return f"{r['strategy']}:{value} {reason}: {where}"

    def _block_text(self, group: pd.DataFrame, width: int) -> str:
        rows = group.to_dict("records")
        head = rows[0]
        lines = [f"== {self._header(head)}", f"Q: {_short(head['query'], width)}"]
        if not is_missing(head["answer"]):
            lines.append(f"A: {_short(head['answer'], width)}")
        for g, text in zip(head["gold"], head["gold_text"]):
            lines.append(f"gold {g}: {_short(text, width)}" if text is not None else f"gold {g}")
        for r in rows:
            lines.append(self._run_line(r))
            previous, cut = 0, False
            for h in r["hits"]:
                for gap, line in _between(previous, h["rank"], r["kept"], cut):
                    lines.append("     ..." if gap else f"     -- cut ({_cut_name(self.k, self.budget)}) --")
                cut = cut or h["rank"] > r["kept"]
                mark = "*" if h["gold"] else " "
                tokens = f"{h['tokens']:>4} tok" if h["tokens"] is not None else "       "
                text = f"  {_short(h['text'], width)}" if h["text"] is not None else ""
                lines.append(f"  {mark}{h['rank']:>3}. {h['id']:<10} {_fmt(h['score']):>8} {tokens}{text}")
                previous = h["rank"]
        return "\n".join(lines)

    # -- HTML (Jupyter) ----------------------------------------------------------------------
    def _repr_html_(self) -> str:
        css = ("<style>.mlpt{font-family:sans-serif;font-size:13px;margin:0 0 14px 0;padding:6px 10px;"
               "border:1px solid #ccc;border-radius:4px}.mlpt table{border-collapse:collapse;margin:4px 0}"
               ".mlpt td,.mlpt th{padding:2px 6px;text-align:left;vertical-align:top}"
               ".mlpt .gold{background:#fff1a8;font-weight:bold}.mlpt .cut td{border-top:2px dashed #c00}"
               ".mlpt .out{color:#888}.mlpt summary{cursor:pointer}</style>")
        if not len(self):
            return css + "<div class='mlpt'>(no probes)</div>"
        return css + "".join(self._block_html(group) for group in self.blocks())

    def _block_html(self, group: pd.DataFrame) -> str:
        esc = html.escape
        rows = group.to_dict("records")
        head = rows[0]
        parts = [f"<div class='mlpt'><b>{esc(self._header(head))}</b>",
                 f"<div><b>Q:</b> {esc(str(head['query']))}</div>"]
        if not is_missing(head["answer"]):
            parts.append(f"<div><b>A:</b> {esc(str(head['answer']))}</div>")
        for g, text in zip(head["gold"], head["gold_text"]):
            parts.append(f"<div class='gold' style='{_STYLES['gold']}'>gold {esc(g)}: {_fold(text)}</div>")
        for r in rows:
            parts.append(f"<div><b>{esc(self._run_line(r))}</b></div><table>"
                         "<tr><th>rank</th><th>id</th><th>score</th><th>tokens</th><th>text</th></tr>")
            previous, cut = 0, False
            for h in r["hits"]:
                classes = ["gold"] if h["gold"] else []
                if not h["kept"]:
                    classes.append("out")
                marks = _between(previous, h["rank"], r["kept"], cut)
                for gap, _ in marks:
                    if gap:
                        parts.append("<tr class='out'><td colspan='5'>…</td></tr>")
                if any(not gap for gap, _ in marks):
                    classes.append("cut")
                cut = cut or h["rank"] > r["kept"]
                star = "★ " if h["gold"] else ""
                style = ";".join(_STYLES[c] for c in classes)  # inline too: viewers that drop <style> keep it
                parts.append(f"<tr class='{' '.join(classes)}' style='{style}'><td>{star}{h['rank']}</td>"
                             f"<td>{esc(h['id'])}</td>"
                             f"<td>{_fmt(h['score'])}</td><td>{'' if h['tokens'] is None else h['tokens']}</td>"
                             f"<td>{_fold(h['text'])}</td></tr>")
                previous = h["rank"]
            parts.append("</table>")
        parts.append("</div>")
        return "".join(parts)


_STYLES = {"gold": "background:#fff1a8;font-weight:bold", "out": "color:#888", "cut": "border-top:2px dashed #c00"}


def _between(previous: int, rank: int, kept: int, cut: bool) -> list[tuple[bool, str]]:
    """What goes between the hit ranked ``previous`` (0: none yet) and the next, ranked
    ``rank``: ``(True, "gap")`` for ranks left out, ``(False, "cut")`` where the cut falls
    (after rank ``kept``), in order."""
    marks: list[tuple[bool, str]] = []
    gap = rank > previous + 1
    if cut or rank <= kept:
        return [(True, "gap")] if gap else []
    if kept > previous:                 # the cut falls inside the ranks left out
        marks.append((True, "gap"))
    marks.append((False, "cut"))
    if gap and kept < rank - 1:
        marks.append((True, "gap"))
    return marks


def _fold(text: Any, width: int = 120) -> str:
    """Escaped text; a long one folded in <details> behind its first ``width`` characters."""
    if text is None:
        return ""
    s = " ".join(str(text).split())
    if len(s) <= width:
        return html.escape(s)
    return f"<details><summary>{html.escape(s[:width])}…</summary>{html.escape(s)}</details>"


def _json_number(v: Any) -> Any:
    return None if is_missing(v) else float(v)
