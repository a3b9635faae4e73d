"""Plots: returned figures hold the expected artists and numbers; the Pareto front is exact."""

from __future__ import annotations

import io
import math
from statistics import NormalDist

import numpy as np
import pandas as pd
import pytest
from matplotlib.collections import PolyCollection
from matplotlib.figure import Figure

from memlab.base import MemlabError
from memlab.eval.plots import (
    mean_ci,
    metric_ks,
    pareto_front,
    plot_by_category,
    plot_metric_at_k,
    plot_metric_vs_param,
    plot_pareto,
)


def test_pareto_front_exact():
    points = [(10, 0.5), (20, 0.6), (15, 0.4), (20, 0.7), (5, 0.2), (30, 0.7), (10, 0.5)]
    # (15, .4) loses to (10, .5); (20, .6) to (20, .7); (30, .7) to (20, .7); the two (10, .5) tie and stay.
    assert pareto_front(points) == [4, 0, 6, 3]
    assert pareto_front([]) == []
    assert pareto_front([(1, 1)]) == [0]
    assert pareto_front([(1, 0.1), (2, 0.2), (3, 0.3)]) == [0, 1, 2]
    assert pareto_front([(1, 0.9), (2, 0.2), (3, 0.3)]) == [0]
    assert pareto_front([(1, float("nan")), (2, 0.2)]) == [1]


def test_mean_ci():
    v = [1.0, 2.0, 3.0, 4.0, float("nan")]
    mean, low, high = mean_ci(v, method="normal")
    half = NormalDist().inv_cdf(0.975) * math.sqrt(5 / 3) / 2        # sd of 1..4 is sqrt(5/3)
    assert (mean, low, high) == (2.5, 2.5 - half, 2.5 + half)
    m, lo, hi = mean_ci(v, method="bootstrap", n_resamples=500, seed=0)
    assert m == 2.5 and 1.0 <= lo < 2.5 < hi <= 4.0
    assert (m, lo, hi) == mean_ci(v, method="bootstrap", n_resamples=500, seed=0)
    assert mean_ci([3.0], method="normal") == (3.0, 3.0, 3.0)
    assert all(math.isnan(x) for x in mean_ci([float("nan")]))
    with pytest.raises(MemlabError, match="method must be 'bootstrap' or 'normal', got 't'"):
        mean_ci(v, method="t")


@pytest.fixture
def df() -> pd.DataFrame:
    rows = []
    for strategy, base in (("bm25", 0.5), ("hybrid", 0.7)):
        for keep_rate in (0.5, 0.9, 1.0):
            for i, cat in enumerate(["single-hop", "multi-hop", "single-hop", "temporal"]):
                rows.append({"strategy": strategy, "keep_rate": keep_rate, "category": cat,
                             "probe_id": f"p{i}", "recall@1": base * keep_rate - 0.1 * i,
                             "recall@5": base * keep_rate + 0.05 * i, "recall@10": min(1.0, base + 0.1 * i),
                             "context_tokens": 100 * (2 if strategy == "hybrid" else 1) * keep_rate + i})
    return pd.DataFrame(rows)


def png(fig: Figure) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    return buf.getvalue()


def test_plot_metric_vs_param(df):
    fig = plot_metric_vs_param(df, "keep_rate", "recall@5", hue="strategy", method="normal")
    ax = fig.axes[0]
    assert len(ax.lines) == 2 and [l.get_label() for l in ax.lines] == ["bm25", "hybrid"]
    bm25 = ax.lines[0]
    assert bm25.get_xdata().tolist() == [0.5, 0.9, 1.0]
    expected = [df[(df.strategy == "bm25") & (df.keep_rate == k)]["recall@5"].mean() for k in (0.5, 0.9, 1.0)]
    assert np.allclose(bm25.get_ydata(), expected, rtol=0, atol=1e-12)
    assert sum(isinstance(c, PolyCollection) for c in ax.collections) == 2    # one CI band per line
    assert ax.get_xlabel() == "keep_rate" and ax.get_ylabel() == "recall@5"
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["bm25", "hybrid"]
    assert png(fig).startswith(b"\x89PNG")


def test_plot_metric_vs_categorical_param(df):
    bm25 = df[df.strategy == "bm25"]
    fig = plot_metric_vs_param(bm25.assign(keep_rate=bm25.keep_rate.map(str)), "keep_rate", "recall@5")
    ax = fig.axes[0]
    assert len(ax.lines) == 1 and ax.lines[0].get_xdata().tolist() == [0.0, 1.0, 2.0]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["0.5", "0.9", "1.0"]


