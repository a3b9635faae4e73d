"""Metadata filters with one meaning on every backend.

A filter is a plain dict in the subset of chromadb's ``where`` language that every
memlab backend (BM25, numpy store, chromadb, hybrid) evaluates identically:

- ``{"key": value}``: equality;
- ``{"key": {"$eq"|"$ne"|"$gt"|"$gte"|"$lt"|"$lte": value}}``;
- ``{"key": {"$in"|"$nin": [values]}}``: membership;
- ``{"$and": [f1, f2, ...]}``, ``{"$or": [f1, f2, ...]}``;
- a dict with several keys means all of them (``$and``).

A record whose metadata lacks the key does not match (``$ne``/``$nin`` included; chromadb
itself lets such records through ``$ne``/``$nin``, so the chroma store re-checks its
candidates with ``matches``). Booleans are their own kind, as in chromadb: ``True`` does
not equal ``1``, while ``1`` equals ``1.0``; comparing values of different kinds is false.

Retrievers evaluate a filter against ``filter_view(record)``: the record's scalar
metadata (str, int, float, bool; other values are invisible to filters, because
vector stores only keep scalars) merged with the built-in keys ``role`` (the role's
string value), ``agent_id``, ``timestamp`` and ``id``. A built-in key wins over a
metadata key of the same name, so ``{"id": ...}`` always means the record id.
The view is taken when the record is added; later edits to ``record.metadata`` are
seen by filters only after the record is added again.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .base import MemlabError

if TYPE_CHECKING:
    from .records import MemoryRecord

Where = Mapping[str, Any]

def _kind(value: Any) -> type:
    # bool is a kind of its own (chromadb's rule): True does not equal 1, 1 equals 1.0
    if isinstance(value, bool):
        return bool
    if isinstance(value, (int, float)):
        return float
    return type(value)


def _eq(a: Any, b: Any) -> bool:
    return _kind(a) is _kind(b) and a == b


def _ordered(op: Any) -> Any:
    return lambda a, b: _kind(a) is _kind(b) and _kind(a) is not bool and op(a, b)


_COMPARE = {
    "$eq": _eq,
    "$ne": lambda a, b: not _eq(a, b),
    "$gt": _ordered(lambda a, b: a > b),
    "$gte": _ordered(lambda a, b: a >= b),
    "$lt": _ordered(lambda a, b: a < b),
    "$lte": _ordered(lambda a, b: a <= b),
    "$in": lambda a, b: any(_eq(a, x) for x in b),
    "$nin": lambda a, b: not any(_eq(a, x) for x in b),
}


def validate_where(where: Where | None) -> None:
    """Raise MemlabError naming the offending part of a malformed filter."""
    if where is None:
        return
    if not isinstance(where, Mapping):
        raise MemlabError(f"filter must be a dict, got {type(where).__name__}")
    for key, cond in where.items():
        if key in ("$and", "$or"):
            if not isinstance(cond, (list, tuple)) or not cond:
                raise MemlabError(f"filter {key} expects a non-empty list of filters, got {cond!r}")
            for sub in cond:
                validate_where(sub)
        elif key.startswith("$"):
            raise MemlabError(f"unknown filter operator {key!r}; expected $and or $or at top level")
        elif isinstance(cond, Mapping):
            for op, value in cond.items():
                if op not in _COMPARE:
                    raise MemlabError(f"filter on {key!r}: unknown operator {op!r}; "
                                      f"expected one of {', '.join(_COMPARE)}")
                if op in ("$in", "$nin") and not isinstance(value, (list, tuple, set)):
                    raise MemlabError(f"filter on {key!r}: {op} expects a list, got {value!r}")


def matches(metadata: Mapping[str, Any], where: Where | None) -> bool:
    """True if ``metadata`` satisfies ``where`` (None matches everything)."""
    if not where:
        return True
    for key, cond in where.items():
        if key == "$and":
            if not all(matches(metadata, sub) for sub in cond):
                return False
        elif key == "$or":
            if not any(matches(metadata, sub) for sub in cond):
                return False
        else:
            if key not in metadata:
                return False
            value = metadata[key]
            if isinstance(cond, Mapping):
                for op, operand in cond.items():
                    try:
                        if not _COMPARE[op](value, operand):
                            return False
                    except TypeError:
                        return False
            elif not _eq(value, cond):
                return False
    return True


def to_chroma_where(where: Where | None) -> dict[str, Any] | None:
    """The same filter in the exact form chromadb accepts (one key per dict level)."""
    if not where:
        return None
    clauses: list[dict[str, Any]] = []
    for key, cond in where.items():
        if key in ("$and", "$or"):
            clauses.append({key: [to_chroma_where(sub) for sub in cond]})
        elif isinstance(cond, Mapping):
            for op, operand in cond.items():
                clauses.append({key: {op: list(operand) if op in ("$in", "$nin") else operand}})
        else:
            clauses.append({key: {"$eq": cond}})
    return clauses[0] if len(clauses) == 1 else {"$and": clauses}


#: Keys every record offers to filters, whatever its metadata says.
BUILTIN_FILTER_KEYS = ("role", "agent_id", "timestamp", "id")


def filter_view(record: MemoryRecord) -> dict[str, str | int | float | bool]:
    """What a filter sees of ``record``: scalar metadata plus the built-in keys (built-ins win)."""
    view: dict[str, str | int | float | bool] = {
        str(k): v for k, v in record.metadata.items() if isinstance(v, (str, int, float, bool))}
    view["role"] = record.role.value
    view["agent_id"] = record.agent_id
    view["timestamp"] = record.timestamp
    view["id"] = record.id
    return view
