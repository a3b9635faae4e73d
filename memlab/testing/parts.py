"""``hidden_parts``: the parts a component holds without exposing them as parameters, and the
``parts_are_parameters`` check that every strategy and retriever check suite runs."""

from __future__ import annotations

import inspect
from typing import Any, Iterator

from ..base import Component
from ..retrieval.base import Retriever
from ..strategy import Strategy


def hidden_parts(component: Component) -> list[str]:
    """The parts ``component`` (or any component in its configuration) holds without exposing
    them as parameters, so that ``get_params``, ``clone`` and ``set_params`` cannot see them;
    one line each, e.g. ``"NextTurn.inner holds a BM25Retriever (public attribute, not a
    parameter)"``. Empty when every part is a parameter.

    A part is a Component held in an attribute (directly or in a list, tuple or dict). It is
    fine when it is one of the parameters' components. Otherwise:

    - held in a public attribute: hidden (the contract: public attributes are the
      constructor arguments, derived state lives in ``_``-attributes);
    - a ``Retriever`` or ``Strategy`` in a private attribute: hidden unless it is derived,
      i.e. it stands in for a parameter that is None (built by ``_resolve``, or accepted by
      that parameter's ``constraints``), wraps a component of the parameters (a chain
      around the retriever) or is built from the owner's parameters: each of its own parameters is at its default or equals the
      owner's parameter of the same name, and at least one is passed that way (so
      ``set_params`` of that name rebuilds it). A retriever built with its defaults only,
      or with a value typed into ``__init__``, is a hidden part: make it a parameter.

    Other private parts (token counters, context builders) are derived state.
    """
    problems: list[str] = []
    for owner in [component, *component.components()]:
        params = owner._param_names()
        reach = {id(owner)} | {id(c) for c in owner.components()}
        # defaults Component._resolve built for None parameters
        reach |= {id(c) for _, c in _held(vars(owner).get("_defaults", {}), "_defaults")}
        for attr, value in vars(owner).items():
            if attr in params or attr == "_defaults":
                continue
            for where, part in _held(value, attr):
                if id(part) in reach:
                    continue
                if not attr.startswith("_"):
                    problems.append(f"{type(owner).__name__}.{where} holds a {type(part).__name__} "
                                    f"(public attribute, not a parameter)")
                elif isinstance(part, (Retriever, Strategy)) and not (
                        _stands_in(owner, value) or any(id(c) in reach for c in part.components())
                        or _built_from_params(owner, part)):
                    problems.append(f"{type(owner).__name__}.{where} holds a {type(part).__name__} "
                                    f"built in __init__, not from its parameters")
    return problems


def _held(value: Any, name: str, depth: int = 0) -> Iterator[tuple[str, Component]]:
    if isinstance(value, Component):
        yield name, value
    elif depth < 2 and isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            yield from _held(item, f"{name}[{i}]", depth + 1)
    elif depth < 2 and isinstance(value, dict):
        for key, item in value.items():
            yield from _held(item, f"{name}[{key!r}]", depth + 1)


def _stands_in(owner: Component, value: Any) -> bool:
    """``value`` (a part, or a list of parts) is the default of a parameter of ``owner`` that is
    None, declared in ``constraints`` as accepting it."""
    if not isinstance(value, (Component, list, tuple)):
        return False
    for name in owner._param_names():
        spec = type(owner)._constraints.get(name)
        if getattr(owner, name) is None and spec is not None and spec.kind is not None and spec.accepts(value):
            return True
    return False


def _same(a: Any, b: Any) -> bool:
    if a is b:
        return True
    try:
        return bool(a == b)
    except Exception:
        return False


def _built_from_params(owner: Component, part: Component) -> bool:
    mine = {name: getattr(owner, name) for name in owner._param_names()}
    defaults = inspect.signature(type(part).__init__).parameters
    passed = 0
    for name in part._param_names():
        value = getattr(part, name)
        if name in mine and _same(mine[name], value):
            passed += 1
        elif not (defaults[name].default is not inspect.Parameter.empty and _same(defaults[name].default, value)):
            return False
    return passed > 0


def check_parts(c: Component) -> None:
    problems = hidden_parts(c)
    assert not problems, (f"{'; '.join(problems)}: get_params, clone and set_params cannot see "
                          f"{'it' if len(problems) == 1 else 'them'}; take each part as a constructor "
                          f"argument stored under its own name")


__all__ = ["check_parts", "hidden_parts"]
