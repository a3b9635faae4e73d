"""Lazy public names for packages, so importing memlab never pulls in heavy optional libraries."""

from __future__ import annotations

import importlib
import sys
from typing import Any, Callable


def lazy_exports(package: str, exports: dict[str, str]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``__getattr__`` and ``__dir__`` for ``package``: ``exports`` maps a name to its submodule.

    A name that equals its submodule's name is the submodule itself. Each value is bound
    in the package on first use, so later lookups cost nothing.
    """

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        imported = importlib.import_module(f".{module}", package)
        value = imported if module == name else getattr(imported, name)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        return sorted(exports)

    return __getattr__, __dir__
