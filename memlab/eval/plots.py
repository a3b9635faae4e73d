"""Plots of per-probe results (matplotlib; no pyplot, so any backend -- Agg included -- works).

Every function takes a per-probe DataFrame (rows from the replay engine with metric
columns from ``compute_metrics``) and returns a ``matplotlib.figure.Figure`` (drawn on
``ax`` when one is given). Means skip NaN (unscored probes). Intervals are ``mean_ci``:
by default a seeded percentile bootstrap that resamples dialogues (``cluster``, when the
frame has that column; ``memlab.eval.stats``), or the normal approximation
mean +/- z * sd / sqrt(n).

Conventions: metrics bounded in [0, 1] (recall, hit rate, ...) are drawn on a y axis from
0 to 1; numeric legend entries are sorted as numbers; up to 20 lines or bar groups each get a
colour of their own (``PALETTE``) and a marker, and dash styles vary too, so two identical
lines stay visible; legends sit outside the axes, and points are named in the legend, never
by labels that could overlap. Reference strategies (``BOUNDS``: ``oracle``,
``full_context``) are drawn in a Pareto plot as grey horizontal reference lines, outside the
Pareto front they would otherwise dominate.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from statistics import NormalDist

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from ..base import MemlabError
# BOUNDS: strategies that bound the others, drawn as reference lines, never on the Pareto front
from .headline import BOUNDS
from .compare import bootstrap_ci
from .metrics import is_bounded

CLUSTER = "dialogue_id"
#: 20 colours, pairwise far apart (matplotlib's tab10, then ten darker or more saturated ones).
PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22",
           "#17becf", "#000080", "#800000", "#00a86b", "#ff00ff", "#000000", "#808000", "#4b0082", "#ffd700",
           "#7fff00", "#f4a460")
_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*", "<", ">", "h", "p", "d", "8", "H", "1", "2", "3", "4", "+")
_DASHES = ("-", "--", "-.", ":")
_BOUND_DASHES = ("--", ":", "-.", (0, (5, 1, 1, 1)))


def mean_ci(values: Sequence[float], confidence: float = 0.95, method: str = "bootstrap",
            n_resamples: int = 1000, seed: int = 0,
            clusters: Sequence[object] | None = None) -> tuple[float, float, float]:
    """(mean, low, high) of the non-NaN ``values``; all NaN when there are none.

    ``method="normal"``: mean -/+ z_{(1+confidence)/2} * sd(ddof=1) / sqrt(n) (zero width for n=1).
    ``method="bootstrap"``: percentile bootstrap of the mean (``compare.bootstrap_ci``),
    resampling ``clusters`` (e.g. dialogue ids, one per value) when given, else values.
    """
    v = np.asarray(values, dtype=float)
    keep = ~np.isnan(v)
    labels = None if clusters is None else np.asarray(list(clusters), dtype=object)[keep]
    v = v[keep]
    if v.size == 0:
        return (math.nan, math.nan, math.nan)
    mean = float(v.mean())
    if method == "normal":
        half = 0.0 if v.size < 2 else NormalDist().inv_cdf((1 + confidence) / 2) * float(v.std(ddof=1)) / math.sqrt(v.size)
        return (mean, mean - half, mean + half)
    if method == "bootstrap":
        low, high = bootstrap_ci(v, n_resamples=n_resamples, confidence=confidence, seed=seed,
                                 clusters=None if labels is None else labels.tolist())
        return (mean, low, high)
    raise MemlabError(f"method must be 'bootstrap' or 'normal', got {method!r}")


def _part_ci(part: pd.DataFrame, metric: str, confidence: float, method: str, seed: int,
             cluster: str | None) -> tuple[float, float, float]:
    clusters = part[cluster].astype(str).tolist() if cluster and cluster in part.columns else None
    return mean_ci(part[metric].to_numpy(dtype=float), confidence, method, seed=seed, clusters=clusters)


def _sort_key(value: object) -> tuple[int, float, str]:
    """Numbers (also numeric strings) by value, before everything else by text."""
    try:
        return (0, float(value), "")  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return (1, 0.0, str(value))


def color(n: int) -> str:
    """The n-th colour of ``PALETTE`` (distinct for n < 20, then repeating)."""
    return PALETTE[n % len(PALETTE)]


def _style(n: int) -> dict[str, object]:
    """Line n's colour, marker and dash: colour and marker are distinct for each of the first
    20 lines, and no two of the first 80 share all three."""
    return {"marker": _MARKERS[n % len(_MARKERS)], "linestyle": _DASHES[(n // len(PALETTE) + n) % len(_DASHES)],
            "color": color(n), "markersize": 5, "linewidth": 1.5}


def _is_reference(name: str, references: Sequence[str]) -> bool:
    return name in set(references)


def _reference_line(ax: Axes, n: int, name: str, x: float, y: float, what: str) -> None:
    """A grey horizontal line at y, named in the legend with the cost it comes at."""
    ax.axhline(y, color="0.45", linestyle=_BOUND_DASHES[n % len(_BOUND_DASHES)], linewidth=1.2,
               zorder=1, label=f"{name} (ref.: {y:.3f} at {x:.0f} {what})")


def _y_axis(ax: Axes, *metrics: str) -> None:
    if metrics and all(is_bounded(m) for m in metrics):  # the registry says which lie in [0, 1]
        ax.set_ylim(0.0, 1.02)
    else:
        low, high = ax.get_ylim()
        if low > 0:
            ax.set_ylim(0.0, high)


def _legend(ax: Axes, title: str | None) -> None:
    if ax.get_legend_handles_labels()[0]:
        ax.legend(title=title, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0, fontsize=8,
                  title_fontsize=8, frameon=False)


def pareto_front(points: Sequence[tuple[float, float]]) -> list[int]:
    """Indices of the points no other point dominates, cheapest first.

    A point is (cost x, quality y); p dominates q when p.x <= q.x and p.y >= q.y with one
    strict. Identical points are all kept. Order: x ascending (then y descending, index).
    """
    pts = [(float(x), float(y)) for x, y in points]
    front = []
    for i, (x, y) in enumerate(pts):
        dominated = any(ox <= x and oy >= y and (ox < x or oy > y) for j, (ox, oy) in enumerate(pts) if j != i)
        if not dominated and not (math.isnan(x) or math.isnan(y)):
            front.append(i)
    return sorted(front, key=lambda i: (pts[i][0], -pts[i][1], i))


def _figure(ax: Axes | None, figsize: tuple[float, float] = (6.4, 4.0)) -> tuple[Figure, Axes]:
    if ax is not None:
        return ax.figure, ax  # type: ignore[return-value]
    fig = Figure(figsize=figsize, layout="constrained")
    return fig, fig.add_subplot()


def _need(df: pd.DataFrame, *cols: str | None) -> None:
    import difflib

    for c in cols:
        if c is not None and c not in df.columns:
            close = difflib.get_close_matches(str(c), [str(x) for x in df.columns], n=1)
            hint = f"did you mean {close[0]!r}?" if close else f"columns: {', '.join(map(str, df.columns))}"
            raise MemlabError(f"no column {c!r}; {hint}")


def _groups(df: pd.DataFrame, hue: str | Sequence[str] | None) -> list[tuple[str | None, pd.DataFrame]]:
    """(label, rows) per value of ``hue`` (a column or several), numbers sorted as numbers."""
    if hue is None:
        return [(None, df)]
    cols = [hue] if isinstance(hue, str) else list(hue)
    if not cols:
        return [(None, df)]
    groups = []
    for key, part in df.groupby(cols, sort=False, dropna=False):
        key = key if isinstance(key, tuple) else (key,)
        label = str(key[0]) if len(cols) == 1 else ", ".join(
            str(v) if n == 0 else f"{c}={v}" for n, (c, v) in enumerate(zip(cols, key)))
        groups.append((tuple(_sort_key(v) for v in key), label, part))
    return [(label, part) for _, label, part in sorted(groups, key=lambda g: g[0])]


def plot_metric_vs_param(df: pd.DataFrame, param: str, metric: str, hue: str | None = None,
                         split: Sequence[str] | str | None = None, confidence: float = 0.95,
                         method: str = "bootstrap", seed: int = 0, cluster: str | None = CLUSTER,
                         config: str | None = "strategy", ax: Axes | None = None) -> Figure:
    """Mean ``metric`` against ``param`` with a CI band, one line per ``hue`` value and per
    combination of the ``split`` columns (the other grid parameters of a sweep).

    Numeric ``param`` values are placed on a numeric axis; others at positions 0..n-1
    labelled with the values (sorted). A point never pools configurations silently: if
    the rows of one line at one ``param`` value hold more than one ``config`` value (e.g.
    two settings of an unlisted grid parameter), it raises and names them.
    """
    splits = [split] if isinstance(split, str) else list(split or [])
    _need(df, param, metric, hue, *splits)
    fig, ax = _figure(ax)
    values = sorted(df[param].dropna().unique(), key=_sort_key)
    numeric = all(isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool) for v in values)
    position = {v: (float(v) if numeric else float(i)) for i, v in enumerate(values)}
    line_cols = ([hue] if hue is not None else []) + splits
    for n, (label, part) in enumerate(_groups(df, line_cols or None)):
        xs, means, lows, highs = [], [], [], []
        for v in values:
            sel = part[part[param] == v]
            if config is not None and config in sel.columns and sel[config].nunique() > 1:
                names = sorted(sel[config].astype(str).unique())
                raise MemlabError(f"metric_vs_param would pool {len(names)} configurations at {param}={v} "
                                  f"({', '.join(names[:3])}{', ...' if len(names) > 3 else ''}); "
                                  f"name the parameters that differ in split=[...]")
            if sel[metric].notna().sum() == 0:
                continue
            m, lo, hi = _part_ci(sel, metric, confidence, method, seed, cluster)
            xs.append(position[v])
            means.append(m)
            lows.append(lo)
            highs.append(hi)
        line, = ax.plot(xs, means, label=label if label is not None else metric, **_style(n))  # type: ignore[arg-type]
        ax.fill_between(xs, lows, highs, alpha=0.15, color=line.get_color(), linewidth=0)
    if not numeric:
        ax.set_xticks([position[v] for v in values], [str(v) for v in values])
    ax.set_xlabel(param)
    ax.set_ylabel(metric)
    _y_axis(ax, metric)
    ax.set_title(f"{metric} vs {param} (mean, {confidence:.0%} CI)")
    if line_cols:
        _legend(ax, ", ".join(line_cols))
    return fig


def budget_columns(df: pd.DataFrame, metric: str = "recall") -> list[int]:
    """The token budgets B for which ``df`` has ``<metric>@Btok`` and ``tokens@Btok``, ascending."""
    pattern = re.compile(rf"^{re.escape(metric)}@(\d+)tok$")
    return sorted(int(m.group(1)) for c in df.columns if isinstance(c, str) and (m := pattern.match(c))
                  and f"tokens@{m.group(1)}tok" in df.columns)


def plot_pareto(df: pd.DataFrame, x: str | None = None, y: str | None = None,
                label: str | Sequence[str] = "strategy", metric: str = "recall",
                references: Sequence[str] = BOUNDS, ax: Axes | None = None) -> Figure:
    """Quality against cost per configuration, and the Pareto front (cheapest for its quality).

    Default, when the rows have token-matched columns: for each configuration (``label``),
    one line through its points (mean ``tokens@Btok``, mean ``<metric>@Btok``) at every
    budget B, so strategies whose hits stand for different amounts of text meet at equal
    tokens. With ``x`` and ``y`` (or without budget columns: ``context_tokens`` and
    ``recall@5``), one point per configuration, each with its own colour and marker, named in
    the legend. The front is a step line through the points no other point dominates
    (``pareto_front``). A configuration named in ``references`` is drawn as a grey
    horizontal line at its quality (at the largest budget), named with its cost, and is not
    part of the front.
    """
    labels = [label] if isinstance(label, str) else list(label)
    budgets = budget_columns(df, metric) if x is None and y is None else []
    fig, ax = _figure(ax, figsize=(8.5, 4.8))  # room for the legend beside the axes
    if budgets:
        _need(df, *labels)
        cols = [c for b in budgets for c in (f"tokens@{b}tok", f"{metric}@{b}tok")]
        means = df.groupby(labels, sort=False, dropna=False)[cols].mean().reset_index()
        means = means.iloc[sorted(range(len(means)), key=lambda i: tuple(_sort_key(means.iloc[i][c]) for c in labels))]
        points: list[tuple[float, float]] = []
        n = n_ref = 0
        for _, row in means.iterrows():
            name = " ".join(str(row[c]) for c in labels)
            xs = [float(row[f"tokens@{b}tok"]) for b in budgets]
            ys = [float(row[f"{metric}@{b}tok"]) for b in budgets]
            n += 1  # a reference keeps its place, so a strategy has one colour in every plot
            if _is_reference(name, references):
                _reference_line(ax, n_ref, name, xs[-1], ys[-1], "tokens")
                n_ref += 1
                continue
            points += list(zip(xs, ys))
            line, = ax.plot(xs, ys, label=name, **_style(n - 1))  # type: ignore[arg-type]
            part = df.loc[(df[labels].astype(str) == pd.Series({c: str(row[c]) for c in labels})).all(axis=1)]
            bounds = [_part_ci(part, f"{metric}@{b}tok", 0.95, "bootstrap", 0, CLUSTER)[1:] for b in budgets]
            err = np.clip([[y - lo for y, (lo, _) in zip(ys, bounds)], [hi - y for y, (_, hi) in zip(ys, bounds)]],
                          0.0, None)  # a bound a rounding error past the mean is no bar
            ax.errorbar(xs, ys, yerr=np.nan_to_num(err), fmt="none", ecolor=line.get_color(), elinewidth=0.8,
                        capsize=2, alpha=0.7)
        front = pareto_front(points)
        ax.plot([points[i][0] for i in front], [points[i][1] for i in front], drawstyle="steps-post",
                color="0.3", linewidth=4, alpha=0.25, zorder=1, label="Pareto front")
        ax.set_xlabel("tokens used (mean tokens@Btok; budgets " + ", ".join(map(str, budgets)) + ")")
        ax.set_ylabel(f"{metric}@Btok")
        ax.set_title(f"{metric} against tokens, at equal token budgets (95% CI)")
        _y_axis(ax, f"{metric}@{budgets[0]}tok")
        ax.set_xlim(left=0)
        _legend(ax, " ".join(labels))
        return fig
    x = x or "context_tokens"
    y = y or "recall@5"
    _need(df, x, y, *labels)
    means = df.groupby(labels, sort=False, dropna=False)[[x, y]].mean().reset_index()
    means = means.iloc[sorted(range(len(means)), key=lambda i: tuple(_sort_key(means.iloc[i][c]) for c in labels))]
    points = []
    n = n_ref = 0
    for _, row in means.iterrows():
        name = " ".join(str(row[c]) for c in labels)
        px, py = float(row[x]), float(row[y])
        n += 1
        if _is_reference(name, references):
            _reference_line(ax, n_ref, name, px, py, x)
            n_ref += 1
            continue
        points.append((px, py))
        style = _style(n - 1)
        ax.scatter([px], [py], color=style["color"], marker=style["marker"], s=40, zorder=3, label=name)
    front = pareto_front(points)
    fx = [points[i][0] for i in front]
    fy = [points[i][1] for i in front]
    ax.plot(fx, fy, drawstyle="steps-post", color="0.3", linewidth=4, alpha=0.25, zorder=1, label="Pareto front")
    ax.set_xlabel(x)
    ax.set_ylabel(y)
    _y_axis(ax, y)
    ax.set_title(f"{y} vs {x}")
    _legend(ax, None)
    return fig


def plot_by_category(df: pd.DataFrame, metric: str, hue: str | None = "strategy",
                     category_col: str = "category", confidence: float = 0.95, method: str = "bootstrap",
                     seed: int = 0, cluster: str | None = CLUSTER, ax: Axes | None = None) -> Figure:
    """Grouped bars: mean ``metric`` per category (x) and ``hue`` value, with CI error bars.

    The figure stays a readable size (at most 12 x 4.5 inches), the legend sits beside the
    axes, category labels are slanted, and a category where a ``hue`` value has no scored
    probe is marked "n/a" (no bar) -- distinct from a mean of 0, which is drawn as a bar
    outline on the axis and labelled "0". Categories with no scored probe at all are left
    out and named below the axes.
    """
    _need(df, metric, category_col, hue)
    frame = df.assign(**{category_col: df[category_col].fillna("(none)").astype(str)})
    scored = frame.groupby(category_col)[metric].apply(lambda v: v.notna().any())
    categories = sorted(c for c in frame[category_col].unique() if scored[c])
    unscored = sorted(c for c in frame[category_col].unique() if not scored[c])
    groups = _groups(frame, hue)
    width_in = min(12.0, max(6.4, 0.35 * len(categories) * max(1, len(groups)) + 2.5))
    fig, ax = _figure(ax, figsize=(width_in, 4.5))
    width = 0.8 / max(1, len(groups))
    for g, (name, part) in enumerate(groups):
        stats = [_part_ci(part[part[category_col] == c], metric, confidence, method, seed, cluster)
                 for c in categories]
        heights = np.array([s[0] for s in stats])
        missing = np.isnan(heights)
        err = np.array([[s[0] - s[1] for s in stats], [s[2] - s[0] for s in stats]])
        err[:, missing] = 0.0
        # a bootstrap bound can sit a rounding error beyond the mean (resampled sums add in
        # another order) or, with unequal clusters, past it; matplotlib refuses negative errors
        err = np.maximum(err, 0.0)
        xs = np.arange(len(categories)) - 0.4 + width * (g + 0.5)
        bars = ax.bar(xs, np.where(missing, 0.0, heights), width=width, yerr=err, capsize=2,
                      label=name if name is not None else metric, color=color(g), edgecolor=color(g),
                      error_kw={"elinewidth": 0.8})
        for bar, x_, h, miss in zip(bars, xs, heights, missing):
            if miss:
                bar.set_visible(False)
                ax.text(x_, 0.01, "n/a", ha="center", va="bottom", fontsize=6, color="0.4", rotation=90)
            elif h == 0:
                bar.set_fill(False)
                ax.text(x_, 0.01, "0", ha="center", va="bottom", fontsize=7, color=color(g))
    ax.set_xticks(np.arange(len(categories)), categories, rotation=30, ha="right")
    ax.set_xlabel(category_col)
    ax.set_ylabel(metric)
    _y_axis(ax, metric)
    ax.set_title(f"{metric} by {category_col} (mean, {confidence:.0%} CI)")
    if unscored:  # a category nobody is scored on (no gold) is left out, and said so
        ax.annotate(f"not scored: {', '.join(unscored)}", (0.0, -0.32), xycoords="axes fraction", fontsize=7,
                    color="0.4")
    if hue is not None:
        _legend(ax, hue)
    return fig


def metric_ks(df: pd.DataFrame, metric: str) -> list[int]:
    """The k values for which ``df`` has a ``<metric>@k`` column, ascending."""
    pattern = re.compile(rf"^{re.escape(metric)}@(\d+)$")
    return sorted(int(m.group(1)) for c in df.columns if isinstance(c, str) and (m := pattern.match(c)))


def plot_metric_at_k(df: pd.DataFrame, metric: str = "recall", ks: Sequence[int] | None = None,
                     hue: str | None = "strategy", confidence: float = 0.95, method: str = "bootstrap",
                     seed: int = 0, cluster: str | None = CLUSTER, ax: Axes | None = None) -> Figure:
    """Mean ``<metric>@k`` against k with a CI band, one line per ``hue`` value (ks default:
    every column present)."""
    available = metric_ks(df, metric)
    ks = available if ks is None else [int(k) for k in ks]
    missing = [k for k in ks if k not in available]
    if not ks or missing:
        raise MemlabError(f"no column(s) {[f'{metric}@{k}' for k in missing] or metric + '@k'}; "
                          f"available k for {metric!r}: {available}")
    _need(df, hue)
    fig, ax = _figure(ax)
    for n, (name, part) in enumerate(_groups(df, hue)):
        stats = [_part_ci(part, f"{metric}@{k}", confidence, method, seed, cluster) for k in ks]
        line, = ax.plot(ks, [s[0] for s in stats], label=name if name is not None else metric,
                        **_style(n))  # type: ignore[arg-type]
        ax.fill_between(ks, [s[1] for s in stats], [s[2] for s in stats], alpha=0.12, color=line.get_color(),
                        linewidth=0)
    ax.set_xlabel("k")
    ax.set_ylabel(f"{metric}@k")
    ax.set_xticks(ks)
    _y_axis(ax, f"{metric}@{ks[0]}")
    ax.set_title(f"{metric}@k (mean, {confidence:.0%} CI)")
    if hue is not None:
        _legend(ax, hue)
    return fig


__all__ = ["PALETTE", "BOUNDS", "budget_columns", "color", "mean_ci", "metric_ks", "pareto_front", "plot_by_category", "plot_metric_at_k",
                      "plot_metric_vs_param", "plot_pareto"]
