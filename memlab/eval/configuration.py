"""Configuration and provenance columns of a replay's table: the strategy's class, every
parameter (``param:<name>`` columns, deep), the dataset name and hash, and provenance
(memlab version, git commit; ``memlab.eval.provenance.run_provenance``)."""

from __future__ import annotations

import json
from typing import Any

import pandas as pd

from ..base import Component
from ..secrets import MASK, Secret
from ..strategy import Strategy
from .dataset import Dataset

PARAM_PREFIX = "param:"


def strategy_label(strategy: Strategy) -> str:
    return repr(strategy)


def flat_params(component: Component) -> dict[str, Any]:
    """Every parameter, deep, as scalars for table columns (components by class name, lists as JSON)."""
    out: dict[str, Any] = {}
    for name, value in component.get_params(deep=True).items():
        if isinstance(value, Component):
            out[name] = type(value).__name__
        elif isinstance(value, Secret):  # a key is never written to results
            out[name] = MASK
        elif value is None or isinstance(value, (bool, int, float, str)):
            out[name] = value
        elif isinstance(value, (list, tuple)) and all(isinstance(v, Component) for v in value):
            out[name] = json.dumps([type(v).__name__ for v in value])
        else:
            try:
                out[name] = json.dumps(value, sort_keys=True)
            except TypeError:
                out[name] = repr(value)
    return out


def add_configuration(frame: pd.DataFrame, strategy: Strategy, dataset: Dataset,
                      provenance: dict[str, Any] | None = None) -> pd.DataFrame:
    from .provenance import run_provenance

    extra: dict[str, Any] = {"strategy_class": type(strategy).__name__}
    extra.update({PARAM_PREFIX + k: v for k, v in flat_params(strategy).items()})
    extra["dataset"] = dataset.name
    extra["dataset_hash"] = dataset.hash
    prov = provenance if provenance is not None else run_provenance()
    extra["memlab_version"] = (prov.get("packages") or {}).get("memlab")
    extra["git_commit"] = prov.get("git_commit")
    columns = {k: [v] * len(frame) for k, v in extra.items()}
    return pd.concat([frame, pd.DataFrame(columns, index=frame.index)], axis=1)
