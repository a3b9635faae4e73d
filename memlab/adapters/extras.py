"""Which extra provides each peer library, and the check that names it when it is missing."""

from __future__ import annotations

import importlib

from ..base import ConfigError

#: Which extra provides which importable module.
EXTRAS = {"camel": "camel", "langchain": "langchain_community"}


def require(extra: str, what: str) -> None:
    """Raise a ConfigError naming the extra to install when its library is missing."""
    module = EXTRAS[extra]
    try:
        importlib.import_module(module)
    except ImportError as exc:
        raise ConfigError(f"{what} needs the {extra!r} extra (the {module} package is not importable: "
                          f"{exc}); install it with: pip install 'memlab[{extra}]'") from None


def available(extra: str) -> bool:
    """Whether the library of ``extra`` ("camel", "langchain") can be imported."""
    try:
        importlib.import_module(EXTRAS[extra])
    except ImportError:
        return False
    return True


#: The extra each adapter needs (None: nothing beyond memlab).
PEER_STRATEGIES: dict[str, str | None] = {"camel_chat_history": "camel", "camel_longterm": "camel",
                                          "langchain_ensemble": "langchain", "http_memory": None}
