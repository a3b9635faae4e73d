"""Parameter sweeps and strategy comparisons, from Python or from a TOML file.

``sweep(strategy, grid, dataset)`` replays one clone of ``strategy`` per point of the
grid (the Cartesian product of the parameter lists, in the order given) and stacks the
per-probe rows. Nothing a parameter does not touch is redone: embedders are wrapped in a
content-addressed cache, so a ten-point keep_rate sweep embeds each turn once, and grid
points that differ only in a strategy's ``query_time_params`` (``keep_rate`` and
``token_limit`` of ``window`` and ``longterm``) observe each dialogue once together:
at each probe every point's values are set and its retrieve and build_context run
(``memlab.eval.replay.replay_variants``; rows equal to separate replays).

A sweep file (``memlab sweep FILE.toml``)::

    imports = ["my_fusion.py"]          # optional: modules that register strategies
    [dataset]
    path = "../datasets"                # file or folder; relative to this file
    format = "native"                   # optional: native | locomo | longmemeval
    options = {}                        # optional: loader options
    [[strategies]]                      # one or more (or a single [strategy] table)
    label = "longterm"
    name = "longterm"                   # a registered name, or class = "pkg.mod.Class"
    params = { token_limit = 300 }
    [grid]                              # optional: applied to every strategy
    keep_rate = [0.0, 0.5, 0.9, 1.0]
    [run]
    ks = [1, 5, 10]
    budgets = [256, 512, 1024]          # optional: token budgets (recall@512tok ...)
    n_jobs = 1
    output = "../runs/keep_rate"        # relative to this file; --output overrides
    [[plots]]                           # optional
    kind = "metric_vs_param"            # metric_vs_param | pareto | by_category | metric_at_k
    param = "keep_rate"
    metric = "context_recall"
"""

from __future__ import annotations

import hashlib
import importlib.util
import itertools
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

import pandas as pd

from ..base import ConfigError, MemlabError
from ..strategies.base import Strategy
from ..strategies.spec import build_strategy
from .cells import CellStore
from .dataset import Dataset
from .replay import load_any, replay, replay_variants, shares_observation


def grid_points(grid: Mapping[str, Sequence[Any]] | None) -> list[dict[str, Any]]:
    """Every combination of the grid's values, the first parameter varying slowest."""
    if not grid:
        return [{}]
    for name, values in grid.items():
        if isinstance(values, (str, bytes)) or not isinstance(values, Sequence) or not values:
            raise ConfigError(f"grid parameter {name!r} must have a non-empty list of values, got {values!r}")
    names = list(grid)
    return [dict(zip(names, combo)) for combo in itertools.product(*(grid[n] for n in names))]


def configure(strategy: Strategy | Mapping[str, Any], grid: Mapping[str, Sequence[Any]] | None,
              label: str | None = None) -> list[tuple[dict[str, Any], str, str, Strategy]]:
    """Every grid point built and validated, before anything is replayed.

    One ``(point, base label, point label, configured strategy)`` per grid point; a bad
    value at any point (``keep_rate = 1.2``) fails here, not after the first replays.
    """
    out = []
    for point in grid_points(grid):
        if isinstance(strategy, Strategy):
            configured = strategy.clone()
            if point:
                configured.set_params(**point)
            name = label or type(strategy).__name__
        else:
            spec = dict(strategy)
            spec["params"] = {**dict(spec.get("params") or {}), **point}
            configured = build_strategy({k: v for k, v in spec.items() if k != "label"})
            name = label or str(spec.get("label") or spec.get("name") or spec.get("class"))
        point_label = name + ("" if not point else " " + " ".join(f"{k}={_short(v)}" for k, v in point.items()))
        out.append((point, name, point_label, configured))
    return out


