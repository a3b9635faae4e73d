"""The strategy interface lives in ``memlab.strategy`` (core: the memories implement it);
this module re-exports it beside the registry of strategies by name."""

from __future__ import annotations

from ..base import Registry
from ..strategy import Context, Strategy

__all__ = ["Context", "Strategy", "registry"]

#: Built-in and user strategies by name: ``registry.get("hybrid", **params)``.
registry: Registry[Strategy] = Registry("strategy")
