"""What the strategy registry can say about a name without running a strategy.

- ``parameter_lines(factory, name)``: a factory's arguments with their defaults, then every
  nested ``--set`` key of the strategy it builds with them (what ``memlab strategies --import``
  prints).
- ``modules_registering(name, folders)``: the ``*.py`` files in ``folders`` whose text
  registers ``name``, read as text and never imported.
- ``check_name(name, folders)``: an unregistered name fails with the registry's did-you-mean
  or, when a file in ``folders`` registers it, with the ``--import`` that loads it.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ..base import Component, ConfigError
from .registry import registry

__all__ = ["check_name", "modules_registering", "parameter_lines"]


def parameter_lines(factory: Any, name: str) -> list[str]:
    """The lines ``memlab strategies --import`` prints for one strategy: the factory's
    arguments with their defaults, then every nested ``--set`` key of the strategy it
    builds with those defaults (its ``get_params``), components shown by class name."""
    lines = ["arguments (--set NAME=VALUE):"]
    try:
        signature = inspect.signature(factory)
    except (TypeError, ValueError):
        signature = None
    if signature is not None:
        for p in signature.parameters.values():
            if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
                lines.append(f"  {'*' if p.kind is p.VAR_POSITIONAL else '**'}{p.name}")
            else:
                default = "(required)" if p.default is p.empty else f"= {p.default!r}"
                lines.append(f"  {p.name} {default}")
    try:
        built = factory()
    except Exception as exc:  # required arguments, or a failing default: the arguments are what we know
        lines.append(f"nested parameters: not shown (building {name} with its defaults failed: "
                     f"{type(exc).__name__}: {exc})")
        return lines
    if isinstance(built, Component):
        lines.append("nested parameters (--set KEY=VALUE):")
        for key, value in built.get_params(deep=True).items():
            shown = f"{type(value).__name__}(...)" if isinstance(value, Component) else repr(value)
            lines.append(f"  {key} = {shown}")
    return lines


def check_name(name: str, folders: Iterable[Path] = ()) -> None:
    """An unregistered strategy name fails before any work, with a did-you-mean and, when a
    ``*.py`` file in ``folders`` registers that name, the ``--import`` that loads it."""
    try:
        registry.factory(name)
    except ConfigError:
        defining = modules_registering(name, folders)
        if defining:
            raise ConfigError(f"unknown strategy {name!r}: {' and '.join(defining)} registers it; add "
                              f"--import {defining[0]}") from None
        raise


def modules_registering(name: str, folders: Iterable[Path]) -> list[str]:
    """The ``*.py`` files of ``folders`` (each file once, however reached) whose text registers
    ``name`` (``register("name")`` in any spelling); read as text, never imported. Paths are
    relative to the current folder where possible."""
    pattern = re.compile(r"""register\(\s*(?:name\s*=\s*)?(['"])""" + re.escape(name) + r"\1")
    found: list[str] = []
    seen: set[Path] = set()
    for folder in folders:
        if not folder.is_dir():
            continue
        for path in sorted(folder.glob("*.py")):
            real = path.resolve()
            if real in seen:
                continue
            seen.add(real)
            try:
                text = path.read_text(encoding="utf-8", errors="replace")
            except OSError:
                continue
            if pattern.search(text):
                try:
                    shown = str(real.relative_to(Path.cwd().resolve()))
                except ValueError:
                    shown = str(real)
                found.append(shown)
    return found