def sweep(strategy: Strategy | Mapping[str, Any], grid: Mapping[str, Sequence[Any]] | None,
          dataset: Dataset, *, ks: Sequence[int] = (1, 5, 10), k_max: int = 10, label: str | None = None,
          n_jobs: int = 1, progress: bool = False, budgets: Sequence[int] = (),
          configured: list[tuple[dict[str, Any], str, str, Strategy]] | None = None,
          cells: CellStore | None = None) -> pd.DataFrame:
    """Per-probe rows for every grid point; swept values also appear as plain columns.

    ``strategy`` is a Strategy (grid keys are ``set_params`` keys, nested ones included) or a
    spec such as ``{"name": "hybrid", "params": {...}}`` (grid keys may then also be the
    registered factory's arguments, e.g. ``weights`` or ``embedder``: each point is built
    from the spec with the point's values merged into its params). Every point is built
    (``configure``) before the first replay, so a bad value fails at once.

    With ``cells`` (a ``CellStore``) each grid point's table is stored as soon as it is
    computed and a point already stored is read back instead of replayed (resumable sweeps).
    """
    points = configured if configured is not None else configure(strategy, grid, label)
    shared = _shared_groups(points) if n_jobs == 1 else {}
    done: dict[int, pd.DataFrame] = {}  # frames replayed with their group, by point index

    def finish(frame: pd.DataFrame, name: str, point: dict[str, Any]) -> pd.DataFrame:
        frame.insert(1, "base_strategy", name)
        for k, v in point.items():
            frame[k] = json.dumps(v) if isinstance(v, (list, dict)) else v
        return frame

    frames = []
    for n, (point, name, point_label, built) in enumerate(points):
        def compute(n: int = n, built: Strategy = built, name: str = name, point_label: str = point_label,
                    point: dict[str, Any] = point) -> pd.DataFrame:
            group = shared.get(n)
            if group is None:
                return finish(replay(built, dataset, ks=ks, k_max=k_max, label=point_label, n_jobs=n_jobs,
                                     progress=progress, budgets=budgets), name, point)
            if n not in done:  # the whole group at once: the dialogue is observed once for all
                replayed = replay_variants([(points[i][3], points[i][2]) for i in group], dataset,
                                           ks=ks, k_max=k_max, budgets=budgets)
                done.update(zip(group, replayed))
            return finish(done.pop(n), name, point)

        if cells is None:
            frames.append(compute())
        else:
            key = cells.key(built, point_label, name, point, dataset.hash, ks, k_max, budgets)
            frames.append(cells.get_or_compute(key, compute))
    return pd.concat(frames, ignore_index=True)


def _shared_groups(points: Sequence[tuple[dict[str, Any], str, str, Strategy]]) -> dict[int, list[int]]:
    """Point index -> the indices of its group, for points that can share one observation.

    Points group when their strategy declares ``query_time_params`` (``shares_observation``)
    and their configurations differ only in those (every other parameter, deep, is equal).
    Groups of one are left out: they replay as usual.
    """
    from .replay import flat_params

    groups: dict[tuple[Any, ...], list[int]] = {}
    for n, (_, _, _, built) in enumerate(points):
        query_time = shares_observation(built)
        if not query_time:
            continue
        rest = {k: v for k, v in flat_params(built).items() if k not in query_time}
        key = (type(built), json.dumps(rest, sort_keys=True, default=repr))
        groups.setdefault(key, []).append(n)
    return {n: group for group in groups.values() if len(group) > 1 for n in group}


def _short(value: Any) -> str:
    return json.dumps(value) if isinstance(value, (list, dict)) else str(value)


@dataclass
class SweepResult:
    results: pd.DataFrame
    summary: pd.DataFrame
    output: Path | None
    figures: dict[str, Any] = field(default_factory=dict)
    grid_keys: list[str] = field(default_factory=list)
    cells: CellStore | None = None  # the finished cells kept for a resume (with an output folder)


def read_config(path: str | Path) -> dict[str, Any]:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib
    path = Path(path)
    if not path.is_file():
        raise MemlabError(f"{path}: no such sweep file")
    try:
        with path.open("rb") as fh:
            return tomllib.load(fh)
    except tomllib.TOMLDecodeError as exc:
        raise MemlabError(f"{path}: not valid TOML: {exc}") from None
    except UnicodeDecodeError as exc:
        raise MemlabError(f"{path}: not UTF-8: byte 0x{exc.object[exc.start]:02x} at byte offset "
                          f"{exc.start}; save the file as UTF-8") from None


_TOP_KEYS = {"imports", "dataset", "strategy", "strategies", "grid", "run", "plots", "name"}


