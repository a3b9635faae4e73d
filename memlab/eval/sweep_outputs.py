"""A sweep's result and what is written from it: results.parquet, summary.csv, summary.md
(``summary_markdown``), provenance.json and one figure per [[plots]] entry (``make_plot``,
file names from ``plot_file_name``), all renamed into place together; ``summary_text``: the
ranked table and headline ``memlab sweep`` prints."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

import pandas as pd

from ..base import ConfigError, MemlabError
from .cells import CellStore


@dataclass
class SweepResult:
    results: pd.DataFrame
    summary: pd.DataFrame
    output: Path | None
    figures: dict[str, Any] = field(default_factory=dict)
    grid_keys: list[str] = field(default_factory=list)
    cells: CellStore | None = None  # the finished cells kept for a resume (with an output folder)


def write_outputs(result: SweepResult, out: Path, plots: Sequence[Mapping[str, Any]], where: str,
                  user_modules: Sequence[Path] = (), data: Sequence[Path] = ()) -> Path:
    """results.parquet, summary.csv, summary.md, provenance.json (``run_provenance`` with the
    sha256 of the ``data`` files read) and one PNG per plot in ``out``."""
    from .provenance import run_provenance
    from .results import save_results

    from ..atomic import atomic_files, atomic_write, atomic_write_text

    # Draw every plot before writing anything: a bad plot section fails with nothing written.
    figures = {}
    for n, plot in enumerate(plots):
        fig = make_plot(result.results, plot, where=f"{where}: plots[{n}]", grid_keys=result.grid_keys)
        figures[str(plot_file_name(n, plot))] = fig
    out.mkdir(parents=True, exist_ok=True)
    # Every file is written to a temporary sibling first and all are renamed together at the
    # end (atomic_files), so a killed run leaves the previous complete set, not a new summary
    # beside old results.
    with atomic_files():
        save_results(result.results, str(out / "results.parquet"))
        with atomic_write(out / "summary.csv", "w", encoding="utf-8", newline="") as fh:
            result.summary.to_csv(fh, index=False)
        atomic_write_text(out / "summary.md", summary_markdown(result))
        provenance = run_provenance(data=data, user_modules=user_modules)
        if result.cells is not None:  # cells kept from an earlier run are that run's, not this one's
            provenance["cells"] = {"computed": result.cells.computed, "reused": result.cells.reused}
        atomic_write_text(out / "provenance.json", json.dumps(provenance, indent=2) + "\n")
        for name, fig in figures.items():
            with atomic_write(out / name.replace("@", "_at_"), "wb") as fh:
                fig.savefig(fh, dpi=120, bbox_inches="tight", format=Path(name).suffix[1:] or "png")
    result.figures.update(figures)
    return out


def plot_file_name(n: int, plot: Mapping[str, Any]) -> str:
    """``plots[n]``'s file: its ``file``, else ``NN_<kind>_<what it plots>.png`` (a default
    pareto plots ``<metric>@Btok``, recall unless ``metric`` says otherwise)."""
    if plot.get("file"):
        return str(plot["file"])
    kind = str(plot.get("kind"))
    what = plot.get("y") or plot.get("metric")
    if kind == "pareto" and plot.get("x") is None and plot.get("y") is None:
        what = f"{plot.get('metric', 'recall')}@Btok"
    return f"{n:02d}_{kind}_{what}.png" if what else f"{n:02d}_{kind}.png"


def summary_text(result: SweepResult) -> str:
    """What ``memlab sweep`` prints of a result: the ranked table of the registry's brief
    metrics at one k (5 if swept, else the largest) with the counts and costs, its NaN notes,
    then the headline's sentences."""
    from .compare import to_markdown
    from .headline import headline, ranked_summary
    from .metrics import nan_notes, parse_column, report_columns

    brief = report_columns(result.summary.columns, brief=True)  # the registry's brief metrics
    ks = sorted({p.k for p in map(parse_column, brief) if p.k is not None})
    k = 5 if 5 in ks or not ks else ks[-1]
    wanted = ["n_scored", "n_failed", *[c for c in brief if parse_column(c).k in (None, k)],
              "context_tokens", "llm_prompt_tokens", "llm_completion_tokens"]
    top = headline(result.results)
    table = ranked_summary(result.summary, top.metric, wanted)
    return "\n".join([to_markdown(table), *[f"note: {note}" for note in nan_notes(table)], "",
                      "\n".join(top.sentences())])


def summary_markdown(result: SweepResult) -> str:
    """summary.md: the ranked headline (``memlab.eval.headline``), then every metric; when a
    mean is NaN, a last column ``notes`` says why on that row
    (``memlab.eval.metrics.summary.row_nan_notes``)."""
    from .compare import to_markdown
    from .headline import headline
    from .metrics.summary import row_nan_notes

    summary = result.summary
    notes = ["; ".join(row_nan_notes(row)) for _, row in summary.iterrows()]
    table = summary.assign(notes=notes) if any(notes) else summary
    return (headline(result.results).to_markdown() + "\n\n## Every metric\n\n"
            + to_markdown(table) + "\n")


#: Sweep-file plot kinds and the ``memlab.eval.plots`` function drawing each.
PLOT_FUNCTIONS = {"metric_vs_param": "plot_metric_vs_param", "pareto": "plot_pareto",
                  "by_category": "plot_by_category", "metric_at_k": "plot_metric_at_k"}
PLOT_KINDS = tuple(PLOT_FUNCTIONS)


def make_plot(results: pd.DataFrame, plot: Mapping[str, Any], where: str = "plot",
              grid_keys: Sequence[str] = ()):
    """Draw one [[plots]] entry. ``metric_vs_param`` draws one line per ``hue`` value and per
    setting of the other grid parameters (``grid_keys``), so no setting is pooled silently."""
    from . import plots as P

    kind = plot.get("kind")
    if kind not in PLOT_FUNCTIONS:
        raise ConfigError(f"{where}: kind must be one of {', '.join(PLOT_KINDS)}, got {kind!r}")
    args = {k: v for k, v in plot.items() if k not in ("kind", "file")}
    if kind == "metric_vs_param":
        args.setdefault("hue", "base_strategy")
        args.setdefault("split", [k for k in grid_keys if k != args.get("param")])
    try:
        return getattr(P, PLOT_FUNCTIONS[kind])(results, **args)
    except (TypeError, MemlabError) as exc:
        raise ConfigError(f"{where}: {exc}") from None
