"""Configuration as constructor: the Component base class and name registries.

A component's constructor arguments are its whole configuration. Each argument is
stored unchanged on an attribute of the same name, so ``get_params`` can read the
configuration back, ``set_params`` can change it (with ``outer__inner`` keys reaching
nested components) and ``clone`` can build a fresh, unused copy. Sweeps and result
tables use these to record every parameter without extra code.
"""

from __future__ import annotations

import copy
import difflib
import inspect
from abc import ABCMeta, abstractmethod
from collections.abc import Sequence
from typing import Any, Callable, Generic, Iterator, TypeVar

C = TypeVar("C", bound="Component")
T = TypeVar("T")


class MemlabError(ValueError):
    """An error in input or configuration, with a message meant for a person."""


class ConfigError(MemlabError):
    """A parameter, name or specification is not what was expected."""


def did_you_mean(name: str, available: list[str] | tuple[str, ...], what: str) -> str:
    """A readable message for an unknown ``name`` among ``available`` ones."""
    close = difflib.get_close_matches(name, list(available), n=1)
    hint = f" Did you mean {close[0]!r}?" if close else ""
    listing = ", ".join(sorted(available)) or "(none)"
    return f"unknown {what} {name!r}.{hint} Available: {listing}"


class Component(metaclass=ABCMeta):
    """Base for every configurable memlab object (scikit-learn style).

    Subclasses must store each ``__init__`` argument unchanged as ``self.<name>``
    and keep derived state in attributes whose names start with ``_``.
    """

    @classmethod
    def _param_names(cls) -> list[str]:
        init = cls.__init__
        if init is object.__init__:
            return []
        sig = inspect.signature(init)
        names = []
        for p in sig.parameters.values():
            if p.name == "self":
                continue
            if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
                raise TypeError(f"{cls.__name__}.__init__ must not take *args or **kwargs")
            names.append(p.name)
        return names

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """The constructor arguments; with ``deep``, also ``name__sub`` for nested components."""
        out: dict[str, Any] = {}
        for name in self._param_names():
            value = getattr(self, name)
            out[name] = value
            if deep and isinstance(value, Component):
                for sub, sub_value in value.get_params(deep=True).items():
                    out[f"{name}__{sub}"] = sub_value
            elif deep and isinstance(value, (list, tuple)):
                for i, item in enumerate(value):
                    if isinstance(item, Component):
                        for sub, sub_value in item.get_params(deep=True).items():
                            out[f"{name}__{i}__{sub}"] = sub_value
        return out

    def set_params(self: C, **params: Any) -> C:
        """Set parameters; ``outer__inner`` reaches a nested component. Returns self.

        All or nothing: if a name is unknown or validation (``_on_params_changed``,
        here or in a nested component) fails, every changed value is put back and the
        error is raised, so a failed call leaves the configuration as it was.
        """
        valid = self._param_names()
        direct: dict[str, Any] = {}
        nested: dict[str, dict[str, Any]] = {}
        for key, value in params.items():
            head, sep, rest = key.partition("__")
            if head not in valid:
                raise ConfigError(did_you_mean(head, valid, f"parameter of {type(self).__name__}"))
            if sep:
                nested.setdefault(head, {})[rest] = value
            else:
                direct[head] = value
        undo: list[Callable[[], None]] = []
        try:
            for head, value in direct.items():
                old = getattr(self, head)
                undo.append(lambda head=head, old=old: setattr(self, head, old))
                setattr(self, head, value)
            for head, sub in nested.items():
                target = getattr(self, head)
                if isinstance(target, (list, tuple)):
                    for key, value in sub.items():
                        index, _, rest = key.partition("__")
                        if not index.isdigit() or int(index) >= len(target):
                            raise ConfigError(f"{head}__{key}: expected {head}__<index>__<param> "
                                              f"with index < {len(target)}")
                        _set_nested(target[int(index)], {rest: value}, undo)
                elif isinstance(target, Component):
                    _set_nested(target, sub, undo)
                else:
                    raise ConfigError(f"parameter {head!r} of {type(self).__name__} is "
                                      f"{type(target).__name__}, not a component; cannot set {list(sub)}")
            self._on_params_changed()
        except Exception:
            for step in reversed(undo):
                step()
            if undo:
                self._on_params_changed()  # rebuild derived state from the restored values
            raise
        return self

    def _on_params_changed(self) -> None:
        """Hook for subclasses that validate or derive state from parameters."""

    def components(self) -> Iterator[Component]:
        """Every component in this one's configuration, depth first, self excluded (a
        parameter that is a component, or a list/tuple/dict holding components)."""
        for name in self._param_names():
            yield from _components_in(getattr(self, name))

    def clone(self: C) -> C:
        """A fresh copy with the same configuration and none of the state."""
        params = {}
        for name in self._param_names():
            params[name] = _clone_value(getattr(self, name))
        return type(self)(**params)

    def __repr__(self) -> str:
        sig = inspect.signature(type(self).__init__)
        parts = []
        for name in self._param_names():
            value = getattr(self, name)
            default = sig.parameters[name].default
            try:
                same = default is not inspect.Parameter.empty and bool(value == default)
            except Exception:
                same = False
            if not same:
                parts.append(f"{name}={value!r}")
        return f"{type(self).__name__}({', '.join(parts)})"