def run_config(config: Mapping[str, Any], base_dir: str | Path = ".", *, output: str | Path | None = None,
               n_jobs: int | None = None, progress: bool = False, where: str = "sweep file",
               fresh: bool = False) -> SweepResult:
    """Run a sweep described by a parsed sweep file; write results and plots to its output.

    With an output folder, each finished cell (grid point x strategy) is kept in
    ``<output>/cells/`` (``memlab.eval.cells``): a rerun after an interruption replays only
    the missing cells and ends with the same tables; ``fresh`` recomputes every cell.
    """
    from .metrics import summarize

    base_dir = Path(base_dir)
    unknown = set(config) - _TOP_KEYS
    if unknown:
        raise ConfigError(f"{where}: unknown top-level key(s) {sorted(unknown)}; expected {sorted(_TOP_KEYS)}")
    imports = config.get("imports", [])
    if not isinstance(imports, list) or not all(isinstance(m, str) for m in imports):
        raise ConfigError(f"{where}: imports must be a list of file names, got {imports!r}")
    for module in imports:
        import_user_module(base_dir / module)
    dataset = _dataset(config.get("dataset"), base_dir, where)
    specs = _strategy_specs(config, where)
    run = config.get("run", {})
    _need_table(run, "[run]", where)
    run = dict(run)
    ks = run.pop("ks", [1, 5, 10])
    if not isinstance(ks, list) or not ks or not all(_positive_int(k) for k in ks):
        raise ConfigError(f"{where}: [run] ks must be a non-empty list of positive integers, got {ks!r}")
    k_max = run.pop("k_max", max(ks))
    if not _positive_int(k_max) or k_max < max(ks):
        raise ConfigError(f"{where}: [run] k_max must be an integer >= max(ks) = {max(ks)}, got {k_max!r}")
    budgets = run.pop("budgets", [])
    if not isinstance(budgets, list) or not all(_positive_int(b) for b in budgets):
        raise ConfigError(f"{where}: [run] budgets must be a list of positive integers (tokens), got {budgets!r}")
    jobs = n_jobs if n_jobs is not None else run.pop("n_jobs", 1)
    run.pop("n_jobs", None)
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs == 0:
        raise ConfigError(f"{where}: n_jobs must be a non-zero integer (-1: every core), got {jobs!r}")
    out = output if output is not None else run.pop("output", None)
    run.pop("output", None)
    if run:
        raise ConfigError(f"{where}: unknown key(s) in [run]: {sorted(run)}; expected ks, k_max, budgets, n_jobs, output")
    grid = config.get("grid")
    if grid is not None:
        _need_table(grid, "[grid]", where)
    plots = config.get("plots", [])
    _check_plots(plots, where)  # before the run: a bad plot section must not cost a sweep
    # Everything is checked before the first replay: every grid point of every strategy,
    # every plot (kind, arguments, metric and column names) and the output folder.
    configured = {}
    for spec in specs:
        label = str(spec.get("label") or spec.get("name") or spec.get("class"))
        try:
            configured[label] = configure(spec, grid, label)
        except (ConfigError, TypeError, ValueError) as exc:  # name the file and the strategy entry
            raise ConfigError(f"{where}: strategy {label!r}: {exc}") from None
    columns = expected_columns(ks, budgets, grid, [c for points in configured.values() for c in points])
    for n, plot in enumerate(plots):
        check_plot(plot, columns, where=f"{where}: plots[{n}]")
    out_dir = None
    if out is not None:
        out_dir = Path(out) if Path(out).is_absolute() else base_dir / out
        check_output_dir(out_dir, where)
    cells = CellStore(out_dir / "cells", fresh=fresh) if out_dir is not None else None
    frames = []
    for spec in specs:
        label = str(spec.get("label") or spec.get("name") or spec.get("class"))
        try:
            frames.append(sweep(spec, grid, dataset, ks=ks, k_max=k_max, label=label, n_jobs=jobs,
                                progress=progress, budgets=budgets, configured=configured[label],
                                cells=cells))
        except (ConfigError, TypeError) as exc:  # name the file and the strategy entry
            raise ConfigError(f"{where}: strategy {label!r}: {exc}") from None
    results = pd.concat(frames, ignore_index=True)
    by = ["strategy"]
    summary = summarize(results, by=by, ci=True)  # 95% cluster-bootstrap CIs, seeded
    result = SweepResult(results=results, summary=summary, output=None, grid_keys=list(grid or {}),
                         cells=cells)
    if out_dir is not None:
        result.output = write_outputs(result, out_dir, plots, where,
                                      user_modules=[base_dir / m for m in imports])
    return result


