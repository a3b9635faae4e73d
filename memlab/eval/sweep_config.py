"""Reading and checking a sweep: the TOML file (``read_config``), its tables ([dataset],
[[strategies]], [run], [[plots]]) with did-you-mean hints, the grid's points
(``grid_points``, ``configure``: every point built and validated before any replay), the
columns a sweep will produce and the output folder -- all before the first replay."""

from __future__ import annotations

import itertools
import json
import sys
from pathlib import Path
from typing import Any, Mapping, Sequence

from ..base import ConfigError, MemlabError
from ..strategy import Strategy
from ..strategies.spec import build_strategy
from .dataset import Dataset
from .dataset_files import load_any
from .sweep_outputs import PLOT_FUNCTIONS, PLOT_KINDS


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


def _short(value: Any) -> str:
    return json.dumps(value) if isinstance(value, (list, dict)) else str(value)


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


def expected_columns(ks: Sequence[int], budgets: Sequence[int], grid: Mapping[str, Any] | None,
                     configured: Sequence[tuple[dict[str, Any], str, str, Strategy]]) -> set[str]:
    """The columns a sweep's results will have, known before the replay (for checking plots)."""
    from .metrics import COST_COLUMNS, expand, registered
    from .configuration import PARAM_PREFIX, flat_params
    from .rows import ROW_COLUMNS as _ROW_COLUMNS

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


def _check_plots(plots: Any, where: str) -> None:
    if not isinstance(plots, list) or not all(isinstance(p, Mapping) for p in plots):
        raise ConfigError(f"{where}: plots must be [[plots]] tables, got {plots!r}")
    for n, plot in enumerate(plots):
        if plot.get("kind") not in PLOT_KINDS:
            raise ConfigError(f"{where}: plots[{n}]: kind must be one of {', '.join(PLOT_KINDS)}, "
                              f"got {plot.get('kind')!r}")


def _positive_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def _need_table(value: Any, name: str, where: str) -> None:
    if not isinstance(value, Mapping):
        raise ConfigError(f"{where}: {name} must be a table, got {value!r}")


def _did_you_mean(unknown: Any, known: set[str]) -> str:
    """`` (did you mean 'dataset'?)`` for the unknown keys that are close to a known one, else ''."""
    import difflib

    pairs = [(u, difflib.get_close_matches(str(u), sorted(known), n=1)) for u in sorted(map(str, unknown))]
    hints = [f"{u!r} -> {close[0]!r}" if len(pairs) > 1 else repr(close[0]) for u, close in pairs if close]
    return f" (did you mean {', '.join(hints)}?)" if hints else ""


def _dataset(spec: Any, base_dir: Path, where: str) -> Dataset:
    if isinstance(spec, list):
        raise ConfigError(f"{where}: [[dataset]] is a list; write one [dataset] table (single brackets)")
    if not isinstance(spec, Mapping) or "path" not in spec:
        raise ConfigError(f"{where}: [dataset] with a 'path' is required")
    known = {"path", "format", "options", "dialogues"}
    unknown = set(spec) - known
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) in [dataset]: {sorted(unknown)}{_did_you_mean(unknown, known)}; "
                          f"expected {', '.join(sorted(known))}")
    options = spec.get("options", {})
    _need_table(options, "[dataset] options", where)
    path = Path(str(spec["path"]))
    path = path if path.is_absolute() else base_dir / path
    dataset = load_any(path, spec.get("format"), **dict(options))
    if "dialogues" in spec:
        dataset = dataset.subset(dialogues=spec["dialogues"])
    return dataset