def _set_nested(target: Component, sub: dict[str, Any], undo: list[Callable[[], None]]) -> None:
    """``target.set_params(**sub)``, recording how to put the old values back."""
    before = target.get_params(deep=True)
    old = {key: before[key] for key in sub if key in before}
    target.set_params(**sub)
    undo.append(lambda: target.set_params(**old))


def _components_in(value: Any) -> Iterator[Component]:
    if isinstance(value, Component):
        yield value
        yield from value.components()
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _components_in(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _components_in(item)


class Warmable(metaclass=ABCMeta):
    """A part that can prepare for texts in bulk before they arrive one by one
    (``Strategy.warm`` calls it; e.g. a persistent embedding cache)."""

    @abstractmethod
    def warm(self, texts: Sequence[str], queries: Sequence[str] = ()) -> int:
        """Prepare for ``texts`` (what will be stored) and ``queries`` (what will be asked:
        e5/bge-style embedders embed them differently); returns how many were prepared."""


def _clone_value(value: Any) -> Any:
    if isinstance(value, Component):
        return value.clone()
    if isinstance(value, list):
        return [_clone_value(v) for v in value]
    if isinstance(value, tuple):
        return tuple(_clone_value(v) for v in value)
    if isinstance(value, dict):
        return {k: _clone_value(v) for k, v in value.items()}
    try:
        return copy.deepcopy(value)
    except Exception:  # objects that cannot be copied (clients, locks) are shared
        return value




class Registry(Generic[T]):
    """Named factories of one kind, looked up with a helpful error on a typo."""

    def __init__(self, kind: str):
        self.kind = kind
        self._items: dict[str, Callable[..., T]] = {}

    def register(self, name: str, factory: Callable[..., T] | None = None, *, overwrite: bool = False):
        """Register ``factory`` under ``name``; usable as a decorator."""

        def add(f: Callable[..., T]) -> Callable[..., T]:
            if name in self._items and not overwrite and self._items[name] is not f:
                raise ConfigError(f"{self.kind} {name!r} is already registered")
            self._items[name] = f
            return f

        return add(factory) if factory is not None else add

    def get(self, name: str, **params: Any) -> T:
        """Build the item registered under ``name`` with ``params``."""
        return self.factory(name)(**params)

    def factory(self, name: str) -> Callable[..., T]:
        if name not in self._items:
            raise ConfigError(did_you_mean(name, list(self._items), self.kind))
        return self._items[name]

    def names(self) -> list[str]:
        return sorted(self._items)

    def __contains__(self, name: object) -> bool:
        return name in self._items

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())