def test_plot_pareto(df):
    fig = plot_pareto(df, x="context_tokens", y="recall@5", label=["strategy", "keep_rate"])
    ax = fig.axes[0]
    assert len(ax.collections) == 6 and all(len(c.get_offsets()) == 1 for c in ax.collections)
    means = df.groupby(["strategy", "keep_rate"])[["context_tokens", "recall@5"]].mean().reset_index()
    points = list(zip(means.context_tokens, means["recall@5"]))
    front = pareto_front(points)
    line = [l for l in ax.lines if l.get_label() == "Pareto front"][0]
    assert line.get_xdata().tolist() == [points[i][0] for i in front]
    assert line.get_ydata().tolist() == [points[i][1] for i in front]
    # each point is named in the legend, in its own colour and marker: no label on the axes to overlap
    assert not ax.texts and ax.get_xlabel() == "context_tokens"
    names = [t.get_text() for t in ax.get_legend().get_texts()]
    assert names[:6] == [f"{s} {k}" for s, k in zip(means.strategy, means.keep_rate)] and names[6] == "Pareto front"
    styles = {(tuple(c.get_facecolor()[0]), c.get_paths()[0].vertices.tobytes()) for c in ax.collections}
    assert len(styles) == 6
    png(fig)


def test_plot_by_category(df):
    fig = plot_by_category(df, "recall@1", hue="strategy", method="normal")
    ax = fig.axes[0]
    bars = ax.patches
    assert len(bars) == 3 * 2
    heights = [b.get_height() for b in bars]
    expected = [df[(df.strategy == s) & (df.category == c)]["recall@1"].mean()
                for s in ("bm25", "hybrid") for c in ("multi-hop", "single-hop", "temporal")]
    assert np.allclose(heights, expected, rtol=0, atol=1e-12)
    assert [t.get_text() for t in ax.get_xticklabels()] == ["multi-hop", "single-hop", "temporal"]
    png(fig)


def test_plot_metric_at_k(df):
    assert metric_ks(df, "recall") == [1, 5, 10]
    fig = plot_metric_at_k(df, "recall", hue="strategy")
    ax = fig.axes[0]
    assert len(ax.lines) == 2 and ax.lines[1].get_xdata().tolist() == [1, 5, 10]
    hybrid = df[df.strategy == "hybrid"]
    assert ax.lines[1].get_ydata().tolist() == [hybrid[f"recall@{k}"].mean() for k in (1, 5, 10)]
    fig = plot_metric_at_k(df, "recall", ks=[5], hue=None)
    assert len(fig.axes[0].lines) == 1
    with pytest.raises(MemlabError, match=r"no column\(s\) \['recall@3'\]; available k for 'recall': \[1, 5, 10\]"):
        plot_metric_at_k(df, "recall", ks=[3])
    with pytest.raises(MemlabError, match="no column 'config'"):
        plot_metric_at_k(df, "recall", hue="config")


def test_draws_on_given_axes(df):
    fig = Figure()
    ax1, ax2 = fig.subplots(1, 2)
    assert plot_metric_at_k(df, ax=ax2) is fig
    assert len(ax2.lines) == 2 and len(ax1.lines) == 0


def test_metric_vs_param_never_pools_configurations(df):
    with pytest.raises(MemlabError, match=r"would pool 2 configurations at keep_rate=0.5 \(bm25, hybrid\)"):
        plot_metric_vs_param(df, "keep_rate", "recall@5")
    grid = pd.concat([df.assign(decay=d, strategy=df.strategy + f" decay={d}") for d in (10, 2)])
    with pytest.raises(MemlabError, match="would pool 2 configurations"):
        plot_metric_vs_param(grid.assign(base=grid.strategy.str.split().str[0]), "keep_rate", "recall@5",
                             hue="base")                       # decay is a second grid dimension
    fig = plot_metric_vs_param(grid.assign(base=grid.strategy.str.split().str[0]), "keep_rate", "recall@5",
                               hue="base", split=["decay"], method="normal")
    ax = fig.axes[0]
    # one line per strategy and per decay setting, decay sorted as numbers (2 before 10)
    assert [l.get_label() for l in ax.lines] == ["bm25, decay=2", "bm25, decay=10", "hybrid, decay=2",
                                                  "hybrid, decay=10"]
    # identical lines (decay changes nothing here) stay distinguishable
    styles = {(l.get_color(), l.get_marker(), l.get_linestyle()) for l in ax.lines}
    assert len(styles) == 4
    assert ax.get_ylim() == (0.0, 1.02)                         # recall is bounded: axis from 0 to 1
    assert ax.get_legend() is not None and ax.get_legend().get_title().get_text() == "base, decay"