def expected_columns(ks: Sequence[int], budgets: Sequence[int], grid: Mapping[str, Any] | None,
                     configured: Sequence[tuple[dict[str, Any], str, str, Strategy]]) -> set[str]:
    """The columns a sweep's results will have, known before the replay (for checking plots)."""
    from .metrics import COST_COLUMNS, expand, registered
    from .replay import _ROW_COLUMNS, PARAM_PREFIX, flat_params

    columns = set(_ROW_COLUMNS) | {"strategy", "base_strategy", "strategy_class", "dataset", "dataset_hash",
                                   "n_gold", "memlab_version", "git_commit"}
    columns |= set(expand(registered(), ks, budgets)) | set(COST_COLUMNS)  # every registered metric
    columns |= set(grid or {})
    for _, _, _, strategy in configured:
        columns |= {PARAM_PREFIX + k for k in flat_params(strategy)}
    return columns


#: Plot arguments that name a column, and those that name a metric family (``metric_at_k``).
_COLUMN_ARGS = ("metric", "param", "hue", "x", "y", "label", "category_col", "split")


def check_plot(plot: Mapping[str, Any], columns: set[str], where: str) -> None:
    """Kind, arguments and every column name of one [[plots]] entry; did-you-mean on typos."""
    import difflib
    import inspect

    from . import plots as P

    kind = plot.get("kind")
    fn = PLOT_FUNCTIONS[kind]
    args = {k: v for k, v in plot.items() if k not in ("kind", "file")}
    try:
        inspect.signature(getattr(P, fn)).bind(None, **args)
    except TypeError as exc:
        allowed = [p for p in inspect.signature(getattr(P, fn)).parameters if p not in ("df", "ax")]
        raise ConfigError(f"{where}: {exc}; {kind} takes {', '.join(allowed)}") from None
    for key in _COLUMN_ARGS:
        if key not in args or args[key] is None:
            continue
        names = args[key] if isinstance(args[key], list) else [args[key]]
        for name in names:
            known = columns
            if kind == "metric_at_k" and key == "metric":
                from .metrics import parse_column

                known = {p.metric.name for p in map(parse_column, columns) if p is not None and p.metric.param == "k"}
            if name not in known:
                close = difflib.get_close_matches(str(name), sorted(known), n=1)
                hint = f"; did you mean {close[0]!r}?" if close else ""
                raise ConfigError(f"{where}: {key} {name!r} is not a column the sweep will produce{hint}")


def check_output_dir(out: Path, where: str) -> None:
    """The output folder exists or can be made, and is writable: checked before the replay."""
    import tempfile

    if out.exists() and not out.is_dir():
        raise ConfigError(f"{where}: output {out} exists and is not a folder")
    try:
        out.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=out, prefix=".memlab-write-check-"):
            pass
    except OSError as exc:
        raise ConfigError(f"{where}: cannot write to output {out}: {exc.strerror or exc}") from None


def write_outputs(result: SweepResult, out: Path, plots: Sequence[Mapping[str, Any]], where: str,
                  user_modules: Sequence[Path] = ()) -> Path:
    """results.parquet, summary.csv, summary.md and one PNG per plot in ``out``."""
    from .results import provenance, save_results

    from ..atomic import atomic_files, atomic_write, atomic_write_text

    # Draw every plot before writing anything: a bad plot section fails with nothing written.
    figures = {}
    for n, plot in enumerate(plots):
        fig = make_plot(result.results, plot, where=f"{where}: plots[{n}]", grid_keys=result.grid_keys)
        name = plot.get("file") or f"{n:02d}_{plot.get('kind')}_{plot.get('metric', plot.get('y', ''))}.png"
        figures[str(name)] = fig
    out.mkdir(parents=True, exist_ok=True)
    # Every file is written to a temporary sibling first and all are renamed together at the
    # end (atomic_files), so a killed run leaves the previous complete set, not a new summary
    # beside old results.
    with atomic_files():
        save_results(result.results, str(out / "results.parquet"))
        with atomic_write(out / "summary.csv", "w", encoding="utf-8", newline="") as fh:
            result.summary.to_csv(fh, index=False)
        atomic_write_text(out / "summary.md", summary_markdown(result.summary))
        atomic_write_text(out / "provenance.json",
                          json.dumps(provenance(user_modules=user_modules), indent=2) + "\n")
        for name, fig in figures.items():
            with atomic_write(out / name.replace("@", "_at_"), "wb") as fh:
                fig.savefig(fh, dpi=120, bbox_inches="tight", format=Path(name).suffix[1:] or "png")
    result.figures.update(figures)
    return out


