"""The registry of strategies by name (the interface itself is ``memlab.strategy``)."""

from __future__ import annotations

from ..base import Registry
from ..strategy import Strategy

__all__ = ["ADAPTERS", "registry"]

#: Built-in and user strategies by name: ``registry.get("hybrid", **params)``.
registry: Registry[Strategy] = Registry("strategy")

#: The peer adapters (CAMEL, LangChain, HTTP services) by name -> "module:factory": looked up
#: lazily, so the registry never imports ``memlab.adapters`` (which imports strategies) and
#: each adapter imports its library only when built.
ADAPTERS = {name: f"memlab.adapters.recipes:{name}"
            for name in ("camel_chat_history", "camel_longterm", "langchain_ensemble", "http_memory")}
for _name, _target in ADAPTERS.items():
    registry.register_lazy(_name, _target)
