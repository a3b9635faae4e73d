"""Saving and loading result tables without loss (their provenance: ``memlab.eval.provenance``).

``save_results`` picks the format from the extension: ``.parquet`` or ``.csv``. Columns of
lists, dicts or mixed objects (``gold``, ``retrieved_ids``, ``retrieved_source_ids``, ...)
are stored as JSON strings in both formats and decoded on load. Each file also records
every column's dtype -- parquet in its schema metadata (key ``memlab``), CSV in a first
line ``#memlab-results {json}`` (read such a CSV elsewhere with ``skiprows=1``) -- so
``load_results(save_results(df))`` equals ``df`` with the same dtypes. The index is not
saved (result tables use a default RangeIndex; ``reset_index()`` first to keep one).
"""

from __future__ import annotations

import io
import json
import math
import os
from typing import Any

import numpy as np
import pandas as pd

from ..atomic import atomic_write
from ..base import MemlabError

_CSV_MARK = "#memlab-results "
_META_KEY = b"memlab"


def _format(path: str) -> str:
    lower = str(path).lower()
    if lower.endswith(".parquet"):
        return "parquet"
    if lower.endswith(".csv"):
        return "csv"
    raise MemlabError(f"results path must end in .parquet or .csv, got {path!r}")


def _to_json(value: Any) -> str:
    if isinstance(value, np.ndarray):
        value = value.tolist()
    return json.dumps(value, ensure_ascii=False, default=_json_default, allow_nan=True)


def _json_default(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, (tuple, set, np.ndarray)):
        return list(value)
    raise TypeError(f"cannot store a {type(value).__name__} in a results column")


def _column_kind(s: pd.Series) -> dict[str, Any]:
    """How a column is stored: JSON text ("json"), category (with its categories), or a dtype."""
    dtype = s.dtype
    if isinstance(dtype, pd.CategoricalDtype):
        return {"kind": "category", "categories": _to_json(list(dtype.categories)),
                "ordered": bool(dtype.ordered)}
    if dtype == object:
        return {"kind": "json"}
    return {"kind": "dtype", "dtype": str(dtype)}


def _encode(df: pd.DataFrame, csv: bool) -> tuple[pd.DataFrame, dict[str, Any]]:
    if not df.columns.is_unique:
        raise MemlabError(f"results columns must be unique, got {list(df.columns)}")
    if not all(isinstance(c, str) for c in df.columns):
        raise MemlabError("results column names must be strings")
    columns: dict[str, pd.Series] = {}
    kinds: dict[str, Any] = {}
    for col in df.columns:
        s = df[col].reset_index(drop=True)
        kind = _column_kind(s)
        if kind["kind"] == "json":
            s = s.map(_to_json).astype(object)
        elif kind["kind"] == "category" and csv:
            s = s.astype(object).map(_to_json).astype(object)
        elif csv and kind["kind"] == "dtype" and _is_text(s) and (s.isna().any() or (s == "").any()):
            # Missing values and "" are both empty cells in CSV: keep such text columns as JSON.
            kind = {"kind": "json_text", "dtype": kind["dtype"]}
            s = s.astype(object).map(lambda v: "null" if _missing(v) else _to_json(v))
        kinds[col] = kind
        columns[col] = s
    # built at once: inserting column by column fragments the frame (slow, and pandas warns)
    out = pd.DataFrame(columns, index=pd.RangeIndex(len(df))) if columns else pd.DataFrame(index=pd.RangeIndex(len(df)))
    return out, {"version": 1, "columns": kinds}


def _is_text(s: pd.Series) -> bool:
    return pd.api.types.is_string_dtype(s.dtype) and s.dtype != object


def _missing(v: Any) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v)) or v is pd.NA


