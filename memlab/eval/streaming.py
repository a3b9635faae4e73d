"""Replay a dataset read one dialogue at a time (a LongMemEval file of 278 MB, ...).

``StreamedDataset`` stands for a file whose dialogues are parsed as they are replayed: a
pass (``iter``) reads the file again and yields each dialogue, filtered to the chosen probe
categories; the loader's report, the dialogue and probe counts and the dataset hash are
those of the last complete pass. The hash equals ``Dataset.hash`` of the same dialogues
loaded whole (sha256 of the same canonical JSON, fed piece by piece).

``replay_stream`` replays such a dataset like ``replay`` does a loaded one (same rows, same
metrics, same configuration columns): at most one dialogue beyond what the strategy itself
stores is held (``n_jobs`` > 1: one per worker and a few queued). The embedding caches are
warmed per dialogue. With ``max_failures`` None the limit is ``default_max_failures`` of
the probes asked so far (the total is not known until the end).

``open_dataset`` is what the CLI uses: a format whose registered loader can iterate
(LongMemEval, ...) streams, anything else loads.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from ..base import MemlabError
from ..strategy import Strategy
from .dataset import Dataset, DatasetError, Dialogue, LoadReport, _fields


class StreamedDataset:
    """Dialogues read from ``path`` on each pass by ``reader(path, report=...)``."""

    def __init__(self, name: str, path: str, reader: Callable[..., Iterator[Dialogue]],
                 categories: Sequence[str] | None = None, dialogues: Sequence[str] | None = None,
                 **options: Any) -> None:
        self.name = name
        self.source_path = str(path)
        self.reader = reader
        self.options = options
        self.categories = list(categories) if categories is not None else None
        self.dialogues = list(dialogues) if dialogues is not None else None
        self.report = LoadReport()
        self._hash: str | None = None
        self.n_dialogues: int | None = None
        self.n_probes: int | None = None

    def subset(self, categories: Sequence[str] | None = None,
               dialogues: Sequence[str] | None = None) -> StreamedDataset:
        """The same file, keeping only these dialogues (ids, in file order) and probes of these
        categories; ``None`` keeps what this one keeps. Unknown ids or categories are
        reported after a pass, which is when the file has shown what it holds."""
        return StreamedDataset(self.name, self.source_path, self.reader,
                               self.categories if categories is None else categories,
                               self.dialogues if dialogues is None else dialogues, **self.options)

    def __iter__(self) -> Iterator[Dialogue]:
        report = LoadReport()
        digest = hashlib.sha256(b"[")
        n_dialogues = n_probes = 0
        seen_categories: set[str] = set()
        seen_ids: set[str] = set()
        keep = set(self.dialogues) if self.dialogues is not None else None
        for d in self.reader(self.source_path, report=report, **self.options):
            seen_ids.add(d.id)
            if keep is not None and d.id not in keep:
                continue
            seen_categories.update(p.category for p in d.probes if p.category is not None)
            if self.categories is not None:
                d.probes = [p for p in d.probes if p.category in self.categories]
            # Dataset.hash: json.dumps of the list, written one dialogue at a time
            text = json.dumps(_fields(d), sort_keys=True, ensure_ascii=False, separators=(",", ":"),
                              allow_nan=True)
            digest.update((("," if n_dialogues else "") + text).encode("utf-8"))
            n_dialogues += 1
            n_probes += len(d.probes)
            yield d
        if keep is not None and keep - seen_ids:
            raise DatasetError(f"{self.source_path} has no dialogue {sorted(keep - seen_ids)[0]!r}; "
                               f"{len(seen_ids)} dialogues, e.g. {', '.join(sorted(seen_ids)[:5])}")
        if self.categories is not None:
            unknown = sorted(set(self.categories) - seen_categories)
            if unknown:
                raise DatasetError(f"unknown categories {unknown}; available: {sorted(seen_categories)}")
        digest.update(b"]")
        self.report, self._hash = report, digest.hexdigest()
        self.n_dialogues, self.n_probes = n_dialogues, n_probes

    def __len__(self) -> int:
        if self.n_dialogues is None:
            raise MemlabError(f"{self.source_path}: dialogues are counted while streamed; replay it first")
        return self.n_dialogues

    @property
    def hash(self) -> str:
        """``Dataset.hash`` of the dialogues of the last complete pass."""
        if self._hash is None:
            raise MemlabError(f"{self.source_path}: the hash is computed while streamed; replay it first")
        return self._hash

    def load(self) -> Dataset:
        """Every dialogue in memory: a ``Dataset``."""
        dialogues = list(self)
        return Dataset(self.name, dialogues, self.source_path, self.report)

    def __repr__(self) -> str:
        return f"StreamedDataset(name={self.name!r}, path={self.source_path!r})"


def open_dataset(path: str | Path, format: str | None = None, **options: Any) -> Dataset | StreamedDataset:
    """A ``StreamedDataset`` for a path whose format can iterate (a registered loader with
    ``iterate``: LongMemEval, ...); anything else loaded whole (``load_any``)."""
    from ..base import did_you_mean
    from .dataset_files import dataset_format, load_any
    from .loaders import get_loader

    fmt = dataset_format(path, format)
    if fmt is not None and Path(path).exists():
        loader = get_loader(fmt)
        if loader.streams:
            for name in options:
                if name not in loader.options:
                    raise DatasetError(did_you_mean(name, list(loader.options), f"option of the {fmt!r} loader"))
            return StreamedDataset(fmt, str(path), loader.iterate, **options)  # type: ignore[arg-type]
    return load_any(path, format, **options)


class _GrowingLimit:
    """Failed probes tolerated: ``default_max_failures`` of the probes asked so far."""

    def __init__(self) -> None:
        self.count, self.asked, self.first = 0, 0, ""

    def __call__(self, error: str) -> None:
        from ..llm.base import LLMError
        from .replay import default_max_failures

        self.count += 1
        self.first = self.first or error
        limit = default_max_failures(self.asked)
        if self.count > limit:
            raise LLMError(f"{self.count} probes failed, more than max_failures={limit} "
                           f"(5% of the {self.asked} probes asked so far); stopped. First failure: {self.first}")


def replay_stream(strategy: Strategy, dataset: StreamedDataset, *, k_max: int = 10,
                  ks: Sequence[int] = (1, 5, 10), label: str | None = None, n_jobs: int = 1,
                  progress: bool = False, provenance: dict[str, Any] | None = None, answerer: Any = None,
                  judge: Any = None, budgets: Sequence[int] = (), max_failures: int | None = None
                  ) -> pd.DataFrame:
    """``replay`` of a ``StreamedDataset`` (see the module docstring); same arguments and table."""
    from .replay import (
        _check_budget, _FailureLimit, _frame, _replay_one, progress_bar, warm_embedding_caches,
    )

    if not isinstance(strategy, Strategy):
        raise MemlabError(f"replay needs a memlab Strategy, got {type(strategy).__name__}")
    if max_failures is not None and (isinstance(max_failures, bool) or not isinstance(max_failures, int)
                                     or max_failures < 0):
        raise MemlabError(f"max_failures must be an int >= 0, got {max_failures!r}")
    failed: Any = _FailureLimit(max_failures) if max_failures is not None else _GrowingLimit()
    budgets = sorted({_check_budget(b) for b in budgets})
    if k_max < max(ks, default=1):
        k_max = max(ks)
    budget = max(budgets, default=0)
    name = label or type(strategy).__name__
    bar = progress_bar(1, name, "probe", progress)
    if bar is not None:
        bar.total = None  # the number of probes is known at the end

    def warmed() -> Iterator[Dialogue]:
        for d in dataset:
            warm_embedding_caches(strategy, Dataset(dataset.name, [d]))
            if isinstance(failed, _GrowingLimit):
                failed.asked += len(d.probes)
            yield d

    rows: list[dict[str, Any]] = []
    try:
        if n_jobs == 1:
            tick = bar.update if bar is not None else None
            for d in warmed():
                rows.extend(_replay_one(strategy, d, k_max, answerer, judge, budget, tick, failed))
        else:
            from joblib import Parallel, delayed

            for part in Parallel(n_jobs=n_jobs, return_as="generator")(
                    delayed(_replay_one)(strategy, d, k_max, answerer, judge, budget, parent_pid=os.getpid())
                    for d in warmed()):
                rows.extend(part)
                for row in part:
                    if row["error"] is not None:
                        failed(f"dialogue {row['dialogue_id']!r}, probe {row['probe_id']!r}: {row['error']}")
                if bar is not None:
                    bar.update(len(part))
    finally:
        if bar is not None:
            bar.close()
    return _frame(rows, strategy, dataset, label, ks, budgets, provenance, answerer is not None)  # type: ignore[arg-type]


def replay_any(strategy: Strategy, dataset: Dataset | StreamedDataset, **kwargs: Any) -> pd.DataFrame:
    """``replay_stream`` for a ``StreamedDataset``, ``replay`` otherwise."""
    if isinstance(dataset, StreamedDataset):
        return replay_stream(strategy, dataset, **kwargs)
    from .replay import replay

    return replay(strategy, dataset, **kwargs)


__all__ = ["StreamedDataset", "open_dataset", "replay_any", "replay_stream"]