def strategy_specs(config: Mapping[str, Any], where: str) -> list[dict[str, Any]]:
    """The strategy entries of a sweep file's tables (``read_config``), checked: its [strategy]
    or its [[strategies]] entries, each ``tag`` entry expanded to the strategies registered
    with that tag (``_tagged``); labels must differ."""
    if isinstance(config.get("strategy"), list):
        raise ConfigError(f"{where}: [[strategy]] is not a sweep table: did you mean [[strategies]] "
                          f"(one entry per strategy), or a single [strategy] table?")
    if isinstance(config.get("strategies"), Mapping):
        raise ConfigError(f"{where}: [strategies] must be [[strategies]] entries (double brackets, one per "
                          f"strategy); for a single strategy write [strategy]")
    if "strategy" in config and "strategies" in config:
        raise ConfigError(f"{where}: give either [strategy] or [[strategies]], not both")
    specs = config.get("strategies") or ([config["strategy"]] if "strategy" in config else [])
    if not specs:
        raise ConfigError(f"{where}: no strategy: add a [strategy] table or [[strategies]] entries")
    if not isinstance(specs, list) or not all(isinstance(s, Mapping) for s in specs):
        raise ConfigError(f"{where}: strategies must be [[strategies]] tables, got {specs!r}")
    out: list[dict[str, Any]] = []
    for spec in specs:
        out.extend(_tagged(spec, where) if "tag" in spec else [dict(spec)])
    labels = [str(s.get("label") or s.get("name") or s.get("class")) for s in out]
    twice = sorted({label for label in labels if labels.count(label) > 1})
    if twice:
        raise ConfigError(f"{where}: strategy label(s) {', '.join(map(repr, twice))} given twice (a [[strategies]] "
                          f"entry and a tag entry can name the same strategy): give each its own label")
    return out


def _tagged(spec: Mapping[str, Any], where: str) -> list[dict[str, Any]]:
    """A ``[[strategies]] tag = "builtin"`` entry: one entry per registered strategy that carries
    the tag (``memlab.strategies.registry.TAGS``), labelled by its name, in name order, each
    with the entry's ``params`` if any."""
    from ..strategies.registry import registry

    extra = sorted(set(spec) - {"tag", "params"})
    if extra:
        raise ConfigError(f"{where}: a [[strategies]] entry with tag takes only tag and params, got {extra}")
    tag = spec["tag"]
    if not isinstance(tag, str):
        raise ConfigError(f"{where}: [[strategies]] tag must be a string such as 'builtin', got {tag!r}")
    try:
        names = registry.names(tag=tag)
    except ConfigError as exc:
        raise ConfigError(f"{where}: [[strategies]] {exc}") from None
    if not names:
        raise ConfigError(f"{where}: [[strategies]] tag {tag!r}: no registered strategy carries it")
    params = dict(spec.get("params") or {})
    return [{"label": name, "name": name, **({"params": params} if params else {})} for name in names]


def _run_options(run: Any, where: str, n_jobs: int | None, output: str | Path | None
                 ) -> tuple[list[int], int, list[int], int, Any]:
    """The [run] table checked: ``(ks, k_max, budgets, n_jobs, output)``; the ``n_jobs`` and
    ``output`` arguments (command-line options), when given, win over the table's."""
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
    _cluster_options(run, where)  # checked here, read by cluster_options
    run.pop("scheduler", None)
    run.pop("embedding_store", None)
    if run:
        raise ConfigError(f"{where}: unknown key(s) in [run]: {sorted(run)}"
                          f"{_did_you_mean(run, set(RUN_KEYS))}; expected {', '.join(RUN_KEYS)}")
    return ks, k_max, budgets, jobs, out


RUN_KEYS = ("ks", "k_max", "budgets", "n_jobs", "output", "scheduler", "embedding_store")


def _cluster_options(run: Any, where: str) -> tuple[str | None, str | None]:
    """``(scheduler, embedding_store)`` of a [run] table, each a non-empty string or None:
    a Dask scheduler address to run the sweep on (``memlab.eval.distributed``) and the
    folder of its shared embedding store."""
    out = []
    for key, example in (("scheduler", "'tcp://host:8786'"), ("embedding_store", "'/shared/memlab/store'")):
        value = run.get(key) if isinstance(run, Mapping) else None
        if value is not None and (not isinstance(value, str) or not value.strip()):
            raise ConfigError(f"{where}: [run] {key} must be a non-empty string such as {example}, got {value!r}")
        out.append(value)
    return out[0], out[1]
