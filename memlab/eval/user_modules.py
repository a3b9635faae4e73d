"""Importing a user's Python file (a sweep file's ``imports``, ``memlab eval --import``) so
that its ``@register`` decorators run, once per file; and ``registrations_restored``, which
undoes such imports and every registration made inside it."""

from __future__ import annotations

import hashlib
import importlib.util
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ..base import ConfigError

#: Module names ``import_user_module`` gives the files it imports.
USER_MODULE_PREFIX = "memlab_user_"


def import_user_module(path: str | Path) -> Any:
    """Import a Python file so that its ``@register`` decorators run (once per file); the module."""
    path = Path(path).resolve()
    if not path.is_file():
        raise ConfigError(f"imports: no such file {path}")
    digest = hashlib.sha1(str(path).encode()).hexdigest()[:10]
    name = f"{USER_MODULE_PREFIX}{path.stem}_{digest}"  # two files with one name stay two modules
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


@contextmanager
def registrations_restored() -> Iterator[None]:
    """Leave the process-wide registries as they were: strategies, metrics and dataset formats registered
    inside (directly or by an imported user file) are gone afterwards, replaced ones come
    back, and user files imported inside are forgotten, so that a later import runs their
    registrations again. ``memlab.cli.main`` runs each command in it (a command run
    in-process, by a test or a notebook, leaves nothing behind); the tests run each test in it.
    """
    from ..strategies.registry import registry
    from .loaders import registry as loaders
    from .metrics.registry import metrics_snapshot, restore_metrics

    strategies, metrics, formats = registry.snapshot(), metrics_snapshot(), dict(loaders._LOADERS)
    modules = {name for name in sys.modules if name.startswith(USER_MODULE_PREFIX)}
    try:
        yield
    finally:
        registry.restore(strategies)
        restore_metrics(metrics)
        loaders._LOADERS.clear()
        loaders._LOADERS.update(formats)
        for name in [n for n in sys.modules if n.startswith(USER_MODULE_PREFIX) and n not in modules]:
            del sys.modules[name]
