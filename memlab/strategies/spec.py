"""Build strategies (and any component) from plain dicts, as read from TOML or JSON.

Two forms, freely nested:

- a registered name with parameters::

      {"name": "hybrid", "params": {"embedder": "minilm", "retriever__weights": [0.8, 0.2]}}

  Parameters the registered factory accepts go to it; the rest are applied with
  ``set_params``, so nested keys (``decay__strength_growth``) reach inner components.
- a class path with constructor arguments, any of which may itself be a spec::

      {"class": "memlab.retrieval.HybridRetriever",
       "params": {"retrievers": [{"class": "memlab.retrieval.BM25Retriever"}]}}

A bare string is a registered name. ``to_spec`` turns a component back into the class
form, so a configuration can be saved beside its results and rebuilt exactly.
"""

from __future__ import annotations

import inspect
from typing import Any, Mapping

from ..base import Component, ConfigError, did_you_mean
from ..classpath import class_path, import_class
from ..strategy import Strategy
from .registry import registry


def build(spec: Any) -> Any:
    """Build the object a spec describes (a string builds a registered strategy)."""
    if isinstance(spec, Component):
        return spec
    if isinstance(spec, str):
        return registry.get(spec)
    if isinstance(spec, Mapping):
        if "name" in spec and "class" in spec:
            raise ConfigError("a spec has either 'name' or 'class', not both")
        unknown = set(spec) - {"name", "class", "params", "label"}
        if unknown and ("name" in spec or "class" in spec):
            raise ConfigError(f"unknown key(s) {sorted(unknown)} in spec; expected name or class, "
                              f"params, label")
        params = spec.get("params", {}) or {}
        if not isinstance(params, Mapping):
            raise ConfigError(f"spec 'params' must be a table/dict, got {type(params).__name__}")
        if "name" in spec:
            return build_named(str(spec["name"]), params)
        if "class" in spec:
            cls = import_class(str(spec["class"]))
            return cls(**{k: _build_value(v) for k, v in params.items()})
    raise ConfigError(f"cannot build a component from {spec!r}: expected a strategy name, "
                      f"{{'name': ..., 'params': ...}} or {{'class': ..., 'params': ...}}")


def build_strategy(spec: Any) -> Strategy:
    strategy = build(spec)
    if not isinstance(strategy, Strategy):
        raise ConfigError(f"spec built a {type(strategy).__name__}, not a Strategy")
    return strategy


def build_named(name: str, params: Mapping[str, Any]) -> Strategy:
    factory = registry.factory(name)
    accepted = _accepted_args(factory)
    direct = {k: _build_value(v) for k, v in params.items() if k in accepted}
    rest = {k: _build_value(v) for k, v in params.items() if k not in accepted}
    strategy = factory(**direct)
    if rest:
        known = sorted(accepted | set(strategy._param_names()))
        for key in rest:
            if key.partition("__")[0] not in known:
                raise ConfigError(did_you_mean(key, known, f"parameter of strategy {name!r}"))
        strategy.set_params(**rest)
    return strategy


def to_spec(obj: Any) -> Any:
    """The class-form spec of a component (values that are components become specs too)."""
    if isinstance(obj, Component):
        cls = type(obj)
        return {"class": class_path(cls),
                "params": {k: to_spec(v) for k, v in obj.get_params(deep=False).items()}}
    if isinstance(obj, (list, tuple)):
        return [to_spec(v) for v in obj]
    if isinstance(obj, dict):
        return {k: to_spec(v) for k, v in obj.items()}
    return obj


def _build_value(value: Any) -> Any:
    if isinstance(value, Mapping) and ("class" in value or "name" in value):
        return build(value)
    if isinstance(value, list):
        return [_build_value(v) for v in value]
    return value


def _accepted_args(factory: Any) -> set[str]:
    target = factory.__init__ if inspect.isclass(factory) else factory
    params = inspect.signature(target).parameters
    return {n for n, p in params.items() if n != "self" and p.kind not in (p.VAR_POSITIONAL,)}


def get(name: str, **params: Any) -> Strategy:
    """Build the strategy registered as ``name`` (factory arguments or nested set_params keys)."""
    return build_named(name, params)


def names() -> list[str]:
    """The registered strategy names, sorted."""
    return registry.names()
