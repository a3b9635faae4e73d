"""memlab._compat: every old import path still resolves, to the object at its new home, with a
DeprecationWarning that names the home; no old path is left as a file in memlab/."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest

from memlab import _compat

PACKAGE = Path(__file__).resolve().parents[1] / "memlab"


def _forget(name: str) -> None:
    sys.modules.pop(name, None)
    parent, _, child = name.rpartition(".")
    if parent in sys.modules and child in vars(sys.modules[parent]):
        delattr(sys.modules[parent], child)


@pytest.mark.parametrize("old", sorted(_compat.MOVED_MODULES))
def test_an_old_module_path_resolves_with_a_warning(old: str) -> None:
    assert not PACKAGE.parent.joinpath(*old.split(".")).with_suffix(".py").exists(), f"{old} is a file again"
    target = _compat.MOVED_MODULES[old]
    _forget(old)
    with pytest.warns(DeprecationWarning, match=f"{old}"):
        module = importlib.import_module(old)
        if isinstance(target, str):
            assert module is importlib.import_module(target)
        else:
            for name, home in target.items():
                assert getattr(module, name) is getattr(importlib.import_module(home), name)
    _forget(old)


@pytest.mark.parametrize("module,name", [(m, n) for m, names in sorted(_compat.MOVED_NAMES.items())
                                         for n in sorted(names)])
def test_an_old_name_resolves_with_a_warning(module: str, name: str) -> None:
    home = _compat.MOVED_NAMES[module][name]
    with pytest.warns(DeprecationWarning, match=f"{module}.{name} is deprecated: import it from {home}"):
        value = getattr(importlib.import_module(module), name)
    assert value is getattr(importlib.import_module(home), name)


def test_other_names_still_fail() -> None:
    with pytest.raises(ImportError):
        from memlab.eval.replay import no_such_name  # noqa: F401
    with pytest.raises(AttributeError):
        importlib.import_module("memlab.llm").no_such_name
