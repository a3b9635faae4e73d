"""The registry of strategies by name (the interface itself is ``memlab.strategy``)."""

from __future__ import annotations

from ..registry import Registry
from ..strategy import Strategy

__all__ = ["ADAPTERS", "TAGS", "registry"]

#: What a strategy's tags say (``registry.names(tag="builtin")``). The built-in recipes are
#: registered, with their tags, in one module: ``memlab.strategies.builtins``.
TAGS = {
    "builtin": "one of memlab's memory strategies: experiments/compare_builtins.toml runs every one",
    "reference": "not a memory but a yardstick (the gold turns, everything observed): run beside the built-ins",
    "published": "a published system's retriever, reproduced as its authors run it",
    "adapter": "a peer library's memory behind memlab's interface; needs that library (an extra)",
    "offline": "runs with what memlab installs, no network and no model download",
}

#: Built-in and user strategies by name: ``registry.get("hybrid", **params)``.
registry: Registry[Strategy] = Registry("strategy", tags=TAGS)

#: The peer adapters (CAMEL, LangChain, HTTP services) by name -> "module:factory": looked up
#: lazily, so the registry never imports ``memlab.adapters`` (which imports strategies) and
#: each adapter imports its library only when built.
ADAPTERS = {name: f"memlab.adapters.recipes:{name}"
            for name in ("camel_chat_history", "camel_longterm", "langchain_ensemble", "http_memory")}
for _name, _target in ADAPTERS.items():
    registry.register_lazy(_name, _target, tags=("adapter",))