def summary_markdown(summary: pd.DataFrame) -> str:
    """summary.md: the summary table; when a mean is NaN, a last column ``notes`` says why
    on that row (``memlab.eval.metrics.summary.row_nan_notes``)."""
    from .compare import to_markdown
    from .metrics.summary import row_nan_notes

    notes = ["; ".join(row_nan_notes(row)) for _, row in summary.iterrows()]
    table = summary.assign(notes=notes) if any(notes) else summary
    return to_markdown(table) + "\n"


#: Sweep-file plot kinds and the ``memlab.eval.plots`` function drawing each.
PLOT_FUNCTIONS = {"metric_vs_param": "plot_metric_vs_param", "pareto": "plot_pareto",
                  "by_category": "plot_by_category", "metric_at_k": "plot_metric_at_k"}
PLOT_KINDS = tuple(PLOT_FUNCTIONS)


def _check_plots(plots: Any, where: str) -> None:
    if not isinstance(plots, list) or not all(isinstance(p, Mapping) for p in plots):
        raise ConfigError(f"{where}: plots must be [[plots]] tables, got {plots!r}")
    for n, plot in enumerate(plots):
        if plot.get("kind") not in PLOT_KINDS:
            raise ConfigError(f"{where}: plots[{n}]: kind must be one of {', '.join(PLOT_KINDS)}, "
                              f"got {plot.get('kind')!r}")


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


def _positive_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def _need_table(value: Any, name: str, where: str) -> None:
    if not isinstance(value, Mapping):
        raise ConfigError(f"{where}: {name} must be a table, got {value!r}")


def _dataset(spec: Any, base_dir: Path, where: str) -> Dataset:
    if not isinstance(spec, Mapping) or "path" not in spec:
        raise ConfigError(f"{where}: [dataset] with a 'path' is required")
    unknown = set(spec) - {"path", "format", "options", "dialogues"}
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) in [dataset]: {sorted(unknown)}")
    options = spec.get("options", {})
    _need_table(options, "[dataset] options", where)
    path = Path(str(spec["path"]))
    path = path if path.is_absolute() else base_dir / path
    dataset = load_any(path, spec.get("format"), **dict(options))
    if "dialogues" in spec:
        dataset = dataset.subset(dialogues=spec["dialogues"])
    return dataset


def _strategy_specs(config: Mapping[str, Any], where: str) -> list[dict[str, Any]]:
    if "strategy" in config and "strategies" in config:
        raise ConfigError(f"{where}: give either [strategy] or [[strategies]], not both")
    specs = config.get("strategies") or ([config["strategy"]] if "strategy" in config else [])
    if not specs:
        raise ConfigError(f"{where}: no strategy: add a [strategy] table or [[strategies]] entries")
    if not isinstance(specs, list) or not all(isinstance(s, Mapping) for s in specs):
        raise ConfigError(f"{where}: strategies must be [[strategies]] tables, got {specs!r}")
    return [dict(s) for s in specs]


def import_user_module(path: str | Path) -> Any:
    """Import a Python file so that its ``@register`` decorators run (once per file); the module."""
    path = Path(path).resolve()
    if not path.is_file():
        raise ConfigError(f"imports: no such file {path}")
    digest = hashlib.sha1(str(path).encode()).hexdigest()[:10]
    name = f"memlab_user_{path.stem}_{digest}"  # two files with one name stay two modules
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ConfigError(f"imports: cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except SyntaxError as exc:
        del sys.modules[name]
        raise ConfigError(f"{path}:{exc.lineno}: syntax error: {exc.msg}") from None
    except Exception as exc:
        del sys.modules[name]
        raise ConfigError(f"{path}: importing it failed: {type(exc).__name__}: {exc}") from None
    # Let joblib's process workers unpickle its classes without importing the file: loky
    # pickles with the cloudpickle package (joblib >= 1.5), older joblibs with their own copy.
    for name in ("cloudpickle", "joblib.externals.cloudpickle"):
        try:
            importlib.import_module(name).register_pickle_by_value(module)
        except (ImportError, AttributeError, ValueError):
            pass
    return module
