"""Strategies: the interface, composition, the built-ins by name, and specs.

    from memlab import strategies
    strategies.names()                      # registered names
    s = strategies.get("hybrid", embedder="minilm")
    s = strategies.build({"name": "bm25", "params": {"retriever__k1": 1.2}})

User code registers its own with ``@strategies.register("name")`` on a class or factory.
"""

from __future__ import annotations

from .base import Context, Strategy, registry
from .builtins import get, make_embedder, names
from .memory import LongtermStrategy, WindowStrategy
from .reference import FullContextStrategy, OracleStrategy
from .retrieval import RetrievalStrategy
from .sessions import SessionStrategy  # registers bm25_sessions
from .spec import build, build_strategy, to_spec

register = registry.register

# the peer adapters (CAMEL, LangChain, HTTP services) register their names; each imports
# its library only when built
from .. import adapters as _adapters  # noqa: E402,F401

__all__ = ["Context", "FullContextStrategy", "LongtermStrategy", "OracleStrategy", "RetrievalStrategy", "SessionStrategy", "Strategy", "WindowStrategy", "build",
           "build_strategy", "get", "make_embedder", "names", "register", "registry", "to_spec"]
