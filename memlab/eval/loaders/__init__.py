"""Dataset loaders: the native JSON format, LoCoMo and LongMemEval.

``load_dataset(path)`` detects the format from the file's shape (``sniff_format``: a file
holding an array is told by its first element, so a 278 MB LongMemEval file is not parsed
twice); ``format=`` forces one. Files may be gzip-compressed (``.json.gz``).
Format-specific options (``probe_position``, ``include_caption``, ``evidence_roles``, ...)
are passed through to the loader of that format.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from ...base import did_you_mean
from ..dataset import Dataset, DatasetError
from .locomo import CATEGORIES as LOCOMO_CATEGORIES
from .locomo import load_locomo, locomo_turn_content, parse_locomo_date
from .checks import first_char, iter_json_array
from .longmemeval import iter_longmemeval, load_longmemeval, neutral_session_id, parse_longmemeval_date
from .native import (
    dataset_from_dict,
    load_native,
    native_schema,
    read_json,
    validate_native,
)

LOADERS: dict[str, Callable[..., Dataset]] = {
    "native": load_native,
    "locomo": load_locomo,
    "longmemeval": load_longmemeval,
}


def detect_format(doc: Any) -> str | None:
    """'native', 'locomo' or 'longmemeval' from a parsed document's shape; None if unknown."""
    if isinstance(doc, dict) and "dialogues" in doc:
        return "native"
    if isinstance(doc, list) and doc and all(isinstance(x, dict) for x in doc):
        first = doc[0]
        if "conversation" in first and "qa" in first:
            return "locomo"
        if "haystack_sessions" in first and "question_id" in first:
            return "longmemeval"
    return None


def sniff_format(path: str) -> str | None:
    """``detect_format`` of the file: an array by its first element alone, an object whole."""
    if first_char(path) == "[":
        for first in iter_json_array(path):
            return detect_format([first])
        return None
    return detect_format(read_json(path))


def load_dataset(path: str, format: str | None = None, **options: Any) -> Dataset:
    """Load a dataset file; ``format`` is 'native', 'locomo', 'longmemeval' or None (detect).

    ``options`` go to the format's loader (see ``load_locomo``, ``load_longmemeval``);
    an option that loader does not take is an error naming the ones it does.
    """
    path = str(path)
    if format is None:
        format = sniff_format(path)
        if format is None:
            raise DatasetError(f"{path}: cannot tell the format (expected a native object with "
                               f"'dialogues', a LoCoMo list with 'conversation'/'qa', or a "
                               f"LongMemEval list with 'question_id'/'haystack_sessions'); "
                               f"pass format=")
    if format not in LOADERS:
        raise DatasetError(did_you_mean(format, list(LOADERS), "dataset format"))
    loader = LOADERS[format]
    accepted = [p for p in inspect.signature(loader).parameters if p != "path"]
    for name in options:
        if name not in accepted:
            raise DatasetError(did_you_mean(name, accepted, f"option of the {format!r} loader"))
    return loader(path, **options)


__all__ = [
    "LOADERS", "LOCOMO_CATEGORIES", "dataset_from_dict", "detect_format", "iter_longmemeval", "load_dataset",
    "load_locomo", "load_longmemeval", "neutral_session_id", "sniff_format", "load_native", "locomo_turn_content", "native_schema",
    "parse_locomo_date", "parse_longmemeval_date", "validate_native",
]
