"""Kept for code that imports from here: the strategy interface is ``memlab.strategy`` and
the registry ``memlab.strategies.registry``. Nothing in memlab imports this module."""

from __future__ import annotations

from ..strategy import Context, Strategy
from .registry import registry

__all__ = ["Context", "Strategy", "registry"]
