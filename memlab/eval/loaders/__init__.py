"""Dataset loaders: the native JSON format, LoCoMo, LongMemEval and BEAM, and the registry every
format is added to (``memlab.eval.loaders.registry``: one file and one ``register_loader``
call per format; ``datasets/README.md`` has a worked example).

``load_dataset(path)`` detects the format (each registered format's ``detect``, in
registration order; the JSON ones look at a file's shape, an array by its first element
only, so a 278 MB LongMemEval file is not parsed twice); ``format=`` forces one. Files may
be gzip-compressed (``.json.gz``). Format-specific options (``probe_position``,
``include_caption``, ``evidence_roles``, ...) are passed through to the loader of that format.
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Mapping
from typing import Any

from ...base import did_you_mean
from ..dataset import Dataset, DatasetError
from . import beam as _beam  # noqa: F401  (registers the BEAM format)
from .locomo import CATEGORIES as LOCOMO_CATEGORIES
from .locomo import is_locomo, load_locomo, locomo_turn_content, parse_locomo_date
from .longmemeval import (is_longmemeval, iter_longmemeval, load_longmemeval, neutral_session_id,
                          parse_longmemeval_date)
from .native import (
    dataset_from_dict,
    is_native,
    load_native,
    native_schema,
    validate_native,
)
from .registry import Loader, detect_path, get_loader, json_sample, loader_names, register_loader, unregister_loader


def sniff_format(path: str) -> str | None:
    """The registered format whose ``detect`` accepts the file (``detect_path``); None if none."""
    return detect_path(path)


def load_dataset(path: str, format: str | None = None, **options: Any) -> Dataset:
    """Load a dataset file; ``format`` is a registered format's name (``loader_names()``) or
    None (detect).

    ``options`` go to the format's loader (see ``load_locomo``, ``load_longmemeval``);
    an option that loader does not take is an error naming the ones it does.
    """
    path = str(path)
    if not os.path.exists(path):
        raise DatasetError(f"{path}: no such file or folder")
    if format is None:
        format = sniff_format(path)
        if format is None:
            raise DatasetError(f"{path}: cannot tell the format (expected a native object with "
                               f"'dialogues', a LoCoMo list with 'conversation'/'qa', a "
                               f"LongMemEval list with 'question_id'/'haystack_sessions', or another "
                               f"registered format: {', '.join(loader_names())}); pass format=")
    loader = get_loader(format)
    accepted = list(loader.options)
    for name in options:
        if name not in accepted:
            raise DatasetError(did_you_mean(name, accepted, f"option of the {format!r} loader"))
    return loader.load(path, **options)


def loader_options(format: str) -> dict[str, inspect.Parameter]:
    """The options the loader of ``format`` takes, by name (its parameters but the path)."""
    return get_loader(format).options


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
    "LOCOMO_CATEGORIES", "Loader", "dataset_from_dict", "detect_path", "get_loader", "is_locomo",
    "is_longmemeval", "is_native", "iter_longmemeval", "json_sample", "load_dataset", "loader_names",
    "register_loader", "unregister_loader",
    "load_locomo", "load_longmemeval", "loader_options", "neutral_session_id", "parse_loader_options",
    "sniff_format", "load_native", "locomo_turn_content", "native_schema",
    "parse_locomo_date", "parse_longmemeval_date", "validate_native",
]
