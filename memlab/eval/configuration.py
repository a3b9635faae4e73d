"""Configuration and provenance columns of a replay's table: the strategy's class, every
parameter (``param:<name>`` columns, deep), the dataset name and hash, and provenance
(memlab version, git commit; ``memlab.eval.provenance.run_provenance``); and
``configuration_hash``, one string naming a recorded figure's whole configuration."""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Iterable, Mapping
from typing import Any

import pandas as pd

from ..base import Component
from ..secrets import MASK, Secret
from ..strategy import Strategy
from .dataset import Dataset

PARAM_PREFIX = "param:"
#: Caches that hand back what their inner part computes wherever they are kept: their ``path``
#: is no configuration (and names a home folder that differs between machines).
CACHE_CLASSES = frozenset({"CachedEmbedder", "ResponseCache"})


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


def strategy_configuration(strategy: Strategy) -> dict[str, Any]:
    """The strategy's class and every parameter, flat (the ``strategy_class`` and ``param:*``
    columns of its rows, without the prefix)."""
    return {"strategy_class": type(strategy).__name__, **flat_params(strategy)}


def _canonical(value: Any) -> Any:
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):  # numpy scalars from a table
        value = value.item()
    if isinstance(value, bool) or isinstance(value, str):
        return value
    if isinstance(value, (int, float)):
        # a results table turns an int column with gaps into floats (10 -> 10.0): hash both alike
        return float(value)
    return value


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def configuration_hash(configuration: Strategy | Mapping[str, Any], data: Iterable[str],
                       protocol: Mapping[str, Any]) -> str:
    """sha256 of what a recorded figure depends on: the strategy's class and parameters
    (``strategy_configuration``, or that mapping as read back from a results table), the sha256
    of each data file (``data``, order ignored) and the protocol (ks, k_max, budgets, ...).

    A changed default parameter, another dataset file or other ks give another hash, so a test
    comparing it with the recorded one forces a deliberate re-record. Left out: parameters that
    are missing (None / NaN: a results table cannot tell them apart) and the ``path`` of a
    cache (``CACHE_CLASSES``: an embedding cache returns its embedder's vectors bit for bit,
    a response cache the model's answers, wherever it is kept)."""
    flat = strategy_configuration(configuration) if isinstance(configuration, Strategy) else dict(configuration)
    caches = {k for k, v in flat.items() if isinstance(v, str) and v in CACHE_CLASSES}
    params = {k: _canonical(v) for k, v in flat.items()
              if not _missing(v) and not (k.endswith("__path") and k[:-len("__path")] in caches)}
    payload = {"configuration": params, "data": sorted(data),
               "protocol": {k: _canonical_protocol(v) for k, v in protocol.items()}}
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _canonical_protocol(value: Any) -> Any:
    if isinstance(value, (list, tuple)):
        return [_canonical_protocol(v) for v in value]
    return _canonical(value)
