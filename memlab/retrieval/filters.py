"""Metadata filters with one meaning on every backend.

A filter is a plain dict in the subset of chromadb's ``where`` language that every
memlab backend (BM25, numpy store, chromadb, hybrid) evaluates identically:

- ``{"key": value}``: equality;
- ``{"key": {"$eq"|"$ne"|"$gt"|"$gte"|"$lt"|"$lte": value}}``;
- ``{"key": {"$in"|"$nin": [values]}}``: membership;
- ``{"$and": [f1, f2, ...]}``, ``{"$or": [f1, f2, ...]}``;
- a dict with several keys means all of them (``$and``).

A record whose metadata lacks the key does not match (``$ne``/``$nin`` included),
which is chromadb's behaviour.
"""

from __future__ import annotations

from typing import Any, Mapping

from ..base import MemlabError

Where = Mapping[str, Any]

_COMPARE = {
    "$eq": lambda a, b: a == b,
    "$ne": lambda a, b: a != b,
    "$gt": lambda a, b: a > b,
    "$gte": lambda a, b: a >= b,
    "$lt": lambda a, b: a < b,
    "$lte": lambda a, b: a <= b,
    "$in": lambda a, b: a in b,
    "$nin": lambda a, b: a not in b,
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
            elif value != cond:
                return False
    return True


def to_chroma_where(where: Where | None) -> dict[str, Any] | None:
    """The same filter in the exact form chromadb accepts (one key per dict level)."""
    if not where:
        return None
    clauses = []
    for key, cond in where.items():
        if key in ("$and", "$or"):
            clauses.append({key: [to_chroma_where(sub) for sub in cond]})
        elif isinstance(cond, Mapping):
            for op, operand in cond.items():
                clauses.append({key: {op: list(operand) if op in ("$in", "$nin") else operand}})
        else:
            clauses.append({key: {"$eq": cond}})
    return clauses[0] if len(clauses) == 1 else {"$and": clauses}
