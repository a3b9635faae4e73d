"""OpenAIEmbedder: embeddings from any OpenAI-compatible ``/embeddings`` endpoint.

Uses the official ``openai`` client, created on the first request (the constructor never
touches the network). ``base_url`` and ``api_key`` fall back to the ``OPENAI_BASE_URL``
and ``OPENAI_API_KEY`` environment variables. Texts are sent ``batch_size`` at a time;
the client retries failed requests ``max_retries`` times (with its own backoff) and
waits at most ``timeout`` seconds for each.
"""

from __future__ import annotations

import json
import os
import threading
from typing import Any

import numpy as np

from ..base import MemlabError, Param
from ..secrets import Secret, as_secret, reveal
from .base import Embedder

KNOWN_DIMS = {"text-embedding-3-small": 1536, "text-embedding-3-large": 3072,
              "text-embedding-ada-002": 1536}


class OpenAIEmbedder(Embedder):
    """Vectors from ``model`` (``dimensions`` asks models that support it for shorter ones).

    ``dim`` is ``dimensions``, else the model's known size, else learned from the first
    answer (asking for it before any ``embed`` sends a one-text request). Empty or
    whitespace-only texts get the zero vector without a request, because the API
    rejects empty input. ``identity()`` names model, dimensions and the effective
    base_url; key, timeout, retries and batch size do not change the vectors.
    """

    constraints = {
        "model": Param(str, nonempty=True),
        "api_key": Param((str, Secret), none=True, secret=True, expected="a string or None"),
        "dimensions": Param(int, ge=1, none=True),
        "timeout": Param(float, gt=0),
        "max_retries": Param(int, ge=0),
        "batch_size": Param(int, ge=1),
    }

    def __init__(self, model: str = "text-embedding-3-small", base_url: str | None = None,
                 api_key: str | None = None, dimensions: int | None = None, timeout: float = 30.0,
                 max_retries: int = 2, batch_size: int = 256):
        self.model = model
        self.base_url = base_url
        self.api_key = api_key
        self.dimensions = dimensions
        self.timeout = timeout
        self.max_retries = max_retries
        self.batch_size = batch_size
        self._on_params_changed()

    def _on_params_changed(self) -> None:
        self.api_key = as_secret(self.api_key)  # never printed, logged or written (memlab.secrets)
        self._client: Any = None
        self._client_lock = threading.Lock()
        self._dim: int | None = self.dimensions or KNOWN_DIMS.get(self.model)

    # pickling (joblib workers): the HTTP client and its lock are made again on first use
    def __getstate__(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k not in ("_client", "_client_lock")}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._client, self._client_lock = None, threading.Lock()

    # -- configuration ----------------------------------------------------------------
    def effective_base_url(self) -> str | None:
        return self.base_url or os.environ.get("OPENAI_BASE_URL") or None

    def identity(self) -> str:
        return "OpenAIEmbedder:" + json.dumps({"model": self.model, "dimensions": self.dimensions,
                                               "base_url": self.effective_base_url()}, sort_keys=True)

    @property
    def client(self) -> Any:
        """The ``openai.OpenAI`` client (created on first use)."""
        with self._client_lock:
            if self._client is None:
                import openai

                api_key = reveal(self.api_key) or os.environ.get("OPENAI_API_KEY")
                if not api_key:
                    raise MemlabError("OpenAIEmbedder needs an API key: pass api_key= or set OPENAI_API_KEY")
                self._client = openai.OpenAI(base_url=self.effective_base_url(), api_key=api_key,
                                             timeout=float(self.timeout), max_retries=self.max_retries)
            return self._client

    @property
    def dim(self) -> int:
        if self._dim is None:
            self._request(["dimension probe"])
        assert self._dim is not None
        return self._dim

    # -- requests ---------------------------------------------------------------------
    def _embed(self, texts: list[str]) -> np.ndarray:
        send = [n for n, text in enumerate(texts) if text.strip()]
        rows: list[np.ndarray] = []
        for start in range(0, len(send), self.batch_size):
            rows.extend(self._request([texts[n] for n in send[start:start + self.batch_size]]))
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for n, row in zip(send, rows):
            out[n] = row
        return out

    def _request(self, batch: list[str]) -> list[np.ndarray]:
        import openai

        extra = {"dimensions": self.dimensions} if self.dimensions else {}
        try:
            response = self.client.embeddings.create(model=self.model, input=batch, **extra)
        except openai.OpenAIError as exc:
            raise MemlabError(
                f"OpenAIEmbedder(model={self.model!r}): embeddings request to "
                f"{self.effective_base_url() or 'the default OpenAI endpoint'} failed "
                f"(after up to {self.max_retries} retries): {type(exc).__name__}: {exc}") from exc
        data = sorted(response.data, key=lambda d: d.index)
        if len(data) != len(batch):
            raise MemlabError(f"OpenAIEmbedder: sent {len(batch)} texts, got {len(data)} embeddings back")
        rows = [np.asarray(d.embedding, dtype=np.float32) for d in data]
        if self._dim is None:
            self._dim = len(rows[0])
        for row in rows:
            if row.shape != (self._dim,):
                raise MemlabError(f"OpenAIEmbedder: expected {self._dim}-d embeddings from "
                                  f"{self.model!r}, got shape {row.shape}")
        return rows