def test_unbounded_metrics_start_at_zero(df):
    fig = plot_metric_vs_param(df[df.strategy == "hybrid"], "keep_rate", "context_tokens", method="normal")
    assert fig.axes[0].get_ylim()[0] == 0.0


def test_by_category_readable_and_missing_is_not_zero(df):
    frame = df.copy()
    frame.loc[(frame.strategy == "hybrid") & (frame.category == "temporal"), "recall@5"] = np.nan   # missing
    frame.loc[(frame.strategy == "bm25") & (frame.category == "multi-hop"), "recall@5"] = 0.0       # zero
    fig = plot_by_category(frame, "recall@5", method="normal")
    width, height = fig.get_size_inches()
    assert width <= 12 and height <= 4.5
    ax = fig.axes[0]
    texts = [t.get_text() for t in ax.texts]
    assert texts.count("n/a") == 1 and texts.count("0") == 1
    assert ax.get_ylim() == (0.0, 1.02)
    legend = ax.get_legend()
    assert legend is not None and legend.get_bbox_to_anchor().x0 > ax.get_window_extent().x1 - 1  # beside


def test_pareto_of_recall_against_tokens_at_budgets():
    rows = []
    for strategy, scale in (("bm25", 1.0), ("layered", 0.5)):
        for d in ("d1", "d2"):
            rows.append({"strategy": strategy, "dialogue_id": d,
                         "recall@256tok": 0.4 * scale, "tokens@256tok": 200.0,
                         "recall@512tok": 0.6 * scale, "tokens@512tok": 450.0 if d == "d1" else 470.0,
                         "context_tokens": 100.0, "recall@5": 0.5})
    fig = plot_pareto(pd.DataFrame(rows))
    ax = fig.axes[0]
    lines = {l.get_label(): l for l in ax.lines if not l.get_label().startswith("_")}
    assert set(lines) == {"bm25", "layered", "Pareto front"}
    from matplotlib.collections import LineCollection

    bars = [c for c in ax.collections if isinstance(c, LineCollection)]
    assert len(bars) == 2 and all(len(b.get_segments()) == 2 for b in bars)   # a CI bar per budget
    assert list(lines["bm25"].get_xdata()) == [200.0, 460.0]
    assert lines["bm25"].get_ydata().tolist() == [0.4, 0.6]
    assert lines["Pareto front"].get_ydata().tolist() == [0.4, 0.6]
    assert "tokens" in ax.get_xlabel()


def test_column_typos_get_did_you_mean(df):
    with pytest.raises(MemlabError, match="no column 'recal@5'; did you mean 'recall@5'\\?"):
        plot_by_category(df, "recal@5")


def test_by_category_survives_a_bootstrap_bound_a_rounding_error_past_the_mean():
    # two clusters with the same mean: every resample's mean is 0.4 up to rounding, and
    # the upper bound comes out 0.39999999999999997 < 0.4 (a negative error bar for matplotlib)
    import pandas as pd

    from memlab.eval.plots import mean_ci, plot_by_category

    values = [0.7, 0.1, 0.7, 0.1]
    clusters = ["c", "d", "d", "c"]
    mean, _, high = mean_ci(values, clusters=clusters)
    assert high < mean
    df = pd.DataFrame({"strategy": "s", "category": "x", "dialogue_id": clusters, "context_recall": values})
    fig = plot_by_category(df, "context_recall")
    assert fig.axes[0].get_xticklabels()[0].get_text() == "x"


def test_metric_at_k_has_a_ci_band_per_line(df):
    fig = plot_metric_at_k(df.assign(dialogue_id=df.probe_id), "recall", hue="strategy")
    ax = fig.axes[0]
    assert sum(isinstance(c, PolyCollection) for c in ax.collections) == 2
    assert ax.get_title() == "recall@k (mean, 95% CI)"


# -- styles and references --------------------------------------------------------------------

