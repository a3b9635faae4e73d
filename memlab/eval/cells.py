"""Finished sweep cells, kept so an interrupted sweep resumes where it stopped.

A *cell* is the per-probe table of one configured strategy (one grid point of one
``[[strategies]]`` entry) on one dataset. ``CellStore(folder)`` keeps each cell, as soon as
it is computed, in ``<folder>/<key>.parquet`` (written atomically: a killed run leaves whole
cells or none). The key is the sha256 of the canonical JSON of

    {"strategy": to_spec(configured strategy), "label", "base", "point",
     "dataset_hash", "ks", "k_max", "budgets", "memlab_version"}

so a cell is reused only for the same configuration, dataset content, metric settings and
memlab version; anything else is a new cell. Secrets (API keys) enter the key as ``***``:
they do not change results. A configuration holding values without a stable text form (a
function, an object without a spec) gets a new key each run and is simply recomputed.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import pandas as pd

from ..strategies.spec import to_spec


class CellStore:
    """Cells of a sweep in one folder (see the module docstring); ``fresh`` ignores stored ones."""

    def __init__(self, folder: str | Path, fresh: bool = False) -> None:
        self.folder = Path(folder)
        self.fresh = fresh
        self.reused = 0
        self.computed = 0

    @staticmethod
    def key(strategy: Any, label: str, base: str, point: Mapping[str, Any], dataset_hash: str,
            ks: Sequence[int], k_max: int, budgets: Sequence[int]) -> str:
        from .. import __version__

        payload = {"strategy": to_spec(strategy), "label": label, "base": base, "point": dict(point),
                   "dataset_hash": dataset_hash, "ks": list(ks), "k_max": int(k_max),
                   "budgets": list(budgets), "memlab_version": __version__}
        text = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
        return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]

    def path(self, key: str) -> Path:
        return self.folder / f"{key}.parquet"

    def get_or_compute(self, key: str, compute: Callable[[], pd.DataFrame]) -> pd.DataFrame:
        """The stored cell ``key``, else ``compute()`` stored at once (atomically) and returned."""
        from .results import load_results, save_results

        path = self.path(key)
        if not self.fresh and path.is_file():
            self.reused += 1
            return load_results(str(path))
        frame = compute()
        save_results(frame, str(path))
        self.computed += 1
        return frame
