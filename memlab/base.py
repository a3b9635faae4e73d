"""Configuration as constructor: the Component base class, its parameter constraints and errors.

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
import math
import numbers
from abc import ABCMeta, abstractmethod
from collections.abc import Sequence
from typing import Any, Callable, ClassVar, Iterator, TypeVar

C = TypeVar("C", bound="Component")


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


class Param:
    """The constraint on one parameter, declared once in a class's ``constraints``.

    ``kind``: a type or tuple of types the value must be (``int`` never accepts a bool;
    ``float`` accepts ints too); ``ge``/``gt``/``le``/``lt``: bounds; ``choices``: the
    allowed values; ``none``: None is allowed (and stored as given); ``finite``: numbers
    must be finite; ``nonempty``: a string or sequence must have at least one item;
    ``each``: the value is a list or tuple whose every item the given ``Param`` accepts;
    ``test``: a further predicate the value must pass (give ``expected`` with it);
    ``secret``: the error names the refused value's type only, never the value (keys).
    ``expected`` overrides the generated description used in the error.
    """

    def __init__(self, kind: type | tuple[type, ...] | None = None, *, ge: float | None = None,
                 gt: float | None = None, le: float | None = None, lt: float | None = None,
                 choices: Sequence[Any] | None = None, none: bool = False, finite: bool = False,
                 nonempty: bool = False, each: Param | None = None,
                 test: Callable[[Any], bool] | None = None, secret: bool = False,
                 expected: str | None = None):
        if each is not None and kind is None:
            kind = (list, tuple)
        self.kind = kind
        self.finite = finite
        self.nonempty = nonempty
        self.each = each
        self.test = test
        self.secret = secret
        self.ge, self.gt, self.le, self.lt = ge, gt, le, lt
        self.choices = tuple(choices) if choices is not None else None
        self.none = none
        self._expected = expected

    def _kinds(self) -> tuple[type, ...]:
        if self.kind is None:
            return ()
        return self.kind if isinstance(self.kind, tuple) else (self.kind,)

    @property
    def expected(self) -> str:
        if self._expected is not None:
            return self._expected
        if self.choices is not None:
            text = "one of " + ", ".join(repr(c) for c in self.choices)
        else:
            number = "a finite number" if self.finite else "a number"
            names = [{int: "an int", float: number, str: "a string", bool: "a bool"}.get(
                k, ("an " if k.__name__[:1] in "AEIOU" else "a ") + k.__name__)
                     for k in self._kinds()]
            if self.kind == (list, tuple):
                names = ["a list"]
            text = " or ".join(names) or "a value"
            if self.nonempty:
                text = "a non-empty " + text.removeprefix("an ").removeprefix("a ")
            if self.each is not None:
                text += f" of items each {self.each.expected}"
            bounds = [f"{op} {b:g}" for op, b in ((">=", self.ge), (">", self.gt), ("<=", self.le), ("<", self.lt))
                      if b is not None]
            if bounds:
                text += " " + " and ".join(bounds)
        return text + (" or None" if self.none else "")

    def accepts(self, value: Any) -> bool:
        if value is None:
            return self.none
        if self.choices is not None:
            return any(value == c and type(value) is type(c) for c in self.choices)
        kinds = self._kinds()
        if kinds:
            if isinstance(value, bool) and bool not in kinds:
                return False
            numeric = float in kinds and isinstance(value, numbers.Real)
            if not numeric and not isinstance(value, kinds):
                return False
        if self.finite and isinstance(value, numbers.Real) and not math.isfinite(value):
            return False
        if self.nonempty and not len(value):
            return False
        if self.each is not None and not all(self.each.accepts(item) for item in value):
            return False
        if self.test is not None and not self.test(value):
            return False
        try:
            return ((self.ge is None or value >= self.ge) and (self.gt is None or value > self.gt)
                    and (self.le is None or value <= self.le) and (self.lt is None or value < self.lt))
        except TypeError:
            return False

    def check(self, owner: str, name: str, value: Any) -> None:
        if not self.accepts(value):
            given = f"a {type(value).__name__}" if self.secret else repr(value)
            raise ConfigError(f"{owner} parameter {name!r}: expected {self.expected}, got {given}")


#: (class, its __init__) -> constructor parameter names (``Component._param_names``).
_PARAM_NAMES: dict[tuple[type, Any], tuple[str, ...]] = {}


class Component(metaclass=ABCMeta):
    """Base for every configurable memlab object (scikit-learn style).

    Subclasses must store each ``__init__`` argument unchanged as ``self.<name>``
    and keep derived state in attributes whose names start with ``_``.

    ``constraints`` declares, once, what each parameter accepts (``Param``); every
    assignment of a declared parameter (in ``__init__`` and ``set_params``) is checked
    before the value is stored, and a refused value raises ``ConfigError`` naming the
    class, the parameter, what was expected and what was given. Subclasses add to
    their bases' constraints.
    """

    constraints: ClassVar[dict[str, Param]] = {}
    _constraints: ClassVar[dict[str, Param]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        merged: dict[str, Param] = {}
        for klass in reversed(cls.__mro__):
            merged.update(klass.__dict__.get("constraints", {}))
        cls._constraints = merged

    def __setattr__(self, name: str, value: Any) -> None:
        if name[:1] != "_":
            spec = type(self)._constraints.get(name)
            if spec is not None:
                spec.check(type(self).__name__, name, value)
        object.__setattr__(self, name, value)

    @classmethod
    def _param_names(cls) -> list[str]:
        init = cls.__init__
        if init is object.__init__:
            return []
        known = _PARAM_NAMES.get((cls, init))  # inspect.signature costs ~40 us; set_params asks often
        if known is not None:
            return list(known)
        sig = inspect.signature(init)
        names = []
        for p in sig.parameters.values():
            if p.name == "self":
                continue
            if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
                raise TypeError(f"{cls.__name__}.__init__ must not take *args or **kwargs")
            names.append(p.name)
        _PARAM_NAMES[(cls, init)] = tuple(names)
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

        Derived state follows: a class that overrides ``_on_params_changed`` rebuilds it
        there; any other class is rebuilt by running its constructor again with the new
        values (``_rebuild``), so parts it builds in ``__init__`` from its parameters (a
        retriever built from ``k1``) follow them, and, like every strategy after
        ``set_params``, it starts afresh. Nested keys rebuild the inner component and then
        every component above it on the path.

        All or nothing: if a name is unknown or validation (``_on_params_changed``,
        here or in a nested component) fails, every changed value is put back and the
        error is raised, so a failed call leaves the configuration as it was.
        """
        if not params and type(self)._on_params_changed is Component._on_params_changed:
            return self  # nothing to rebuild from
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
            self._params_changed()
        except Exception:
            for step in reversed(undo):
                step()
            if undo:
                self._params_changed()  # rebuild derived state from the restored values
            raise
        return self

    def _on_params_changed(self) -> None:
        """Hook for subclasses that validate or derive state from parameters. A class that
        overrides it rebuilds its derived state here (and keeps whatever state it chooses);
        a class that does not is rebuilt by ``set_params`` through its constructor."""

    def _params_changed(self) -> None:
        if type(self)._on_params_changed is Component._on_params_changed:
            self._rebuild()
        else:
            self._on_params_changed()

    def _rebuild(self) -> None:
        """Run the constructor again on this object with its current parameter values: what
        ``__init__`` builds from them (sub-components, indexes) is built again, state included."""
        type(self).__init__(self, **{name: getattr(self, name) for name in self._param_names()})

    def _resolve(self, name: str, factory: Callable[[], Any]) -> Any:
        """The parameter ``name``, or, while it is None, a default built once by ``factory``
        (None is stored as given; the default is state, resolved where it is used)."""
        value = getattr(self, name)
        if value is not None:
            return value
        cache = self.__dict__.setdefault("_defaults", {})
        if name not in cache:
            cache[name] = factory()
        return cache[name]

    def components(self) -> Iterator[Component]:
        """Every component in this one's configuration, depth first, self excluded (a
        parameter that is a component, or a list/tuple/dict holding components)."""
        for name in self._param_names():
            yield from _components_in(getattr(self, name))

    def clone(self: C, scope: str | None = None) -> C:
        """A fresh copy with the same configuration and none of the state.

        Nested components are cloned too. A ``Resource`` (data kept outside the process: a
        SQLite file, a Chroma collection) is never shared: the copy gets its own, empty
        namespace of the same resource, named ``scope`` (the replay passes the dialogue id)
        or, without one, numbered per original (``clone-1``, ``clone-2``, ...).
        """
        return type(self)(**self._cloned_params(scope))

    def _cloned_params(self, scope: str | None = None) -> dict[str, Any]:
        return {name: _clone_value(getattr(self, name), scope) for name in self._param_names()}

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


class Resource(metaclass=ABCMeta):
    """A component whose data lives outside the process (a file, a database collection),
    divided into namespaces. Cloning never shares that data: ``Component.clone`` calls
    ``scoped`` for a copy bound to a namespace of its own, emptied first (it is memlab's)."""

    _clones: int = 0

    @abstractmethod
    def scoped(self, scope: str) -> Resource:
        """The same configuration bound to the namespace ``scope`` below this one's, empty."""

    def clone(self, scope: str | None = None) -> Any:
        if scope is None:
            self._clones = self._clones + 1
            scope = f"clone-{self._clones}"
        return self.scoped(scope)


def _clone_value(value: Any, scope: str | None = None) -> Any:
    if isinstance(value, Component):
        return value.clone(scope)
    if isinstance(value, list):
        return [_clone_value(v, scope) for v in value]
    if isinstance(value, tuple):
        return tuple(_clone_value(v, scope) for v in value)
    if isinstance(value, dict):
        return {k: _clone_value(v, scope) for k, v in value.items()}
    try:
        return copy.deepcopy(value)
    except Exception:  # objects that cannot be copied (clients, locks) are shared
        return value
