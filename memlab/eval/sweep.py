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
    scheduler = "tcp://host:8786"       # optional: run on this Dask cluster ($MEMLAB_DASK_SCHEDULER)
    embedding_store = "/shared/store"   # optional: its shared embedding store ($MEMLAB_EMBEDDING_STORE)
    [[plots]]                           # optional
    kind = "metric_vs_param"            # metric_vs_param | pareto | by_category | metric_at_k
    param = "keep_rate"
    metric = "context_recall"
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any, Mapping, Sequence

import pandas as pd

from ..base import ConfigError
from ..strategy import Strategy
from .cells import CellStore
from .dataset import Dataset
from .replay import replay, replay_variants, shares_observation
from .dataset_files import dataset_files
from .sweep_config import (
    _TOP_KEYS, _check_plots, _dataset, _did_you_mean, _need_table, _run_options, strategy_specs,
    check_output_dir, check_plot, configure, expected_columns,
)
from .sweep_outputs import SweepResult, write_outputs
from .user_modules import import_user_module

def sweep(strategy: Strategy | Mapping[str, Any], grid: Mapping[str, Sequence[Any]] | None,
          dataset: Dataset, *, ks: Sequence[int] = (1, 5, 10), k_max: int = 10, label: str | None = None,
          n_jobs: int = 1, progress: bool = False, budgets: Sequence[int] = (),
          configured: list[tuple[dict[str, Any], str, str, Strategy]] | None = None,
          cells: CellStore | None = None, client: Any = None, store: str | None = None) -> pd.DataFrame:
    """Per-probe rows for every grid point; swept values also appear as plain columns.

    ``strategy`` is a Strategy (grid keys are ``set_params`` keys, nested ones included) or a
    spec such as ``{"name": "hybrid", "params": {...}}`` (grid keys may then also be the
    registered factory's arguments, e.g. ``weights`` or ``embedder``: each point is built
    from the spec with the point's values merged into its params). Every point is built
    (``configure``) before the first replay, so a bad value fails at once.

    With ``cells`` (a ``CellStore``) each grid point's table is stored as soon as it is
    computed and a point already stored is read back instead of replayed (resumable sweeps).

    With ``client`` (a ``dask.distributed.Client``) the points not already in ``cells`` run
    on its cluster, their embeddings read from one shared store at ``store`` (a folder every
    worker reaches; default ``memlab.embeddings.store.default_store_root()``) that a pre-pass
    fills once per distinct text: ``memlab.eval.distributed``. ``n_jobs`` is then unused.
    """
    points = configured if configured is not None else configure(strategy, grid, label)
    dataset = _hashed_once(dataset)
    shared = _shared_groups(points) if n_jobs == 1 else {}
    done: dict[int, pd.DataFrame] = {}  # frames replayed with their group, by point index
    if client is not None:
        from .distributed import cluster_frames

        def stored(n: int) -> bool:
            point, name, point_label, built = points[n]
            key = cells.key(built, point_label, name, point, dataset.hash, ks, k_max, budgets)
            return not cells.fresh and cells.path(key).is_file()

        todo = [n for n in range(len(points)) if cells is None or not stored(n)]
        done.update(cluster_frames(points, todo, dataset, client, store, ks=ks, k_max=k_max, budgets=budgets,
                                   groups=_shared_groups([points[n] for n in todo])))

    def finish(frame: pd.DataFrame, name: str, point: dict[str, Any]) -> pd.DataFrame:
        frame.insert(1, "base_strategy", name)
        for k, v in point.items():
            frame[k] = json.dumps(v) if isinstance(v, (list, dict)) else v
        return frame

    frames = []
    for n, (point, name, point_label, built) in enumerate(points):
        def compute(n: int = n, built: Strategy = built, name: str = name, point_label: str = point_label,
                    point: dict[str, Any] = point) -> pd.DataFrame:
            if client is not None:  # computed on the cluster above
                return finish(done.pop(n), name, point)
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


class _HashedOnce(Dataset):
    """A dataset whose ``hash`` was computed once (``_hashed_once``)."""

    _digest: str

    @property
    def hash(self) -> str:
        return self._digest