def test_twenty_strategies_get_twenty_colours_and_markers():
    from matplotlib.colors import to_rgb

    from memlab.eval.plots import PALETTE, _style

    styles = [_style(n) for n in range(20)]
    assert len({s["color"] for s in styles}) == 20 and len({s["marker"] for s in styles}) == 20
    rgb = [np.array(to_rgb(c)) for c in PALETTE]
    closest = min(np.linalg.norm(a - b) for i, a in enumerate(rgb) for b in rgb[i + 1:])
    assert closest > 0.26  # no two colours of the palette are near-twins (tab10's C0..C9 and 10 more)
    assert len({(s["color"], s["marker"], s["linestyle"]) for s in map(_style, range(80))}) == 80


def _thirteen_strategies():
    names = ["bm25", "bm25_plus", "bm25_prf", "full_context", "hybrid", "hybrid_decay", "hybrid_plus", "layered",
             "layered_lifecycle", "longterm", "oracle", "vector", "window"]
    rows = []
    for n, name in enumerate(names):
        for d in ("d1", "d2"):
            rows.append({"strategy": name, "dialogue_id": d, "category": "single-hop",
                         "recall@128tok": 0.05 * n, "tokens@128tok": 100.0 + n,
                         "recall@256tok": 0.06 * n, "tokens@256tok": 200.0 + n,
                         "context_tokens": 150.0 + 10 * n, "context_recall": 0.07 * n})
    rows = pd.DataFrame(rows)
    rows.loc[rows.strategy == "oracle", ["recall@128tok", "recall@256tok", "context_recall"]] = 1.0
    rows.loc[rows.strategy == "oracle", ["tokens@128tok", "tokens@256tok", "context_tokens"]] = 30.0
    return rows


def test_pareto_draws_references_as_lines_outside_the_front():
    df = _thirteen_strategies()
    ax = plot_pareto(df).axes[0]
    labels = [l.get_label() for l in ax.lines if not l.get_label().startswith("_")]
    strategies = [l for l in ax.lines if l.get_label() in set(df.strategy)]
    assert len(strategies) == 11 and "oracle" not in labels and "full_context" not in labels
    assert len({(l.get_color(), l.get_marker()) for l in strategies}) == 11
    assert len({l.get_color() for l in strategies}) == 11          # bm25 and oracle no longer share C0
    refs = [l for l in ax.lines if l.get_label().startswith(("oracle (ref.", "full_context (ref."))]
    assert len(refs) == 2 and all(len(set(l.get_ydata())) == 1 for l in refs)   # horizontal lines
    oracle = [l for l in refs if l.get_label().startswith("oracle")][0]
    assert oracle.get_ydata()[0] == 1.0 and "at 30 tokens" in oracle.get_label()
    front = [l for l in ax.lines if l.get_label() == "Pareto front"][0]
    # the front of the strategies alone: the oracle (1.0 at 30 tokens) would dominate every point
    others = df[~df.strategy.isin(["oracle", "full_context"])].groupby("strategy")[
        ["tokens@128tok", "recall@128tok", "tokens@256tok", "recall@256tok"]].mean()
    points = [(r[f"tokens@{b}tok"], r[f"recall@{b}tok"]) for _, r in others.iterrows() for b in (128, 256)]
    assert front.get_xdata().tolist() == [points[i][0] for i in pareto_front(points)]
    assert len(front.get_xdata()) > 1 and 1.0 not in front.get_ydata().tolist()
    scatter = plot_pareto(df, x="context_tokens", y="context_recall").axes[0]
    assert len(scatter.collections) == 11 and not scatter.texts
    assert [l.get_label() for l in scatter.lines if l.get_label().endswith("context_tokens)")] == [
        "full_context (ref.: 0.210 at 180 context_tokens)", "oracle (ref.: 1.000 at 30 context_tokens)"]
    assert set(plot_pareto(df, references=()).axes[0].lines[-1].get_ydata().tolist()) == {1.0}  # the oracle alone


def test_colours_match_across_pareto_and_by_category():
    df = _thirteen_strategies()
    pareto = {l.get_label(): l.get_color() for l in plot_pareto(df).axes[0].lines}
    ax = plot_by_category(df, "recall@256tok", method="normal").axes[0]
    handles, names = ax.get_legend_handles_labels()
    bars = {name: h.patches[0].get_facecolor() for h, name in zip(handles, names)}
    from matplotlib.colors import to_rgba

    assert all(to_rgba(pareto[name])[:3] == bars[name][:3] for name in pareto if name in bars)  # bm25 at 0: unfilled
