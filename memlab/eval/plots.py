"""Plots of per-probe results (matplotlib; no pyplot, so any backend -- Agg included -- works).

Every function takes a per-probe DataFrame (rows from the replay engine with metric
columns from ``compute_metrics``) and returns a ``matplotlib.figure.Figure`` (drawn on
``ax`` when one is given). Means skip NaN (unscored probes). Intervals are
``mean_ci``: a seeded percentile bootstrap of the mean by default, or the normal
approximation mean +/- z * sd / sqrt(n).
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
from .compare import bootstrap_ci


def mean_ci(values: Sequence[float], confidence: float = 0.95, method: str = "bootstrap",
            n_resamples: int = 1000, seed: int = 0) -> tuple[float, float, float]:
    """(mean, low, high) of the non-NaN ``values``; all NaN when there are none.

    ``method="normal"``: mean -/+ z_{(1+confidence)/2} * sd(ddof=1) / sqrt(n) (zero width for n=1).
    ``method="bootstrap"``: percentile bootstrap of the mean (``compare.bootstrap_ci``).
    """
    v = np.asarray(values, dtype=float)
    v = v[~np.isnan(v)]
    if v.size == 0:
        return (math.nan, math.nan, math.nan)
    mean = float(v.mean())
    if method == "normal":
        half = 0.0 if v.size < 2 else NormalDist().inv_cdf((1 + confidence) / 2) * float(v.std(ddof=1)) / math.sqrt(v.size)
        return (mean, mean - half, mean + half)
    if method == "bootstrap":
        low, high = bootstrap_ci(v, n_resamples=n_resamples, confidence=confidence, seed=seed)
        return (mean, low, high)
    raise MemlabError(f"method must be 'bootstrap' or 'normal', got {method!r}")


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
    for c in cols:
        if c is not None and c not in df.columns:
            raise MemlabError(f"no column {c!r}; columns: {', '.join(map(str, df.columns))}")


def _groups(df: pd.DataFrame, hue: str | None) -> list[tuple[str | None, pd.DataFrame]]:
    if hue is None:
        return [(None, df)]
    return [(str(k), g) for k, g in df.groupby(hue, sort=True, dropna=False)]


def plot_metric_vs_param(df: pd.DataFrame, param: str, metric: str, hue: str | None = None,
                         confidence: float = 0.95, method: str = "bootstrap", seed: int = 0,
                         ax: Axes | None = None) -> Figure:
    """Mean ``metric`` against ``param`` (one line per ``hue`` value) with a CI band.

    Numeric ``param`` values are placed on a numeric axis; others at positions 0..n-1
    labelled with the values (sorted).
    """
    _need(df, param, metric, hue)
    fig, ax = _figure(ax)
    values = sorted(df[param].dropna().unique(), key=lambda v: (str(type(v)), v))
    numeric = all(isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool) for v in values)
    position = {v: (float(v) if numeric else float(i)) for i, v in enumerate(values)}
    for label, part in _groups(df, hue):
        xs, means, lows, highs = [], [], [], []
        for v in values:
            sel = part[part[param] == v][metric]
            if sel.notna().sum() == 0:
                continue
            m, lo, hi = mean_ci(sel.to_numpy(dtype=float), confidence, method, seed=seed)
            xs.append(position[v])
            means.append(m)
            lows.append(lo)
            highs.append(hi)
        line, = ax.plot(xs, means, marker="o", label=label if label is not None else metric)
        ax.fill_between(xs, lows, highs, alpha=0.2, color=line.get_color(), linewidth=0)
    if not numeric:
        ax.set_xticks([position[v] for v in values], [str(v) for v in values])
    ax.set_xlabel(param)
    ax.set_ylabel(metric)
    ax.set_title(f"{metric} vs {param} (mean, {confidence:.0%} CI)")
    if hue is not None:
        ax.legend(title=hue)
    return fig


def plot_pareto(df: pd.DataFrame, x: str = "context_tokens", y: str = "recall@5",
                label: str | Sequence[str] = "strategy", ax: Axes | None = None) -> Figure:
    """Each configuration's mean cost ``x`` and mean quality ``y`` as a point, the Pareto
    front (cheapest for its quality) as a step line through the front's points.

    ``label`` is the column (or columns) identifying a configuration.
    """
    labels = [label] if isinstance(label, str) else list(label)
    _need(df, x, y, *labels)
    means = df.groupby(labels, sort=True, dropna=False)[[x, y]].mean().reset_index()
    names = [" ".join(str(r[c]) for c in labels) for _, r in means.iterrows()]
    points = list(zip(means[x].astype(float), means[y].astype(float)))
    front = pareto_front(points)
    fig, ax = _figure(ax)
    ax.scatter([p[0] for p in points], [p[1] for p in points], color="0.6", zorder=2, label="configurations")
    for name, (px, py) in zip(names, points):
        ax.annotate(name, (px, py), textcoords="offset points", xytext=(4, 4), fontsize=8)
    fx = [points[i][0] for i in front]
    fy = [points[i][1] for i in front]
    ax.plot(fx, fy, drawstyle="steps-post", color="C3", marker="o", zorder=3, label="Pareto front")
    ax.set_xlabel(x)
    ax.set_ylabel(y)
    ax.set_title(f"{y} vs {x}")
    ax.legend()
    return fig


def plot_by_category(df: pd.DataFrame, metric: str, hue: str | None = "strategy",
                     category_col: str = "category", confidence: float = 0.95, method: str = "bootstrap",
                     seed: int = 0, ax: Axes | None = None) -> Figure:
    """Grouped bars: mean ``metric`` per category (x) and ``hue`` value, with CI error bars."""
    _need(df, metric, category_col, hue)
    frame = df.assign(**{category_col: df[category_col].fillna("(none)").astype(str)})
    categories = sorted(frame[category_col].unique())
    groups = _groups(frame, hue)
    fig, ax = _figure(ax, figsize=(max(6.4, 1.2 * len(categories) * max(1, len(groups)) / 2), 4.0))
    width = 0.8 / max(1, len(groups))
    for g, (name, part) in enumerate(groups):
        stats = [mean_ci(part[part[category_col] == c][metric].to_numpy(dtype=float), confidence, method,
                         seed=seed) for c in categories]
        heights = [s[0] for s in stats]
        err = np.array([[s[0] - s[1] for s in stats], [s[2] - s[0] for s in stats]])
        xs = np.arange(len(categories)) - 0.4 + width * (g + 0.5)
        ax.bar(xs, heights, width=width, yerr=err, capsize=3, label=name if name is not None else metric)
    ax.set_xticks(np.arange(len(categories)), categories)
    ax.set_xlabel(category_col)
    ax.set_ylabel(metric)
    ax.set_title(f"{metric} by {category_col}")
    if hue is not None:
        ax.legend(title=hue)
    return fig


def metric_ks(df: pd.DataFrame, metric: str) -> list[int]:
    """The k values for which ``df`` has a ``<metric>@k`` column, ascending."""
    pattern = re.compile(rf"^{re.escape(metric)}@(\d+)$")
    return sorted(int(m.group(1)) for c in df.columns if isinstance(c, str) and (m := pattern.match(c)))


def plot_metric_at_k(df: pd.DataFrame, metric: str = "recall", ks: Sequence[int] | None = None,
                     hue: str | None = "strategy", ax: Axes | None = None) -> Figure:
    """Mean ``<metric>@k`` against k, one line per ``hue`` value (ks default: every column present)."""
    available = metric_ks(df, metric)
    ks = available if ks is None else [int(k) for k in ks]
    missing = [k for k in ks if k not in available]
    if not ks or missing:
        raise MemlabError(f"no column(s) {[f'{metric}@{k}' for k in missing] or metric + '@k'}; "
                          f"available k for {metric!r}: {available}")
    _need(df, hue)
    fig, ax = _figure(ax)
    for name, part in _groups(df, hue):
        means = [float(part[f"{metric}@{k}"].mean()) for k in ks]
        ax.plot(ks, means, marker="o", label=name if name is not None else metric)
    ax.set_xlabel("k")
    ax.set_ylabel(f"{metric}@k")
    ax.set_xticks(ks)
    ax.set_title(f"{metric}@k")
    if hue is not None:
        ax.legend(title=hue)
    return fig


__all__ = ["mean_ci", "metric_ks", "pareto_front", "plot_by_category", "plot_metric_at_k",
                      "plot_metric_vs_param", "plot_pareto"]
