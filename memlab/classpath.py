"""Classes named by a dotted path, the one way memlab writes a class in a file (strategy
specs, the embedder configuration a chroma collection keeps): ``"package.module.Name"``.

``import_class`` reads that form and the ``"package.module:Name"`` form earlier memlab
versions wrote into chroma collections, so both stay readable.
"""

from __future__ import annotations

import importlib
from typing import Any

from .base import ConfigError


def class_path(cls: type) -> str:
    """``"package.module.Name"`` (a nested class: ``"package.module.Outer.Inner"``)."""
    return f"{cls.__module__}.{cls.__qualname__}"


def import_class(path: str) -> Any:
    """The class ``path`` names: ``"package.module.Name"`` or ``"package.module:Name"``.

    In the dotted form the longest importable prefix is the module and the rest the
    (possibly nested) attribute. A ConfigError names the path when nothing is found.
    """
    if ":" in path:
        module_name, _, attr = path.partition(":")
        candidates = [(module_name, attr)]
    else:
        parts = path.split(".")
        candidates = [(".".join(parts[:i]), ".".join(parts[i:])) for i in range(len(parts) - 1, 0, -1)]
    if not candidates or not all(candidates[0]):
        raise ConfigError(f"class path must be 'package.module.Class', got {path!r}")
    first_error: Exception | None = None
    for module_name, attr in candidates:
        try:
            module = importlib.import_module(module_name)
        except ImportError as exc:
            first_error = first_error or exc
            continue
        value: Any = module
        try:
            for part in attr.split("."):
                value = getattr(value, part)
        except AttributeError:
            raise ConfigError(f"module {module_name!r} has no class {attr!r}") from None
        return value
    module_name = candidates[0][0]
    raise ConfigError(f"cannot import module {module_name!r} for class {path!r}: {first_error}") from None
