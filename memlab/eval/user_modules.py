"""Importing a user's Python file (a sweep file's ``imports``, ``memlab eval --import``) so
that its ``@register`` decorators run, once per file."""

from __future__ import annotations

import hashlib
import importlib.util
import sys
from pathlib import Path
from typing import Any

from ..base import ConfigError


def import_user_module(path: str | Path) -> Any:
    """Import a Python file so that its ``@register`` decorators run (once per file); the module."""
    path = Path(path).resolve()
    if not path.is_file():
        raise ConfigError(f"imports: no such file {path}")
    digest = hashlib.sha1(str(path).encode()).hexdigest()[:10]
    name = f"memlab_user_{path.stem}_{digest}"  # two files with one name stay two modules
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ConfigError(f"imports: cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except SyntaxError as exc:
        del sys.modules[name]
        raise ConfigError(f"{path}:{exc.lineno}: syntax error: {exc.msg}") from None
    except Exception as exc:
        del sys.modules[name]
        raise ConfigError(f"{path}: importing it failed: {type(exc).__name__}: {exc}") from None
    # Let joblib's process workers unpickle its classes without importing the file: loky
    # pickles with the cloudpickle package (joblib >= 1.5), older joblibs with their own copy.
    for name in ("cloudpickle", "joblib.externals.cloudpickle"):
        try:
            importlib.import_module(name).register_pickle_by_value(module)
        except (ImportError, AttributeError, ValueError):
            pass
    return module