def _decode(df: pd.DataFrame, meta: dict[str, Any]) -> pd.DataFrame:
    columns: dict[str, pd.Series] = {}
    for col, kind in meta["columns"].items():
        s = df[col]
        k = kind["kind"]
        if k == "json":
            s = pd.Series([json.loads(v) for v in s], dtype=object, name=col)
        elif k == "json_text":
            values = [json.loads(v) for v in s]
            s = pd.Series(values, dtype=object, name=col).astype(kind["dtype"])
        elif k == "category":
            if not isinstance(s.dtype, pd.CategoricalDtype):  # CSV: one JSON value per cell
                s = pd.Series([json.loads(v) for v in s], dtype=object, name=col)
            s = pd.Series(pd.Categorical(s.astype(object), categories=json.loads(kind["categories"]),
                                         ordered=kind["ordered"]), name=col)
        else:
            dtype = kind["dtype"]
            if dtype.startswith(("datetime64", "timedelta64")) and str(s.dtype) != dtype:
                s = pd.to_datetime(s, format="ISO8601") if dtype.startswith("datetime64") else pd.to_timedelta(s)
            if str(s.dtype) != dtype:
                s = s.astype(dtype)
        columns[col] = s.reset_index(drop=True)
    if not columns:
        return pd.DataFrame(index=pd.RangeIndex(len(df)))
    return pd.DataFrame(columns, index=pd.RangeIndex(len(df)))


def save_results(df: pd.DataFrame, path: str) -> str:
    """Write ``df`` to ``path`` (.parquet or .csv) so that ``load_results`` restores it exactly."""
    path = str(path)
    fmt = _format(path)
    encoded, meta = _encode(df, csv=(fmt == "csv"))
    parent = os.path.dirname(os.path.abspath(path))
    os.makedirs(parent, exist_ok=True)
    if fmt == "parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq
        table = pa.Table.from_pandas(encoded, preserve_index=False)
        schema_meta = dict(table.schema.metadata or {})
        schema_meta[_META_KEY] = json.dumps(meta).encode("utf-8")
        with atomic_write(path, "wb") as f:  # a killed run never leaves a torn parquet file
            pq.write_table(table.replace_schema_metadata(schema_meta), f)
    else:
        with atomic_write(path, "w", encoding="utf-8", newline="") as f:
            f.write(_CSV_MARK + json.dumps(meta, ensure_ascii=False) + "\n")
            encoded.to_csv(f, index=False)
    return path


def load_results(path: str) -> pd.DataFrame:
    """Read a table written by ``save_results``."""
    path = str(path)
    fmt = _format(path)
    if not os.path.exists(path):
        raise MemlabError(f"{path}: no such results file")
    if fmt == "parquet":
        import pyarrow.parquet as pq
        table = pq.read_table(path)
        raw = (table.schema.metadata or {}).get(_META_KEY)
        if raw is None:
            raise MemlabError(f"{path}: not written by save_results (no 'memlab' schema metadata)")
        meta = json.loads(raw.decode("utf-8"))
        return _decode(table.to_pandas(), meta)
    with open(path, encoding="utf-8", newline="") as f:
        first = f.readline()
        if not first.startswith(_CSV_MARK):
            raise MemlabError(f"{path}: not written by save_results (first line is not '#memlab-results ...')")
        meta = json.loads(first[len(_CSV_MARK):])
        body = f.read()
    # Read every column as text, then restore each one's dtype from the recorded kinds.
    kinds = meta["columns"]
    text_cols = {c: str for c, k in kinds.items() if k["kind"] in ("json", "json_text", "category")
                 or _text_dtype(k.get("dtype"))}
    # pandas 3 parses floats exactly by default (and deprecates the option); pandas 2 needs it.
    exact = {} if int(pd.__version__.split(".")[0]) >= 3 else {"float_precision": "round_trip"}
    raw_df = pd.read_csv(io.StringIO(body), dtype=text_cols, keep_default_na=False, na_values=[""],
                         **exact) if body.strip() else pd.DataFrame(columns=list(kinds))
    for col, k in kinds.items():
        if k["kind"] in ("json", "json_text", "category"):
            raw_df[col] = raw_df[col].astype(object)
        elif k["kind"] == "dtype" and _text_dtype(k["dtype"]):
            raw_df[col] = raw_df[col].astype(object).where(raw_df[col].notna(), None)
        elif k["kind"] == "dtype" and k["dtype"] == "bool":
            raw_df[col] = raw_df[col].map({True: True, False: False, "True": True, "False": False})
    return _decode(raw_df, meta)


def _text_dtype(dtype: str | None) -> bool:
    return dtype is not None and (dtype == "str" or dtype.startswith("string"))
