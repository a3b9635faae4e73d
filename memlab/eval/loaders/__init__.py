"""Dataset loaders: the native JSON format, LoCoMo and LongMemEval.

``load_dataset(path)`` detects the format from the file's shape (``sniff_format``: a file
holding an array is told by its first element, so a 278 MB LongMemEval file is not parsed
twice); ``format=`` forces one. Files may be gzip-compressed (``.json.gz``).
Format-specific options (``probe_position``, ``include_caption``, ``evidence_roles``, ...)
are passed through to the loader of that format.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
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


def loader_options(format: str) -> dict[str, inspect.Parameter]:
    """The options the loader of ``format`` takes, by name (its parameters but the path)."""
    if format not in LOADERS:
        raise DatasetError(did_you_mean(format, list(LOADERS), "dataset format"))
    return {name: p for name, p in inspect.signature(LOADERS[format]).parameters.items() if name != "path"}


def parse_loader_options(format: str, texts: Mapping[str, str]) -> dict[str, Any]:
    """Loader options given as text (``memlab eval --option KEY=VALUE``) as the loader of
    ``format`` takes them, read by the type of each option's default: ``true``/``false``
    for a flag, a number for a number, ``a,b`` for a list (``all``: kept as the word, for
    the options that take it, e.g. LongMemEval's ``roles``), text otherwise. The loader
    checks the values themselves (``probe_position`` must be ``end`` or ``after_evidence``).

    An unknown option, or a value of the wrong type, is a ``DatasetError`` naming the
    option, the loader, what it expects and what was given.
    """
    accepted = loader_options(format)
    out: dict[str, Any] = {}
    for name, text in texts.items():
        if name not in accepted:
            raise DatasetError(did_you_mean(name, list(accepted), f"option of the {format!r} loader"))
        default = accepted[name].default

        def wrong(expected: str) -> DatasetError:
            return DatasetError(f"option {name!r} of the {format!r} loader expects {expected}, got {text!r}")

        value: Any = text
        if isinstance(default, bool):
            if text.strip().lower() not in ("true", "false"):
                raise wrong("true or false")
            value = text.strip().lower() == "true"
        elif isinstance(default, (int, float)):
            try:
                value = float(text) if isinstance(default, float) else int(text)
            except ValueError:
                raise wrong("an integer" if isinstance(default, int) else "a number") from None
        elif isinstance(default, tuple):
            parts = [part.strip() for part in text.split(",")]
            if text.strip() == "all":
                value = "all"
            elif not all(parts):
                raise wrong("a comma-separated list such as 'user,assistant'")
            else:
                value = tuple(parts)
        out[name] = value
    return out


__all__ = [
    "LOADERS", "LOCOMO_CATEGORIES", "dataset_from_dict", "detect_format", "iter_longmemeval", "load_dataset",
    "load_locomo", "load_longmemeval", "loader_options", "neutral_session_id", "parse_loader_options",
    "sniff_format", "load_native", "locomo_turn_content", "native_schema",
    "parse_locomo_date", "parse_longmemeval_date", "validate_native",
]