def _hashed_once(dataset: Dataset) -> Dataset:
    """``dataset`` (the same dialogues) with its ``hash`` computed once: a sweep reads it for
    every point's cell key and configuration columns (the canonical JSON of the whole
    dataset each time: ~0.2 s on LoCoMo)."""
    if isinstance(dataset, _HashedOnce) or type(dataset) is not Dataset:
        return dataset
    view = copy.copy(dataset)
    view.__class__ = _HashedOnce
    view._digest = dataset.hash
    return view


def _shared_groups(points: Sequence[tuple[dict[str, Any], str, str, Strategy]]) -> dict[int, list[int]]:
    """Point index -> the indices of its group, for points that can share one observation.

    Points group when their strategy declares ``query_time_params`` (``shares_observation``)
    and their configurations differ only in those (every other parameter, deep, is equal).
    Groups of one are left out: they replay as usual.
    """
    from .configuration import flat_params

    groups: dict[tuple[Any, ...], list[int]] = {}
    for n, (_, _, _, built) in enumerate(points):
        query_time = shares_observation(built)
        if not query_time:
            continue
        rest = {k: v for k, v in flat_params(built).items() if k not in query_time}
        key = (type(built), json.dumps(rest, sort_keys=True, default=repr))
        groups.setdefault(key, []).append(n)
    return {n: group for group in groups.values() if len(group) > 1 for n in group}


class SweepInterrupted(KeyboardInterrupt):
    """Ctrl-C during a sweep with an output folder; the message says how many finished cells
    were kept for the resume."""


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
        raise ConfigError(f"{where}: unknown top-level key(s) {sorted(unknown)}{_did_you_mean(unknown, _TOP_KEYS)}; "
                          f"expected {sorted(_TOP_KEYS)}")
    imports = config.get("imports", [])
    if not isinstance(imports, list) or not all(isinstance(m, str) for m in imports):
        raise ConfigError(f"{where}: imports must be a list of file names, got {imports!r}")
    for module in imports:
        import_user_module(base_dir / module)
    dataset = _dataset(config.get("dataset"), base_dir, where)
    # the files behind it, hashed into provenance.json: a record names the exact data it read
    data_path = Path(str(config["dataset"]["path"]))
    data_path = data_path if data_path.is_absolute() else base_dir / data_path
    specs = strategy_specs(config, where)
    ks, k_max, budgets, jobs, out = _run_options(config.get("run", {}), where, n_jobs, output)
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
    # a Dask cluster: [run] scheduler, else $MEMLAB_DASK_SCHEDULER (memlab.eval.distributed)
    from .distributed import connect, scheduler_address
    from .sweep_config import _cluster_options

    scheduler, store = _cluster_options(config.get("run", {}), where)
    scheduler = scheduler_address(scheduler)
    if store is not None and not Path(store).is_absolute():
        store = str(base_dir / store)
    client = connect(scheduler) if scheduler is not None else None
    frames = []
    try:
        for spec in specs:
            label = str(spec.get("label") or spec.get("name") or spec.get("class"))
            try:
                frames.append(sweep(spec, grid, dataset, ks=ks, k_max=k_max, label=label, n_jobs=jobs,
                                    progress=progress, budgets=budgets, configured=configured[label],
                                    cells=cells, client=client, store=store))
            except (ConfigError, TypeError) as exc:  # name the file and the strategy entry
                raise ConfigError(f"{where}: strategy {label!r}: {exc}") from None
    except KeyboardInterrupt:
        if cells is None:
            raise
        points = [c for points in configured.values() for c in points]
        kept = sum(cells.path(cells.key(built, point_label, name, point, dataset.hash, ks, k_max, budgets)).is_file()
                   for point, name, point_label, built in points)
        raise SweepInterrupted(f"interrupted: {kept} of {len(points)} cells finished and kept in {cells.folder}; "
                               f"the same command resumes with the {len(points) - kept} missing "
                               f"(--fresh recomputes all)") from None
    finally:
        if client is not None:
            client.close()
    results = pd.concat(frames, ignore_index=True)
    by = ["strategy"]
    summary = summarize(results, by=by, ci=True)  # 95% cluster-bootstrap CIs, seeded
    result = SweepResult(results=results, summary=summary, output=None, grid_keys=list(grid or {}),
                         cells=cells)
    if out_dir is not None:
        result.output = write_outputs(result, out_dir, plots, where,
                                      user_modules=[base_dir / m for m in imports],
                                      data=dataset_files(data_path))
    return result
