"""Strategies: the interface, composition, the built-ins by name, and specs.

    from memlab import strategies
    strategies.names()                      # registered names
    s = strategies.get("hybrid", embedder="minilm")
    s = strategies.build({"name": "bm25", "params": {"retriever__k1": 1.2}})

User code registers its own with ``@strategies.register("name")`` on a class or factory.
"""

from __future__ import annotations

from ..embeddings.named import make_embedder
from ..strategy import Context, Strategy
from . import builtins as _builtins  # noqa: F401 (registers every built-in recipe, with its tags)
from .memory import LongtermStrategy, WindowStrategy
from .published import FlatBM25Strategy
from .reference import FullContextStrategy, OracleStrategy
from .registry import registry
from .retrieval import RetrievalStrategy
from .sessions import SessionStrategy
from .spec import build, build_strategy, get, names, to_spec

register = registry.register
# the peer adapters (CAMEL, LangChain, HTTP services) are in the registry's lazy name table
# (``registry.ADAPTERS``): imported when first built, never by this package

__all__ = ["Context", "FlatBM25Strategy", "FullContextStrategy", "LongtermStrategy", "OracleStrategy", "RetrievalStrategy", "SessionStrategy", "Strategy", "WindowStrategy", "build",
           "build_strategy", "get", "make_embedder", "names", "register", "registry", "to_spec"]
